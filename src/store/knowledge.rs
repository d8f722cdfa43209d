//! Knowledge bases, their documents and chunks: a tenant's bases by name, documents posted for
//! ingestion (the same content twice is one document), the ingestion job's lease (like a run's:
//! fenced by the attempt, so a replica that lost it cannot write), the one transaction that makes
//! a document `ready` with all its chunks, and full-text search over a base's ready chunks.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Audit, Store, StoreError, StoreResult};
use crate::domain::knowledge::KnowledgeBase;
use crate::domain::knowledge::KnowledgeDocument;
use crate::domain::knowledge::Posted;
use crate::domain::knowledge::{Chunking, DocumentSource, KnowledgeHit};
use crate::domain::BaseId;
use crate::domain::DocumentId;
use crate::domain::TenantId;

/// The channel on which posted documents are announced (by the `knowledge_documents_notify`
/// trigger).
pub const KNOWLEDGE_CHANNEL: &str = "agentd_knowledge";

/// A base to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBase {
    pub name: String,
    pub description: String,
    pub embedding: Option<String>,
    pub chunking: Chunking,
}

/// A document to ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    pub title: String,
    /// The client gave the title (the content's own does not replace it).
    pub title_given: bool,
    pub source: DocumentSource,
    pub url: Option<String>,
    pub media_type: String,
    /// SHA-256 of the content (of the URL for a URL).
    pub digest: Vec<u8>,
    /// The content (none for a URL: it is fetched at ingestion).
    pub content: Option<Vec<u8>>,
}

/// A document leased for ingestion, with what its base says of chunking and embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct LeasedDocument {
    pub id: Uuid,
    pub tenant: TenantId,
    pub base_id: Uuid,
    /// The lease's attempt (from 1): the fence of every write under it.
    pub attempt: i32,
    /// Leases before this one that expired under way: their replica died (or hung).
    pub deaths: i32,
    pub title: String,
    pub source: DocumentSource,
    pub url: Option<String>,
    pub media_type: String,
    pub content: Option<Vec<u8>>,
    pub chunking: Chunking,
    pub embedding: Option<String>,
    pub dims: Option<i32>,
}

/// A chunk to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    pub heading: String,
    pub text: String,
    pub tokens: i32,
}

/// A ready document's content, written with its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    pub chunks: Vec<NewChunk>,
    /// One vector per chunk, by the base's embedding model (none: the base has no model).
    pub vectors: Option<Vec<Vec<f32>>>,
    /// Replaces the title when the content named one (an HTML `<title>`, a Markdown `#`) and
    /// the client did not.
    pub title: Option<String>,
}

struct BaseRow {
    id: Uuid,
    name: String,
    description: String,
    embedding: Option<String>,
    max_tokens: i32,
    overlap: i32,
    dims: Option<i32>,
    created_at: DateTime<Utc>,
    documents: i64,
    chunks: i64,
}

impl From<BaseRow> for KnowledgeBase {
    fn from(row: BaseRow) -> Self {
        Self {
            id: BaseId(row.id),
            name: row.name,
            description: row.description,
            embedding: row.embedding,
            chunking: chunking(row.max_tokens, row.overlap),
            dims: row.dims,
            created_at: row.created_at,
            documents: row.documents,
            chunks: row.chunks,
        }
    }
}

fn chunking(max_tokens: i32, overlap: i32) -> Chunking {
    Chunking { max_tokens: max_tokens.max(0) as u32, overlap: overlap.max(0) as u32 }
}

struct DocumentRow {
    id: Uuid,
    title: String,
    source: String,
    url: Option<String>,
    media_type: String,
    bytes: i64,
    status: String,
    error: Option<String>,
    chunks: i32,
    tokens: i64,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<DocumentRow> for KnowledgeDocument {
    type Error = StoreError;

    fn try_from(row: DocumentRow) -> StoreResult<Self> {
        Ok(Self {
            id: DocumentId(row.id),
            title: row.title,
            source: source(&row.source)?,
            url: row.url,
            media_type: row.media_type,
            bytes: row.bytes,
            status: row
                .status
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("document status '{}'", row.status)))?,
            error: row.error,
            chunks: row.chunks,
            tokens: row.tokens,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

fn source(text: &str) -> StoreResult<DocumentSource> {
    text.parse().map_err(|_| StoreError::Corrupt(format!("document source '{text}'")))
}

fn interval(duration: Duration) -> sqlx::postgres::types::PgInterval {
    sqlx::postgres::types::PgInterval {
        months: 0,
        days: 0,
        microseconds: i64::try_from(duration.as_micros()).unwrap_or(i64::MAX),
    }
}

impl Store {
    /// Create a base; `None` when the tenant has one of that name.
    #[tracing::instrument(skip_all, fields(base = %base.name), err)]
    pub async fn create_knowledge_base(
        &self,
        tenant: &TenantId,
        base: &NewBase,
        audit: &Audit,
    ) -> StoreResult<Option<KnowledgeBase>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            BaseRow,
            r#"INSERT INTO knowledge_bases (id, tenant, name, description, embedding, max_tokens, overlap)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (tenant, name) DO NOTHING
               RETURNING id, name, description, embedding, max_tokens, overlap, dims, created_at,
                         0::int8 AS "documents!", 0::int8 AS "chunks!""#,
            Uuid::now_v7(),
            tenant.as_str(),
            base.name,
            base.description,
            base.embedding,
            base.chunking.max_tokens as i32,
            base.chunking.overlap as i32,
        )
        .fetch_optional(&mut *tx)
        .await?;
        audit.settle(tx, row.is_some().then_some(tenant)).await?;
        Ok(row.map(KnowledgeBase::from))
    }

    /// The tenant's base named `name`.
    #[tracing::instrument(skip_all, fields(base = %name), err)]
    pub async fn knowledge_base(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<KnowledgeBase>> {
        let row = sqlx::query_as!(
            BaseRow,
            r#"SELECT b.id, b.name, b.description, b.embedding, b.max_tokens, b.overlap, b.dims, b.created_at,
                      (SELECT count(*) FROM knowledge_documents d WHERE d.base_id = b.id) AS "documents!",
                      (SELECT count(*) FROM knowledge_chunks c WHERE c.base_id = b.id) AS "chunks!"
               FROM knowledge_bases b WHERE b.tenant = $1 AND b.name = $2"#,
            tenant.as_str(),
            name
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(KnowledgeBase::from))
    }

    /// Every base of the tenant, by name.
    #[tracing::instrument(skip_all, err)]
    pub async fn knowledge_bases(&self, tenant: &TenantId) -> StoreResult<Vec<KnowledgeBase>> {
        let rows = sqlx::query_as!(
            BaseRow,
            r#"SELECT b.id, b.name, b.description, b.embedding, b.max_tokens, b.overlap, b.dims, b.created_at,
                      (SELECT count(*) FROM knowledge_documents d WHERE d.base_id = b.id) AS "documents!",
                      (SELECT count(*) FROM knowledge_chunks c WHERE c.base_id = b.id) AS "chunks!"
               FROM knowledge_bases b WHERE b.tenant = $1 ORDER BY b.name"#,
            tenant.as_str()
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(KnowledgeBase::from).collect())
    }

    /// Which of `names` the tenant has no base of.
    #[tracing::instrument(skip_all, err)]
    pub async fn missing_knowledge_bases(
        &self,
        tenant: &TenantId,
        names: &[String],
    ) -> StoreResult<Vec<String>> {
        let found = sqlx::query_scalar!(
            "SELECT name FROM knowledge_bases WHERE tenant = $1 AND name = ANY($2)",
            tenant.as_str(),
            names
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(names.iter().filter(|name| !found.contains(name)).cloned().collect())
    }

    /// Delete a base with its documents and chunks (and their vectors); `false` when there is
    /// none of that name.
    #[tracing::instrument(skip_all, fields(base = %name), err)]
    pub async fn delete_knowledge_base(
        &self,
        tenant: &TenantId,
        name: &str,
        audit: &Audit,
    ) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!(
                "DELETE FROM knowledge_bases WHERE tenant = $1 AND name = $2",
                tenant.as_str(),
                name
            ),
            tenant,
            audit,
        )
        .await
    }

    /// Post a document to the base `base_id` of `tenant`: a new one is `pending`; content the
    /// base holds already answers that document (queued again if it had failed).
    #[tracing::instrument(skip_all, err)]
    pub async fn post_document(
        &self,
        tenant: &TenantId,
        base_id: BaseId,
        document: &NewDocument,
        audit: &Audit,
    ) -> StoreResult<(KnowledgeDocument, Posted)> {
        let mut tx = self.pool.begin().await?;
        let bytes = document.content.as_ref().map_or(0, |c| c.len() as i64);
        let created = sqlx::query_as!(
            DocumentRow,
            r#"INSERT INTO knowledge_documents
                 (id, base_id, tenant, title, source, url, media_type, digest, content, bytes, title_given)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
               ON CONFLICT (base_id, digest) DO NOTHING
               RETURNING id, title, source, url, media_type, bytes, status, error, chunks, tokens,
                         created_at, updated_at"#,
            Uuid::now_v7(),
            base_id.0,
            tenant.as_str(),
            document.title,
            document.source.as_str(),
            document.url,
            document.media_type,
            document.digest,
            document.content,
            bytes,
            document.title_given,
        )
        .fetch_optional(&mut *tx)
        .await?;
        let (row, posted) = match created {
            Some(row) => (row, Posted::Created),
            None => {
                // The same content: answer it; one that failed is tried again.
                let row = sqlx::query_as!(
                    DocumentRow,
                    r#"UPDATE knowledge_documents
                         SET status = CASE WHEN status = 'failed' THEN 'pending' ELSE status END,
                             error = CASE WHEN status = 'failed' THEN NULL ELSE error END,
                             attempts = CASE WHEN status = 'failed' THEN 0 ELSE attempts END,
                             updated_at = CASE WHEN status = 'failed' THEN now() ELSE updated_at END
                       WHERE base_id = $1 AND digest = $2
                       RETURNING id, title, source, url, media_type, bytes, status, error, chunks, tokens,
                                 created_at, updated_at"#,
                    base_id.0,
                    document.digest,
                )
                .fetch_one(&mut *tx)
                .await?;
                (row, Posted::Existing)
            }
        };
        let resource = format!("{}/{}", audit_base(audit), row.id);
        audit.record_in(&mut tx, tenant, Some(&resource)).await?;
        if posted == Posted::Existing {
            // Re-queued documents are announced like new ones.
            sqlx::query!("SELECT pg_notify($1, '')", KNOWLEDGE_CHANNEL).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok((row.try_into()?, posted))
    }

    /// The base's documents, newest first (at most `limit`).
    #[tracing::instrument(skip_all, err)]
    pub async fn knowledge_documents(
        &self,
        base_id: BaseId,
        limit: i64,
    ) -> StoreResult<Vec<KnowledgeDocument>> {
        let rows = sqlx::query_as!(
            DocumentRow,
            r#"SELECT id, title, source, url, media_type, bytes, status, error, chunks, tokens,
                      created_at, updated_at
               FROM knowledge_documents WHERE base_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"#,
            base_id.0,
            limit
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(KnowledgeDocument::try_from).collect()
    }

    /// One document of the base.
    #[tracing::instrument(skip_all, err)]
    pub async fn knowledge_document(
        &self,
        base_id: BaseId,
        id: DocumentId,
    ) -> StoreResult<Option<KnowledgeDocument>> {
        let row = sqlx::query_as!(
            DocumentRow,
            r#"SELECT id, title, source, url, media_type, bytes, status, error, chunks, tokens,
                      created_at, updated_at
               FROM knowledge_documents WHERE base_id = $1 AND id = $2"#,
            base_id.0,
            id.0
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(KnowledgeDocument::try_from).transpose()
    }

    /// Delete one document with its chunks (and their vectors).
    #[tracing::instrument(skip_all, err)]
    pub async fn delete_document(
        &self,
        tenant: &TenantId,
        base_id: BaseId,
        id: DocumentId,
        audit: &Audit,
    ) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!("DELETE FROM knowledge_documents WHERE base_id = $1 AND id = $2", base_id.0, id.0),
            tenant,
            audit,
        )
        .await
    }

    /// Lease up to `limit` pending documents (oldest first) for `lease`, bumping each one's
    /// attempt. A document whose last lease expired (rather than being released) counts one more
    /// death of the replica that held it.
    #[tracing::instrument(skip_all, err)]
    pub async fn lease_documents(&self, limit: i64, lease: Duration) -> StoreResult<Vec<LeasedDocument>> {
        let rows = sqlx::query!(
            r#"UPDATE knowledge_documents AS d
                 SET lease_until = now() + $2, attempts = d.attempts + 1,
                     deaths = d.deaths + (d.lease_until IS NOT NULL)::int4
               FROM knowledge_bases AS b,
                    (SELECT id FROM knowledge_documents
                      WHERE status = 'pending' AND (lease_until IS NULL OR lease_until < now())
                      ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED) AS due
               WHERE d.id = due.id AND b.id = d.base_id
               RETURNING d.id, d.tenant, d.base_id, d.attempts, d.deaths, d.title, d.source, d.url, d.media_type,
                         d.content, b.max_tokens, b.overlap, b.embedding, b.dims"#,
            limit,
            interval(lease),
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(LeasedDocument {
                    id: row.id,
                    tenant: TenantId::from(row.tenant),
                    base_id: row.base_id,
                    attempt: row.attempts,
                    deaths: row.deaths,
                    title: row.title,
                    source: source(&row.source)?,
                    url: row.url,
                    media_type: row.media_type,
                    content: row.content,
                    chunking: chunking(row.max_tokens, row.overlap),
                    embedding: row.embedding,
                    dims: row.dims,
                })
            })
            .collect()
    }

    /// Give a leased document back unfinished (this replica is stopping): the next lease is not
    /// counted as a death. `false` when the lease was no longer this attempt's.
    #[tracing::instrument(level = "debug", skip_all, err)]
    pub async fn release_document(&self, id: DocumentId, attempt: i32) -> StoreResult<bool> {
        let released = sqlx::query!(
            r#"UPDATE knowledge_documents SET lease_until = NULL
               WHERE id = $1 AND attempts = $2 AND status = 'pending'"#,
            id.0,
            attempt,
        )
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(released > 0)
    }

    /// Extend a document's lease; `false` when it is no longer this attempt's (taken over,
    /// deleted, or finished).
    #[tracing::instrument(level = "debug", skip_all, err)]
    pub async fn renew_document_lease(
        &self,
        id: DocumentId,
        attempt: i32,
        lease: Duration,
    ) -> StoreResult<bool> {
        let renewed = sqlx::query!(
            r#"UPDATE knowledge_documents SET lease_until = now() + $3
               WHERE id = $1 AND attempts = $2 AND status = 'pending'"#,
            id.0,
            attempt,
            interval(lease),
        )
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(renewed > 0)
    }

    /// Make a leased document `ready` with its chunks, in one transaction; `false` (nothing
    /// written) when the lease is no longer this attempt's.
    #[tracing::instrument(skip_all, fields(chunks = ingested.chunks.len()), err)]
    pub async fn finish_document(
        &self,
        id: DocumentId,
        attempt: i32,
        ingested: &Ingested,
    ) -> StoreResult<bool> {
        let tokens: i64 = ingested.chunks.iter().map(|c| i64::from(c.tokens)).sum();
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query!(
            r#"UPDATE knowledge_documents
                 SET status = 'ready', chunks = $3, tokens = $4, error = NULL, lease_until = NULL,
                     title = CASE WHEN title_given THEN title ELSE coalesce($5, title) END,
                     updated_at = now()
               WHERE id = $1 AND attempts = $2 AND status = 'pending'
               RETURNING base_id"#,
            id.0,
            attempt,
            ingested.chunks.len() as i32,
            tokens,
            ingested.title,
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(false);
        };
        let ids: Vec<Uuid> = ingested.chunks.iter().map(|_| Uuid::now_v7()).collect();
        let seqs: Vec<i32> = (0..ingested.chunks.len() as i32).collect();
        let headings: Vec<&str> = ingested.chunks.iter().map(|c| c.heading.as_str()).collect();
        let texts: Vec<&str> = ingested.chunks.iter().map(|c| c.text.as_str()).collect();
        let counts: Vec<i32> = ingested.chunks.iter().map(|c| c.tokens).collect();
        sqlx::query!(
            r#"INSERT INTO knowledge_chunks (id, document_id, base_id, seq, heading, text, tokens)
               SELECT x.id, $2, $3, x.seq, x.heading, x.text, x.tokens
               FROM UNNEST($1::uuid[], $4::int4[], $5::text[], $6::text[], $7::int4[])
                    AS x(id, seq, heading, text, tokens)"#,
            &ids,
            id.0,
            row.base_id,
            &seqs,
            &headings as &[&str],
            &texts as &[&str],
            &counts,
        )
        .execute(&mut *tx)
        .await?;
        if let Some(vectors) = &ingested.vectors {
            let literals: Vec<String> = vectors.iter().map(|v| super::vectors::literal(v)).collect();
            sqlx::query(
                "INSERT INTO knowledge_vectors (chunk_id, base_id, embedding)
                 SELECT x.id, $2, x.v::vector FROM UNNEST($1::uuid[], $3::text[]) AS x(id, v)",
            )
            .bind(&ids)
            .bind(row.base_id)
            .bind(&literals)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Record that a leased document cannot be ingested; `false` when the lease is no longer
    /// this attempt's.
    #[tracing::instrument(skip_all, err)]
    pub async fn fail_document(&self, id: DocumentId, attempt: i32, error: &str) -> StoreResult<bool> {
        let failed = sqlx::query!(
            r#"UPDATE knowledge_documents
                 SET status = 'failed', error = $3, lease_until = NULL, updated_at = now()
               WHERE id = $1 AND attempts = $2 AND status = 'pending'"#,
            id.0,
            attempt,
            error,
        )
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(failed > 0)
    }

    /// The `k` ready chunks of base `base_id` that best match `query` by full-text search, ranked
    /// by `ts_rank` (normalized by the chunk's length) against any of the query's words, stemmed.
    ///
    /// Ranking every chunk that holds any of a long query's words (a task's prompt is the query of
    /// a crew's knowledge) would touch most of a large base, so the candidates are bounded: the
    /// query's [`SELECTIVE_LEXEMES`] most selective words (the rarest by the table's statistics,
    /// then the longest) are tried in tiers, all of them, then any two of them, then any word of
    /// the query (unless `reach` is [`Reach::SharedWords`]), each tier ranking at most
    /// [`FULLTEXT_CANDIDATES`] chunks, until `k` chunks are found.
    #[tracing::instrument(skip_all, err)]
    pub async fn search_fulltext(
        &self,
        base_id: BaseId,
        query: &str,
        k: i64,
        reach: Reach,
    ) -> StoreResult<Vec<KnowledgeHit>> {
        // Planned for the query's own words: a plan made for any tsquery (a prepared statement's
        // generic plan, which a pooled connection switches to after five executions) scans
        // every chunk instead of the GIN index (88 ms a tier at 100,000 chunks instead of 3).
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET LOCAL plan_cache_mode = force_custom_plan").execute(&mut *tx).await?;
        // The query's lexemes, each with its share of chunks where ANALYZE counted it among the
        // most common (0 otherwise: rarer than those).
        let lexemes = sqlx::query!(
            r#"WITH common AS (
                 SELECT f.lexeme, f.share
                 FROM pg_stats s,
                      unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS f(lexeme, share)
                 WHERE s.schemaname = current_schema() AND s.tablename = 'knowledge_chunks'
                   AND s.attname = 'search'
               )
               SELECT l.lexeme AS "lexeme!", coalesce(max(c.share), 0)::float8 AS "share!"
               FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
               LEFT JOIN common c ON c.lexeme = l.lexeme
               GROUP BY l.lexeme"#,
            query,
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut lexemes: Vec<(String, f64)> = lexemes.into_iter().map(|l| (l.lexeme, l.share)).collect();
        let Some(mut tiers) = FulltextTiers::new(&mut lexemes) else {
            return Ok(Vec::new());
        };
        if reach == Reach::SharedWords && tiers.candidates.len() > 1 {
            tiers.candidates.pop();
        }
        let mut hits: Vec<KnowledgeHit> = Vec::new();
        for tier in &tiers.candidates {
            let rows = sqlx::query!(
                r#"SELECT c.id, c.document_id, d.title, c.heading, c.text,
                          ts_rank(c.search, $3::text::tsquery, 1)::float8 AS "score!"
                   FROM (SELECT id, document_id, seq, heading, text, search
                         FROM knowledge_chunks
                         WHERE base_id = $1 AND search @@ $2::text::tsquery
                         LIMIT $4) c
                   JOIN knowledge_documents d ON d.id = c.document_id AND d.status = 'ready'
                   ORDER BY 6 DESC, c.document_id, c.seq
                   LIMIT $5"#,
                base_id.0,
                tier,
                tiers.rank,
                FULLTEXT_CANDIDATES,
                k,
            )
            .fetch_all(&mut *tx)
            .await?;
            for row in rows {
                if hits.iter().all(|hit| hit.chunk_id != row.id) {
                    hits.push(KnowledgeHit {
                        document_id: row.document_id,
                        chunk_id: row.id,
                        title: row.title,
                        heading: row.heading,
                        text: row.text,
                        score: row.score,
                    });
                }
            }
            if hits.len() as i64 >= k {
                break;
            }
        }
        tx.commit().await?;
        // Stable: a tier's order (by document and position on equal scores) is kept.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(usize::try_from(k).unwrap_or(0));
        Ok(hits)
    }
}

/// How far a full-text search looks for candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Down to chunks sharing a single word with the query: a search by words alone.
    AnyWord,
    /// Only chunks sharing at least two of the query's selective words (or its only word): the
    /// words' part of a hybrid search, where a chunk sharing one word of a long query is no
    /// evidence and would outrank the vectors' best in the fusion.
    SharedWords,
}

/// The most chunks one tier of a full-text search ranks.
pub const FULLTEXT_CANDIDATES: i64 = 1_000;
/// The query words that choose a full-text search's candidates.
pub const SELECTIVE_LEXEMES: usize = 8;
/// The query words a full-text search ranks by (a longer query's rarest).
const RANKED_LEXEMES: usize = 64;

/// The `tsquery` texts of a full-text search: the candidates' tiers, from the narrowest, and the
/// query that ranks them.
#[derive(Debug, PartialEq)]
struct FulltextTiers {
    candidates: Vec<String>,
    rank: String,
}

impl FulltextTiers {
    /// From the query's lexemes and their share of chunks (0 where unknown); `None` for a query
    /// with no words to search by. Sorts `lexemes` rarest (then longest) first.
    fn new(lexemes: &mut [(String, f64)]) -> Option<FulltextTiers> {
        lexemes.sort_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| b.0.chars().count().cmp(&a.0.chars().count()))
                .then_with(|| a.0.cmp(&b.0))
        });
        let quoted: Vec<String> = lexemes.iter().take(RANKED_LEXEMES).map(|(l, _)| quote_lexeme(l)).collect();
        let rank = quoted.join(" | ");
        let selective = &quoted[..quoted.len().min(SELECTIVE_LEXEMES)];
        let candidates = match selective {
            [] => return None,
            [only] => vec![only.clone()],
            [_, _] => vec![selective.join(" & "), selective.join(" | ")],
            _ => {
                let mut pairs = Vec::new();
                for (i, a) in selective.iter().enumerate() {
                    for b in &selective[i + 1..] {
                        pairs.push(format!("({a} & {b})"));
                    }
                }
                // The last tier is any word at all: words the corpus lacks count as rare (no
                // statistics name them), and without statistics (a small or new base) every
                // word does, so the selective ones may match nothing.
                vec![selective.join(" & "), pairs.join(" | "), rank.clone()]
            }
        };
        Some(FulltextTiers { candidates, rank })
    }
}

/// A lexeme as a `tsquery` operand: quoted, its quotes doubled and backslashes escaped.
fn quote_lexeme(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

/// The resource path of the base an audit record is about (`/v1/knowledge/<name>/documents`
/// becomes `/v1/knowledge/<name>/documents`): a document's own path is that and its id.
fn audit_base(audit: &Audit) -> &str {
    audit.resource.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::{quote_lexeme, FulltextTiers};

    fn lexemes(words: &[(&str, f64)]) -> Vec<(String, f64)> {
        words.iter().map(|(w, share)| ((*w).to_owned(), *share)).collect()
    }

    #[test]
    fn a_query_without_words_searches_nothing() {
        assert_eq!(FulltextTiers::new(&mut []), None);
    }

    #[test]
    fn one_word_is_its_own_tier_and_two_words_are_both_then_either() {
        let one = FulltextTiers::new(&mut lexemes(&[("fox", 0.0)])).expect("tiers");
        assert_eq!(one.candidates, ["'fox'"]);
        assert_eq!(one.rank, "'fox'");
        let two = FulltextTiers::new(&mut lexemes(&[("fox", 0.0), ("quick", 0.0)])).expect("tiers");
        assert_eq!(two.candidates, ["'quick' & 'fox'", "'quick' | 'fox'"], "longest first");
    }

    #[test]
    fn candidates_come_from_the_rarest_words_then_any_word_and_all_words_rank() {
        let mut words: Vec<(String, f64)> =
            (0..10).map(|i| (format!("w{i}"), f64::from(10 - i) / 100.0)).collect();
        let tiers = FulltextTiers::new(&mut words).expect("tiers");
        // w9 is the rarest (share 0.01), w0 the most common (0.10): w2..w9 choose.
        assert_eq!(tiers.candidates.len(), 3);
        assert_eq!(tiers.candidates[0], "'w9' & 'w8' & 'w7' & 'w6' & 'w5' & 'w4' & 'w3' & 'w2'");
        assert!(tiers.candidates[1].starts_with("('w9' & 'w8') | ('w9' & 'w7') | "));
        assert_eq!(tiers.candidates[1].matches(" | ").count(), 27, "8 words make 28 pairs");
        assert_eq!(tiers.candidates[2], tiers.rank, "the widest tier is any word");
        assert!(tiers.rank.starts_with("'w9' | 'w8' | "), "{}", tiers.rank);
        assert!(tiers.rank.ends_with("'w1' | 'w0'"), "{}", tiers.rank);
    }

    #[test]
    fn lexemes_are_quoted_for_tsquery() {
        assert_eq!(quote_lexeme("o'neil"), "'o''neil'");
        assert_eq!(quote_lexeme("a\\b"), "'a\\\\b'");
    }
}

//! Chunk vectors, where the database has pgvector: the `knowledge_vectors` table (made at
//! start-up, not by a migration, so that a database without the extension migrates too), one
//! HNSW index per base (partial on the base, on the vectors cast to the base's length, so a
//! search walks that base's graph only and never scans every vector), nearest chunks by cosine
//! distance. The statements are not checked at build time (the build's database has no
//! pgvector); vectors travel as pgvector's text form (`[0.1,0.2]`).

use sqlx::Row;
use uuid::Uuid;

use super::{Store, StoreError, StoreResult};
use crate::domain::knowledge::KnowledgeHit;
use crate::domain::BaseId;
use crate::domain::RunId;
use crate::domain::TenantId;

/// Chunks a vector search considers per query at most (pgvector's `hnsw.ef_search`).
const EF_SEARCH: u32 = 100;

/// pgvector's text form of a vector.
pub(super) fn literal(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 10 + 2);
    out.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&x.to_string());
    }
    out.push(']');
    out
}

/// The name of a base's vector index.
fn index_name(base_id: Uuid) -> String {
    format!("knowledge_vectors_{}", base_id.simple())
}

impl Store {
    /// Make vector search possible: the pgvector extension and the vectors' table. `Err` says why
    /// not (the extension is not installed on the server, or this role may not create it).
    pub async fn prepare_vectors(&self) -> Result<(), String> {
        let mut tx = self.pool.begin().await.map_err(|e| e.to_string())?;
        // One replica at a time: concurrent CREATE ... IF NOT EXISTS can still collide.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('agentd_knowledge_vectors'))")
            .execute(&mut *tx)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query("CREATE EXTENSION IF NOT EXISTS vector").execute(&mut *tx).await.map_err(|e| {
            let detail = match &e {
                sqlx::Error::Database(db) => db.message().to_owned(),
                other => other.to_string(),
            };
            format!("the database has no pgvector extension ({detail})")
        })?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS knowledge_vectors (
                 chunk_id  uuid PRIMARY KEY REFERENCES knowledge_chunks (id) ON DELETE CASCADE,
                 base_id   uuid NOT NULL,
                 embedding vector NOT NULL
             )",
        )
        .execute(&mut *tx)
        .await
        .map_err(|e| e.to_string())?;
        // Memory items' vectors: a scope is small (its newest items are ranked), so no index
        // beyond the key; vectors of different models never meet (`model`).
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS memory_vectors (
                 memory_id uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
                 model     text NOT NULL,
                 embedding vector NOT NULL
             )",
        )
        .execute(&mut *tx)
        .await
        .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())
    }

    /// The HNSW index of base `base_id`'s vectors of length `dims` (made once).
    pub async fn ensure_vector_index(&self, base_id: BaseId, dims: i32) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('agentd_knowledge_vectors'))")
            .execute(&mut *tx)
            .await?;
        let statement = format!(
            "CREATE INDEX IF NOT EXISTS {} ON knowledge_vectors USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE base_id = '{base_id}'",
            index_name(base_id.0)
        );
        sqlx::query(&statement).execute(&mut *tx).await?;
        sqlx::query("UPDATE knowledge_bases SET dims = $2 WHERE id = $1 AND dims IS NULL")
            .bind(base_id)
            .bind(dims)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Drop a deleted base's vector index.
    pub async fn drop_vector_index(&self, base_id: BaseId) -> StoreResult<()> {
        sqlx::query(&format!("DROP INDEX IF EXISTS {}", index_name(base_id.0))).execute(&self.pool).await?;
        Ok(())
    }

    /// The `k` ready chunks of base `base_id` nearest to `query` (of length `dims`), by cosine
    /// similarity, through the base's index.
    pub async fn search_vectors(
        &self,
        base_id: BaseId,
        dims: i32,
        query: &[f32],
        k: i64,
    ) -> StoreResult<Vec<KnowledgeHit>> {
        if query.len() != dims as usize {
            return Err(StoreError::Corrupt(format!(
                "a query vector of {} for a base of {dims}",
                query.len()
            )));
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query(&format!("SET LOCAL hnsw.ef_search = {EF_SEARCH}")).execute(&mut *tx).await?;
        let statement = format!(
            "SELECT c.id, c.document_id, d.title, c.heading, c.text,
                    (1 - (v.embedding::vector({dims}) <=> $1::vector({dims})))::float8 AS score
             FROM knowledge_vectors v
             JOIN knowledge_chunks c ON c.id = v.chunk_id
             JOIN knowledge_documents d ON d.id = c.document_id AND d.status = 'ready'
             WHERE v.base_id = '{base_id}'
             ORDER BY v.embedding::vector({dims}) <=> $1::vector({dims})
             LIMIT $2"
        );
        let rows = sqlx::query(&statement).bind(literal(query)).bind(k).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        rows.into_iter()
            .map(|row| {
                Ok(KnowledgeHit {
                    chunk_id: row.try_get("id")?,
                    document_id: row.try_get("document_id")?,
                    title: row.try_get("title")?,
                    heading: row.try_get("heading")?,
                    text: row.try_get("text")?,
                    score: row.try_get("score")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }
}

/// Save the vectors of `memories` (those that have one) in `tx`: with the items, in their
/// transaction. Only called with vectors where the table exists (the engine embeds only then).
pub(super) async fn write_memory_vectors(
    tx: &mut sqlx::PgConnection,
    memories: &[&crate::domain::memory::NewMemory],
) -> Result<(), sqlx::Error> {
    let (mut ids, mut models, mut literals) = (Vec::new(), Vec::new(), Vec::new());
    for memory in memories {
        if let Some(vector) = &memory.vector {
            ids.push(memory.id.0);
            models.push(vector.model.as_str());
            literals.push(literal(&vector.values));
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO memory_vectors (memory_id, model, embedding)
         SELECT x.id, x.model, x.v::vector FROM UNNEST($1::uuid[], $2::text[], $3::text[]) AS x(id, model, v)
         ON CONFLICT (memory_id) DO NOTHING",
    )
    .bind(&ids)
    .bind(&models as &[&str])
    .bind(&literals)
    .execute(tx)
    .await?;
    Ok(())
}

impl Store {
    /// The ids of the `k` items of a scope (its newest [`crate::domain::memory::RECALL_CANDIDATES`],
    /// not saved by `run_id`) nearest to `query` by `model`'s vectors, with their cosine
    /// similarity, nearest first.
    pub async fn nearest_memories(
        &self,
        tenant: &TenantId,
        scope: &str,
        model: &str,
        query: &[f32],
        k: i64,
        run_id: RunId,
    ) -> StoreResult<Vec<(Uuid, f64)>> {
        let rows = sqlx::query(
            "SELECT m.id, (1 - (v.embedding <=> $4::vector))::float8 AS score
             FROM (SELECT id FROM memories
                   WHERE tenant = $1 AND scope = $2 AND run_id IS DISTINCT FROM $6
                   ORDER BY created_at DESC LIMIT $7) m
             JOIN memory_vectors v ON v.memory_id = m.id AND v.model = $3
                                  AND vector_dims(v.embedding) = $8
             ORDER BY v.embedding <=> $4::vector, m.id
             LIMIT $5",
        )
        .bind(tenant)
        .bind(scope)
        .bind(model)
        .bind(literal(query))
        .bind(k)
        .bind(run_id)
        .bind(crate::domain::memory::RECALL_CANDIDATES)
        .bind(i32::try_from(query.len()).unwrap_or(i32::MAX))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| Ok((row.try_get("id")?, row.try_get("score")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn vectors_are_written_in_pgvector_text_form() {
        assert_eq!(super::literal(&[0.5, -1.0, 0.25]), "[0.5,-1,0.25]");
        assert_eq!(super::literal(&[]), "[]");
    }
}

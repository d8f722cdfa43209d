//! Memories: a tenant's items by scope. Runs save theirs through the journal (in the commit of
//! the task that made them, see `run_journal::write::memories`); clients post notes, list and
//! search a scope, delete an item or forget a whole scope. A task's recall ranks the scope's
//! newest [`RECALL_CANDIDATES`] items by full-text relevance to the task's prompt, filling up
//! with the most recent when fewer match.

use uuid::Uuid;

use super::{Audit, Store, StoreError, StoreResult};
use crate::domain::memory::{MemoryItem, NewMemory, RECALL_CANDIDATES};
use crate::domain::MemoryId;
use crate::domain::RunId;
use crate::domain::TenantId;

struct MemoryRow {
    id: Uuid,
    scope: String,
    kind: String,
    text: String,
    run_id: Option<Uuid>,
    task: Option<String>,
    agent: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    score: f64,
}

impl TryFrom<MemoryRow> for MemoryItem {
    type Error = StoreError;

    fn try_from(row: MemoryRow) -> Result<Self, Self::Error> {
        Ok(MemoryItem {
            id: row.id,
            scope: row.scope,
            kind: row.kind.parse().map_err(|_| StoreError::Corrupt(format!("memory kind '{}'", row.kind)))?,
            text: row.text,
            run_id: row.run_id,
            task: row.task,
            agent: row.agent,
            created_at: row.created_at,
            score: row.score,
        })
    }
}

fn items(rows: Vec<MemoryRow>) -> StoreResult<Vec<MemoryItem>> {
    rows.into_iter().map(MemoryItem::try_from).collect()
}

impl Store {
    /// Save a posted item.
    #[tracing::instrument(skip_all, err)]
    pub async fn create_memory(&self, memory: &NewMemory, audit: &Audit) -> StoreResult<MemoryItem> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            MemoryRow,
            r#"INSERT INTO memories (id, tenant, scope, kind, text, run_id, task, agent)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               RETURNING id, scope, kind, text, run_id, task, agent, created_at, 0::float8 AS "score!""#,
            memory.id.0,
            memory.tenant.as_str(),
            memory.scope,
            <&str>::from(memory.kind),
            memory.text,
            memory.run_id.map(uuid::Uuid::from),
            memory.task,
            memory.agent,
        )
        .fetch_one(&mut *tx)
        .await?;
        super::vectors::write_memory_vectors(&mut tx, &[memory]).await?;
        let resource = format!("/v1/memories/{}", row.id);
        audit.record_in(&mut tx, &memory.tenant, Some(&resource)).await?;
        tx.commit().await?;
        row.try_into()
    }

    /// The tenant's items of these ids (in no particular order; unknown ids are left out).
    #[tracing::instrument(skip_all, err)]
    pub async fn memories_by_id(&self, tenant: &TenantId, ids: &[MemoryId]) -> StoreResult<Vec<MemoryItem>> {
        let rows = sqlx::query_as!(
            MemoryRow,
            r#"SELECT id, scope, kind, text, run_id, task, agent, created_at, 0::float8 AS "score!"
               FROM memories WHERE tenant = $1 AND id = ANY($2)"#,
            tenant.as_str(),
            ids as &[MemoryId],
        )
        .fetch_all(&self.pool)
        .await?;
        items(rows)
    }

    /// One of the tenant's items.
    #[tracing::instrument(skip_all, err)]
    pub async fn memory(&self, tenant: &TenantId, id: MemoryId) -> StoreResult<Option<MemoryItem>> {
        let row = sqlx::query_as!(
            MemoryRow,
            r#"SELECT id, scope, kind, text, run_id, task, agent, created_at, 0::float8 AS "score!"
               FROM memories WHERE tenant = $1 AND id = $2"#,
            tenant.as_str(),
            id.0,
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(MemoryItem::try_from).transpose()
    }

    /// The scope's items: those matching `query` (any of its words), most relevant first, or
    /// without a query the newest first; at most `limit`.
    #[tracing::instrument(skip_all, err)]
    pub async fn memories(
        &self,
        tenant: &TenantId,
        scope: &str,
        query: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<MemoryItem>> {
        let rows = match query {
            None => {
                sqlx::query_as!(
                    MemoryRow,
                    r#"SELECT id, scope, kind, text, run_id, task, agent, created_at, 0::float8 AS "score!"
                       FROM memories WHERE tenant = $1 AND scope = $2
                       ORDER BY created_at DESC, id DESC LIMIT $3"#,
                    tenant.as_str(),
                    scope,
                    limit,
                )
                .fetch_all(&self.pool)
                .await?
            }
            Some(query) => {
                sqlx::query_as!(
                    MemoryRow,
                    r#"WITH q AS (
                         SELECT nullif(replace(plainto_tsquery('english', $3)::text, ' & ', ' | '), '')::tsquery AS query
                       )
                       SELECT m.id, m.scope, m.kind, m.text, m.run_id, m.task, m.agent, m.created_at,
                              ts_rank(m.search, q.query, 1)::float8 AS "score!"
                       FROM q, (SELECT * FROM memories WHERE tenant = $1 AND scope = $2
                                ORDER BY created_at DESC LIMIT $5) m
                       WHERE m.search @@ q.query
                       ORDER BY 9 DESC, m.created_at DESC LIMIT $4"#,
                    tenant.as_str(),
                    scope,
                    query,
                    limit,
                    RECALL_CANDIDATES,
                )
                .fetch_all(&self.pool)
                .await?
            }
        };
        items(rows)
    }

    /// What a task recalls: the `k` items of the scope most relevant to `query`, saved by other
    /// runs than `run_id`; when fewer than `k` match, the most recent others fill up (score 0).
    #[tracing::instrument(skip_all, err)]
    pub async fn recall_memories(
        &self,
        tenant: &TenantId,
        scope: &str,
        query: &str,
        k: i64,
        run_id: RunId,
    ) -> StoreResult<Vec<MemoryItem>> {
        let rows = sqlx::query_as!(
            MemoryRow,
            r#"WITH q AS (
                 SELECT nullif(replace(plainto_tsquery('english', $3)::text, ' & ', ' | '), '')::tsquery AS query
               )
               SELECT m.id, m.scope, m.kind, m.text, m.run_id, m.task, m.agent, m.created_at,
                      coalesce(CASE WHEN m.search @@ q.query THEN ts_rank(m.search, q.query, 1) END, 0)::float8
                        AS "score!"
               FROM q, (SELECT * FROM memories
                        WHERE tenant = $1 AND scope = $2 AND run_id IS DISTINCT FROM $5
                        ORDER BY created_at DESC LIMIT $6) m
               ORDER BY 9 DESC, m.created_at DESC, m.id LIMIT $4"#,
            tenant.as_str(),
            scope,
            query,
            k,
            run_id.0,
            RECALL_CANDIDATES,
        )
        .fetch_all(&self.pool)
        .await?;
        items(rows)
    }

    /// Delete one of the tenant's items; `false` if it has none of that id.
    #[tracing::instrument(skip_all, err)]
    pub async fn delete_memory(&self, tenant: &TenantId, id: MemoryId, audit: &Audit) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!("DELETE FROM memories WHERE tenant = $1 AND id = $2", tenant.as_str(), id.0),
            tenant,
            audit,
        )
        .await
    }

    /// Forget a scope: every item of it, in one transaction; how many there were.
    #[tracing::instrument(skip_all, err)]
    pub async fn forget_memories(&self, tenant: &TenantId, scope: &str, audit: &Audit) -> StoreResult<u64> {
        let mut tx = self.pool.begin().await?;
        let deleted =
            sqlx::query!("DELETE FROM memories WHERE tenant = $1 AND scope = $2", tenant.as_str(), scope)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        audit.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}

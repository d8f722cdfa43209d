//! A run paused in `awaiting_input` (for tool-call approvals or a human review of an answer):
//! what still holds it, and putting it back in the queue. Shared by the approval and review
//! statements, which both may end a pause.

use super::StoreResult;
use crate::domain::RunId;

/// Put a run paused in `awaiting_input` back in the queue, adding the pause to its `paused_s`
/// (the pause began when the run entered awaiting_input: its last update, before any write of
/// the caller's transaction). The caller notifies the workers.
pub(super) async fn requeue(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, id: RunId) -> StoreResult<()> {
    sqlx::query!(
        r#"UPDATE runs SET status = 'queued',
                  paused_s = paused_s + greatest(extract(epoch FROM now() - updated_at)::float8, 0),
                  updated_at = now()
           WHERE id = $1"#,
        id.0
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// How many calls of run `id` wait for a decision.
pub(super) async fn count_pending(executor: impl sqlx::PgExecutor<'_>, id: RunId) -> StoreResult<i64> {
    let count = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM tool_calls WHERE run_id = $1 AND approval->>'state' = 'pending'"#,
        id.0
    )
    .fetch_one(executor)
    .await?;
    Ok(count)
}

//! Removing finished runs: one on request (`DELETE /v1/runs/{id}`), and the retention pruner's
//! batches of runs finished before a cutoff. A run goes with everything journaled for it (tasks,
//! events, messages, tool calls) and its idempotency key, in one transaction.
//!
//! The pruner finds its runs through the `(status, id)` index: run ids are UUIDv7, ordered by
//! creation, so "created before the cutoff" is an id range and no index is added to `runs` (whose
//! writes the journal pays for). Of those, only runs also finished before the cutoff go. One
//! replica prunes at a time (a transaction-scoped advisory lock), and runs another transaction
//! holds are skipped, so claims and journal commits never wait on it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::runs::IDEMPOTENCY_TTL_HOURS;
use super::{Audit, Owner, Store, StoreResult};
use crate::domain::{RunId, RunStatus};

/// The advisory lock key the pruning replica holds ("agentd-prune").
const PRUNE_LOCK: i64 = 0x6167_656e_7464_7072;

/// What [`Store::delete_run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    Deleted,
    NotFound,
    /// The run has not ended: nothing was removed.
    Live(RunStatus),
}

/// What one pruning batch removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub runs: u64,
    /// Rows removed in all: runs, tasks, events, messages, tool calls and idempotency keys.
    pub rows: u64,
    /// Another replica was pruning: this one did nothing.
    pub skipped: bool,
}

impl Store {
    /// Remove a finished run with its journal and idempotency key.
    pub async fn delete_run(&self, id: RunId, audit: &Audit) -> StoreResult<Deleted> {
        let mut tx = self.pool.begin().await?;
        let status = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(status) = status else { return Ok(Deleted::NotFound) };
        let status: RunStatus = status.parse().map_err(super::StoreError::Corrupt)?;
        if !status.is_terminal() {
            return Ok(Deleted::Live(status));
        }
        audit.record_for(&mut tx, Owner::Run(id.0)).await?;
        remove_runs(&mut tx, &[id.0]).await?;
        tx.commit().await?;
        Ok(Deleted::Deleted)
    }

    /// Remove up to `batch` runs that were created and finished before `cutoff`, with their
    /// journals, and up to `batch` expired idempotency keys; nothing when another replica is
    /// pruning.
    pub async fn prune_finished(&self, cutoff: DateTime<Utc>, batch: i64) -> StoreResult<Pruned> {
        let mut tx = self.pool.begin().await?;
        let locked = sqlx::query_scalar!(r#"SELECT pg_try_advisory_xact_lock($1) AS "locked!""#, PRUNE_LOCK)
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            return Ok(Pruned { skipped: true, ..Pruned::default() });
        }
        let before = created_before(cutoff);
        let ids = sqlx::query_scalar!(
            r#"SELECT id FROM runs
                WHERE status IN ('completed', 'failed', 'cancelled') AND id < $1 AND finished_at < $2
                ORDER BY id LIMIT $3
                FOR UPDATE SKIP LOCKED"#,
            before,
            cutoff,
            batch
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut rows = remove_runs(&mut tx, &ids).await?;
        rows += sqlx::query!(
            r#"DELETE FROM idempotency_keys WHERE key IN (
                 SELECT key FROM idempotency_keys
                  WHERE created_at < now() - make_interval(hours => $1)
                  ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)"#,
            IDEMPOTENCY_TTL_HOURS,
            batch
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(Pruned { runs: ids.len() as u64, rows, skipped: false })
    }
}

/// The smallest UUIDv7 of `cutoff`'s millisecond: every run created earlier has a smaller id.
fn created_before(cutoff: DateTime<Utc>) -> Uuid {
    let millis = u64::try_from(cutoff.timestamp_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(millis, &[0; 10]).into_uuid()
}

/// Delete runs `ids` (locked by the caller) and everything journaled for them; the rows removed.
async fn remove_runs(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, ids: &[Uuid]) -> StoreResult<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    // One function (migration 25) clears the journal's tables, which hold no foreign key to runs
    // (see migration 11), the runs' idempotency keys and the runs.
    let removed = sqlx::query_scalar!(r#"SELECT agentd_remove_runs($1) AS "removed!""#, ids)
        .fetch_one(&mut **tx)
        .await?;
    Ok(u64::try_from(removed).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_id_orders_before_every_later_run_and_after_every_earlier_one() {
        let cutoff = Utc::now() - chrono::Duration::days(30);
        let bound = created_before(cutoff);
        let at = |t: DateTime<Utc>| {
            let ts =
                uuid::Timestamp::from_unix(uuid::NoContext, t.timestamp() as u64, t.timestamp_subsec_nanos());
            Uuid::new_v7(ts)
        };
        assert!(at(cutoff - chrono::Duration::milliseconds(1)) < bound);
        assert!(at(cutoff + chrono::Duration::milliseconds(1)) > bound);
        assert!(at(Utc::now()) > bound);
    }
}

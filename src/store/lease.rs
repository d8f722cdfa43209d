//! Leases and the ends of runs the engine does not journal itself: heartbeats, handing a run
//! back to the queue (shutdown, recovery of expired leases, exhausted attempts), cancellation,
//! and failures outside the engine (timeouts, storage errors). Every write by a worker carries
//! its attempt, so a worker that lost its lease changes nothing.

use std::time::Duration;

use serde_json::json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::events::append_event_tx;
use super::group::{Failure, GroupWrite};
use super::listen::{notify, CANCEL_CHANNEL, RUNS_CHANNEL};
use super::{parse, Audit, Owner, Store, StoreError, StoreResult};
use crate::domain::event::{Empty, RunFailed};
use crate::domain::TenantId;
use crate::domain::{ErrorKind, EventData, Run, RunError, RunId, RunStatus};

/// What a heartbeat learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Still ours, renewed.
    Held,
    /// Still ours, but a cancellation was requested.
    Cancelling,
    /// No longer ours: requeued, claimed by another attempt, or finished.
    Lost,
}

/// What a cancellation request did.
#[derive(Debug)]
pub enum CancelOutcome {
    /// No such run.
    NotFound,
    /// The run had already ended.
    AlreadyFinished(Run),
    /// Cancelled at once (it was queued or awaiting input), or being cancelled by its worker.
    Accepted(Run),
}

/// Runs the recovery pass handled.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub requeued: u64,
    pub failed: u64,
    /// Failed because their replicas died too often while running them (see
    /// [`Store::recover_expired_leases`]).
    pub quarantined: u64,
    pub cancelled: u64,
    /// The runs whose running attempt died (requeued or failed) and that attempt, for their
    /// traces.
    pub interrupted: Vec<(RunId, i32)>,
}

/// The attempt of a run that a dead replica left, as its events tell it (for its trace).
#[derive(Debug, Clone, PartialEq)]
pub struct DeadAttempt {
    pub crew_name: String,
    pub tenant: TenantId,
    pub attempt: i32,
    /// When it started (its `run.started`).
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// The task it was doing (name, agent, started), if one was under way.
    pub task: Option<(String, String, chrono::DateTime<chrono::Utc>)>,
    pub trace: Option<crate::domain::RunTrace>,
}

impl Store {
    /// Extend the lease of `attempt` of `id` (heartbeats of many runs share a statement: see
    /// [`RenewWrite`]).
    #[tracing::instrument(skip_all, fields(run_id = %id, attempt), err)]
    pub async fn renew_lease(&self, id: RunId, attempt: i32, lease: Duration) -> StoreResult<Lease> {
        self.lease_group().submit(Renewal { id, attempt, lease }).await
    }

    /// Give a running run back to the queue at once, so another worker continues it; a run being
    /// cancelled is cancelled instead. After a failure (`failure: Some`), a run that has used up
    /// its attempts fails with that reason instead of being requeued. `false` if not ours.
    #[tracing::instrument(skip_all, fields(run_id = %id, attempt), err)]
    pub async fn release_run(&self, id: RunId, attempt: i32, failure: Option<&str>) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let run = sqlx::query!(
            "SELECT status, interruptions, max_attempts FROM runs WHERE id = $1 AND attempt = $2 FOR UPDATE",
            id.0,
            attempt
        )
        .fetch_optional(&mut *tx)
        .await?;
        let exhausted = run.as_ref().is_some_and(|r| r.interruptions + 1 >= r.max_attempts);
        let released = match (run.as_ref().map(|r| r.status.as_str()), failure) {
            (Some("running"), Some(why)) if exhausted => {
                let tries = run.as_ref().map_or(0, |r| r.interruptions + 1);
                let message = format!("gave up after {tries} interrupted attempts; the last failed: {why}");
                count_interruption(&mut tx, id).await?;
                fail(&mut tx, id, RunError { kind: ErrorKind::Internal, message }).await?
            }
            (Some("running"), Some(_)) => {
                count_interruption(&mut tx, id).await?;
                requeue(&mut tx, id).await?
            }
            (Some("running"), None) => requeue(&mut tx, id).await?,
            (Some("cancelling"), _) => cancel_now(&mut tx, id).await?,
            _ => false,
        };
        tx.commit().await?;
        Ok(released)
    }

    /// Handle runs whose lease expired (their worker died or hung): requeue them, fail those that
    /// used up their attempts, cancel those being cancelled. An expired lease of a running run is
    /// a death of its replica: a run whose replicas died `quarantine_after` times is failed as
    /// quarantined (`error.kind = "quarantined"`) and never handed to another replica, so work
    /// that kills its process cannot kill every replica in turn.
    #[tracing::instrument(skip_all, err)]
    pub async fn recover_expired_leases(&self, quarantine_after: u32) -> StoreResult<Recovered> {
        let mut tx = self.pool.begin().await?;
        let expired = sqlx::query!(
            r#"SELECT id, status, interruptions, deaths, max_attempts, attempt FROM runs
               WHERE status IN ('running', 'cancelling') AND lease_expires_at < now()
               ORDER BY lease_expires_at LIMIT 100
               FOR UPDATE SKIP LOCKED"#
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut recovered = Recovered::default();
        for run in expired {
            let id = RunId(run.id);
            if run.status == "cancelling" {
                cancel_now(&mut tx, id).await?;
                recovered.cancelled += 1;
                continue;
            }
            count_death(&mut tx, id).await?;
            recovered.interrupted.push((id, run.attempt));
            let deaths = run.deaths + 1;
            if i64::from(deaths) >= i64::from(quarantine_after) {
                let message = format!(
                    "quarantined: the replica running it died {deaths} times (its process ended or stopped \
                     renewing the run's lease mid-run); it is not handed to another replica"
                );
                tracing::error!(run_id = %id, deaths, "a run is quarantined: its replicas died running it");
                fail(&mut tx, id, RunError { kind: ErrorKind::Quarantined, message }).await?;
                recovered.quarantined += 1;
            } else if run.interruptions + 1 >= run.max_attempts {
                let message = format!(
                    "the run was interrupted {} times (its worker stopped or lost its lease); giving up",
                    run.interruptions + 1
                );
                fail(&mut tx, id, RunError { kind: ErrorKind::Internal, message }).await?;
                recovered.failed += 1;
            } else {
                requeue(&mut tx, id).await?;
                recovered.requeued += 1;
            }
        }
        tx.commit().await?;
        Ok(recovered)
    }

    /// Attempt `attempt` of run `id` as its events tell it: when it started and the task it left
    /// under way (for the spans of an attempt a dead replica left open). The next attempt may
    /// have started meanwhile: its events are not this one's.
    #[tracing::instrument(skip_all, fields(run_id = %id, attempt), err)]
    pub async fn dead_attempt(&self, id: RunId, attempt: i32) -> StoreResult<Option<DeadAttempt>> {
        let Some(run) = sqlx::query!(
            r#"SELECT r.crew_name, r.tenant, r.trace_id, r.traceparent, r.tracestate,
                      s.seq AS "seq!", s.at AS "at!",
                      (SELECT min(n.seq) FROM events AS n
                        WHERE n.run_id = r.id AND n.type = 'run.started' AND n.seq > s.seq) AS next_seq
                 FROM runs AS r,
                      LATERAL (SELECT e.seq, e.at FROM events AS e
                                WHERE e.run_id = r.id AND e.type = 'run.started'
                                  AND e.data->>'attempt' = $2::int4::text
                                ORDER BY e.seq DESC LIMIT 1) AS s
                WHERE r.id = $1"#,
            id.0,
            attempt
        )
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let steps = sqlx::query!(
            r#"SELECT type AS kind, task, agent, at FROM events
                WHERE run_id = $1 AND seq > $2 AND seq < coalesce($3, 9223372036854775807)
                  AND type IN ('task.started', 'task.completed', 'task.failed', 'run.awaiting_input')
                ORDER BY seq"#,
            id.0,
            run.seq,
            run.next_seq
        )
        .fetch_all(&self.pool)
        .await?;
        let mut open: Option<(String, String, chrono::DateTime<chrono::Utc>)> = None;
        for step in steps {
            match (step.kind.as_str(), step.task) {
                ("task.started", Some(task)) => open = Some((task, step.agent.unwrap_or_default(), step.at)),
                (_, Some(task)) if open.as_ref().is_some_and(|(t, _, _)| *t == task) => open = None,
                _ => {}
            }
        }
        Ok(Some(DeadAttempt {
            crew_name: run.crew_name,
            tenant: TenantId::from(run.tenant),
            attempt,
            started_at: run.at,
            task: open,
            trace: crate::domain::RunTrace::from_columns(run.trace_id, run.traceparent, run.tracestate),
        }))
    }

    /// Cancel a run: at once if it is queued or awaiting input, else ask its worker (the run
    /// becomes `cancelling` and the worker is told over `agentd_cancel`).
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn request_cancel(&self, id: RunId, audit: &Audit) -> StoreResult<CancelOutcome> {
        let mut tx = self.pool.begin().await?;
        let status = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(status) = status else { return Ok(CancelOutcome::NotFound) };
        let status: RunStatus = parse(&status)?;
        let finished = status.is_terminal();
        match status {
            RunStatus::Queued | RunStatus::Waiting | RunStatus::AwaitingInput => {
                cancel_now(&mut tx, id).await?;
            }
            RunStatus::Running => {
                sqlx::query!("UPDATE runs SET status = 'cancelling', updated_at = now() WHERE id = $1", id.0)
                    .execute(&mut *tx)
                    .await?;
                notify(&mut tx, CANCEL_CHANNEL, id).await?;
            }
            _ => {}
        }
        if !finished {
            audit.record_for(&mut tx, Owner::Run(id.0)).await?;
        }
        tx.commit().await?;
        let run = self.get_run(id).await?;
        Ok(match run {
            None => CancelOutcome::NotFound,
            Some(run) if finished => CancelOutcome::AlreadyFinished(run),
            Some(run) => CancelOutcome::Accepted(run),
        })
    }

    /// The worker of `attempt` stopped the run on request: it ends `cancelled`.
    #[tracing::instrument(skip_all, fields(run_id = %id, attempt), err)]
    pub async fn finish_cancelled(&self, id: RunId, attempt: i32) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let held = holds(&mut tx, id, attempt).await?;
        let done = held && cancel_now(&mut tx, id).await?;
        tx.commit().await?;
        Ok(done)
    }

    /// End `attempt` of the run as failed, for a reason outside the engine (a timeout, say).
    #[tracing::instrument(skip_all, fields(run_id = %id, attempt), err)]
    pub async fn fail_run(&self, id: RunId, attempt: i32, error: RunError) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let done = holds(&mut tx, id, attempt).await? && fail(&mut tx, id, error).await?;
        tx.commit().await?;
        Ok(done)
    }
}

/// Lock the run and tell whether `attempt` still holds it.
async fn holds(tx: &mut Transaction<'_, Postgres>, id: RunId, attempt: i32) -> StoreResult<bool> {
    let status = sqlx::query_scalar!(
        "SELECT status FROM runs WHERE id = $1 AND attempt = $2 FOR UPDATE",
        id.0,
        attempt
    )
    .fetch_optional(&mut **tx)
    .await?;
    Ok(matches!(status.as_deref(), Some("running" | "cancelling")))
}

/// Count one more death of a run's replica (an interruption too).
async fn count_death(tx: &mut Transaction<'_, Postgres>, id: RunId) -> StoreResult<()> {
    sqlx::query!(
        "UPDATE runs SET interruptions = interruptions + 1, deaths = deaths + 1 WHERE id = $1",
        id.0
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Count one more interruption of a run.
async fn count_interruption(tx: &mut Transaction<'_, Postgres>, id: RunId) -> StoreResult<()> {
    sqlx::query!("UPDATE runs SET interruptions = interruptions + 1 WHERE id = $1", id.0)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Put a run back in the queue and wake a worker.
async fn requeue(tx: &mut Transaction<'_, Postgres>, id: RunId) -> StoreResult<bool> {
    let updated = sqlx::query!(
        r#"UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
           WHERE id = $1"#,
        id.0
    )
    .execute(&mut **tx)
    .await?;
    notify(tx, RUNS_CHANNEL, id).await?;
    Ok(updated.rows_affected() > 0)
}

/// End a run `cancelled`: unfinished tasks cancelled, running tool calls failed, `run.cancelled`.
pub(super) async fn cancel_now(tx: &mut Transaction<'_, Postgres>, id: RunId) -> StoreResult<bool> {
    let updated = sqlx::query!(
        r#"UPDATE runs SET status = 'cancelled', finished_at = now(), lease_owner = NULL,
                  lease_expires_at = NULL, updated_at = now(),
                  error = '{"kind": "cancelled", "message": "the run was cancelled"}'
           WHERE id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')"#,
        id.0
    )
    .execute(&mut **tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(false);
    }
    close_open_work(tx, id.0, "cancelled", "the run was cancelled").await?;
    append_event_tx(tx, id, None, None, EventData::RunCancelled(Empty {})).await?;
    Ok(true)
}

/// End a run `failed` with `error` and `run.failed`.
async fn fail(tx: &mut Transaction<'_, Postgres>, id: RunId, error: RunError) -> StoreResult<bool> {
    let value = json!(error);
    let updated = sqlx::query!(
        r#"UPDATE runs SET status = 'failed', finished_at = now(), lease_owner = NULL,
                  lease_expires_at = NULL, updated_at = now(), error = $2
           WHERE id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')"#,
        id.0,
        value
    )
    .execute(&mut **tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(false);
    }
    close_open_work(tx, id.0, "failed", &error.message).await?;
    append_event_tx(tx, id, None, None, EventData::RunFailed(RunFailed { error: error.clone() })).await?;
    Ok(true)
}

/// Mark the unfinished tasks of a run ended (`task_status`) and its running tool calls failed.
async fn close_open_work(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    task_status: &str,
    why: &str,
) -> StoreResult<()> {
    sqlx::query!(
        r#"UPDATE run_tasks SET status = $2, finished_at = now()
           WHERE run_id = $1 AND status IN ('pending', 'running')"#,
        id,
        task_status
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query!(
        r#"UPDATE tool_calls SET status = 'failed', error = $2, finished_at = now()
           WHERE run_id = $1 AND status = 'running'"#,
        id,
        why
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A heartbeat: extend the lease of `attempt` of run `id` by `lease` from now.
pub(super) struct Renewal {
    id: RunId,
    attempt: i32,
    lease: Duration,
}

/// The heartbeats' group commit: a replica running thousands of runs renews their leases with a
/// statement per batch rather than one per run.
pub(super) struct RenewWrite;

impl GroupWrite for RenewWrite {
    type Item = Renewal;
    type Output = StoreResult<Lease>;
    const MAX_BATCH: usize = 1024;

    fn key(renewal: &Renewal) -> Option<Uuid> {
        Some(renewal.id.0)
    }

    /// The rows are locked in id order, as the journal's writers lock them (no deadlocks).
    async fn write(
        held: &mut super::group::Held,
        renewals: &[Renewal],
    ) -> Result<Vec<StoreResult<Lease>>, Failure<StoreResult<Lease>>> {
        let ids: Vec<Uuid> = renewals.iter().map(|r| r.id.0).collect();
        let attempts: Vec<i32> = renewals.iter().map(|r| r.attempt).collect();
        let leases: Vec<f64> = renewals.iter().map(|r| r.lease.as_secs_f64()).collect();
        let rows = sqlx::query!(
            r#"WITH held AS (
                   SELECT r.id, h.lease
                     FROM runs AS r
                     JOIN UNNEST($1::uuid[], $2::int4[], $3::float8[]) AS h(id, attempt, lease)
                       ON r.id = h.id AND r.attempt = h.attempt
                    WHERE r.id = ANY($1) AND r.status IN ('running', 'cancelling')
                    ORDER BY r.id
                      FOR UPDATE OF r
               )
               UPDATE runs SET lease_expires_at = now() + make_interval(secs => held.lease)
                 FROM held
                WHERE runs.id = held.id
            RETURNING runs.id, runs.status"#,
            &ids,
            &attempts,
            &leases,
        )
        .fetch_all(held.get().await?)
        .await?;
        let statuses: std::collections::HashMap<Uuid, String> =
            rows.into_iter().map(|r| (r.id, r.status)).collect();
        Ok(renewals
            .iter()
            .map(|r| {
                Ok(match statuses.get(&r.id.0).map(String::as_str) {
                    Some("running") => Lease::Held,
                    Some(_) => Lease::Cancelling,
                    None => Lease::Lost,
                })
            })
            .collect())
    }

    fn failed(error: StoreError) -> StoreResult<Lease> {
        Err(error)
    }
}

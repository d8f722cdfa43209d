//! Forks and retries: runs that continue from a journal. A fork is a new run whose tasks before
//! its task are taken over from an ended run (their rows, messages, tool calls and events copied
//! in the transaction that stores it), so its engine skips them and repeats none of their calls.
//! A retry queues a failed run again: its next attempt reads its journal and continues where it
//! failed, a new series of attempts.

use chrono::{SubsecRound, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::events::append_event_tx;
use super::listen::{notify, RUNS_CHANNEL};
use super::runs::{insert_runs, QueuedRun};
use super::tenants::{hold_queue, hold_tenant_queue};
use super::{decode, parse, Audit, Owner, Store, StoreResult};
use crate::domain::event::{RunForked, RunRetried};
use crate::domain::fork::ForkedFrom;
use crate::domain::kickoff::NewRun;
use crate::domain::TenantId;
use crate::domain::{CrewSpec, EventData, QueueFull, Run, RunError, RunId, RunStatus};

/// What a fork starts from: an ended run's crew, inputs and settings.
#[derive(Debug, Clone)]
pub struct ForkSource {
    pub tenant: TenantId,
    pub status: RunStatus,
    pub crew: CrewSpec,
    pub inputs: Map<String, Value>,
    pub metadata: Map<String, Value>,
    pub timeout_s: Option<u32>,
}

/// What storing a fork did.
#[derive(Debug)]
pub enum Forked {
    Stored(Box<Run>),
    /// The run it forks is gone (deleted meanwhile).
    NoSource,
    /// The run it forks has not ended.
    Unfinished(RunStatus),
    /// A task to take over did not complete in the run it forks: (task, its status).
    TaskNotDone(String, String),
    /// The tenant's `max_queued` refused it.
    QueueFull(QueueFull),
}

/// What a retry did.
#[derive(Debug)]
pub enum Retried {
    /// Queued again (or `waiting` behind its thread's unfinished run).
    Queued(Box<Run>),
    NotFound,
    /// Only a failed run is retried.
    NotFailed(RunStatus),
    /// The tenant's `max_queued` refused it.
    QueueFull(QueueFull),
}

impl Store {
    /// The crew, inputs and settings of run `id`, to fork it; `None` when there is no such run.
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn fork_source(&self, id: RunId) -> StoreResult<Option<ForkSource>> {
        let row = sqlx::query!(
            "SELECT tenant, status, crew_spec, inputs, metadata, timeout_s FROM runs WHERE id = $1",
            id.0
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ForkSource {
            tenant: TenantId::from(row.tenant),
            status: parse(&row.status)?,
            crew: decode(row.crew_spec, "runs.crew_spec")?,
            inputs: decode(row.inputs, "runs.inputs")?,
            metadata: decode(row.metadata, "runs.metadata")?,
            timeout_s: row.timeout_s.and_then(|t| u32::try_from(t).ok()),
        }))
    }

    /// Store `run`, a fork of `source` at task `at` taking over the tasks `reused` (those before
    /// `at`, each of which must have completed in `source`): their rows, messages, tool calls and
    /// events are copied, after a `run.forked` event; the thread history `source` saw goes with
    /// it. All in one transaction, with `source` share-locked (it cannot be retried or deleted
    /// meanwhile).
    #[tracing::instrument(skip_all, fields(run_id = %run.id, source = %source), err)]
    pub async fn fork_run(
        &self,
        run: &NewRun,
        source: RunId,
        at: &str,
        reused: &[String],
        audit: &Audit,
    ) -> StoreResult<Forked> {
        let created_at = Utc::now().trunc_subsecs(6);
        let row = QueuedRun::new(run, created_at)?;
        let mut tx = self.pool.begin().await?;
        let found = sqlx::query!("SELECT status, thread_history FROM runs WHERE id = $1 FOR SHARE", source.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(found) = found else { return Ok(Forked::NoSource) };
        let status: RunStatus = parse(&found.status)?;
        if !status.is_terminal() {
            return Ok(Forked::Unfinished(status));
        }
        let reused_tasks = sqlx::query!(
            "SELECT name, status FROM run_tasks WHERE run_id = $1 AND name = ANY($2) ORDER BY position",
            source.0,
            reused
        )
        .fetch_all(&mut *tx)
        .await?;
        if let Some(task) = reused_tasks.iter().find(|t| t.status != "completed") {
            return Ok(Forked::TaskNotDone(task.name.clone(), task.status.clone()));
        }
        if reused_tasks.len() != reused.len() {
            let missing = reused.iter().find(|name| !reused_tasks.iter().any(|t| &t.name == *name));
            return Ok(Forked::TaskNotDone(missing.cloned().unwrap_or_default(), "missing".into()));
        }
        if let Err(full) = hold_queue(&mut tx, std::slice::from_ref(run)).await? {
            tx.rollback().await?;
            return Ok(Forked::QueueFull(full));
        }
        insert_runs(&mut tx, std::slice::from_ref(&row)).await?;
        sqlx::query!(
            r#"UPDATE runs SET forked_from = $2, forked_at = $3, thread_history = $4 WHERE id = $1"#,
            run.id.0,
            source.0,
            at,
            found.thread_history
        )
        .execute(&mut *tx)
        .await?;
        let forked = RunForked { run_id: source.to_string(), task: at.to_owned(), tasks: reused.to_vec() };
        append_event_tx(&mut tx, run.id, None, None, EventData::RunForked(forked)).await?;
        copy_journal(&mut tx, source, run.id, reused).await?;
        audit.record_in(&mut tx, &run.tenant, Some(&format!("/v1/runs/{}", run.id))).await?;
        tx.commit().await?;
        let mut stored = run.queued(created_at);
        stored.forked_from = Some(ForkedFrom { run_id: source, task: at.to_owned() });
        for task in &mut stored.tasks {
            if reused.contains(&task.name) {
                task.status = crate::domain::TaskStatus::Completed;
            }
        }
        // The copied outputs and times as stored.
        Ok(Forked::Stored(Box::new(self.get_run(run.id).await?.unwrap_or(stored))))
    }

    /// Queue failed run `id` again, to continue its journal: its failed tasks pending again, its
    /// error and interruptions cleared (a new series of attempts), `run.retried` logged. A run of
    /// a thread whose other run has not ended waits for it. `queue`: its tenant and the tenant's
    /// `max_queued`, kept as a kickoff's is.
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn retry_run(
        &self,
        id: RunId,
        queue: Option<(&TenantId, u32)>,
        audit: &Audit,
    ) -> StoreResult<Retried> {
        let mut tx = self.pool.begin().await?;
        if let Some((tenant, max)) = queue {
            if let Err(full) = hold_tenant_queue(&mut tx, tenant, max, 1).await? {
                tx.rollback().await?;
                return Ok(Retried::QueueFull(full));
            }
        }
        // The thread first (kickoffs into it and the ends of its runs take it before a run's row).
        let thread = sqlx::query_scalar!("SELECT thread_id FROM runs WHERE id = $1", id.0)
            .fetch_optional(&mut *tx)
            .await?
            .flatten();
        if let Some(thread) = thread {
            sqlx::query!("SELECT id FROM threads WHERE id = $1 FOR UPDATE", thread)
                .fetch_optional(&mut *tx)
                .await?;
        }
        let run = sqlx::query!("SELECT status, error FROM runs WHERE id = $1 FOR UPDATE", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(run) = run else { return Ok(Retried::NotFound) };
        let status: RunStatus = parse(&run.status)?;
        if status != RunStatus::Failed {
            return Ok(Retried::NotFailed(status));
        }
        let busy = match thread {
            None => false,
            Some(thread) => {
                sqlx::query_scalar!(
                    r#"SELECT EXISTS (SELECT 1 FROM runs WHERE thread_id = $1 AND id <> $2
                     AND status IN ('queued', 'running', 'awaiting_input', 'cancelling')) AS "busy!""#,
                    thread,
                    id.0
                )
                .fetch_one(&mut *tx)
                .await?
            }
        };
        let next = if busy { RunStatus::Waiting } else { RunStatus::Queued };
        sqlx::query!(
            r#"UPDATE runs SET status = $2, error = NULL, output = NULL, finished_at = NULL, interruptions = 0,
                              lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                WHERE id = $1"#,
            id.0,
            next.as_str()
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query!(
            r#"UPDATE run_tasks SET status = 'pending', error = NULL, finished_at = NULL
                WHERE run_id = $1 AND status IN ('failed', 'cancelled')"#,
            id.0
        )
        .execute(&mut *tx)
        .await?;
        let error: Option<RunError> = run.error.map(|e| decode(e, "runs.error")).transpose()?;
        append_event_tx(&mut tx, id, None, None, EventData::RunRetried(RunRetried { error })).await?;
        audit.record_for(&mut tx, Owner::Run(id.0)).await?;
        if next == RunStatus::Queued {
            notify(&mut tx, RUNS_CHANNEL, id).await?;
        }
        tx.commit().await?;
        match self.get_run(id).await? {
            Some(run) => Ok(Retried::Queued(Box::new(run))),
            None => Ok(Retried::NotFound),
        }
    }
}

/// Copy what `source` journaled for the tasks `reused` into run `fork`: the tasks' rows (done,
/// with their outputs and times), their messages, tool calls and side records, and their events after the
/// fork's own (`seq` dense).
async fn copy_journal(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    source: RunId,
    fork: RunId,
    reused: &[String],
) -> StoreResult<()> {
    let (source, fork): (Uuid, Uuid) = (source.0, fork.0);
    // Each statement copies rows of the tasks `reused` ($3) from `source` ($1) into `fork` ($2).
    macro_rules! copy {
        ($statement:literal) => {
            sqlx::query!($statement, source, fork, reused).execute(&mut **tx).await?
        };
    }
    copy!(
        r#"UPDATE run_tasks AS t SET status = s.status, output = s.output, started_at = s.started_at,
                                     finished_at = s.finished_at
             FROM run_tasks AS s
            WHERE t.run_id = $2 AND s.run_id = $1 AND s.name = t.name AND s.name = ANY($3)"#
    );
    copy!(
        r#"INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, tool_calls, tool_call_id,
                                 attempt, created_at, compacts, images)
           SELECT $2, row_number() OVER (ORDER BY seq), conversation, task, agent, role, content, tool_calls,
                  tool_call_id, attempt, created_at, compacts, images
             FROM messages WHERE run_id = $1 AND task = ANY($3)"#
    );
    copy!(
        r#"INSERT INTO tool_calls (run_id, id, task, agent, tool, arguments, status, result, error, cached, attempt,
                                   started_at, finished_at, conversation, approval)
           SELECT $2, id, task, agent, tool, arguments, status, result, error, cached, attempt, started_at,
                  finished_at, conversation, approval
             FROM tool_calls WHERE run_id = $1 AND task = ANY($3)"#
    );
    copy!(
        r#"INSERT INTO side_records (run_id, task, kind, agent, arguments, value, attempt, created_at)
           SELECT $2, task, kind, agent, arguments, value, attempt, created_at
             FROM side_records WHERE run_id = $1 AND task = ANY($3)"#
    );
    copy!(
        r#"WITH copied AS (
               INSERT INTO events (run_id, seq, type, task, agent, data, at)
               SELECT $2, f.last_seq + row_number() OVER (ORDER BY e.seq), e.type, e.task, e.agent, e.data, e.at
                 FROM events AS e, (SELECT last_seq FROM runs WHERE id = $2) AS f
                WHERE e.run_id = $1 AND e.task = ANY($3) AND e.type NOT LIKE 'run.%'
               RETURNING seq)
           UPDATE runs SET last_seq = coalesce((SELECT max(seq) FROM copied), last_seq) WHERE id = $2"#
    );
    Ok(())
}

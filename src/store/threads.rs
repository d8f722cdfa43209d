//! Threads: creating, reading, listing and deleting a tenant's threads, a kickoff into a thread
//! (its `multitask_strategy` applied under the thread's row lock, so two replicas taking kickoffs
//! for one thread at once never start two runs of it), and the history a thread's run sees.
//!
//! A thread runs one run at a time. What queues the next one when a run of the thread ends is the
//! `runs_queue_next_waiting` trigger (migration 25), at the commit that ends it, whoever ends it
//! (the engine, a cancellation, a timeout, the recoverer).

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Map, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::lease::cancel_now;
use super::listen::{notify, CANCEL_CHANNEL};
use super::runs::{claim_idempotency_key, insert_runs, QueuedRun};
use super::tenants::hold_queue;
use super::{decode, parse, Audit, Created, IdempotencyKey, Store, StoreError, StoreResult};
use crate::domain::kickoff::NewRun;
use crate::domain::thread::ThreadPage;
use crate::domain::thread::{
    render_history, MultitaskStrategy, PastRun, Thread, ThreadJoin, ThreadRun, ThreadStatus,
    MAX_THREAD_RUNS_SHOWN,
};
use crate::domain::TenantId;
use crate::domain::ThreadId;
use crate::domain::{RunId, RunStatus, TaskOutput};

/// What a kickoff into a thread did.
#[derive(Debug)]
pub enum ThreadKickoff {
    /// The run was stored (`queued`, or `waiting` behind the thread's unfinished runs), or the
    /// idempotency key's earlier answer.
    Created(Created),
    /// No such thread (of the tenant).
    NoThread,
    /// `reject`: these runs of the thread have not ended.
    Busy(Vec<RunId>),
}

/// What deleting a thread did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadDeleted {
    /// The thread and its runs (this many) are gone.
    Deleted {
        runs: u64,
    },
    NotFound,
    /// A run of the thread is running: cancel it first.
    Running(RunId),
}

/// How often a kickoff into a busy thread tries again when one of the runs it must cancel is
/// locked by a write of its own (a worker committing a step, say): each try waits a little longer.
const LOCK_TRIES: u32 = 40;

/// The statuses of a run that has not ended.
const UNFINISHED: [&str; 5] = ["queued", "waiting", "running", "awaiting_input", "cancelling"];

impl Store {
    /// A new thread of `tenant`.
    #[tracing::instrument(skip_all, err)]
    pub async fn create_thread(
        &self,
        tenant: &TenantId,
        metadata: &Map<String, Value>,
        audit: &Audit,
    ) -> StoreResult<Thread> {
        let id = Uuid::now_v7();
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query!(
            r#"INSERT INTO threads (id, tenant, metadata) VALUES ($1, $2, $3)
               RETURNING created_at, updated_at"#,
            id,
            tenant.as_str(),
            Value::Object(metadata.clone())
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, Some(&format!("/v1/threads/{id}"))).await?;
        tx.commit().await?;
        Ok(Thread {
            id,
            metadata: metadata.clone(),
            status: ThreadStatus::Idle,
            created_at: row.created_at,
            updated_at: row.updated_at,
            runs: Some(Vec::new()),
        })
    }

    /// The thread of `tenant` a protocol's conversation names: `named` when it is one of the
    /// tenant's threads, else `derived`, created with `metadata` when it does not exist. `None`
    /// only when `derived` is another tenant's thread (two SHA-256 prefixes alike: never in
    /// practice). One statement, unless a concurrent request is creating `derived` meanwhile.
    #[tracing::instrument(skip_all, err)]
    pub async fn conversation_thread(
        &self,
        tenant: &TenantId,
        named: Option<ThreadId>,
        derived: ThreadId,
        metadata: &Map<String, Value>,
    ) -> StoreResult<Option<ThreadId>> {
        let row = sqlx::query!(
            r#"WITH own AS (SELECT id FROM threads WHERE id = $1 AND tenant = $2),
                    made AS (INSERT INTO threads (id, tenant, metadata)
                             SELECT $3, $2, $4 WHERE NOT EXISTS (SELECT FROM own)
                             ON CONFLICT (id) DO NOTHING RETURNING tenant)
               SELECT (SELECT id FROM own) AS own,
                      (SELECT tenant FROM made) AS made,
                      (SELECT tenant FROM threads WHERE id = $3) AS found"#,
            named.map(uuid::Uuid::from),
            tenant.as_str(),
            derived.0,
            Value::Object(metadata.clone())
        )
        .fetch_one(&self.pool)
        .await?;
        if let Some(own) = row.own {
            return Ok(Some(ThreadId(own)));
        }
        let owner = match row.made.or(row.found) {
            Some(owner) => owner,
            // Another request created it after this statement's snapshot was taken: read again.
            None => sqlx::query_scalar!("SELECT tenant FROM threads WHERE id = $1", derived.0)
                .fetch_optional(&self.pool)
                .await?
                .unwrap_or_default(),
        };
        Ok((owner == tenant.as_str()).then_some(derived))
    }

    /// One of the tenant's threads, with its newest runs (oldest first).
    #[tracing::instrument(skip_all, fields(thread_id = %id), err)]
    pub async fn get_thread(&self, tenant: &TenantId, id: ThreadId) -> StoreResult<Option<Thread>> {
        let row = sqlx::query!(
            r#"SELECT metadata, created_at, updated_at,
                      (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                  'id', r.id, 'status', r.status, 'created_at', r.created_at,
                                  'finished_at', r.finished_at) ORDER BY r.created_at, r.id), '[]')
                         FROM (SELECT id, status, created_at, finished_at FROM runs
                                WHERE thread_id = threads.id ORDER BY created_at DESC, id DESC LIMIT $3) AS r)
                        AS "runs!"
                 FROM threads WHERE id = $1 AND tenant = $2"#,
            id.0,
            tenant.as_str(),
            MAX_THREAD_RUNS_SHOWN
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        #[derive(serde::Deserialize)]
        struct RunRow {
            id: Uuid,
            status: String,
            created_at: DateTime<Utc>,
            finished_at: Option<DateTime<Utc>>,
        }
        let runs: Vec<RunRow> = decode(row.runs, "the runs of a thread")?;
        let runs = runs
            .into_iter()
            .map(|r| {
                Ok(ThreadRun {
                    id: RunId(r.id),
                    status: parse(&r.status)?,
                    created_at: r.created_at,
                    finished_at: r.finished_at,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        // The newest 100 may leave out an older unfinished run: ask the index.
        let busy = runs.iter().any(|r| !r.status.is_terminal()) || self.thread_busy(id).await?;
        Ok(Some(Thread {
            id: id.0,
            metadata: decode(row.metadata, "threads.metadata")?,
            status: if busy { ThreadStatus::Busy } else { ThreadStatus::Idle },
            created_at: row.created_at,
            updated_at: row.updated_at,
            runs: Some(runs),
        }))
    }

    /// Whether a run of the thread has not ended.
    async fn thread_busy(&self, id: ThreadId) -> StoreResult<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM runs WHERE thread_id = $1 AND status = ANY($2)) AS "busy!""#,
            id.0,
            &UNFINISHED.map(String::from)
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// The tenant's threads newest first, strictly older than `before`, those whose metadata
    /// contains `metadata` (JSON containment) only when it is given.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_threads(
        &self,
        tenant: &TenantId,
        metadata: Option<&Map<String, Value>>,
        before: Option<ThreadId>,
        limit: i64,
    ) -> StoreResult<ThreadPage> {
        let before = before.unwrap_or(ThreadId(Uuid::max()));
        let filter = metadata.map(|m| Value::Object(m.clone()));
        let rows = sqlx::query!(
            r#"SELECT id, metadata, created_at, updated_at,
                      EXISTS (SELECT 1 FROM runs WHERE thread_id = threads.id AND status = ANY($5)) AS "busy!"
                 FROM threads
                WHERE tenant = $1 AND id < $2 AND ($3::jsonb IS NULL OR metadata @> $3)
                ORDER BY id DESC LIMIT $4"#,
            tenant.as_str(),
            before.0,
            filter,
            limit + 1,
            &UNFINISHED.map(String::from)
        )
        .fetch_all(&self.pool)
        .await?;
        let has_more = rows.len() as i64 > limit;
        let mut threads = rows
            .into_iter()
            .map(|row| {
                Ok(Thread {
                    id: row.id,
                    metadata: decode(row.metadata, "threads.metadata")?,
                    status: if row.busy { ThreadStatus::Busy } else { ThreadStatus::Idle },
                    created_at: row.created_at,
                    updated_at: row.updated_at,
                    runs: None,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        threads.truncate(limit.max(0) as usize);
        let next_before = has_more.then(|| threads.last().map(|t| t.id)).flatten();
        Ok(ThreadPage { threads, next_before })
    }

    /// Delete one of the tenant's threads with its runs (and their journals), unless one of them
    /// is running (or being cancelled).
    #[tracing::instrument(skip_all, fields(thread_id = %id), err)]
    pub async fn delete_thread(
        &self,
        tenant: &TenantId,
        id: ThreadId,
        audit: &Audit,
    ) -> StoreResult<ThreadDeleted> {
        let mut tx = self.pool.begin().await?;
        let found = sqlx::query_scalar!(
            "SELECT id FROM threads WHERE id = $1 AND tenant = $2 FOR UPDATE",
            id.0,
            tenant.as_str()
        )
        .fetch_optional(&mut *tx)
        .await?;
        if found.is_none() {
            return Ok(ThreadDeleted::NotFound);
        }
        // Locked: a claim (SKIP LOCKED) passes them by.
        let runs = sqlx::query!(
            "SELECT id, status FROM runs WHERE thread_id = $1 ORDER BY created_at, id FOR UPDATE",
            id.0
        )
        .fetch_all(&mut *tx)
        .await?;
        if let Some(running) = runs.iter().find(|r| matches!(r.status.as_str(), "running" | "cancelling")) {
            return Ok(ThreadDeleted::Running(RunId(running.id)));
        }
        let ids: Vec<Uuid> = runs.iter().map(|r| r.id).collect();
        audit.record_in(&mut tx, tenant, None).await?;
        sqlx::query!("SELECT agentd_remove_runs($1)", &ids).fetch_one(&mut *tx).await?;
        sqlx::query!("DELETE FROM threads WHERE id = $1", id.0).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(ThreadDeleted::Deleted { runs: ids.len() as u64 })
    }

    /// Store a run that joins a thread, its thread's `multitask_strategy` applied: with no
    /// unfinished run in the thread it is queued; else `reject` refuses it, `enqueue` stores it
    /// `waiting` behind them, `interrupt` cancels them and `rollback` cancels them to be deleted
    /// once stopped (the new run `waiting` until those its workers are stopping have ended). With
    /// an idempotency key, and under the tenant's `max_queued`, as [`Store::create_runs`] does.
    #[tracing::instrument(skip_all, fields(thread_id = %join.thread_id), err)]
    pub async fn create_thread_run(
        &self,
        run: &NewRun,
        join: &ThreadJoin,
        key: Option<&IdempotencyKey>,
    ) -> StoreResult<ThreadKickoff> {
        let mut tries = 0;
        loop {
            match self.try_create_thread_run(run, join, key).await {
                Err(StoreError::Database(sqlx::Error::Database(db)))
                    if db.code().as_deref() == Some("55P03") && tries < LOCK_TRIES =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(5 * u64::from(tries))).await;
                }
                other => return other,
            }
        }
    }

    async fn try_create_thread_run(
        &self,
        run: &NewRun,
        join: &ThreadJoin,
        key: Option<&IdempotencyKey>,
    ) -> StoreResult<ThreadKickoff> {
        let created_at = Utc::now().trunc_subsecs(6);
        let row = QueuedRun::new(run, created_at)?;
        let mut tx = self.pool.begin().await?;
        if let Some(key) = key {
            if !claim_idempotency_key(&mut tx, key, &[run.id]).await? {
                tx.rollback().await?;
                let earlier = self.find_idempotent_runs(key).await?.unwrap_or(Created::KeyConflict);
                return Ok(ThreadKickoff::Created(earlier));
            }
        }
        // The tenant's queue before the thread (every path takes them in this order).
        if let Err(full) = hold_queue(&mut tx, std::slice::from_ref(run)).await? {
            tx.rollback().await?;
            return Ok(ThreadKickoff::Created(Created::QueueFull(full)));
        }
        let status = match insert_in_thread(&mut tx, &row, run, join).await? {
            InThread::Stored(status) => status,
            InThread::NoThread => return Ok(ThreadKickoff::NoThread),
            InThread::Busy(runs) => return Ok(ThreadKickoff::Busy(runs)),
        };
        tx.commit().await?;
        let mut stored = run.queued(created_at);
        stored.status = status;
        Ok(ThreadKickoff::Created(Created::New(vec![stored])))
    }

    /// The history a thread's run sees: rendered at its first claim (the thread's completed runs
    /// before it, newest `history_runs` of them, in at most `max_bytes`) and kept, so every
    /// attempt sees the same. `None` for a run of no thread, or a thread with nothing before it.
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn thread_history(&self, id: RunId, max_bytes: usize) -> StoreResult<Option<String>> {
        let run = sqlx::query!(
            "SELECT thread_id, history_runs, thread_history, created_at FROM runs WHERE id = $1",
            id.0
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(run) = run else { return Ok(None) };
        if let Some(history) = run.thread_history {
            return Ok(Some(history).filter(|h| !h.is_empty()));
        }
        let Some(thread) = run.thread_id else { return Ok(None) };
        let earlier = sqlx::query!(
            r#"SELECT inputs, output AS "output!" FROM runs
                WHERE thread_id = $1 AND status = 'completed' AND output IS NOT NULL
                  AND (created_at, id) < ($2, $3)
                ORDER BY created_at DESC, id DESC LIMIT $4"#,
            thread,
            run.created_at,
            id.0,
            i64::from(run.history_runs.unwrap_or(0))
        )
        .fetch_all(&self.pool)
        .await?;
        let mut past = earlier
            .into_iter()
            .map(|row| {
                let output: TaskOutput = decode(row.output, "runs.output")?;
                Ok(PastRun { inputs: decode(row.inputs, "runs.inputs")?, output: output.raw })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        past.reverse();
        let rendered = render_history(&past, max_bytes).unwrap_or_default();
        // The first to render it keeps it (a concurrent attempt's is the same).
        let kept = sqlx::query_scalar!(
            r#"UPDATE runs SET thread_history = coalesce(thread_history, $2) WHERE id = $1
               RETURNING thread_history AS "history!""#,
            id.0,
            rendered
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(kept.filter(|h| !h.is_empty()))
    }
}

/// What storing a run in a thread did (in the caller's transaction).
pub(super) enum InThread {
    /// Stored, `queued` or `waiting`.
    Stored(RunStatus),
    NoThread,
    Busy(Vec<RunId>),
}

/// Store `run` (as `row`) in its thread, in `tx`, as [`Store::create_thread_run`] says.
pub(super) async fn insert_in_thread(
    tx: &mut Transaction<'_, Postgres>,
    row: &QueuedRun,
    run: &NewRun,
    join: &ThreadJoin,
) -> StoreResult<InThread> {
    let thread = sqlx::query_scalar!(
        "SELECT id FROM threads WHERE id = $1 AND tenant = $2 FOR UPDATE",
        join.thread_id,
        run.tenant.as_str()
    )
    .fetch_optional(&mut **tx)
    .await?;
    if thread.is_none() {
        return Ok(InThread::NoThread);
    }
    let unfinished = sqlx::query!(
        "SELECT id, status FROM runs WHERE thread_id = $1 AND status = ANY($2) ORDER BY created_at, id",
        join.thread_id,
        &UNFINISHED.map(String::from)
    )
    .fetch_all(&mut **tx)
    .await?;
    let mut status = RunStatus::Queued;
    if !unfinished.is_empty() {
        match join.strategy {
            MultitaskStrategy::Reject => {
                return Ok(InThread::Busy(unfinished.iter().map(|r| RunId(r.id)).collect()));
            }
            MultitaskStrategy::Enqueue => status = RunStatus::Waiting,
            MultitaskStrategy::Interrupt | MultitaskStrategy::Rollback => {
                let ids: Vec<Uuid> = unfinished.iter().map(|r| r.id).collect();
                let discard = join.strategy == MultitaskStrategy::Rollback;
                if stop_runs(tx, &ids, discard).await? {
                    status = RunStatus::Waiting;
                }
            }
        }
    }
    insert_runs(tx, std::slice::from_ref(row)).await?;
    sqlx::query!(
        "UPDATE runs SET thread_id = $2, history_runs = $3, status = $4 WHERE id = $1",
        run.id.0,
        join.thread_id,
        i32::try_from(join.history_runs).unwrap_or(i32::MAX),
        status.as_str()
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query!("UPDATE threads SET updated_at = now() WHERE id = $1", join.thread_id)
        .execute(&mut **tx)
        .await?;
    Ok(InThread::Stored(status))
}

/// Stop a thread's unfinished runs (locked without waiting: a kickoff holding the thread's lock
/// never waits for a run's, which a run's end holds while it waits for the thread's): those no
/// worker holds end `cancelled` now, running ones are asked to stop. With `discard`, each is
/// deleted once it has ended (see migration 25). Whether any is still stopping.
async fn stop_runs(tx: &mut Transaction<'_, Postgres>, ids: &[Uuid], discard: bool) -> StoreResult<bool> {
    let runs = sqlx::query!("SELECT id, status FROM runs WHERE id = ANY($1) FOR UPDATE NOWAIT", ids)
        .fetch_all(&mut **tx)
        .await?;
    if discard {
        sqlx::query!("UPDATE runs SET discard_on_end = true WHERE id = ANY($1)", ids)
            .execute(&mut **tx)
            .await?;
    }
    let mut stopping = false;
    for run in runs {
        let id = RunId(run.id);
        match parse::<RunStatus>(&run.status)? {
            RunStatus::Running => {
                sqlx::query!(
                    "UPDATE runs SET status = 'cancelling', updated_at = now() WHERE id = $1",
                    run.id
                )
                .execute(&mut **tx)
                .await?;
                notify(tx, CANCEL_CHANNEL, id).await?;
                stopping = true;
            }
            RunStatus::Cancelling => stopping = true,
            RunStatus::Queued | RunStatus::Waiting | RunStatus::AwaitingInput => {
                cancel_now(tx, id).await?;
            }
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled => {}
        }
    }
    Ok(stopping)
}

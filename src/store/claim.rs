//! The queue claim: a worker takes queued runs, fairly between tenants (or one named run) for a new attempt,
//! becoming its lease holder, and the run's `run.started` event is logged in the same transaction.
//! The claimed attempt is what the worker's [`RunJournal`](super::RunJournal) is fenced by.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::events::append_event_tx;
use super::runs::KickoffClaim;
use super::{decode_text, Store, StoreResult, RECORD_FORMAT};
use crate::domain::event::RunStarted;
use crate::domain::TenantId;
use crate::domain::{CrewSpec, EventData, Quotas, RunId, RunTrace};

/// A run a worker now holds the lease of, with what it needs to execute it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRun {
    pub id: RunId,
    /// The tenant that owns it.
    pub tenant: TenantId,
    /// The attempt this claim started (1 for the first claim); every journal write carries it.
    pub attempt: i32,
    /// Boxed: a claimed run is held by its task for as long as it runs, and a crew spec is large
    /// (what the spec gains leaves each running task's size alone).
    pub crew: Box<CrewSpec>,
    pub inputs: Map<String, Value>,
    /// When the run was kicked off.
    pub created_at: DateTime<Utc>,
    /// When the run started (its first claim).
    pub started_at: DateTime<Utc>,
    /// The run's own time limit, if it set one.
    pub timeout: Option<Duration>,
    /// Time spent awaiting human input, which the time limit does not count.
    pub paused: Duration,
    /// The tenant's quotas that bind a run once claimed (its daily caps; `max_running`); `None`
    /// for a tenant without them (boxed: such a run carries nothing more than before quotas).
    pub quotas: Option<Box<Quotas>>,
    /// The trace its spans join, when it has one.
    pub trace: Option<RunTrace>,
    /// The thread it belongs to, when it joined one.
    pub thread_id: Option<Uuid>,
    /// Its thread's history, when an earlier attempt rendered it (see
    /// [`Store::thread_history`]).
    pub thread_history: Option<String>,
    /// The run it was forked from: its journal holds the tasks taken over, so even its first
    /// attempt reads it.
    pub forked_from: Option<RunId>,
    /// The evaluation it is a case of: the worker reads what the case needs (its recorded run's
    /// calls, in mode `replay`; its judge, when it has a rubric) with [`Store::evaluation_case`].
    pub evaluation_id: Option<Uuid>,
}

// This replica's worker slots as the kickoff use case sees them. A kickoff that finds a slot free
// here (and no run queued anywhere) stores its run already claimed and starts it in that slot:
// no notification, no claim statement and no transaction of its own between the kickoff and the
// run's first step. The worker pool implements `LocalWorkers`; the composition root hands it to
// the use cases.

/// The slots of this replica's worker pool.
pub trait LocalWorkers: Send + Sync {
    /// A slot held for one kickoff, if one is free now and the pool takes work (not once it
    /// drains).
    fn reserve(&self) -> Option<Box<dyn Reservation>>;
}

/// A held slot: dropped, it is free again.
pub trait Reservation: Send {
    /// The claim a run stored for this slot carries.
    fn claim(&self) -> &KickoffClaim;

    /// Execute `run`, stored claimed for [`Reservation::claim`], in this slot.
    fn start(self: Box<Self>, run: ClaimedRun);
}

impl ClaimedRun {
    /// A run its kickoff stored claimed ([`Store::create_runs_claimed`]), from what the kickoff
    /// had: nothing is read back or decoded. Its tenant has no quotas that bind a claimed run
    /// (the kickoff claims only for such a tenant).
    pub fn kicked_off(run: crate::domain::kickoff::NewRun, created_at: DateTime<Utc>) -> Self {
        Self {
            id: run.id,
            tenant: run.tenant,
            attempt: 1,
            crew: Box::new(run.crew),
            inputs: run.inputs,
            created_at,
            started_at: created_at,
            timeout: run.timeout_s.map(|s| Duration::from_secs(u64::from(s))),
            paused: Duration::ZERO,
            quotas: None,
            trace: run.trace,
            thread_id: None,
            thread_history: None,
            forked_from: None,
            evaluation_id: None,
        }
    }
}

/// A claimed row; the spec and inputs as JSON text, decoded straight into their types.
struct ClaimRow {
    id: Uuid,
    tenant: String,
    attempt: i32,
    crew_spec: String,
    inputs: String,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    timeout_s: Option<i32>,
    paused_s: f64,
    max_running: Option<i32>,
    max_tokens_per_day: Option<i64>,
    max_cost_usd_per_day: Option<f64>,
    trace_id: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    thread_id: Option<Uuid>,
    thread_history: Option<String>,
    forked_from: Option<Uuid>,
    evaluation_id: Option<Uuid>,
}

impl Store {
    /// Claim the next queued run for `owner` for `lease`: it becomes `running` with its attempt
    /// bumped and `run.started` logged, atomically. Runs other transactions are claiming are
    /// skipped (`SKIP LOCKED`), so concurrent claimers never take the same run. `None` when no run
    /// is queued (or every queued run's tenant is at its `max_running`).
    pub async fn claim_next_run(&self, owner: &str, lease: Duration) -> StoreResult<Option<ClaimedRun>> {
        self.claim_next_runs(owner, lease, 1).await?.into_iter().next().transpose()
    }

    /// Claim up to `limit` queued runs at once (one statement, `agentd_claim_runs`), as
    /// [`Store::claim_next_run`] claims one: fairly between tenants (each tenant with queued runs
    /// gets an equal share of the batch, its oldest runs first; a backlog of one tenant does not
    /// hold back another's runs) and within each tenant's `max_running`, exactly across replicas.
    /// Each claimed run, or why it cannot be read, oldest first.
    #[tracing::instrument(skip_all, fields(owner = %owner, limit), err)]
    pub async fn claim_next_runs(
        &self,
        owner: &str,
        lease: Duration,
        limit: i64,
    ) -> StoreResult<Vec<StoreResult<ClaimedRun>>> {
        let mut rows = sqlx::query_as!(
            ClaimRow,
            r#"SELECT id AS "id!", tenant AS "tenant!", attempt AS "attempt!", crew_spec AS "crew_spec!",
                      inputs AS "inputs!", created_at AS "created_at!", started_at, timeout_s,
                      paused_s AS "paused_s!", max_running, max_tokens_per_day, max_cost_usd_per_day,
                      trace_id, traceparent, tracestate, thread_id, thread_history, forked_from, evaluation_id
                 FROM agentd_claim_runs($1, $2, $3, $4)"#,
            owner,
            lease.as_secs_f64(),
            i32::try_from(limit).unwrap_or(i32::MAX),
            RECORD_FORMAT,
        )
        .fetch_all(&self.pool)
        .await?;
        rows.sort_by_key(|row| (row.created_at, row.id));
        Ok(rows.into_iter().map(claimed_run).collect())
    }

    /// Claim the run `id` for `owner` for `lease`, as [`Store::claim_next_run`] does, provided it
    /// is queued; `None` when it is not (or does not exist).
    #[tracing::instrument(skip_all, fields(owner = %owner, run_id = %id), err)]
    pub async fn claim_run(
        &self,
        id: RunId,
        owner: &str,
        lease: Duration,
    ) -> StoreResult<Option<ClaimedRun>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            ClaimRow,
            r#"UPDATE runs
                  SET status = 'running', attempt = attempt + 1, lease_owner = $2,
                      lease_expires_at = now() + make_interval(secs => $3),
                      started_at = coalesce(started_at, now()), updated_at = now(),
                      record_format = greatest(record_format, $4)
                WHERE id = $1 AND status = 'queued' AND record_format <= $4
            RETURNING id, attempt, crew_spec::text AS "crew_spec!", inputs::text AS "inputs!", created_at,
                      started_at, timeout_s, paused_s, tenant,
                      (SELECT max_running FROM tenants WHERE name = runs.tenant),
                      (SELECT max_tokens_per_day FROM tenants WHERE name = runs.tenant),
                      (SELECT max_cost_usd_per_day FROM tenants WHERE name = runs.tenant),
                      trace_id, traceparent, tracestate, thread_id, thread_history, forked_from, evaluation_id"#,
            id.0,
            owner,
            lease.as_secs_f64(),
            RECORD_FORMAT,
        )
        .fetch_optional(&mut *tx)
        .await?;
        finish_claim(tx, row, owner).await
    }
}

/// Log `run.started` for a claimed row and commit. The claim is committed before the row is
/// decoded: a run whose stored spec this binary cannot read (written by a newer version, say) then
/// waits for its lease to expire and stays claimable by others, instead of blocking the queue head.
async fn finish_claim(
    mut tx: Transaction<'_, Postgres>,
    row: Option<ClaimRow>,
    owner: &str,
) -> StoreResult<Option<ClaimedRun>> {
    let Some(row) = row else {
        tx.rollback().await?;
        return Ok(None);
    };
    let id = RunId(row.id);
    tracing::Span::current().record("run_id", tracing::field::display(id));
    let data = RunStarted { attempt: row.attempt, worker: owner.to_owned(), trace_id: row.trace_id.clone() };
    append_event_tx(&mut tx, id, None, None, EventData::RunStarted(data)).await?;
    tx.commit().await?;
    claimed_run(row).map(Some)
}

/// A claimed row's quotas, if its tenant has any that bind a claimed run.
fn quotas(row: &ClaimRow) -> Option<Box<Quotas>> {
    let quotas = Quotas {
        max_running: row.max_running.and_then(|n| u32::try_from(n).ok()),
        max_queued: None,
        max_tokens_per_day: row.max_tokens_per_day.and_then(|n| u64::try_from(n).ok()),
        max_cost_usd_per_day: row.max_cost_usd_per_day,
    };
    (quotas.max_running.is_some() || quotas.caps_spend()).then(|| Box::new(quotas))
}

/// Read a claimed row (after its claim is committed; see [`finish_claim`]).
fn claimed_run(row: ClaimRow) -> StoreResult<ClaimedRun> {
    let id = RunId(row.id);
    let quotas = quotas(&row);
    Ok(ClaimedRun {
        id,
        tenant: TenantId::from(row.tenant),
        attempt: row.attempt,
        crew: decode_text(&row.crew_spec, &format!("runs.crew_spec of run {id}"))?,
        inputs: decode_text(&row.inputs, &format!("runs.inputs of run {id}"))?,
        created_at: row.created_at,
        started_at: row.started_at.unwrap_or_else(Utc::now),
        timeout: row.timeout_s.and_then(|s| u64::try_from(s).ok()).map(Duration::from_secs),
        paused: Duration::try_from_secs_f64(row.paused_s).unwrap_or_default(),
        quotas,
        trace: RunTrace::from_columns(row.trace_id, row.traceparent, row.tracestate),
        thread_id: row.thread_id,
        thread_history: row.thread_history,
        forked_from: row.forked_from.map(RunId),
        evaluation_id: row.evaluation_id,
    })
}

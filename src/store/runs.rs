//! Runs and their tasks: creating a run (with its first event and its idempotency key, in one
//! transaction), reading one, listing them newest first. Kickoffs without an idempotency key go
//! through a group commit (see [`group`](super::group)): concurrent ones share a transaction.

use std::collections::HashSet;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::group::{Failure, GroupWrite};
use super::listen::{notify, RUNS_CHANNEL};
use super::tenants::{admit_kickoffs, hold_queue};
use super::{decode, parse, Store, StoreError, StoreResult};
use crate::domain::fork::ForkedFrom;
use crate::domain::kickoff::NewRun;
use crate::domain::run::{RunPage, StatusCursor, TaggedPage, TaggedRuns};
use crate::domain::TenantId;
use crate::domain::{EventType, QueueFull, Run, RunId, RunStatus, RunTrace, TaskRun, Usage, UsageLine};

/// An `Idempotency-Key` and the fingerprint of the request that carried it.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    /// Keys are the tenant's own: two tenants may use the same.
    pub tenant: TenantId,
    pub key: String,
    /// Which operation the key was used for (`kickoff`, …): a key reused elsewhere is a conflict.
    pub scope: &'static str,
    pub fingerprint: Vec<u8>,
}

/// How keys older than this are treated: as unused.
pub(super) const IDEMPOTENCY_TTL_HOURS: i32 = 24;

/// What storing runs under an idempotency key did.
#[derive(Debug)]
pub enum Created {
    /// New runs were stored.
    New(Vec<Run>),
    /// The key was used before with the same request: the runs it made then.
    Replayed(Vec<Run>),
    /// The key was used before with a different request (or another kind of kickoff).
    KeyConflict,
    /// The tenant's `max_queued` refused the runs: nothing was stored.
    QueueFull(QueueFull),
}

struct RunRow {
    id: Uuid,
    tenant: String,
    status: String,
    crew_name: String,
    crew_version: Option<i32>,
    inputs: Value,
    metadata: Value,
    attempt: i32,
    output: Option<Value>,
    error: Option<Value>,
    llm_calls: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cached_tokens: i64,
    estimated_tokens: i64,
    tool_calls: i64,
    cost_usd: f64,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    fake_llm: bool,
    trace_id: Option<String>,
    thread_id: Option<Uuid>,
    forked_from: Option<Uuid>,
    forked_at: Option<String>,
}

/// A task row (also as [`Store::get_run`] reads it: a JSON object per task, without the run id).
#[derive(serde::Deserialize)]
struct TaskRow {
    #[serde(default)]
    run_id: Uuid,
    name: String,
    agent: Option<String>,
    status: String,
    output: Option<Value>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
}

impl RunRow {
    fn into_run(self, tasks: Vec<TaskRun>) -> StoreResult<Run> {
        let id = RunId(self.id);
        Ok(Run {
            id,
            tenant: TenantId::from(self.tenant),
            status: parse(&self.status)?,
            crew_name: self.crew_name,
            crew_version: self.crew_version,
            inputs: decode(self.inputs, "runs.inputs")?,
            metadata: decode(self.metadata, "runs.metadata")?,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            attempt: self.attempt,
            output: self.output.map(|o| decode(o, "runs.output")).transpose()?,
            tasks,
            error: self.error.map(|e| decode(e, "runs.error")).transpose()?,
            usage: Usage {
                llm_calls: self.llm_calls,
                prompt_tokens: self.prompt_tokens,
                completion_tokens: self.completion_tokens,
                cached_tokens: self.cached_tokens,
                estimated_tokens: self.estimated_tokens,
                tool_calls: self.tool_calls,
                cost_usd: self.cost_usd,
            },
            usage_breakdown: None,
            fake_llm: self.fake_llm,
            trace_id: self.trace_id,
            thread_id: self.thread_id,
            forked_from: match (self.forked_from, self.forked_at) {
                (Some(run), Some(task)) => Some(ForkedFrom { run_id: RunId(run), task }),
                _ => None,
            },
        })
    }
}

impl TaskRow {
    fn into_task(self) -> StoreResult<TaskRun> {
        Ok(TaskRun {
            name: self.name,
            agent: self.agent,
            status: parse(&self.status)?,
            output: self.output.map(|o| decode(o, "run_tasks.output")).transpose()?,
            started_at: self.started_at,
            finished_at: self.finished_at,
        })
    }
}

impl Store {
    /// Store a validated run without `max_queued` as [`Store::create_runs`] does, without an
    /// idempotency key.
    pub async fn create_run(&self, run: &NewRun) -> StoreResult<Run> {
        match self.create_runs(std::slice::from_ref(run), None).await? {
            Created::New(runs) | Created::Replayed(runs) => {
                runs.into_iter().next().ok_or_else(|| StoreError::Corrupt("a stored run vanished".into()))
            }
            Created::KeyConflict => Err(StoreError::Corrupt("a run without a key met a key conflict".into())),
            Created::QueueFull(full) => {
                Err(StoreError::Corrupt(format!("create_run takes runs without max_queued: {full}")))
            }
        }
    }

    /// Store validated runs (of one tenant) as `queued`, all or none, each with its tasks and its
    /// `run.queued` event, in one transaction. With an idempotency key (one covers them all), a
    /// key already used for the same request returns the original runs instead, and concurrent
    /// requests with one key make exactly one set of runs (the later ones wait on the key's row
    /// lock, then replay). Runs under a `max_queued` are counted against it in that transaction
    /// ([`hold_queue`]); the others share the kickoffs' group commit when they have no key.
    #[tracing::instrument(skip_all, fields(runs = runs.len()), err)]
    pub async fn create_runs(&self, runs: &[NewRun], key: Option<&IdempotencyKey>) -> StoreResult<Created> {
        // Postgres keeps microseconds: so does the answer.
        let created_at = Utc::now().trunc_subsecs(6);
        let rows = runs.iter().map(|run| QueuedRun::new(run, created_at)).collect::<StoreResult<Vec<_>>>()?;
        match key {
            // Without a key, kickoffs share the group commit, under a `max_queued` too (the batch
            // holds the queue locks of its tenants that have one: `admit_kickoffs`).
            None => {
                if let Err(full) = self.kickoff_group().submit(rows).await? {
                    return Ok(Created::QueueFull(full));
                }
            }
            Some(key) => {
                let mut tx = self.pool.begin().await?;
                let ids: Vec<RunId> = runs.iter().map(|r| r.id).collect();
                if !claim_idempotency_key(&mut tx, key, &ids).await? {
                    tx.rollback().await?;
                    // Another request holds the key (we waited for it to commit): answer as it did.
                    return Ok(self.find_idempotent_runs(key).await?.unwrap_or(Created::KeyConflict));
                }
                if let Err(full) = hold_queue(&mut tx, runs).await? {
                    tx.rollback().await?;
                    return Ok(Created::QueueFull(full));
                }
                insert_runs(&mut tx, &rows).await?;
                tx.commit().await?;
            }
        }
        Ok(Created::New(runs.iter().map(|run| run.queued(created_at)).collect()))
    }

    /// Store runs (of one kickoff: no idempotency key, no thread) as [`Store::create_runs`] does,
    /// the first `claims.len()` of them claimed, each for its claim, in the same statement when no
    /// run is queued and their tenant has no quota that binds a claim (`max_running`, a daily
    /// cap): those are stored `running` (their first attempt, leased to the claim's owner,
    /// `run.started` logged after `run.queued`) and are not announced to other replicas. Answers
    /// the ids of the runs claimed; the caller then executes them ([`ClaimedRun::kicked_off`]). A
    /// queued run is waiting for a claimer, so it is never overtaken: while any is queued the runs
    /// are stored queued like any other.
    #[tracing::instrument(skip_all, fields(runs = runs.len(), claims = claims.len()), err)]
    pub async fn create_runs_claimed(
        &self,
        runs: &[NewRun],
        created_at: DateTime<Utc>,
        claims: &[&KickoffClaim],
    ) -> StoreResult<Result<Vec<RunId>, QueueFull>> {
        let mut rows =
            runs.iter().map(|run| QueuedRun::new(run, created_at)).collect::<StoreResult<Vec<_>>>()?;
        for (row, claim) in rows.iter_mut().zip(claims) {
            row.claim = Some((*claim).clone());
        }
        Ok(self.kickoff_group().submit(rows).await?.map(|claimed| claimed.into_iter().map(RunId).collect()))
    }

    /// What an idempotency key already stands for: the runs it made when it was used with the
    /// same request in the last 24 hours, a conflict when with another; `None` when it is free.
    #[tracing::instrument(skip_all, err)]
    pub async fn find_idempotent_runs(&self, key: &IdempotencyKey) -> StoreResult<Option<Created>> {
        let stored = sqlx::query!(
            r#"SELECT scope, request_hash, run_ids FROM idempotency_keys
               WHERE tenant = $3 AND key = $1 AND created_at >= now() - make_interval(hours => $2)"#,
            key.key,
            IDEMPOTENCY_TTL_HOURS,
            key.tenant.as_str()
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(stored) = stored else { return Ok(None) };
        if stored.scope != key.scope || stored.request_hash != key.fingerprint {
            return Ok(Some(Created::KeyConflict));
        }
        let runs = self.get_runs(&stored.run_ids).await?;
        if runs.len() != stored.run_ids.len() || runs.is_empty() {
            return Err(StoreError::Corrupt(format!("idempotency key {} points at missing runs", key.key)));
        }
        Ok(Some(Created::Replayed(runs)))
    }

    /// The runs a tenant's idempotency key made (whatever the request), if the key is in use.
    pub async fn idempotent_run_ids(&self, tenant: &TenantId, key: &str) -> StoreResult<Option<Vec<RunId>>> {
        let ids = sqlx::query_scalar!(
            r#"SELECT run_ids FROM idempotency_keys
               WHERE tenant = $1 AND key = $2 AND created_at >= now() - make_interval(hours => $3)"#,
            tenant.as_str(),
            key,
            IDEMPOTENCY_TTL_HOURS
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(ids.map(|ids| ids.into_iter().map(RunId).collect()))
    }

    /// These runs, in the order of `ids` (missing ones left out).
    async fn get_runs(&self, ids: &[Uuid]) -> StoreResult<Vec<Run>> {
        let rows = sqlx::query_as!(
            RunRow,
            r#"SELECT id, tenant, status, crew_name, crew_version, inputs, metadata, attempt, output, error, llm_calls,
                      prompt_tokens, completion_tokens, cached_tokens, estimated_tokens, tool_calls, cost_usd, created_at, started_at, finished_at,
                      fake_llm, trace_id, thread_id, forked_from, forked_at
               FROM runs WHERE id = ANY($1)"#,
            ids
        )
        .fetch_all(&self.pool)
        .await?;
        let mut runs = self.attach_tasks(rows).await?;
        runs.sort_by_key(|run| ids.iter().position(|id| *id == run.id.0));
        let lines = sqlx::query!(
            r#"SELECT run_id, task, agent, model, llm_calls, prompt_tokens, completion_tokens, cached_tokens, cost_usd
               FROM run_usage WHERE run_id = ANY($1) ORDER BY run_id, task, agent, model"#,
            ids
        )
        .fetch_all(&self.pool)
        .await?;
        for run in &mut runs {
            let mine = lines.iter().filter(|l| l.run_id == run.id.0).map(|l| UsageLine {
                task: l.task.clone(),
                agent: l.agent.clone(),
                model: l.model.clone(),
                llm_calls: l.llm_calls,
                prompt_tokens: l.prompt_tokens,
                completion_tokens: l.completion_tokens,
                cached_tokens: l.cached_tokens,
                cost_usd: l.cost_usd,
            });
            run.usage_breakdown = Some(mine.collect());
        }
        Ok(runs)
    }

    /// The run with this id, with its tasks.
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn get_run(&self, id: RunId) -> StoreResult<Option<Run>> {
        let mut connection = self.pool.acquire().await?;
        Ok(runs_as_shown(&mut connection, &[id.0]).await?.pop())
    }

    /// The tenant of a run; `None` when there is no such run.
    #[tracing::instrument(skip_all, fields(run_id = %id), err)]
    pub async fn run_tenant(&self, id: RunId) -> StoreResult<Option<TenantId>> {
        let tenant = sqlx::query_scalar!("SELECT tenant FROM runs WHERE id = $1", id.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(tenant.map(TenantId::from))
    }

    /// Runs newest first (of `tenant`, or every tenant's), optionally of one status, strictly
    /// older than `before`.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_runs(
        &self,
        tenant: Option<&TenantId>,
        status: Option<RunStatus>,
        before: Option<RunId>,
        limit: i64,
    ) -> StoreResult<RunPage> {
        let before = before.map_or(Uuid::max(), |id| id.0);
        // One more than asked tells whether there is a next page.
        let fetch = limit + 1;
        let mut rows = match status {
            Some(status) => {
                sqlx::query_as!(
                    RunRow,
                    r#"SELECT id, tenant, status, crew_name, crew_version, inputs, metadata, attempt, output, error, llm_calls,
                              prompt_tokens, completion_tokens, cached_tokens, estimated_tokens, tool_calls, cost_usd, created_at, started_at, finished_at,
                              fake_llm, trace_id, thread_id, forked_from, forked_at
                       FROM runs WHERE status = $1 AND id < $2 AND ($4::text IS NULL OR tenant = $4)
                       ORDER BY id DESC LIMIT $3"#,
                    status.as_str(),
                    before,
                    fetch,
                    tenant.map(TenantId::as_str)
                )
                .fetch_all(&self.pool)
                .await?
            }
            None => {
                sqlx::query_as!(
                    RunRow,
                    r#"SELECT id, tenant, status, crew_name, crew_version, inputs, metadata, attempt, output, error, llm_calls,
                              prompt_tokens, completion_tokens, cached_tokens, estimated_tokens, tool_calls, cost_usd, created_at, started_at, finished_at,
                              fake_llm, trace_id, thread_id, forked_from, forked_at
                       FROM runs WHERE id < $1 AND ($3::text IS NULL OR tenant = $3) ORDER BY id DESC LIMIT $2"#,
                    before,
                    fetch,
                    tenant.map(TenantId::as_str)
                )
                .fetch_all(&self.pool)
                .await?
            }
        };
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit.max(0) as usize);
        let next_before = has_more.then(|| rows.last().map(|r| RunId(r.id))).flatten();
        let runs = self.attach_tasks(rows).await?;
        Ok(RunPage { runs, next_before })
    }

    /// A page of the runs `filter` selects (of `tenant`, or every tenant's), the newest change of
    /// status first, after `after`; with how many it selects in all.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_tagged_runs(
        &self,
        tenant: Option<&TenantId>,
        filter: &TaggedRuns,
        after: Option<StatusCursor>,
        limit: i64,
    ) -> StoreResult<TaggedPage> {
        let statuses: Option<Vec<String>> =
            filter.statuses.as_ref().map(|s| s.iter().map(|s| s.as_str().to_owned()).collect());
        let tenant = tenant.map(TenantId::as_str);
        let total = sqlx::query_scalar!(
            r#"SELECT count(*) AS "count!" FROM runs
               WHERE ($1::text IS NULL OR tenant = $1) AND metadata ? $2
                 AND ($3::text IS NULL OR crew_name = $3) AND ($4::text IS NULL OR metadata->>$2 = $4)
                 AND ($5::text[] IS NULL OR status = ANY($5))
                 AND ($6::timestamptz IS NULL OR coalesce(finished_at, started_at, created_at) >= $6)"#,
            tenant,
            filter.tag,
            filter.crew.as_deref(),
            filter.value.as_deref(),
            statuses.as_deref(),
            filter.changed_since,
        )
        .fetch_one(&self.pool)
        .await?;
        let mut rows = sqlx::query_as!(
            RunRow,
            r#"SELECT id, tenant, status, crew_name, crew_version, inputs, metadata, attempt, output, error, llm_calls,
                      prompt_tokens, completion_tokens, cached_tokens, estimated_tokens, tool_calls, cost_usd, created_at, started_at, finished_at,
                      fake_llm, trace_id, thread_id, forked_from, forked_at
               FROM runs
               WHERE ($1::text IS NULL OR tenant = $1) AND metadata ? $2
                 AND ($3::text IS NULL OR crew_name = $3) AND ($4::text IS NULL OR metadata->>$2 = $4)
                 AND ($5::text[] IS NULL OR status = ANY($5))
                 AND ($6::timestamptz IS NULL OR coalesce(finished_at, started_at, created_at) >= $6)
                 AND ($7::timestamptz IS NULL OR (coalesce(finished_at, started_at, created_at), id) < ($7, $8))
               ORDER BY coalesce(finished_at, started_at, created_at) DESC, id DESC LIMIT $9"#,
            tenant,
            filter.tag,
            filter.crew.as_deref(),
            filter.value.as_deref(),
            statuses.as_deref(),
            filter.changed_since,
            after.map(|cursor| cursor.at),
            after.map_or(Uuid::nil(), |cursor| cursor.id.0),
            limit + 1,
        )
        .fetch_all(&self.pool)
        .await?;
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit.max(0) as usize);
        let next = rows.last().filter(|_| has_more).map(|r| StatusCursor {
            at: r.finished_at.or(r.started_at).unwrap_or(r.created_at),
            id: RunId(r.id),
        });
        let runs = self.attach_tasks(rows).await?;
        Ok(TaggedPage { runs, next, total })
    }

    /// How many runs are in each status.
    #[tracing::instrument(skip_all, err)]
    pub async fn runs_by_status(&self) -> StoreResult<Vec<(String, i64)>> {
        let rows =
            sqlx::query!(r#"SELECT status, count(*) AS "count!" FROM runs GROUP BY status ORDER BY status"#)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.into_iter().map(|r| (r.status, r.count)).collect())
    }

    /// Load the tasks of these runs in one query and build the runs.
    async fn attach_tasks(&self, rows: Vec<RunRow>) -> StoreResult<Vec<Run>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let task_rows = sqlx::query_as!(
            TaskRow,
            r#"SELECT run_id, name, agent, status, output, started_at, finished_at
               FROM run_tasks WHERE run_id = ANY($1) ORDER BY run_id, position"#,
            &ids
        )
        .fetch_all(&self.pool)
        .await?;
        let mut tasks_by_run: std::collections::HashMap<Uuid, Vec<TaskRun>> = Default::default();
        for row in task_rows {
            tasks_by_run.entry(row.run_id).or_default().push(row.into_task()?);
        }
        rows.into_iter()
            .map(|row| {
                let tasks = tasks_by_run.remove(&row.id).unwrap_or_default();
                row.into_run(tasks)
            })
            .collect()
    }
}

/// Take an idempotency key for these runs. `false` when the key is held (used within the last
/// 24 hours); an older key is taken over.
pub(super) async fn claim_idempotency_key(
    tx: &mut Transaction<'_, Postgres>,
    key: &IdempotencyKey,
    run_ids: &[RunId],
) -> StoreResult<bool> {
    let claimed = sqlx::query_scalar!(
        r#"INSERT INTO idempotency_keys (tenant, key, scope, request_hash, run_ids)
           VALUES ($6, $1, $2, $3, $4)
           ON CONFLICT (tenant, key) DO UPDATE
              SET scope = EXCLUDED.scope, request_hash = EXCLUDED.request_hash,
                  run_ids = EXCLUDED.run_ids, created_at = now()
              WHERE idempotency_keys.created_at < now() - make_interval(hours => $5)
           RETURNING key"#,
        key.key,
        key.scope,
        key.fingerprint,
        run_ids as &[RunId],
        IDEMPOTENCY_TTL_HOURS,
        key.tenant.as_str()
    )
    .fetch_optional(&mut **tx)
    .await?;
    Ok(claimed.is_some())
}

/// Runs `ids` as the API shows them (their tasks and usage breakdown included), each read in one
/// statement with its tasks, so a run and its tasks are one snapshot; missing ones left out.
pub(super) async fn runs_as_shown(
    connection: &mut sqlx::PgConnection,
    ids: &[Uuid],
) -> StoreResult<Vec<Run>> {
    let rows = sqlx::query!(
        r#"SELECT id, tenant, status, crew_name, crew_version, inputs, metadata, attempt, output, error, llm_calls,
                  prompt_tokens, completion_tokens, cached_tokens, estimated_tokens, tool_calls, cost_usd, created_at, started_at, finished_at,
                  fake_llm, trace_id, thread_id, forked_from, forked_at,
                  (SELECT coalesce(jsonb_agg(jsonb_build_object(
                              'name', t.name, 'agent', t.agent, 'status', t.status, 'output', t.output,
                              'started_at', t.started_at, 'finished_at', t.finished_at) ORDER BY t.position),
                          '[]')
                     FROM run_tasks AS t WHERE t.run_id = runs.id) AS "tasks!",
                  (SELECT coalesce(jsonb_agg(jsonb_build_object(
                              'task', u.task, 'agent', u.agent, 'model', u.model, 'llm_calls', u.llm_calls,
                              'prompt_tokens', u.prompt_tokens, 'completion_tokens', u.completion_tokens,
                              'cached_tokens', u.cached_tokens, 'cost_usd', u.cost_usd)
                              ORDER BY u.task, u.agent, u.model), '[]')
                     FROM run_usage AS u WHERE u.run_id = runs.id) AS "usage_breakdown!"
           FROM runs WHERE id = ANY($1)"#,
        ids
    )
    .fetch_all(&mut *connection)
    .await?;
    let mut runs = Vec::with_capacity(rows.len());
    for row in rows {
        let tasks: Vec<TaskRow> = decode(row.tasks, "run_tasks of a run")?;
        let tasks = tasks.into_iter().map(TaskRow::into_task).collect::<StoreResult<Vec<_>>>()?;
        let run = RunRow {
            id: row.id,
            tenant: row.tenant,
            status: row.status,
            crew_name: row.crew_name,
            crew_version: row.crew_version,
            inputs: row.inputs,
            metadata: row.metadata,
            attempt: row.attempt,
            output: row.output,
            error: row.error,
            llm_calls: row.llm_calls,
            prompt_tokens: row.prompt_tokens,
            completion_tokens: row.completion_tokens,
            cached_tokens: row.cached_tokens,
            estimated_tokens: row.estimated_tokens,
            tool_calls: row.tool_calls,
            cost_usd: row.cost_usd,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
            fake_llm: row.fake_llm,
            trace_id: row.trace_id,
            thread_id: row.thread_id,
            forked_from: row.forked_from,
            forked_at: row.forked_at,
        };
        let mut run = run.into_run(tasks)?;
        run.usage_breakdown = Some(decode(row.usage_breakdown, "run_usage of a run")?);
        runs.push(run);
    }
    Ok(runs)
}

/// A run to store as queued, its crew spec, inputs and metadata serialised to JSON once.
pub(super) struct QueuedRun {
    id: Uuid,
    tenant: String,
    crew_name: String,
    crew_version: Option<i32>,
    spec: String,
    inputs: String,
    metadata: String,
    timeout_s: Option<i32>,
    created_at: DateTime<Utc>,
    fake_llm: bool,
    /// Its tasks' names and agents, in order.
    tasks: Vec<(String, Option<String>)>,
    /// The kickoff's webhooks.
    webhooks: Vec<crate::domain::kickoff::RunWebhook>,
    trace: Option<RunTrace>,
    /// Its tenant's `max_queued`, when the kickoff is counted against one.
    max_queued: Option<u32>,
    /// The replica that may start it at once ([`KickoffClaim`]).
    claim: Option<KickoffClaim>,
}

impl QueuedRun {
    pub(super) fn new(run: &NewRun, created_at: DateTime<Utc>) -> StoreResult<Self> {
        Ok(Self {
            id: run.id.0,
            tenant: run.tenant.clone().into_string(),
            crew_name: run.crew.name.clone(),
            crew_version: run.crew_version,
            spec: to_json("crew spec", &run.crew)?,
            inputs: to_json("inputs", &run.inputs)?,
            metadata: to_json("metadata", &run.metadata)?,
            timeout_s: run.timeout_s.map(|t| t as i32),
            created_at,
            fake_llm: run.fake_llm,
            tasks: run.crew.tasks.iter().map(|t| (t.name.clone(), t.agent.clone())).collect(),
            webhooks: run.webhooks.clone(),
            trace: run.trace.clone(),
            max_queued: run.max_queued,
            claim: None,
        })
    }

    /// The tenant whose `max_queued` counts this run, and that maximum.
    fn queue_limit(&self) -> Option<(&str, u32)> {
        Some((self.tenant.as_str(), self.max_queued?))
    }
}

fn to_json(what: &str, value: &impl serde::Serialize) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(format!("{what} does not serialize: {e}")))
}

/// The kickoffs' group commit: the runs of every kickoff in a batch are stored together.
pub(super) struct KickoffWrite;

impl GroupWrite for KickoffWrite {
    /// The runs of one kickoff (several for a batch kickoff: all or none).
    type Item = Vec<QueuedRun>;
    /// Stored (with the ids of the runs claimed as they were stored), or refused by its
    /// tenant's `max_queued`.
    type Output = StoreResult<Result<Vec<Uuid>, QueueFull>>;
    const MAX_BATCH: usize = 512;

    fn key(_: &Self::Item) -> Option<Uuid> {
        None
    }

    async fn write(
        held: &mut super::group::Held,
        kickoffs: &[Vec<QueuedRun>],
    ) -> Result<Vec<Self::Output>, Failure<Self::Output>> {
        let limits: Vec<_> = kickoffs
            .iter()
            .map(|runs| {
                runs.first().and_then(QueuedRun::queue_limit).map(|(tenant, max)| (tenant, max, runs.len()))
            })
            .collect();
        let connection = held.get().await?;
        let (claimed, admitted) = match limits.iter().all(Option::is_none) {
            // Nothing to count against a queue: one statement, committed on its own, and the
            // notification after it (should that fail, the claimers' poll finds the runs).
            true => {
                let all: Vec<&QueuedRun> = kickoffs.iter().flatten().collect();
                let stored = store_runs(&mut *connection, &all).await?;
                if let Some(queued) = stored.queued {
                    let payload = queued.to_string();
                    if let Err(error) = sqlx::query!("SELECT pg_notify($1, $2)", RUNS_CHANNEL, payload)
                        .execute(&mut *connection)
                        .await
                    {
                        tracing::warn!(%error, "announcing queued runs failed; the claimers' poll finds them");
                    }
                }
                (stored.claimed, vec![Ok(()); kickoffs.len()])
            }
            false => {
                let mut tx = sqlx::Connection::begin(connection).await?;
                let admitted = admit_kickoffs(&mut tx, &limits).await.map_err(Failure::Whole)?;
                let runs: Vec<&QueuedRun> = kickoffs
                    .iter()
                    .zip(&admitted)
                    .filter(|(_, admitted)| admitted.is_ok())
                    .flat_map(|(runs, _)| runs)
                    .collect();
                let claimed = insert_runs(&mut tx, &runs).await?;
                tx.commit().await?;
                (claimed, admitted)
            }
        };
        Ok(kickoffs
            .iter()
            .zip(admitted)
            .map(|(runs, admitted)| {
                Ok(admitted.map(|()| runs.iter().map(|r| r.id).filter(|id| claimed.contains(id)).collect()))
            })
            .collect())
    }

    fn failed(error: StoreError) -> Self::Output {
        Err(error)
    }
}

/// A claim a kickoff takes for the replica answering it, when a slot of its is free.
#[derive(Debug, Clone, PartialEq)]
pub struct KickoffClaim {
    /// The replica's `lease_owner`.
    pub owner: String,
    /// How long the lease holds without a heartbeat.
    pub lease: std::time::Duration,
}

/// Insert queued runs, their pending tasks and `run.queued` events (each run's first, so
/// `last_seq` starts at 1), and announce them to idle workers with one notification: see
/// [`store_runs`]; this takes a transaction for the notification to go with it.
pub(super) async fn insert_runs<R: std::borrow::Borrow<QueuedRun>>(
    tx: &mut Transaction<'_, Postgres>,
    runs: &[R],
) -> StoreResult<HashSet<Uuid>> {
    let stored = store_runs(tx, runs).await?;
    if let Some(queued) = stored.queued {
        notify(tx, RUNS_CHANNEL, queued).await?;
    }
    Ok(stored.claimed)
}

/// What [`store_runs`] stored.
pub(super) struct Stored {
    /// The runs stored claimed.
    claimed: HashSet<Uuid>,
    /// A run stored queued, if any: idle workers are to be told.
    queued: Option<RunId>,
}

/// Store runs with one statement: each with its tasks, its webhooks (before its first event,
/// which they may take: the events' triggers run after the statement) and its `run.queued`
/// event. A run with a [`KickoffClaim`] is stored claimed instead when no run is queued
/// (`running`, attempt 1, `run.started` second; see [`Store::create_runs_claimed`]): the ids of
/// those are returned. Announcing the queued ones is the caller's.
pub(super) async fn store_runs<R: std::borrow::Borrow<QueuedRun>>(
    connection: &mut sqlx::PgConnection,
    runs: &[R],
) -> StoreResult<Stored> {
    if runs.is_empty() {
        return Ok(Stored { claimed: HashSet::new(), queued: None });
    }
    let (mut ids, mut tenants, mut names, mut specs, mut inputs) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut metadata, mut timeouts, mut created, mut fakes) = (vec![], vec![], vec![], vec![]);
    let (mut trace_ids, mut traceparents, mut tracestates) = (vec![], vec![], vec![]);
    let (mut task_runs, mut positions, mut task_names, mut agents) = (vec![], vec![], vec![], vec![]);
    let (mut owners, mut leases, mut versions) = (vec![], vec![], vec![]);
    let (mut hook_ids, mut hook_urls, mut hook_events, mut hook_runs, mut hook_tenants) =
        (vec![], vec![], vec![], vec![], vec![]);
    for run in runs {
        let run = run.borrow();
        owners.push(run.claim.as_ref().map(|c| c.owner.as_str()));
        leases.push(run.claim.as_ref().map(|c| c.lease.as_secs_f64()));
        ids.push(run.id);
        tenants.push(run.tenant.as_str());
        names.push(run.crew_name.as_str());
        versions.push(run.crew_version);
        specs.push(run.spec.as_str());
        inputs.push(run.inputs.as_str());
        metadata.push(run.metadata.as_str());
        timeouts.push(run.timeout_s);
        created.push(run.created_at);
        fakes.push(run.fake_llm);
        trace_ids.push(run.trace.as_ref().map(|t| t.trace_id.as_str()));
        traceparents.push(run.trace.as_ref().and_then(RunTrace::traceparent));
        tracestates.push(run.trace.as_ref().and_then(|t| t.tracestate.as_deref()));
        for (position, (name, agent)) in run.tasks.iter().enumerate() {
            task_runs.push(run.id);
            positions.push(position as i32);
            task_names.push(name.as_str());
            agents.push(agent.as_deref());
        }
        for hook in &run.webhooks {
            hook_ids.push(hook.id);
            hook_urls.push(hook.url.as_str());
            hook_events.push(hook.events.as_slice());
            hook_runs.push(run.id);
            hook_tenants.push(run.tenant.as_str());
        }
    }
    let hook_events: Vec<serde_json::Value> = hook_events.into_iter().map(serde_json::Value::from).collect();
    // A claimed run: only when nothing is queued (the partial index answers at once), so a
    // kickoff never overtakes a run waiting for a claimer, and only for a tenant without quotas
    // that bind a claim (`max_running`, daily caps: `agentd_claim_runs` counts those; the
    // kickoff's own check reads a cache). Its `run.started` is logged as the claim logs it.
    let rows = sqlx::query!(
        r#"WITH inserted AS (
               INSERT INTO runs (id, crew_name, crew_version, crew_spec, inputs, metadata, timeout_s, created_at, fake_llm,
                                 last_seq, tenant, trace_id, traceparent, tracestate, status, attempt, lease_owner,
                                 lease_expires_at, started_at)
               SELECT r.id, r.crew_name, r.crew_version, r.crew_spec::jsonb, r.inputs::jsonb, r.metadata::jsonb, r.timeout_s,
                      r.created_at, r.fake_llm, CASE WHEN c.claimed THEN 2 ELSE 1 END, r.tenant, r.trace_id,
                      r.traceparent, r.tracestate, CASE WHEN c.claimed THEN 'running' ELSE 'queued' END,
                      CASE WHEN c.claimed THEN 1 ELSE 0 END, CASE WHEN c.claimed THEN r.owner END,
                      CASE WHEN c.claimed THEN now() + make_interval(secs => r.lease) END,
                      CASE WHEN c.claimed THEN r.created_at END
                 FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int4[],
                             $7::timestamptz[], $8::bool[], $9::text[], $10::text[], $11::text[], $12::text[],
                             $13::text[], $14::float8[], $26::int4[])
                      AS r(id, crew_name, crew_spec, inputs, metadata, timeout_s, created_at, fake_llm, tenant,
                           trace_id, traceparent, tracestate, owner, lease, crew_version),
                      LATERAL (SELECT r.owner IS NOT NULL
                                      AND NOT EXISTS (SELECT 1 FROM runs AS q WHERE q.status = 'queued')
                                      AND NOT EXISTS (SELECT 1 FROM tenants AS t
                                                       WHERE t.name = r.tenant
                                                         AND (t.max_running IS NOT NULL
                                                              OR t.max_tokens_per_day IS NOT NULL
                                                              OR t.max_cost_usd_per_day IS NOT NULL))
                                      AS claimed) AS c
               RETURNING id, status, lease_owner, trace_id
           ), tasks AS (
               INSERT INTO run_tasks (run_id, position, name, agent)
               SELECT * FROM UNNEST($15::uuid[], $16::int4[], $17::text[], $18::text[])
           ), hooks AS (
               INSERT INTO webhook_endpoints (id, url, events, run_id, tenant)
               SELECT w.id, w.url, ARRAY(SELECT jsonb_array_elements_text(w.events)), w.run_id, w.tenant
                 FROM UNNEST($19::uuid[], $20::text[], $21::jsonb[], $22::uuid[], $23::text[])
                      AS w(id, url, events, run_id, tenant)
           ), logged AS (
               -- Every run's `run.queued`, then the claimed ones' `run.started`.
               INSERT INTO events (run_id, seq, type, data)
               SELECT e.run_id, e.seq, e.type, e.data
                 FROM (SELECT q.id AS run_id, 1::int8 AS seq, $24::text AS type, '{}'::jsonb AS data, q.n
                         FROM UNNEST($1::uuid[]) WITH ORDINALITY AS q(id, n)
                       UNION ALL
                       SELECT i.id, 2, $25, jsonb_build_object('attempt', 1, 'worker', i.lease_owner)
                                || CASE WHEN i.trace_id IS NULL THEN '{}'::jsonb
                                        ELSE jsonb_build_object('trace_id', i.trace_id) END, q.n
                         FROM inserted AS i JOIN UNNEST($1::uuid[]) WITH ORDINALITY AS q(id, n) ON q.id = i.id
                        WHERE i.status = 'running')
                      AS e
                ORDER BY e.seq, e.n
           )
           SELECT id AS "id!", status = 'running' AS "claimed!" FROM inserted"#,
        &ids,
        &names as &[&str],
        &specs as &[&str],
        &inputs as &[&str],
        &metadata as &[&str],
        &timeouts as &[Option<i32>],
        &created,
        &fakes,
        &tenants as &[&str],
        &trace_ids as &[Option<&str>],
        &traceparents as &[Option<String>],
        &tracestates as &[Option<&str>],
        &owners as &[Option<&str>],
        &leases as &[Option<f64>],
        &task_runs,
        &positions,
        &task_names as &[&str],
        &agents as &[Option<&str>],
        &hook_ids,
        &hook_urls as &[&str],
        &hook_events,
        &hook_runs,
        &hook_tenants as &[&str],
        EventType::RunQueued.as_str(),
        EventType::RunStarted.as_str(),
        &versions as &[Option<i32>],
    )
    .fetch_all(&mut *connection)
    .await?;
    let claimed: HashSet<Uuid> = rows.iter().filter(|r| r.claimed).map(|r| r.id).collect();
    // The first queued in the kickoff's order (every run was stored: those not claimed queued).
    let queued = ids.iter().find(|id| !claimed.contains(id)).map(|id| RunId(*id));
    Ok(Stored { claimed, queued })
}

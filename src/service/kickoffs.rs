//! Starting runs: one (`POST /v1/kickoffs`) or one per input set (`/batch`), of an inline crew
//! spec or a registered crew. With an idempotency key, the key's earlier runs are answered
//! instead (the same body) or the request is refused (another body); the store makes a key's
//! first use atomic, so concurrent requests with one key make one set of runs.

use serde_json::{json, Map, Value};

use super::access::queue_full;
use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::kickoff::{
    apply_budgets, apply_memory_scope, prepare_batch, prepare_run, request_fingerprint, BatchKickoffRequest,
    CrewRef, KickoffRequest, NewRun,
};
use crate::domain::thread::ThreadJoin;
use crate::domain::validate::parse_json;
use crate::domain::validate::FieldError;
use crate::domain::TenantId;
use crate::domain::{Caller, CrewSpec, Run, RunId, RunTrace};
use crate::store::{ClaimedRun, Created, IdempotencyKey, Reservation, StoreError, ThreadKickoff};
use chrono::SubsecRound;

/// What a kickoff did.
#[derive(Debug)]
pub enum Kicked<T> {
    /// New runs, queued.
    Created(T),
    /// The runs this idempotency key made before, for the same request.
    Replayed(T),
}

/// A protocol request's kickoff of a published crew (MCP `tools/call`, an A2A message, an AG-UI
/// run; the protocol has checked that the crew is published to it): a run like any other.
#[derive(Debug, Default)]
pub struct ProtocolKickoff<'a> {
    pub crew: &'a str,
    pub inputs: Map<String, Value>,
    /// The thread the run joins; a busy thread refuses it (409) unless `enqueue`.
    pub thread: Option<crate::domain::ThreadId>,
    pub metadata: Map<String, Value>,
    /// Makes a repeated request answer with the same run ([`request_key`]).
    pub idempotency_key: Option<&'a str>,
    /// Stream the model's replies (`llm.delta`).
    pub stream: bool,
    /// A busy thread queues the run (`enqueue`) instead of refusing it.
    pub enqueue: bool,
    /// The caller's trace (its `traceparent`), which the run joins.
    pub trace: Option<RunTrace>,
}

/// The idempotency key of a protocol request named by `identity` (a session and request id, a
/// thread and run id): `prefix:` and 128 bits of its SHA-256, as hex (ids may be long).
pub fn request_key(prefix: &str, identity: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().take(16).map(|byte| format!("{byte:02x}")).collect();
    format!("{prefix}:{hex}")
}

impl Services {
    /// Start the run a protocol request asks for ([`ProtocolKickoff`]): the kickoff of
    /// `POST /v1/kickoffs` with the request's crew, inputs, thread and idempotency key.
    pub async fn protocol_kickoff(
        &self,
        caller: &Caller,
        kickoff: ProtocolKickoff<'_>,
    ) -> ServiceResult<Run> {
        let mut body = json!({"crew": kickoff.crew, "inputs": kickoff.inputs, "metadata": kickoff.metadata});
        if let Some(thread) = kickoff.thread {
            body["thread_id"] = json!(thread);
            body["multitask_strategy"] = json!(if kickoff.enqueue { "enqueue" } else { "reject" });
        }
        if kickoff.stream {
            body["stream"] = json!(true);
        }
        match self.kickoff(caller, body, kickoff.idempotency_key, kickoff.trace).await? {
            Kicked::Created(run) | Kicked::Replayed(run) => Ok(run),
        }
    }

    /// The runs a protocol request with idempotency key `key` started, if it started any (a
    /// cancelled MCP call names its request, not its run).
    pub async fn runs_of_request(&self, caller: &Caller, key: &str) -> ServiceResult<Vec<RunId>> {
        let runs = self.store.idempotent_run_ids(&caller.tenant, key).await?;
        Ok(runs.unwrap_or_default())
    }

    /// Start a run of the crew `body` names or carries (`POST /v1/kickoffs`), once per
    /// `idempotency_key`.
    pub async fn kickoff(
        &self,
        caller: &Caller,
        body: Value,
        idempotency_key: Option<&str>,
        trace: Option<RunTrace>,
    ) -> ServiceResult<Kicked<Run>> {
        let arrived = std::time::Instant::now();
        let tenant = &caller.tenant;
        let key = idempotency_key.map(|key| key_for(tenant, key, "kickoff", &body));
        let created = match self.earlier(key.as_ref()).await? {
            Some(earlier) => earlier,
            None => {
                let mut run = self.prepare_kickoff(tenant, body, trace).await?;
                self.admit(tenant, std::slice::from_mut(&mut run)).await?;
                crate::probe::begin(run.id.0, arrived);
                crate::probe::mark(run.id.0, "kickoff.prepare");
                match &run.thread {
                    None if key.is_none() => match self.local_slots(tenant, 1).await? {
                        slots if slots.is_empty() => {
                            self.store.create_runs(std::slice::from_ref(&run), None).await?
                        }
                        // Marked as stored where it is stored, before its slot starts it.
                        slots => return first(answer(self.kickoff_here(vec![run], slots).await?)?),
                    },
                    None => self.store.create_runs(std::slice::from_ref(&run), key.as_ref()).await?,
                    Some(join) => self.kickoff_in_thread(&run, join, key.as_ref()).await?,
                }
            }
        };
        if let Created::New(runs) = &created {
            for run in runs {
                crate::probe::mark(run.id.0, "kickoff.insert");
            }
        }
        first(answer(created)?)
    }

    /// Up to `runs` slots of this replica's worker pool for a kickoff of `tenant`, as many as are
    /// free, when no quota of the tenant binds its runs (those are claimed by
    /// `agentd_claim_runs`, which counts them).
    async fn local_slots(&self, tenant: &TenantId, runs: usize) -> ServiceResult<Vec<Box<dyn Reservation>>> {
        let Some(local) = &self.local else { return Ok(Vec::new()) };
        let quotas = self.quotas_of(tenant).await?;
        if quotas.binds_kickoffs() || quotas.max_running.is_some() {
            return Ok(Vec::new());
        }
        Ok(std::iter::from_fn(|| local.reserve()).take(runs).collect())
    }

    /// Store `runs` (one kickoff's) and, unless a run is queued, start the first of them in
    /// `slots` at once, one each
    /// ([`Store::create_runs_claimed`](crate::store::Store::create_runs_claimed)); the others
    /// queue. The answer is the runs as they were kicked off (queued), as for any kickoff: they
    /// may be running by then. Stored and started in a task of its own: a request given up while
    /// its runs are being stored (the client went away) must not leave a run claimed by a slot
    /// that never starts it.
    async fn kickoff_here(
        &self,
        runs: Vec<NewRun>,
        slots: Vec<Box<dyn Reservation>>,
    ) -> ServiceResult<Created> {
        let store = self.store.clone();
        let stored = tokio::spawn(async move {
            let created_at = chrono::Utc::now().trunc_subsecs(6);
            let claims: Vec<&crate::store::KickoffClaim> = slots.iter().map(|slot| slot.claim()).collect();
            let claimed = match store.create_runs_claimed(&runs, created_at, &claims).await? {
                Ok(claimed) => claimed,
                Err(full) => return Ok(Created::QueueFull(full)),
            };
            let answer: Vec<Run> = runs.iter().map(|run| run.queued(created_at)).collect();
            for run in &answer {
                crate::probe::mark(run.id.0, "kickoff.insert");
            }
            let claimed: std::collections::HashSet<_> = claimed.into_iter().collect();
            let mut slots = slots.into_iter();
            for run in runs.into_iter().filter(|run| claimed.contains(&run.id)) {
                match slots.next() {
                    Some(slot) => slot.start(ClaimedRun::kicked_off(run, created_at)),
                    None => {
                        tracing::error!(run_id = %run.id, "a run was claimed without a slot; its lease will expire and recovery will requeue it")
                    }
                }
            }
            // Slots left over (runs stored queued) are free again as they drop.
            Ok::<_, StoreError>(Created::New(answer))
        });
        match stored.await {
            Ok(result) => Ok(result?),
            Err(_) => {
                Err(ServiceError::Internal(StoreError::Corrupt("storing a kickoff's runs panicked".into())))
            }
        }
    }

    /// The run a kickoff body asks for, ready to store: parsed and validated, its crew resolved
    /// (and checked for the secrets and knowledge bases it names), its webhooks attached; not yet
    /// admitted under the tenant's quotas.
    pub(super) async fn prepare_kickoff(
        &self,
        tenant: &TenantId,
        body: Value,
        trace: Option<RunTrace>,
    ) -> ServiceResult<NewRun> {
        let request: KickoffRequest = parse_json(body).map_err(ServiceError::Invalid)?;
        let thread = request.thread().map_err(ServiceError::Invalid)?;
        let (mut crew, crew_version) = self.resolve_crew(tenant, request.crew).await?;
        crew.stream = request.stream.unwrap_or(crew.stream);
        let mut budget = apply_budgets(&mut crew, request.max_tokens, request.max_cost_usd);
        budget.extend(apply_memory_scope(&mut crew, request.memory_scope));
        let (inputs, metadata) = (request.inputs, request.metadata);
        let run = prepare_run(crew, inputs, metadata, request.timeout_s, tenant, &self.validation);
        let run = NewRun { crew_version, ..with_budget(budget, run).map_err(ServiceError::Invalid)? };
        self.check_secrets_exist(tenant, &run.crew, "crew.").await?;
        self.check_knowledge_exists(tenant, &run.crew, "crew.").await?;
        let mut runs = [NewRun { trace, thread, ..run }];
        self.attach_webhooks(&request.webhooks, &mut runs).await?;
        let [run] = runs;
        Ok(run)
    }

    /// Start one run per input set, all or none (`POST /v1/kickoffs/batch`); one idempotency key
    /// covers the batch.
    pub async fn kickoff_batch(
        &self,
        caller: &Caller,
        body: Value,
        idempotency_key: Option<&str>,
        trace: Option<RunTrace>,
    ) -> ServiceResult<Kicked<Vec<Run>>> {
        let tenant = &caller.tenant;
        let key = idempotency_key.map(|key| key_for(tenant, key, "batch", &body));
        if let Some(earlier) = self.earlier(key.as_ref()).await? {
            return answer(earlier);
        }
        let request: BatchKickoffRequest = parse_json(body).map_err(ServiceError::Invalid)?;
        let (mut crew, crew_version) = self.resolve_crew(tenant, request.crew).await?;
        crew.stream = request.stream.unwrap_or(crew.stream);
        let mut budget = apply_budgets(&mut crew, request.max_tokens, request.max_cost_usd);
        budget.extend(apply_memory_scope(&mut crew, request.memory_scope));
        let (inputs, metadata) = (request.inputs, request.metadata);
        let runs = prepare_batch(crew, inputs, metadata, request.timeout_s, tenant, &self.validation);
        let mut runs: Vec<NewRun> = with_budget(budget, runs).map_err(ServiceError::Invalid)?;
        for run in &mut runs {
            run.crew_version = crew_version;
        }
        if let Some(first) = runs.first() {
            self.check_secrets_exist(tenant, &first.crew, "crew.").await?;
            self.check_knowledge_exists(tenant, &first.crew, "crew.").await?;
        }
        self.admit(tenant, &mut runs).await?;
        for run in &mut runs {
            run.trace.clone_from(&trace);
        }
        self.attach_webhooks(&request.webhooks, &mut runs).await?;
        if key.is_none() {
            let slots = self.local_slots(tenant, runs.len()).await?;
            if !slots.is_empty() {
                return answer(self.kickoff_here(runs, slots).await?);
            }
        }
        answer(self.store.create_runs(&runs, key.as_ref()).await?)
    }

    /// Store a run that joins a thread, as its `multitask_strategy` says.
    async fn kickoff_in_thread(
        &self,
        run: &NewRun,
        join: &ThreadJoin,
        key: Option<&IdempotencyKey>,
    ) -> ServiceResult<Created> {
        match self.store.create_thread_run(run, join, key).await? {
            ThreadKickoff::Created(created) => Ok(created),
            ThreadKickoff::NoThread => Err(ServiceError::NotFound(format!("no thread {}", join.thread_id))),
            ThreadKickoff::Busy(runs) => {
                let runs: Vec<String> = runs.iter().map(ToString::to_string).collect();
                Err(ServiceError::Conflict(format!(
                    "the thread has a run that has not ended ({}); multitask_strategy is reject",
                    runs.join(", ")
                )))
            }
        }
    }

    /// What an idempotency key already stands for, if it was used.
    async fn earlier(&self, key: Option<&IdempotencyKey>) -> ServiceResult<Option<Created>> {
        match key {
            Some(key) => Ok(self.store.find_idempotent_runs(key).await?),
            None => Ok(None),
        }
    }

    /// The crew a kickoff carries, or the version of one of its tenant's it names, with that
    /// version's number.
    async fn resolve_crew(&self, tenant: &TenantId, crew: Value) -> ServiceResult<(CrewSpec, Option<i32>)> {
        match CrewRef::parse(crew).map_err(ServiceError::Invalid)? {
            CrewRef::Spec(spec) => Ok((*spec, None)),
            CrewRef::Named(selector) => {
                let (version, spec) = self.resolve_named_crew(tenant, &selector).await?;
                Ok((spec, Some(version)))
            }
        }
    }
}

/// An idempotency key of a kickoff of `scope` (a key reused for another kind of kickoff is a
/// conflict), with the fingerprint of its body.
fn key_for(tenant: &TenantId, key: &str, scope: &'static str, body: &Value) -> IdempotencyKey {
    let fingerprint = request_fingerprint(body);
    IdempotencyKey { tenant: tenant.to_owned(), key: key.to_owned(), scope, fingerprint }
}

/// A single kickoff's answer: the one run of its runs.
fn first(kicked: Kicked<Vec<Run>>) -> ServiceResult<Kicked<Run>> {
    let one = |runs: Vec<Run>| {
        runs.into_iter().next().ok_or_else(|| StoreError::Corrupt("a kickoff's run vanished".into()))
    };
    Ok(match kicked {
        Kicked::Created(runs) => Kicked::Created(one(runs)?),
        Kicked::Replayed(runs) => Kicked::Replayed(one(runs)?),
    })
}

fn answer(created: Created) -> ServiceResult<Kicked<Vec<Run>>> {
    match created {
        Created::New(runs) => Ok(Kicked::Created(runs)),
        Created::Replayed(runs) => Ok(Kicked::Replayed(runs)),
        Created::KeyConflict => {
            Err(invalid("Idempotency-Key", "this key was already used with a different request body"))
        }
        Created::QueueFull(full) => Err(queue_full(&full)),
    }
}

/// What a kickoff prepared, with the problems of its own budget (`max_tokens`, `max_cost_usd`)
/// first among the errors.
fn with_budget<T>(
    budget: Vec<FieldError>,
    prepared: Result<T, Vec<FieldError>>,
) -> Result<T, Vec<FieldError>> {
    match prepared {
        Ok(_) if !budget.is_empty() => Err(budget),
        Ok(prepared) => Ok(prepared),
        Err(errors) => Err(budget.into_iter().chain(errors).collect()),
    }
}

//! A kickoff request: which crew (inline spec or registered name), its inputs and metadata, and
//! turning it into a validated new run.

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::crew::{string_schema, CrewSelector, CrewSpec, CREW_REFERENCE_PATTERN};
use super::validate::{validate_crew, validate_inputs, FieldError, ValidationContext, MAX_NAME_LEN};
use super::{Run, RunId, RunStatus, TaskRun, TaskStatus, Usage};
use crate::domain::TenantId;

/// The body of `POST /v1/kickoffs`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KickoffRequest {
    /// A crew spec, or the name of a registered crew.
    #[schema(value_type = CrewRef)]
    pub crew: Value,
    /// Values for the crew's `{placeholders}` (any JSON but `null`).
    #[serde(default)]
    #[schema(value_type = Inputs)]
    pub inputs: Map<String, Value>,
    /// Free-form data kept with the run.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Seconds the run may take from its start (the server's default when absent).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604800)]
    pub timeout_s: Option<u32>,
    /// Endpoints that receive this run's events, signed with the server's webhook secret
    /// (`AGENTD_WEBHOOK_SECRET`); at most 10.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub webhooks: Vec<KickoffWebhook>,
    /// Stream the agents' replies as `llm.delta` SSE events (overrides the crew's `stream`).
    #[serde(default)]
    pub stream: Option<bool>,
    /// The run's token budget (overrides the crew's `max_tokens`).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000000000u64)]
    pub max_tokens: Option<u64>,
    /// The run's cost budget in US dollars (overrides the crew's `max_cost_usd`).
    #[serde(default)]
    #[schema(exclusive_minimum = 0, maximum = 1000000)]
    pub max_cost_usd: Option<f64>,
    /// The memory scope the run saves to and recalls from (replaces the crew's `memory.scope`;
    /// gives a crew without `memory` one, with its defaults).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub memory_scope: Option<String>,
    /// The thread the run joins (`POST /v1/threads`): its first task sees the thread's earlier
    /// runs, and it runs only when the thread's other runs have ended.
    #[serde(default)]
    pub thread_id: Option<uuid::Uuid>,
    /// What to do when a run of the thread has not ended yet (default `enqueue`; needs
    /// `thread_id`).
    #[serde(default)]
    pub multitask_strategy: Option<super::thread::MultitaskStrategy>,
    /// How many of the thread's earlier runs the first task sees (default 10; needs `thread_id`).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 100)]
    pub history_runs: Option<u32>,
}

impl KickoffRequest {
    /// The run's place in a thread, or why the thread fields do not fit.
    pub fn thread(&self) -> Result<Option<super::thread::ThreadJoin>, Vec<FieldError>> {
        use super::thread::{ThreadJoin, DEFAULT_HISTORY_RUNS, MAX_HISTORY_RUNS};
        let mut errors = Vec::new();
        if self.thread_id.is_none() {
            if self.multitask_strategy.is_some() {
                errors.push(FieldError::new("multitask_strategy", "needs thread_id"));
            }
            if self.history_runs.is_some() {
                errors.push(FieldError::new("history_runs", "needs thread_id"));
            }
        }
        let history_runs = self.history_runs.unwrap_or(DEFAULT_HISTORY_RUNS);
        if history_runs > MAX_HISTORY_RUNS {
            errors.push(FieldError::new("history_runs", format!("must be between 0 and {MAX_HISTORY_RUNS}")));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(self.thread_id.map(|thread_id| ThreadJoin {
            thread_id,
            strategy: self.multitask_strategy.unwrap_or_default(),
            history_runs,
        }))
    }
}

/// A kickoff's webhook: where to POST which of the run's events.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KickoffWebhook {
    /// An `http` or `https` URL on a public address (or one the operator allows).
    #[schema(min_length = 1, max_length = 2048)]
    pub url: String,
    /// Event types, `<prefix>.*` (e.g. `task.*`) or `*` (the default).
    #[serde(default = "every_event")]
    #[schema(min_items = 1, max_items = 64, default = json!(["*"]))]
    pub events: Vec<String>,
}

/// The default event patterns of a webhook: every event.
pub fn every_event() -> Vec<String> {
    vec!["*".to_owned()]
}

/// A kickoff's webhook as stored with its run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunWebhook {
    pub id: uuid::Uuid,
    pub url: String,
    pub events: Vec<String>,
}

/// The body of `POST /v1/kickoffs/batch`: one run per input set (CrewAI's `kickoff_for_each`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchKickoffRequest {
    /// A crew spec, or the name of a registered crew.
    #[schema(value_type = CrewRef)]
    pub crew: Value,
    /// One input set per run (1 to 1000).
    #[schema(value_type = Vec<Inputs>, min_items = 1, max_items = 1000)]
    pub inputs: Vec<Map<String, Value>>,
    /// Free-form data kept with every run.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Seconds each run may take from its start (the server's default when absent).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604800)]
    pub timeout_s: Option<u32>,
    /// Endpoints that receive the events of every run of the batch (as a kickoff's `webhooks`).
    #[serde(default)]
    #[schema(max_items = 10)]
    pub webhooks: Vec<KickoffWebhook>,
    /// Stream the agents' replies as `llm.delta` SSE events (overrides the crew's `stream`).
    #[serde(default)]
    pub stream: Option<bool>,
    /// The run's token budget (overrides the crew's `max_tokens`).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000000000u64)]
    pub max_tokens: Option<u64>,
    /// The run's cost budget in US dollars (overrides the crew's `max_cost_usd`).
    #[serde(default)]
    #[schema(exclusive_minimum = 0, maximum = 1000000)]
    pub max_cost_usd: Option<f64>,
    /// The memory scope the run saves to and recalls from (replaces the crew's `memory.scope`;
    /// gives a crew without `memory` one, with its defaults).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub memory_scope: Option<String>,
}

/// The most runs one batch may create.
/// A kickoff's `memory_scope` over the crew's memory; the problem of the scope given.
pub fn apply_memory_scope(crew: &mut CrewSpec, memory_scope: Option<String>) -> Vec<FieldError> {
    let Some(scope) = memory_scope else { return Vec::new() };
    if let Err(message) = super::memory::check_scope(&scope) {
        return vec![FieldError::new("memory_scope", message)];
    }
    crew.memory = Some(match crew.memory.take() {
        Some(memory) => super::memory::MemorySpec { scope, ..memory },
        None => super::memory::MemorySpec::scoped(scope),
    });
    Vec::new()
}

pub const MAX_BATCH: usize = 1_000;

/// Validate a crew once and each input set against it; one run per set, or every violation
/// (input errors named `inputs[<i>].<name>`).
pub fn prepare_batch(
    crew: CrewSpec,
    inputs: Vec<Map<String, Value>>,
    metadata: Map<String, Value>,
    timeout_s: Option<u32>,
    tenant: &TenantId,
    ctx: &ValidationContext,
) -> Result<Vec<NewRun>, Vec<FieldError>> {
    if inputs.is_empty() || inputs.len() > MAX_BATCH {
        return Err(vec![FieldError::new("inputs", format!("must hold 1 to {MAX_BATCH} input sets"))]);
    }
    let mut errors: Vec<FieldError> = match validate_crew(&crew, ctx) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.under("crew")).collect(),
    };
    for (i, set) in inputs.iter().enumerate() {
        if let Err(missing) = validate_inputs(&crew, set) {
            let indexed = missing.into_iter().map(|mut e| {
                e.field = e.field.replacen("inputs", &format!("inputs[{i}]"), 1);
                e
            });
            errors.extend(indexed);
        }
    }
    if timeout_s.is_some_and(|t| !(1..=MAX_TIMEOUT_S).contains(&t)) {
        errors.push(FieldError::new("timeout_s", format!("must be between 1 and {MAX_TIMEOUT_S}")));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let fake_llm = ctx.uses_fake_provider(&crew);
    let runs = inputs
        .into_iter()
        .map(|inputs| NewRun {
            id: RunId::new(),
            tenant: tenant.to_owned(),
            crew: crew.clone(),
            crew_version: None,
            inputs,
            metadata: metadata.clone(),
            timeout_s,
            fake_llm,
            webhooks: Vec::new(),
            trace: None,
            thread: None,
            max_queued: None,
        })
        .collect();
    Ok(runs)
}

/// The `crew` of a kickoff: a spec, or a registered crew's name with the version it means
/// (`name`, `name@3`, `name@latest`, `name@staging`).
#[derive(Debug, Clone, PartialEq)]
pub enum CrewRef {
    Named(CrewSelector),
    Spec(Box<CrewSpec>),
}

impl utoipa::PartialSchema for CrewRef {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{OneOfBuilder, Ref};
        OneOfBuilder::new()
            .item(string_schema(CREW_REFERENCE_PATTERN, Some(2 * MAX_NAME_LEN + 1)))
            .item(Ref::from_schema_name("CrewSpec"))
            .description(Some(
                "The `crew` of a kickoff: a spec, or a registered crew as `name` (its `production` alias's version when it has one, else its newest), `name@<version>`, `name@latest` or `name@<alias>`.",
            ))
            .into()
    }
}

impl ToSchema for CrewRef {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push(("CrewSpec".into(), CrewSpec::schema()));
        <CrewSpec as ToSchema>::schemas(schemas);
    }
}

/// A kickoff's inputs in the OpenAPI document: an object whose values may be any JSON but
/// `null` (a placeholder needs a value).
pub struct Inputs;

impl utoipa::PartialSchema for Inputs {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        let not_null = ObjectBuilder::new().schema_type(SchemaType::Array(vec![
            Type::String,
            Type::Number,
            Type::Boolean,
            Type::Object,
            Type::Array,
        ]));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("Values for the crew's `{placeholders}` (any JSON but `null`)."))
            .additional_properties(Some(not_null))
            .into()
    }
}

impl utoipa::ToSchema for Inputs {}

impl CrewRef {
    /// Read the `crew` field, reporting errors under `crew`.
    pub fn parse(value: Value) -> Result<Self, Vec<FieldError>> {
        match value {
            Value::String(reference) => match CrewSelector::parse(&reference) {
                Ok(selector) => Ok(CrewRef::Named(selector)),
                Err(message) => Err(vec![FieldError::new("crew", message)]),
            },
            Value::Object(_) => CrewSpec::from_json(value)
                .map(|spec| CrewRef::Spec(Box::new(spec)))
                .map_err(|errors| errors.into_iter().map(|e| e.under("crew")).collect()),
            _ => Err(vec![FieldError::new(
                "crew",
                "must be a crew spec object or a registered crew's name (name, name@version, name@alias)",
            )]),
        }
    }
}

impl CrewSpec {
    /// Deserialize a spec from JSON, naming the path of every field that does not fit.
    pub fn from_json(value: Value) -> Result<Self, Vec<FieldError>> {
        super::body::parse_every_field(&value)
    }
}

/// A validated run, ready to be stored.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: RunId,
    /// The tenant that owns it.
    pub tenant: TenantId,
    pub crew: CrewSpec,
    /// The registered crew's version it runs (`None`: a crew given inline).
    pub crew_version: Option<i32>,
    pub inputs: Map<String, Value>,
    pub metadata: Map<String, Value>,
    pub timeout_s: Option<u32>,
    /// Whether a model of the crew is served by a fake provider.
    pub fake_llm: bool,
    /// The kickoff's webhooks.
    pub webhooks: Vec<RunWebhook>,
    /// The trace its spans join (the kickoff's `traceparent`).
    pub trace: Option<crate::domain::RunTrace>,
    /// The thread it joins.
    pub thread: Option<super::thread::ThreadJoin>,
    /// Its tenant's `max_queued`, when the tenant has one (set when the run is admitted): the
    /// transaction that stores the run takes the tenant's queue lock, counts the tenant's queued
    /// runs and refuses the run past this, so concurrent kickoffs on any replica keep the limit.
    /// `None`: no lock, no count.
    pub max_queued: Option<u32>,
}

impl NewRun {
    /// The run as the API shows it right after it was stored (queued, nothing done yet), without
    /// reading it back.
    pub fn queued(&self, created_at: chrono::DateTime<chrono::Utc>) -> Run {
        let tasks = self
            .crew
            .tasks
            .iter()
            .map(|task| TaskRun {
                name: task.name.clone(),
                agent: task.agent.clone(),
                status: TaskStatus::Pending,
                output: None,
                started_at: None,
                finished_at: None,
            })
            .collect();
        Run {
            id: self.id,
            tenant: self.tenant.clone(),
            status: RunStatus::Queued,
            crew_name: self.crew.name.clone(),
            crew_version: self.crew_version,
            inputs: self.inputs.clone(),
            metadata: self.metadata.clone(),
            created_at,
            started_at: None,
            finished_at: None,
            attempt: 0,
            output: None,
            tasks,
            error: None,
            usage: Usage::default(),
            // As `GET /v1/runs/{id}` shows it: nothing spent yet.
            usage_breakdown: Some(Vec::new()),
            fake_llm: self.fake_llm,
            trace_id: self.trace.as_ref().map(|t| t.trace_id.clone()),
            thread_id: self.thread.as_ref().map(|t| t.thread_id),
            forked_from: None,
        }
    }
}

/// The longest `timeout_s` a run may ask for (a week).
pub const MAX_TIMEOUT_S: u32 = 604_800;

/// Validate a crew with its inputs and make the run that will execute them.
pub fn prepare_run(
    crew: CrewSpec,
    inputs: Map<String, Value>,
    metadata: Map<String, Value>,
    timeout_s: Option<u32>,
    tenant: &TenantId,
    ctx: &ValidationContext,
) -> Result<NewRun, Vec<FieldError>> {
    let mut errors: Vec<FieldError> = match validate_crew(&crew, ctx) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.under("crew")).collect(),
    };
    if let Err(missing) = validate_inputs(&crew, &inputs) {
        errors.extend(missing);
    }
    if timeout_s.is_some_and(|t| !(1..=MAX_TIMEOUT_S).contains(&t)) {
        errors.push(FieldError::new("timeout_s", format!("must be between 1 and {MAX_TIMEOUT_S}")));
    }
    if errors.is_empty() {
        let fake_llm = ctx.uses_fake_provider(&crew);
        let tenant = tenant.to_owned();
        Ok(NewRun {
            id: RunId::new(),
            tenant,
            crew,
            crew_version: None,
            inputs,
            metadata,
            timeout_s,
            fake_llm,
            webhooks: Vec::new(),
            trace: None,
            thread: None,
            max_queued: None,
        })
    } else {
        Err(errors)
    }
}

/// A kickoff's own `max_tokens` / `max_cost_usd` over the crew's; the problems of the kickoff's
/// values. A crew whose own budget is invalid keeps it, for the crew's validation to report.
pub fn apply_budgets(
    crew: &mut CrewSpec,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
) -> Vec<FieldError> {
    let errors = super::validate::budget_errors(max_tokens, max_cost_usd);
    if errors.is_empty() && super::validate::budget_errors(crew.max_tokens, crew.max_cost_usd).is_empty() {
        crew.max_tokens = max_tokens.or(crew.max_tokens);
        crew.max_cost_usd = max_cost_usd.or(crew.max_cost_usd);
    }
    errors
}

/// A digest of a JSON request body that ignores key order and whitespace, so that "the same body"
/// means the same JSON value.
pub fn request_fingerprint(body: &Value) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hash_canonical(body, &mut hasher);
    hasher.finalize().to_vec()
}

fn hash_canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for key in keys {
                hasher.update(Value::String(key.clone()).to_string().as_bytes());
                hasher.update(b":");
                hash_canonical(&map[key], hasher);
                hasher.update(b",");
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for item in items {
                hash_canonical(item, hasher);
                hasher.update(b",");
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fingerprint_ignores_key_order_but_not_values() {
        let a = json!({"crew": "c", "inputs": {"x": 1, "y": [1, 2]}});
        let b = json!({"inputs": {"y": [1, 2], "x": 1}, "crew": "c"});
        let c = json!({"inputs": {"y": [2, 1], "x": 1}, "crew": "c"});
        assert_eq!(request_fingerprint(&a), request_fingerprint(&b));
        assert_ne!(request_fingerprint(&a), request_fingerprint(&c));
    }

    #[test]
    fn crew_errors_carry_the_full_path() {
        let value = json!({"name": "c", "agents": [{"name": "a", "role": 3}], "tasks": []});
        let errors = CrewRef::parse(value).expect_err("invalid");
        assert_eq!(errors[0].field, "crew.agents[0].role");
    }

    #[test]
    fn crew_of_another_type_is_rejected() {
        let errors = CrewRef::parse(json!(42)).expect_err("invalid");
        assert_eq!(errors[0].field, "crew");
    }
}

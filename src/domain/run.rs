//! A run and its tasks as the API shows them: statuses, outputs, errors and usage. The statuses'
//! names (stored in the database, shown in the API) come from one table each: the `snake_case`
//! variant names, derived by `strum` for `as_str`/`FromStr`/`Display` and by serde for JSON.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::RunId;
use crate::domain::TenantId;

snake_case_enum! {
    /// Where a run is in its life. Mirrors the `runs.status` CHECK constraint.
    #[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_run_status)]
    pub enum RunStatus {
        Queued,
        /// Queued behind an unfinished run of its thread (`multitask_strategy: enqueue`): no worker
        /// takes it until that run ends, when it becomes `queued`.
        Waiting,
        Running,
        AwaitingInput,
        Completed,
        Failed,
        Cancelling,
        Cancelled,
    }
}

impl RunStatus {
    pub const ALL: [RunStatus; 8] = [
        RunStatus::Queued,
        RunStatus::Waiting,
        RunStatus::Running,
        RunStatus::AwaitingInput,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelling,
        RunStatus::Cancelled,
    ];

    /// The name stored in the database and shown in the API.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// A run in a terminal state never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled)
    }
}

fn unknown_run_status(s: &str) -> String {
    format!("unknown run status '{s}'")
}

snake_case_enum! {
    /// Where a task is. Mirrors the `run_tasks.status` CHECK constraint.
    #[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_task_status)]
    pub enum TaskStatus {
        Pending,
        Running,
        Completed,
        Failed,
        Cancelled,
    }
}

impl TaskStatus {
    /// The name stored in the database and shown in the API.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fn unknown_task_status(s: &str) -> String {
    format!("unknown task status '{s}'")
}

/// A task's or a run's output: the raw text and, with an output schema, the parsed JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskOutput {
    pub raw: String,
    #[schema(value_type = Option<Object>)]
    pub json: Option<Value>,
    /// Set only where a view cuts a long output (a run's resource, its lists and waits): the
    /// whole output's length in bytes. `raw` then holds its beginning and a marker, `json` is
    /// left out, and `GET /v1/runs/{id}/tasks/{name}` serves the output whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_bytes: Option<usize>,
}

impl TaskOutput {
    /// An output: its text and, with an output schema, its JSON.
    pub fn new(raw: impl Into<String>, json: Option<Value>) -> Self {
        Self { raw: raw.into(), json, full_bytes: None }
    }

    /// The output as a view shows it: whole up to `max` bytes, else its beginning (cut at a
    /// character boundary) and a marker saying where the rest is.
    pub fn cut_for_view(&mut self, max: usize, whole_at: &str) {
        if self.raw.len() <= max {
            return;
        }
        let mut end = max;
        while !self.raw.is_char_boundary(end) {
            end -= 1;
        }
        let full = self.raw.len();
        self.raw.truncate(end);
        self.raw.push_str(&format!("\n… [cut at {end} of {full} bytes; {whole_at} has it whole]"));
        self.json = None;
        self.full_bytes = Some(full);
    }
}

/// What went wrong with a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunError {
    pub kind: ErrorKind,
    pub message: String,
}

/// The class of a run's failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    LlmError,
    ToolError,
    MaxIter,
    Timeout,
    Cancelled,
    /// Over one of the server's limits on what a run may produce (see `domain::limits`).
    Limit,
    /// Over the run's `max_tokens` or `max_cost_usd` budget.
    Budget,
    /// Its replicas died running it too often (`quarantine_after_deaths`): never handed on again.
    Quarantined,
    Internal,
}

impl ErrorKind {
    /// The name the API shows (`error.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::LlmError => "llm_error",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::MaxIter => "max_iter",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Limit => "limit",
            ErrorKind::Budget => "budget",
            ErrorKind::Quarantined => "quarantined",
            ErrorKind::Internal => "internal",
        }
    }
}

/// Counters of what a run consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    /// Model calls sent (a call lost to a crash, or one that failed, included).
    pub llm_calls: i64,
    /// Input tokens, cached ones included.
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Input tokens read from the providers' prompt caches (part of `prompt_tokens`).
    #[serde(default)]
    pub cached_tokens: i64,
    /// Of `prompt_tokens` and `completion_tokens`, those agentd estimated because the provider
    /// sent no usage for the call (0: every figure is the provider's).
    #[serde(default)]
    pub estimated_tokens: i64,
    pub tool_calls: i64,
    /// US dollars, at the prices configured for the run's models (unpriced models add 0).
    #[serde(default)]
    pub cost_usd: f64,
}

/// The model calls of one task, agent and model of a run, and what they used (in the journal: what
/// a step adds to them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageLine {
    pub task: String,
    pub agent: String,
    /// `provider/model`.
    pub model: String,
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cached_tokens: i64,
    pub cost_usd: f64,
}

impl UsageLine {
    /// Add another line's counts to this one's.
    pub fn add(&mut self, other: &UsageLine) {
        self.llm_calls += other.llm_calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cost_usd += other.cost_usd;
    }

    /// Does it count calls and nothing they used (a call going out)?
    pub fn counts_calls_only(&self) -> bool {
        self.prompt_tokens == 0
            && self.completion_tokens == 0
            && self.cached_tokens == 0
            && self.cost_usd == 0.0
    }

    /// Is it of the same task, agent and model?
    pub fn same_key(&self, other: &UsageLine) -> bool {
        self.task == other.task && self.agent == other.agent && self.model == other.model
    }
}

/// One task of a run.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskRun {
    pub name: String,
    pub agent: Option<String>,
    pub status: TaskStatus,
    pub output: Option<TaskOutput>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A run: its crew, inputs, state, tasks, output or error, and usage (the API adds its links).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = RunDetails)]
pub struct Run {
    pub id: RunId,
    /// The tenant that owns the run (the kickoff's key's).
    #[schema(value_type = String)]
    pub tenant: TenantId,
    pub status: RunStatus,
    pub crew_name: String,
    /// The version of the registered crew the run runs (a kickoff naming `name`, `name@3` or
    /// `name@alias` records the version it resolved to); absent for a crew given inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crew_version: Option<i32>,
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// How many times a worker has claimed the run (0 while it waits for its first claim).
    pub attempt: i32,
    pub output: Option<TaskOutput>,
    pub tasks: Vec<TaskRun>,
    pub error: Option<RunError>,
    pub usage: Usage,
    /// The usage split by task, agent and model (`GET /v1/runs/{id}` only; absent in lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_breakdown: Option<Vec<UsageLine>>,
    /// True when a model of the run's crew is served by a fake provider (`kind = "fake"` in the
    /// server's configuration): its replies are scripted, not a real model's.
    pub fake_llm: bool,
    /// The OpenTelemetry trace the run's spans belong to (32 hex digits): the kickoff's
    /// `traceparent`'s, or the run's own when traces are on; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9a-f]{32}$")]
    pub trace_id: Option<String>,
    /// The thread the run belongs to (a kickoff's `thread_id`); absent for a run of none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<uuid::Uuid>,
    /// The run and task it was forked from (`POST /v1/runs/{id}/fork`); absent for a run that is
    /// no fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<super::fork::ForkedFrom>,
}

/// The trace a run belongs to (OpenTelemetry, W3C trace context), stored with it: every attempt's
/// span is a child of the caller's span (`parent_span_id`), or a root of the run's own trace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunTrace {
    /// 32 hex digits.
    pub trace_id: String,
    /// The caller's span (16 hex digits), when the kickoff carried a `traceparent`.
    pub parent_span_id: Option<String>,
    /// The caller's sampling decision (its `traceparent`'s flags).
    pub sampled: bool,
    /// The caller's `tracestate`.
    pub tracestate: Option<String>,
}

impl RunTrace {
    /// The caller's `traceparent`, as stored.
    pub fn traceparent(&self) -> Option<String> {
        let parent = self.parent_span_id.as_deref()?;
        Some(format!("00-{}-{parent}-{}", self.trace_id, if self.sampled { "01" } else { "00" }))
    }

    /// The trace stored as `trace_id`, `traceparent` and `tracestate`.
    pub fn from_columns(
        trace_id: Option<String>,
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Option<Self> {
        let trace_id = trace_id?;
        let mut parts = traceparent.as_deref().map(|p| p.split('-').collect::<Vec<_>>()).unwrap_or_default();
        let (parent_span_id, sampled) = match parts.as_mut_slice() {
            [_, _, span, flags] => {
                let sampled = u8::from_str_radix(flags, 16).is_ok_and(|f| f & 1 == 1);
                (Some((*span).to_owned()), sampled)
            }
            _ => (None, true),
        };
        Some(RunTrace { trace_id, parent_span_id, sampled, tracestate })
    }
}

/// One page of runs, newest first.
#[derive(Debug)]
pub struct RunPage {
    pub runs: Vec<Run>,
    /// The id to pass as `before` for the next page; `None` on the last page.
    pub next_before: Option<RunId>,
}

/// Which runs a protocol lists as its own (A2A's tasks): those whose metadata has `tag` (the
/// protocol's conversation key), optionally of one crew, with one value of the tag, in some
/// statuses, whose status changed at or after a time.
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedRuns {
    pub tag: &'static str,
    pub crew: Option<String>,
    pub value: Option<String>,
    /// `None`: any status; `Some(empty)`: none matches.
    pub statuses: Option<Vec<RunStatus>>,
    /// Runs whose last change of status (finish, else start, else creation) is at or after this.
    pub changed_since: Option<DateTime<Utc>>,
}

/// Where a run stands in a list ordered by its last change of status, newest first: that time,
/// then the run's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusCursor {
    pub at: DateTime<Utc>,
    pub id: RunId,
}

/// A page of [`TaggedRuns`], newest change of status first, and how many there are in all.
#[derive(Debug)]
pub struct TaggedPage {
    pub runs: Vec<Run>,
    /// Where the next page starts (after this); `None` on the last page.
    pub next: Option<StatusCursor>,
    pub total: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are stored in the database (CHECK constraints) and shown in the API: pinned.
    const RUN_NAMES: [(RunStatus, &str); 8] = [
        (RunStatus::Queued, "queued"),
        (RunStatus::Waiting, "waiting"),
        (RunStatus::Running, "running"),
        (RunStatus::AwaitingInput, "awaiting_input"),
        (RunStatus::Completed, "completed"),
        (RunStatus::Failed, "failed"),
        (RunStatus::Cancelling, "cancelling"),
        (RunStatus::Cancelled, "cancelled"),
    ];

    const TASK_NAMES: [(TaskStatus, &str); 5] = [
        (TaskStatus::Pending, "pending"),
        (TaskStatus::Running, "running"),
        (TaskStatus::Completed, "completed"),
        (TaskStatus::Failed, "failed"),
        (TaskStatus::Cancelled, "cancelled"),
    ];

    #[test]
    fn run_status_names_are_stable() {
        assert_eq!(RunStatus::ALL, RUN_NAMES.map(|(status, _)| status));
        for (status, name) in RUN_NAMES {
            assert_eq!(status.as_str(), name);
            assert_eq!(status.to_string(), name);
            assert_eq!(name.parse::<RunStatus>(), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), name);
            assert_eq!(serde_json::from_value::<RunStatus>(name.into()).unwrap(), status);
        }
        assert_eq!("Queued".parse::<RunStatus>(), Err("unknown run status 'Queued'".to_owned()));
        assert_eq!("".parse::<RunStatus>(), Err("unknown run status ''".to_owned()));
    }

    #[test]
    fn task_status_names_are_stable() {
        for (status, name) in TASK_NAMES {
            assert_eq!(status.as_str(), name);
            assert_eq!(status.to_string(), name);
            assert_eq!(name.parse::<TaskStatus>(), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), name);
            assert_eq!(serde_json::from_value::<TaskStatus>(name.into()).unwrap(), status);
        }
        assert_eq!("queued".parse::<TaskStatus>(), Err("unknown task status 'queued'".to_owned()));
    }
}

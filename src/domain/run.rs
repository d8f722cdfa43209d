//! A run and its tasks as the API shows them: statuses, outputs, errors and usage.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::RunId;

/// Where a run is in its life. Mirrors the `runs.status` CHECK constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    AwaitingInput,
    Completed,
    Failed,
    Cancelling,
    Cancelled,
}

impl RunStatus {
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::AwaitingInput,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelling,
        RunStatus::Cancelled,
    ];

    /// The name stored in the database and shown in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::AwaitingInput => "awaiting_input",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelling => "cancelling",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// A run in a terminal state never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled)
    }
}

impl std::str::FromStr for RunStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| format!("unknown run status '{s}'"))
    }
}

/// Where a task is. Mirrors the `run_tasks.status` CHECK constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::str::FromStr for TaskStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            TaskStatus::Pending,
            TaskStatus::Running,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == s)
        .ok_or_else(|| format!("unknown task status '{s}'"))
    }
}

/// A task's or a run's output: the raw text and, with an output schema, the parsed JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskOutput {
    pub raw: String,
    #[schema(value_type = Option<Object>)]
    pub json: Option<Value>,
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
    Internal,
}

/// Counters of what a run consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub tool_calls: i64,
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
    pub status: RunStatus,
    pub crew_name: String,
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
    /// True when a model of the run's crew is served by a fake provider (`kind = "fake"` in the
    /// server's configuration): its replies are scripted, not a real model's.
    pub fake_llm: bool,
}

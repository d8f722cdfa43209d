//! The API's representations of what the store keeps: a run with its links, a conversation
//! message, a tool call, a registered crew. The store and the domain know nothing of URLs or
//! OpenAPI schemas; these types add both.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::crew::CrewRecord;
use crate::domain::journal::ToolCallOutcome;
use crate::domain::journal::{Message, ToolCall};
use crate::domain::{CrewSpec, Run, RunId};

/// Links to a run's resources.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunLinks {
    #[serde(rename = "self")]
    pub self_: String,
    pub events: String,
}

impl RunLinks {
    pub fn for_run(id: RunId) -> Self {
        Self { self_: format!("/v1/runs/{id}"), events: format!("/v1/runs/{id}/events") }
    }
}

/// A run as the API returns it: the run and links to its resources.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Run)]
pub struct RunBody {
    #[serde(flatten)]
    pub run: Run,
    pub links: RunLinks,
}

/// Bytes of an output a run's view shows (longer ones are cut, with a marker naming
/// `GET /v1/runs/{id}/tasks/{name}`, which serves them whole): the run stays small whatever its
/// outputs.
pub const VIEW_OUTPUT_BYTES: usize = 16 * 1024;

impl From<Run> for RunBody {
    fn from(mut run: Run) -> Self {
        let links = RunLinks::for_run(run.id);
        let id = run.id;
        for task in &mut run.tasks {
            if let Some(output) = &mut task.output {
                output.cut_for_view(VIEW_OUTPUT_BYTES, &format!("GET {}", task_path(id, &task.name)));
            }
        }
        // The run's output is its last task's.
        let last = run.tasks.last().map(|t| task_path(id, &t.name));
        if let (Some(output), Some(path)) = (&mut run.output, last) {
            output.cut_for_view(VIEW_OUTPUT_BYTES, &format!("GET {path}"));
        }
        Self { run, links }
    }
}

/// The path of a run's task (its name percent-encoded as one path segment).
pub fn task_path(id: RunId, task: &str) -> String {
    let mut segment = String::with_capacity(task.len());
    for byte in task.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            segment.push(byte as char);
        } else {
            segment.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("/v1/runs/{id}/tasks/{segment}")
}

/// One message of a task's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = Message)]
pub struct MessageBody {
    pub seq: i64,
    pub task: Option<String>,
    pub agent: Option<String>,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    pub content: Option<String>,
    /// The native tool calls an assistant message asked for (`[{"id", "name", "arguments"}]`).
    #[schema(value_type = Option<Vec<Object>>)]
    pub tool_calls: Option<Value>,
    /// For a `tool` message: the call it answers.
    pub tool_call_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<Message> for MessageBody {
    fn from(m: Message) -> Self {
        let calls = &m.message.tool_calls;
        let tool_calls = (!calls.is_empty()).then(|| serde_json::to_value(calls).unwrap_or(Value::Null));
        Self {
            seq: m.seq,
            task: m.task,
            agent: m.agent,
            role: m.message.role.as_str().to_owned(),
            content: m.message.content,
            tool_calls,
            tool_call_id: m.message.tool_call_id,
            created_at: m.created_at,
        }
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = ToolCall)]
pub struct ToolCallBody {
    pub id: String,
    pub task: Option<String>,
    pub agent: Option<String>,
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// `running`, `awaiting_approval` (its decision is due), `succeeded` or `failed`.
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub cached: bool,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// For a call of a tool that requires approval: `{"state": "pending" | "deferred" |
    /// "approved" | "rejected", "arguments"?, "reason"?}` (deferred: it needs no decision but
    /// runs with its round's calls that do).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub approval: Option<Value>,
}

impl From<ToolCall> for ToolCallBody {
    fn from(c: ToolCall) -> Self {
        let status = c.status().as_str().to_owned();
        let (result, error, cached) = match c.outcome {
            Some(ToolCallOutcome::Succeeded { result, cached }) => (Some(result), None, cached),
            Some(ToolCallOutcome::Failed { error }) => (None, Some(error), false),
            None => (None, None, false),
        };
        Self {
            id: c.id,
            task: c.task,
            agent: c.agent,
            tool: c.tool,
            arguments: c.arguments,
            status,
            result,
            error,
            cached,
            started_at: c.started_at,
            finished_at: c.finished_at,
            approval: c.approval.map(|a| serde_json::to_value(a).unwrap_or(Value::Null)),
        }
    }
}

/// A registered crew.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = CrewRecord)]
pub struct CrewBody {
    pub name: String,
    /// The spec of its newest version.
    pub spec: CrewSpec,
    pub created_at: DateTime<Utc>,
    /// When its newest version was stored (a store of the same content changes nothing).
    pub updated_at: DateTime<Utc>,
    /// Its newest version's number (versions count from 1).
    #[schema(minimum = 1)]
    pub version: i32,
    /// sha256 of the newest version's canonical JSON, hex.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_hash: String,
    /// Its aliases and the versions they name. A kickoff naming the crew alone runs the
    /// `production` alias's version when there is one, else the newest.
    pub aliases: std::collections::BTreeMap<String, i32>,
}

impl From<CrewRecord> for CrewBody {
    fn from(r: CrewRecord) -> Self {
        let CrewRecord { name, spec, created_at, updated_at, version, content_hash, aliases } = r;
        Self { name, spec, created_at, updated_at, version, content_hash, aliases }
    }
}

//! The step events of a run's log: their types, each type's data, and the envelope clients
//! receive.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{RunError, RunId};

/// The one table of event types: the variant, the wire name and the payload of each. It makes
/// [`EventType`] (the names) and [`EventData`] (the payloads, tagged by name) and the maps between
/// them, so a new event type is one line here and a payload struct below.
macro_rules! events {
    ($($(#[$doc:meta])* $variant:ident($payload:ty) = $name:tt,)*) => {
        /// Every kind of event a run's log can hold (the table in docs/api.md, "Events").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        pub enum EventType {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl EventType {
            /// Every event type, in the order of the table.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// The wire name, e.g. `tool.started` (also the SSE `event:` field).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$variant => $name,)*
                }
            }
        }

        /// The data of each type of event: one variant per [`EventType`], named alike, each with
        /// its payload (the `data` of the envelope). Whatever writes an event writes one of
        /// these; the OpenAPI document shows each type's `data` from them.
        #[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
        #[serde(tag = "type", content = "data")]
        pub enum EventData {
            $($(#[$doc])* #[serde(rename = $name)] $variant($payload),)*
        }

        impl EventData {
            /// The event's type.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(EventData::$variant(_) => EventType::$variant,)*
                }
            }

            /// The type and the payload, as the log stores them.
            pub fn into_parts(self) -> (EventType, Value) {
                let event_type = self.event_type();
                let data = match self {
                    $(EventData::$variant(payload) => serde_json::to_value(payload),)*
                };
                // The payloads are plain data with string keys: serializing them cannot fail.
                (event_type, data.unwrap_or_default())
            }
        }
    };
}

events! {
    /// The run was stored, waiting for a worker.
    RunQueued(Empty) = "run.queued",
    /// The run is a fork: the tasks before its task were taken over from the run it was forked
    /// from (their events follow, copied).
    RunForked(RunForked) = "run.forked",
    /// The failed run was queued again (`POST /v1/runs/{id}/retry`) to continue its journal.
    RunRetried(RunRetried) = "run.retried",
    /// A worker claimed the run.
    RunStarted(RunStarted) = "run.started",
    TaskStarted(TaskStarted) = "task.started",
    /// A task's prompt was given the hits of a knowledge base (its crew's or agent's).
    KnowledgeRetrieved(KnowledgeRetrieved) = "knowledge.retrieved",
    /// A task's prompt was given the memories of the crew's scope from earlier runs.
    MemoryRetrieved(MemoryRetrieved) = "memory.retrieved",
    /// A completed task saved its memories (with its completion).
    MemorySaved(MemorySaved) = "memory.saved",
    LlmStarted(LlmStarted) = "llm.started",
    LlmFinished(LlmFinished) = "llm.finished",
    AgentThought(AgentThought) = "agent.thought",
    ToolStarted(ToolStarted) = "tool.started",
    ToolFinished(ToolFinished) = "tool.finished",
    ToolFailed(ToolFailed) = "tool.failed",
    /// A call of a tool that requires approval waits for a decision
    /// (`POST /v1/runs/{id}/tool-calls/{tool_call_id}/approval`); the run is `awaiting_input`.
    ToolApprovalRequested(ToolStarted) = "tool.approval_requested",
    /// A reviewer approved the call (with the arguments it runs with).
    ToolApproved(ToolStarted) = "tool.approved",
    /// A reviewer rejected the call; the model is told why.
    ToolRejected(ToolRejected) = "tool.rejected",
    /// A reply could not be used; the agent is told why.
    AgentParseError(AgentParseError) = "agent.parse_error",
    /// The provider refused native tools (the agent goes on in ReAct text), or a native
    /// structured output (the prompt alone asks for the schema).
    AgentFallback(AgentFallback) = "agent.fallback",
    /// `max_iter` reached: the agent is asked for its final answer.
    AgentMaxIter(AgentMaxIter) = "agent.max_iter",
    /// A model call waits for a slot under a rate limit.
    RunThrottled(RunThrottled) = "run.throttled",
    AgentFinalAnswer(AgentFinalAnswer) = "agent.final_answer",
    TaskCompleted(TaskCompleted) = "task.completed",
    TaskFailed(TaskFailed) = "task.failed",
    /// A task's answer awaits a human's review (`POST /v1/runs/{id}/resume`).
    RunAwaitingInput(TaskAnswered) = "run.awaiting_input",
    RunResumed(RunResumed) = "run.resumed",
    RunCompleted(RunCompleted) = "run.completed",
    RunFailed(RunFailed) = "run.failed",
    RunCancelled(Empty) = "run.cancelled",
    GuardrailPassed(GuardrailVerdict) = "guardrail.passed",
    GuardrailFailed(GuardrailVerdict) = "guardrail.failed",
    TaskPlanned(TaskPlanned) = "task.planned",
    StepStarted(StepStarted) = "step.started",
    StepCompleted(StepCompleted) = "step.completed",
    StepFailed(StepFailed) = "step.failed",
    /// An evaluation's judge decided whether the case's output meets its rubric (before
    /// `run.completed`, in a case run whose case has a rubric).
    EvaluationJudged(EvaluationJudged) = "evaluation.judged",
}

impl EventType {
    /// Does this event end the run's stream?
    pub fn is_terminal(self) -> bool {
        matches!(self, EventType::RunCompleted | EventType::RunFailed | EventType::RunCancelled)
    }
}

impl std::str::FromStr for EventType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(Value::String(s.to_owned())).map_err(|_| format!("unknown event type '{s}'"))
    }
}

/// The envelope of one event; `data` is its [`EventData`] payload as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Dense per run, starting at 1.
    pub seq: i64,
    pub run_id: RunId,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub at: DateTime<Utc>,
    pub task: Option<String>,
    pub agent: Option<String>,
    pub data: Value,
}

/// No data: `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct Empty {}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunStarted {
    /// The claim's number, from 1 (a recovered run starts again with the next).
    pub attempt: i32,
    /// The replica and slot that claimed the run.
    pub worker: String,
    /// The OpenTelemetry trace of the run (as the run resource's `trace_id`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9a-f]{32}$")]
    pub trace_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskStarted {
    pub task: String,
    pub agent: String,
}

/// What one knowledge base gave a task's prompt.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct KnowledgeRetrieved {
    pub task: String,
    pub base: String,
    /// Best first (none: the base had nothing for the prompt).
    pub hits: Vec<RetrievedChunk>,
}

/// A chunk a task's prompt was given.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RetrievedChunk {
    pub chunk_id: uuid::Uuid,
    pub score: f64,
}

/// What a memory scope gave a task's prompt.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct MemoryRetrieved {
    pub task: String,
    pub scope: String,
    /// Most relevant first (none: the scope holds nothing from earlier runs).
    pub memories: Vec<RecalledMemory>,
}

/// A memory a task's prompt was given: its relevance to the prompt (0: recalled as recent).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RecalledMemory {
    pub id: uuid::Uuid,
    pub score: f64,
}

/// The memories a completed task saved.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct MemorySaved {
    pub task: String,
    pub scope: String,
    pub memories: Vec<SavedMemory>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SavedMemory {
    pub id: uuid::Uuid,
    pub kind: super::memory::MemoryKind,
}

/// Why a model is asked, beside an agent's own turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    Guardrail,
    Planner,
    Summarizer,
    /// Extracting facts and entities of an answer for memory.
    Memory,
    /// An evaluation's judge, scoring a case's output against its rubric.
    Judge,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LlmStarted {
    /// `provider/model`.
    pub model: String,
    /// The agent's turn, from 1 (absent for a side call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// What a side call is for (absent for an agent's turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<CallPurpose>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct TokenUsage {
    /// Input tokens, cached ones included.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Input tokens read from the provider's prompt cache (part of `prompt_tokens`).
    pub cached_tokens: u64,
    /// The provider sent no usage for the call: the counts are agentd's estimate (absent when
    /// they are the provider's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LlmFinished {
    pub model: String,
    pub usage: TokenUsage,
    /// What the call cost in US dollars, when its model has prices configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<CallPurpose>,
    /// Attempts of the call that failed and were retried before this reply (transient failures,
    /// rate limits); absent when the first attempt answered.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentThought {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ToolStarted {
    /// The call's id, unique in the run (the key of `GET /v1/runs/{id}/tool-calls`).
    pub tool_call_id: String,
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ToolFinished {
    pub tool_call_id: String,
    pub tool: String,
    /// The result the agent sees (for an image, a note that it is attached).
    pub observation: String,
    /// Answered from the run's tool cache, without running the tool.
    pub cached: bool,
    pub duration_ms: u64,
    /// For an image result: its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// For an image result: its size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ToolFailed {
    pub tool_call_id: String,
    pub tool: String,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ToolRejected {
    pub tool_call_id: String,
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentParseError {
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentFallback {
    /// `native` (tool calling) or `native_schema` (structured output).
    pub from: String,
    /// `react` or `prompt`.
    pub to: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentMaxIter {
    pub max_iter: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunThrottled {
    pub wait_ms: u64,
    /// The limit that binds, e.g. `provider:openai (60/min)`.
    pub limit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentFinalAnswer {
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskCompleted {
    pub task: String,
    /// The task's raw output.
    pub output: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskFailed {
    pub task: String,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskAnswered {
    pub task: String,
    /// The answer that awaits review.
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunForked {
    /// The run it was forked from.
    pub run_id: String,
    /// The task it runs anew from.
    pub task: String,
    /// The tasks taken over, in order.
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunRetried {
    /// The failure it continues after.
    pub error: Option<RunError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunResumed {
    /// The reviewer's feedback (when the answer was rejected).
    pub feedback: Option<String>,
    pub approve: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunCompleted {
    /// The last task's raw output.
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunFailed {
    pub error: RunError,
}

/// The judge's verdict on an evaluation case's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EvaluationJudged {
    /// Whether the output meets the rubric.
    pub passed: bool,
    /// The judge's score from 0 to 1, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why (the judge's words, or why it could not judge).
    pub reason: String,
    /// The judge's model (`provider/model`).
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct GuardrailVerdict {
    pub task: String,
    pub reason: String,
}

/// One step of a task's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PlanStep {
    pub description: String,
    /// The tool the planner expects the step to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_tool: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TaskPlanned {
    pub task: String,
    pub steps: Vec<PlanStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct StepStarted {
    pub task: String,
    /// From 1.
    pub step: usize,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct StepCompleted {
    pub task: String,
    pub step: usize,
    pub output: String,
    /// The step ran out of time; `output` says what it had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct StepFailed {
    pub task: String,
    pub step: usize,
    pub reason: String,
}

/// One event of a run's log: its place in the log, when, the task and agent it concerns, and its
/// type with that type's data. (The schema of [`Event`], whose `data` is the stored JSON.)
#[derive(ToSchema)]
#[schema(as = Event)]
#[allow(dead_code)]
pub struct EventSchema {
    /// Dense per run, starting at 1.
    seq: i64,
    run_id: RunId,
    at: DateTime<Utc>,
    #[schema(required = true)]
    task: Option<String>,
    #[schema(required = true)]
    agent: Option<String>,
    /// `type` and `data`, one pair per event type.
    #[serde(flatten)]
    payload: EventData,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde() {
        assert_eq!(EventType::ALL.len(), 36, "the event table in docs/api.md");
        let names: std::collections::BTreeSet<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names.len(), EventType::ALL.len(), "names are unique");
        for &ty in EventType::ALL {
            let json = serde_json::to_value(ty).expect("serialize");
            assert_eq!(json, Value::String(ty.as_str().to_owned()));
            assert_eq!(ty.as_str().parse::<EventType>(), Ok(ty));
        }
    }

    #[test]
    fn event_data_is_tagged_by_its_type_and_stores_its_payload_alone() {
        let data = EventData::ToolFailed(ToolFailed {
            tool_call_id: "c1".into(),
            tool: "calculator".into(),
            error: "division by zero".into(),
        });
        let tagged = serde_json::to_value(&data).expect("serialize");
        assert_eq!(tagged["type"], "tool.failed");
        let (event_type, stored) = data.into_parts();
        assert_eq!(event_type, EventType::ToolFailed);
        assert_eq!(
            stored,
            serde_json::json!({"tool_call_id": "c1", "tool": "calculator", "error": "division by zero"})
        );
        assert_eq!(tagged["data"], stored);
        let started = EventData::LlmStarted(LlmStarted {
            model: "p/m".into(),
            iteration: None,
            purpose: Some(CallPurpose::Planner),
        });
        assert_eq!(started.into_parts().1, serde_json::json!({"model": "p/m", "purpose": "planner"}));
    }
}

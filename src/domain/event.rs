//! The step events of a run's log: their types and the envelope clients receive.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::RunId;

/// Every kind of event a run's log can hold (the table in API.md "Events").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum EventType {
    #[serde(rename = "run.queued")]
    RunQueued,
    #[serde(rename = "run.started")]
    RunStarted,
    #[serde(rename = "task.started")]
    TaskStarted,
    #[serde(rename = "llm.started")]
    LlmStarted,
    #[serde(rename = "llm.finished")]
    LlmFinished,
    #[serde(rename = "agent.thought")]
    AgentThought,
    #[serde(rename = "tool.started")]
    ToolStarted,
    #[serde(rename = "tool.finished")]
    ToolFinished,
    #[serde(rename = "tool.failed")]
    ToolFailed,
    #[serde(rename = "agent.parse_error")]
    AgentParseError,
    #[serde(rename = "agent.fallback")]
    AgentFallback,
    #[serde(rename = "agent.max_iter")]
    AgentMaxIter,
    #[serde(rename = "run.throttled")]
    RunThrottled,
    #[serde(rename = "agent.final_answer")]
    AgentFinalAnswer,
    #[serde(rename = "task.completed")]
    TaskCompleted,
    #[serde(rename = "task.failed")]
    TaskFailed,
    #[serde(rename = "run.awaiting_input")]
    RunAwaitingInput,
    #[serde(rename = "run.resumed")]
    RunResumed,
    #[serde(rename = "run.completed")]
    RunCompleted,
    #[serde(rename = "run.failed")]
    RunFailed,
    #[serde(rename = "run.cancelled")]
    RunCancelled,
    #[serde(rename = "guardrail.passed")]
    GuardrailPassed,
    #[serde(rename = "guardrail.failed")]
    GuardrailFailed,
    #[serde(rename = "task.planned")]
    TaskPlanned,
    #[serde(rename = "step.started")]
    StepStarted,
    #[serde(rename = "step.completed")]
    StepCompleted,
    #[serde(rename = "step.failed")]
    StepFailed,
}

impl EventType {
    /// The wire name, e.g. `tool.started` (also the SSE `event:` field).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::RunQueued => "run.queued",
            EventType::RunStarted => "run.started",
            EventType::TaskStarted => "task.started",
            EventType::LlmStarted => "llm.started",
            EventType::LlmFinished => "llm.finished",
            EventType::AgentThought => "agent.thought",
            EventType::ToolStarted => "tool.started",
            EventType::ToolFinished => "tool.finished",
            EventType::ToolFailed => "tool.failed",
            EventType::AgentParseError => "agent.parse_error",
            EventType::AgentFallback => "agent.fallback",
            EventType::AgentMaxIter => "agent.max_iter",
            EventType::RunThrottled => "run.throttled",
            EventType::AgentFinalAnswer => "agent.final_answer",
            EventType::TaskCompleted => "task.completed",
            EventType::TaskFailed => "task.failed",
            EventType::RunAwaitingInput => "run.awaiting_input",
            EventType::RunResumed => "run.resumed",
            EventType::RunCompleted => "run.completed",
            EventType::RunFailed => "run.failed",
            EventType::RunCancelled => "run.cancelled",
            EventType::GuardrailPassed => "guardrail.passed",
            EventType::GuardrailFailed => "guardrail.failed",
            EventType::TaskPlanned => "task.planned",
            EventType::StepStarted => "step.started",
            EventType::StepCompleted => "step.completed",
            EventType::StepFailed => "step.failed",
        }
    }

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

/// The envelope of one event.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Event {
    /// Dense per run, starting at 1.
    pub seq: i64,
    pub run_id: RunId,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub at: DateTime<Utc>,
    pub task: Option<String>,
    pub agent: Option<String>,
    #[schema(value_type = Object)]
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde() {
        let all = [
            EventType::RunQueued,
            EventType::ToolStarted,
            EventType::AgentParseError,
            EventType::RunCancelled,
        ];
        for ty in all {
            let json = serde_json::to_value(ty).expect("serialize");
            assert_eq!(json, Value::String(ty.as_str().to_owned()));
            assert_eq!(ty.as_str().parse::<EventType>(), Ok(ty));
        }
    }
}

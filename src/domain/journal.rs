//! What a run's journal holds that more than the engine reads: how a tool call ended, where a
//! call awaiting approval stands, and the side records a task's start journals (what its
//! knowledge bases and memories gave its prompt). The engine writes them, the store keeps them,
//! the use cases and the API show them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::chat::ChatMessage;

/// Where a call of a tool that requires approval stands (journaled with the call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Approval {
    /// Waiting for a reviewer's decision.
    Pending,
    /// Needs no decision itself, but waits with a call of its round that does.
    Deferred,
    /// Run it, with the reviewer's arguments when given.
    Approved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
    /// Do not run it; the model is told, with the reason when given.
    Rejected {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    Succeeded { result: String, cached: bool },
    Failed { error: String },
}

impl ToolCallOutcome {
    /// The bytes of its text: the result or the error.
    pub fn text_bytes(&self) -> usize {
        match self {
            ToolCallOutcome::Succeeded { result, .. } => result.len(),
            ToolCallOutcome::Failed { error } => error.len(),
        }
    }
}

/// What a side record holds: one per task and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideKind {
    /// What the task's knowledge bases gave its prompt (`arguments`: `{"bases": [...]}`).
    Knowledge,
    /// What the crew's memory gave the task's prompt (`arguments`: `{"scope": ...}`).
    Recall,
}

impl SideKind {
    pub const ALL: [SideKind; 2] = [SideKind::Knowledge, SideKind::Recall];

    /// The name stored in `side_records.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            SideKind::Knowledge => "knowledge",
            SideKind::Recall => "recall",
        }
    }

    /// The kind stored under `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The tool the API's list of a run's tool calls shows the record as (what a retrieval
    /// was journaled as before side records had their own table; the listing keeps its shape).
    pub fn listed_tool(self) -> &'static str {
        match self {
            SideKind::Knowledge => "knowledge",
            SideKind::Recall => "memory",
        }
    }
}

/// What a task's start found and journaled, so that a resumed run reads it back instead of
/// searching again (and gets the same prompt).
#[derive(Debug, Clone, PartialEq)]
pub struct SideRecord {
    pub kind: SideKind,
    pub task: String,
    pub agent: String,
    /// What was asked (the bases searched, the memory scope).
    pub arguments: Value,
    /// What was found.
    pub value: Value,
}

impl SideRecord {
    /// The bytes of its text, as a run's journal limit counts them: the found value as JSON.
    pub fn text_bytes(&self) -> usize {
        serde_json::to_vec(&self.value).map_or(0, |bytes| bytes.len())
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub seq: i64,
    /// The task it belongs to.
    pub task: Option<String>,
    /// The conversation it belongs to: the task's, or one of its side conversations (plan steps).
    pub conversation: String,
    pub agent: Option<String>,
    pub message: ChatMessage,
    /// It holds a summary that stands for the conversation's earlier messages.
    pub compacts: bool,
    pub created_at: DateTime<Utc>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub task: Option<String>,
    pub conversation: String,
    pub agent: Option<String>,
    pub tool: String,
    pub arguments: Value,
    /// `None` while it runs (or was interrupted by a crash, or waits for approval).
    pub outcome: Option<ToolCallOutcome>,
    /// For a call of a tool that requires approval: where the decision stands.
    pub approval: Option<Approval>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// Where a tool call stands, as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallStatus {
    Running,
    /// Its reviewer's decision is due.
    AwaitingApproval,
    Succeeded,
    Failed,
}

impl ToolCallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallStatus::Running => "running",
            ToolCallStatus::AwaitingApproval => "awaiting_approval",
            ToolCallStatus::Succeeded => "succeeded",
            ToolCallStatus::Failed => "failed",
        }
    }
}

impl ToolCall {
    pub fn status(&self) -> ToolCallStatus {
        match (&self.outcome, &self.approval) {
            (Some(ToolCallOutcome::Succeeded { .. }), _) => ToolCallStatus::Succeeded,
            (Some(ToolCallOutcome::Failed { .. }), _) => ToolCallStatus::Failed,
            (None, Some(Approval::Pending)) => ToolCallStatus::AwaitingApproval,
            (None, _) => ToolCallStatus::Running,
        }
    }
}

impl ToolCall {
    /// A side record as the API's list of tool calls shows it: a call of the record's listed
    /// tool, keyed `<task>#<kind>`, that succeeded with the found value as its (JSON) result when
    /// the record was written.
    pub fn listed(record: SideRecord, at: DateTime<Utc>) -> Self {
        let SideRecord { kind, task, agent, arguments, value } = record;
        ToolCall {
            id: format!("{task}#{}", kind.as_str()),
            conversation: task.clone(),
            task: Some(task),
            agent: Some(agent),
            tool: kind.listed_tool().to_owned(),
            arguments,
            outcome: Some(ToolCallOutcome::Succeeded { result: value.to_string(), cached: false }),
            approval: None,
            started_at: at,
            finished_at: Some(at),
        }
    }
}

/// A key of a run's journal: the name of a conversation or of a tool call, made from where it
/// happens (a task's conversation is the task's name; the engine derives the others from it, see
/// `engine::keys`), so that a resumed run finds what it already did. Stored as text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JournalKey(String);

impl JournalKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text itself, to scrub (see `Step::scrub_nul`).
    pub fn text_mut(&mut self) -> &mut String {
        &mut self.0
    }
}

impl std::ops::Deref for JournalKey {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JournalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for JournalKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for JournalKey {
    fn from(key: &str) -> Self {
        Self(key.to_owned())
    }
}

impl From<JournalKey> for String {
    fn from(key: JournalKey) -> Self {
        key.0
    }
}

impl PartialEq<str> for JournalKey {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for JournalKey {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for JournalKey {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

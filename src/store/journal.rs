//! The journal read model: a run's messages, tool calls and side records as the engine recorded
//! them, decoded once into domain types (the role, the native tool calls, the outcome, the
//! approval state, the record's kind). The engine resumes from these ([`super::run_journal`]'s
//! snapshot) and the API shows them (`/messages`, `/tool-calls`): one set of rows, one decoding,
//! so the two cannot disagree.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{decode, Store, StoreError, StoreResult};
use crate::domain::chat::{ChatMessage, Role};
use crate::domain::journal::{Message, SideKind, SideRecord, ToolCall, ToolCallOutcome};
use crate::domain::RunId;

struct MessageRow {
    seq: i64,
    task: Option<String>,
    conversation: Option<String>,
    agent: Option<String>,
    role: String,
    content: Option<String>,
    tool_calls: Option<Value>,
    tool_call_id: Option<String>,
    compacts: bool,
    images: Option<Value>,
    created_at: DateTime<Utc>,
}

struct SideRecordRow {
    kind: String,
    task: String,
    agent: String,
    arguments: Value,
    value: Value,
    created_at: DateTime<Utc>,
}

struct ToolCallRow {
    id: String,
    task: Option<String>,
    conversation: Option<String>,
    agent: Option<String>,
    tool: String,
    arguments: Value,
    status: String,
    result: Option<String>,
    error: Option<String>,
    cached: bool,
    approval: Option<Value>,
    started_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

impl Store {
    /// A run's messages in conversation order.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn list_messages(&self, run_id: RunId) -> StoreResult<Vec<Message>> {
        let rows = sqlx::query_as!(
            MessageRow,
            r#"SELECT seq, task, coalesce(conversation, task) AS conversation, agent, role, content, tool_calls,
                      tool_call_id, compacts, images, created_at
               FROM messages WHERE run_id = $1 ORDER BY seq"#,
            run_id.0
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(MessageRow::decode).collect()
    }

    /// A run's tool calls in the order they started, with its side records among them as the
    /// calls the API lists them as ([`ToolCall::listed`]).
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn list_tool_calls(&self, run_id: RunId) -> StoreResult<Vec<ToolCall>> {
        let mut calls = self.journal_tool_calls(run_id).await?;
        let side = self.side_records(run_id).await?;
        calls.extend(side.into_iter().map(|(record, at)| ToolCall::listed(record, at)));
        // Stable: calls of one instant keep the database's order, records of it follow them.
        calls.sort_by_key(|call| call.started_at);
        Ok(calls)
    }

    /// A run's side records in the order they were written, each with when.
    pub(super) async fn side_records(&self, run_id: RunId) -> StoreResult<Vec<(SideRecord, DateTime<Utc>)>> {
        let rows = sqlx::query_as!(
            SideRecordRow,
            r#"SELECT kind, task, agent, arguments, value, created_at
                 FROM side_records WHERE run_id = $1 ORDER BY created_at, task, kind"#,
            run_id.0
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(SideRecordRow::decode).collect()
    }

    /// A run's tool calls (side records not among them) in the order they started.
    pub(super) async fn journal_tool_calls(&self, run_id: RunId) -> StoreResult<Vec<ToolCall>> {
        let rows = sqlx::query_as!(
            ToolCallRow,
            r#"SELECT id, task, coalesce(conversation, task) AS conversation, agent, tool, arguments, status, result,
                      error, cached, approval, started_at, finished_at
               FROM tool_calls WHERE run_id = $1 ORDER BY started_at, id"#,
            run_id.0
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ToolCallRow::decode).collect()
    }
}

impl MessageRow {
    fn decode(self) -> StoreResult<Message> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("message {}: {what}", self.seq));
        let conversation = self.conversation.ok_or_else(|| corrupt("no conversation (task)"))?;
        let role = [Role::System, Role::User, Role::Assistant, Role::Tool]
            .into_iter()
            .find(|role| role.as_str() == self.role)
            .ok_or_else(|| corrupt("unknown role"))?;
        let tool_calls = self.tool_calls.map(|c| decode(c, "messages.tool_calls")).transpose()?;
        let message = ChatMessage {
            role,
            content: self.content,
            tool_calls: tool_calls.unwrap_or_default(),
            tool_call_id: self.tool_call_id,
            images: self.images.map(|i| decode(i, "messages.images")).transpose()?.unwrap_or_default(),
        };
        Ok(Message {
            seq: self.seq,
            task: self.task,
            conversation,
            agent: self.agent,
            message,
            compacts: self.compacts,
            created_at: self.created_at,
        })
    }
}

impl SideRecordRow {
    fn decode(self) -> StoreResult<(SideRecord, DateTime<Utc>)> {
        let kind = SideKind::parse(&self.kind)
            .ok_or_else(|| StoreError::Corrupt(format!("side record of '{}': unknown kind", self.task)))?;
        let SideRecordRow { task, agent, arguments, value, created_at, .. } = self;
        Ok((SideRecord { kind, task, agent, arguments, value }, created_at))
    }
}

impl ToolCallRow {
    fn decode(self) -> StoreResult<ToolCall> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("tool call {}: {what}", self.id));
        let outcome = match self.status.as_str() {
            "running" => None,
            "succeeded" => Some(ToolCallOutcome::Succeeded {
                result: self.result.ok_or_else(|| corrupt("succeeded without a result"))?,
                cached: self.cached,
            }),
            "failed" => Some(ToolCallOutcome::Failed {
                error: self.error.ok_or_else(|| corrupt("failed without an error"))?,
            }),
            _ => return Err(corrupt("unknown status")),
        };
        Ok(ToolCall {
            conversation: self.conversation.ok_or_else(|| corrupt("no conversation (task)"))?,
            id: self.id,
            task: self.task,
            agent: self.agent,
            tool: self.tool,
            arguments: self.arguments,
            outcome,
            approval: self.approval.map(|a| decode(a, "tool_calls.approval")).transpose()?,
            started_at: self.started_at,
            finished_at: self.finished_at,
        })
    }
}

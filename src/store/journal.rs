//! The journal: a run's conversation messages and tool calls, as the engine recorded them.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Store, StoreResult};
use crate::domain::RunId;

/// One message of a task's conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub seq: i64,
    pub task: Option<String>,
    pub agent: Option<String>,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    pub content: Option<String>,
    /// The native tool calls an assistant message asked for.
    pub tool_calls: Option<Value>,
    /// For a `tool` message: the call it answers.
    pub tool_call_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub task: Option<String>,
    pub agent: Option<String>,
    pub tool: String,
    pub arguments: Value,
    /// `running`, `succeeded` or `failed`.
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub cached: bool,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// For a call of a tool that requires approval: where the decision stands.
    pub approval: Option<Value>,
}

impl Store {
    /// A run's messages in conversation order.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn list_messages(&self, run_id: RunId) -> StoreResult<Vec<Message>> {
        let messages = sqlx::query_as!(
            Message,
            r#"SELECT seq, task, agent, role, content, tool_calls, tool_call_id, created_at
               FROM messages WHERE run_id = $1 ORDER BY seq"#,
            run_id.0
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(messages)
    }

    /// A run's tool calls in the order they started.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn list_tool_calls(&self, run_id: RunId) -> StoreResult<Vec<ToolCall>> {
        let calls = sqlx::query_as!(
            ToolCall,
            r#"SELECT id, task, agent, tool, arguments, status, result, error, cached, started_at, finished_at,
                      approval
               FROM tool_calls WHERE run_id = $1 ORDER BY started_at, id"#,
            run_id.0
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(calls)
    }
}

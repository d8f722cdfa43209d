//! Reading a run's journal back into a [`Snapshot`]: its tasks in position order, its messages in
//! `seq` order and its tool calls in the order they started. Three queries, one per table.

use serde_json::Value;

use crate::domain::RunId;
use crate::engine::journal::{MessageRecord, Snapshot, TaskRecord, ToolCallOutcome, ToolCallRecord};
use crate::llm::{ChatMessage, Role};
use crate::store::{decode, parse, Store, StoreError, StoreResult};

struct TaskRow {
    name: String,
    status: String,
    output: Option<Value>,
}

struct MessageRow {
    seq: i64,
    task: Option<String>,
    role: String,
    content: Option<String>,
    tool_calls: Option<Value>,
    tool_call_id: Option<String>,
    compacts: bool,
    images: Option<Value>,
}

struct ToolCallRow {
    id: String,
    task: Option<String>,
    tool: String,
    arguments: Value,
    status: String,
    result: Option<String>,
    error: Option<String>,
    cached: bool,
    approval: Option<Value>,
}

/// Everything `run_id` has journaled.
pub(super) async fn snapshot(store: &Store, run_id: RunId) -> StoreResult<Snapshot> {
    let tasks = sqlx::query_as!(
        TaskRow,
        "SELECT name, status, output FROM run_tasks WHERE run_id = $1 ORDER BY position",
        run_id.0
    )
    .fetch_all(&store.pool)
    .await?;
    let messages = sqlx::query_as!(
        MessageRow,
        r#"SELECT seq, coalesce(conversation, task) AS task, role, content, tool_calls, tool_call_id, compacts, images
           FROM messages WHERE run_id = $1 ORDER BY seq"#,
        run_id.0
    )
    .fetch_all(&store.pool)
    .await?;
    let tool_calls = sqlx::query_as!(
        ToolCallRow,
        r#"SELECT id, coalesce(conversation, task) AS task, tool, arguments, status, result, error, cached, approval
           FROM tool_calls WHERE run_id = $1 ORDER BY started_at, id"#,
        run_id.0
    )
    .fetch_all(&store.pool)
    .await?;
    let spent = sqlx::query!(
        r#"SELECT prompt_tokens + completion_tokens AS "tokens!", cost_usd FROM runs WHERE id = $1"#,
        run_id.0
    )
    .fetch_optional(&store.pool)
    .await?;
    let (spent_tokens, spent_cost_usd) = spent.map_or((0, 0.0), |s| (s.tokens.max(0) as u64, s.cost_usd));
    Ok(Snapshot {
        spent_tokens,
        spent_cost_usd,
        tasks: tasks.into_iter().map(TaskRow::into_record).collect::<StoreResult<_>>()?,
        messages: messages.into_iter().map(MessageRow::into_record).collect::<StoreResult<_>>()?,
        tool_calls: tool_calls.into_iter().map(ToolCallRow::into_record).collect::<StoreResult<_>>()?,
    })
}

impl TaskRow {
    fn into_record(self) -> StoreResult<TaskRecord> {
        Ok(TaskRecord {
            status: parse(&self.status)?,
            output: self.output.map(|o| decode(o, "run_tasks.output")).transpose()?,
            name: self.name,
        })
    }
}

impl MessageRow {
    fn into_record(self) -> StoreResult<MessageRecord> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("message {}: {what}", self.seq));
        let conversation = self.task.ok_or_else(|| corrupt("no conversation (task)"))?;
        let role = role(&self.role).ok_or_else(|| corrupt("unknown role"))?;
        let tool_calls = self.tool_calls.map(|c| decode(c, "messages.tool_calls")).transpose()?;
        let message = ChatMessage {
            role,
            content: self.content,
            tool_calls: tool_calls.unwrap_or_default(),
            tool_call_id: self.tool_call_id,
            images: self.images.map(|i| decode(i, "messages.images")).transpose()?.unwrap_or_default(),
        };
        Ok(MessageRecord { conversation, message, compacts: self.compacts })
    }
}

fn role(name: &str) -> Option<Role> {
    [Role::System, Role::User, Role::Assistant, Role::Tool].into_iter().find(|role| role.as_str() == name)
}

impl ToolCallRow {
    fn into_record(self) -> StoreResult<ToolCallRecord> {
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
        Ok(ToolCallRecord {
            conversation: self.task.ok_or_else(|| corrupt("no conversation (task)"))?,
            id: self.id,
            tool: self.tool,
            arguments: self.arguments,
            outcome,
            approval: self.approval.map(|a| decode(a, "tool_calls.approval")).transpose()?,
        })
    }
}

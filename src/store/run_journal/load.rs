//! Reading a run's journal back into a [`Snapshot`]: its tasks in position order, and its messages,
//! tool calls and side records as the journal read model ([`crate::store::journal`]) decodes them for the API
//! too.

use serde_json::Value;

use crate::domain::journal::{Message, ToolCall};
use crate::domain::RunId;
use crate::engine::journal::{MessageRecord, Snapshot, TaskRecord, ToolCallRecord};
use crate::store::{decode, parse, Store, StoreResult};

struct TaskRow {
    name: String,
    status: String,
    output: Option<Value>,
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
    let messages = store.list_messages(run_id).await?;
    let tool_calls = store.journal_tool_calls(run_id).await?;
    let side_records = store.side_records(run_id).await?;
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
        messages: messages.into_iter().map(message_record).collect(),
        tool_calls: tool_calls.into_iter().map(tool_call_record).collect(),
        side_records: side_records.into_iter().map(|(record, _)| record).collect(),
    })
}

/// A message as the engine resumes from it.
fn message_record(message: Message) -> MessageRecord {
    let conversation = message.conversation.into();
    MessageRecord { conversation, message: message.message, compacts: message.compacts }
}

/// A tool call as the engine resumes from it.
fn tool_call_record(call: ToolCall) -> ToolCallRecord {
    let ToolCall { id, conversation, tool, arguments, outcome, approval, .. } = call;
    ToolCallRecord { id: id.into(), conversation: conversation.into(), tool, arguments, outcome, approval }
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

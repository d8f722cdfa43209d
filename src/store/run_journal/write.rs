//! The statements of a journal commit, each for one part of a [`Step`](crate::engine::journal::Step)
//! and each skipped when its part is empty. Rows go in batches (`UNNEST`), so a part costs one
//! round trip however many rows it has; events too, through [`append_events_tx`] (which owns the
//! per-run `seq`).

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};

use super::CommitError;
use crate::domain::{RunId, TaskStatus};
use crate::engine::journal::{
    NewEvent, NewMessage, RunChange, TaskChange, ToolCallEnd, ToolCallOutcome, ToolCallStart, UsageDelta,
};
use crate::store::events::append_events_tx;

type Tx<'c> = Transaction<'c, Postgres>;
type WriteResult = Result<(), CommitError>;

/// Append messages after the run's last one (`seq` stays dense: the run row is locked).
pub(super) async fn messages(
    tx: &mut Tx<'_>,
    run_id: RunId,
    attempt: i32,
    messages: &[NewMessage],
) -> WriteResult {
    if messages.is_empty() {
        return Ok(());
    }
    let conversations: Vec<&str> = messages.iter().map(|m| m.conversation.as_str()).collect();
    let tasks: Vec<&str> = messages.iter().map(|m| m.task.as_str()).collect();
    let agents: Vec<&str> = messages.iter().map(|m| m.agent.as_str()).collect();
    let roles: Vec<&str> = messages.iter().map(|m| m.message.role.as_str()).collect();
    let contents: Vec<Option<&str>> = messages.iter().map(|m| m.message.content.as_deref()).collect();
    let tool_calls = messages
        .iter()
        .map(|m| (!m.message.tool_calls.is_empty()).then(|| to_json(&m.message.tool_calls)).transpose())
        .collect::<Result<Vec<Option<Value>>, _>>()?;
    let tool_call_ids: Vec<Option<&str>> =
        messages.iter().map(|m| m.message.tool_call_id.as_deref()).collect();
    let compacts: Vec<bool> = messages.iter().map(|m| m.compacts).collect();
    let images = messages
        .iter()
        .map(|m| (!m.message.images.is_empty()).then(|| to_json(&m.message.images)).transpose())
        .collect::<Result<Vec<Option<Value>>, _>>()?;
    sqlx::query!(
        r#"INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, tool_calls, tool_call_id,
                                compacts, images, attempt)
           SELECT $1, last.seq + m.n, m.conversation, m.task, m.agent, m.role, m.content, m.tool_calls,
                  m.tool_call_id, m.compacts, m.images, $2
             FROM (SELECT coalesce(max(seq), 0) AS seq FROM messages WHERE run_id = $1) AS last,
                  UNNEST($3::text[], $10::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::text[],
                         $9::bool[], $11::jsonb[])
                  WITH ORDINALITY AS m(conversation, task, agent, role, content, tool_calls, tool_call_id,
                                       compacts, images, n)"#,
        run_id.0,
        attempt,
        &conversations as &[&str],
        &agents as &[&str],
        &roles as &[&str],
        &contents as &[Option<&str>],
        &tool_calls as &[Option<Value>],
        &tool_call_ids as &[Option<&str>],
        &compacts,
        &tasks as &[&str],
        &images as &[Option<Value>],
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Record tool calls as `running`. A call already journaled as `running` (interrupted by a crash
/// and now run again) starts afresh under this attempt; reusing the id of a finished call is an
/// error.
pub(super) async fn tool_starts(
    tx: &mut Tx<'_>,
    run_id: RunId,
    attempt: i32,
    starts: &[ToolCallStart],
) -> WriteResult {
    if starts.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = starts.iter().map(|s| s.id.as_str()).collect();
    if let Some(id) = ids.iter().enumerate().find_map(|(i, id)| ids[..i].contains(id).then_some(id)) {
        return Err(CommitError::Rejected(format!("tool call '{id}' starts twice in one step")));
    }
    let conversations: Vec<&str> = starts.iter().map(|s| s.conversation.as_str()).collect();
    let tasks: Vec<&str> = starts.iter().map(|s| s.task.as_str()).collect();
    let agents: Vec<&str> = starts.iter().map(|s| s.agent.as_str()).collect();
    let tools: Vec<&str> = starts.iter().map(|s| s.tool.as_str()).collect();
    let arguments: Vec<Value> = starts.iter().map(|s| s.arguments.clone()).collect();
    let written = sqlx::query!(
        r#"INSERT INTO tool_calls (run_id, id, conversation, task, agent, tool, arguments, attempt)
           SELECT $1, c.id, c.conversation, c.task, c.agent, c.tool, c.arguments, $2
             FROM UNNEST($3::text[], $4::text[], $8::text[], $5::text[], $6::text[], $7::jsonb[])
                  AS c(id, conversation, task, agent, tool, arguments)
           ON CONFLICT (run_id, id) DO UPDATE
              SET conversation = EXCLUDED.conversation, task = EXCLUDED.task, agent = EXCLUDED.agent,
                  tool = EXCLUDED.tool,
                  arguments = EXCLUDED.arguments, attempt = EXCLUDED.attempt, started_at = now()
            WHERE tool_calls.status = 'running'"#,
        run_id.0,
        attempt,
        &ids as &[&str],
        &conversations as &[&str],
        &agents as &[&str],
        &tools as &[&str],
        &arguments,
        &tasks as &[&str],
    )
    .execute(&mut **tx)
    .await?;
    expect_rows(written.rows_affected(), ids.len(), "a tool call id of this step belongs to a finished call")
}

/// Finish tool calls (the last end of an id in the step wins).
pub(super) async fn tool_ends(tx: &mut Tx<'_>, run_id: RunId, ends: &[ToolCallEnd]) -> WriteResult {
    if ends.is_empty() {
        return Ok(());
    }
    let ends = last_per_key(ends, |e| e.id.as_str());
    let ids: Vec<&str> = ends.iter().map(|e| e.id.as_str()).collect();
    let (mut statuses, mut results, mut errors, mut cached) = (vec![], vec![], vec![], vec![]);
    for end in &ends {
        let (status, result, error, was_cached) = match &end.outcome {
            ToolCallOutcome::Succeeded { result, cached } => {
                ("succeeded", Some(result.as_str()), None, *cached)
            }
            ToolCallOutcome::Failed { error } => ("failed", None, Some(error.as_str()), false),
        };
        statuses.push(status);
        results.push(result);
        errors.push(error);
        cached.push(was_cached);
    }
    let written = sqlx::query!(
        r#"UPDATE tool_calls AS t
              SET status = e.status, result = e.result, error = e.error, cached = e.cached, finished_at = now()
             FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::bool[])
                  AS e(id, status, result, error, cached)
            WHERE t.run_id = $1 AND t.id = e.id"#,
        run_id.0,
        &ids as &[&str],
        &statuses as &[&str],
        &results as &[Option<&str>],
        &errors as &[Option<&str>],
        &cached,
    )
    .execute(&mut **tx)
    .await?;
    expect_rows(written.rows_affected(), ids.len(), "a tool call of this step never started")
}

/// A task's state after all of its changes in one step.
struct TaskUpdate<'a> {
    name: &'a str,
    status: TaskStatus,
    output: Option<Value>,
    error: Option<Value>,
}

/// Apply task changes, folded per task first (a task may start and finish in one step).
/// `started_at` is set on a task's first change; `finished_at` when it completes or fails (and
/// cleared should it start again); the error is that of the last failure, if it is failed.
pub(super) async fn task_changes(tx: &mut Tx<'_>, run_id: RunId, changes: &[TaskChange]) -> WriteResult {
    if changes.is_empty() {
        return Ok(());
    }
    let (mut names, mut statuses, mut outputs, mut errors) = (vec![], vec![], vec![], vec![]);
    for update in fold_task_changes(changes)? {
        names.push(update.name);
        statuses.push(update.status.as_str());
        outputs.push(update.output);
        errors.push(update.error);
    }
    let written = sqlx::query!(
        r#"UPDATE run_tasks AS t
              SET status = c.status,
                  output = coalesce(c.output, t.output),
                  error = c.error,
                  started_at = coalesce(t.started_at, now()),
                  finished_at = CASE WHEN c.status = 'running' THEN NULL ELSE now() END
             FROM UNNEST($2::text[], $3::text[], $4::jsonb[], $5::jsonb[]) AS c(name, status, output, error)
            WHERE t.run_id = $1 AND t.name = c.name"#,
        run_id.0,
        &names as &[&str],
        &statuses as &[&str],
        &outputs as &[Option<Value>],
        &errors as &[Option<Value>],
    )
    .execute(&mut **tx)
    .await?;
    expect_rows(written.rows_affected(), names.len(), "a task of this step is not one of the run's")
}

fn fold_task_changes(changes: &[TaskChange]) -> Result<Vec<TaskUpdate<'_>>, CommitError> {
    let mut updates: Vec<TaskUpdate<'_>> = Vec::new();
    for change in changes {
        let (name, status, output, error) = match change {
            TaskChange::Started { task } => (task, TaskStatus::Running, None, None),
            TaskChange::AwaitingReview { task, output } => {
                (task, TaskStatus::Running, Some(to_json(output)?), None)
            }
            TaskChange::Completed { task, output } => {
                (task, TaskStatus::Completed, Some(to_json(output)?), None)
            }
            TaskChange::Failed { task, error } => {
                (task, TaskStatus::Failed, None, Some(json!({ "message": error })))
            }
        };
        let update = TaskUpdate { name, status, output, error };
        match updates.iter_mut().find(|u| u.name == name) {
            Some(earlier) => {
                *earlier = TaskUpdate { output: update.output.or(earlier.output.take()), ..update }
            }
            None => updates.push(update),
        }
    }
    Ok(updates)
}

/// Add the usage and, when the run ends, record its outcome and release its lease.
pub(super) async fn run_change_and_usage(
    tx: &mut Tx<'_>,
    run_id: RunId,
    change: Option<&RunChange>,
    usage: UsageDelta,
) -> WriteResult {
    if change.is_none() && usage == UsageDelta::default() {
        return Ok(());
    }
    let (status, output, error) = match change {
        None => (None, None, None),
        Some(RunChange::AwaitingInput) => (Some("awaiting_input"), None, None),
        Some(RunChange::Completed { output }) => (Some("completed"), Some(to_json(output)?), None),
        Some(RunChange::Failed { error }) => (Some("failed"), None, Some(to_json(error)?)),
    };
    sqlx::query!(
        r#"UPDATE runs
              SET llm_calls = llm_calls + $2, prompt_tokens = prompt_tokens + $3,
                  completion_tokens = completion_tokens + $4, tool_calls = tool_calls + $5,
                  -- A cancellation requested meanwhile wins over a pause for human input.
                  status = CASE WHEN status = 'cancelling' AND $6 = 'awaiting_input' THEN status
                                ELSE coalesce($6, status) END,
                  output = coalesce($7, output),
                  error = coalesce($8, error),
                  finished_at = CASE WHEN $6::text IN ('completed', 'failed', 'cancelled') THEN now()
                                     ELSE finished_at END,
                  lease_owner = CASE WHEN $6::text IS NULL OR (status = 'cancelling' AND $6 = 'awaiting_input')
                                     THEN lease_owner END,
                  lease_expires_at = CASE WHEN $6::text IS NULL OR (status = 'cancelling' AND $6 = 'awaiting_input')
                                          THEN lease_expires_at END,
                  updated_at = now()
            WHERE id = $1"#,
        run_id.0,
        usage.llm_calls,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.tool_calls,
        status,
        output,
        error,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Append the step's events in order.
pub(super) async fn events(tx: &mut Tx<'_>, run_id: RunId, events: &[NewEvent]) -> WriteResult {
    if !events.is_empty() {
        append_events_tx(tx, run_id, events).await?;
    }
    Ok(())
}

/// The items with distinct keys, in order of first appearance, each the last of its key.
fn last_per_key<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<&T> {
    let mut kept: Vec<&T> = Vec::with_capacity(items.len());
    for item in items {
        match kept.iter_mut().find(|k| key(k) == key(item)) {
            Some(earlier) => *earlier = item,
            None => kept.push(item),
        }
    }
    kept
}

fn expect_rows(written: u64, expected: usize, otherwise: &str) -> WriteResult {
    if written == expected as u64 {
        Ok(())
    } else {
        Err(CommitError::Rejected(otherwise.to_owned()))
    }
}

fn to_json(value: &impl Serialize) -> Result<Value, CommitError> {
    serde_json::to_value(value)
        .map_err(|e| CommitError::Rejected(format!("a step value does not serialize: {e}")))
}

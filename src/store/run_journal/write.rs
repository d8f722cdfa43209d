//! The statements of a journal commit, for a batch of steps of different runs (see
//! [`group`](crate::store::group)): one statement per part (messages, tool-call starts and ends,
//! task changes, the runs with their events), each covering every step of the batch and skipped
//! when no step has that part. Rows go in as arrays (`UNNEST`), so a part costs one round trip
//! however many rows and runs it has. Every join with such an array also says `= ANY` of the
//! array's run ids, so the planner looks the rows up by index even when its statistics still
//! think the table small (a hash join would read the whole table on every commit). A part that contradicts the journal (an unknown task, a tool
//! call that never started) refuses its step alone: the batch is retried without it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{Answer, Commit, CommitError};
use crate::domain::{RunStatus, TaskStatus, UsageLine};
use crate::engine::journal::{RunChange, SideRecord, TaskChange, ToolCallOutcome};
use crate::store::group::Failure;
use crate::store::parse;

type Tx<'c> = Transaction<'c, Postgres>;
type WriteResult = Result<(), Failure<Answer>>;

/// A step of the batch whose run this attempt still holds, with its index in the batch.
pub(super) type Live<'a> = (usize, &'a Commit);

/// Refuse a step that contradicts itself before anything is written.
pub(super) fn check(commit: &Commit) -> Result<(), CommitError> {
    let ids: Vec<&str> = commit.step.tool_starts.iter().map(|s| s.id.as_str()).collect();
    match ids.iter().enumerate().find_map(|(i, id)| ids[..i].contains(id).then_some(id)) {
        Some(id) => Err(CommitError::Rejected(format!("tool call '{id}' starts twice in one step"))),
        None => Ok(()),
    }
}

/// Lock the batch's runs (in id order, as every grouped writer does, so two batches never
/// deadlock) and tell, per step, whether its attempt may still write: the run exists, no later
/// claim took it, it is not finished, and it was not put back in the queue.
pub(super) async fn fence(tx: &mut Tx<'_>, commits: &[Commit]) -> Result<Vec<bool>, Failure<Answer>> {
    let ids: Vec<Uuid> = commits.iter().map(|c| c.run_id.0).collect();
    let rows =
        sqlx::query!("SELECT id, attempt, status FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE", &ids)
            .fetch_all(&mut **tx)
            .await?;
    let mut holds = HashMap::new();
    for row in rows {
        let status: RunStatus = parse(&row.status)?;
        holds.insert(
            row.id,
            (row.attempt, !status.is_terminal() && !matches!(status, RunStatus::Queued | RunStatus::Waiting)),
        );
    }
    Ok(commits
        .iter()
        .map(|c| holds.get(&c.run_id.0).is_some_and(|&(attempt, open)| open && attempt == c.attempt))
        .collect())
}

/// Append messages after each run's last one (`seq` stays dense: the run rows are locked).
pub(super) async fn messages(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let (mut runs, mut attempts, mut ordinals) = (vec![], vec![], vec![]);
    let (mut conversations, mut tasks, mut agents, mut roles) = (vec![], vec![], vec![], vec![]);
    let (mut contents, mut tool_calls, mut tool_call_ids, mut compacts, mut images) =
        (vec![], vec![], vec![], vec![], vec![]);
    for &(index, commit) in live {
        for (n, m) in commit.step.messages.iter().enumerate() {
            runs.push(commit.run_id.0);
            attempts.push(commit.attempt);
            ordinals.push(n as i64 + 1);
            conversations.push(m.conversation.as_str());
            tasks.push(m.task.as_str());
            agents.push(m.agent.as_str());
            roles.push(m.message.role.as_str());
            contents.push(m.message.content.as_deref());
            let calls = &m.message.tool_calls;
            tool_calls.push((!calls.is_empty()).then(|| to_json(index, calls)).transpose()?);
            tool_call_ids.push(m.message.tool_call_id.as_deref());
            compacts.push(m.compacts);
            let pictures = &m.message.images;
            images.push((!pictures.is_empty()).then(|| to_json(index, pictures)).transpose()?);
        }
    }
    if runs.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        r#"INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, tool_calls, tool_call_id,
                                compacts, images, attempt)
           SELECT m.run_id, last.seq + m.n, m.conversation, m.task, m.agent, m.role, m.content, m.tool_calls,
                  m.tool_call_id, m.compacts, m.images, m.attempt
             FROM UNNEST($1::uuid[], $2::int4[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[],
                         $8::text[], $9::jsonb[], $10::text[], $11::bool[], $12::jsonb[])
                  AS m(run_id, attempt, n, conversation, task, agent, role, content, tool_calls, tool_call_id,
                       compacts, images)
                  CROSS JOIN LATERAL (SELECT coalesce(max(seq), 0) AS seq FROM messages WHERE run_id = m.run_id)
                  AS last"#,
        &runs,
        &attempts,
        &ordinals,
        &conversations as &[&str],
        &tasks as &[&str],
        &agents as &[&str],
        &roles as &[&str],
        &contents as &[Option<&str>],
        &tool_calls as &[Option<Value>],
        &tool_call_ids as &[Option<&str>],
        &compacts,
        &images as &[Option<Value>],
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Tool calls' ends as their rows keep them, one array per column: status, result, error,
/// cached (a call still running has status `running` and nothing else).
#[derive(Default)]
struct EndColumns<'a> {
    statuses: Vec<&'static str>,
    results: Vec<Option<&'a str>>,
    errors: Vec<Option<&'a str>>,
    cached: Vec<bool>,
}

impl<'a> EndColumns<'a> {
    fn push(&mut self, outcome: Option<&'a ToolCallOutcome>) {
        let (status, result, error, cached) = match outcome {
            None => ("running", None, None, false),
            Some(ToolCallOutcome::Succeeded { result, cached }) => {
                ("succeeded", Some(result.as_str()), None, *cached)
            }
            Some(ToolCallOutcome::Failed { error }) => ("failed", None, Some(error.as_str()), false),
        };
        self.statuses.push(status);
        self.results.push(result);
        self.errors.push(error);
        self.cached.push(cached);
    }
}

/// Does the step end the call it starts as `id` (then the row is written finished at once)?
fn ends_in_step<'c>(commit: &'c Commit, id: &str) -> Option<&'c ToolCallOutcome> {
    commit.step.tool_ends.iter().rev().find(|end| end.id == id).map(|end| &end.outcome)
}

/// Record tool calls as `running`, or as finished when the same step ends them. A call already
/// journaled as `running` (interrupted by a crash and now run again) starts afresh under this
/// attempt; reusing the id of a finished call refuses the step.
pub(super) async fn tool_starts(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let (mut runs, mut attempts, mut ids, mut conversations) = (vec![], vec![], vec![], vec![]);
    let (mut tasks, mut agents, mut tools, mut arguments) = (vec![], vec![], vec![], vec![]);
    let mut approvals: Vec<Option<Value>> = Vec::new();
    let mut ends = EndColumns::default();
    for &(_, commit) in live {
        for start in &commit.step.tool_starts {
            runs.push(commit.run_id.0);
            attempts.push(commit.attempt);
            ids.push(start.id.as_str());
            conversations.push(start.conversation.as_str());
            tasks.push(start.task.as_str());
            agents.push(start.agent.as_str());
            tools.push(start.tool.as_str());
            arguments.push(start.arguments.clone());
            approvals.push(start.approval.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            ends.push(ends_in_step(commit, &start.id));
        }
    }
    if runs.is_empty() {
        return Ok(());
    }
    let written = sqlx::query_scalar!(
        r#"INSERT INTO tool_calls (run_id, id, conversation, task, agent, tool, arguments, attempt,
                                  status, result, error, cached, finished_at, approval)
           SELECT c.run_id, c.id, c.conversation, c.task, c.agent, c.tool, c.arguments, c.attempt,
                  c.status, c.result, c.error, c.cached, CASE WHEN c.status <> 'running' THEN now() END,
                  c.approval
             FROM UNNEST($1::uuid[], $2::int4[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                         $8::jsonb[], $9::text[], $10::text[], $11::text[], $12::bool[], $13::jsonb[])
                  AS c(run_id, attempt, id, conversation, task, agent, tool, arguments, status, result, error,
                       cached, approval)
           ON CONFLICT (run_id, id) DO UPDATE
              SET conversation = EXCLUDED.conversation, task = EXCLUDED.task, agent = EXCLUDED.agent,
                  tool = EXCLUDED.tool, arguments = EXCLUDED.arguments, attempt = EXCLUDED.attempt,
                  started_at = now(), status = EXCLUDED.status, result = EXCLUDED.result,
                  error = EXCLUDED.error, cached = EXCLUDED.cached, finished_at = EXCLUDED.finished_at,
                  approval = EXCLUDED.approval
            WHERE tool_calls.status = 'running'
           RETURNING run_id"#,
        &runs,
        &attempts,
        &ids as &[&str],
        &conversations as &[&str],
        &tasks as &[&str],
        &agents as &[&str],
        &tools as &[&str],
        &arguments,
        &ends.statuses as &[&str],
        &ends.results as &[Option<&str>],
        &ends.errors as &[Option<&str>],
        &ends.cached,
        &approvals as &[Option<Value>],
    )
    .fetch_all(&mut **tx)
    .await?;
    let refused = "a tool call id of this step belongs to a finished call";
    expect_rows(live, &written, |c| c.step.tool_starts.len(), refused)
}

/// Write the side records of the steps (what their task starts found); a task's record of a kind
/// is written once, and a step that writes it again is refused.
pub(super) async fn side_records(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let records: Vec<(&Commit, &SideRecord)> = live
        .iter()
        .flat_map(|&(_, commit)| commit.step.side_records.iter().map(move |record| (commit, record)))
        .collect();
    if records.is_empty() {
        return Ok(());
    }
    let runs: Vec<Uuid> = records.iter().map(|(commit, _)| commit.run_id.0).collect();
    let attempts: Vec<i32> = records.iter().map(|(commit, _)| commit.attempt).collect();
    let kinds: Vec<&str> = records.iter().map(|(_, record)| record.kind.as_str()).collect();
    let tasks: Vec<&str> = records.iter().map(|(_, record)| record.task.as_str()).collect();
    let agents: Vec<&str> = records.iter().map(|(_, record)| record.agent.as_str()).collect();
    let arguments: Vec<Value> = records.iter().map(|(_, record)| record.arguments.clone()).collect();
    let values: Vec<Value> = records.iter().map(|(_, record)| record.value.clone()).collect();
    let written = sqlx::query_scalar!(
        r#"INSERT INTO side_records (run_id, attempt, kind, task, agent, arguments, value)
           SELECT * FROM UNNEST($1::uuid[], $2::int4[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                                $7::jsonb[])
           ON CONFLICT (run_id, task, kind) DO NOTHING
           RETURNING run_id"#,
        &runs,
        &attempts,
        &kinds as &[&str],
        &tasks as &[&str],
        &agents as &[&str],
        &arguments,
        &values,
    )
    .fetch_all(&mut **tx)
    .await?;
    let refused = "a side record of this step was written before";
    expect_rows(live, &written, |c| c.step.side_records.len(), refused)
}

/// Finish tool calls started in earlier steps (the last end of an id in a step wins; calls the
/// step also starts were written finished by [`tool_starts`]).
pub(super) async fn tool_ends(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let (mut runs, mut ids, mut columns) = (vec![], vec![], EndColumns::default());
    let mut expected: HashMap<Uuid, usize> = HashMap::new();
    for &(_, commit) in live {
        let started = |id: &str| commit.step.tool_starts.iter().any(|s| s.id == id);
        let ends = last_per_key(&commit.step.tool_ends, |e| e.id.as_str());
        let ends: Vec<_> = ends.into_iter().filter(|end| !started(&end.id)).collect();
        expected.insert(commit.run_id.0, ends.len());
        for end in ends {
            runs.push(commit.run_id.0);
            ids.push(end.id.as_str());
            columns.push(Some(&end.outcome));
        }
    }
    if runs.is_empty() {
        return Ok(());
    }
    let written = sqlx::query_scalar!(
        r#"UPDATE tool_calls AS t
              SET status = e.status, result = e.result, error = e.error, cached = e.cached, finished_at = now()
             FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[])
                  AS e(run_id, id, status, result, error, cached)
            WHERE t.run_id = e.run_id AND t.id = e.id AND t.run_id = ANY($1)
           RETURNING t.run_id"#,
        &runs,
        &ids as &[&str],
        &columns.statuses as &[&str],
        &columns.results as &[Option<&str>],
        &columns.errors as &[Option<&str>],
        &columns.cached,
    )
    .fetch_all(&mut **tx)
    .await?;
    let refused = "a tool call of this step never started";
    expect_rows(live, &written, |c| expected.get(&c.run_id.0).copied().unwrap_or(0), refused)
}

/// A task's state after all of its changes in one step.
struct TaskUpdate<'a> {
    name: &'a str,
    status: TaskStatus,
    output: Option<Value>,
    error: Option<Value>,
}

/// Apply task changes, folded per task of a step first (a task may start and finish in one step).
/// `started_at` is set on a task's first change; `finished_at` when it completes or fails (and
/// cleared should it start again); the error is that of the last failure, if it is failed.
pub(super) async fn task_changes(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let (mut runs, mut names, mut statuses, mut outputs, mut errors) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut expected: HashMap<Uuid, usize> = HashMap::new();
    for &(index, commit) in live {
        let updates = fold_task_changes(&commit.step.tasks).map_err(|e| Failure::Item(index, Err(e)))?;
        expected.insert(commit.run_id.0, updates.len());
        for update in updates {
            runs.push(commit.run_id.0);
            names.push(update.name);
            statuses.push(update.status.as_str());
            outputs.push(update.output);
            errors.push(update.error);
        }
    }
    if runs.is_empty() {
        return Ok(());
    }
    let written = sqlx::query_scalar!(
        r#"UPDATE run_tasks AS t
              SET status = c.status,
                  output = coalesce(c.output, t.output),
                  error = c.error,
                  started_at = coalesce(t.started_at, now()),
                  finished_at = CASE WHEN c.status = 'running' THEN NULL ELSE now() END
             FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::jsonb[])
                  AS c(run_id, name, status, output, error)
            WHERE t.run_id = c.run_id AND t.name = c.name AND t.run_id = ANY($1)
           RETURNING t.run_id"#,
        &runs,
        &names as &[&str],
        &statuses as &[&str],
        &outputs as &[Option<Value>],
        &errors as &[Option<Value>],
    )
    .fetch_all(&mut **tx)
    .await?;
    let refused = "a task of this step is not one of the run's";
    expect_rows(live, &written, |c| expected.get(&c.run_id.0).copied().unwrap_or(0), refused)
}

fn fold_task_changes(changes: &[TaskChange]) -> Result<Vec<TaskUpdate<'_>>, CommitError> {
    let mut updates: Vec<TaskUpdate<'_>> = Vec::new();
    for change in changes {
        let (name, status, output, error) = match change {
            TaskChange::Started { task } => (task, TaskStatus::Running, None, None),
            TaskChange::AwaitingReview { task, output } => {
                (task, TaskStatus::Running, Some(value(output)?), None)
            }
            TaskChange::Completed { task, output } => {
                (task, TaskStatus::Completed, Some(value(output)?), None)
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

/// Per run: add the usage (and its split by task, agent and model), record its end (releasing
/// its lease) when it ends, and append its events in order after its last one, taking their
/// `seq`s from the run's `last_seq` counter.
pub(super) async fn runs_and_events(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let (mut runs, mut llm_calls, mut prompt_tokens, mut completion_tokens) =
        (vec![], vec![], vec![], vec![]);
    let (mut cached_tokens, mut estimated_tokens, mut costs) = (vec![], vec![], vec![]);
    let mut spend: Vec<(Uuid, UsageLine)> = Vec::new();
    let (mut tool_calls, mut statuses, mut outputs, mut errors, mut counts) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut event_runs, mut ordinals, mut types, mut tasks, mut agents, mut data) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for &(index, commit) in live {
        let step = &commit.step;
        let (status, output, error) = match &step.run {
            None => (None, None, None),
            Some(RunChange::AwaitingInput) => (Some("awaiting_input"), None, None),
            Some(RunChange::Completed { output }) => (Some("completed"), Some(to_json(index, output)?), None),
            Some(RunChange::Failed { error }) => (Some("failed"), None, Some(to_json(index, error)?)),
        };
        runs.push(commit.run_id.0);
        llm_calls.push(step.usage.llm_calls);
        prompt_tokens.push(step.usage.prompt_tokens);
        completion_tokens.push(step.usage.completion_tokens);
        tool_calls.push(step.usage.tool_calls);
        cached_tokens.push(step.usage.cached_tokens);
        estimated_tokens.push(step.usage.estimated_tokens);
        costs.push(step.usage.cost_usd);
        for line in &step.spend {
            // One row per key and statement: lines of one key in two steps are added up.
            let run = commit.run_id.0;
            match spend.iter_mut().find(|(r, l)| *r == run && l.same_key(line)) {
                Some((_, existing)) => existing.add(line),
                None => spend.push((run, line.clone())),
            }
        }
        statuses.push(status);
        outputs.push(output);
        errors.push(error);
        counts.push(step.events.len() as i64);
        for (n, event) in step.events.iter().enumerate() {
            event_runs.push(commit.run_id.0);
            ordinals.push(n as i64 + 1);
            types.push(event.event_type.as_str());
            tasks.push(event.task.as_deref());
            agents.push(event.agent.as_deref());
            data.push(event.data.clone());
        }
    }
    sqlx::query!(
        r#"WITH changed AS (
               UPDATE runs AS r
                  SET llm_calls = r.llm_calls + u.llm_calls, prompt_tokens = r.prompt_tokens + u.prompt_tokens,
                      completion_tokens = r.completion_tokens + u.completion_tokens,
                      tool_calls = r.tool_calls + u.tool_calls,
                      cached_tokens = r.cached_tokens + u.cached_tokens, cost_usd = r.cost_usd + u.cost_usd,
                      estimated_tokens = r.estimated_tokens + u.estimated_tokens,
                      -- A cancellation requested meanwhile wins over a pause for human input.
                      status = CASE WHEN r.status = 'cancelling' AND u.status = 'awaiting_input' THEN r.status
                                    ELSE coalesce(u.status, r.status) END,
                      output = coalesce(u.output, r.output),
                      error = coalesce(u.error, r.error),
                      finished_at = CASE WHEN u.status IN ('completed', 'failed', 'cancelled') THEN now()
                                         ELSE r.finished_at END,
                      lease_owner = CASE WHEN u.status IS NULL
                                              OR (r.status = 'cancelling' AND u.status = 'awaiting_input')
                                         THEN r.lease_owner END,
                      lease_expires_at = CASE WHEN u.status IS NULL
                                                   OR (r.status = 'cancelling' AND u.status = 'awaiting_input')
                                              THEN r.lease_expires_at END,
                      last_seq = r.last_seq + u.events,
                      updated_at = now()
                 FROM UNNEST($1::uuid[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::text[], $7::jsonb[],
                             $8::jsonb[], $9::int8[], $16::int8[], $17::float8[], $27::int8[])
                      AS u(id, llm_calls, prompt_tokens, completion_tokens, tool_calls, status, output, error,
                           events, cached_tokens, cost_usd, estimated_tokens)
                WHERE r.id = u.id AND r.id = ANY($1)
            RETURNING r.id, r.last_seq - u.events AS base, r.tenant,
                      u.prompt_tokens + u.completion_tokens AS tokens, u.cost_usd AS cost
           ),
           -- The daily ledger of a tenant with a daily cap (no other tenant's commit touches it).
           ledger AS (
               INSERT INTO tenant_spend AS s (tenant, day, tokens, cost_usd)
               SELECT c.tenant, (now() AT TIME ZONE 'UTC')::date, sum(c.tokens)::int8, sum(c.cost)
                 FROM changed AS c JOIN tenants AS t ON t.name = c.tenant
                WHERE (c.tokens > 0 OR c.cost > 0)
                  AND (t.max_tokens_per_day IS NOT NULL OR t.max_cost_usd_per_day IS NOT NULL)
                GROUP BY c.tenant
               ON CONFLICT (tenant, day) DO UPDATE
                  SET tokens = s.tokens + excluded.tokens, cost_usd = s.cost_usd + excluded.cost_usd
           ),
           spent AS (
               INSERT INTO run_usage AS s (run_id, task, agent, model, llm_calls, prompt_tokens, completion_tokens,
                                           cached_tokens, cost_usd)
               SELECT * FROM UNNEST($18::uuid[], $19::text[], $20::text[], $21::text[], $22::int8[], $23::int8[],
                                    $24::int8[], $25::int8[], $26::float8[])
               ON CONFLICT (run_id, task, agent, model) DO UPDATE
                  SET llm_calls = s.llm_calls + excluded.llm_calls,
                      prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
                      completion_tokens = s.completion_tokens + excluded.completion_tokens,
                      cached_tokens = s.cached_tokens + excluded.cached_tokens,
                      cost_usd = s.cost_usd + excluded.cost_usd
           )
           INSERT INTO events (run_id, seq, type, task, agent, data)
           SELECT e.run_id, changed.base + e.n, e.type, e.task, e.agent, e.data
             FROM UNNEST($10::uuid[], $11::int8[], $12::text[], $13::text[], $14::text[], $15::jsonb[])
                  WITH ORDINALITY AS e(run_id, n, type, task, agent, data, position)
                  JOIN changed ON changed.id = e.run_id
            ORDER BY e.position"#,
        &runs,
        &llm_calls,
        &prompt_tokens,
        &completion_tokens,
        &tool_calls,
        &statuses as &[Option<&str>],
        &outputs as &[Option<Value>],
        &errors as &[Option<Value>],
        &counts,
        &event_runs,
        &ordinals,
        &types as &[&str],
        &tasks as &[Option<&str>],
        &agents as &[Option<&str>],
        &data,
        &cached_tokens,
        &costs,
        &spend.iter().map(|(run, _)| *run).collect::<Vec<Uuid>>(),
        &spend.iter().map(|(_, l)| l.task.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.agent.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.model.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.llm_calls).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.prompt_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.completion_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.cached_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.cost_usd).collect::<Vec<f64>>(),
        &estimated_tokens,
    )
    .execute(&mut **tx)
    .await?;
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

/// Refuse the first step for which a statement touched another number of rows than it should.
fn expect_rows(
    live: &[Live<'_>],
    written: &[Uuid],
    expected: impl Fn(&Commit) -> usize,
    otherwise: &str,
) -> WriteResult {
    let mut counts: HashMap<Uuid, usize> = HashMap::new();
    for run in written {
        *counts.entry(*run).or_default() += 1;
    }
    match live.iter().find(|(_, c)| counts.get(&c.run_id.0).copied().unwrap_or(0) != expected(c)) {
        Some(&(index, _)) => Err(Failure::Item(index, Err(CommitError::Rejected(otherwise.to_owned())))),
        None => Ok(()),
    }
}

fn value(value: &impl Serialize) -> Result<Value, CommitError> {
    serde_json::to_value(value)
        .map_err(|e| CommitError::Rejected(format!("a step value does not serialize: {e}")))
}

/// `value`, refusing step `index` when it does not serialize.
fn to_json(index: usize, v: &impl Serialize) -> Result<Value, Failure<Answer>> {
    value(v).map_err(|e| Failure::Item(index, Err(e)))
}

/// Save the memories of the batch's completed tasks (with their tasks' commit: a task's items
/// are saved once, or not at all).
pub(super) async fn memories(tx: &mut Tx<'_>, live: &[Live<'_>]) -> WriteResult {
    let memories = live.iter().flat_map(|&(_, commit)| &commit.step.memories);
    let (mut ids, mut tenants, mut scopes, mut kinds, mut texts) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut runs, mut tasks, mut agents) = (vec![], vec![], vec![]);
    for memory in memories {
        ids.push(memory.id.0);
        tenants.push(memory.tenant.as_str());
        scopes.push(memory.scope.as_str());
        kinds.push(<&str>::from(memory.kind));
        texts.push(memory.text.as_str());
        runs.push(memory.run_id.map(uuid::Uuid::from));
        tasks.push(memory.task.as_deref());
        agents.push(memory.agent.as_deref());
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        r#"INSERT INTO memories (id, tenant, scope, kind, text, run_id, task, agent)
           SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::uuid[],
                                $7::text[], $8::text[])
           ON CONFLICT (id) DO NOTHING"#,
        &ids,
        &tenants as &[&str],
        &scopes as &[&str],
        &kinds as &[&str],
        &texts as &[&str],
        &runs as &[Option<Uuid>],
        &tasks as &[Option<&str>],
        &agents as &[Option<&str>],
    )
    .execute(&mut **tx)
    .await?;
    let all: Vec<&crate::domain::memory::NewMemory> =
        live.iter().flat_map(|&(_, commit)| &commit.step.memories).collect();
    crate::store::vectors::write_memory_vectors(tx, &all).await?;
    Ok(())
}

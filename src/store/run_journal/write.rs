//! The journal's write of a batch of steps of different runs (see [`group`](crate::store::group)):
//! the steps are fenced and all of their parts (messages, tool-call starts and ends, side records,
//! task changes, the runs with their usage and events) written by one call of the database
//! function `agentd_journal_write` (`src/store/sql/agentd_journal_write.sql`), one round trip
//! however many steps, rows and runs the batch has. Each part goes in as arrays, one per column
//! (built here, [`Parts`]), and each of the function's statements covers every step of the batch.
//! A part that contradicts the journal (an unknown task, a tool call that never started) refuses
//! its step alone: the function raises `AJ001` naming the step, and the batch is retried without
//! it. Memories (with their vectors) and the read-back of a settled run that a waiter on this
//! replica is to be handed are written after it, in its transaction, when a step has them.

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{Answer, Commit, CommitError};
use crate::domain::{TaskStatus, UsageLine};
use crate::engine::journal::{RunChange, TaskChange, ToolCallOutcome};
use crate::store::group::Failure;

type Tx<'c> = Transaction<'c, Postgres>;
type WriteResult = Result<(), Failure<Answer>>;

/// A step of the batch whose run this attempt still holds, with its index in the batch.
pub(super) type Live<'a> = (usize, &'a Commit);

/// The SQLSTATE with which `agentd_journal_write` refuses a step that contradicts the journal.
const REFUSED: &str = "AJ001";

/// Refuse a step that contradicts itself before anything is written.
pub(super) fn check(commit: &Commit) -> Result<(), CommitError> {
    let ids: Vec<&str> = commit.step.tool_starts.iter().map(|s| s.id.as_str()).collect();
    match ids.iter().enumerate().find_map(|(i, id)| ids[..i].contains(id).then_some(id)) {
        Some(id) => Err(CommitError::Rejected(format!("tool call '{id}' starts twice in one step"))),
        None => Ok(()),
    }
}

/// Every part of a batch's steps as the columns `agentd_journal_write` takes.
#[derive(Default)]
pub(super) struct Parts<'a> {
    // Per step: its run and attempt, and how many rows each checked part must touch for it.
    steps: Vec<Uuid>,
    attempts: Vec<i32>,
    want_starts: Vec<i32>,
    want_records: Vec<i32>,
    want_ends: Vec<i32>,
    want_tasks: Vec<i32>,
    messages: Messages<'a>,
    starts: Starts<'a>,
    records: Records<'a>,
    ends: Ends<'a>,
    tasks: Tasks<'a>,
    runs: Runs,
    events: Events<'a>,
    spend: Vec<(Uuid, UsageLine)>,
}

/// Messages, appended after each run's last one.
#[derive(Default)]
struct Messages<'a> {
    runs: Vec<Uuid>,
    attempts: Vec<i32>,
    ordinals: Vec<i64>,
    conversations: Vec<&'a str>,
    tasks: Vec<&'a str>,
    agents: Vec<&'a str>,
    roles: Vec<&'a str>,
    contents: Vec<Option<&'a str>>,
    tool_calls: Vec<Option<Value>>,
    tool_call_ids: Vec<Option<&'a str>>,
    compacts: Vec<bool>,
    images: Vec<Option<Value>>,
}

/// Tool calls started: inserted `running`, or finished when the same step ends them. A call
/// already journaled as `running` (interrupted by a crash and now run again) starts afresh under
/// this attempt; reusing the id of a finished call refuses the step.
#[derive(Default)]
struct Starts<'a> {
    runs: Vec<Uuid>,
    attempts: Vec<i32>,
    ids: Vec<&'a str>,
    conversations: Vec<&'a str>,
    tasks: Vec<&'a str>,
    agents: Vec<&'a str>,
    tools: Vec<&'a str>,
    arguments: Vec<Value>,
    approvals: Vec<Option<Value>>,
    ends: EndColumns<'a>,
}

/// Side records (what a task's start found): a task's record of a kind is written once, and a
/// step that writes it again is refused.
#[derive(Default)]
struct Records<'a> {
    runs: Vec<Uuid>,
    attempts: Vec<i32>,
    kinds: Vec<&'a str>,
    tasks: Vec<&'a str>,
    agents: Vec<&'a str>,
    arguments: Vec<Value>,
    values: Vec<Value>,
}

/// Tool calls started in earlier steps, finished (the last end of an id in a step wins).
#[derive(Default)]
struct Ends<'a> {
    runs: Vec<Uuid>,
    ids: Vec<&'a str>,
    columns: EndColumns<'a>,
}

/// Task changes, folded per task of a step (a task may start and finish in one step).
#[derive(Default)]
struct Tasks<'a> {
    runs: Vec<Uuid>,
    names: Vec<&'a str>,
    statuses: Vec<&'a str>,
    outputs: Vec<Option<Value>>,
    errors: Vec<Option<Value>>,
}

/// Per step: the usage to add to its run, and its end when it ends.
#[derive(Default)]
struct Runs {
    llm_calls: Vec<i64>,
    prompt_tokens: Vec<i64>,
    completion_tokens: Vec<i64>,
    tool_calls: Vec<i64>,
    cached_tokens: Vec<i64>,
    estimated_tokens: Vec<i64>,
    costs: Vec<f64>,
    statuses: Vec<Option<&'static str>>,
    outputs: Vec<Option<Value>>,
    errors: Vec<Option<Value>>,
    events: Vec<i64>,
}

/// Events, appended in order after each run's last one.
#[derive(Default)]
struct Events<'a> {
    runs: Vec<Uuid>,
    ordinals: Vec<i64>,
    types: Vec<&'a str>,
    tasks: Vec<Option<&'a str>>,
    agents: Vec<Option<&'a str>>,
    data: Vec<Value>,
}

/// The parts of the batch's steps; a step whose values do not serialize, or whose task changes
/// contradict each other, is refused before anything is written.
pub(super) fn parts(commits: &[Commit]) -> Result<Parts<'_>, Failure<Answer>> {
    let mut parts = Parts::default();
    for (index, commit) in commits.iter().enumerate() {
        parts.push(index, commit)?;
    }
    Ok(parts)
}

/// A count of a step's rows, as the function takes it.
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl<'a> Parts<'a> {
    fn push(&mut self, index: usize, commit: &'a Commit) -> WriteResult {
        let (run, attempt, step) = (commit.run_id.0, commit.attempt, &commit.step);
        self.steps.push(run);
        self.attempts.push(attempt);

        let m = &mut self.messages;
        for (n, message) in step.messages.iter().enumerate() {
            m.runs.push(run);
            m.attempts.push(attempt);
            m.ordinals.push(n as i64 + 1);
            m.conversations.push(message.conversation.as_str());
            m.tasks.push(message.task.as_str());
            m.agents.push(message.agent.as_str());
            m.roles.push(message.message.role.as_str());
            m.contents.push(message.message.content.as_deref());
            let calls = &message.message.tool_calls;
            m.tool_calls.push((!calls.is_empty()).then(|| to_json(index, calls)).transpose()?);
            m.tool_call_ids.push(message.message.tool_call_id.as_deref());
            m.compacts.push(message.compacts);
            let pictures = &message.message.images;
            m.images.push((!pictures.is_empty()).then(|| to_json(index, pictures)).transpose()?);
        }

        let s = &mut self.starts;
        for start in &step.tool_starts {
            s.runs.push(run);
            s.attempts.push(attempt);
            s.ids.push(start.id.as_str());
            s.conversations.push(start.conversation.as_str());
            s.tasks.push(start.task.as_str());
            s.agents.push(start.agent.as_str());
            s.tools.push(start.tool.as_str());
            s.arguments.push(start.arguments.clone());
            s.approvals.push(start.approval.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            s.ends.push(ends_in_step(commit, &start.id));
        }
        self.want_starts.push(count(step.tool_starts.len()));

        let r = &mut self.records;
        for record in &step.side_records {
            r.runs.push(run);
            r.attempts.push(attempt);
            r.kinds.push(record.kind.as_str());
            r.tasks.push(record.task.as_str());
            r.agents.push(record.agent.as_str());
            r.arguments.push(record.arguments.clone());
            r.values.push(record.value.clone());
        }
        self.want_records.push(count(step.side_records.len()));

        // Calls the step also starts were written finished with their starts.
        let started = |id: &str| step.tool_starts.iter().any(|s| s.id == id);
        let ends: Vec<_> = last_per_key(&step.tool_ends, |e| e.id.as_str())
            .into_iter()
            .filter(|end| !started(&end.id))
            .collect();
        self.want_ends.push(count(ends.len()));
        for end in ends {
            self.ends.runs.push(run);
            self.ends.ids.push(end.id.as_str());
            self.ends.columns.push(Some(&end.outcome));
        }

        let updates = fold_task_changes(&step.tasks).map_err(|e| Failure::Item(index, Err(e)))?;
        self.want_tasks.push(count(updates.len()));
        for update in updates {
            self.tasks.runs.push(run);
            self.tasks.names.push(update.name);
            self.tasks.statuses.push(update.status.as_str());
            self.tasks.outputs.push(update.output);
            self.tasks.errors.push(update.error);
        }

        let (status, output, error) = match &step.run {
            None => (None, None, None),
            Some(RunChange::AwaitingInput) => (Some("awaiting_input"), None, None),
            Some(RunChange::Completed { output }) => (Some("completed"), Some(to_json(index, output)?), None),
            Some(RunChange::Failed { error }) => (Some("failed"), None, Some(to_json(index, error)?)),
        };
        let u = &mut self.runs;
        u.llm_calls.push(step.usage.llm_calls);
        u.prompt_tokens.push(step.usage.prompt_tokens);
        u.completion_tokens.push(step.usage.completion_tokens);
        u.tool_calls.push(step.usage.tool_calls);
        u.cached_tokens.push(step.usage.cached_tokens);
        u.estimated_tokens.push(step.usage.estimated_tokens);
        u.costs.push(step.usage.cost_usd);
        u.statuses.push(status);
        u.outputs.push(output);
        u.errors.push(error);
        u.events.push(step.events.len() as i64);
        for line in &step.spend {
            // One row per key and statement: lines of one key in two steps are added up.
            match self.spend.iter_mut().find(|(r, l)| *r == run && l.same_key(line)) {
                Some((_, existing)) => existing.add(line),
                None => self.spend.push((run, line.clone())),
            }
        }
        let e = &mut self.events;
        for (n, event) in step.events.iter().enumerate() {
            e.runs.push(run);
            e.ordinals.push(n as i64 + 1);
            e.types.push(event.event_type.as_str());
            e.tasks.push(event.task.as_deref());
            e.agents.push(event.agent.as_deref());
            e.data.push(event.data.clone());
        }
        Ok(())
    }
}

/// Fence and write the batch (see the module's header): per step, whether its attempt still held
/// its run, and so was written.
pub(super) async fn write<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    parts: &Parts<'_>,
) -> Result<Vec<bool>, Failure<Answer>> {
    let (m, s, r, e, t, u, v, g) = (
        &parts.messages,
        &parts.starts,
        &parts.records,
        &parts.ends,
        &parts.tasks,
        &parts.runs,
        &parts.events,
        &parts.spend,
    );
    let held = sqlx::query_scalar!(
        r#"SELECT agentd_journal_write(
               $1::uuid[], $2::int4[], $3::int4[], $4::int4[], $5::int4[], $6::int4[],
               $7::uuid[], $8::int4[], $9::int8[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
               $15::jsonb[], $16::text[], $17::bool[], $18::jsonb[],
               $19::uuid[], $20::int4[], $21::text[], $22::text[], $23::text[], $24::text[], $25::text[],
               $26::jsonb[], $27::text[], $28::text[], $29::text[], $30::bool[], $31::jsonb[],
               $32::uuid[], $33::int4[], $34::text[], $35::text[], $36::text[], $37::jsonb[], $38::jsonb[],
               $39::uuid[], $40::text[], $41::text[], $42::text[], $43::text[], $44::bool[],
               $45::uuid[], $46::text[], $47::text[], $48::jsonb[], $49::jsonb[],
               $50::int8[], $51::int8[], $52::int8[], $53::int8[], $54::text[], $55::jsonb[], $56::jsonb[],
               $57::int8[], $58::int8[], $59::float8[], $60::int8[],
               $61::uuid[], $62::int8[], $63::text[], $64::text[], $65::text[], $66::jsonb[],
               $67::uuid[], $68::text[], $69::text[], $70::text[], $71::int8[], $72::int8[], $73::int8[],
               $74::int8[], $75::float8[]) AS "held!""#,
        &parts.steps,
        &parts.attempts,
        &parts.want_starts,
        &parts.want_records,
        &parts.want_ends,
        &parts.want_tasks,
        &m.runs,
        &m.attempts,
        &m.ordinals,
        &m.conversations as &[&str],
        &m.tasks as &[&str],
        &m.agents as &[&str],
        &m.roles as &[&str],
        &m.contents as &[Option<&str>],
        &m.tool_calls as &[Option<Value>],
        &m.tool_call_ids as &[Option<&str>],
        &m.compacts,
        &m.images as &[Option<Value>],
        &s.runs,
        &s.attempts,
        &s.ids as &[&str],
        &s.conversations as &[&str],
        &s.tasks as &[&str],
        &s.agents as &[&str],
        &s.tools as &[&str],
        &s.arguments,
        &s.ends.statuses as &[&str],
        &s.ends.results as &[Option<&str>],
        &s.ends.errors as &[Option<&str>],
        &s.ends.cached,
        &s.approvals as &[Option<Value>],
        &r.runs,
        &r.attempts,
        &r.kinds as &[&str],
        &r.tasks as &[&str],
        &r.agents as &[&str],
        &r.arguments,
        &r.values,
        &e.runs,
        &e.ids as &[&str],
        &e.columns.statuses as &[&str],
        &e.columns.results as &[Option<&str>],
        &e.columns.errors as &[Option<&str>],
        &e.columns.cached,
        &t.runs,
        &t.names as &[&str],
        &t.statuses as &[&str],
        &t.outputs as &[Option<Value>],
        &t.errors as &[Option<Value>],
        &u.llm_calls,
        &u.prompt_tokens,
        &u.completion_tokens,
        &u.tool_calls,
        &u.statuses as &[Option<&str>],
        &u.outputs as &[Option<Value>],
        &u.errors as &[Option<Value>],
        &u.events,
        &u.cached_tokens,
        &u.costs,
        &u.estimated_tokens,
        &v.runs,
        &v.ordinals,
        &v.types as &[&str],
        &v.tasks as &[Option<&str>],
        &v.agents as &[Option<&str>],
        &v.data,
        &g.iter().map(|(run, _)| *run).collect::<Vec<Uuid>>(),
        &g.iter().map(|(_, l)| l.task.as_str()).collect::<Vec<&str>>() as &[&str],
        &g.iter().map(|(_, l)| l.agent.as_str()).collect::<Vec<&str>>() as &[&str],
        &g.iter().map(|(_, l)| l.model.as_str()).collect::<Vec<&str>>() as &[&str],
        &g.iter().map(|(_, l)| l.llm_calls).collect::<Vec<i64>>(),
        &g.iter().map(|(_, l)| l.prompt_tokens).collect::<Vec<i64>>(),
        &g.iter().map(|(_, l)| l.completion_tokens).collect::<Vec<i64>>(),
        &g.iter().map(|(_, l)| l.cached_tokens).collect::<Vec<i64>>(),
        &g.iter().map(|(_, l)| l.cost_usd).collect::<Vec<f64>>(),
    )
    .fetch_one(executor)
    .await
    .map_err(refusal)?;
    Ok(parts.steps.iter().map(|run| held.contains(run)).collect())
}

/// The function's refusal of a step as that step's failure; any other error fails the batch.
fn refusal(e: sqlx::Error) -> Failure<Answer> {
    let refused = e
        .as_database_error()
        .filter(|db| db.code().as_deref() == Some(REFUSED))
        .and_then(|db| db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>())
        .and_then(|db| Some((db.detail()?.parse::<usize>().ok()?.checked_sub(1)?, db.message().to_owned())));
    match refused {
        Some((index, reason)) => Failure::Item(index, Err(CommitError::Rejected(reason))),
        None => e.into(),
    }
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

/// A task's state after all of its changes in one step.
struct TaskUpdate<'a> {
    name: &'a str,
    status: TaskStatus,
    output: Option<Value>,
    error: Option<Value>,
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

//! The journal commit of a batch of steps of different runs (see [`group`](crate::store::group)):
//! one statement, committed on its own (a transaction only when a step saves memories, whose
//! vectors are written by statements of their own). Its parts are data-modifying `WITH` queries:
//! it locks the batch's runs and keeps those whose attempt still holds them (the fence), refuses
//! the steps that contradict the journal (an unknown task, a tool call that never started, a
//! finished call started again, a side record written before), and writes the rest: messages,
//! tool-call starts and ends, side records, task changes, the runs with their usage and events.
//! Every write joins the runs kept, so a fenced or refused step writes nothing and the others are
//! written whole. Rows go in as arrays (`UNNEST`), so a part costs nothing more per row than the
//! rows themselves. Every join with such an array also says `= ANY` of the array's run ids, so
//! the planner looks the rows up by index even when its statistics still think the table small
//! (a hash join would read the whole table on every commit).
//!
//! The statement's parts read the tables as they were when it started, which is what the checks
//! need: a run's steps are written one after another (the group keeps them in order, the engine
//! waits for each), and the fence's lock waits for any other writer of the run (a claim, a
//! cancellation), which then sees the run row as that writer left it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Commit, CommitError};
use crate::domain::{RunStatus, TaskStatus, UsageLine};
use crate::engine::journal::{RunChange, TaskChange, ToolCallOutcome};
use crate::store::StoreError;

/// A step to write, with its index in the batch.
pub(super) type Live<'a> = (usize, &'a Commit);

/// How the statement left each step of a batch.
#[derive(Debug, PartialEq)]
pub(super) enum Outcome {
    Written,
    /// Its attempt no longer holds the run.
    Fenced,
    /// It contradicts the journal; nothing of it was written.
    Refused(String),
}

/// Refuse a step that contradicts itself before anything is written.
pub(super) fn check(commit: &Commit) -> Result<(), CommitError> {
    let ids: Vec<&str> = commit.step.tool_starts.iter().map(|s| s.id.as_str()).collect();
    if let Some(id) = ids.iter().enumerate().find_map(|(i, id)| ids[..i].contains(id).then_some(id)) {
        return Err(CommitError::Rejected(format!("tool call '{id}' starts twice in one step")));
    }
    let records = &commit.step.side_records;
    let twice = records.iter().enumerate().find(|(i, record)| {
        records[..*i].iter().any(|earlier| earlier.task == record.task && earlier.kind == record.kind)
    });
    match twice {
        Some((_, record)) => Err(CommitError::Rejected(format!(
            "a side record ({}) of task '{}' is written twice in one step",
            record.kind.as_str(),
            record.task
        ))),
        None => Ok(()),
    }
}

/// The statuses in which a run's holding attempt may write: not finished, not put back in the
/// queue (nor waiting for it).
fn holding_statuses() -> Vec<&'static str> {
    RunStatus::ALL
        .into_iter()
        .filter(|s| !s.is_terminal() && !matches!(s, RunStatus::Queued | RunStatus::Waiting))
        .map(RunStatus::as_str)
        .collect()
}

/// The batch as one array per column of each part (see the statement in [`write`]).
#[derive(Default)]
struct Columns<'a> {
    // The steps' runs and attempts (one each), with what each step changes of its run.
    runs: Vec<Uuid>,
    attempts: Vec<i32>,
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
    event_counts: Vec<i64>,
    messages: MessageColumns<'a>,
    starts: StartColumns<'a>,
    sides: SideColumns<'a>,
    ends: (Vec<Uuid>, Vec<&'a str>, EndColumns<'a>),
    tasks: TaskColumns<'a>,
    events: EventColumns<'a>,
    spend: Vec<(Uuid, UsageLine)>,
}

#[derive(Default)]
struct MessageColumns<'a> {
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

#[derive(Default)]
struct StartColumns<'a> {
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

#[derive(Default)]
struct SideColumns<'a> {
    runs: Vec<Uuid>,
    attempts: Vec<i32>,
    kinds: Vec<&'static str>,
    tasks: Vec<&'a str>,
    agents: Vec<&'a str>,
    arguments: Vec<Value>,
    values: Vec<Value>,
}

#[derive(Default)]
struct TaskColumns<'a> {
    runs: Vec<Uuid>,
    names: Vec<&'a str>,
    statuses: Vec<&'static str>,
    outputs: Vec<Option<Value>>,
    errors: Vec<Option<Value>>,
}

#[derive(Default)]
struct EventColumns<'a> {
    runs: Vec<Uuid>,
    ordinals: Vec<i64>,
    types: Vec<&'a str>,
    tasks: Vec<Option<&'a str>>,
    agents: Vec<Option<&'a str>>,
    data: Vec<Value>,
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

/// What a step needs converted before its rows can be pushed (conversions that may refuse it).
struct Converted<'a> {
    tasks: Vec<TaskUpdate<'a>>,
    status: Option<&'static str>,
    output: Option<Value>,
    error: Option<Value>,
    /// Per message: its tool calls and images as JSON.
    messages: Vec<(Option<Value>, Option<Value>)>,
}

/// Convert what a step stores as JSON, refusing it when something does not serialize.
fn convert(commit: &Commit) -> Result<Converted<'_>, CommitError> {
    let step = &commit.step;
    let (status, output, error) = match &step.run {
        None => (None, None, None),
        Some(RunChange::AwaitingInput) => (Some("awaiting_input"), None, None),
        Some(RunChange::Completed { output }) => (Some("completed"), Some(value(output)?), None),
        Some(RunChange::Failed { error }) => (Some("failed"), None, Some(value(error)?)),
    };
    let messages = step
        .messages
        .iter()
        .map(|m| {
            let (calls, images) = (&m.message.tool_calls, &m.message.images);
            Ok((
                (!calls.is_empty()).then(|| value(calls)).transpose()?,
                (!images.is_empty()).then(|| value(images)).transpose()?,
            ))
        })
        .collect::<Result<_, CommitError>>()?;
    Ok(Converted { tasks: fold_task_changes(&step.tasks)?, status, output, error, messages })
}

impl<'a> Columns<'a> {
    fn push(&mut self, commit: &'a Commit, converted: Converted<'a>) {
        let (run, attempt, step) = (commit.run_id.0, commit.attempt, &commit.step);
        self.runs.push(run);
        self.attempts.push(attempt);
        self.llm_calls.push(step.usage.llm_calls);
        self.prompt_tokens.push(step.usage.prompt_tokens);
        self.completion_tokens.push(step.usage.completion_tokens);
        self.tool_calls.push(step.usage.tool_calls);
        self.cached_tokens.push(step.usage.cached_tokens);
        self.estimated_tokens.push(step.usage.estimated_tokens);
        self.costs.push(step.usage.cost_usd);
        self.statuses.push(converted.status);
        self.outputs.push(converted.output);
        self.errors.push(converted.error);
        self.event_counts.push(step.events.len() as i64);

        let messages = &mut self.messages;
        for (n, (m, (calls, images))) in step.messages.iter().zip(converted.messages).enumerate() {
            messages.runs.push(run);
            messages.attempts.push(attempt);
            messages.ordinals.push(n as i64 + 1);
            messages.conversations.push(m.conversation.as_str());
            messages.tasks.push(m.task.as_str());
            messages.agents.push(m.agent.as_str());
            messages.roles.push(m.message.role.as_str());
            messages.contents.push(m.message.content.as_deref());
            messages.tool_calls.push(calls);
            messages.tool_call_ids.push(m.message.tool_call_id.as_deref());
            messages.compacts.push(m.compacts);
            messages.images.push(images);
        }

        // A call the step also ends is written finished at once.
        let starts = &mut self.starts;
        for start in &step.tool_starts {
            starts.runs.push(run);
            starts.attempts.push(attempt);
            starts.ids.push(start.id.as_str());
            starts.conversations.push(start.conversation.as_str());
            starts.tasks.push(start.task.as_str());
            starts.agents.push(start.agent.as_str());
            starts.tools.push(start.tool.as_str());
            starts.arguments.push(start.arguments.clone());
            starts.approvals.push(start.approval.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            starts.ends.push(ends_in_step(commit, &start.id));
        }

        let sides = &mut self.sides;
        for record in &step.side_records {
            sides.runs.push(run);
            sides.attempts.push(attempt);
            sides.kinds.push(record.kind.as_str());
            sides.tasks.push(record.task.as_str());
            sides.agents.push(record.agent.as_str());
            sides.arguments.push(record.arguments.clone());
            sides.values.push(record.value.clone());
        }

        // Calls started in earlier steps; the last end of an id in a step wins.
        let started = |id: &str| step.tool_starts.iter().any(|s| s.id == id);
        for end in last_per_key(&step.tool_ends, |e| e.id.as_str()) {
            if !started(&end.id) {
                self.ends.0.push(run);
                self.ends.1.push(end.id.as_str());
                self.ends.2.push(Some(&end.outcome));
            }
        }

        for update in converted.tasks {
            self.tasks.runs.push(run);
            self.tasks.names.push(update.name);
            self.tasks.statuses.push(update.status.as_str());
            self.tasks.outputs.push(update.output);
            self.tasks.errors.push(update.error);
        }

        let events = &mut self.events;
        for (n, event) in step.events.iter().enumerate() {
            events.runs.push(run);
            events.ordinals.push(n as i64 + 1);
            events.types.push(event.event_type.as_str());
            events.tasks.push(event.task.as_deref());
            events.agents.push(event.agent.as_deref());
            events.data.push(event.data.clone());
        }

        for line in &step.spend {
            // One row per key and statement: lines of one key are added up.
            match self.spend.iter_mut().find(|(r, l)| *r == run && l.same_key(line)) {
                Some((_, existing)) => existing.add(line),
                None => self.spend.push((run, line.clone())),
            }
        }
    }
}

/// Write `live` (steps of distinct runs) with one statement on `connection` and tell how each
/// step was left, in order. Answers `Err` when the statement failed as a whole (nothing written).
pub(super) async fn write(
    connection: &mut PgConnection,
    live: &[Live<'_>],
) -> Result<Vec<(usize, Outcome)>, StoreError> {
    let mut answers = Vec::with_capacity(live.len());
    let mut columns = Columns::default();
    let mut written = Vec::with_capacity(live.len());
    for &(index, commit) in live {
        match check(commit).and_then(|()| convert(commit)) {
            Ok(converted) => {
                columns.push(commit, converted);
                written.push((index, commit.run_id.0));
            }
            Err(CommitError::Rejected(reason)) => answers.push((index, Outcome::Refused(reason))),
            Err(_) => answers.push((index, Outcome::Refused("the step cannot be written".into()))),
        }
    }
    if written.is_empty() {
        return Ok(answers);
    }
    let c = &columns;
    let (m, s, d, t, e) = (&c.messages, &c.starts, &c.sides, &c.tasks, &c.events);
    let spend = &c.spend;
    let rows = sqlx::query!(
        r#"WITH
           -- The fence: the runs whose attempt still holds them, locked in id order (as every
           -- grouped writer locks runs, so two batches never deadlock).
           held AS (
               SELECT r.id FROM runs AS r
                 JOIN UNNEST($1::uuid[], $2::int4[]) AS s(id, attempt) ON s.id = r.id AND s.attempt = r.attempt
                WHERE r.id = ANY($1) AND r.status = ANY($3::text[])
                ORDER BY r.id
                  FOR UPDATE OF r
           ),
           -- Steps that contradict the journal, with the first contradiction found.
           refused AS (
               SELECT c.run_id, 'a tool call id of this step belongs to a finished call' AS reason
                 FROM UNNEST($16::uuid[], $18::text[]) AS c(run_id, id)
                 JOIN tool_calls AS t ON t.run_id = c.run_id AND t.id = c.id
                WHERE t.run_id = ANY($16) AND t.status <> 'running'
               UNION ALL
               SELECT s.run_id, 'a side record of this step was written before'
                 FROM UNNEST($29::uuid[], $31::text[], $32::text[]) AS s(run_id, kind, task)
                 JOIN side_records AS r ON r.run_id = s.run_id AND r.task = s.task AND r.kind = s.kind
                WHERE r.run_id = ANY($29)
               UNION ALL
               SELECT e.run_id, 'a tool call of this step never started'
                 FROM UNNEST($36::uuid[], $37::text[]) AS e(run_id, id)
                WHERE NOT EXISTS (SELECT 1 FROM tool_calls AS t
                                   WHERE t.run_id = e.run_id AND t.id = e.id AND t.run_id = ANY($36))
               UNION ALL
               SELECT c.run_id, 'a task of this step is not one of the run''s'
                 FROM UNNEST($42::uuid[], $43::text[]) AS c(run_id, name)
                WHERE NOT EXISTS (SELECT 1 FROM run_tasks AS t
                                   WHERE t.run_id = c.run_id AND t.name = c.name AND t.run_id = ANY($42))
           ),
           kept AS (SELECT id FROM held WHERE id NOT IN (SELECT run_id FROM refused)),
           -- Messages after each run's last one (`seq` stays dense: the run rows are locked).
           appended AS (
               INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, tool_calls,
                                     tool_call_id, compacts, images, attempt)
               SELECT m.run_id, last.seq + m.n, m.conversation, m.task, m.agent, m.role, m.content,
                      m.tool_calls, m.tool_call_id, m.compacts, m.images, m.attempt
                 FROM UNNEST($4::uuid[], $5::int4[], $6::int8[], $7::text[], $8::text[], $9::text[],
                             $10::text[], $11::text[], $12::jsonb[], $13::text[], $14::bool[], $15::jsonb[])
                      AS m(run_id, attempt, n, conversation, task, agent, role, content, tool_calls,
                           tool_call_id, compacts, images)
                      CROSS JOIN LATERAL (SELECT coalesce(max(seq), 0) AS seq FROM messages
                                           WHERE run_id = m.run_id) AS last
                WHERE m.run_id IN (SELECT id FROM kept)
           ),
           -- Tool calls as `running`, or finished when the step ends them too. A call journaled as
           -- `running` (interrupted by a crash and now run again) starts afresh under this attempt.
           started AS (
               INSERT INTO tool_calls (run_id, id, conversation, task, agent, tool, arguments, attempt,
                                       status, result, error, cached, finished_at, approval)
               SELECT c.run_id, c.id, c.conversation, c.task, c.agent, c.tool, c.arguments, c.attempt,
                      c.status, c.result, c.error, c.cached, CASE WHEN c.status <> 'running' THEN now() END,
                      c.approval
                 FROM UNNEST($16::uuid[], $17::int4[], $18::text[], $19::text[], $20::text[], $21::text[],
                             $22::text[], $23::jsonb[], $24::text[], $25::text[], $26::text[], $27::bool[],
                             $28::jsonb[])
                      AS c(run_id, attempt, id, conversation, task, agent, tool, arguments, status, result,
                           error, cached, approval)
                WHERE c.run_id IN (SELECT id FROM kept)
               ON CONFLICT (run_id, id) DO UPDATE
                  SET conversation = EXCLUDED.conversation, task = EXCLUDED.task, agent = EXCLUDED.agent,
                      tool = EXCLUDED.tool, arguments = EXCLUDED.arguments, attempt = EXCLUDED.attempt,
                      started_at = now(), status = EXCLUDED.status, result = EXCLUDED.result,
                      error = EXCLUDED.error, cached = EXCLUDED.cached, finished_at = EXCLUDED.finished_at,
                      approval = EXCLUDED.approval
                WHERE tool_calls.status = 'running'
           ),
           recorded AS (
               INSERT INTO side_records (run_id, attempt, kind, task, agent, arguments, value)
               SELECT * FROM UNNEST($29::uuid[], $30::int4[], $31::text[], $32::text[], $33::text[],
                                    $34::jsonb[], $35::jsonb[])
                             AS s(run_id, attempt, kind, task, agent, arguments, value)
                WHERE s.run_id IN (SELECT id FROM kept)
               ON CONFLICT (run_id, task, kind) DO NOTHING
           ),
           -- Tool calls started in earlier steps, finished.
           ended AS (
               UPDATE tool_calls AS t
                  SET status = e.status, result = e.result, error = e.error, cached = e.cached,
                      finished_at = now()
                 FROM UNNEST($36::uuid[], $37::text[], $38::text[], $39::text[], $40::text[], $41::bool[])
                      AS e(run_id, id, status, result, error, cached)
                WHERE t.run_id = e.run_id AND t.id = e.id AND t.run_id = ANY($36)
                  AND e.run_id IN (SELECT id FROM kept)
           ),
           -- Task changes (folded per task of a step): `started_at` on a task's first change,
           -- `finished_at` when it completes or fails (cleared should it start again).
           tasks_changed AS (
               UPDATE run_tasks AS t
                  SET status = c.status,
                      output = coalesce(c.output, t.output),
                      error = c.error,
                      started_at = coalesce(t.started_at, now()),
                      finished_at = CASE WHEN c.status = 'running' THEN NULL ELSE now() END
                 FROM UNNEST($42::uuid[], $43::text[], $44::text[], $45::jsonb[], $46::jsonb[])
                      AS c(run_id, name, status, output, error)
                WHERE t.run_id = c.run_id AND t.name = c.name AND t.run_id = ANY($42)
                  AND c.run_id IN (SELECT id FROM kept)
           ),
           -- The runs: usage added, their end recorded (releasing the lease), their events' `seq`s
           -- taken from `last_seq`.
           changed AS (
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
                 FROM UNNEST($1::uuid[], $47::int8[], $48::int8[], $49::int8[], $50::int8[], $51::text[],
                             $52::jsonb[], $53::jsonb[], $54::int8[], $55::int8[], $56::float8[], $57::int8[])
                      AS u(id, llm_calls, prompt_tokens, completion_tokens, tool_calls, status, output, error,
                           events, cached_tokens, cost_usd, estimated_tokens)
                WHERE r.id = u.id AND r.id = ANY($1) AND r.id IN (SELECT id FROM kept)
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
               INSERT INTO run_usage AS s (run_id, task, agent, model, llm_calls, prompt_tokens,
                                           completion_tokens, cached_tokens, cost_usd)
               SELECT * FROM UNNEST($64::uuid[], $65::text[], $66::text[], $67::text[], $68::int8[],
                                    $69::int8[], $70::int8[], $71::int8[], $72::float8[])
                             AS u(run_id, task, agent, model, llm_calls, prompt_tokens, completion_tokens,
                                  cached_tokens, cost_usd)
                WHERE u.run_id IN (SELECT id FROM kept)
               ON CONFLICT (run_id, task, agent, model) DO UPDATE
                  SET llm_calls = s.llm_calls + excluded.llm_calls,
                      prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
                      completion_tokens = s.completion_tokens + excluded.completion_tokens,
                      cached_tokens = s.cached_tokens + excluded.cached_tokens,
                      cost_usd = s.cost_usd + excluded.cost_usd
           ),
           logged AS (
               INSERT INTO events (run_id, seq, type, task, agent, data)
               SELECT e.run_id, changed.base + e.n, e.type, e.task, e.agent, e.data
                 FROM UNNEST($58::uuid[], $59::int8[], $60::text[], $61::text[], $62::text[], $63::jsonb[])
                      WITH ORDINALITY AS e(run_id, n, type, task, agent, data, position)
                      JOIN changed ON changed.id = e.run_id
                ORDER BY e.position
           )
           SELECT h.id AS "id!", (SELECT min(reason) FROM refused WHERE run_id = h.id) AS reason
             FROM held AS h"#,
        &c.runs,
        &c.attempts,
        &holding_statuses() as &[&str],
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
        &d.runs,
        &d.attempts,
        &d.kinds as &[&str],
        &d.tasks as &[&str],
        &d.agents as &[&str],
        &d.arguments,
        &d.values,
        &c.ends.0,
        &c.ends.1 as &[&str],
        &c.ends.2.statuses as &[&str],
        &c.ends.2.results as &[Option<&str>],
        &c.ends.2.errors as &[Option<&str>],
        &c.ends.2.cached,
        &t.runs,
        &t.names as &[&str],
        &t.statuses as &[&str],
        &t.outputs as &[Option<Value>],
        &t.errors as &[Option<Value>],
        &c.llm_calls,
        &c.prompt_tokens,
        &c.completion_tokens,
        &c.tool_calls,
        &c.statuses as &[Option<&str>],
        &c.outputs as &[Option<Value>],
        &c.errors as &[Option<Value>],
        &c.event_counts,
        &c.cached_tokens,
        &c.costs,
        &c.estimated_tokens,
        &e.runs,
        &e.ordinals,
        &e.types as &[&str],
        &e.tasks as &[Option<&str>],
        &e.agents as &[Option<&str>],
        &e.data,
        &spend.iter().map(|(run, _)| *run).collect::<Vec<Uuid>>(),
        &spend.iter().map(|(_, l)| l.task.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.agent.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.model.as_str()).collect::<Vec<&str>>() as &[&str],
        &spend.iter().map(|(_, l)| l.llm_calls).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.prompt_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.completion_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.cached_tokens).collect::<Vec<i64>>(),
        &spend.iter().map(|(_, l)| l.cost_usd).collect::<Vec<f64>>(),
    )
    .fetch_all(&mut *connection)
    .await?;
    let held: HashMap<Uuid, Option<String>> = rows.into_iter().map(|row| (row.id, row.reason)).collect();
    answers.extend(written.into_iter().map(|(index, run)| {
        let answer = match held.get(&run) {
            None => Outcome::Fenced,
            Some(None) => Outcome::Written,
            Some(Some(reason)) => Outcome::Refused(reason.clone()),
        };
        (index, answer)
    }));
    answers.sort_by_key(|(index, _)| *index);
    Ok(answers)
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

/// Fold a step's task changes per task (a task may start and finish in one step); the error is
/// that of the last failure, if it is failed.
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

/// Save the memories of the steps written (with their tasks' commit: a task's items are saved
/// once, or not at all).
pub(super) async fn memories(connection: &mut PgConnection, commits: &[&Commit]) -> Result<(), StoreError> {
    let memories: Vec<&crate::domain::memory::NewMemory> =
        commits.iter().flat_map(|commit| &commit.step.memories).collect();
    if memories.is_empty() {
        return Ok(());
    }
    let (mut ids, mut tenants, mut scopes, mut kinds, mut texts) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut runs, mut tasks, mut agents) = (vec![], vec![], vec![]);
    for memory in &memories {
        ids.push(memory.id.0);
        tenants.push(memory.tenant.as_str());
        scopes.push(memory.scope.as_str());
        kinds.push(<&str>::from(memory.kind));
        texts.push(memory.text.as_str());
        runs.push(memory.run_id.map(uuid::Uuid::from));
        tasks.push(memory.task.as_deref());
        agents.push(memory.agent.as_deref());
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
    .execute(&mut *connection)
    .await?;
    crate::store::vectors::write_memory_vectors(connection, &memories).await?;
    Ok(())
}

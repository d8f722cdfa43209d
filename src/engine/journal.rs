//! The engine's only way to persist: a [`Journal`] takes atomic [`Step`]s (messages, tool-call
//! starts and ends, task and run changes, usage and events, all committed together) and gives
//! back a [`Snapshot`] from which an interrupted run is rebuilt. The store implements it on
//! Postgres (fenced by the run's attempt); [`MemoryJournal`] serves the engine's own tests.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use serde_json::Value;

pub use crate::domain::journal::{Approval, JournalKey, SideKind, SideRecord, ToolCallOutcome};
use crate::domain::{EventData, EventType, RunError, TaskOutput, TaskStatus, UsageLine};
use crate::llm::{ChatMessage, Role};

/// A boxed journal future (the trait is used as `dyn Journal`).
pub type JournalFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

/// Why a journal write failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// Another worker owns the run now (this worker's lease was lost): stop at once.
    #[error("the run's lease was lost to another worker")]
    Fenced,
    #[error("journal storage failed: {0}")]
    Storage(String),
}

/// A message to append to a conversation. `conversation` is the task's name, or a derived key for
/// a delegated sub-conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub conversation: JournalKey,
    /// The task the conversation belongs to.
    pub task: String,
    pub agent: String,
    pub message: ChatMessage,
    /// This message (a summary) replaces everything before it in the conversation but the
    /// system prompt.
    pub compacts: bool,
}

/// A tool call about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallStart {
    pub id: JournalKey,
    pub conversation: JournalKey,
    /// The task the call belongs to.
    pub task: String,
    pub agent: String,
    pub tool: String,
    pub arguments: Value,
    /// Set when the call waits for approval.
    pub approval: Option<Approval>,
}

/// A tool call that ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEnd {
    pub id: JournalKey,
    pub outcome: ToolCallOutcome,
}

/// A change of a task's state.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskChange {
    Started {
        task: String,
    },
    /// The task's answer waits for a human's review (the task stays running).
    AwaitingReview {
        task: String,
        output: TaskOutput,
    },
    Completed {
        task: String,
        output: TaskOutput,
    },
    Failed {
        task: String,
        error: String,
    },
}

/// The end of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum RunChange {
    /// Paused until a human approves or rejects a task's answer; the worker lets go of the run.
    AwaitingInput,
    Completed {
        output: TaskOutput,
    },
    Failed {
        error: RunError,
    },
}

/// An event to append to the run's log.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub event_type: EventType,
    pub task: Option<String>,
    pub agent: Option<String>,
    pub data: Value,
}

impl NewEvent {
    pub fn new(task: Option<&str>, agent: Option<&str>, data: EventData) -> Self {
        let (event_type, data) = data.into_parts();
        Self { event_type, task: task.map(str::to_owned), agent: agent.map(str::to_owned), data }
    }
}

/// Counters to add to the run's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageDelta {
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cached_tokens: i64,
    /// Of the prompt and completion tokens, those estimated (the provider sent no usage).
    pub estimated_tokens: i64,
    pub tool_calls: i64,
    /// US dollars, for calls to priced models.
    pub cost_usd: f64,
}

impl UsageDelta {
    fn add(&mut self, other: &UsageDelta) {
        self.llm_calls += other.llm_calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.estimated_tokens += other.estimated_tokens;
        self.tool_calls += other.tool_calls;
        self.cost_usd += other.cost_usd;
    }
}

/// Add `line` to `lines`, into the line of its task, agent and model if there is one.
pub fn merge_spend(lines: &mut Vec<UsageLine>, line: &UsageLine) {
    match lines.iter_mut().find(|l| l.same_key(line)) {
        Some(existing) => existing.add(line),
        None => lines.push(line.clone()),
    }
}

/// Everything one commit writes, atomically and in this order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    pub messages: Vec<NewMessage>,
    pub tool_starts: Vec<ToolCallStart>,
    pub tool_ends: Vec<ToolCallEnd>,
    pub tasks: Vec<TaskChange>,
    pub run: Option<RunChange>,
    pub usage: UsageDelta,
    /// The model calls of `usage`, split by task, agent and model.
    pub spend: Vec<UsageLine>,
    pub events: Vec<NewEvent>,
    /// Memories the step's completed tasks saved (see `super::memory`).
    pub memories: Vec<crate::domain::memory::NewMemory>,
    /// What the step's task starts found (their knowledge, their memories; see [`Step::record`]).
    pub side_records: Vec<SideRecord>,
}

impl Step {
    pub fn is_empty(&self) -> bool {
        *self == Step::default()
    }

    /// May the step end the run or stop it for human input (a change of the run, or an event
    /// that settles a wait)?
    pub fn may_settle(&self) -> bool {
        self.run.is_some()
            || self.events.iter().any(|e| {
                e.event_type.is_terminal()
                    || matches!(e.event_type, EventType::RunAwaitingInput | EventType::ToolApprovalRequested)
            })
    }

    /// Replace every NUL character in the step's text (Postgres stores none). The engine scrubs
    /// what enters a run (replies, tool results) as it arrives; a journal that stores steps calls
    /// this before writing, so no text from any path can fail a commit.
    pub fn scrub_nul(&mut self) {
        use crate::text::{scrub, scrub_value};
        let output = |o: &mut TaskOutput| {
            scrub(&mut o.raw);
            if let Some(json) = &mut o.json {
                scrub_value(json);
            }
        };
        for m in &mut self.messages {
            scrub(m.conversation.text_mut());
            let message = &mut m.message;
            message.content.iter_mut().chain(message.tool_call_id.iter_mut()).for_each(scrub);
            for call in &mut message.tool_calls {
                [&mut call.id, &mut call.name, &mut call.arguments].into_iter().for_each(scrub);
            }
        }
        for start in &mut self.tool_starts {
            [start.id.text_mut(), start.conversation.text_mut(), &mut start.tool].into_iter().for_each(scrub);
            scrub_value(&mut start.arguments);
        }
        for end in &mut self.tool_ends {
            scrub(end.id.text_mut());
            match &mut end.outcome {
                ToolCallOutcome::Succeeded { result, .. } => scrub(result),
                ToolCallOutcome::Failed { error } => scrub(error),
            }
        }
        for change in &mut self.tasks {
            match change {
                TaskChange::Started { .. } => {}
                TaskChange::AwaitingReview { output: o, .. } | TaskChange::Completed { output: o, .. } => {
                    output(o)
                }
                TaskChange::Failed { error, .. } => scrub(error),
            }
        }
        match &mut self.run {
            Some(RunChange::Completed { output: o }) => output(o),
            Some(RunChange::Failed { error }) => scrub(&mut error.message),
            Some(RunChange::AwaitingInput) | None => {}
        }
        for event in &mut self.events {
            scrub_value(&mut event.data);
        }
        for memory in &mut self.memories {
            scrub(&mut memory.text);
        }
        for record in &mut self.side_records {
            [&mut record.task, &mut record.agent].into_iter().for_each(scrub);
            scrub_value(&mut record.arguments);
            scrub_value(&mut record.value);
        }
    }

    /// The bytes of text the step journals: messages (with their tool calls and images), tool
    /// results and errors, task and run outputs. What a run's journal limit counts; events and
    /// keys are left out (small, and they repeat what is counted).
    pub fn text_bytes(&self) -> u64 {
        let messages: usize = self.messages.iter().map(|m| message_bytes(&m.message)).sum();
        let results: usize = self.tool_ends.iter().map(|end| end.outcome.text_bytes()).sum::<usize>()
            + self.side_records.iter().map(SideRecord::text_bytes).sum::<usize>();
        let outputs: usize = self
            .tasks
            .iter()
            .map(|change| match change {
                TaskChange::AwaitingReview { output, .. } | TaskChange::Completed { output, .. } => {
                    output.raw.len()
                }
                TaskChange::Failed { error, .. } => error.len(),
                TaskChange::Started { .. } => 0,
            })
            .sum();
        let run = match &self.run {
            Some(RunChange::Completed { output }) => output.raw.len(),
            Some(RunChange::Failed { error }) => error.message.len(),
            Some(RunChange::AwaitingInput) | None => 0,
        };
        (messages + results + outputs + run) as u64
    }

    /// Does the step hold only what a resumed run writes again the same way, so that losing it
    /// to a crash loses nothing: a task's start, its system and user prompts and events, but no
    /// model reply or summary, no tool call or result, no side record, no task or run end, no usage (but the
    /// count of the model call it goes out with: lost with the step only if the process dies in
    /// the few milliseconds of that commit, and counted again when the resumed run repeats the
    /// call)?
    pub fn is_replayable(&self) -> bool {
        self.messages.iter().all(|m| {
            matches!(m.message.role, Role::System | Role::User) && !m.compacts && m.message.images.is_empty()
        }) && self.tool_starts.is_empty()
            && self.tool_ends.is_empty()
            && self.side_records.is_empty()
            && self.tasks.iter().all(|t| matches!(t, TaskChange::Started { .. }))
            && self.run.is_none()
            && self.usage == UsageDelta { llm_calls: self.usage.llm_calls.min(1), ..UsageDelta::default() }
            && self.spend.iter().all(UsageLine::counts_calls_only)
    }

    /// Count what embedding cost for `task`'s `agent`: its tokens as prompt tokens, under the
    /// embedding model in the split (no model call counted).
    pub fn spend_embedding(
        &mut self,
        task: &str,
        agent: &str,
        spend: &crate::domain::knowledge::EmbeddingSpend,
    ) {
        let tokens = i64::try_from(spend.tokens).unwrap_or(i64::MAX);
        self.usage.prompt_tokens += tokens;
        if spend.estimated {
            self.usage.estimated_tokens += tokens;
        }
        self.usage.cost_usd += spend.cost_usd;
        let line = self.spend_on(task, agent, &spend.model);
        line.prompt_tokens += tokens;
        line.cost_usd += spend.cost_usd;
    }

    /// Journal what `task`'s start found (`value`: its knowledge, its memories), asked with
    /// `arguments`, as a side record of `kind`, so a resumed run reads it back
    /// ([`Snapshot::recorded`]) instead of looking again.
    pub fn record<T: serde::Serialize>(
        &mut self,
        kind: SideKind,
        (task, agent): (&str, &str),
        arguments: Value,
        value: &T,
    ) {
        let value = serde_json::to_value(value).unwrap_or_else(|_| Value::Array(Vec::new()));
        let (task, agent) = (task.to_owned(), agent.to_owned());
        self.side_records.push(SideRecord { kind, task, agent, arguments, value });
    }

    /// The usage split's line of `task`, `agent` and `model` in this step.
    pub fn spend_on(&mut self, task: &str, agent: &str, model: &str) -> &mut UsageLine {
        let at = match self.spend.iter().position(|s| s.task == task && s.agent == agent && s.model == model)
        {
            Some(at) => at,
            None => {
                let line = UsageLine {
                    task: task.into(),
                    agent: agent.into(),
                    model: model.into(),
                    ..UsageLine::default()
                };
                self.spend.push(line);
                self.spend.len() - 1
            }
        };
        &mut self.spend[at]
    }

    /// Announce an event (of `task` and `agent`, where it has them).
    pub fn event(&mut self, task: Option<&str>, agent: Option<&str>, data: EventData) {
        self.events.push(NewEvent::new(task, agent, data));
    }
}

/// The bytes of a message's text: content, tool calls, images.
fn message_bytes(message: &ChatMessage) -> usize {
    let calls: usize = message.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum();
    let images: usize = message.images.iter().map(|i| i.data.len()).sum();
    message.content.as_ref().map_or(0, String::len) + calls + images
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRecord {
    pub conversation: JournalKey,
    pub message: ChatMessage,
    pub compacts: bool,
}

/// A stored tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    pub id: JournalKey,
    pub conversation: JournalKey,
    pub tool: String,
    pub arguments: Value,
    /// `None` while running (or interrupted by a crash, or waiting for approval).
    pub outcome: Option<ToolCallOutcome>,
    pub approval: Option<Approval>,
}

/// A stored task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub name: String,
    pub status: TaskStatus,
    pub output: Option<TaskOutput>,
}

/// All a run has journaled, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub tasks: Vec<TaskRecord>,
    pub messages: Vec<MessageRecord>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// What the run's task starts found (see [`Step::record`]).
    pub side_records: Vec<SideRecord>,
    /// Tokens (prompt and completion) and US dollars the run's model calls used so far.
    pub spent_tokens: u64,
    pub spent_cost_usd: f64,
}

impl Snapshot {
    /// What `task`'s start found and [`Step::record`] journaled as `kind` (its knowledge, its
    /// memories), if the run got that far before; `Err` says why it cannot be read.
    pub fn recorded<T: serde::de::DeserializeOwned>(
        &self,
        kind: SideKind,
        task: &str,
    ) -> Result<Option<T>, String> {
        let record = self.side_records.iter().find(|r| r.kind == kind && r.task == task);
        record.map(|r| T::deserialize(&r.value).map_err(|e| e.to_string())).transpose()
    }

    /// The conversation under `key`, from its last compaction on (the system prompt kept).
    pub fn conversation(&self, key: &str) -> Vec<ChatMessage> {
        let records: Vec<&MessageRecord> = self.messages.iter().filter(|m| m.conversation == key).collect();
        let from = records.iter().rposition(|m| m.compacts).unwrap_or(0);
        let system = records.first().filter(|m| from > 0 && m.message.role == crate::llm::Role::System);
        system.into_iter().chain(&records[from..]).map(|m| m.message.clone()).collect()
    }

    /// The bytes of text journaled so far, counted as [`Step::text_bytes`] counts them.
    pub fn text_bytes(&self) -> u64 {
        let messages: usize = self.messages.iter().map(|m| message_bytes(&m.message)).sum();
        let results: usize = self
            .tool_calls
            .iter()
            .filter_map(|call| call.outcome.as_ref())
            .map(ToolCallOutcome::text_bytes)
            .sum::<usize>()
            + self.side_records.iter().map(SideRecord::text_bytes).sum::<usize>();
        let outputs: usize = self.tasks.iter().filter_map(|t| t.output.as_ref()).map(|o| o.raw.len()).sum();
        (messages + results + outputs) as u64
    }

    /// The tool call with this id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolCallRecord> {
        self.tool_calls.iter().find(|c| c.id == id)
    }
}

/// A tenant's daily spend caps (`max_tokens_per_day`, `max_cost_usd_per_day`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DayCaps {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

impl DayCaps {
    /// The run fails (`budget`) if the tenant's spend today would be `tokens` and `cost_usd`
    /// over a cap; `call` says which call, as the message begins it.
    pub fn check(&self, tokens: u64, cost_usd: f64, call: &str) -> Result<(), String> {
        if let Some(max) = self.max_tokens.filter(|max| tokens > *max) {
            return Err(format!(
                "the tenant is over its daily token cap: {call} its spend today to {tokens} tokens, over max_tokens_per_day = {max}"
            ));
        }
        if let Some(max) = self.max_cost_usd.filter(|max| cost_usd > *max) {
            return Err(format!(
                "the tenant is over its daily cost cap: {call} its spend today to ${cost_usd:.6}, over max_cost_usd_per_day = ${max}"
            ));
        }
        Ok(())
    }
}

/// Where the engine persists a run.
pub trait Journal: Send + Sync {
    /// The run this journal is of.
    fn run_id(&self) -> crate::domain::RunId;
    /// The claim this journal writes for (every attempt of a run has its own spans).
    fn attempt(&self) -> i32 {
        1
    }
    /// The tenant that owns the run (its tools read this tenant's secrets only).
    fn tenant(&self) -> &crate::domain::TenantId {
        &crate::domain::tenant::DEFAULT_TENANT_ID
    }
    /// The owning tenant's daily spend caps, if it has any.
    fn day_caps(&self) -> Option<DayCaps> {
        None
    }
    /// What the owning tenant has spent today (UTC), tokens and US dollars, as committed.
    fn spent_today(&self) -> JournalFuture<'_, (u64, f64)> {
        Box::pin(async { Ok((0, 0.0)) })
    }
    /// Everything journaled so far.
    fn load(&self) -> JournalFuture<'_, Snapshot>;
    /// Write one step atomically.
    fn commit(&self, step: Step) -> JournalFuture<'_, ()>;
}

/// A journal in memory, for tests of the engine without a database.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    run_id: crate::domain::RunId,
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    snapshot: Snapshot,
    events: Vec<NewEvent>,
    run: Option<RunChange>,
    usage: UsageDelta,
    spend: Vec<UsageLine>,
    commits: usize,
}

impl MemoryJournal {
    /// A journal for a run with these tasks, all pending.
    pub fn new(tasks: &[&str]) -> Self {
        let tasks = tasks
            .iter()
            .map(|name| TaskRecord { name: (*name).to_owned(), status: TaskStatus::Pending, output: None })
            .collect();
        let state =
            MemoryState { snapshot: Snapshot { tasks, ..Snapshot::default() }, ..MemoryState::default() };
        Self { run_id: crate::domain::RunId::new(), state: Mutex::new(state) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut MemoryState) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut state)
    }

    pub fn snapshot(&self) -> Snapshot {
        self.with(|s| s.snapshot.clone())
    }

    pub fn events(&self) -> Vec<NewEvent> {
        self.with(|s| s.events.clone())
    }

    pub fn run(&self) -> Option<RunChange> {
        self.with(|s| s.run.clone())
    }

    pub fn usage(&self) -> UsageDelta {
        self.with(|s| s.usage)
    }

    /// The usage split by task, agent and model.
    pub fn spend(&self) -> Vec<UsageLine> {
        self.with(|s| s.spend.clone())
    }

    pub fn commits(&self) -> usize {
        self.with(|s| s.commits)
    }
}

impl Journal for MemoryJournal {
    fn run_id(&self) -> crate::domain::RunId {
        self.run_id
    }

    fn load(&self) -> JournalFuture<'_, Snapshot> {
        let snapshot = self.snapshot();
        Box::pin(async move { Ok(snapshot) })
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        self.with(|state| state.apply(step));
        Box::pin(async { Ok(()) })
    }
}

impl MemoryState {
    fn apply(&mut self, step: Step) {
        self.commits += 1;
        let snapshot = &mut self.snapshot;
        snapshot.messages.extend(step.messages.into_iter().map(|m| MessageRecord {
            conversation: m.conversation,
            message: m.message,
            compacts: m.compacts,
        }));
        snapshot.tool_calls.extend(step.tool_starts.into_iter().map(|s| ToolCallRecord {
            id: s.id,
            conversation: s.conversation,
            tool: s.tool,
            arguments: s.arguments,
            outcome: None,
            approval: s.approval,
        }));
        snapshot.side_records.extend(step.side_records);
        for end in step.tool_ends {
            if let Some(call) = snapshot.tool_calls.iter_mut().find(|c| c.id == end.id) {
                call.outcome = Some(end.outcome);
            }
        }
        for change in step.tasks {
            let (name, status, output) = match change {
                TaskChange::Started { task } => (task, TaskStatus::Running, None),
                TaskChange::AwaitingReview { task, output } => (task, TaskStatus::Running, Some(output)),
                TaskChange::Completed { task, output } => (task, TaskStatus::Completed, Some(output)),
                TaskChange::Failed { task, .. } => (task, TaskStatus::Failed, None),
            };
            if let Some(record) = snapshot.tasks.iter_mut().find(|t| t.name == name) {
                record.status = status;
                record.output = output.or(record.output.take());
            }
        }
        if step.run.is_some() {
            self.run = step.run;
        }
        self.usage.add(&step.usage);
        snapshot.spent_tokens += (step.usage.prompt_tokens + step.usage.completion_tokens).max(0) as u64;
        snapshot.spent_cost_usd += step.usage.cost_usd;
        for line in &step.spend {
            merge_spend(&mut self.spend, line);
        }
        self.events.extend(step.events);
    }
}

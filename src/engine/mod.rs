//! The engine: executes a crew's tasks with its agents. Per task, the agent loop calls the model,
//! reads its reply (native tool calls or ReAct text), runs tools and feeds observations back until
//! a final answer. Every step goes through a [`Journal`], so a run can be rebuilt and continued
//! after a crash; the engine itself never touches SQL or HTTP-server types.
//!
//! The modules form a one-way graph, each using only those after it:
//!
//! ```text
//! runtime ─► process ─► plan ─► agent ─► calls (a tool round), guardrail ─► turn ─► effects ─► journal
//!    └─► assemble (turns from the crew spec)      delegation (coworkers) ─► agent
//! ```
//!
//! [`Engine`] (`runtime`) sets up a run; `process` orders its tasks; `assemble` makes each task's
//! [`turn::AgentTurn`]; `plan` splits a task into steps; `agent` is the loop of one conversation;
//! `calls` runs one reply's tool calls and `guardrail` judges an answer; `turn` journals messages
//! and events and makes side calls; `effects` is the one way out (model and tool calls, and the
//! commit-before-effect rule); `delegation` is the crew's agents as coworkers, reached from
//! `effects` through the [`Coworkers`] trait; `schemas` holds the run's JSON schemas, compiled
//! once by `runtime` and handed to the turns by `assemble`; `knowledge` gives a task's prompt what
//! its crew's knowledge bases hold (through the [`knowledge::KnowledgeSource`] the composition
//! root hands in) and makes the `search_knowledge` tool; `memory` recalls a crew's memories into a
//! task's prompt (through the [`memory::MemorySource`]) and saves what a completed task leaves;
//! `mcp` lists a crew's MCP servers' tools (a call of the effects layer) and makes their entries.
//! `keys`, `prompts`, `react`, `repair` and `toolbox` are leaves.

mod agent;
mod assemble;
mod calls;
mod delegation;
mod effects;
pub mod guardrail;
pub mod journal;
mod judge;
pub mod keys;
pub mod knowledge;
mod mcp;
pub mod memory;
pub mod plan;
mod process;
pub mod prompts;
pub mod react;
pub mod repair;
mod runtime;
mod schemas;
pub mod toolbox;
mod turn;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use journal::{Journal, JournalError, Snapshot};
pub use runtime::{Engine, EngineParts, RunJob};
use toolbox::{DelegateMode, RunTools};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::domain::{ErrorKind, RunLimits};
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;

/// Why the engine stopped without an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The run was cancelled; in-flight calls were abandoned.
    #[error("the run was cancelled")]
    Cancelled,
    /// The journal refused a write (lease lost) or failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A task's answer awaits a human's review (journaled as `run.awaiting_input`); the run
    /// continues when it is resumed.
    #[error("the run awaits human input")]
    AwaitingInput,
    /// The run failed (already journaled as `task.failed` / `run.failed`).
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
}

impl EngineError {
    pub fn failed(kind: ErrorKind, message: impl Into<String>) -> Self {
        EngineError::Failed { kind, message: message.into() }
    }
}

/// A piece of a streamed reply, for the run's live followers (never journaled).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveDelta {
    pub run_id: crate::domain::RunId,
    pub task: String,
    pub agent: String,
    /// The agent's iteration (its turn, from 1).
    pub iteration: u32,
    /// The call's attempt, from 1: a retried call starts its text again.
    pub attempt: u32,
    pub text: String,
}

impl LiveDelta {
    /// Is `other` more of the same reply (same run, task, agent, iteration and attempt)?
    pub fn same_reply(&self, other: &LiveDelta) -> bool {
        (self.run_id, &self.task, &self.agent, self.iteration, self.attempt)
            == (other.run_id, &other.task, &other.agent, other.iteration, other.attempt)
    }
}

/// Where a streaming run's deltas go (the worker's relay to every replica's streams). `publish`
/// must not block: it is called as the reply's bytes arrive.
pub trait DeltaPublisher: Send + Sync {
    fn publish(&self, delta: LiveDelta);

    /// Resolves once every delta published before has been announced (or given up on), so that
    /// the call's `llm.finished`, committed after, reaches a stream after the reply's last delta.
    fn flushed(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
}

/// What every agent loop of one run shares.
pub struct Context<'a> {
    pub journal: &'a dyn Journal,
    /// The journal as it was when the run (re)started.
    pub snapshot: &'a Snapshot,
    pub tools: &'a RunTools,
    pub cancel: &'a CancellationToken,
    /// The agents a task can delegate to.
    pub coworkers: Option<&'a dyn Coworkers>,
    /// The requests-per-minute gates.
    pub limiter: &'a RateLimiter,
    /// Where LLM and tool latencies are recorded.
    pub metrics: &'a Metrics,
    /// What the run may still produce.
    pub budget: &'a RunBudget,
    /// Where the agents' replies are streamed to, when the run streams.
    pub deltas: Option<RunDeltas>,
    /// The recorded calls a replayed run's tool calls are answered from.
    pub replay: Option<&'a crate::domain::evaluation::Replay>,
}

impl Context<'_> {
    /// What `task`'s start journaled as `kind` (its knowledge, its memories), if the run got
    /// that far before; a record that cannot be read fails the run.
    pub(crate) fn recorded<T: serde::de::DeserializeOwned>(
        &self,
        kind: journal::SideKind,
        task: &str,
    ) -> Result<Option<T>, EngineError> {
        self.snapshot.recorded(kind, task).map_err(|e| {
            let what = kind.as_str();
            EngineError::failed(
                crate::domain::ErrorKind::Internal,
                format!("the journaled {what} of task '{task}' is unreadable: {e}"),
            )
        })
    }
}

/// A task's start as its knowledge and its memory see it: the task, its agent, and the prompt
/// they are searched with.
pub(crate) struct TaskStart<'a> {
    pub task: &'a str,
    pub agent: &'a str,
    pub query: &'a str,
}

/// A streaming run's publisher and its id.
#[derive(Clone)]
pub struct RunDeltas {
    pub publisher: std::sync::Arc<dyn DeltaPublisher>,
    pub run_id: crate::domain::RunId,
}

/// A run's [`RunLimits`] and the bytes it has journaled so far (every commit through the effects
/// layer is counted; a resumed run starts from what its journal holds).
pub struct RunBudget {
    pub limits: RunLimits,
    journaled: AtomicU64,
    /// The run's spend caps and what it has spent (tokens, US dollars).
    /// The run's spend caps and what it has spent; `None` for a run without caps (nothing to
    /// track: the journal counts usage).
    spend: Option<Box<std::sync::Mutex<Spend>>>,
}

/// A run's spend caps (`max_tokens`, `max_cost_usd`) and spend so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub tokens: u64,
    pub cost_usd: f64,
}

impl RunBudget {
    pub fn new(limits: RunLimits, journaled: u64) -> Self {
        Self { limits, journaled: AtomicU64::new(journaled), spend: None }
    }

    /// The same, with the run's spend caps and what it spent before (a resumed run); a run
    /// without caps tracks nothing.
    pub fn with_spend(mut self, spend: Spend) -> Self {
        let capped = spend.max_tokens.is_some() || spend.max_cost_usd.is_some();
        self.spend = capped.then(|| Box::new(std::sync::Mutex::new(spend)));
        self
    }

    fn spend_lock(&self) -> Option<std::sync::MutexGuard<'_, Spend>> {
        self.spend.as_ref().map(|spend| spend.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Has the run a spend cap?
    pub fn is_capped(&self) -> bool {
        self.spend.is_some()
    }

    /// What the run has spent so far (tracked for a run with caps only).
    pub fn spent(&self) -> Spend {
        self.spend_lock().map(|spend| *spend).unwrap_or_default()
    }

    /// Before a call estimated at `tokens` costing `cost_usd`: would it take the run over a cap?
    pub fn check_spend(&self, tokens: u64, cost_usd: f64) -> Result<(), EngineError> {
        let Some(spend) = self.spend_lock().map(|spend| *spend) else { return Ok(()) };
        over_budget(
            &spend,
            spend.tokens + tokens,
            spend.cost_usd + cost_usd,
            "the next model call would take",
        )
    }

    /// After a call: count what it used; over a cap, the run stops.
    pub fn spend(&self, tokens: u64, cost_usd: f64) -> Result<(), EngineError> {
        let before = {
            let Some(mut spend) = self.spend_lock() else { return Ok(()) };
            let before = *spend;
            spend.tokens += tokens;
            spend.cost_usd += cost_usd;
            before
        };
        over_budget(&before, before.tokens + tokens, before.cost_usd + cost_usd, "a model call took")
    }

    /// Count `bytes` about to be journaled: over the run's journal limit, the run fails.
    pub fn charge(&self, bytes: u64) -> Result<(), EngineError> {
        let total = self.journaled.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let max = self.limits.max_journal_bytes;
        if total > max {
            return Err(EngineError::failed(
                ErrorKind::Limit,
                format!(
                    "the run has journaled {total} bytes, over the limit of {max} (max_run_journal_bytes)"
                ),
            ));
        }
        Ok(())
    }

    /// A model reply of `bytes`: over the reply limit, the run fails.
    pub fn check_reply(&self, bytes: usize) -> Result<(), EngineError> {
        let max = self.limits.max_reply_bytes;
        if bytes > max {
            let message =
                format!("the model's reply of {bytes} bytes is over the limit of {max} (max_reply_bytes)");
            return Err(EngineError::failed(ErrorKind::Limit, message));
        }
        Ok(())
    }

    /// Task `task`'s output of `bytes`: over the task output limit, the task and run fail.
    pub fn check_task_output(&self, task: &str, bytes: usize) -> Result<(), EngineError> {
        let max = self.limits.max_task_output_bytes;
        if bytes > max {
            let message = format!(
                "task '{task}' produced {bytes} bytes of output, over the limit of {max} (max_task_output_bytes)"
            );
            return Err(EngineError::failed(ErrorKind::Limit, message));
        }
        Ok(())
    }
}

/// A run whose spend would be (or is) `tokens` and `cost_usd` after a call, over one of the caps
/// of `before` (its spend before the call); `call` says which call, as the message begins it.
fn over_budget(before: &Spend, tokens: u64, cost_usd: f64, call: &str) -> Result<(), EngineError> {
    if let Some(max) = before.max_tokens.filter(|max| tokens > *max) {
        let message = format!(
            "the run is over its token budget: {call} it to {tokens} tokens, over max_tokens = {max} ({} used before it)",
            before.tokens
        );
        return Err(EngineError::failed(ErrorKind::Budget, message));
    }
    if let Some(max) = before.max_cost_usd.filter(|max| cost_usd > *max) {
        let message = format!(
            "the run is over its cost budget: {call} it to ${cost_usd:.6}, over max_cost_usd = ${max} (${:.6} spent before it)",
            before.cost_usd
        );
        return Err(EngineError::failed(ErrorKind::Budget, message));
    }
    Ok(())
}

/// The outcome of a delegation: the coworker's answer or an observation saying why not, or an
/// error that stops the run.
pub type DelegationFuture<'b> =
    Pin<Box<dyn Future<Output = Result<Result<String, String>, EngineError>> + Send + 'b>>;

/// What a manager asks of a coworker: work or an answer (`mode`), as the delegation tool's
/// `arguments` say (the coworker named in them), in a conversation of its own within `task`.
pub struct Delegation<'b> {
    pub task: &'b str,
    pub conversation: keys::JournalKey,
    pub mode: DelegateMode,
    pub arguments: &'b Value,
}

/// The crew's agents, reachable through the delegation tools.
pub trait Coworkers: Send + Sync {
    /// Let a coworker do what `request` asks.
    fn delegate<'b>(&'b self, ctx: &'b Context<'b>, request: Delegation<'b>) -> DelegationFuture<'b>;
}

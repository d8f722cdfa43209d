//! The engine: executes a crew's tasks with its agents. Per task, the agent loop calls the model,
//! reads its reply (native tool calls or ReAct text), runs tools and feeds observations back until
//! a final answer. Every step goes through a [`Journal`], so a run can be rebuilt and continued
//! after a crash; the engine itself never touches SQL or HTTP-server types.

pub mod agent;
mod calls;
pub mod crew;
mod effects;
pub mod guardrail;
pub mod journal;
pub mod keys;
pub mod plan;
pub mod prompts;
pub mod react;
pub mod repair;
pub mod toolbox;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crew::Engine;
use journal::{Journal, JournalError, Snapshot, Step};
use toolbox::{DelegateMode, RunTools};

use crate::domain::ErrorKind;
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
}

/// The outcome of a delegation: the coworker's answer or an observation saying why not, or an
/// error that stops the run.
pub type DelegationFuture<'b> =
    Pin<Box<dyn Future<Output = Result<Result<String, String>, EngineError>> + Send + 'b>>;

/// The crew's agents, reachable through the delegation tools.
pub trait Coworkers: Send + Sync {
    /// Let a coworker (named in `arguments`) do work or answer a question, in its own
    /// conversation `conversation` within `task`.
    fn delegate<'b>(
        &'b self,
        ctx: &'b Context<'b>,
        task: &'b str,
        conversation: String,
        mode: DelegateMode,
        arguments: &'b Value,
    ) -> DelegationFuture<'b>;
}

impl Context<'_> {
    /// Commit what is pending, if anything.
    pub async fn commit(&self, pending: &mut Step) -> Result<(), EngineError> {
        if pending.is_empty() {
            return Ok(());
        }
        let step = std::mem::take(pending);
        self.journal.commit(step).await.map_err(EngineError::Journal)
    }

    /// Commit what is pending while `work` goes on, and return what `work` gives; a failed commit
    /// (a lost lease, say) drops the work.
    pub async fn commit_alongside<F: Future>(
        &self,
        pending: &mut Step,
        work: F,
    ) -> Result<F::Output, EngineError> {
        let commit = self.commit(pending);
        tokio::pin!(commit, work);
        tokio::select! {
            committed = &mut commit => {
                committed?;
                Ok(work.await)
            }
            output = &mut work => {
                commit.await?;
                Ok(output)
            }
        }
    }

    /// Await `future` unless the run is cancelled first (`None`).
    pub async fn guarded<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            output = future => Some(output),
        }
    }
}

//! The engine's [`Journal`] on Postgres, for one attempt of one run: a commit writes a whole
//! [`Step`] in one transaction, fenced by the run's `attempt` (a worker whose lease went to another
//! claim cannot write); a load reads back the tasks, messages and tool calls the run has journaled.

mod load;
mod write;

use sqlx::{Postgres, Transaction};

use super::{Store, StoreError};
use crate::domain::{RunId, RunStatus};
use crate::engine::journal::{Journal, JournalError, JournalFuture, Snapshot, Step};

/// The journal of one attempt of a run (from [`Store::journal`]).
#[derive(Debug, Clone)]
pub struct RunJournal {
    store: Store,
    run_id: RunId,
    attempt: i32,
}

impl Store {
    /// The journal through which the worker holding `attempt` of `run_id` persists it.
    pub fn journal(&self, run_id: RunId, attempt: i32) -> RunJournal {
        RunJournal { store: self.clone(), run_id, attempt }
    }
}

/// Why a commit did not happen.
#[derive(Debug)]
enum CommitError {
    Fenced,
    /// The step contradicts the journal (an unknown task, a tool call that never started):
    /// an engine bug, reported without writing anything.
    Rejected(String),
    Store(StoreError),
}

impl From<StoreError> for CommitError {
    fn from(e: StoreError) -> Self {
        CommitError::Store(e)
    }
}

impl From<sqlx::Error> for CommitError {
    fn from(e: sqlx::Error) -> Self {
        CommitError::Store(e.into())
    }
}

impl RunJournal {
    pub fn run_id(&self) -> RunId {
        self.run_id
    }

    pub fn attempt(&self) -> i32 {
        self.attempt
    }

    /// Failures are logged here with their cause; the engine gets [`describe`]'s summary.
    #[tracing::instrument(skip_all, fields(run_id = %self.run_id, attempt = self.attempt))]
    async fn load_snapshot(&self) -> Result<Snapshot, JournalError> {
        load::snapshot(&self.store, self.run_id).await.map_err(|e| {
            tracing::error!(error = %e, "loading the journal failed");
            JournalError::Storage(describe(&e))
        })
    }

    #[tracing::instrument(skip_all, fields(run_id = %self.run_id, attempt = self.attempt))]
    async fn commit_step(&self, step: Step) -> Result<(), JournalError> {
        self.try_commit(step).await.map_err(|e| match e {
            CommitError::Fenced => {
                tracing::warn!("journal commit fenced: the run is no longer this attempt's");
                JournalError::Fenced
            }
            CommitError::Rejected(reason) => {
                tracing::error!(%reason, "journal commit rejected");
                JournalError::Storage(reason)
            }
            CommitError::Store(e) => {
                tracing::error!(error = %e, "journal commit failed");
                JournalError::Storage(describe(&e))
            }
        })
    }

    /// Lock the run, check the fence, then write the step's parts in order; any failure rolls the
    /// whole step back (dropping the transaction).
    async fn try_commit(&self, step: Step) -> Result<(), CommitError> {
        let mut tx = self.store.pool.begin().await?;
        if !self.holds_run(&mut tx).await? {
            tx.rollback().await?;
            return Err(CommitError::Fenced);
        }
        let (run_id, attempt) = (self.run_id, self.attempt);
        write::messages(&mut tx, run_id, attempt, &step.messages).await?;
        write::tool_starts(&mut tx, run_id, attempt, &step.tool_starts).await?;
        write::tool_ends(&mut tx, run_id, &step.tool_ends).await?;
        write::task_changes(&mut tx, run_id, &step.tasks).await?;
        write::run_change_and_usage(&mut tx, run_id, step.run.as_ref(), step.usage).await?;
        write::events(&mut tx, run_id, &step.events).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Lock the run row (serialising this run's writers) and tell whether this attempt may still
    /// write: the run exists, no later claim took it, it is not finished, and it was not put back
    /// in the queue (a queued run has no lease holder).
    async fn holds_run(&self, tx: &mut Transaction<'_, Postgres>) -> Result<bool, CommitError> {
        let row = sqlx::query!("SELECT attempt, status FROM runs WHERE id = $1 FOR UPDATE", self.run_id.0)
            .fetch_optional(&mut **tx)
            .await?;
        let Some(row) = row else { return Ok(false) };
        let status: RunStatus = super::parse(&row.status)?;
        Ok(row.attempt == self.attempt && !status.is_terminal() && status != RunStatus::Queued)
    }
}

/// What the engine may see of a store failure: its class, never SQL text or server internals
/// (those are logged).
fn describe(e: &StoreError) -> String {
    match e {
        StoreError::Database(
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_),
        ) => "the database is unavailable".into(),
        StoreError::Database(_) | StoreError::Migrate(_) => "database error".into(),
        StoreError::Corrupt(what) => format!("corrupt row: {what}"),
    }
}

impl Journal for RunJournal {
    fn load(&self) -> JournalFuture<'_, Snapshot> {
        Box::pin(self.load_snapshot())
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        Box::pin(self.commit_step(step))
    }
}

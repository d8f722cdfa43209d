//! The engine's [`Journal`] on Postgres, for one attempt of one run: a commit writes a whole
//! [`Step`] atomically, fenced by the run's `attempt` (a worker whose lease went to another claim
//! cannot write); a load reads back the tasks, messages, tool calls and side records the run has
//! journaled.
//! Commits go through the journal's group commit (see [`group`](super::group)): the steps of
//! many runs share a transaction under load.

mod load;
mod write;

use super::group::{Failure, GroupWrite, Held};
use super::{Store, StoreError};
use crate::domain::RunId;
use crate::engine::journal::{DayCaps, Journal, JournalError, JournalFuture, Snapshot, Step};

/// The journal of one attempt of a run (from [`Store::journal`]).
#[derive(Debug, Clone)]
pub struct RunJournal {
    store: Store,
    run_id: RunId,
    attempt: i32,
    tenant: crate::domain::TenantId,
    /// The tenant's daily caps, as the claim read them (boxed: a run of a tenant without caps
    /// carries nothing more).
    caps: Option<Box<DayCaps>>,
}

impl Store {
    /// The journal through which the worker holding `attempt` of `run_id` persists it (a run of
    /// the `default` tenant; [`Store::claimed_journal`] knows a claimed run's).
    pub fn journal(&self, run_id: RunId, attempt: i32) -> RunJournal {
        let tenant = crate::domain::DEFAULT_TENANT_ID.clone();
        RunJournal { store: self.clone(), run_id, attempt, tenant, caps: None }
    }

    /// The journal of a claimed run's attempt.
    pub fn claimed_journal(&self, claimed: &super::ClaimedRun) -> RunJournal {
        RunJournal {
            store: self.clone(),
            run_id: claimed.id,
            attempt: claimed.attempt,
            tenant: claimed.tenant.clone(),
            caps: claimed.quotas.as_ref().filter(|q| q.caps_spend()).map(|q| {
                Box::new(DayCaps { max_tokens: q.max_tokens_per_day, max_cost_usd: q.max_cost_usd_per_day })
            }),
        }
    }
}

/// Why a commit did not happen.
#[derive(Debug)]
pub(super) enum CommitError {
    Fenced,
    /// The step contradicts the journal (an unknown task, a tool call that never started):
    /// an engine bug, reported without writing anything.
    Rejected(String),
    Store(StoreError),
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
    async fn commit_step(&self, mut step: Step) -> Result<(), JournalError> {
        step.scrub_nul();
        let settles = step.may_settle();
        if settles {
            self.store.local_runs().settling(self.run_id);
        }
        // A waiter here for the run is answered with the run as this step leaves it, read in the
        // step's transaction (no read of its own after).
        let read_back = settles && self.store.local_runs().is_awaited(self.run_id);
        crate::probe::mark(self.run_id.0, "engine.work");
        let committed = self.try_commit(step, read_back).await;
        crate::probe::mark(self.run_id.0, "journal.commit");
        let committed = committed.map(|run| {
            if settles {
                self.store.local_runs().settled(self.run_id, run);
            }
        });
        committed.map_err(|e| match e {
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

    async fn try_commit(&self, step: Step, read_back: bool) -> Answer {
        let commit = Commit { run_id: self.run_id, attempt: self.attempt, step, read_back };
        self.store.journal_group().submit(commit).await
    }
}

/// A step to commit for an attempt of a run.
pub(super) struct Commit {
    run_id: RunId,
    attempt: i32,
    step: Step,
    /// Read the run back (as the API shows it) in the step's transaction, after the step.
    read_back: bool,
}

/// How a commit ended: with the run as the step left it, when it was to be read back.
pub(super) type Answer = Result<Option<Box<crate::domain::Run>>, CommitError>;

/// The journal's group commit: the steps of a batch (at most one per run) are fenced together,
/// then each part of them is written with one statement, in one transaction.
pub(super) struct JournalWrite;

impl GroupWrite for JournalWrite {
    type Item = Commit;
    type Output = Answer;
    const MAX_BATCH: usize = 256;

    fn key(commit: &Commit) -> Option<uuid::Uuid> {
        Some(commit.run_id.0)
    }

    /// Fence and write the steps with one call of `agentd_journal_write`; a batch with memories
    /// to save or a settled run to read back does those in the same transaction, after it (a
    /// refused step rolls the whole batch back: the function raised, or the transaction is
    /// dropped).
    async fn write(held: &mut Held, commits: &[Commit]) -> Result<Vec<Answer>, Failure<Answer>> {
        for (index, commit) in commits.iter().enumerate() {
            write::check(commit).map_err(|e| Failure::Item(index, Err(e)))?;
        }
        let parts = write::parts(commits)?;
        let connection = held.get().await?;
        let (holds, mut read) = if commits.iter().any(|c| c.read_back || !c.step.memories.is_empty()) {
            let mut tx = sqlx::Connection::begin(connection).await?;
            let holds = write::write(&mut *tx, &parts).await?;
            let live: Vec<write::Live<'_>> =
                commits.iter().enumerate().filter(|(index, _)| holds[*index]).collect();
            write::memories(&mut tx, &live).await?;
            let wanted: Vec<uuid::Uuid> =
                live.iter().filter(|(_, c)| c.read_back).map(|(_, c)| c.run_id.0).collect();
            let read = match wanted.is_empty() {
                true => Vec::new(),
                false => super::runs::runs_as_shown(&mut tx, &wanted).await?,
            };
            tx.commit().await?;
            (holds, read)
        } else {
            // The common batch: one statement, committed on its own.
            (write::write(&mut *connection, &parts).await?, Vec::new())
        };
        Ok(commits
            .iter()
            .zip(holds)
            .map(|(commit, held)| match held {
                false => Err(CommitError::Fenced),
                true => Ok(read
                    .iter()
                    .position(|run| run.id == commit.run_id && commit.read_back)
                    .map(|at| Box::new(read.swap_remove(at)))),
            })
            .collect())
    }

    fn failed(error: StoreError) -> Answer {
        Err(CommitError::Store(error))
    }
}

/// What the engine may see of a store failure: its class, never SQL text or server internals
/// (those are logged).
fn describe(e: &StoreError) -> String {
    match e {
        e if e.is_unavailable() => "the database is unavailable".into(),
        StoreError::Group(inner) => describe(inner),
        StoreError::Corrupt(what) => format!("corrupt row: {what}"),
        _ => "database error".into(),
    }
}

impl Journal for RunJournal {
    fn run_id(&self) -> RunId {
        self.run_id
    }

    fn attempt(&self) -> i32 {
        RunJournal::attempt(self)
    }

    fn tenant(&self) -> &crate::domain::TenantId {
        &self.tenant
    }

    fn day_caps(&self) -> Option<DayCaps> {
        self.caps.as_deref().copied()
    }

    fn spent_today(&self) -> JournalFuture<'_, (u64, f64)> {
        Box::pin(async move {
            self.store
                .spent_today(&self.tenant)
                .await
                .map_err(|e| JournalError::Storage(format!("the tenant's spend today: {}", describe(&e))))
        })
    }

    fn load(&self) -> JournalFuture<'_, Snapshot> {
        Box::pin(self.load_snapshot())
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        Box::pin(self.commit_step(step))
    }
}

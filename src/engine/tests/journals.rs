//! The journals a scenario runs against: the in-memory journal, and a claimed run's journal in
//! Postgres (a fresh database per test). Every scenario of the contract suite runs on both
//! ([`on_both_journals!`]): what the engine journals, the Postgres journal stores and loads back
//! alike, and a run resumed from either continues the same way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use sqlx::PgPool;

use crate::domain::kickoff::NewRun;
use crate::domain::{CrewSpec, RunId, RunStatus};
use crate::engine::journal::{
    Journal, JournalFuture, MemoryJournal, NewEvent, RunChange, Snapshot, Step, UsageDelta,
};
use crate::store::{RunJournal, Store};

/// Where a scenario's journal lives.
pub enum Backend {
    Memory,
    Postgres(Store),
}

impl Backend {
    pub fn postgres(pool: PgPool) -> Self {
        Backend::Postgres(Store::new(pool))
    }

    /// A journal for a run of `crew` with `inputs`, nothing done yet.
    pub async fn journal(&self, crew: &CrewSpec, inputs: &Map<String, Value>) -> Subject {
        match self {
            Backend::Memory => {
                let tasks: Vec<&str> = crew.tasks.iter().map(|t| t.name.as_str()).collect();
                Subject::Memory(Box::new(MemoryJournal::new(&tasks)))
            }
            Backend::Postgres(store) => {
                let run = NewRun {
                    id: RunId::new(),
                    tenant: crate::domain::DEFAULT_TENANT.into(),
                    crew: crew.clone(),
                    crew_version: None,
                    inputs: inputs.clone(),
                    metadata: Map::new(),
                    timeout_s: None,
                    fake_llm: false,
                    webhooks: Vec::new(),
                    trace: None,
                    thread: None,
                    max_queued: None,
                };
                store.create_run(&run).await.expect("create the run");
                let claimed = store
                    .claim_run(run.id, "contract-suite", Duration::from_secs(600))
                    .await
                    .expect("claim")
                    .expect("the run is queued");
                let journal = store.journal(claimed.id, claimed.attempt);
                Subject::Postgres { store: store.clone(), id: run.id, journal, commits: AtomicUsize::new(0) }
            }
        }
    }
}

/// A scenario's journal, with what the scenario reads back from it.
pub enum Subject {
    Memory(Box<MemoryJournal>),
    /// `commits`: how many commits the engine made (the in-memory journal counts its own).
    Postgres {
        store: Store,
        id: RunId,
        journal: RunJournal,
        commits: AtomicUsize,
    },
}

impl Journal for Subject {
    fn run_id(&self) -> RunId {
        match self {
            Subject::Memory(journal) => journal.run_id(),
            Subject::Postgres { journal, .. } => journal.run_id(),
        }
    }

    fn load(&self) -> JournalFuture<'_, Snapshot> {
        match self {
            Subject::Memory(journal) => journal.load(),
            Subject::Postgres { journal, .. } => journal.load(),
        }
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        match self {
            Subject::Memory(journal) => journal.commit(step),
            Subject::Postgres { journal, commits, .. } => {
                commits.fetch_add(1, Ordering::SeqCst);
                journal.commit(step)
            }
        }
    }
}

impl Subject {
    /// What the journal holds, as a resumed run would load it.
    pub async fn snapshot(&self) -> Snapshot {
        self.load().await.expect("load the journal")
    }

    /// The events the engine wrote, in order (in Postgres without the store's own `run.queued` and
    /// `run.started`).
    pub async fn events(&self) -> Vec<NewEvent> {
        match self {
            Subject::Memory(journal) => journal.events(),
            Subject::Postgres { store, id, .. } => {
                let events = store.list_events(*id, 2, 100_000).await.expect("events");
                events
                    .into_iter()
                    .map(|e| NewEvent {
                        event_type: e.event_type,
                        task: e.task,
                        agent: e.agent,
                        data: e.data,
                    })
                    .collect()
            }
        }
    }

    /// The run's usage counters.
    pub async fn usage(&self) -> UsageDelta {
        match self {
            Subject::Memory(journal) => journal.usage(),
            Subject::Postgres { store, id, .. } => {
                let usage = store.get_run(*id).await.expect("get").expect("the run").usage;
                UsageDelta {
                    llm_calls: usage.llm_calls,
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    cached_tokens: usage.cached_tokens,
                    estimated_tokens: usage.estimated_tokens,
                    tool_calls: usage.tool_calls,
                    cost_usd: usage.cost_usd,
                }
            }
        }
    }

    /// How the run ended, if the engine journaled its end.
    pub async fn run(&self) -> Option<RunChange> {
        match self {
            Subject::Memory(journal) => journal.run(),
            Subject::Postgres { store, id, .. } => {
                let run = store.get_run(*id).await.expect("get").expect("the run");
                match run.status {
                    RunStatus::Completed => {
                        Some(RunChange::Completed { output: run.output.expect("output") })
                    }
                    RunStatus::Failed => Some(RunChange::Failed { error: run.error.expect("error") }),
                    RunStatus::AwaitingInput => Some(RunChange::AwaitingInput),
                    _ => None,
                }
            }
        }
    }

    /// How many commits the engine made.
    pub fn commits(&self) -> usize {
        match self {
            Subject::Memory(journal) => journal.commits(),
            Subject::Postgres { commits, .. } => commits.load(Ordering::SeqCst),
        }
    }
}

/// Run each named scenario (`async fn name(backend: Backend)`) on both journals, as
/// `in_memory::name` and `in_postgres::name`.
macro_rules! on_both_journals {
    ($($name:ident),* $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::engine::tests::journals::Backend::Memory).await
                }
            )*
        }

        mod in_postgres {
            $(
                #[sqlx::test(migrator = "crate::store::MIGRATOR")]
                async fn $name(pool: sqlx::PgPool) {
                    super::$name(crate::engine::tests::journals::Backend::postgres(pool)).await
                }
            )*
        }
    };
}

pub(crate) use on_both_journals;

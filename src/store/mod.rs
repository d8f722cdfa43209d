//! Every SQL statement agentd runs, behind [`Store`]: runs and their tasks, the queue claim, the
//! journal (read by the API, written through [`RunJournal`]), the event log, registered crews and
//! idempotency keys, and the notification channels ([`Store::listen`], the one reconnecting
//! `LISTEN` stream). Postgres types, connections and the pool do not leave this module; callers see
//! domain types.

mod approval;
mod audit;
mod claim;
mod crews;
mod events;
mod forks;
mod group;
mod journal;
mod knowledge;
mod lease;
mod listen;
mod local;
mod memory;
mod pause;
mod rate;
mod retention;
mod review;
mod run_journal;
mod runs;
mod schedules;
mod secrets;
mod tenants;
mod threads;
mod vectors;
mod webhooks;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

pub use approval::{DecideOutcome, PendingCall};
pub use audit::{Audit, AuditFilter, Outcome, Owner};
pub use claim::{ClaimedRun, LocalWorkers, Reservation};
pub use events::LoggedEvent;
pub use forks::{ForkSource, Forked, Retried};
use group::Group;
pub use group::GroupStats;
pub use knowledge::{Ingested, LeasedDocument, NewBase, NewChunk, NewDocument, Reach, KNOWLEDGE_CHANNEL};
pub use lease::{CancelOutcome, Lease, Recovered};
pub use listen::{
    Listened, Notification, CANCEL_CHANNEL, DELTAS_CHANNEL, EVENTS_CHANNEL, RUNS_CHANNEL, WEBHOOKS_CHANNEL,
};
pub use local::{Executes, LocalRuns, Settled};
pub use retention::{Deleted, Pruned};
pub use review::ResumeOutcome;
pub use run_journal::RunJournal;
pub use runs::{Created, IdempotencyKey, KickoffClaim};
pub use schedules::{DueSchedule, ScheduleFields, TickAction};
pub use secrets::SealedSecret;
pub use tenants::{KeyCandidate, KeyStanding, NewKey, TenantLoad};
pub use threads::{ThreadDeleted, ThreadKickoff};
pub use webhooks::{
    Delivered, DeliveryTarget, EndpointPatch, FailedAttempt, LeasedQueue, NewEndpoint, OutboxGauges,
    PendingDelivery,
};

/// The schema migrations, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Errors of the store. A database error is an internal failure; callers never show its text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A row holds data the code cannot read (a bug or a manual edit).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The grouped write this one was part of failed (see `group`).
    #[error("{0}")]
    Group(Arc<StoreError>),
    /// The store is shutting down: its writers are gone.
    #[error("the store has stopped")]
    Stopped,
}

impl StoreError {
    /// Is the database out of reach (rather than refusing this particular write)?
    pub fn is_unavailable(&self) -> bool {
        // Class 57P: the server is shutting down, restarting or starting up ("cannot connect now").
        let out_of_reach = |error: &sqlx::Error| match error {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_) => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| code.starts_with("57P")),
            _ => false,
        };
        match self {
            StoreError::Database(error)
            | StoreError::Migrate(sqlx::migrate::MigrateError::Execute(error)) => out_of_reach(error),
            StoreError::Stopped => true,
            StoreError::Group(inner) => inner.is_unavailable(),
            _ => false,
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

/// The handle every component uses to reach Postgres. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: PgPool,
    groups: Arc<Groups>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("pool", &self.pool).finish_non_exhaustive()
    }
}

/// What the store's clones share: the group-commit writers (see `group`), started on first use
/// and stopped when the last clone of the store is dropped, and the runs executing here.
#[derive(Default)]
struct Groups {
    journal: OnceLock<Group<run_journal::JournalWrite>>,
    kickoffs: OnceLock<Group<runs::KickoffWrite>>,
    leases: OnceLock<Group<lease::RenewWrite>>,
    /// The runs executing in this process.
    local: Arc<LocalRuns>,
}

/// Writer tasks per kind of grouped write: two, so one batch's round trips overlap another's.
const GROUP_WRITERS: usize = 2;

/// How long a pooled connection may sit idle before it is tested as it is handed out.
pub const TEST_IDLE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Store {
    /// Wrap an existing pool (tests hand in the pool of a fresh database).
    pub fn new(pool: PgPool) -> Self {
        Self { pool, groups: Arc::default() }
    }

    /// Run `delete` (a statement removing one of `tenant`'s resources) in a transaction that
    /// records `audit` when it removed anything; whether it did.
    async fn delete_audited(
        &self,
        delete: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
        tenant: &crate::domain::TenantId,
        audit: &Audit,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let removed = delete.execute(&mut *tx).await?.rows_affected() > 0;
        audit.settle(tx, removed.then_some(tenant)).await
    }

    /// The runs executing in this process ([`LocalRuns`]).
    pub fn local_runs(&self) -> &Arc<LocalRuns> {
        &self.groups.local
    }

    fn journal_group(&self) -> &Group<run_journal::JournalWrite> {
        self.groups.journal.get_or_init(|| Group::start(&self.pool, GROUP_WRITERS))
    }

    fn kickoff_group(&self) -> &Group<runs::KickoffWrite> {
        self.groups.kickoffs.get_or_init(|| Group::start(&self.pool, GROUP_WRITERS))
    }

    fn lease_group(&self) -> &Group<lease::RenewWrite> {
        self.groups.leases.get_or_init(|| Group::start(&self.pool, 1))
    }

    /// What each kind of grouped write has done so far in this process: `journal`, `kickoff`
    /// and `lease` (kinds not used yet are left out).
    pub fn group_stats(&self) -> Vec<(&'static str, GroupStats)> {
        let groups = &self.groups;
        [
            ("journal", groups.journal.get().map(Group::stats)),
            ("kickoff", groups.kickoffs.get().map(Group::stats)),
            ("lease", groups.leases.get().map(Group::stats)),
        ]
        .into_iter()
        .filter_map(|(kind, stats)| Some((kind, stats?)))
        .collect()
    }

    /// A pool that connects on first use, so the API can start (and report not-ready) while the
    /// database is still down.
    ///
    /// Every statement agentd prepares is planned once per connection (`plan_cache_mode =
    /// force_generic_plan`): its parameters are ids, arrays of rows and limits, whose values
    /// would not change a plan, and Postgres otherwise plans each of the first five executions
    /// of a statement on every connection anew, which with a pool of many connections is
    /// nearly every execution (a journal commit's statements spent more time in planning than
    /// in executing).
    ///
    /// A connection is tested (a round trip) before it is handed out only when it sat idle for
    /// [`TEST_IDLE_AFTER`] or more: one in steady use was tested as it was last released (sqlx
    /// pings every connection it takes back, and drops one that broke), and testing it again
    /// on every acquire cost each statement a round trip. One idle for longer may have been
    /// closed under it (Postgres restarted, a pooler's or a firewall's idle timeout).
    pub fn connect_lazy(options: PgConnectOptions, settings: &PoolSettings) -> Self {
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    use sqlx::Connection;
                    Ok(meta.idle_for < TEST_IDLE_AFTER || connection.ping().await.is_ok())
                })
            })
            // A statement, not a startup parameter: poolers in front of Postgres may refuse those.
            .after_connect(|connection, _| {
                Box::pin(async move {
                    sqlx::query("SET plan_cache_mode = force_generic_plan").execute(connection).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        Self::new(pool)
    }

    /// Apply pending migrations. Safe when several replicas start at once: sqlx holds a Postgres
    /// advisory lock while it migrates, so one replica migrates and the others wait, then find
    /// nothing left to do.
    #[tracing::instrument(skip_all, err)]
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Does the database answer, with every embedded migration applied?
    #[tracing::instrument(skip_all, err)]
    pub async fn check_ready(&self) -> StoreResult<bool> {
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.pool)
                .await
                .or_else(|e| match &e {
                    // The table does not exist yet: nothing is migrated.
                    sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01") => Ok(None),
                    _ => Err(e),
                })?;
        let latest = MIGRATOR.iter().map(|m| m.version).max();
        Ok(applied >= latest)
    }
}

/// Decode a JSON column into a domain type, or report the row as corrupt.
fn decode<T: serde::de::DeserializeOwned>(value: serde_json::Value, what: &str) -> StoreResult<T> {
    serde_json::from_value(value).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Decode a JSON column read as text, or report the row as corrupt.
fn decode_text<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Decode a text column through `FromStr`, or report the row as corrupt.
fn parse<T: std::str::FromStr<Err = String>>(value: &str) -> StoreResult<T> {
    value.parse().map_err(StoreError::Corrupt)
}

//! Every SQL statement agentd runs, behind [`Store`]: runs and their tasks, the queue claim, the
//! journal (read by the API, written through [`RunJournal`]), the event log, registered crews and
//! idempotency keys, and the notification channels ([`Store::listen`], the one reconnecting
//! `LISTEN` stream). Postgres types, connections and the pool do not leave this module; callers see
//! domain types.

mod approval;
mod audit;
mod claim;
mod crews;
mod evaluations;
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
pub use crews::AliasMove;
pub use evaluations::{NewEvaluation, PastRunCase};
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
    /// The database was migrated by a newer release, beyond what this binary may serve.
    #[error("{}", schema_too_new(*.binary, *.database, *.oldest))]
    SchemaTooNew { binary: i64, database: i64, oldest: Option<i64> },
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
    ///
    /// A database a newer release has migrated (it holds migrations this binary does not know) is
    /// served when it is within the compatibility window: when no migration in `schema_window`
    /// says binaries of this one's schema may no longer serve it (docs/operations.md, "Rolling
    /// upgrades"). Otherwise [`StoreError::SchemaTooNew`] names both schemas.
    #[tracing::instrument(skip_all, err)]
    pub async fn migrate(&self) -> StoreResult<()> {
        let known = schema_version();
        let newer: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE version > $1 ORDER BY version")
                .bind(known)
                .fetch_all(&self.pool)
                .await
                .or_else(|e| if is_undefined_table(&e) { Ok(Vec::new()) } else { Err(e) })?;
        let Some(&database) = newer.last() else {
            MIGRATOR.run(&self.pool).await?;
            return Ok(());
        };
        let oldest: Option<i64> = sqlx::query_scalar("SELECT max(oldest_schema) FROM schema_window")
            .fetch_one(&self.pool)
            .await
            .or_else(|e| if is_undefined_table(&e) { Ok(None) } else { Err(e) })?;
        match oldest {
            Some(oldest) if oldest <= known => {
                tracing::warn!(
                    binary_schema = known,
                    database_schema = database,
                    oldest_schema = oldest,
                    "the database's schema is newer than this binary's and within the compatibility window: serving it"
                );
                // The binary's own migrations are all applied already (the newer release has
                // them); the run checks that, with their checksums.
                let window = Migrator {
                    migrations: std::borrow::Cow::Borrowed(MIGRATOR.migrations.as_ref()),
                    ignore_missing: true,
                    locking: MIGRATOR.locking,
                    no_tx: MIGRATOR.no_tx,
                };
                window.run(&self.pool).await?;
                Ok(())
            }
            oldest => Err(StoreError::SchemaTooNew { binary: known, database, oldest }),
        }
    }

    /// The newest migration the database has applied (`None`: none yet).
    pub async fn database_schema(&self) -> StoreResult<Option<i64>> {
        let applied = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&self.pool)
            .await
            .or_else(|e| if is_undefined_table(&e) { Ok(None) } else { Err(e) })?;
        Ok(applied)
    }

    /// Does the database answer, with every embedded migration applied?
    #[tracing::instrument(skip_all, err)]
    pub async fn check_ready(&self) -> StoreResult<bool> {
        // A database without the table has nothing migrated; one a newer release migrated
        // further is ready for this binary too (`migrate` refused it when outside the window).
        let applied = self.database_schema().await?;
        Ok(applied >= Some(schema_version()))
    }
}

/// The format of the journal and event records this binary writes, and the newest it reads.
/// Each run keeps the newest format written into it (`runs.record_format`); a replica claims only
/// runs of a format it reads and raises a run's format to its own when it claims it, so during a
/// rolling upgrade an older replica leaves a run a newer one has written to for a replica that
/// can read it. A release that changes a record's shape raises this (and reads every older
/// format: docs/operations.md, "Rolling upgrades").
///
/// Format 2 (0.2.0): a run may be a replay ([`crate::domain::evaluation::Replay`]), whose tool
/// calls must be answered from a recorded run; an evaluation stores its replay runs at format 2,
/// so a 0.1.0 replica, which would run their tools for real, never claims one.
pub const RECORD_FORMAT: i16 = 2;

/// The schema this binary knows: the version of its newest migration.
pub fn schema_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// What a replica says when the database is beyond its compatibility window.
fn schema_too_new(binary: i64, database: i64, oldest: Option<i64>) -> String {
    let window = match oldest {
        Some(oldest) => format!("its migrations need binaries of schema {oldest} or later"),
        None => "its migrations declare no window".to_owned(),
    };
    format!(
        "the database's schema ({database}) is newer than this binary's ({binary}) and outside the \
         compatibility window ({window}): run a release that knows schema {database} \
         (docs/operations.md, \"Rolling upgrades\")"
    )
}

/// Is `error` Postgres's "relation does not exist" (42P01)?
fn is_undefined_table(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01"))
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

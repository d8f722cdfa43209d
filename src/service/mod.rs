//! The use cases behind the API: what starting runs, reading and steering them, and registering
//! crews *do*, apart from how HTTP carries them. A handler parses the request, calls one function
//! of [`Services`] and renders what it returns; every failure is a [`ServiceError`], which the
//! HTTP edge maps to a problem document in one place (a database out of reach is a 503 there,
//! whichever use case met it).

mod access;
mod approval;
mod crews;
mod evaluations;
mod follow;
mod forks;
mod key_watch;
mod kickoffs;
mod knowledge;
mod memory;
mod ops;
mod runs;
mod schedules;
mod secrets;
mod threads;
mod webhooks;

use std::sync::Arc;

pub use access::{issue_key, CreatedKey, KEY_CACHE_TTL};
pub use evaluations::EvaluationReport;
pub use follow::{Follow, Follower, Step};
pub use key_watch::{KeyWatch, WatchedKey};
pub use kickoffs::{request_key, Kicked, ProtocolKickoff};
pub use knowledge::{Upload, MAX_QUERY_CHARS};
pub use memory::{DEFAULT_MEMORY_LIMIT, MAX_MEMORY_LIMIT};
pub use ops::StoredGauges;
pub use runs::no_run;
pub use secrets::check_secret_name;
pub use webhooks::WithSecret;

/// What a followed run's events carry: the HTTP edge names them from here.
pub use crate::events::Envelope;

use crate::domain::schedule::{Clock, SystemClock};
use crate::domain::{Caller, FieldError, ValidationContext};
use crate::knowledge::Knowledge;
use crate::outbound::egress::EgressPolicy;
use crate::secrets::Vault;
use crate::store::{LocalWorkers, Store, StoreError};
use crate::webhooks::WebhookSettings;

/// The use cases, over the store and what crew specs are checked against. Cheap to clone.
#[derive(Clone)]
pub struct Services {
    store: Store,
    validation: Arc<ValidationContext>,
    /// The secrets crews reference.
    vault: Vault,
    /// How webhooks are signed and where they may go.
    webhook_settings: Arc<WebhookSettings>,
    /// What this replica knows of API keys, for a second at a time.
    keys: Arc<access::KeyCache>,
    /// What this replica knows of tenants' quotas, for a second at a time.
    quotas: Arc<access::QuotaCache>,
    /// The stored keys this replica's open streams were opened with, checked every second.
    key_watch: Arc<KeyWatch>,
    /// Searches knowledge bases.
    knowledge: Knowledge,
    /// Where documents posted by URL may be fetched from (the tools' policy).
    tool_egress: Arc<EgressPolicy>,
    /// What time it is, for schedules (the system's; tests move their own).
    clock: Arc<dyn Clock>,
    /// Told when a schedule is created or changed here (this replica's scheduler waits on it).
    schedules_changed: Arc<tokio::sync::Notify>,
    /// This replica's worker slots, where a kickoff may start its run at once.
    local: Option<Arc<dyn LocalWorkers>>,
}

impl Services {
    pub fn new(
        store: Store,
        validation: ValidationContext,
        vault: Vault,
        webhook_settings: Arc<WebhookSettings>,
        tool_egress: Arc<EgressPolicy>,
        knowledge: Knowledge,
    ) -> Self {
        let (keys, quotas) = (Arc::default(), Arc::default());
        let key_watch = Arc::new(KeyWatch::new(store.clone()));
        let validation = Arc::new(validation);
        let (clock, schedules_changed) = (Arc::new(SystemClock), Arc::default());
        Self {
            store,
            validation,
            vault,
            webhook_settings,
            keys,
            quotas,
            key_watch,
            knowledge,
            tool_egress,
            clock,
            schedules_changed,
            local: None,
        }
    }

    /// The same services starting kickoffs in `workers` when a slot there is free.
    pub fn with_local_workers(self, workers: Arc<dyn LocalWorkers>) -> Self {
        Self { local: Some(workers), ..self }
    }

    /// The same services on another clock (a test's).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// Told when a schedule is created or changed through these services.
    pub fn schedules_changed(&self) -> &tokio::sync::Notify {
        &self.schedules_changed
    }

    /// What time it is for these services.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Hold `caller`'s stored key while a stream (or a long poll) of it is open: the hold resolves
    /// [`WatchedKey::ended`] when the key is revoked, expires or loses its tenant. A caller without
    /// a stored key holds nothing.
    pub fn watch_key(&self, caller: &Caller) -> WatchedKey {
        self.key_watch.watch(caller)
    }

    /// The checker of the keys open streams hold, to run until `stop` (one per replica that
    /// serves the API).
    pub fn check_keys(
        &self,
        stop: tokio_util::sync::CancellationToken,
    ) -> impl std::future::Future<Output = ()> {
        self.key_watch.clone().run(stop)
    }

    /// What crew specs are checked against: built-in tools, configured providers.
    pub fn validation(&self) -> &ValidationContext {
        &self.validation
    }
}

/// Why a use case did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// What the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request does not fit the state of what it names (a run that has ended, say).
    #[error("{0}")]
    Conflict(String),
    /// The request is well formed but breaks the rules, field by field.
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    /// A quota of the caller's tenant refuses it; it may be retried after `retry_after`.
    #[error("{message}")]
    Quota { message: String, retry_after: std::time::Duration },
    /// The server is not set up for what the request asks (secrets without a key).
    #[error("{0}")]
    NotConfigured(String),
    /// A service agentd relies on (a provider's model) failed; the request may be retried.
    #[error("{0}")]
    Upstream(String),
    /// The database is out of reach; the request may be retried.
    #[error("the database is unavailable")]
    Unavailable(#[source] StoreError),
    /// Anything else: a bug, or data the code cannot read.
    #[error("internal error")]
    Internal(#[source] StoreError),
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        match error.is_unavailable() {
            true => ServiceError::Unavailable(error),
            false => ServiceError::Internal(error),
        }
    }
}

pub type ServiceResult<T> = Result<T, ServiceError>;

/// A 422 of one field.
fn invalid(field: &str, message: impl Into<String>) -> ServiceError {
    ServiceError::Invalid(vec![FieldError::new(field, message)])
}

//! What every handler shares ([`AppState`]): the use cases, the store (for event streams and
//! readiness), the configuration, this replica's event bus, the metrics and the shutdown signal.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::domain::ValidationContext;
use crate::events::EventBus;
use crate::metrics::Metrics;
use crate::secrets::Vault;
use crate::service::Services;
use crate::store::Store;
use crate::tools::builtin_tool_names;

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The use cases the handlers call.
    pub services: Services,
    /// Read by the event streams, waits and readiness checks.
    pub store: Store,
    pub config: Arc<Config>,
    /// This replica's live events.
    pub bus: EventBus,
    /// What `/metrics` shows (shared with the worker pool's engine).
    pub metrics: Arc<Metrics>,
    /// Cancelled when the service shuts down.
    pub shutdown: CancellationToken,
}

impl AppState {
    /// The state of a server that stops with the process.
    pub fn new(store: Store, config: Config) -> Self {
        Self::with_shutdown(store, config, CancellationToken::new())
    }

    /// The state of a server that stops when `shutdown` is cancelled (its event bus with it).
    pub fn with_shutdown(store: Store, config: Config, shutdown: CancellationToken) -> Self {
        let validation = ValidationContext {
            builtin_tools: builtin_tool_names(),
            providers: config.providers.keys().cloned().collect(),
            fake_providers: config
                .providers
                .values()
                .filter(|p| p.is_fake())
                .map(|p| p.name.clone())
                .collect(),
            default_model: config.default_model.clone(),
            limits: config.crew_limits,
        };
        let bus = EventBus::start(store.clone(), shutdown.clone());
        Self {
            services: Services::new(
                store.clone(),
                validation,
                Vault::new(store.clone(), config.secrets_key.clone()),
                Arc::new(config.webhooks.clone()),
            ),
            store,
            config: Arc::new(config),
            bus,
            metrics: Arc::new(Metrics::default()),
            shutdown,
        }
    }
}

//! What every handler shares ([`AppState`]): the use cases (and a run's follower), the store (for event streams and
//! readiness), the configuration, this replica's event bus, the metrics and the shutdown signal.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::events::EventBus;
use crate::metrics::Metrics;
use crate::service::{Follower, Services};
use crate::store::Store;

/// What every handler shares, made by the composition root ([`crate::app::App`]). Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The use cases the handlers call.
    pub services: Services,
    /// Follows runs for the protocols' streams (the use cases with this replica's event bus).
    pub follower: Follower,
    /// Read by the event streams, waits and readiness checks.
    pub store: Store,
    pub config: Arc<Config>,
    /// This replica's live events.
    pub bus: EventBus,
    /// What `/metrics` shows (shared with the worker pool's engine).
    pub metrics: Arc<Metrics>,
    /// Cancelled when the service shuts down.
    pub shutdown: CancellationToken,
    /// The browser origins the protocols' endpoints accept, judged against the listener's own
    /// address (set by [`crate::http::router`]).
    pub origins: Arc<crate::http::origin::Origins>,
}

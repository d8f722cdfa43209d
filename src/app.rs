//! The composition root: connects the store, builds the engine and the worker pool, serves the
//! API (see [`crate::http`]) and drains both on shutdown.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Secret};
use crate::engine::Engine;
use crate::llm::{LlmRegistry, RetryPolicy};
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::secrets::Vault;
use crate::store::{PoolSettings, Store, StoreError};
use crate::tools::http::Outbound;
use crate::worker::{WorkerPool, WorkerSettings};

/// Why the service could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid DATABASE_URL: {0}")]
    DatabaseUrl(sqlx::Error),
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Setup(String),
}

/// Connect to the database (lazily: the pool reconnects on its own).
pub fn connect(database_url: &Secret, max_connections: u32) -> Result<Store, ServeError> {
    let options: PgConnectOptions = database_url.expose().parse().map_err(ServeError::DatabaseUrl)?;
    let settings = PoolSettings { max_connections, acquire_timeout: ACQUIRE_TIMEOUT };
    Ok(Store::connect_lazy(options, &settings))
}

/// How long a request waits for a database connection before it is answered 503 (and a worker's
/// write is retried): a database out of reach is reported within this.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// The engine as configured: one shared HTTP client for the LLM providers, the guarded one for
/// tools, and the secrets of `store` (sealed with the configured key) for tools that send them.
pub fn build_engine(config: &Config, store: &Store) -> Result<Engine, ServeError> {
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .map_err(|e| ServeError::Setup(format!("cannot build the LLM HTTP client: {e}")))?;
    let policy = RetryPolicy {
        max_attempts: config.llm_max_attempts,
        request_timeout: config.llm_timeout,
        ..RetryPolicy::default()
    };
    let limiter = Arc::new(RateLimiter::default());
    // The providers' rpm and tpm are budgets of the cluster, kept in the database.
    let shared = Arc::new(store.clone());
    let llms = LlmRegistry::from_settings(
        &config.default_model,
        &config.providers,
        http,
        policy,
        limiter.clone(),
        shared,
    );
    let outbound =
        Outbound::new(config.tool_egress.clone(), config.tool_timeout, config.tool_max_response_bytes)
            .map_err(|e| ServeError::Setup(format!("cannot build the tool HTTP client: {e}")))?;
    let vault = Vault::new(store.clone(), config.secrets_key.clone());
    Ok(Engine::new(llms, Arc::new(outbound))
        .with_deltas(crate::events::deltas::DeltaRelay::start(store.clone()))
        .with_rate_limiter(limiter)
        .with_limits(config.run_limits)
        .with_secrets(Arc::new(vault)))
}

/// Apply migrations, retrying while the database is starting (up to `patience`).
pub async fn migrate_when_up(store: &Store, patience: Duration) -> Result<(), ServeError> {
    let deadline = tokio::time::Instant::now() + patience;
    let mut delay = Duration::from_millis(250);
    loop {
        match store.migrate().await {
            Ok(()) => return Ok(()),
            Err(error) if error.is_unavailable() && tokio::time::Instant::now() + delay < deadline => {
                tracing::warn!(%error, retry_in_ms = delay.as_millis() as u64, "database not reachable yet");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Run the API and/or the worker pool (per the role) until SIGTERM or Ctrl-C, then drain both
/// within the grace period.
pub async fn serve(mut config: Config) -> Result<(), ServeError> {
    if config.role.runs_workers() {
        start_fake_providers(&mut config).await?;
    }
    let store = connect(&config.database_url, config.db_max_connections)?;
    migrate_when_up(&store, Duration::from_secs(60)).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let metrics = Arc::new(Metrics::default());
    let workers = match config.role.runs_workers() {
        true => {
            let engine = build_engine(&config, &store)?.with_metrics(metrics.clone());
            let pool = WorkerPool::new(store.clone(), Arc::new(engine), worker_settings(&config));
            tracing::info!(slots = config.workers, lease_s = config.lease.as_secs(), "worker pool started");
            Some(tokio::spawn(pool.run(shutdown.clone())))
        }
        false => None,
    };
    let deliverer = match &config.webhooks.key {
        Some(key) => {
            let settings = Arc::new(config.webhooks.clone());
            let deliverer = crate::webhooks::deliver::Deliverer::new(
                store.clone(),
                key.clone(),
                settings,
                metrics.clone(),
                config.lease,
            )
            .map_err(ServeError::Setup)?;
            Some(tokio::spawn(deliverer.run(shutdown.clone())))
        }
        None => None,
    };
    let pruner = config.retention.map(|keep| {
        let settings = crate::retention::RetentionSettings::keeping(keep);
        tokio::spawn(crate::retention::run(store.clone(), settings, metrics.clone(), shutdown.clone()))
    });
    let api = match config.role.serves_api() {
        true => serve_api(store, config, metrics, shutdown.clone()).await,
        false => {
            shutdown.cancelled().await;
            Ok(())
        }
    };
    if let Some(workers) = workers {
        if let Err(error) = workers.await {
            tracing::error!(%error, "the worker pool ended abnormally");
        }
    }
    if let Some(pruner) = pruner {
        let _ = pruner.await;
    }
    if let Some(deliverer) = deliverer {
        let _ = deliverer.await;
    }
    tracing::info!("agentd stopped");
    api
}

/// Serve each fake provider's script on a loopback port of its own and point the provider there,
/// so its calls take the same path (retries, 429 holds, events) as a real provider's.
pub async fn start_fake_providers(config: &mut Config) -> Result<(), ServeError> {
    for provider in config.providers.values_mut() {
        let crate::config::ProviderKind::Fake { script, bind } = &provider.kind else { continue };
        let bind = bind.unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let fake = crate::fake_llm::FakeLlm::start_on(bind)
            .await
            .map_err(|source| ServeError::Bind { addr: bind, source })?;
        fake.set_label(&provider.name);
        fake.set_max_recorded(FAKE_PROVIDER_CALLS_KEPT);
        fake.set_script(Some(script.clone()));
        provider.base_url = fake.base_url();
        tracing::warn!(
            provider = %provider.name, base_url = %provider.base_url, rules = script.len(),
            "provider is a FAKE model answering from a script, not a real LLM (GET /calls at its address lists what it was sent, POST /reset clears it)"
        );
    }
    Ok(())
}

/// Requests a fake provider keeps for its `GET /calls`.
const FAKE_PROVIDER_CALLS_KEPT: u64 = 1_000;

/// The pool's settings from the configuration.
pub fn worker_settings(config: &Config) -> WorkerSettings {
    WorkerSettings {
        default_timeout: config.run_timeout,
        grace: config.shutdown_grace,
        ..WorkerSettings::new(config.workers, config.lease)
    }
}

/// Serve HTTP until `shutdown`, then let in-flight requests finish within the grace period.
async fn serve_api(
    store: Store,
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let bind = config.bind;
    let grace = config.shutdown_grace;
    let (config_limits, db_connections) = (config.connections, config.db_max_connections);
    let listener = crate::net::listen(bind).map_err(|source| ServeError::Bind { addr: bind, source })?;
    if config.api_keys.is_empty() && !bind.ip().is_loopback() {
        tracing::warn!(%bind, "no API keys configured: the API is open to anyone who can reach this address");
    } else if config.api_keys.is_empty() {
        tracing::warn!(%bind, "no API keys configured: the API is open, listening on loopback only");
    }
    let mut state = crate::http::AppState::with_shutdown(store, config, shutdown.clone());
    state.metrics = metrics;
    tracing::info!(addr = %listener.local_addr()?, "agentd listening");
    let limits = config_limits;
    let server = crate::http::server::serve(
        listener,
        crate::http::router(state),
        limits,
        db_connections,
        shutdown.clone(),
    );
    tokio::select! {
        result = server => result?,
        () = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => {
            tracing::warn!(grace_s = grace.as_secs(), "grace period over; closing remaining connections");
        }
    }
    Ok(())
}

/// Cancel `token` on SIGTERM or Ctrl-C (and return then).
pub async fn watch_signals(token: CancellationToken) {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutdown requested; draining");
    token.cancel();
}

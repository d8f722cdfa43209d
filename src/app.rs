//! The composition root: [`App::assemble`] makes every shared handle once (metrics, vault, event
//! bus, rate limiter, provider registry, engine, worker pool, deliverer) and hands each to the
//! parts that use it; [`App::run`] serves the API (see [`crate::http`]) and runs the background
//! parts until shutdown, then drains them. [`serve`] is `agentd serve`; the end-to-end tests run
//! the same `App` on a port of their own.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Secret};
use crate::domain::schedule::{Clock, SystemClock};
use crate::domain::ValidationContext;
use crate::engine::{Engine, EngineParts};
use crate::events::EventBus;
use crate::http::AppState;
use crate::knowledge::ingest::{IngestSettings, Ingester};
use crate::knowledge::Knowledge;
use crate::llm::{LlmRegistry, RetryPolicy};
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::scheduler::Scheduler;
use crate::secrets::Vault;
use crate::service::{Follower, Services};
use crate::store::{PoolSettings, Store, StoreError};
use crate::tools::builtin_tool_names;
use crate::tools::http::Outbound;
use crate::webhooks::deliver::Deliverer;
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

/// The engine as configured, over `store`: one shared HTTP client for the LLM providers (whose
/// 429 holds go to `limiter`, which the engine's gates read), the guarded one for tools, the
/// secrets of `vault`, and the store's delta relay for streaming runs.
pub fn build_engine(
    config: &Config,
    store: &Store,
    vault: Arc<Vault>,
    metrics: Arc<Metrics>,
) -> Result<Engine, ServeError> {
    let (llms, limiter) = build_llms(config, store)?;
    let knowledge = Knowledge::new(store.clone(), Some(llms.clone()), metrics.clone());
    engine_over(config, store, vault, metrics, (llms, limiter), knowledge)
}

/// The engine over providers and knowledge already built (the service's own, shared with its
/// API and ingester: one HTTP client, one set of 429 holds, one finding of pgvector).
fn engine_over(
    config: &Config,
    store: &Store,
    vault: Arc<Vault>,
    metrics: Arc<Metrics>,
    (llms, limiter): (LlmRegistry, Arc<RateLimiter>),
    knowledge: Knowledge,
) -> Result<Engine, ServeError> {
    Ok(Engine::new(EngineParts {
        llms,
        outbound: tool_outbound(config)?,
        limiter,
        metrics,
        limits: config.run_limits,
        secrets: vault,
        deltas: Some(crate::events::deltas::DeltaRelay::start(store.clone())),
        memory: Some(Arc::new(crate::knowledge::memory::Memories::new(store.clone(), knowledge.clone()))),
        knowledge: Some(Arc::new(knowledge)),
    }))
}

/// The configured providers' clients, sharing one HTTP client, their 429 holds going to the
/// returned limiter and their rpm and tpm budgets kept in the database (budgets of the cluster).
pub fn build_llms(config: &Config, store: &Store) -> Result<(LlmRegistry, Arc<RateLimiter>), ServeError> {
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
    let shared = Arc::new(store.clone());
    let llms = LlmRegistry::from_settings(
        &config.default_model,
        &config.providers,
        http,
        policy,
        limiter.clone(),
        shared,
    );
    Ok((llms, limiter))
}

/// The guarded HTTP client of tools (and of documents fetched by URL), with the tools' egress
/// policy, timeout and response size limit.
pub fn tool_outbound(config: &Config) -> Result<Arc<Outbound>, ServeError> {
    let outbound =
        Outbound::new(config.tool_egress.clone(), config.tool_timeout, config.tool_max_response_bytes)
            .map_err(|e| ServeError::Setup(format!("cannot build the tool HTTP client: {e}")))?;
    Ok(Arc::new(outbound))
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
    if crate::telemetry::install(&config.traces).map_err(ServeError::Setup)? {
        tracing::info!(service = %config.traces.service_name(), "exporting traces and GenAI metrics over OTLP/HTTP");
    }
    if config.role.runs_workers() {
        start_fake_providers(&mut config).await?;
    }
    let store = connect(&config.database_url, config.db_max_connections)?;
    migrate_when_up(&store, Duration::from_secs(60)).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let listener = match config.role.serves_api() {
        true => Some(
            crate::net::listen(config.bind)
                .map_err(|source| ServeError::Bind { addr: config.bind, source })?,
        ),
        false => None,
    };
    let served = App::assemble(config, store, shutdown)?.run(listener).await;
    // The last spans leave on a thread of the exporter's: not on the runtime.
    let _ = tokio::task::spawn_blocking(crate::telemetry::shutdown).await;
    served?;
    tracing::info!("agentd stopped");
    Ok(())
}

/// The service, composed: every shared handle is made once here and handed to the parts that
/// use it (the same store, metrics, vault and event bus for the API, the engine, the worker pool,
/// the webhook deliverer and the retention pruner). What runs follows the role.
pub struct App {
    config: Arc<Config>,
    store: Store,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    /// The API's shared state (a role that serves it).
    api: Option<AppState>,
    /// The worker pool (a role that runs workers).
    workers: Option<WorkerPool>,
    /// The webhook deliverer (with a signing key).
    deliverer: Option<Deliverer>,
    /// The knowledge bases' document ingester (a role that runs workers).
    ingester: Option<Ingester>,
    /// The schedules' scheduler (a role that runs workers).
    scheduler: Option<crate::scheduler::Scheduler>,
    /// Knowledge bases' search and embedding (whether vectors can be kept is said at start-up).
    knowledge: Knowledge,
}

impl App {
    /// Compose the service over `store` (migrated), to stop when `shutdown` is cancelled.
    pub fn assemble(config: Config, store: Store, shutdown: CancellationToken) -> Result<Self, ServeError> {
        Self::assemble_with_clock(config, store, shutdown, Arc::new(SystemClock))
    }

    /// [`App::assemble`] on `clock` (the schedules' time: a test's own).
    pub fn assemble_with_clock(
        config: Config,
        store: Store,
        shutdown: CancellationToken,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ServeError> {
        let config = Arc::new(config);
        if config.latency_budget {
            crate::probe::enable();
        }
        let metrics = Arc::new(Metrics::default());
        let vault = Arc::new(Vault::new(store.clone(), config.secrets_key.clone()));
        // One set of providers: the engine's model calls, and the embeddings of the API's
        // searches, the ingester and the runs' knowledge and memory.
        let (llms, limiter) = build_llms(&config, &store)?;
        let knowledge = Knowledge::new(store.clone(), Some(llms.clone()), metrics.clone());
        let (workers, ingester) = match config.role.runs_workers() {
            true => {
                let providers = (llms, limiter);
                let engine = engine_over(
                    &config,
                    &store,
                    vault.clone(),
                    metrics.clone(),
                    providers,
                    knowledge.clone(),
                )?;
                let pool = WorkerPool::new(store.clone(), Arc::new(engine), worker_settings(&config));
                let ingester = Ingester::new(
                    store.clone(),
                    tool_outbound(&config)?,
                    knowledge.clone(),
                    IngestSettings {
                        lease: config.lease,
                        extraction: config.extraction.clone(),
                        quarantine_after_deaths: config.quarantine_after_deaths,
                    },
                );
                (Some(pool), Some(ingester))
            }
            false => (None, None),
        };
        let deliverer = match &config.webhooks.key {
            Some(key) => Some(
                Deliverer::new(
                    store.clone(),
                    key.clone(),
                    Arc::new(config.webhooks.clone()),
                    metrics.clone(),
                    config.lease,
                )
                .map_err(ServeError::Setup)?,
            ),
            None => None,
        };
        let services = Services::new(
            store.clone(),
            validation_context(&config),
            Vault::clone(&vault),
            Arc::new(config.webhooks.clone()),
            Arc::new(config.tool_egress.clone()),
            knowledge.clone(),
        )
        .with_clock(clock);
        // A kickoff answered here starts its run in a free slot here, when nothing is queued.
        let services = match &workers {
            Some(pool) => services.with_local_workers(pool.slots()),
            None => services,
        };
        let scheduler = config
            .role
            .runs_workers()
            .then(|| Scheduler::new(store.clone(), services.clone(), config.scheduler));
        let api = config.role.serves_api().then(|| {
            let bus = EventBus::start(store.clone(), shutdown.clone());
            AppState {
                follower: Follower::new(services.clone(), bus.clone(), shutdown.clone()),
                services,
                store: store.clone(),
                config: config.clone(),
                bus,
                metrics: metrics.clone(),
                shutdown: shutdown.clone(),
                origins: Arc::new(crate::http::origin::Origins {
                    policy: config.allowed_origins.clone(),
                    local: config.bind,
                }),
            }
        });
        Ok(Self { config, store, metrics, shutdown, api, workers, deliverer, ingester, scheduler, knowledge })
    }

    /// Run until the shutdown signal: the worker pool, the deliverer and the pruner, and the API
    /// on `listener` (the production accept loop, with its connection cap and timeouts); then let
    /// each drain within the grace period.
    pub async fn run(self, listener: Option<tokio::net::TcpListener>) -> Result<(), ServeError> {
        let Self {
            config,
            store,
            metrics,
            shutdown,
            api,
            workers,
            deliverer,
            ingester,
            scheduler,
            knowledge,
        } = self;
        tokio::spawn(async move { knowledge.announce().await });
        let workers = workers.map(|pool| {
            tracing::info!(slots = config.workers, lease_s = config.lease.as_secs(), "worker pool started");
            tokio::spawn(pool.run(shutdown.clone()))
        });
        let deliverer = deliverer.map(|deliverer| tokio::spawn(deliverer.run(shutdown.clone())));
        let ingester = ingester.map(|ingester| tokio::spawn(ingester.run(shutdown.clone())));
        let scheduler = scheduler.map(|scheduler| tokio::spawn(scheduler.run(shutdown.clone())));
        let pruner = config.retention.map(|keep| {
            let settings = crate::retention::RetentionSettings::keeping(keep);
            tokio::spawn(crate::retention::run(store.clone(), settings, metrics.clone(), shutdown.clone()))
        });
        // The keys this replica's open streams were opened with, checked once a second.
        let key_checker = api.as_ref().map(|state| tokio::spawn(state.services.check_keys(shutdown.clone())));
        let served = match (api, listener) {
            (Some(state), Some(listener)) => serve_api(listener, state, &config, shutdown.clone()).await,
            (Some(_), None) => Err(ServeError::Setup("the API needs a listener".into())),
            (None, _) => {
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
        if let Some(ingester) = ingester {
            let _ = ingester.await;
        }
        if let Some(scheduler) = scheduler {
            let _ = scheduler.await;
        }
        if let Some(key_checker) = key_checker {
            let _ = key_checker.await;
        }
        served
    }
}

/// What crew specs are checked against: the built-in tools, the configured providers, the limits.
pub(crate) fn validation_context(config: &Config) -> ValidationContext {
    ValidationContext {
        builtin_tools: builtin_tool_names(),
        providers: config.providers.keys().cloned().collect(),
        fake_providers: config.providers.values().filter(|p| p.is_fake()).map(|p| p.name.clone()).collect(),
        default_model: config.default_model.clone(),
        limits: config.crew_limits,
    }
}

/// Serve each fake provider's script on a loopback port of its own and point the provider there,
/// so its calls take the same path (retries, 429 holds, events) as a real provider's.
pub async fn start_fake_providers(config: &mut Config) -> Result<(), ServeError> {
    for provider in config.providers.values_mut() {
        let crate::config::ProviderKind::Fake { script, bind } = &provider.kind else { continue };
        let bind = bind.unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let fake = crate::net::listen(bind)
            .and_then(crate::fake_llm::FakeLlm::serve)
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
        thread_history_bytes: config.thread_history_bytes,
        quarantine_after_deaths: config.quarantine_after_deaths,
        ..WorkerSettings::new(config.workers, config.lease)
    }
}

/// Serve HTTP on `listener` until `shutdown`, then let in-flight requests finish within the grace
/// period.
async fn serve_api(
    listener: tokio::net::TcpListener,
    state: AppState,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let bind = listener.local_addr()?;
    let grace = config.shutdown_grace;
    if config.api_keys.is_empty() && !bind.ip().is_loopback() {
        tracing::warn!(%bind, "no API keys configured: the API is open to anyone who can reach this address, unless keys are stored (agentd keys create)");
    } else if config.api_keys.is_empty() {
        tracing::warn!(%bind, "no API keys configured: the API is open, listening on loopback only, unless keys are stored (agentd keys create)");
    } else {
        tracing::info!(
            keys = config.api_keys.len(),
            "the keys of AGENTD_API_KEYS are admin keys of the 'default' tenant"
        );
    }
    tracing::info!(addr = %bind, "agentd listening");
    let server = crate::http::server::serve(
        listener,
        crate::http::router(state, bind),
        config.connections,
        config.db_max_connections,
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

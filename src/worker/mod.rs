//! The worker pool: a number of slots (runs in flight) per replica, each filled by claiming the
//! oldest queued run from Postgres. Idle slots wake at once on the `agentd_runs` notification
//! (through `Store::listen`), with a polling fallback; a recovery pass requeues runs whose lease
//! expired; cancellations arrive on `agentd_cancel` (and through heartbeats, should a notification
//! be missed).

mod execute;
mod listener;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::RunId;
use crate::engine::Engine;
use crate::store::{KickoffClaim, LocalWorkers, Reservation, Store};

/// Runs claimed per statement at most.
const CLAIM_BATCH: usize = 256;
/// Claim loops per replica: while the queue is deep, each claim statement overlaps another's.
const CLAIMERS: usize = 2;

/// How the pool behaves.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Runs in flight at once on this replica.
    pub slots: usize,
    /// How long a claim holds without a heartbeat; a crashed worker's runs wait this long.
    pub lease: Duration,
    /// How often a running run's lease is renewed.
    pub heartbeat: Duration,
    /// How often an idle pool looks for work when no notification came.
    pub poll_interval: Duration,
    /// How often expired leases are looked for.
    pub recovery_interval: Duration,
    /// The time limit of runs that set none.
    pub default_timeout: Option<Duration>,
    /// How long in-flight runs may go on after shutdown begins before their leases are released.
    pub grace: Duration,
    /// This replica's name in `lease_owner`.
    pub owner: String,
    /// Bytes of a thread's history a run of the thread sees.
    pub thread_history_bytes: usize,
    /// Deaths of the replicas running a run (expired leases) after which it is quarantined.
    pub quarantine_after_deaths: u32,
}

impl WorkerSettings {
    /// Settings with `slots` and `lease`; the heartbeat is a third of the lease, and the rest is
    /// the settings' defaults.
    pub fn new(slots: usize, lease: Duration) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "agentd".to_owned());
        let defaults = crate::settings::Settings::default();
        Self {
            slots,
            lease,
            heartbeat: lease / 3,
            poll_interval: Duration::from_secs(1),
            recovery_interval: (lease / 2).clamp(Duration::from_millis(200), Duration::from_secs(5)),
            default_timeout: defaults.run_timeout(),
            grace: Duration::from_secs(defaults.shutdown_grace_s),
            thread_history_bytes: defaults.thread_history_bytes as usize,
            quarantine_after_deaths: defaults.quarantine_after_deaths,
            owner: format!(
                "{host}/{}/{}",
                std::process::id(),
                &uuid::Uuid::now_v7().simple().to_string()[20..]
            ),
        }
    }
}

/// Why a run's work was stopped from outside the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Cancelled,
    Timeout,
    Shutdown,
    LeaseLost,
}

/// A run this replica is executing.
#[derive(Clone)]
struct Active {
    stop: CancellationToken,
    reason: Arc<Mutex<Option<StopReason>>>,
}

impl Active {
    /// Stop the run for `reason` (the first reason given wins).
    fn stop(&self, reason: StopReason) {
        let mut slot = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(reason);
        self.stop.cancel();
    }
}

/// State shared by the pool's tasks.
struct Shared {
    store: Store,
    engine: Arc<Engine>,
    settings: WorkerSettings,
    active: Mutex<HashMap<RunId, Active>>,
    wake: Notify,
    /// The slots: a run holds one while it executes.
    slots: Arc<Semaphore>,
    /// The executing runs' tasks.
    tracker: TaskTracker,
    /// Whether kickoffs may start runs here ([`Slots`]): until the pool drains (a run handed over
    /// before the claim loops start executes all the same: its task is tracked like theirs).
    accepting: AtomicBool,
    /// What a run a kickoff stores claimed for this replica carries.
    claim: KickoffClaim,
}

impl Shared {
    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Active>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stop a run of this replica, if it runs here.
    fn stop(&self, id: RunId, reason: StopReason) {
        if let Some(active) = self.active().get(&id) {
            active.stop(reason);
        }
    }
}

/// The pool. [`WorkerPool::run`] works until `shutdown`, then drains.
pub struct WorkerPool {
    shared: Arc<Shared>,
}

impl WorkerPool {
    pub fn new(store: Store, engine: Arc<Engine>, settings: WorkerSettings) -> Self {
        let claim = KickoffClaim { owner: settings.owner.clone(), lease: settings.lease };
        let shared = Shared {
            store,
            engine,
            slots: Arc::new(Semaphore::new(settings.slots.max(1))),
            settings,
            active: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            tracker: TaskTracker::new(),
            accepting: AtomicBool::new(true),
            claim,
        };
        Self { shared: Arc::new(shared) }
    }

    /// The pool's slots, for kickoffs on this replica to start their runs in.
    pub fn slots(&self) -> Arc<dyn LocalWorkers> {
        Arc::new(Slots { shared: self.shared.clone() })
    }

    /// Claim and execute runs until `shutdown` is cancelled; then stop claiming, give in-flight
    /// runs the grace period, and hand the rest back to the queue.
    pub async fn run(self, shutdown: CancellationToken) {
        let shared = self.shared;
        let background = CancellationToken::new();
        tokio::spawn(listener::listen(shared.clone(), background.clone()));
        tokio::spawn(recover_periodically(shared.clone(), background.clone()));
        // Only the first claimer polls an idle queue; the others wait to be woken.
        let claimers = (0..CLAIMERS).map(|i| claim_loop(&shared, &shutdown, i == 0));
        futures_util::future::join_all(claimers).await;
        shared.accepting.store(false, Ordering::Release);
        let tracker = &shared.tracker;
        tracker.close();
        tracing::info!(in_flight = tracker.len(), "worker pool draining");
        if tokio::time::timeout(shared.settings.grace, tracker.wait()).await.is_err() {
            let stopping: Vec<RunId> = shared.active().keys().copied().collect();
            tracing::warn!(runs = stopping.len(), "grace period over; releasing leases");
            for id in stopping {
                shared.stop(id, StopReason::Shutdown);
            }
            tracker.wait().await;
        }
        background.cancel();
        tracing::info!("worker pool stopped");
    }
}

/// The pool's slots as kickoffs see them: a free one is held for a kickoff, which stores its run
/// claimed for this replica and hands it over to execute.
struct Slots {
    shared: Arc<Shared>,
}

impl LocalWorkers for Slots {
    fn reserve(&self) -> Option<Box<dyn Reservation>> {
        if !self.shared.accepting.load(Ordering::Acquire) {
            return None;
        }
        let permit = self.shared.slots.clone().try_acquire_owned().ok()?;
        Some(Box::new(Held { shared: self.shared.clone(), permit }))
    }
}

/// A slot held for a kickoff.
struct Held {
    shared: Arc<Shared>,
    permit: tokio::sync::OwnedSemaphorePermit,
}

impl Reservation for Held {
    fn claim(&self) -> &KickoffClaim {
        &self.shared.claim
    }

    fn start(self: Box<Self>, run: crate::store::ClaimedRun) {
        let Held { shared, permit } = *self;
        crate::probe::mark(run.id.0, "queue.handoff");
        start_run(&shared, Ok(run), permit);
    }
}

/// Claim runs into free slots until `shutdown`. A full batch suggests more are queued: the loop
/// goes on at once and wakes another claimer to claim alongside. An idle loop waits for a
/// notification, and if it `polls`, at most `poll_interval`.
async fn claim_loop(shared: &Arc<Shared>, shutdown: &CancellationToken, polls: bool) {
    let slots = &shared.slots;
    let mut failures = 0u32;
    // Runs to claim at most: one while the queue looks empty (a poll, or the first claim after
    // a notification), a batch once a claim came back full. A claim holds the slots it may
    // fill while its statement runs, and kickoffs here start their runs in free slots: an idle
    // poll must not hold them all.
    let mut batch = 1;
    loop {
        let first = tokio::select! {
            () = shutdown.cancelled() => return,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        // Claim as many runs as there are free slots, up to `batch`, in one statement.
        let mut permits = vec![first];
        while permits.len() < batch {
            match slots.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
        let (owner, lease) = (&shared.settings.owner, shared.settings.lease);
        let poll = polls.then_some(shared.settings.poll_interval);
        let idle = match shared.store.claim_next_runs(owner, lease, permits.len() as i64).await {
            Ok(claimed) if !claimed.is_empty() => {
                failures = 0;
                let full = claimed.len() == permits.len();
                batch = if full { CLAIM_BATCH } else { 1 };
                for (run, permit) in claimed.into_iter().zip(permits.drain(..)) {
                    if let Ok(run) = &run {
                        crate::probe::mark(run.id.0, "queue.claim");
                    }
                    start_run(shared, run, permit);
                }
                if full {
                    shared.wake.notify_one();
                    continue;
                }
                // The queue is empty for now: new runs announce themselves.
                poll
            }
            Ok(_) => {
                batch = 1;
                poll
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::error!(%error, "claiming runs failed");
                Some(Duration::from_millis(250 * u64::from(failures.min(20))))
            }
        };
        drop(permits);
        let timeout = async {
            match idle {
                Some(idle) => tokio::time::sleep(idle).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = shared.wake.notified() => {}
            () = timeout => {}
        }
    }
}

/// Execute a claimed run in its slot (or log why it cannot be read: its lease then expires and
/// recovery gives up on it after `max_attempts`).
fn start_run(
    shared: &Arc<Shared>,
    run: crate::store::StoreResult<crate::store::ClaimedRun>,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let run = match run {
        Ok(run) => run,
        Err(error) => {
            tracing::error!(%error, "a claimed run cannot be read");
            return;
        }
    };
    if run.attempt == 1 {
        let waited = (chrono::Utc::now() - run.created_at).to_std().unwrap_or_default();
        shared.engine.metrics().observe_claim(waited);
    }
    let tracker = shared.tracker.clone();
    let shared = shared.clone();
    tracker.spawn(async move {
        execute::execute(&shared, run).await;
        drop(permit);
    });
}

/// End the spans of the attempts dead replicas left (traces on): their spans that were exported
/// keep their parents, and the interruption shows in the run's trace.
async fn end_dead_spans(shared: &Shared, runs: &[(crate::domain::RunId, i32)], ended: std::time::SystemTime) {
    for (id, attempt) in runs {
        let dead = match shared.store.dead_attempt(*id, *attempt).await {
            Ok(Some(dead)) => dead,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(%error, run_id = %id, "could not read an interrupted attempt for its trace");
                continue;
            }
        };
        let task = dead.task.as_ref().map(|(task, agent, at)| (task.as_str(), agent.as_str(), (*at).into()));
        crate::telemetry::interrupted(&crate::telemetry::Interrupted {
            attempt: crate::telemetry::Attempt {
                run_id: id.0,
                attempt: dead.attempt,
                crew: &dead.crew_name,
                tenant: &dead.tenant,
                trace: dead.trace.as_ref(),
            },
            started: dead.started_at.into(),
            task,
            ended,
        });
    }
}

async fn recover_periodically(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(shared.settings.recovery_interval) => {}
        }
        let recovering = std::time::SystemTime::now();
        match shared.store.recover_expired_leases(shared.settings.quarantine_after_deaths).await {
            Ok(recovered) if recovered != Default::default() => {
                tracing::warn!(?recovered, "recovered runs with expired leases");
                if crate::telemetry::is_on() {
                    end_dead_spans(&shared, &recovered.interrupted, recovering).await;
                }
            }
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "recovering expired leases failed"),
        }
    }
}

//! Executing one claimed run: the engine under a heartbeat that renews the lease (and notices a
//! cancellation or a lost lease), a time limit, and the end the engine does not journal itself
//! (cancelled, timed out, handed back at shutdown, failed outside the engine).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::{Active, Shared, StopReason};
use crate::domain::RunId;
use crate::domain::{ErrorKind, RunError};
use crate::engine::journal::JournalError;
use crate::engine::{EngineError, RunJob};
use crate::store::{ClaimedRun, Lease};

/// The history of the run's thread its first task sees: as an earlier attempt (or the run a fork
/// was forked from) rendered it, or rendered now (runs of no thread read nothing).
async fn thread_history(shared: &Shared, run: &ClaimedRun) -> crate::store::StoreResult<Option<String>> {
    match (&run.thread_history, &run.thread_id) {
        // Rendered before (a fork takes over its run's).
        (Some(history), _) => Ok(Some(history.clone()).filter(|h| !h.is_empty())),
        (None, None) => Ok(None),
        (None, Some(_)) => shared.store.thread_history(run.id, shared.settings.thread_history_bytes).await,
    }
}

/// Run `run` to its end (or until this replica must let go of it).
#[tracing::instrument(skip_all, fields(run_id = %run.id, attempt = run.attempt))]
pub(super) async fn execute(shared: &Arc<Shared>, run: ClaimedRun) {
    let stop = CancellationToken::new();
    let reason = Arc::new(Mutex::new(None));
    let active = Active { stop: stop.clone(), reason: reason.clone() };
    shared.active().insert(run.id, active.clone());
    // Waiters here follow the run without reading it until it may settle.
    let executes = shared.store.local_runs().enter(run.id, run.tenant.clone(), run.attempt);
    let watchdog = tokio::spawn(watch(shared.clone(), active, run.attempt, run.id, deadline(shared, &run)));
    let _stop_watchdog = AbortOnDrop(watchdog);
    let journal = shared.store.claimed_journal(&run);
    // The attempt's span (traces on): the engine's spans and outbound requests are beneath it.
    let span = crate::telemetry::attempt(&crate::telemetry::Attempt {
        run_id: run.id.0,
        attempt: run.attempt,
        crew: &run.crew.name,
        tenant: &run.tenant,
        trace: run.trace.as_ref(),
    });
    let execution = AssertUnwindSafe(crate::telemetry::within(span.as_ref(), async {
        let history = match thread_history(shared, &run).await {
            Ok(history) => history,
            Err(error) => return Err(EngineError::Journal(JournalError::Storage(error.to_string()))),
        };
        // An evaluation's case: a replay answers its tool calls from the recorded run's, a case
        // with a rubric is judged (boxed: other runs' futures stay as small as they were).
        let case = match run.evaluation_id {
            None => None,
            Some(_) => match shared.store.evaluation_case(run.id).await {
                Ok(case) => Some(Box::new(case)),
                Err(error) => return Err(EngineError::Journal(JournalError::Storage(error.to_string()))),
            },
        };
        // The first claim: nothing is journaled yet (unless it is a fork), so the journal need
        // not be read.
        let first_attempt = run.attempt == 1 && run.forked_from.is_none();
        let job = RunJob {
            crew: &run.crew,
            inputs: &run.inputs,
            history: history.as_deref(),
            first_attempt,
            replay: case.as_ref().and_then(|c| c.replay.as_ref()),
            judge: case.as_ref().and_then(|c| c.judge.as_ref()),
        };
        shared.engine.execute(&job, &journal, &stop).await
    }))
    .catch_unwind();
    let result = execution.await.unwrap_or_else(|_| {
        tracing::error!("the engine panicked; handing the run back");
        Err(EngineError::Journal(JournalError::Storage("the engine panicked".into())))
    });
    {
        // Only this attempt's entry: a later attempt of the same run may have replaced it.
        let mut active = shared.active();
        if active.get(&run.id).is_some_and(|a| Arc::ptr_eq(&a.reason, &reason)) {
            active.remove(&run.id);
        }
    }
    // Whatever ends the attempt now (the engine's end, a stop, a failure) is read by waiters.
    drop(executes);
    let reason = *reason.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(span) = span {
        end_attempt_span(span, &result, reason);
    }
    conclude(shared, &run, result, reason).await;
    if run.quotas.as_ref().is_some_and(|q| q.max_running.is_some()) {
        // One of the tenant's slots is free, which a claimer on any replica may be waiting for.
        // (Boxed: the future of a run of an uncapped tenant stays as small as it was.)
        Box::pin(announce_freed_slot(shared, run.id)).await;
    }
}

/// End an attempt's span with how the attempt ended.
fn end_attempt_span(
    span: crate::telemetry::Scope,
    result: &Result<crate::domain::TaskOutput, EngineError>,
    reason: Option<StopReason>,
) {
    let status = match (result, reason) {
        (Ok(_), _) => "completed",
        (Err(EngineError::AwaitingInput), None) => "awaiting_input",
        (Err(_), Some(StopReason::Cancelled)) => "cancelled",
        (Err(_), Some(StopReason::Timeout)) => "timed_out",
        (Err(_), Some(StopReason::Shutdown)) => "released",
        (Err(_), Some(StopReason::LeaseLost)) => "lease_lost",
        (Err(EngineError::Failed { .. }), None) => "failed",
        (Err(EngineError::Cancelled), None) => "cancelled",
        (Err(_), None) => "released",
    };
    span.set("agentd.run.status", status);
    match (result, status) {
        (Err(EngineError::Failed { kind, message }), _) => span.fail(kind.as_str(), message),
        (Err(error), "timed_out" | "lease_lost" | "released") => span.fail(status, &error.to_string()),
        _ => {}
    }
    span.end();
}

/// Wake the claimers of every replica (`agentd_runs`); a failure leaves them to their polling.
async fn announce_freed_slot(shared: &Shared, id: RunId) {
    let announced = shared.store.notify_all(crate::store::RUNS_CHANNEL, &[id.to_string()]).await;
    if let Err(error) = announced {
        tracing::warn!(%error, "could not announce a tenant's freed slot; claimers poll");
    }
}

/// How long the run may still take.
fn deadline(shared: &Shared, run: &ClaimedRun) -> Option<Duration> {
    let limit = run.timeout.or(shared.settings.default_timeout)?;
    let elapsed = (chrono::Utc::now() - run.started_at).to_std().unwrap_or_default();
    Some(limit.saturating_sub(elapsed.saturating_sub(run.paused)))
}

/// Aborts a task when dropped (so a watchdog never outlives its run, even on a panic).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Renew the lease until the run ends; stop it when the lease is lost (or cannot be renewed for a
/// whole lease: another replica may have taken over), a cancellation is seen, or the time limit
/// passes.
async fn watch(shared: Arc<Shared>, active: Active, attempt: i32, id: RunId, remaining: Option<Duration>) {
    let timeout = async {
        match remaining {
            Some(remaining) => tokio::time::sleep(remaining).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timeout);
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = &mut timeout => return active.stop(StopReason::Timeout),
            () = tokio::time::sleep(shared.settings.heartbeat) => {}
        }
        match shared.store.renew_lease(id, attempt, shared.settings.lease).await {
            Ok(Lease::Held) => renewed = tokio::time::Instant::now(),
            Ok(Lease::Cancelling) => active.stop(StopReason::Cancelled),
            Ok(Lease::Lost) => return active.stop(StopReason::LeaseLost),
            Err(error) if renewed.elapsed() >= shared.settings.lease => {
                tracing::error!(%error, "the lease could not be renewed for a whole lease; stopping");
                return active.stop(StopReason::LeaseLost);
            }
            Err(error) => tracing::warn!(%error, "renewing the lease failed"),
        }
    }
}

/// Record the end the engine could not: cancellation, timeout, release or failure.
async fn conclude(
    shared: &Shared,
    run: &ClaimedRun,
    result: Result<crate::domain::TaskOutput, EngineError>,
    reason: Option<StopReason>,
) {
    let store = &shared.store;
    let outcome = match (result, reason) {
        (Err(EngineError::AwaitingInput), Some(StopReason::Cancelled)) => {
            store.finish_cancelled(run.id, run.attempt).await
        }
        (Ok(_), _) | (Err(EngineError::Failed { .. } | EngineError::AwaitingInput), _) => return,
        (Err(EngineError::Journal(JournalError::Fenced)), _) | (_, Some(StopReason::LeaseLost)) => {
            tracing::warn!("the run's lease was lost; another worker owns it now");
            return;
        }
        (Err(_), Some(StopReason::Cancelled)) => store.finish_cancelled(run.id, run.attempt).await,
        (Err(_), Some(StopReason::Timeout)) => {
            let message = "the run exceeded its time limit".to_owned();
            store.fail_run(run.id, run.attempt, RunError { kind: ErrorKind::Timeout, message }).await
        }
        (Err(_), Some(StopReason::Shutdown)) => store.release_run(run.id, run.attempt, None).await,
        (Err(error), None) => {
            // The journal failed (the database is down, say): hand the run back so a later
            // attempt continues it; max_attempts bounds the retries.
            tracing::error!(%error, "the run stopped on an error outside the engine; handing it back");
            store.release_run(run.id, run.attempt, Some(&error.to_string())).await
        }
    };
    if let Err(error) = outcome {
        tracing::error!(%error, "recording the run's end failed; its lease will expire and recovery will handle it");
    }
}

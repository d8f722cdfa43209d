//! Waiting for a run to settle (end, or stop for human input), on the bus rather than by polling.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::{BusItem, EventBus};
use crate::domain::{EventType, Run, RunId, RunStatus};
use crate::store::{Settled, Store, StoreResult};

/// Does this status end a wait?
fn settled(status: RunStatus) -> bool {
    status.is_terminal() || status == RunStatus::AwaitingInput
}

/// The run once it is terminal or awaiting input, or as it stands after `timeout`; `None` if
/// there is no such run.
pub async fn wait_for_run(
    store: &Store,
    bus: &EventBus,
    id: RunId,
    timeout: Duration,
) -> StoreResult<Option<Run>> {
    // (An unknown run's subscription is dropped on return, freeing its channel.)
    // Subscribe before reading, so a change between the read and the subscription is not missed.
    let mut subscription = bus.watch_run(id);
    let deadline = tokio::time::Instant::now() + timeout;
    // A run executing here that cannot have settled yet is not read first (`LocalRuns`): its
    // settling events are announced after this subscription, and its worker says when the step
    // that may settle it is committed, before Postgres's notification of it comes back.
    let mut local = store.local_runs().open(id).map(|open| open.settled);
    let mut read = local.is_none();
    loop {
        if read {
            let Some(run) = store.get_run(id).await? else { return Ok(None) };
            if settled(run.status) {
                crate::probe::end(id.0, "wait.read");
                return Ok(Some(run));
            }
        }
        read = true;
        loop {
            let item = tokio::select! {
                item = subscription.receiver.recv() => item,
                step = settled_here(&mut local) => {
                    local = None;
                    match answer(id, step) {
                        Some(run) => return Ok(Some(run)),
                        None => break,
                    }
                }
                () = tokio::time::sleep_until(deadline) => return store.get_run(id).await,
            };
            match item {
                Ok(BusItem::Event { event, .. }) if !settles(event.event.event_type) => continue,
                Ok(BusItem::Notice { event_type, .. }) if !settles(event_type) => continue,
                Ok(BusItem::Delta { .. }) => continue,
                Err(broadcast::error::RecvError::Closed) => return store.get_run(id).await,
                _ => {
                    // Postgres's notification may come back before the worker here hears that
                    // its commit is done: its read-back is a moment away.
                    if local.is_some() {
                        let step = tokio::time::timeout(LOCAL_GRACE, settled_here(&mut local)).await;
                        if let Some(run) = step.ok().and_then(|step| answer(id, step)) {
                            return Ok(Some(run));
                        }
                        local = None;
                    }
                    break;
                }
            }
        }
        crate::probe::mark(id.0, "wait.wakeup");
    }
}

/// How long a waiter told by the bus that its run settled waits for the worker here to hand it
/// the run as committed, before it reads the run itself (the two arrive together, give or take
/// the scheduling of two tasks).
const LOCAL_GRACE: Duration = Duration::from_millis(50);

/// The answer a settling step read back for this replica's waiters, if it settled the run.
fn answer(id: RunId, step: Settled) -> Option<Run> {
    let run = step.run.filter(|run| settled(run.status))?;
    crate::probe::end(id.0, "wait.wakeup");
    Some(Arc::unwrap_or_clone(run))
}

/// Resolves when the worker here has committed a step that may settle the run; never when there
/// is no such worker, or its attempt ended without one (the run's events tell then).
async fn settled_here(local: &mut Option<tokio::sync::watch::Receiver<Option<Settled>>>) -> Settled {
    if let Some(receiver) = local {
        if let Ok(settled) = receiver.wait_for(Option::is_some).await {
            if let Some(settled) = settled.clone() {
                return settled;
            }
        }
    }
    std::future::pending().await
}

/// Does this event announce a settled run?
fn settles(event_type: EventType) -> bool {
    event_type.is_terminal()
        || event_type == EventType::RunAwaitingInput
        || event_type == EventType::ToolApprovalRequested
}

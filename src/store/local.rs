//! The runs this replica is executing, as far as waiting for them goes: a run whose attempt runs
//! here, and has not begun to write its end (or a stop for human input), cannot have settled, so
//! a `/wait` on this replica for it need not read it first: it follows the run's events and reads
//! the run once they say it settled. A run enters when its attempt starts here and leaves when
//! the attempt ends; before the journal writes a step that may settle the run, the run is marked
//! settling, so a waiter that found it open is subscribed before any such event is announced.
//! Once that step is committed the waiters that found it open are told at once ([`OpenRun`]),
//! without waiting for the commit's notification to come back from Postgres.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::domain::{Run, RunId, TenantId};

/// This replica's executing runs (see the module's header).
#[derive(Debug, Default)]
pub struct LocalRuns {
    runs: Mutex<HashMap<RunId, Executing>>,
}

#[derive(Debug)]
struct Executing {
    tenant: TenantId,
    attempt: i32,
    settling: bool,
    /// Set once a step that may settle the run is committed: with the run as that step left it
    /// when a waiter here was following the run (read in the step's transaction).
    settled: watch::Sender<Option<Settled>>,
}

/// A committed step that may have settled a run.
#[derive(Debug, Clone)]
pub struct Settled {
    /// The run as the step left it, read in its transaction; `None` when nobody here waited.
    pub run: Option<Arc<Run>>,
}

/// A run executing here that cannot have settled yet: its tenant, and a signal set when a step
/// that may settle it has been committed (the sender is dropped when the attempt
/// ends without one: then only the run's events tell).
#[derive(Debug)]
pub struct OpenRun {
    pub tenant: TenantId,
    pub settled: watch::Receiver<Option<Settled>>,
}

impl LocalRuns {
    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Executing>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attempt `attempt` of run `id`, of `tenant`, executes here until the guard is dropped.
    pub fn enter(self: &Arc<Self>, id: RunId, tenant: TenantId, attempt: i32) -> Executes {
        let settled = watch::Sender::new(None);
        self.runs().insert(id, Executing { tenant, attempt, settling: false, settled });
        Executes { runs: self.clone(), id, attempt }
    }

    /// The run may settle from now on (a step that may end it or stop it for input is written).
    pub fn settling(&self, id: RunId) {
        if let Some(run) = self.runs().get_mut(&id) {
            run.settling = true;
        }
    }

    /// Does a waiter here follow run `id` (so a settling step should read the run back)?
    pub fn is_awaited(&self, id: RunId) -> bool {
        self.runs().get(&id).is_some_and(|run| run.settled.receiver_count() > 0)
    }

    /// A step that may settle the run is committed (`run`: the run as it left it, if read back):
    /// its waiters here are told.
    pub fn settled(&self, id: RunId, run: Option<Box<Run>>) {
        if let Some(executing) = self.runs().get(&id) {
            executing.settled.send_replace(Some(Settled { run: run.map(Arc::from) }));
        }
    }

    /// Run `id` when it executes here and cannot have settled yet.
    pub fn open(&self, id: RunId) -> Option<OpenRun> {
        let runs = self.runs();
        let run = runs.get(&id).filter(|run| !run.settling)?;
        Some(OpenRun { tenant: run.tenant.clone(), settled: run.settled.subscribe() })
    }
}

/// An attempt executing here; dropped, the run leaves [`LocalRuns`].
#[derive(Debug)]
pub struct Executes {
    runs: Arc<LocalRuns>,
    id: RunId,
    attempt: i32,
}

impl Drop for Executes {
    fn drop(&mut self) {
        let mut runs = self.runs.runs();
        // Only this attempt's entry: a later attempt of the run may have replaced it.
        if runs.get(&self.id).is_some_and(|run| run.attempt == self.attempt) {
            runs.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_open_while_it_executes_and_until_it_settles() {
        let local = Arc::new(LocalRuns::default());
        let (id, tenant) = (RunId::new(), TenantId::from("team-a".to_owned()));
        assert!(local.open(id).is_none(), "not executing here");
        let first = local.enter(id, tenant.clone(), 1);
        let open = local.open(id).expect("open");
        assert_eq!(open.tenant, tenant);
        assert!(open.settled.borrow().is_none());
        assert!(local.is_awaited(id));
        local.settling(id);
        assert!(local.open(id).is_none(), "a settling run is read, not assumed open");
        local.settled(id, None);
        assert!(open.settled.borrow().is_some(), "a waiter that found it open is told");
        drop(first);
        let second = local.enter(id, tenant.clone(), 2);
        let stale = Executes { runs: local.clone(), id, attempt: 1 };
        drop(stale);
        assert!(local.open(id).is_some(), "an earlier attempt's end leaves the later one");
        drop(second);
        assert!(local.open(id).is_none());
    }
}

//! The runs this replica is executing, as far as waiting for them goes: a run whose attempt runs
//! here, and has not begun to write its end (or a stop for human input), cannot have settled, so
//! a `/wait` on this replica for it need not read it first: it follows the run's events and reads
//! the run once they say it settled. A run enters when its attempt starts here and leaves when
//! the attempt ends; before the journal writes a step that may settle the run, the run is marked
//! settling, so a waiter that found it open is subscribed before any such event is announced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::domain::{RunId, TenantId};

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
}

impl LocalRuns {
    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Executing>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attempt `attempt` of run `id`, of `tenant`, executes here until the guard is dropped.
    pub fn enter(self: &Arc<Self>, id: RunId, tenant: TenantId, attempt: i32) -> Executes {
        self.runs().insert(id, Executing { tenant, attempt, settling: false });
        Executes { runs: self.clone(), id, attempt }
    }

    /// The run may settle from now on (a step that may end it or stop it for input is written).
    pub fn settling(&self, id: RunId) {
        if let Some(run) = self.runs().get_mut(&id) {
            run.settling = true;
        }
    }

    /// The tenant of run `id` when it executes here and cannot have settled yet.
    pub fn open(&self, id: RunId) -> Option<TenantId> {
        self.runs().get(&id).filter(|run| !run.settling).map(|run| run.tenant.clone())
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
        assert_eq!(local.open(id), None, "not executing here");
        let first = local.enter(id, tenant.clone(), 1);
        assert_eq!(local.open(id), Some(tenant.clone()));
        local.settling(id);
        assert_eq!(local.open(id), None, "a settling run is read, not assumed open");
        drop(first);
        let second = local.enter(id, tenant.clone(), 2);
        let stale = Executes { runs: local.clone(), id, attempt: 1 };
        drop(stale);
        assert_eq!(local.open(id), Some(tenant), "an earlier attempt's end leaves the later one");
        drop(second);
        assert_eq!(local.open(id), None);
    }
}

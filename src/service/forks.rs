//! Forks and retries: `POST /v1/runs/{id}/fork` (a new run from an ended run's journal, from a
//! task on, with changes) and `POST /v1/runs/{id}/retry` (a failed run continues its journal).

use serde_json::Value;

use super::access::queue_full;
use super::runs::no_run;
use super::{ServiceError, ServiceResult, Services};
use crate::domain::fork::{apply, ForkPlan, ForkRequest};
use crate::domain::kickoff::prepare_run;
use crate::domain::validate::parse_json;
use crate::domain::{Caller, Run, RunId};
use crate::store::{Audit, Forked, Retried};

impl Services {
    /// Fork run `id` at a task: the tasks before it are taken over (none of their calls is made
    /// again), it and the ones after run anew with the changes applied.
    pub async fn fork(&self, caller: &Caller, id: RunId, body: Value, audit: &Audit) -> ServiceResult<Run> {
        let request: ForkRequest = parse_json(body).map_err(ServiceError::Invalid)?;
        let source = match self.store.fork_source(id).await? {
            Some(source) if caller.sees(&source.tenant) => source,
            _ => return Err(no_run(id)),
        };
        if !source.status.is_terminal() {
            return Err(unfinished(source.status.as_str()));
        }
        let ForkPlan { crew, inputs, reused } =
            apply(&source.crew, &source.inputs, &request.at.task, &request.changes)
                .map_err(ServiceError::Invalid)?;
        let tenant = &source.tenant;
        let mut run = prepare_run(crew, inputs, source.metadata, source.timeout_s, tenant, &self.validation)
            .map_err(ServiceError::Invalid)?;
        self.check_secrets_exist(tenant, &run.crew, "crew.").await?;
        self.check_knowledge_exists(tenant, &run.crew, "crew.").await?;
        self.admit(tenant, std::slice::from_mut(&mut run)).await?;
        match self.store.fork_run(&run, id, &request.at.task, &reused, audit).await? {
            Forked::Stored(run) => Ok(*run),
            Forked::NoSource => Err(no_run(id)),
            Forked::Unfinished(status) => Err(unfinished(status.as_str())),
            Forked::QueueFull(full) => Err(queue_full(&full)),
            Forked::TaskNotDone(task, status) => Err(ServiceError::Conflict(format!(
                "task '{task}' comes before '{}' but did not complete in the run ({status}): fork at it or before it",
                request.at.task
            ))),
        }
    }

    /// Queue failed run `id` again, to continue from where it failed (under its tenant's
    /// `max_queued`, as a kickoff).
    pub async fn retry(&self, caller: &Caller, id: RunId, audit: &Audit) -> ServiceResult<Run> {
        let tenant = match self.store.run_tenant(id).await? {
            Some(tenant) if caller.sees(&tenant) => tenant,
            _ => return Err(no_run(id)),
        };
        let max_queued = self.quotas_of(&tenant).await?.max_queued;
        match self.store.retry_run(id, max_queued.map(|max| (&tenant, max)), audit).await? {
            Retried::QueueFull(full) => Err(queue_full(&full)),
            Retried::Queued(run) => Ok(*run),
            Retried::NotFound => Err(no_run(id)),
            Retried::NotFailed(status) => Err(ServiceError::Conflict(format!(
                "only a failed run is retried; this one is {}",
                status.as_str()
            ))),
        }
    }
}

fn unfinished(status: &str) -> ServiceError {
    ServiceError::Conflict(format!("the run has not ended ({status}): fork it once it has"))
}

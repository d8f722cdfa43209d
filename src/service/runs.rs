//! Reading runs (one, a page of them, a run's messages, tool calls and events) and steering them
//! (cancelling, resuming one that awaits a human's review).

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::journal::{Message, ToolCall};
use crate::domain::{Caller, Event, Run, RunId, RunStatus, TaskRun};
use crate::store::{Audit, CancelOutcome, Deleted, ResumeOutcome};

use crate::domain::run::{RunPage, StatusCursor, TaggedPage, TaggedRuns};

impl Services {
    /// Run `id`, if the caller may see it (another tenant's run does not exist, to it).
    pub async fn run(&self, caller: &Caller, id: RunId) -> ServiceResult<Run> {
        match self.store.get_run(id).await? {
            Some(run) if caller.sees(&run.tenant) => Ok(run),
            _ => Err(no_run(id)),
        }
    }

    /// Fail with "no such run" when run `id` is another tenant's (or does not exist). An admin sees
    /// every tenant's runs: for it nothing is read here, and whether the run exists is the use
    /// case's own answer (so the operator's requests cost no more than before tenants).
    pub async fn visible_run(&self, caller: &Caller, id: RunId) -> ServiceResult<()> {
        if caller.is_admin() {
            return Ok(());
        }
        // A run executing here names its tenant without a read.
        if let Some(open) = self.store.local_runs().open(id) {
            if caller.sees(&open.tenant) {
                return Ok(());
            }
        }
        match self.store.run_tenant(id).await? {
            Some(tenant) if caller.sees(&tenant) => Ok(()),
            _ => Err(no_run(id)),
        }
    }

    /// Fail with "no such run" unless the run exists. Asked only when a read found nothing, the
    /// only case where the answer is ambiguous.
    async fn ensure_run(&self, id: RunId, found_nothing: bool) -> ServiceResult<()> {
        if found_nothing && !self.store.run_exists(id).await? {
            return Err(no_run(id));
        }
        Ok(())
    }

    /// Task `name` of run `id`, its output whole.
    pub async fn task(&self, caller: &Caller, id: RunId, name: &str) -> ServiceResult<TaskRun> {
        let run = self.run(caller, id).await?;
        run.tasks
            .into_iter()
            .find(|task| task.name == name)
            .ok_or_else(|| ServiceError::NotFound(format!("run {id} has no task '{name}'")))
    }

    /// Runs newest first, `limit` of them, older than the run `before` when given.
    pub async fn runs(
        &self,
        caller: &Caller,
        status: Option<RunStatus>,
        before: Option<RunId>,
        limit: i64,
    ) -> ServiceResult<RunPage> {
        Ok(self.store.list_runs(caller.visible_tenant(), status, before, limit).await?)
    }

    /// A page of the caller's runs `filter` selects (a protocol's own, say), with their count.
    pub async fn tagged_runs(
        &self,
        caller: &Caller,
        filter: &TaggedRuns,
        after: Option<StatusCursor>,
        limit: i64,
    ) -> ServiceResult<TaggedPage> {
        Ok(self.store.list_tagged_runs(caller.visible_tenant(), filter, after, limit).await?)
    }

    /// A run's messages in conversation order.
    pub async fn messages(&self, caller: &Caller, id: RunId) -> ServiceResult<Vec<Message>> {
        self.visible_run(caller, id).await?;
        let messages = self.store.list_messages(id).await?;
        self.ensure_run(id, messages.is_empty()).await?;
        Ok(messages)
    }

    /// A run's tool calls in the order they started.
    pub async fn tool_calls(&self, caller: &Caller, id: RunId) -> ServiceResult<Vec<ToolCall>> {
        self.visible_run(caller, id).await?;
        let tool_calls = self.store.list_tool_calls(id).await?;
        self.ensure_run(id, tool_calls.is_empty()).await?;
        Ok(tool_calls)
    }

    /// Up to `limit` of a run's events after `after` (a `seq`).
    pub async fn events(
        &self,
        caller: &Caller,
        id: RunId,
        after: i64,
        limit: i64,
    ) -> ServiceResult<Vec<Event>> {
        self.visible_run(caller, id).await?;
        let events = self.store.list_events(id, after, limit).await?;
        self.ensure_run(id, events.is_empty()).await?;
        Ok(events)
    }

    /// Whether a stream of `id`'s events after `after` has anything to follow: `false` when the
    /// run has ended and `after` is at or past its terminal event.
    pub async fn stream_has_more(&self, caller: &Caller, id: RunId, after: i64) -> ServiceResult<bool> {
        self.visible_run(caller, id).await?;
        match self.store.run_progress(id).await? {
            None => Err(no_run(id)),
            Some((status, last)) => Ok(!(status.is_terminal() && after >= last)),
        }
    }

    /// Cancel a run: at once if it waits, else by its worker (the run says `cancelling`).
    pub async fn cancel(&self, caller: &Caller, id: RunId, audit: &Audit) -> ServiceResult<Run> {
        self.visible_run(caller, id).await?;
        match self.store.request_cancel(id, audit).await? {
            CancelOutcome::NotFound => Err(no_run(id)),
            CancelOutcome::AlreadyFinished(run) => {
                Err(ServiceError::Conflict(format!("the run has already ended ({})", run.status.as_str())))
            }
            CancelOutcome::Accepted(run) => Ok(run),
        }
    }

    /// Remove a finished run with its journal and idempotency key.
    pub async fn delete(&self, caller: &Caller, id: RunId, audit: &Audit) -> ServiceResult<()> {
        self.visible_run(caller, id).await?;
        match self.store.delete_run(id, audit).await? {
            Deleted::Deleted => Ok(()),
            Deleted::NotFound => Err(no_run(id)),
            Deleted::Live(status) => Err(ServiceError::Conflict(format!(
                "the run has not ended ({}); cancel it first",
                status.as_str()
            ))),
        }
    }

    /// Approve the answer a run awaits review of, or reject it with `feedback` for the agent.
    pub async fn resume(
        &self,
        caller: &Caller,
        id: RunId,
        approve: bool,
        feedback: Option<&str>,
        audit: &Audit,
    ) -> ServiceResult<Run> {
        self.visible_run(caller, id).await?;
        let feedback = feedback.map(str::trim).filter(|f| !f.is_empty());
        if !approve && feedback.is_none() {
            return Err(invalid("feedback", "required to reject an answer"));
        }
        match self.store.resume_run(id, approve, feedback, audit).await? {
            ResumeOutcome::NotFound => Err(no_run(id)),
            ResumeOutcome::NotAwaiting(status) => {
                Err(ServiceError::Conflict(format!("the run is not awaiting input ({})", status.as_str())))
            }
            ResumeOutcome::AwaitsApprovals => Err(ServiceError::Conflict(
                "the run waits for decisions on tool calls: POST /v1/runs/{id}/tool-calls/{tool_call_id}/approval".into(),
            )),
            ResumeOutcome::Resumed(run) => Ok(*run),
        }
    }
}

/// The error of a request naming a run that does not exist.
pub fn no_run(id: RunId) -> ServiceError {
    ServiceError::NotFound(format!("no run with id {id}"))
}

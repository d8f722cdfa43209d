//! Approval before a tool runs: a reviewer's decision on a journaled call that waits for one.
//! The decision is journaled on the call (so a crash, or another replica, changes nothing), its
//! event appended, and once no call of the run waits any more the run goes back to the queue.

use serde_json::Value;

use super::events::append_event_tx;
use super::listen::{notify, RUNS_CHANNEL};
use super::{decode, parse, Audit, Owner, Store, StoreResult};
use crate::domain::event::{ToolRejected, ToolStarted};
use crate::domain::journal::Approval;
use crate::domain::{CrewSpec, EventData, Run, RunId, RunStatus};

/// A call that waits for a decision, as a reviewer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    pub tool: String,
    pub arguments: Value,
    pub approval: Option<Approval>,
    /// The run's crew (the tool's schema is in it, or in its journaled MCP discovery).
    pub crew: CrewSpec,
}

/// What a decision did.
#[derive(Debug)]
pub enum DecideOutcome {
    NotFound,
    /// The call is not waiting for a decision (none was asked, or it was decided).
    NotAwaiting,
    /// Decided; the run as it is now (queued again once no call waits).
    Decided(Box<Run>),
}

impl Store {
    /// The call `call_id` of run `id`, with what deciding on it needs.
    #[tracing::instrument(skip_all, fields(run_id = %id, call = %call_id), err)]
    pub async fn call_for_review(&self, id: RunId, call_id: &str) -> StoreResult<Option<PendingCall>> {
        let row = sqlx::query!(
            r#"SELECT t.tool, t.arguments, t.approval, r.crew_spec
                 FROM tool_calls t JOIN runs r ON r.id = t.run_id
                WHERE t.run_id = $1 AND t.id = $2"#,
            id.0,
            call_id
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(PendingCall {
            tool: row.tool,
            arguments: row.arguments,
            approval: row.approval.map(|a| decode(a, "tool_calls.approval")).transpose()?,
            crew: decode(row.crew_spec, "runs.crew_spec")?,
        }))
    }

    /// Record `decision` (approved or rejected) on the waiting call `call_id` of run `id`.
    #[tracing::instrument(skip_all, fields(run_id = %id, call = %call_id), err)]
    pub async fn decide_tool_call(
        &self,
        id: RunId,
        call_id: &str,
        decision: &Approval,
        audit: &Audit,
    ) -> StoreResult<DecideOutcome> {
        let mut tx = self.pool.begin().await?;
        let run = sqlx::query!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(run) = run else { return Ok(DecideOutcome::NotFound) };
        let status: RunStatus = parse(&run.status)?;
        let call = sqlx::query!(
            r#"SELECT task, agent, tool, arguments, approval->>'state' AS state
                 FROM tool_calls WHERE run_id = $1 AND id = $2"#,
            id.0,
            call_id
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(call) = call else { return Ok(DecideOutcome::NotFound) };
        if call.state.as_deref() != Some("pending") {
            return Ok(DecideOutcome::NotAwaiting);
        }
        let stored = serde_json::to_value(decision).map_err(|e| super::StoreError::Corrupt(e.to_string()))?;
        sqlx::query!(
            "UPDATE tool_calls SET approval = $3 WHERE run_id = $1 AND id = $2",
            id.0,
            call_id,
            stored
        )
        .execute(&mut *tx)
        .await?;
        let tool_call_id = call_id.to_owned();
        let data = match decision {
            Approval::Rejected { reason } => EventData::ToolRejected(ToolRejected {
                tool_call_id,
                tool: call.tool,
                reason: reason.clone(),
            }),
            Approval::Approved { arguments } => EventData::ToolApproved(ToolStarted {
                tool_call_id,
                tool: call.tool,
                arguments: arguments.clone().unwrap_or(call.arguments),
            }),
            Approval::Pending | Approval::Deferred => {
                return Err(super::StoreError::Corrupt("a decision approves or rejects".into()))
            }
        };
        append_event_tx(&mut tx, id, call.task.as_deref(), call.agent.as_deref(), data).await?;
        let waiting = super::pause::count_pending(&mut *tx, id).await?;
        if waiting == 0 && status == RunStatus::AwaitingInput {
            super::pause::requeue(&mut tx, id).await?;
            notify(&mut tx, RUNS_CHANNEL, id).await?;
        }
        audit.record_for(&mut tx, Owner::Run(id.0)).await?;
        tx.commit().await?;
        match self.get_run(id).await? {
            Some(run) => Ok(DecideOutcome::Decided(Box::new(run))),
            None => Ok(DecideOutcome::NotFound),
        }
    }
}

//! Human review of a task's answer: a run paused in `awaiting_input` is resumed with a decision.
//! Approval completes the task; rejection puts the reviewer's feedback into the task's
//! conversation so the agent redoes it. Either way the run goes back to the queue.

use serde_json::Value;

use super::events::append_event_tx;
use super::listen::{notify, RUNS_CHANNEL};
use super::{parse, Audit, Owner, Store, StoreError, StoreResult};
use crate::domain::event::{RunResumed, TaskCompleted};
use crate::domain::{EventData, Run, RunId, RunStatus};

/// What a resume request did.
#[derive(Debug)]
pub enum ResumeOutcome {
    NotFound,
    /// The run is not awaiting input.
    NotAwaiting(RunStatus),
    /// The run waits for decisions on tool calls, not for a review of an answer.
    AwaitsApprovals,
    Resumed(Box<Run>),
}

/// How rejected work reaches the agent.
fn feedback_message(feedback: &str) -> String {
    format!("A human reviewed your final answer and asks for changes:\n{feedback}\n\nRevise your Final Answer accordingly.")
}

impl Store {
    /// Resume a run awaiting input: approve the task's answer, or reject it with feedback.
    #[tracing::instrument(skip_all, fields(run_id = %id, approve), err)]
    pub async fn resume_run(
        &self,
        id: RunId,
        approve: bool,
        feedback: Option<&str>,
        audit: &Audit,
    ) -> StoreResult<ResumeOutcome> {
        let mut tx = self.pool.begin().await?;
        let run = sqlx::query!("SELECT status, attempt FROM runs WHERE id = $1 FOR UPDATE", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(run) = run else { return Ok(ResumeOutcome::NotFound) };
        let status: RunStatus = parse(&run.status)?;
        if status != RunStatus::AwaitingInput {
            return Ok(ResumeOutcome::NotAwaiting(status));
        }
        if super::pause::count_pending(&mut *tx, id).await? > 0 {
            return Ok(ResumeOutcome::AwaitsApprovals);
        }
        super::pause::requeue(&mut tx, id).await?;
        let task = sqlx::query!(
            r#"SELECT name, agent, output AS "output!" FROM run_tasks
               WHERE run_id = $1 AND status = 'running' AND output IS NOT NULL
               ORDER BY position LIMIT 1"#,
            id.0
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("run {id} awaits input but no task has an answer")))?;
        if approve {
            sqlx::query!(
                "UPDATE run_tasks SET status = 'completed', finished_at = now() WHERE run_id = $1 AND name = $2",
                id.0,
                task.name
            )
            .execute(&mut *tx)
            .await?;
            let output = task.output.get("raw").and_then(Value::as_str).map(str::to_owned);
            let data = EventData::TaskCompleted(TaskCompleted { task: task.name.clone(), output });
            append_event_tx(&mut tx, id, Some(&task.name), task.agent.as_deref(), data).await?;
        } else {
            sqlx::query!(
                "UPDATE run_tasks SET output = NULL WHERE run_id = $1 AND name = $2",
                id.0,
                task.name
            )
            .execute(&mut *tx)
            .await?;
            sqlx::query!(
                r#"INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, attempt)
                   SELECT $1, coalesce(max(seq), 0) + 1, $2, $2, $3, 'user', $4, $5
                     FROM messages WHERE run_id = $1"#,
                id.0,
                task.name,
                task.agent,
                feedback_message(feedback.unwrap_or_default()),
                run.attempt
            )
            .execute(&mut *tx)
            .await?;
        }
        let data = RunResumed { feedback: feedback.map(str::to_owned), approve };
        append_event_tx(&mut tx, id, Some(&task.name), task.agent.as_deref(), EventData::RunResumed(data))
            .await?;
        notify(&mut tx, RUNS_CHANNEL, id).await?;
        audit.record_for(&mut tx, Owner::Run(id.0)).await?;
        tx.commit().await?;
        match self.get_run(id).await? {
            Some(run) => Ok(ResumeOutcome::Resumed(Box::new(run))),
            None => Ok(ResumeOutcome::NotFound),
        }
    }
}

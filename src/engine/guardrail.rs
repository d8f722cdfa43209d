//! Guardrails: a sentence a task's answer must satisfy ("the answer cites at least one source"),
//! judged by the model in its own small conversation. A failed check feeds the reason back and the
//! agent redoes its answer, a bounded number of times. The judge's exchange is journaled, so a
//! crash never asks the same question twice.

use serde_json::{json, Value};

use super::agent::{AgentLoop, Flow};
use super::effects::Purpose;
use super::journal::Step;
use super::prompts;
use super::repair::parse_lenient;
use super::EngineError;
use crate::domain::{ErrorKind, EventType, TaskOutput};
use crate::llm::{ChatMessage, Role};

/// Redos a failed guardrail allows by default.
pub const DEFAULT_GUARDRAIL_RETRIES: u32 = 3;

/// A task's guardrail.
#[derive(Debug, Clone)]
pub struct Guardrail {
    pub rule: String,
    pub max_retries: u32,
}

/// The judge's decision.
struct Verdict {
    pass: bool,
    reason: String,
}

impl AgentLoop<'_> {
    /// Judge `output` against the task's guardrail: `None` to accept it, or the flow that asks
    /// the agent to redo it.
    pub(super) async fn check_guardrail(
        &mut self,
        output: &TaskOutput,
        pending: &mut Step,
    ) -> Result<Option<Flow>, EngineError> {
        let Some(guardrail) = self.turn.guardrail.clone() else { return Ok(None) };
        let verdict = self.judge(&guardrail, output, pending).await?;
        let data = json!({"task": self.turn.task, "reason": verdict.reason});
        if verdict.pass {
            self.turn.event(pending, EventType::GuardrailPassed, data);
            return Ok(None);
        }
        self.turn.event(pending, EventType::GuardrailFailed, data);
        self.guardrail_retries += 1;
        if self.guardrail_retries > guardrail.max_retries {
            let message = format!(
                "the answer failed its guardrail {} times; last reason: {}",
                self.guardrail_retries, verdict.reason
            );
            return Err(EngineError::failed(ErrorKind::LlmError, message));
        }
        self.push(ChatMessage::user(prompts::guardrail_feedback(&verdict.reason)), pending);
        Ok(Some(Flow::Continue))
    }

    /// The verdict on the answer of the current iteration: the journaled one, or a new judge call.
    async fn judge(
        &mut self,
        guardrail: &Guardrail,
        output: &TaskOutput,
        pending: &mut Step,
    ) -> Result<Verdict, EngineError> {
        let conversation = format!("{}#{}/guardrail", self.turn.conversation, self.iterations);
        let recorded = self.ctx.snapshot.conversation(&conversation);
        if let Some(reply) = recorded.iter().rev().find(|m| m.role == Role::Assistant) {
            return Ok(read_verdict(reply.content.as_deref().unwrap_or_default()));
        }
        let messages = vec![
            ChatMessage::system(prompts::GUARDRAIL_SYSTEM),
            ChatMessage::user(prompts::guardrail_question(
                &self.turn.task_prompt,
                &guardrail.rule,
                &output.raw,
            )),
        ];
        let text = self
            .turn
            .side_call(
                &self.turn.model,
                &conversation,
                messages,
                Purpose::Guardrail,
                "the guardrail check",
                self.ctx,
                pending,
            )
            .await?;
        Ok(read_verdict(&text))
    }
}

/// Read `{"pass": bool, "reason": "..."}`; anything else is a failure saying so.
fn read_verdict(text: &str) -> Verdict {
    let parsed = parse_lenient(text);
    let pass = parsed.as_ref().and_then(|v| v.get("pass")).and_then(Value::as_bool);
    let reason = parsed.as_ref().and_then(|v| v.get("reason")).and_then(Value::as_str).map(str::to_owned);
    match pass {
        Some(pass) => Verdict { pass, reason: reason.unwrap_or_default() },
        None => Verdict { pass: false, reason: format!("the judge's verdict could not be read: {text}") },
    }
}

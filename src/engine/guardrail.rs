//! Guardrails: a sentence a task's answer must satisfy ("the answer cites at least one source"),
//! judged by the model in its own small conversation. A failed check feeds the reason back and the
//! agent redoes its answer, a bounded number of times. The judge's exchange is journaled, so a
//! crash never asks the same question twice.

use serde_json::Value;

use super::effects::Purpose;
use super::journal::Step;
use super::keys;
use super::prompts;
use super::repair::parse_lenient;
use super::turn::{AgentTurn, Guardrail};
use super::{Context, EngineError};
use crate::domain::event::GuardrailVerdict;
use crate::domain::{ErrorKind, EventData, TaskOutput};
use crate::llm::{ChatMessage, Role};

/// A judge's decision (a guardrail's, or an evaluation's judge's, which also scores).
#[derive(Debug, PartialEq)]
pub(super) struct Verdict {
    pub pass: bool,
    /// From 0 to 1 (clamped), when the judge gave one.
    pub score: Option<f64>,
    pub reason: String,
}

/// What the guardrail makes of an answer.
pub(super) enum Judgement {
    /// The answer stands.
    Accept,
    /// The agent redoes its answer after this feedback.
    Redo(String),
}

impl Guardrail {
    /// Judge `output`, the answer of iteration `iteration` of `turn`'s conversation, and announce
    /// the verdict (`guardrail.passed` / `guardrail.failed`). `failures` counts the failed checks
    /// of this task so far; past `max_retries` of them the task fails.
    pub(super) async fn check(
        &self,
        turn: &AgentTurn,
        iteration: u32,
        output: &TaskOutput,
        failures: &mut u32,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<Judgement, EngineError> {
        let verdict = self.verdict(turn, iteration, output, ctx, pending).await?;
        let data = GuardrailVerdict { task: turn.task.clone(), reason: verdict.reason.clone() };
        if verdict.pass {
            turn.event(pending, EventData::GuardrailPassed(data));
            return Ok(Judgement::Accept);
        }
        turn.event(pending, EventData::GuardrailFailed(data));
        *failures += 1;
        if *failures > self.max_retries {
            let message =
                format!("the answer failed its guardrail {failures} times; last reason: {}", verdict.reason);
            return Err(EngineError::failed(ErrorKind::LlmError, message));
        }
        Ok(Judgement::Redo(prompts::guardrail_feedback(&verdict.reason)))
    }

    /// The verdict on the answer: the journaled one, or a new judge call.
    async fn verdict(
        &self,
        turn: &AgentTurn,
        iteration: u32,
        output: &TaskOutput,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<Verdict, EngineError> {
        let conversation = keys::guardrail(&turn.conversation, iteration);
        let recorded = ctx.snapshot.conversation(&conversation);
        if let Some(reply) = recorded.iter().rev().find(|m| m.role == Role::Assistant) {
            return Ok(read_verdict(reply.content.as_deref().unwrap_or_default()));
        }
        let question = prompts::guardrail_question(&turn.task_prompt, &self.rule, &output.raw);
        let messages = vec![ChatMessage::system(prompts::GUARDRAIL_SYSTEM), ChatMessage::user(question)];
        let text =
            turn.side_call(&turn.model, &conversation, messages, Purpose::Guardrail, ctx, pending).await?;
        Ok(read_verdict(&text))
    }
}

/// Read `{"pass": bool, "reason": "...", "score": 0..1}` (`score` optional); anything without a
/// `pass` is a failure saying so.
pub(super) fn read_verdict(text: &str) -> Verdict {
    let parsed = parse_lenient(text);
    let field = |name: &str| parsed.as_ref().and_then(|v| v.get(name));
    let reason = field("reason").and_then(Value::as_str).unwrap_or_default().to_owned();
    let score = field("score").and_then(Value::as_f64).filter(|s| s.is_finite()).map(|s| s.clamp(0.0, 1.0));
    match field("pass").and_then(Value::as_bool) {
        Some(pass) => Verdict { pass, score, reason },
        None => Verdict {
            pass: false,
            score: None,
            reason: format!("the judge's verdict could not be read: {text}"),
        },
    }
}

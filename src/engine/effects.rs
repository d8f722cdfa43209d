//! The effects layer for model calls: the one way a run's calls reach a model, whatever asks
//! (an agent's turn, the manager's, a coworker's, the guardrail judge, the planner, the context
//! summariser), so that every call keeps the same rules:
//!
//! 1. it waits for a slot under its rate limits (crew or agent `max_rpm`, the provider's `rpm`
//!    and 429 holds), announcing a wait as `run.throttled`;
//! 2. it announces `llm.started` and commits the pending journal step before the model is asked
//!    (the durability contract), except a step a resumed run would write again the same way
//!    ([`Step::is_replayable`]: a task's start and prompts), which is committed while the call
//!    goes out; a failed commit stops the call;
//! 3. after the reply: NUL characters are scrubbed (Postgres cannot store them), latency and
//!    tokens go to the metrics and the run's usage, and `llm.finished` is announced.
//!
//! Tool calls keep their own path (`calls.rs`) for now.

use std::time::Instant;

use serde_json::{json, Value};

use super::journal::Step;
use super::{Context, EngineError};
use crate::domain::EventType;
use crate::llm::{provider_key, ChatRequest, ChatResponse, LlmError, ResolvedModel};
use crate::ratelimit::Limit;

/// Why a model is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A turn of an agent's conversation (also the manager's and a coworker's): its iteration,
    /// counted from 1.
    Turn(u32),
    /// The guardrail judge's verdict on an answer.
    Guardrail,
    /// The planner's steps for a task.
    Planner,
    /// A summary of an overflowing conversation.
    Summarizer,
}

impl Purpose {
    /// What `llm.started` and `llm.finished` say of the call, beside the model.
    fn describe(self, data: &mut Value) {
        match self {
            Purpose::Turn(iteration) => data["iteration"] = json!(iteration),
            Purpose::Guardrail => data["purpose"] = json!("guardrail"),
            Purpose::Planner => data["purpose"] = json!("planner"),
            Purpose::Summarizer => data["purpose"] = json!("summarizer"),
        }
    }
}

/// One model call of a run.
pub struct ModelCall<'a> {
    pub model: &'a ResolvedModel,
    pub request: ChatRequest,
    /// The gates the call passes (see [`gates_for`]).
    pub limits: &'a [Limit],
    pub purpose: Purpose,
    /// The task and agent its events name.
    pub task: &'a str,
    pub agent: &'a str,
}

/// Why a model call produced no response.
pub enum CallError {
    /// The model failed: the caller may recover.
    Llm(LlmError),
    /// The run must stop (cancelled, lease lost, journal down).
    Stop(EngineError),
}

impl From<EngineError> for CallError {
    fn from(error: EngineError) -> Self {
        CallError::Stop(error)
    }
}

impl Context<'_> {
    /// Ask the model, keeping the rules above; `pending` is committed (or being committed) when
    /// the request goes out, and holds the reply's usage and `llm.finished` on return.
    pub async fn call_model(
        &self,
        call: ModelCall<'_>,
        pending: &mut Step,
    ) -> Result<ChatResponse, CallError> {
        let ModelCall { model, request, limits, purpose, task, agent } = call;
        let label = format!("{}/{}", model.provider, model.model);
        self.throttle(limits, task, agent, pending).await?;
        let mut data = json!({"model": label});
        purpose.describe(&mut data);
        pending.event(EventType::LlmStarted, Some(task), Some(agent), data);
        let alongside = pending.is_replayable();
        if !alongside {
            self.commit(pending).await?;
        }
        let started = Instant::now();
        let chat = self.guarded(model.client.chat(&request));
        let response = if alongside { self.commit_alongside(pending, chat).await? } else { chat.await };
        let mut response = response.ok_or(EngineError::Cancelled)?.map_err(CallError::Llm)?;
        scrub_reply(&mut response);
        let usage = response.usage;
        let elapsed = started.elapsed();
        self.metrics.observe_llm(&label, elapsed, usage.prompt_tokens, usage.completion_tokens);
        pending.usage.llm_calls += 1;
        pending.usage.prompt_tokens += usage.prompt_tokens as i64;
        pending.usage.completion_tokens += usage.completion_tokens as i64;
        let mut data = json!({"model": label,
            "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens},
            "duration_ms": elapsed.as_millis() as u64});
        purpose.describe(&mut data);
        pending.event(EventType::LlmFinished, Some(task), Some(agent), data);
        Ok(response)
    }

    /// Wait for a slot under every limit, announcing the wait (`run.throttled`) first.
    async fn throttle(
        &self,
        limits: &[Limit],
        task: &str,
        agent: &str,
        pending: &mut Step,
    ) -> Result<(), EngineError> {
        if limits.is_empty() {
            return Ok(());
        }
        let limiter = self.limiter;
        let binding = limits.iter().max_by_key(|l| limiter.earliest(&l.key)).map(Limit::describe);
        let now = limiter.now();
        let start = limiter.reserve(limits, now);
        let wait = start.saturating_duration_since(now);
        if wait.is_zero() {
            return Ok(());
        }
        let data = json!({"wait_ms": wait.as_millis() as u64, "limit": binding});
        pending.event(EventType::RunThrottled, Some(task), Some(agent), data);
        self.commit(pending).await?;
        self.guarded(tokio::time::sleep_until(start)).await.ok_or(EngineError::Cancelled)
    }
}

/// The gates of a call to `model` made for an agent whose own calls pass `limits`: the same run
/// gates (crew or agent `max_rpm`), with `model`'s provider gate in place of the agent's (a
/// planner or judge may use another provider).
pub fn gates_for(limits: &[Limit], model: &ResolvedModel) -> Vec<Limit> {
    let provider = provider_key(&model.provider);
    let mut gates: Vec<Limit> = limits.iter().filter(|l| !is_provider_gate(l)).cloned().collect();
    gates.push(match model.rpm {
        Some(rpm) => Limit::new(provider, rpm),
        None => Limit::holds_only(provider),
    });
    gates
}

fn is_provider_gate(limit: &Limit) -> bool {
    limit.key.starts_with(&provider_key(""))
}

/// Replace the NUL characters of a model's reply, which Postgres cannot store.
fn scrub_reply(response: &mut ChatResponse) {
    if let Some(content) = &mut response.content {
        crate::text::scrub(content);
    }
    for call in &mut response.tool_calls {
        crate::text::scrub(&mut call.id);
        crate::text::scrub(&mut call.name);
        crate::text::scrub(&mut call.arguments);
    }
}

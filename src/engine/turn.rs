//! What one agent needs to perform one task ([`AgentTurn`]: its conversation's key, model, tools,
//! limits, prompts, guardrail and plan options), and what every part of the task's work does with
//! it: announce events, journal messages of the conversation, and make side calls beside it (a
//! plan, a guardrail verdict). The process assembles turns; the plan, the agent loop, the tool
//! round and the guardrail read them.

use super::effects::{gates_for, CallError, ModelCall, Purpose};
use super::journal::{NewMessage, Step};
use super::toolbox::Toolbox;
use super::{Context, EngineError};
use crate::domain::schema::CompiledSchema;
use crate::domain::{ErrorKind, EventData};
use crate::llm::{ChatMessage, ChatRequest, ResolvedModel};
use crate::ratelimit::Limit;

/// Redos a failed guardrail allows by default.
pub const DEFAULT_GUARDRAIL_RETRIES: u32 = 3;

/// A task's guardrail: a sentence its answer must satisfy (judged by [`super::guardrail`]) and
/// how many failed checks it allows.
#[derive(Debug, Clone)]
pub struct Guardrail {
    pub rule: String,
    pub max_retries: u32,
}

/// Default bound of a step's inner loop.
pub const DEFAULT_MAX_STEP_ITERATIONS: u32 = 15;

/// How a task is planned and its steps run (by [`super::plan`]).
#[derive(Clone)]
pub struct PlanOptions {
    /// The planner's model (`planning_llm`, else the agent's).
    pub planner: ResolvedModel,
    pub max_step_iterations: u32,
    pub step_timeout: Option<std::time::Duration>,
}

/// How the agent asks for tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Native,
    React,
}

/// Everything one agent needs for one task.
#[derive(Clone)]
pub struct AgentTurn {
    /// The journal key of the conversation (the task's name, or a delegation's key).
    pub conversation: super::keys::JournalKey,
    pub task: String,
    pub agent: String,
    pub model: ResolvedModel,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub toolbox: Toolbox,
    pub style: Style,
    pub max_iter: u32,
    /// The requests-per-minute gates of this agent's calls.
    pub limits: Vec<Limit>,
    pub output_schema: Option<CompiledSchema>,
    /// A sentence the answer must satisfy, judged by the model, and how many redos it allows.
    pub guardrail: Option<Guardrail>,
    /// Plan the task into steps first (`planning: true`).
    pub plan: Option<PlanOptions>,
    /// Role, goal and backstory.
    pub identity: String,
    /// The task prompt (description, expected output, context).
    pub task_prompt: String,
}

impl AgentTurn {
    /// Announce an event of this task and agent.
    pub(super) fn event(&self, pending: &mut Step, data: EventData) {
        pending.event(Some(&self.task), Some(&self.agent), data);
    }

    /// `message` as a journal entry of this turn's conversation.
    pub(super) fn message(&self, message: ChatMessage) -> NewMessage {
        NewMessage {
            conversation: self.conversation.clone(),
            task: self.task.clone(),
            agent: self.agent.clone(),
            message,
            compacts: false,
        }
    }

    /// A model call beside the agent's conversation (a plan, a guardrail verdict), journaled in a
    /// conversation of its own (`conversation`) and made through the effects layer under the
    /// agent's rate limits; the reply's text.
    pub(super) async fn side_call(
        &self,
        model: &ResolvedModel,
        conversation: &str,
        messages: Vec<ChatMessage>,
        purpose: Purpose,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<String, EngineError> {
        let record =
            |message: ChatMessage| NewMessage { conversation: conversation.into(), ..self.message(message) };
        pending.messages.extend(messages.iter().cloned().map(record));
        let request = ChatRequest { model: model.model.clone(), messages, ..ChatRequest::default() };
        let limits = gates_for(&self.limits, model);
        let call =
            ModelCall { model, request, limits: &limits, purpose, task: &self.task, agent: &self.agent };
        let response = match ctx.call_model(call, pending).await {
            Ok(response) => response,
            Err(CallError::Stop(error)) => return Err(error),
            Err(CallError::Llm(error)) => {
                return Err(EngineError::failed(
                    ErrorKind::LlmError,
                    format!("{} failed: {}", purpose.failing(), error.message),
                ))
            }
        };
        let text = response.content.unwrap_or_default();
        pending.messages.push(record(ChatMessage::assistant(text.clone())));
        Ok(text)
    }
}

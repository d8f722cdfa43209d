//! The agent loop of one task (CrewAI's `CrewAgentExecutor`): call the model, read the reply,
//! run the tools it asks for, feed the observations back, until a final answer. Native function
//! calling or ReAct text, with the run-time fallback from one to the other, parse-error feedback,
//! `max_iter` with a forced final answer, context-window recovery and output-schema retries.
//! Every step is journaled before the next external call, so a crash never repeats a completed
//! LLM or tool call.

use serde_json::Value;

use super::calls::{PlannedCall, Round, ToolRound};
use super::effects::{CallError, ModelCall, Purpose};
use super::guardrail::Judgement;
use super::journal::{NewMessage, Step};
use super::prompts;
use super::react::{self, ReactStep};
use super::repair::parse_lenient;
use super::turn::{AgentTurn, Style};
use super::{Context, EngineError};
use crate::domain::event::{AgentFallback, AgentFinalAnswer, AgentMaxIter, AgentParseError, AgentThought};
use crate::domain::{ErrorKind, EventData, TaskOutput};
use crate::llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmError, LlmErrorKind, ResponseSchema, Role, ToolCallRequest,
};

/// Attempts at a final answer that fits the task's output schema.
const MAX_SCHEMA_RETRIES: u32 = 3;
/// Characters of conversation summarised per summary call.
const SUMMARY_CHUNK_CHARS: usize = 8_000;

/// Run `turn`'s loop to a final answer. Journal writes go into `pending`, which the effects layer
/// commits before every external call; what remains in it on return is the caller's to commit.
pub(super) async fn execute(
    turn: &AgentTurn,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    execute_with_transcript(turn, ctx, pending).await.map(|(output, _)| output)
}

/// [`execute`], returning the answer and the conversation that led to it.
pub(super) async fn execute_with_transcript(
    turn: &AgentTurn,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(TaskOutput, Vec<ChatMessage>), EngineError> {
    let mut agent = AgentLoop::start(turn, ctx, pending);
    if let Some(output) = agent.resume(pending).await? {
        return Ok((output, agent.messages));
    }
    let output = agent.run(pending).await?;
    Ok((output, agent.messages))
}

/// What the loop decided after a reply.
enum Flow {
    Continue,
    Finish(TaskOutput),
}

/// The state of one running agent loop.
struct AgentLoop<'a> {
    turn: &'a AgentTurn,
    ctx: &'a Context<'a>,
    messages: Vec<ChatMessage>,
    iterations: u32,
    style: Style,
    schema_retries: u32,
    guardrail_retries: u32,
    compacted_last: bool,
    /// The output schema as the provider enforces it natively, while it does (`None`: the
    /// prompt alone asks for it).
    native_schema: Option<std::sync::Arc<ResponseSchema>>,
}

fn system_prompt(turn: &AgentTurn, style: Style) -> String {
    match (style, turn.toolbox.is_empty()) {
        (Style::Native, _) => turn.identity.clone(),
        (Style::React, true) => format!("{}{}", turn.identity, prompts::REACT_NO_TOOLS),
        (Style::React, false) => {
            format!("{}{}", turn.identity, prompts::react_tools(&turn.toolbox.definitions()))
        }
    }
}

fn user_prompt(turn: &AgentTurn, style: Style) -> String {
    let schema =
        turn.output_schema.as_ref().map(|s| prompts::schema_instruction(s.schema())).unwrap_or_default();
    let thought = if style == Style::React { "\n\nThought:" } else { "" };
    format!("{}{schema}{thought}", turn.task_prompt)
}

impl<'a> AgentLoop<'a> {
    fn start(turn: &'a AgentTurn, ctx: &'a Context<'a>, pending: &mut Step) -> Self {
        let mut messages = ctx.snapshot.conversation(&turn.conversation);
        let fresh = messages.is_empty();
        let style = if messages.iter().any(is_fallback_notice) { Style::React } else { turn.style };
        if fresh {
            messages = vec![
                ChatMessage::system(system_prompt(turn, style)),
                ChatMessage::user(user_prompt(turn, style)),
            ];
            pending.messages.extend(messages.iter().cloned().map(|m| turn.message(m)));
        }
        let iterations = ctx
            .snapshot
            .messages
            .iter()
            .filter(|m| m.conversation == turn.conversation && m.message.role == Role::Assistant)
            .count() as u32;
        Self {
            turn,
            ctx,
            messages,
            iterations,
            style,
            schema_retries: 0,
            guardrail_retries: 0,
            compacted_last: false,
            native_schema: turn
                .output_schema
                .as_ref()
                .filter(|_| turn.model.structured_outputs)
                .map(|schema| std::sync::Arc::new(ResponseSchema::new(&turn.task, schema.schema().clone()))),
        }
    }

    /// After a crash: finish what the last journaled reply started. `Some` if that ends the task.
    async fn resume(&mut self, pending: &mut Step) -> Result<Option<TaskOutput>, EngineError> {
        let Some(last) = self.messages.last().filter(|m| m.role == Role::Assistant).cloned() else {
            return Ok(None);
        };
        match self.handle_reply(&last, pending, true).await? {
            Flow::Finish(output) => Ok(Some(output)),
            Flow::Continue => Ok(None),
        }
    }

    async fn run(&mut self, pending: &mut Step) -> Result<TaskOutput, EngineError> {
        loop {
            if self.iterations >= self.turn.max_iter {
                return self.forced_final_answer(pending).await;
            }
            let response = match self.call(pending, self.style == Style::Native).await {
                Ok(response) => response,
                Err(CallError::Stop(error)) => return Err(error),
                Err(CallError::Llm(error)) => {
                    self.recover(error, pending).await?;
                    continue;
                }
            };
            self.compacted_last = false;
            let reply = self.record_reply(&response, pending);
            if let Flow::Finish(output) = self.handle_reply(&reply, pending, false).await? {
                return Ok(output);
            }
        }
    }

    /// The agent's next turn: one model call through the effects layer (which throttles,
    /// commits what is pending and announces the call).
    async fn call(&mut self, pending: &mut Step, with_tools: bool) -> Result<ChatResponse, CallError> {
        let turn = self.turn;
        let call = ModelCall {
            model: &turn.model,
            request: self.request(with_tools),
            limits: &turn.limits,
            purpose: Purpose::Turn(self.iterations + 1),
            task: &turn.task,
            agent: &turn.agent,
        };
        self.ctx.call_model(call, pending).await
    }

    fn request(&self, with_tools: bool) -> ChatRequest {
        let react = self.style == Style::React;
        ChatRequest {
            model: self.turn.model.model.clone(),
            messages: self.messages.clone(),
            tools: if with_tools { self.turn.toolbox.definitions() } else { Vec::new() },
            stop: if react { vec!["\nObservation:".to_owned()] } else { Vec::new() },
            temperature: self.turn.temperature,
            max_tokens: self.turn.max_tokens,
            // ReAct's answers are text in its format: a native schema would forbid them.
            response_schema: self.native_schema.clone().filter(|_| !react),
            deltas: None,
        }
    }

    /// Turn a failed call into the next step, or a failure of the task.
    async fn recover(&mut self, error: LlmError, pending: &mut Step) -> Result<(), EngineError> {
        match error.kind {
            LlmErrorKind::SchemaUnsupported
                if self.native_schema.is_some() && self.style == Style::Native =>
            {
                self.native_schema = None;
                let data = AgentFallback {
                    from: "native_schema".into(),
                    to: "prompt".into(),
                    reason: error.message.clone(),
                };
                self.turn.event(pending, EventData::AgentFallback(data));
                Ok(())
            }
            LlmErrorKind::ToolsUnsupported if self.style == Style::Native => {
                self.fall_back_to_react(&error, pending);
                Ok(())
            }
            LlmErrorKind::ContextWindowExceeded if !self.compacted_last => self.compact(pending).await,
            LlmErrorKind::Timeout => {
                Err(EngineError::failed(ErrorKind::Timeout, format!("LLM call timed out: {}", error.message)))
            }
            _ => Err(EngineError::failed(ErrorKind::LlmError, format!("LLM call failed: {}", error.message))),
        }
    }

    fn fall_back_to_react(&mut self, error: &LlmError, pending: &mut Step) {
        self.style = Style::React;
        let notice = ChatMessage::user(prompts::fallback_to_react(&self.turn.toolbox.definitions()));
        self.push(notice, pending);
        let data = AgentFallback { from: "native".into(), to: "react".into(), reason: error.message.clone() };
        self.turn.event(pending, EventData::AgentFallback(data));
    }

    /// Append a message to the conversation and the journal.
    fn push(&mut self, message: ChatMessage, pending: &mut Step) {
        pending.messages.push(self.turn.message(message.clone()));
        self.messages.push(message);
    }

    /// Journal and remember the model's reply.
    fn record_reply(&mut self, response: &ChatResponse, pending: &mut Step) -> ChatMessage {
        self.iterations += 1;
        let tool_calls = match self.style {
            Style::Native => unique_ids(response.tool_calls.clone(), self.iterations),
            Style::React => Vec::new(),
        };
        let reply = ChatMessage {
            role: Role::Assistant,
            content: response.content.clone(),
            tool_calls,
            tool_call_id: None,
            images: Vec::new(),
        };
        self.push(reply.clone(), pending);
        reply
    }

    /// Act on a reply (a fresh one, or on resume the last journaled one).
    async fn handle_reply(
        &mut self,
        reply: &ChatMessage,
        pending: &mut Step,
        resumed: bool,
    ) -> Result<Flow, EngineError> {
        let text = reply.content.clone().unwrap_or_default();
        if !reply.tool_calls.is_empty() {
            if !text.trim().is_empty() && !resumed {
                let thought = AgentThought { text: text.trim().to_owned() };
                self.turn.event(pending, EventData::AgentThought(thought));
            }
            let conversation = &self.turn.conversation;
            let calls = reply
                .tool_calls
                .iter()
                .map(|c| PlannedCall::native(c, conversation, self.iterations))
                .collect();
            return self.tool_round(calls, pending, resumed).await;
        }
        match self.style {
            Style::Native if text.trim().is_empty() => {
                Ok(self.feedback(react::ParseError::Empty.to_string(), pending))
            }
            Style::Native => self.finish(text, pending).await,
            Style::React => self.handle_react(&text, pending, resumed).await,
        }
    }

    async fn handle_react(
        &mut self,
        text: &str,
        pending: &mut Step,
        resumed: bool,
    ) -> Result<Flow, EngineError> {
        match react::parse(text) {
            Ok(ReactStep::Final { output, .. }) => self.finish(output, pending).await,
            Ok(ReactStep::Action { thought, tool, input }) => {
                if !thought.is_empty() && !resumed {
                    self.turn.event(pending, EventData::AgentThought(AgentThought { text: thought }));
                }
                let call = PlannedCall::react(&self.turn.conversation, self.iterations, tool, input);
                self.tool_round(vec![call], pending, resumed).await
            }
            Err(error) => Ok(self.feedback(error.to_string(), pending)),
        }
    }

    /// A reply that could not be used: say why, count the iteration, go on.
    fn feedback(&mut self, error: String, pending: &mut Step) -> Flow {
        self.turn.event(pending, EventData::AgentParseError(AgentParseError { error: error.clone() }));
        let guidance = match self.style {
            Style::React => prompts::parse_error_feedback(&error, &self.turn.toolbox.definitions()),
            Style::Native => error,
        };
        self.push(ChatMessage::user(guidance), pending);
        Flow::Continue
    }

    async fn tool_round(
        &mut self,
        calls: Vec<PlannedCall>,
        pending: &mut Step,
        resumed: bool,
    ) -> Result<Flow, EngineError> {
        let round = ToolRound { turn: self.turn, ctx: self.ctx, style: self.style, resumed };
        let Round { messages, answer } = round.run(calls, pending).await?;
        for message in messages {
            self.push(message, pending);
        }
        match answer {
            Some(answer) => self.finish_raw(answer, pending),
            None => Ok(Flow::Continue),
        }
    }

    /// A final answer: check it against the output schema and the guardrail, then announce it.
    async fn finish(&mut self, output: String, pending: &mut Step) -> Result<Flow, EngineError> {
        let output = match self.check_schema(output, pending)? {
            Ok(output) => output,
            Err(flow) => return Ok(flow),
        };
        if let Some(guardrail) = &self.turn.guardrail {
            let (turn, ctx, iteration) = (self.turn, self.ctx, self.iterations);
            let failures = &mut self.guardrail_retries;
            if let Judgement::Redo(feedback) =
                guardrail.check(turn, iteration, &output, failures, ctx, pending).await?
            {
                self.push(ChatMessage::user(feedback), pending);
                return Ok(Flow::Continue);
            }
        }
        self.turn
            .event(pending, EventData::AgentFinalAnswer(AgentFinalAnswer { output: output.raw.clone() }));
        Ok(Flow::Finish(output))
    }

    /// The answer as the task's output, or the feedback that asks for a valid one.
    fn check_schema(
        &mut self,
        output: String,
        pending: &mut Step,
    ) -> Result<Result<TaskOutput, Flow>, EngineError> {
        let Some(schema) = &self.turn.output_schema else {
            return Ok(Ok(TaskOutput::new(output, None)));
        };
        let parsed = parse_lenient(&output);
        let errors = match &parsed {
            Some(value) => schema.validate(value),
            None => vec!["the answer is not JSON".to_owned()],
        };
        if errors.is_empty() {
            let json = parsed.unwrap_or(Value::Null);
            return Ok(Ok(TaskOutput::new(json.to_string(), Some(json))));
        }
        self.schema_retries += 1;
        if self.schema_retries > MAX_SCHEMA_RETRIES {
            let message = format!("the final answer does not match the output schema: {}", errors.join("; "));
            return Err(EngineError::failed(ErrorKind::LlmError, message));
        }
        Ok(Err(self.feedback(prompts::schema_feedback(&errors), pending)))
    }

    fn finish_raw(&mut self, output: String, pending: &mut Step) -> Result<Flow, EngineError> {
        self.turn.event(pending, EventData::AgentFinalAnswer(AgentFinalAnswer { output: output.clone() }));
        Ok(Flow::Finish(TaskOutput::new(output, None)))
    }

    /// `max_iter` reached: one more call, without tools, for the final answer.
    async fn forced_final_answer(&mut self, pending: &mut Step) -> Result<TaskOutput, EngineError> {
        self.turn.event(pending, EventData::AgentMaxIter(AgentMaxIter { max_iter: self.turn.max_iter }));
        self.push(ChatMessage::user(prompts::FORCE_FINAL_ANSWER), pending);
        let response = match self.call(pending, false).await {
            Ok(response) => response,
            Err(CallError::Stop(error)) => return Err(error),
            Err(CallError::Llm(error)) => {
                let message = format!("the forced final answer after max_iter failed: {}", error.message);
                return Err(EngineError::failed(ErrorKind::LlmError, message));
            }
        };
        let mut reply = self.record_reply(&response, pending);
        reply.tool_calls.clear();
        let text = reply.content.unwrap_or_default();
        let output = match react::parse(&text) {
            Ok(ReactStep::Final { output, .. }) => output,
            _ => text.trim().to_owned(),
        };
        if output.is_empty() {
            return Err(EngineError::failed(ErrorKind::MaxIter, "the forced final answer was empty"));
        }
        let output = match self.turn.output_schema.is_some() {
            true => parse_lenient(&output).map_or(output, |v| v.to_string()),
            false => output,
        };
        match self.finish_raw(output, pending)? {
            Flow::Finish(output) => Ok(output),
            Flow::Continue => Err(EngineError::failed(ErrorKind::MaxIter, "no final answer after max_iter")),
        }
    }

    /// The context window overflowed: replace the conversation by a summary and go on.
    async fn compact(&mut self, pending: &mut Step) -> Result<(), EngineError> {
        let system = self.messages.first().filter(|m| m.role == Role::System).cloned();
        let body: Vec<String> = self
            .messages
            .iter()
            .skip(usize::from(system.is_some()))
            .map(|m| format!("{}: {}", m.role.as_str(), m.content.clone().unwrap_or_default()))
            .collect();
        let mut summaries = Vec::new();
        for chunk in chunks(&body, SUMMARY_CHUNK_CHARS) {
            summaries.push(self.summarize(&chunk, pending).await?);
        }
        let summary = ChatMessage::user(prompts::summary(&summaries.join("\n\n")));
        pending.messages.push(NewMessage { compacts: true, ..self.turn.message(summary.clone()) });
        self.messages = system.into_iter().chain([summary]).collect();
        self.compacted_last = true;
        Ok(())
    }

    async fn summarize(&mut self, text: &str, pending: &mut Step) -> Result<String, EngineError> {
        let turn = self.turn;
        let request = ChatRequest {
            model: turn.model.model.clone(),
            messages: vec![
                ChatMessage::system(prompts::SUMMARIZER_SYSTEM),
                ChatMessage::user(prompts::summarize(text)),
            ],
            ..ChatRequest::default()
        };
        let call = ModelCall {
            model: &turn.model,
            request,
            limits: &turn.limits,
            purpose: Purpose::Summarizer,
            task: &turn.task,
            agent: &turn.agent,
        };
        match self.ctx.call_model(call, pending).await {
            Ok(response) => Ok(response.content.unwrap_or_default()),
            Err(CallError::Stop(error)) => Err(error),
            Err(CallError::Llm(error)) => Err(EngineError::failed(
                ErrorKind::LlmError,
                format!("{} failed: {}", Purpose::Summarizer.failing(), error.message),
            )),
        }
    }
}

fn is_fallback_notice(message: &ChatMessage) -> bool {
    message.role == Role::User
        && message.content.as_deref().is_some_and(|c| c.starts_with(prompts::FALLBACK_NOTICE))
}

/// Give calls with an empty or repeated provider id an id of their own (the journal keys calls
/// by id; some providers send `""` or reuse `call_0`).
fn unique_ids(mut calls: Vec<ToolCallRequest>, iteration: u32) -> Vec<ToolCallRequest> {
    let mut seen = std::collections::HashSet::new();
    for (index, call) in calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() || !seen.insert(call.id.clone()) {
            call.id = format!("call_{iteration}_{index}");
            seen.insert(call.id.clone());
        }
    }
    calls
}

/// Group lines into chunks of at most about `limit` characters.
fn chunks(lines: &[String], limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        match out.last_mut() {
            Some(chunk) if chunk.len() + line.len() < limit => {
                chunk.push('\n');
                chunk.push_str(line);
            }
            _ => out.push(line.chars().take(limit * 2).collect()),
        }
    }
    out
}

//! AG-UI: `POST /v1/ag-ui/crews/{name}` takes a `RunAgentInput` and answers with the run's AG-UI
//! event stream. The crew runs with its replies streamed; its events become the protocol's:
//! `RUN_STARTED`; a step per task; text messages from the streamed replies (or, when none was
//! streamed, the task's output); tool calls with their results; a `STATE_SNAPSHOT` of the task
//! outputs after each task; then `RUN_FINISHED` (with the final output), `RUN_ERROR`, or
//! `RUN_FINISHED` with an `interrupt` outcome when a tool call awaits approval or an answer awaits
//! review. The client resumes an interrupt with a new run of the same thread whose `resume`
//! answers it; the agentd run goes on where it stopped.
//!
//! The AG-UI `threadId` is an agentd thread (created on first use), so each run sees the thread's
//! earlier runs; the `runId` makes the request idempotent: the same input again (after a broken
//! connection, say, to another replica) follows the same run from its start.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::feed;
use crate::domain::crew::Protocol;
use crate::domain::journal::Approval;
use crate::domain::validate::parse_json;
use crate::domain::{Caller, EventType, FieldError, RunId, Scope};
use crate::http::auth::{audit, Authed};
use crate::http::error::{ApiError, ApiResult, Problem};
use crate::http::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::service::{request_key, Envelope, ProtocolKickoff, ServiceError, Step};

/// The input of an AG-UI run (`RunAgentInput`). Fields the server does not use are accepted.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: an agentd thread (its id, or any text naming one of the tenant's
    /// AG-UI threads, created on first use).
    #[schema(min_length = 1, max_length = 200)]
    pub thread_id: String,
    /// The client's id of this run (echoed in the events; a repeated input follows the same run).
    #[schema(min_length = 1, max_length = 200)]
    pub run_id: String,
    /// The conversation's messages: the last user message is the input `message` when the crew
    /// uses one (the thread keeps the history).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// Inputs of the crew (an object), when `forwardedProps.inputs` does not give them.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub state: Option<Value>,
    /// `{"inputs": {...}}`: the crew's inputs.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub forwarded_props: Option<Value>,
    /// Answers to the interrupts the thread's last run ended with.
    #[serde(default)]
    pub resume: Option<Vec<ResumeEntry>>,
    #[serde(default)]
    pub parent_run_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub context: Option<Vec<Value>>,
    #[serde(default)]
    pub protocol_version: Option<String>,
}

/// The answer to an interrupt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    pub status: ResumeStatus,
    /// A tool call: `{"approved": bool, "reason"?, "arguments"?}`; an answer under review:
    /// `{"approved": bool, "feedback"?}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResumeStatus {
    Resolved,
    Cancelled,
}

/// One AG-UI event of the stream (`data:` of each message).
#[derive(ToSchema)]
#[schema(as = AgUiEvent)]
#[allow(dead_code)]
pub struct AgUiEvent {
    /// `RUN_STARTED`, `STEP_STARTED`, `TEXT_MESSAGE_START`, `TOOL_CALL_START`, `STATE_SNAPSHOT`,
    /// `RUN_FINISHED`, `RUN_ERROR`, …
    #[schema(rename = "type")]
    kind: String,
}

/// Run a published crew as an AG-UI agent.
///
/// The answer is `text/event-stream`: one AG-UI event per message. Refusals before the stream
/// opens are problems (404 unknown or unpublished crew, 409 a thread busy with another run,
/// 422 bad input or a resume naming no open interrupt). A stream whose key is revoked, expires or
/// loses its tenant ends with `RUN_ERROR` whose `code` says which (`key_revoked`, `key_expired`,
/// `tenant_deleted`); the run goes on.
#[utoipa::path(
    post, path = "/ag-ui/crews/{name}", tag = "protocols",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    request_body = RunAgentInput,
    responses(
        (status = 200, description = "The run's AG-UI events", content_type = "text/event-stream", body = AgUiEvent),
        (status = 404, description = "No crew of that name is published through AG-UI", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The thread is busy with another run (or awaits an answer to an interrupt)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid input", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "A quota of the tenant refuses it (`max_queued`, a daily cap); `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn run_agent(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: axum::http::HeaderMap,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let input: RunAgentInput = parse_json(body).map_err(ServiceError::Invalid)?;
    check_ids(&input)?;
    let crew = state.services.published_crew(&caller, &name, Protocol::AgUi).await?;
    let thread = state.services.protocol_thread(&caller, Protocol::AgUi, &input.thread_id).await?;
    let ids = RunIds { thread: input.thread_id.clone(), run: input.run_id.clone() };
    let resuming = input.resume.as_ref().is_some_and(|entries| !entries.is_empty());
    state.metrics.observe_protocol("ag_ui", if resuming { "resume" } else { "run" });
    if let Some(entries) = input.resume.as_ref().filter(|entries| !entries.is_empty()) {
        if !caller.may(Scope::Approve) {
            return Err(ApiError::Forbidden(
                "this key lacks the 'approve' scope resuming an interrupt needs".into(),
            ));
        }
        let (run, after, task) = answer_interrupts(&state, &caller, thread.0, entries).await?;
        return Ok(stream(state, caller, ids, run, after, task));
    }
    let inputs = inputs_of(&input, &crew.spec)?;
    let key = request_key("ag-ui", &format!("{}\n{}", input.thread_id, input.run_id));
    let metadata = Map::from_iter([
        ("ag_ui_thread_id".to_owned(), json!(input.thread_id)),
        ("ag_ui_run_id".to_owned(), json!(input.run_id)),
    ]);
    let kickoff = ProtocolKickoff {
        crew: &name,
        inputs,
        thread: Some(thread),
        metadata,
        idempotency_key: Some(&key),
        stream: true,
        enqueue: false,
        trace: crate::http::extract::kickoff_trace(&headers),
    };
    let run = state.services.protocol_kickoff(&caller, kickoff).await?;
    Ok(stream(state, caller, ids, run.id, 0, None))
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ServiceError::Invalid(vec![FieldError::new(field, message)]).into()
}

fn check_ids(input: &RunAgentInput) -> ApiResult<()> {
    for (field, value) in [("threadId", &input.thread_id), ("runId", &input.run_id)] {
        if value.trim().is_empty() || value.chars().count() > 200 {
            return Err(invalid(field, "must be 1 to 200 characters"));
        }
    }
    Ok(())
}

/// The crew's inputs: `forwardedProps.inputs`, else `state` (objects), and the last user
/// message as `message` when the crew uses it and no input gives it.
fn inputs_of(input: &RunAgentInput, crew: &crate::domain::CrewSpec) -> ApiResult<Map<String, Value>> {
    let given = input.forwarded_props.as_ref().and_then(|props| props.get("inputs")).or(input.state.as_ref());
    let mut inputs = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(inputs)) => inputs.clone(),
        Some(_) => return Err(invalid("forwardedProps.inputs", "must be an object of the crew's inputs")),
    };
    let wants_message = crate::domain::interpolate::required_inputs(crew).contains("message")
        || crew
            .inputs_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .is_some_and(|p| p.get("message").is_some());
    if wants_message && !inputs.contains_key("message") {
        if let Some(text) = last_user_message(&input.messages) {
            inputs.insert("message".into(), json!(text));
        }
    }
    Ok(inputs)
}

/// The text of the last user message (its text parts joined).
fn last_user_message(messages: &[Value]) -> Option<String> {
    let message = messages.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    match message.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// An interrupt's id: the run, the event it stopped at, and what waits (a tool call, or the
/// answer under review).
fn interrupt_id(run: RunId, seq: i64, waiting: Option<&str>) -> String {
    format!(
        "{}.{seq}.{}",
        run.0.simple(),
        waiting.map_or_else(|| "review".to_owned(), |call| format!("call:{call}"))
    )
}

fn parse_interrupt(id: &str) -> Option<(RunId, i64, Option<String>)> {
    let mut parts = id.splitn(3, '.');
    let run = RunId(parts.next()?.parse().ok()?);
    let seq = parts.next()?.parse().ok().filter(|seq: &i64| *seq >= 0)?;
    match parts.next()? {
        "review" => Some((run, seq, None)),
        other => Some((run, seq, Some(other.strip_prefix("call:")?.to_owned()))),
    }
}

/// Apply the answers of `resume` to the thread's interrupted run: what to follow, from where, and
/// the task whose step reopens.
async fn answer_interrupts(
    state: &AppState,
    caller: &Caller,
    thread: uuid::Uuid,
    entries: &[ResumeEntry],
) -> ApiResult<(RunId, i64, Option<String>)> {
    let mut resumed = None;
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("resume[{i}].interruptId");
        let Some((run, seq, waiting)) = parse_interrupt(&entry.interrupt_id) else {
            return Err(invalid(&field, "names no interrupt of this server"));
        };
        let found = state
            .services
            .run(caller, run)
            .await
            .map_err(|_| invalid(&field, "names no interrupt of this thread"))?;
        if found.thread_id != Some(thread) {
            return Err(invalid(&field, "names no interrupt of this thread"));
        }
        let payload = entry.payload.clone().unwrap_or(Value::Null);
        let approved = entry.status == ResumeStatus::Resolved
            && payload.get("approved").and_then(Value::as_bool) != Some(false);
        let audit = audit(caller, "run.approval", "/v1/ag-ui");
        match &waiting {
            Some(call) => {
                let mut decision = json!({"approve": approved});
                if approved {
                    if let Some(arguments) = payload.get("arguments").filter(|a| a.is_object()) {
                        decision["arguments"] = arguments.clone();
                    }
                } else if let Some(reason) = payload.get("reason").and_then(Value::as_str) {
                    decision["reason"] = json!(reason);
                }
                state.services.decide_tool_call(caller, run, call, decision, &audit).await?;
            }
            None => {
                let feedback = payload.get("feedback").and_then(Value::as_str);
                let feedback = match (approved, feedback) {
                    (false, None) => Some("rejected through AG-UI"),
                    (_, feedback) => feedback,
                };
                state.services.resume(caller, run, approved, feedback, &audit).await?;
            }
        }
        let task = state.services.tool_calls(caller, run).await.ok().and_then(|calls| {
            let call = waiting.as_deref()?;
            calls.into_iter().find(|c| c.id == call).and_then(|c| c.task)
        });
        resumed = Some((run, seq, task));
    }
    resumed.ok_or_else(|| invalid("resume", "answers no interrupt"))
}

/// The client's ids of the AG-UI run.
#[derive(Clone)]
struct RunIds {
    thread: String,
    run: String,
}

fn stream(
    state: AppState,
    caller: Caller,
    ids: RunIds,
    run: RunId,
    after: i64,
    task: Option<String>,
) -> Response {
    let (sender, receiver) = feed::channel();
    let mapper = Mapper {
        ids,
        run,
        caller,
        sender,
        step: None,
        text: None,
        texts_in_step: false,
        outputs: Map::new(),
        results: std::collections::HashSet::new(),
    };
    tokio::spawn(mapper.run(state, after, task));
    feed::response(receiver)
}

/// Turns a run's events into AG-UI events, keeping what is open (a step, a text message).
struct Mapper {
    ids: RunIds,
    run: RunId,
    /// Whom the stream is for (its key ending ends it).
    caller: Caller,
    sender: mpsc::Sender<feed::Event>,
    step: Option<String>,
    /// The open text message: its key (task, iteration, attempt) and id.
    text: Option<(String, String)>,
    /// Whether a text message was sent in the open step.
    texts_in_step: bool,
    outputs: Map<String, Value>,
    /// The tool calls whose TOOL_CALL_RESULT was sent.
    results: std::collections::HashSet<String>,
}

/// Whether the stream goes on.
enum Flow {
    Continue,
    Done,
}

impl Mapper {
    async fn run(mut self, state: AppState, after: i64, task: Option<String>) {
        let started = json!({"type": "RUN_STARTED", "threadId": self.ids.thread, "runId": self.ids.run});
        if let Flow::Done = self.send(started).await {
            return;
        }
        if let Some(task) = task {
            if let Flow::Done = self.open_step(&task).await {
                return;
            }
        }
        let mut follow = state.follower.follow(&self.caller, self.run, after);
        loop {
            let flow = match follow.next().await {
                Step::Event(envelope) => self.event(&state, &envelope).await,
                Step::Delta(json) => self.delta(&json).await,
                Step::End => {
                    // Shutting down: the client may send the same input again, to another replica.
                    let error = json!({"type": "RUN_ERROR", "message": "the server is shutting down: send the same input again to follow the run", "code": "unavailable"});
                    self.send(error).await;
                    Flow::Done
                }
                Step::KeyEnded(why) => {
                    // The run goes on; this client may follow it no longer (`code` says why).
                    let error = json!({"type": "RUN_ERROR", "message": why.detail(), "code": why.as_str()});
                    self.send(error).await;
                    Flow::Done
                }
            };
            if let Flow::Done = flow {
                return;
            }
        }
    }

    async fn send(&self, event: Value) -> Flow {
        match self.sender.send(feed::Event::data(event.to_string())).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Done,
        }
    }

    async fn sends(&self, events: Vec<Value>) -> Flow {
        for event in events {
            if let Flow::Done = self.send(event).await {
                return Flow::Done;
            }
        }
        Flow::Continue
    }

    async fn open_step(&mut self, task: &str) -> Flow {
        if self.step.as_deref() == Some(task) {
            return Flow::Continue;
        }
        let mut events = self.close_step();
        events.push(json!({"type": "STEP_STARTED", "stepName": task}));
        self.step = Some(task.to_owned());
        self.texts_in_step = false;
        self.sends(events).await
    }

    fn close_text(&mut self) -> Vec<Value> {
        match self.text.take() {
            Some((_, id)) => vec![json!({"type": "TEXT_MESSAGE_END", "messageId": id})],
            None => Vec::new(),
        }
    }

    fn close_step(&mut self) -> Vec<Value> {
        let mut events = self.close_text();
        if let Some(step) = self.step.take() {
            events.push(json!({"type": "STEP_FINISHED", "stepName": step}));
        }
        events
    }

    fn snapshot(&self, status: &str) -> Value {
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"run_id": self.run.to_string(), "status": status, "outputs": self.outputs}})
    }

    /// A streamed reply's text: one text message per model call.
    async fn delta(&mut self, json: &str) -> Flow {
        let Ok(delta) = serde_json::from_str::<Value>(json) else { return Flow::Continue };
        let text = delta.pointer("/data/text").and_then(Value::as_str).unwrap_or_default();
        if text.is_empty() {
            return Flow::Continue;
        }
        let task = delta.get("task").and_then(Value::as_str).unwrap_or("run").to_owned();
        let key = format!(
            "{task}.{}.{}",
            delta.pointer("/data/iteration").unwrap_or(&Value::Null),
            delta.pointer("/data/attempt").unwrap_or(&Value::Null)
        );
        if let Flow::Done = self.open_step(&task).await {
            return Flow::Done;
        }
        let mut events = Vec::new();
        if self.text.as_ref().map(|(open, _)| open) != Some(&key) {
            events.extend(self.close_text());
            let id = format!("{}.{key}", self.run.0.simple());
            events.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
            self.text = Some((key, id));
            self.texts_in_step = true;
        }
        if let Some((_, id)) = &self.text {
            events.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": text}));
        }
        self.sends(events).await
    }

    async fn event(&mut self, state: &AppState, envelope: &Envelope) -> Flow {
        let event = &envelope.event;
        let data = &event.data;
        let text = |field: &str| data.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
        match event.event_type {
            EventType::TaskStarted => self.open_step(event.task.as_deref().unwrap_or("task")).await,
            EventType::LlmFinished => {
                let events = self.close_text();
                self.sends(events).await
            }
            EventType::ToolStarted => {
                let mut events = self.close_text();
                events.extend(tool_call(data));
                self.sends(events).await
            }
            EventType::ToolFinished | EventType::ToolFailed | EventType::ToolRejected => {
                let content = match event.event_type {
                    EventType::ToolFinished => text("observation"),
                    EventType::ToolFailed => format!("the tool failed: {}", text("error")),
                    _ => format!(
                        "the call was rejected{}",
                        data.get("reason")
                            .and_then(Value::as_str)
                            .map(|r| format!(": {r}"))
                            .unwrap_or_default()
                    ),
                };
                let call = text("tool_call_id");
                // A rejected call is told once: the rejection (its decision), not the engine's
                // observation of it when the run resumes.
                if !self.results.insert(call.clone()) {
                    return Flow::Continue;
                }
                let result = json!({"type": "TOOL_CALL_RESULT", "messageId": format!("{}.{call}.result", self.run.0.simple()), "toolCallId": call, "content": content, "role": "tool"});
                self.sends(vec![result]).await
            }
            EventType::ToolApprovalRequested => self.tool_interrupt(state, event.seq).await,
            EventType::RunAwaitingInput => {
                let interrupt = json!({
                    "id": interrupt_id(self.run, event.seq, None),
                    "reason": "human_input",
                    "message": format!("Review the answer of task '{}': {}", text("task"), text("output")),
                    "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}, "feedback": {"type": "string"}}, "required": ["approved"]},
                });
                self.interrupt(vec![interrupt]).await
            }
            EventType::TaskCompleted => {
                let task = text("task");
                let output = data.get("output").and_then(Value::as_str).map(str::to_owned);
                let mut events = self.close_text();
                if let (false, Some(output)) = (self.texts_in_step, &output) {
                    // Nothing of it was streamed here (a resumed stream, say): the output as a message.
                    let id = format!("{}.{task}.output", self.run.0.simple());
                    events.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                    if !output.is_empty() {
                        events
                            .push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": output}));
                    }
                    events.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
                }
                self.outputs.insert(task, output.map_or(Value::Null, Value::String));
                events.push(self.snapshot("running"));
                events.extend(self.close_step());
                self.sends(events).await
            }
            EventType::TaskFailed => {
                let events = self.close_step();
                self.sends(events).await
            }
            EventType::RunCompleted => {
                let mut events = self.close_step();
                events.push(self.snapshot("completed"));
                events
                    .push(json!({"type": "RUN_FINISHED", "threadId": self.ids.thread, "runId": self.ids.run,
                                   "result": {"run_id": self.run.to_string(), "output": text("output")}}));
                self.sends(events).await;
                Flow::Done
            }
            EventType::RunFailed => {
                let error = data.get("error").cloned().unwrap_or(Value::Null);
                let message = error.get("message").and_then(Value::as_str).unwrap_or("the run failed");
                let code = error.get("kind").and_then(Value::as_str).unwrap_or("failed");
                self.sends(vec![json!({"type": "RUN_ERROR", "message": message, "code": code})]).await;
                Flow::Done
            }
            EventType::RunCancelled => {
                let mut events = self.close_step();
                events.push(json!({"type": "RUN_FINISHED", "threadId": self.ids.thread, "runId": self.ids.run, "outcome": {"type": "cancelled"}}));
                self.sends(events).await;
                Flow::Done
            }
            _ => Flow::Continue,
        }
    }

    /// The calls awaiting approval (every one of the round: they were journaled together), as
    /// tool calls and the interrupts that end this AG-UI run.
    async fn tool_interrupt(&mut self, state: &AppState, seq: i64) -> Flow {
        let calls = match state.services.tool_calls(&self.caller, self.run).await {
            Ok(calls) => calls,
            Err(error) => {
                tracing::warn!(%error, run = %self.run, "could not read the calls awaiting approval");
                self.sends(vec![json!({"type": "RUN_ERROR", "message": "the calls awaiting approval could not be read", "code": "unavailable"})]).await;
                return Flow::Done;
            }
        };
        let mut events = self.close_text();
        let mut interrupts = Vec::new();
        for call in calls.iter().filter(|call| call.approval == Some(Approval::Pending)) {
            events.extend(tool_call(
                &json!({"tool_call_id": call.id, "tool": call.tool, "arguments": call.arguments}),
            ));
            interrupts.push(json!({
                "id": interrupt_id(self.run, seq, Some(&call.id)),
                "reason": "tool_approval",
                "message": format!("Approve the call of {} with {}?", call.tool, call.arguments),
                "toolCallId": call.id,
                "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["approved"]},
            }));
        }
        if let Flow::Done = self.sends(events).await {
            return Flow::Done;
        }
        if interrupts.is_empty() {
            // Decided already (by another client): the run goes on.
            return Flow::Continue;
        }
        self.interrupt(interrupts).await
    }

    async fn interrupt(&mut self, interrupts: Vec<Value>) -> Flow {
        let mut events = self.close_step();
        events.push(json!({"type": "RUN_FINISHED", "threadId": self.ids.thread, "runId": self.ids.run,
                           "outcome": {"type": "interrupt", "interrupts": interrupts}}));
        self.sends(events).await;
        Flow::Done
    }
}

/// A tool call as AG-UI announces it: start, its arguments, end.
fn tool_call(data: &Value) -> Vec<Value> {
    let id = data.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
    let name = data.get("tool").and_then(Value::as_str).unwrap_or_default();
    let arguments = data.get("arguments").map(Value::to_string).unwrap_or_else(|| "{}".to_owned());
    vec![
        json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": arguments}),
        json!({"type": "TOOL_CALL_END", "toolCallId": id}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_ids_round_trip() {
        let run = RunId::new();
        assert_eq!(parse_interrupt(&interrupt_id(run, 7, Some("c.1"))), Some((run, 7, Some("c.1".into()))));
        assert_eq!(parse_interrupt(&interrupt_id(run, 3, None)), Some((run, 3, None)));
        assert_eq!(parse_interrupt("nope"), None);
        assert_eq!(parse_interrupt(&format!("{}.x.review", run.0.simple())), None);
    }

    #[test]
    fn the_last_user_message_is_the_message() {
        let messages = vec![
            json!({"id": "1", "role": "user", "content": "first"}),
            json!({"id": "2", "role": "assistant", "content": "reply"}),
            json!({"id": "3", "role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image", "source": {}}]}),
        ];
        assert_eq!(last_user_message(&messages).as_deref(), Some("second"));
        assert_eq!(last_user_message(&[]), None);
    }
}

//! A fake OpenAI-compatible chat-completions server, for tests, demos and curl-driven
//! integration runs without a real model. Answers come from, in this order: replies queued by a
//! Rust test (`push`), a [`Script`] of rules (`agentd fake-llm --script FILE`, or a provider of
//! `kind = "fake"`), a stateless tool round, or a default reply. Requests a script has no rule
//! for get a 400 naming the request. Every request is recorded unless recording is off
//! (`GET /calls` lists them, `POST /reset` clears them), and `"stream": true` gets the same answer
//! as server-sent chunks.

pub mod demo;
pub mod embed;
mod script;
mod stream;

pub use script::{Script, ScriptError};

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// One answer.
#[derive(Debug, Clone)]
pub struct FakeReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// Wait before answering.
    pub delay: Duration,
    /// Wait between the chunks of a streamed answer.
    pub chunk_delay: Duration,
    /// End a streamed answer after this many chunks, before its finish (a cut stream).
    pub cut_after: Option<usize>,
    /// Answer only once this is notified (a test lining an answer up with an event of its own;
    /// a notification before the request arrives is kept).
    pub gate: Option<Arc<tokio::sync::Notify>>,
}

impl FakeReply {
    /// A plain assistant message.
    pub fn text(content: &str) -> Self {
        Self::ok(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
    }

    /// Native tool calls: `(id, tool name, arguments)`.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        Self::ok(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls},
                         "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
    }

    /// A 200 with this body.
    pub fn ok(body: Value) -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            body,
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            cut_after: None,
            gate: None,
        }
    }

    /// An error status with an OpenAI-style error body.
    pub fn error(status: u16, message: &str) -> Self {
        Self { status, ..Self::ok(json!({"error": {"message": message, "type": "error"}})) }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Stream with `delay` between chunks (when the request streams).
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Answer only once `gate` is notified (then after the delay).
    pub fn after(mut self, gate: Arc<tokio::sync::Notify>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Send no usage, streamed or not (as llama.cpp's server streams, and some servers answer).
    pub fn without_usage(mut self) -> Self {
        if let Some(body) = self.body.as_object_mut() {
            body.remove("usage");
        }
        self
    }

    /// Cut a streamed answer after `chunks` chunks.
    pub fn cut_after(mut self, chunks: usize) -> Self {
        self.cut_after = Some(chunks);
        self
    }
}

/// One request as recorded.
struct Recorded {
    index: u64,
    at: DateTime<Utc>,
    headers: HeaderMap,
    body: Value,
    /// What answered: a rule's label, `queue`, `tool_round`, `default`; `None`: nothing did.
    rule: Option<String>,
    status: u16,
}

struct Shared {
    replies: Mutex<VecDeque<FakeReply>>,
    script: Mutex<Option<Arc<Script>>>,
    /// The reply once `replies` is empty and there is no script; none: a 500.
    default: Mutex<Option<FakeReply>>,
    /// Once `replies` is empty: a tool call, or the answer when the conversation ends with a tool
    /// result (a stateless native tool round, for load tests).
    tool_round: Mutex<Option<(FakeReply, FakeReply)>>,
    requests: Mutex<VecDeque<Recorded>>,
    /// Whether requests are kept (a load test turns this off).
    record: AtomicBool,
    /// The most requests kept (0: all); older ones are dropped first.
    max_recorded: AtomicU64,
    /// Requests dropped from the record to stay within `max_recorded`.
    dropped: AtomicU64,
    /// Requests seen (the next one's index).
    seen: AtomicU64,
    /// Tool calls made up by the script (their ids).
    call_ids: AtomicU64,
    /// Embedding requests answered.
    embeddings: AtomicU64,
    /// Logged with every scripted answer (a provider's name inside `agentd serve`).
    label: Mutex<String>,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            replies: Mutex::default(),
            script: Mutex::default(),
            default: Mutex::default(),
            tool_round: Mutex::default(),
            requests: Mutex::default(),
            record: AtomicBool::new(true),
            max_recorded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            call_ids: AtomicU64::new(0),
            embeddings: AtomicU64::new(0),
            label: Mutex::new("fake-llm".into()),
        }
    }
}

/// A running fake server. It stops when the runtime that started it stops.
#[derive(Clone)]
pub struct FakeLlm {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl FakeLlm {
    /// Listen on a free loopback port with an empty script.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Listen on `addr` (port 0: a free one) with an empty script.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        Self::serve(tokio::net::TcpListener::bind(addr).await?)
    }

    /// Answer on `listener` (a server's own, with the accept queue it wants) with an empty script.
    pub fn serve(listener: tokio::net::TcpListener) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/v1/embeddings", post(embeddings))
            .route("/embeddings", post(embeddings))
            .route("/calls", get(calls))
            .route("/reset", post(reset))
            .with_state(shared.clone());
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "fake LLM server stopped");
            }
        });
        Ok(Self { shared, addr })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to configure as a provider's (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queue replies (they come before the script).
    pub fn push(&self, replies: impl IntoIterator<Item = FakeReply>) {
        lock(&self.shared.replies).extend(replies);
    }

    /// Answer from `script` (`None`: no script).
    pub fn set_script(&self, script: Option<Arc<Script>>) {
        *lock(&self.shared.script) = script;
    }

    /// Name the server in its logs (e.g. the provider it serves).
    pub fn set_label(&self, label: &str) {
        *lock(&self.shared.label) = label.to_owned();
    }

    /// Answer `reply` to every request nothing else answers (`None`: a 500 again).
    pub fn set_default(&self, reply: Option<FakeReply>) {
        *lock(&self.shared.default) = reply;
    }

    /// Answer every request the script has no reply for with `call` (a native tool call), or with
    /// `answer` once the conversation holds a tool result (`None`: off).
    pub fn set_tool_round(&self, round: Option<(FakeReply, FakeReply)>) {
        *lock(&self.shared.tool_round) = round;
    }

    /// Keep requests for `requests()` and `GET /calls` (the default) or not.
    pub fn set_recording(&self, record: bool) {
        self.shared.record.store(record, Ordering::Relaxed);
    }

    /// Keep at most `max` requests, dropping the oldest (0: keep all, the default).
    pub fn set_max_recorded(&self, max: u64) {
        self.shared.max_recorded.store(max, Ordering::Relaxed);
    }

    /// Embedding requests answered so far.
    pub fn embedding_requests(&self) -> u64 {
        self.shared.embeddings.load(Ordering::Relaxed)
    }

    /// The bodies of every request kept.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).iter().map(|r| r.body.clone()).collect()
    }

    /// The headers of every request kept.
    pub fn request_headers(&self) -> Vec<HeaderMap> {
        lock(&self.shared.requests).iter().map(|r| r.headers.clone()).collect()
    }

    /// Queued replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.replies).len()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the fake reads of a request it neither records nor scripts: the messages' roles and the
/// stream flag (so a benchmark's fake spends little on each request).
#[derive(serde::Deserialize)]
struct Roles {
    #[serde(default)]
    messages: Vec<Role>,
    #[serde(default)]
    stream: bool,
}

#[derive(serde::Deserialize)]
struct Role {
    role: Option<String>,
}

fn fake_error(status: StatusCode, kind: &str, message: String, extra: Option<Value>) -> FakeReply {
    let mut error = json!({"message": message, "type": kind, "code": kind});
    if let Some(extra) = extra {
        error["request"] = extra;
    }
    FakeReply { status: status.as_u16(), ..FakeReply::ok(json!({ "error": error })) }
}

/// The 400 for a request no rule matches: what the rules look at, so a broken script is obvious.
/// The `message` names no tool and quotes no text, so a client cannot take it for "tools are not
/// supported"; the last message's start is in `error.request` (the whole request in `GET /calls`).
fn no_match(request: &script::Request<'_>) -> FakeReply {
    let last = request.last_message();
    let shown: String = last.chars().take(300).collect();
    let message = format!(
        "no rule of the fake LLM's script matches this request: model '{}', call {} of its conversation, \
         last message from '{}'",
        request.model,
        request.position(),
        request.last_role()
    );
    let extra = json!({
        "model": request.model,
        "call": request.position(),
        "last_role": request.last_role(),
        "last_message": shown,
        "tools": request.tools,
        "stream": request.stream,
    });
    fake_error(StatusCode::BAD_REQUEST, "fake_no_matching_rule", message, Some(extra))
}

/// What answers an unscripted request.
fn unscripted(shared: &Shared, after_tool: bool) -> (Option<String>, FakeReply) {
    if let Some((call, answer)) = lock(&shared.tool_round).as_ref() {
        let reply = if after_tool { answer.clone() } else { call.clone() };
        return (Some("tool_round".into()), reply);
    }
    match lock(&shared.default).clone() {
        Some(reply) => (Some("default".into()), reply),
        None => {
            let message = "the fake LLM's script is exhausted".to_owned();
            (None, fake_error(StatusCode::INTERNAL_SERVER_ERROR, "fake_exhausted", message, None))
        }
    }
}

/// `POST /v1/embeddings` (see [`embed`]).
async fn embeddings(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    shared.embeddings.fetch_add(1, Ordering::Relaxed);
    embed::answer(&body)
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let invalid = |e: serde_json::Error| {
        let body = json!({"error": {"message": format!("invalid JSON body: {e}"), "type": "fake"}});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    };
    let script = lock(&shared.script).clone();
    let record = shared.record.load(Ordering::Relaxed);
    if !record && script.is_none() {
        let roles = match serde_json::from_slice::<Roles>(&body) {
            Ok(roles) => roles,
            Err(e) => return invalid(e),
        };
        let after_tool = roles.messages.iter().any(|m| m.role.as_deref() == Some("tool"));
        let queued = lock(&shared.replies).pop_front();
        let reply = queued.unwrap_or_else(|| unscripted(&shared, after_tool).1);
        return answer(reply, roles.stream, false).await;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return invalid(e),
    };
    let request = script::Request::read(&body);
    let queued = lock(&shared.replies).pop_front();
    let (rule, reply) = match (queued, &script) {
        (Some(reply), _) => (Some("queue".to_owned()), reply),
        (None, Some(script)) => match script.answer(&request, &shared.call_ids) {
            Some((label, Ok(reply))) => (Some(label), reply),
            Some((label, Err(message))) => {
                (Some(label), fake_error(StatusCode::BAD_REQUEST, "fake_script_error", message, None))
            }
            None => (None, no_match(&request)),
        },
        (None, None) => unscripted(&shared, request.messages.iter().any(|m| m.role == "tool")),
    };
    if script.is_some() {
        let label = lock(&shared.label).clone();
        let rule = rule.as_deref().unwrap_or("(none)");
        tracing::info!(fake = %label, rule, status = reply.status, model = request.model, call = request.position(),
            "fake LLM answered (scripted: not a real model)");
    }
    let stream = request.stream;
    let include_usage =
        body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    if record {
        keep(&shared, headers, body, rule, reply.status);
    }
    answer(reply, stream, include_usage).await
}

fn keep(shared: &Shared, headers: HeaderMap, body: Value, rule: Option<String>, status: u16) {
    let max = shared.max_recorded.load(Ordering::Relaxed);
    let mut requests = lock(&shared.requests);
    // Numbered under the lock, so the record is in index order.
    let index = shared.seen.fetch_add(1, Ordering::Relaxed) + 1;
    requests.push_back(Recorded { index, at: Utc::now(), headers, body, rule, status });
    while max > 0 && requests.len() as u64 > max {
        requests.pop_front();
        shared.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// Send `reply` after its delay: as JSON, or as chunks when the request streams a success.
async fn answer(reply: FakeReply, stream: bool, include_usage: bool) -> Response {
    if let Some(gate) = &reply.gate {
        gate.notified().await;
    }
    // Not even a zero sleep: tokio's timer rounds a deadline up to its next millisecond tick,
    // so `sleep(0)` would hold an instant reply for up to a millisecond.
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if stream && reply.status == 200 {
        if let Some(mut events) = stream::events(&reply.body, include_usage) {
            if let Some(cut) = reply.cut_after {
                events.truncate(cut);
            }
            return stream::response(events, reply.chunk_delay, &reply.headers);
        }
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = reply.body;
    if let (200, Some(object)) = (reply.status, body.as_object_mut().filter(|b| b.contains_key("choices"))) {
        // As a real completion says: its id, kind and model (the fake's own name).
        static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = SERVED.fetch_add(1, Ordering::Relaxed);
        object.entry("id").or_insert_with(|| json!(format!("chatcmpl-fake-{n}")));
        object.entry("object").or_insert_with(|| json!("chat.completion"));
        object.entry("model").or_insert_with(|| json!("agentd-fake"));
    }
    let mut response = match body {
        Value::String(text) => (status, text).into_response(),
        body => (status, Json(body)).into_response(),
    };
    add_headers(&mut response, &reply.headers);
    response
}

fn add_headers(response: &mut Response, headers: &[(String, String)]) {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (name.parse::<axum::http::HeaderName>(), value.parse()) {
            response.headers_mut().insert(name, value);
        }
    }
}

/// `GET /calls`: the requests kept, oldest first.
async fn calls(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let requests = lock(&shared.requests);
    let calls: Vec<Value> = requests
        .iter()
        .map(|r| {
            let request = script::Request::read(&r.body);
            json!({
                "index": r.index,
                "at": r.at,
                "model": request.model,
                "stream": request.stream,
                "call": request.position(),
                "conversation": request.conversation(),
                "messages": r.body.get("messages").cloned().unwrap_or(Value::Null),
                "tools": r.body.get("tools").cloned().unwrap_or_else(|| json!([])),
                "rule": r.rule,
                "status": r.status,
            })
        })
        .collect();
    Json(json!({"calls": calls, "dropped": shared.dropped.load(Ordering::Relaxed)}))
}

/// `POST /reset`: forget the requests kept (numbering starts again at 1) and how often each rule
/// answered. Tool-call and completion ids keep counting, so they stay unique.
async fn reset(State(shared): State<Arc<Shared>>) -> StatusCode {
    let mut requests = lock(&shared.requests);
    requests.clear();
    shared.seen.store(0, Ordering::Relaxed);
    drop(requests);
    shared.dropped.store(0, Ordering::Relaxed);
    if let Some(script) = lock(&shared.script).as_ref() {
        script.reset();
    }
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ask(fake: &FakeLlm) -> (u16, Value) {
        let response = reqwest::Client::new()
            .post(format!("{}/chat/completions", fake.base_url()))
            .json(&json!({"model": "m", "messages": []}))
            .send()
            .await
            .expect("POST");
        (response.status().as_u16(), response.json().await.expect("JSON"))
    }

    fn content(body: &Value) -> &str {
        body["choices"][0]["message"]["content"].as_str().unwrap_or_default()
    }

    #[tokio::test]
    async fn an_exhausted_script_answers_500_unless_a_default_is_set() {
        let fake = FakeLlm::start().await.expect("start");
        assert_eq!(ask(&fake).await.0, 500);
        fake.set_default(Some(FakeReply::text("default")));
        fake.push([FakeReply::text("scripted")]);
        assert_eq!(content(&ask(&fake).await.1), "scripted");
        let (status, body) = ask(&fake).await;
        assert_eq!((status, content(&body)), (200, "default"));
        assert_eq!(content(&ask(&fake).await.1), "default");
        assert_eq!(fake.requests().len(), 4);
        fake.set_default(None);
        assert_eq!(ask(&fake).await.0, 500);
    }

    #[tokio::test]
    async fn requests_are_not_kept_when_recording_is_off() {
        let fake = FakeLlm::start().await.expect("start");
        fake.set_recording(false);
        fake.set_default(Some(FakeReply::text("x")));
        let (status, body) = ask(&fake).await;
        assert_eq!((status, content(&body)), (200, "x"), "answered as when recording");
        assert!(fake.requests().is_empty());
        fake.set_recording(true);
        assert_eq!(ask(&fake).await.0, 200);
        assert_eq!(fake.requests().len(), 1, "recorded again once recording is on");
    }

    #[tokio::test]
    async fn a_tool_round_calls_a_tool_then_answers_after_its_result() {
        let fake = FakeLlm::start().await.expect("start");
        let call = FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "1+1"}))]);
        fake.set_tool_round(Some((call, FakeReply::text("2"))));
        let client = reqwest::Client::new();
        let ask_with = |messages: Value| {
            client
                .post(format!("{}/chat/completions", fake.base_url()))
                .json(&json!({"model": "m", "messages": messages}))
                .send()
        };
        let first: Value = ask_with(json!([{"role": "user", "content": "1+1?"}]))
            .await
            .expect("POST")
            .json()
            .await
            .expect("JSON");
        assert_eq!(first["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "calculator");
        let second: Value = ask_with(json!([{"role": "user", "content": "1+1?"}, {"role": "tool", "tool_call_id": "c1", "content": "2"}]))
            .await
            .expect("POST")
            .json()
            .await
            .expect("JSON");
        assert_eq!(content(&second), "2");
    }
}

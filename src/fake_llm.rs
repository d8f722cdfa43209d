//! A scripted OpenAI-compatible chat-completions server, for tests, demos and curl-driven
//! integration runs without a real model: each request gets the next scripted reply (a text, tool
//! calls, or any status, headers and body, optionally delayed), and every request is recorded.
//! With a default reply set, requests past the end of the script get that reply (this is what
//! `agentd fake-llm` serves); without one, an exhausted script answers 500.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct FakeReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub delay: Duration,
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
        Self { status: 200, headers: Vec::new(), body, delay: Duration::ZERO }
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
}

struct Script {
    replies: Mutex<VecDeque<FakeReply>>,
    /// The reply once `replies` is empty; none: a 500.
    default: Mutex<Option<FakeReply>>,
    /// Once `replies` is empty: a tool call, or the answer when the conversation ends with a tool
    /// result (a stateless native tool round, for load tests).
    tool_round: Mutex<Option<(FakeReply, FakeReply)>>,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
    /// Whether requests are kept (a long-lived server turns this off).
    record: AtomicBool,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            replies: Mutex::default(),
            default: Mutex::default(),
            tool_round: Mutex::default(),
            requests: Mutex::default(),
            record: AtomicBool::new(true),
        }
    }
}

/// A running fake server. It stops when the runtime that started it stops.
#[derive(Clone)]
pub struct FakeLlm {
    script: Arc<Script>,
    addr: SocketAddr,
}

impl FakeLlm {
    /// Listen on a free loopback port with an empty script.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Listen on `addr` (port 0: a free one) with an empty script.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let script = Arc::new(Script::default());
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .with_state(script.clone());
        let listener = crate::app::listen(addr)?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "fake LLM server stopped");
            }
        });
        Ok(Self { script, addr })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to configure as a provider's (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queue replies.
    pub fn push(&self, replies: impl IntoIterator<Item = FakeReply>) {
        lock(&self.script.replies).extend(replies);
    }

    /// Answer `reply` to every request the script has no reply for (`None`: a 500 again).
    pub fn set_default(&self, reply: Option<FakeReply>) {
        *lock(&self.script.default) = reply;
    }

    /// Answer every request the script has no reply for with `call` (a native tool call), or with
    /// `answer` once the conversation holds a tool result (`None`: off).
    pub fn set_tool_round(&self, round: Option<(FakeReply, FakeReply)>) {
        *lock(&self.script.tool_round) = round;
    }

    /// Keep requests for `requests()` (the default) or not, as a long-lived server should.
    pub fn set_recording(&self, record: bool) {
        self.script.record.store(record, Ordering::Relaxed);
    }

    /// The bodies of every request so far.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.script.requests).iter().map(|(_, body)| body.clone()).collect()
    }

    /// The headers of every request so far.
    pub fn request_headers(&self) -> Vec<HeaderMap> {
        lock(&self.script.requests).iter().map(|(headers, _)| headers.clone()).collect()
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.script.replies).len()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the fake reads of a request it does not record: the messages' roles (so a benchmark's
/// fake spends little on each request).
#[derive(serde::Deserialize)]
struct Roles {
    #[serde(default)]
    messages: Vec<Role>,
}

#[derive(serde::Deserialize)]
struct Role {
    role: Option<String>,
}

async fn chat(State(script): State<Arc<Script>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let invalid = |e: serde_json::Error| {
        let body = json!({"error": {"message": format!("invalid JSON body: {e}"), "type": "fake"}});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    };
    let after_tool = if script.record.load(Ordering::Relaxed) {
        let body: Value = match serde_json::from_slice(&body) {
            Ok(body) => body,
            Err(e) => return invalid(e),
        };
        let after_tool = body
            .pointer("/messages")
            .and_then(Value::as_array)
            .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"));
        lock(&script.requests).push((headers, body));
        after_tool
    } else {
        match serde_json::from_slice::<Roles>(&body) {
            Ok(roles) => roles.messages.iter().any(|m| m.role.as_deref() == Some("tool")),
            Err(e) => return invalid(e),
        }
    };
    let round = || {
        lock(&script.tool_round)
            .as_ref()
            .map(|(call, answer)| if after_tool { answer.clone() } else { call.clone() })
    };
    let reply = lock(&script.replies).pop_front().or_else(round).or_else(|| lock(&script.default).clone());
    let Some(reply) = reply else {
        let body = json!({"error": {"message": "the fake LLM's script is exhausted", "type": "fake"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
    };
    tokio::time::sleep(reply.delay).await;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, Json(reply.body)).into_response();
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (name.parse::<axum::http::HeaderName>(), value.parse()) {
            response.headers_mut().insert(name, value);
        }
    }
    response
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
        ask(&fake).await;
        assert!(fake.requests().is_empty());
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

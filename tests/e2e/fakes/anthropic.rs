//! A fake of Anthropic's Messages API (`POST /v1/messages`, API version 2023-06-01), from
//! <https://docs.anthropic.com/en/api/messages>: it checks the `x-api-key` and
//! `anthropic-version` headers and the request body (roles alternating from a user turn, content
//! blocks and their rules, tool results answering the previous turn's tool uses first, tools,
//! `tool_choice`, `stop_sequences`, `max_tokens`, no unknown fields), answers with a message
//! (or, for `"stream": true`, its events), and errors in the API's shape:
//! `{"type": "error", "error": {"type", "message"}}` with `retry-after` and
//! `anthropic-ratelimit-*` headers where the API sends them.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::{respond, Script, Scripted, Seen};

/// A running fake; `key` is the API key it accepts.
pub struct FakeAnthropic {
    pub url: String,
    pub script: Script,
}

#[derive(Clone)]
struct App {
    script: Script,
    key: String,
}

impl FakeAnthropic {
    pub async fn start(key: &str) -> Self {
        let script = Script::default();
        let app = App { script: script.clone(), key: key.to_owned() };
        let router = axum::Router::new().route("/v1/messages", post(messages)).with_state(app);
        Self { url: super::serve(router).await, script }
    }
}

/// A message answering with text.
pub fn text(text: &str, input_tokens: u64, output_tokens: u64) -> Scripted {
    message(
        json!([{"type": "text", "text": text}]),
        "end_turn",
        json!({"input_tokens": input_tokens, "output_tokens": output_tokens}),
    )
}

/// A message asking for tools: `(id, name, input)`.
pub fn tool_use(calls: &[(&str, &str, Value)]) -> Scripted {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        .collect();
    message(Value::Array(blocks), "tool_use", json!({"input_tokens": 10, "output_tokens": 5}))
}

/// A message with these content blocks, stop reason and usage.
pub fn message(content: Value, stop_reason: &str, usage: Value) -> Scripted {
    Scripted::ok(json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null, "usage": usage
    }))
}

/// An error in the API's shape.
pub fn error(status: u16, kind: &str, message: &str) -> Scripted {
    Scripted { status, ..Scripted::ok(json!({"type": "error", "error": {"type": kind, "message": message}})) }
}

/// The headers of a success that spent the minute's requests, which come back in `seconds`.
pub fn budget_spent(reply: Scripted, seconds: u64) -> Scripted {
    reply
        .with_header("anthropic-ratelimit-requests-limit", "50")
        .with_header("anthropic-ratelimit-requests-remaining", "0")
        .with_reset("anthropic-ratelimit-requests-reset", Duration::from_secs(seconds))
}

/// 529: the API is overloaded.
pub fn overloaded() -> Scripted {
    error(529, "overloaded_error", "Overloaded")
}

/// 429 with `retry-after` (seconds) and the request budget spent until then.
pub fn rate_limited(retry_after_s: u64) -> Scripted {
    error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
        .with_header("retry-after", &retry_after_s.to_string())
        .with_header("anthropic-ratelimit-requests-limit", "50")
        .with_header("anthropic-ratelimit-requests-remaining", "0")
        .with_reset("anthropic-ratelimit-requests-reset", Duration::from_secs(retry_after_s))
}

async fn messages(State(app): State<App>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let at = Instant::now();
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let (status, response) = match &parsed {
        Err(e) => (400, invalid(&format!("the body is not JSON: {e}"))),
        Ok(body) => answer(&app, &headers, body, at).await,
    };
    app.script.record(Seen {
        at,
        path: "/v1/messages".into(),
        query: None,
        headers,
        body: parsed.unwrap_or(Value::Null),
        status,
    });
    response
}

fn invalid(message: &str) -> Response {
    let scripted = error(400, "invalid_request_error", message);
    respond(400, &[], &scripted.body)
}

async fn answer(app: &App, headers: &HeaderMap, body: &Value, at: Instant) -> (u16, Response) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("x-api-key") != Some(app.key.as_str()) {
        let e = error(401, "authentication_error", "invalid x-api-key");
        return (401, respond(401, &[], &e.body));
    }
    if header("anthropic-version").is_none() {
        return (400, invalid("anthropic-version: header is required"));
    }
    if let Err(problem) = check(body) {
        return (400, invalid(&problem));
    }
    if let Err(wait) = app.script.admit(at) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let e = rate_limited(secs);
        return (429, respond(429, &e.headers_now(), &e.body));
    }
    let Some(reply) = app.script.next() else {
        let e = error(500, "api_error", "the fake has no scripted reply");
        return (500, respond(500, &[], &e.body));
    };
    tokio::time::sleep(reply.delay).await;
    let mut headers = reply.headers_now();
    if reply.status == 200 && !headers.iter().any(|(name, _)| name.starts_with("anthropic-ratelimit-")) {
        headers.push(("anthropic-ratelimit-requests-limit".into(), "1000".into()));
        headers.push(("anthropic-ratelimit-requests-remaining".into(), "999".into()));
    }
    headers.push(("request-id".into(), "req_fake".into()));
    if reply.status == 200 && body.get("stream") == Some(&Value::Bool(true)) {
        return (200, stream(&reply.body, &headers, reply.chunk_delay));
    }
    (reply.status, respond(reply.status, &headers, &reply.body))
}

/// The message as the stream of events the API sends for it.
fn stream(message: &Value, headers: &[(String, String)], gap: Duration) -> Response {
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let usage = message["usage"].clone();
    start["usage"] = json!({"input_tokens": usage["input_tokens"], "output_tokens": 1,
                            "cache_read_input_tokens": usage.get("cache_read_input_tokens").cloned().unwrap_or(json!(0))});
    events.push(("message_start".into(), json!({"type": "message_start", "message": start})));
    events.push(("ping".into(), json!({"type": "ping"})));
    for (index, block) in message["content"].as_array().into_iter().flatten().enumerate() {
        match block["type"].as_str() {
            Some("tool_use") => {
                let opened =
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
                events.push((
                    "content_block_start".into(),
                    json!({"type": "content_block_start", "index": index, "content_block": opened}),
                ));
                let input = block["input"].to_string();
                let (a, b) = input.split_at(input.len() / 2);
                for piece in [a, b] {
                    events.push((
                        "content_block_delta".into(),
                        json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
            }
            _ => {
                events.push((
                    "content_block_start".into(),
                    json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
                ));
                let text = block["text"].as_str().unwrap_or_default();
                let chars: Vec<char> = text.chars().collect();
                for piece in chars.chunks(4) {
                    let piece: String = piece.iter().collect();
                    events.push((
                        "content_block_delta".into(),
                        json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
            }
        }
        events.push(("content_block_stop".into(), json!({"type": "content_block_stop", "index": index})));
    }
    events.push((
        "message_delta".into(),
        json!({"type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
        "usage": {"output_tokens": usage["output_tokens"]}}),
    ));
    events.push(("message_stop".into(), json!({"type": "message_stop"})));
    let texts: Vec<String> =
        events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect();
    let body = futures_util::stream::iter(texts.into_iter().enumerate()).then(move |(i, text)| async move {
        if i > 0 && !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        Ok::<_, std::convert::Infallible>(text)
    });
    let body = axum::body::Body::from_stream(body);
    let mut response = ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) =
            (axum::http::HeaderName::try_from(name.as_str()), axum::http::HeaderValue::from_str(value))
        {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

const TOP_LEVEL: [&str; 14] = [
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "stream",
    "metadata",
    "thinking",
    "service_tier",
];

/// The API's checks of a request body (the subset agentd may break); the first problem found.
pub fn check(body: &Value) -> Result<(), String> {
    let object = body.as_object().ok_or("the body must be an object")?;
    if let Some(extra) = object.keys().find(|k| !TOP_LEVEL.contains(&k.as_str())) {
        return Err(format!("{extra}: Extra inputs are not permitted"));
    }
    if body["model"].as_str().is_none_or(|m| m.is_empty()) {
        return Err("model: Field required".into());
    }
    if body["max_tokens"].as_u64().is_none_or(|n| n < 1) {
        return Err("max_tokens: Field required (an integer of at least 1)".into());
    }
    if let Some(t) = body.get("temperature") {
        if !t.as_f64().is_some_and(|t| (0.0..=1.0).contains(&t)) {
            return Err("temperature: Input should be less than or equal to 1".into());
        }
    }
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for block in blocks {
                if block["type"] != "text" || block["text"].as_str().is_none_or(|t| t.is_empty()) {
                    return Err("system: each block must be a non-empty text block".into());
                }
            }
        }
        Some(_) => return Err("system: Input should be a valid string or list of text blocks".into()),
    }
    for (i, stop) in body["stop_sequences"].as_array().into_iter().flatten().enumerate() {
        if stop.as_str().is_none_or(|s| s.trim().is_empty()) {
            return Err(format!("stop_sequences.{i}: each stop sequence must contain non-whitespace"));
        }
    }
    let mut tool_names = Vec::new();
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        let name = tool["name"].as_str().unwrap_or_default();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!("tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"));
        }
        if tool["input_schema"]["type"] != "object" {
            return Err(format!("tools.{i}.input_schema.type: Input should be 'object'"));
        }
        tool_names.push(name.to_owned());
    }
    if let Some(choice) = body.get("tool_choice") {
        match choice["type"].as_str() {
            Some("auto" | "any" | "none") => {}
            Some("tool") if choice["name"].as_str().is_some_and(|n| tool_names.iter().any(|t| t == n)) => {}
            _ => return Err("tool_choice: must be auto, any, none, or a tool that is offered".into()),
        }
        if choice["type"] != "none" && choice["type"] != "auto" && tool_names.is_empty() {
            return Err("tool_choice: may only be specified while providing tools".into());
        }
    }
    check_messages(body["messages"].as_array().ok_or("messages: Field required")?)
}

fn check_messages(messages: &[Value]) -> Result<(), String> {
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut previous_uses: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if !["user", "assistant"].contains(&role) {
            return Err(format!("messages.{i}.role: Input should be 'user' or 'assistant'"));
        }
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Err(format!("messages: roles must alternate between \"user\" and \"assistant\", starting with \"user\" (messages.{i} is \"{role}\")"));
        }
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) if !blocks.is_empty() => blocks.clone(),
            _ => return Err(format!("messages.{i}.content: must be a non-empty string or list of blocks")),
        };
        let mut uses = Vec::new();
        let mut results = Vec::new();
        let mut seen_other = false;
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            match (block["type"].as_str(), role) {
                (Some("text"), _) => {
                    if block["text"].as_str().is_none_or(|t| t.is_empty()) {
                        return Err(format!("{at}: text content blocks must be non-empty"));
                    }
                    seen_other = true;
                }
                (Some("image"), "user") => {
                    let source = &block["source"];
                    let media = source["media_type"].as_str().unwrap_or_default();
                    if source["type"] != "base64"
                        || !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media)
                        || source["data"].as_str().is_none_or(|d| d.is_empty())
                    {
                        return Err(format!(
                            "{at}.source: a base64 source with a supported media_type and data"
                        ));
                    }
                    seen_other = true;
                }
                (Some("tool_use"), "assistant") => {
                    let id = block["id"].as_str().unwrap_or_default();
                    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(format!("{at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"));
                    }
                    if !block["input"].is_object() {
                        return Err(format!("{at}.input: Input should be a valid dictionary"));
                    }
                    uses.push(id.to_owned());
                }
                (Some("tool_result"), "user") => {
                    if seen_other {
                        return Err(format!("{at}: tool_result blocks must come FIRST in the content array"));
                    }
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if !previous_uses.iter().any(|u| u == id) {
                        return Err(format!("{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."));
                    }
                    results.push(id.to_owned());
                }
                (kind, _) => {
                    return Err(format!("{at}.type: {kind:?} is not a valid block in a {role} message"))
                }
            }
        }
        if role == "user" {
            if let Some(missing) = previous_uses.iter().find(|u| !results.contains(u)) {
                return Err(format!("messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing}"));
            }
        }
        if role == "assistant" && i == messages.len() - 1 {
            if let Some(text) = blocks.last().and_then(|b| b["text"].as_str()) {
                if text.ends_with(char::is_whitespace) {
                    return Err(
                        "messages: final assistant content cannot end with trailing whitespace".into()
                    );
                }
            }
        }
        previous_uses = uses;
    }
    if !previous_uses.is_empty() {
        return Err("messages: the last assistant turn's `tool_use` blocks have no `tool_result`".into());
    }
    Ok(())
}

//! A fake of Azure OpenAI's chat completions
//! (`POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`), from
//! <https://learn.microsoft.com/azure/ai-services/openai/reference>: the key in the `api-key`
//! header, the `api-version` query parameter required, unknown deployments refused, tool
//! messages answering the previous assistant turn's calls, `response_format` refused where the
//! deployment's API version lacks it; answers carry Azure's content-filter results, errors
//! Azure's `{"error": {"code", "message"}}` with `retry-after` / `retry-after-ms` and
//! `x-ratelimit-remaining-*` on a 429.

use std::time::Instant;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use serde_json::{json, Value};

use super::{respond, Script, Scripted, Seen};

pub struct FakeAzure {
    /// The resource's endpoint (what a provider's `base_url` is).
    pub url: String,
    pub script: Script,
}

#[derive(Clone)]
struct App {
    script: Script,
    key: String,
    deployments: Vec<String>,
    /// Refuse `response_format` (an API version that lacks structured outputs).
    refuse_response_format: bool,
}

impl FakeAzure {
    /// A resource with these deployments, accepting `key`.
    pub async fn start(key: &str, deployments: &[&str]) -> Self {
        Self::start_with(key, deployments, false).await
    }

    pub async fn start_with(key: &str, deployments: &[&str], refuse_response_format: bool) -> Self {
        let script = Script::default();
        let app = App {
            script: script.clone(),
            key: key.to_owned(),
            deployments: deployments.iter().map(|d| (*d).to_owned()).collect(),
            refuse_response_format,
        };
        let router = axum::Router::new()
            .route("/openai/deployments/{deployment}/chat/completions", post(completions))
            .with_state(app);
        Self { url: super::serve(router).await, script }
    }
}

fn filters() -> Value {
    json!({"hate": {"filtered": false, "severity": "safe"}, "self_harm": {"filtered": false, "severity": "safe"},
           "sexual": {"filtered": false, "severity": "safe"}, "violence": {"filtered": false, "severity": "safe"}})
}

fn completion(message: Value, finish_reason: &str, prompt: u64, completion: u64, cached: u64) -> Scripted {
    Scripted::ok(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o-2024-08-06",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters()}],
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": message,
                     "content_filter_results": filters(), "logprobs": null}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}},
        "system_fingerprint": "fp_fake"
    }))
}

/// An answer with text, and its usage.
pub fn answer(text: &str, prompt: u64, completion_tokens: u64, cached: u64) -> Scripted {
    completion(json!({"role": "assistant", "content": text}), "stop", prompt, completion_tokens, cached)
}

/// An answer asking for tools: `(id, name, arguments)`.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Scripted {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    completion(json!({"role": "assistant", "content": null, "tool_calls": calls}), "tool_calls", 10, 5, 0)
}

pub fn error(status: u16, code: &str, message: &str) -> Scripted {
    Scripted { status, ..Scripted::ok(json!({"error": {"code": code, "message": message}})) }
}

/// 429: the deployment's rate limit, retry after `seconds`.
pub fn rate_limited(seconds: u64) -> Scripted {
    let message = format!("Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after {seconds} second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.");
    error(429, "429", &message)
        .with_header("retry-after", &seconds.to_string())
        .with_header("retry-after-ms", &(seconds * 1000).to_string())
        .with_header("x-ratelimit-remaining-requests", "0")
        .with_header("x-ratelimit-remaining-tokens", "0")
}

async fn completions(
    State(app): State<App>,
    Path(deployment): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let at = Instant::now();
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, response) = answer_request(&app, &deployment, query.as_deref(), &headers, &parsed, at).await;
    app.script.record(Seen {
        at,
        path: format!("/openai/deployments/{deployment}/chat/completions"),
        query,
        headers,
        body: parsed,
        status,
    });
    response
}

fn refuse(status: u16, code: &str, message: &str) -> (u16, Response) {
    (status, respond(status, &[], &error(status, code, message).body))
}

async fn answer_request(
    app: &App,
    deployment: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &Value,
    at: Instant,
) -> (u16, Response) {
    let version =
        query.into_iter().flat_map(|q| q.split('&')).find_map(|pair| pair.strip_prefix("api-version="));
    if version.is_none_or(str::is_empty) {
        return refuse(404, "404", "Resource not found");
    }
    if headers.get("api-key").and_then(|v| v.to_str().ok()) != Some(app.key.as_str()) {
        return refuse(401, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.");
    }
    if headers.contains_key("authorization") {
        return refuse(400, "BadRequest", "send the key in the api-key header, not Authorization");
    }
    if !app.deployments.iter().any(|d| d == deployment) {
        return refuse(404, "DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.");
    }
    if let Err(problem) = check(body) {
        return refuse(400, "BadRequest", &problem);
    }
    if app.refuse_response_format && body.get("response_format").is_some() {
        return refuse(400, "BadRequest", "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later");
    }
    if let Err(wait) = app.script.admit(at) {
        let r = rate_limited(wait.as_secs_f64().ceil().max(1.0) as u64);
        return (429, respond(429, &r.headers, &r.body));
    }
    let Some(reply) = app.script.next() else {
        return refuse(500, "InternalServerError", "the fake has no scripted reply");
    };
    tokio::time::sleep(reply.delay).await;
    (reply.status, respond(reply.status, &reply.headers, &reply.body))
}

/// The chat-completions checks agentd may break; the first problem found.
fn check(body: &Value) -> Result<(), String> {
    let messages =
        body["messages"].as_array().filter(|m| !m.is_empty()).ok_or("'messages' is a required property")?;
    let mut open_calls: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message["role"].as_str() {
            Some("system" | "user") => {
                if let Some(open) = open_calls.first() {
                    return Err(format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {open}"));
                }
            }
            Some("assistant") => {
                open_calls = message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["id"].as_str().map(str::to_owned))
                    .collect();
            }
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open_calls.iter().position(|c| c == id) else {
                    return Err(format!("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}])"));
                };
                open_calls.remove(at);
            }
            other => {
                return Err(format!(
                    "messages[{i}].role: {other:?} is not one of system, user, assistant, tool"
                ))
            }
        }
    }
    if let Some(format) = body.get("response_format") {
        if format["type"] != "json_schema"
            || !format["json_schema"]["name"].is_string()
            || !format["json_schema"]["schema"].is_object()
        {
            return Err("response_format: json_schema needs a name and a schema".into());
        }
    }
    Ok(())
}

//! A2A 1.0 (JSON-RPC binding): each crew of the caller's tenant published with `publish.a2a` is an
//! agent, its card at `/a2a/{name}/.well-known/agent-card.json` and its endpoint at
//! `POST /a2a/{name}`; `/.well-known/agent-card.json` is agentd's own card (its skills are the
//! key's published crews; messages to its endpoint, `POST /a2a`, name the crew in
//! `metadata.skill`).
//!
//! A task is a run: `SendMessage` kicks the crew off (its inputs from the message's data part,
//! its text as the input `message`) and answers when the task has ended or needs input (unless
//! `returnImmediately`); `SendStreamingMessage` and `SubscribeToTask` stream the task and its
//! status and artifact updates from the run's events (from any replica: a client whose stream
//! broke subscribes again); `GetTask`, `ListTasks`, `CancelTask`. A run awaiting a decision (a tool
//! call to approve, an answer to review) is `TASK_STATE_INPUT_REQUIRED`; the follow-up message
//! (same `taskId`) approves (`{"approve": true}` or "approve") or rejects it. The final output is
//! the artifact `output`. A `contextId` is a thread. Push notification configs are the run's
//! webhooks (signed, Standard Webhooks: agentd's event envelopes, not A2A stream items).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{SecondsFormat, Timelike};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::feed;
use super::jsonrpc::{self, Incoming, JsonRpcMessage, JsonRpcResponse, RpcError, METHOD_NOT_FOUND};
use crate::domain::crew::Protocol;
use crate::domain::journal::Approval;
use crate::domain::run::{StatusCursor, TaggedRuns};
use crate::domain::webhook::WebhookEndpoint;
use crate::domain::{Caller, CrewSpec, EventType, Run, RunId, RunStatus, Scope};
use crate::http::auth::{audit, optional_caller, Authed};
use crate::http::error::Problem;
use crate::http::AppState;
use crate::service::{ProtocolKickoff, ServiceError, Step};

const PROTOCOL_VERSION: &str = "1.0";
const TASK_NOT_FOUND: i64 = -32001;
const TASK_NOT_CANCELABLE: i64 = -32002;
const PUSH_NOT_SUPPORTED: i64 = -32003;
const UNSUPPORTED_OPERATION: i64 = -32004;
const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
const VERSION_NOT_SUPPORTED: i64 = -32009;
/// Most tasks in a `ListTasks` page.
const MAX_PAGE: usize = 100;

/// The origin clients reach this server at: the forwarded host and scheme a proxy sets, or the
/// request's `Host`.
fn origin(headers: &HeaderMap) -> String {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or(v).trim().to_owned())
    };
    let host = text("x-forwarded-host")
        .or_else(|| text(header::HOST.as_str()))
        .unwrap_or_else(|| "localhost".to_owned());
    let scheme = text("x-forwarded-proto")
        .filter(|s| s == "https" || s == "http")
        .unwrap_or_else(|| "http".to_owned());
    format!("{scheme}://{host}")
}

fn card(
    headers: &HeaderMap,
    name: &str,
    description: &str,
    endpoint: &str,
    skills: Vec<Value>,
    push: bool,
) -> Value {
    json!({
        "name": name,
        "description": description,
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [{"url": format!("{}{endpoint}", origin(headers)), "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}],
        "provider": {"organization": "agentd", "url": origin(headers)},
        "capabilities": {"streaming": true, "pushNotifications": push, "extendedAgentCard": true},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "An agentd API key"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    })
}

fn skill(crew: &CrewSpec) -> Value {
    let inputs = crate::domain::interpolate::required_inputs(crew);
    let mut description = crew.summary();
    if !inputs.is_empty() {
        let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
        description
            .push_str(&format!(" Inputs (a data part, or the text as `message`): {}.", names.join(", ")));
    }
    json!({
        "id": crew.name,
        "name": crew.name,
        "description": description,
        "tags": ["crew"],
        "inputModes": ["text/plain", "application/json"],
        "outputModes": ["text/plain", "application/json"],
    })
}

/// How long a client may keep a card without asking again.
const CARD_MAX_AGE_S: u32 = 300;

/// A card as an HTTP answer a client can cache: `ETag` (its body's hash), `Last-Modified` (when
/// what it describes last changed), `Cache-Control` (`public` when it shows nothing of a key,
/// else `private`) and `Vary: Authorization`; `304` when the client's copy is current
/// (`If-None-Match`, else `If-Modified-Since`).
fn cacheable_card(
    request: &HeaderMap,
    card: &Value,
    modified: Option<chrono::DateTime<chrono::Utc>>,
    public: bool,
) -> Response {
    use sha2::{Digest, Sha256};
    let body = card.to_string();
    let digest = Sha256::digest(body.as_bytes());
    let etag = format!("\"{}\"", digest[..16].iter().map(|b| format!("{b:02x}")).collect::<String>());
    let modified = modified.map(|at| at.with_nanosecond(0).unwrap_or(at));
    let current = match request.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(tags) => {
            tags.split(',').map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
        }
        None => match (modified, request.get(header::IF_MODIFIED_SINCE).and_then(|v| v.to_str().ok())) {
            (Some(modified), Some(since)) => chrono::DateTime::parse_from_rfc2822(since)
                .is_ok_and(|since| modified <= since.with_timezone(&chrono::Utc)),
            _ => false,
        },
    };
    let mut response = if current {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let headers = response.headers_mut();
    let scope = if public { "public" } else { "private" };
    let values = [
        (header::ETAG, etag),
        (header::CACHE_CONTROL, format!("{scope}, max-age={CARD_MAX_AGE_S}")),
        (header::VARY, "Authorization".to_owned()),
    ];
    for (name, value) in values {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    if let Some(modified) = modified {
        let text = modified.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        if let Ok(value) = HeaderValue::from_str(&text) {
            headers.insert(header::LAST_MODIFIED, value);
        }
    }
    response
}

/// agentd's own card, with `caller`'s published crews as its skills; when they last changed.
async fn agentd_card(
    state: &AppState,
    headers: &HeaderMap,
    caller: Option<&Caller>,
) -> Result<(Value, Option<chrono::DateTime<chrono::Utc>>), ServiceError> {
    let crews = match caller {
        Some(caller) if caller.may(Scope::Read) => {
            state.services.published_crews(caller, Protocol::A2a).await?
        }
        _ => Vec::new(),
    };
    let skills = crews.iter().map(|crew| skill(&crew.spec)).collect();
    let modified = crews.iter().map(|crew| crew.updated_at).max();
    let description = "Runs crews of LLM agents durably. Each skill is a crew; name it in a message's `metadata.skill`, \
                       or talk to its own agent at /a2a/{skill} (card: /a2a/{skill}/.well-known/agent-card.json).";
    let push = state.services.webhooks_configured();
    Ok((card(headers, "agentd", description, "/a2a", skills, push), modified))
}

/// A published crew's card for `caller`; when the crew last changed.
async fn crew_card_of(
    state: &AppState,
    headers: &HeaderMap,
    caller: &Caller,
    name: &str,
) -> Result<(Value, chrono::DateTime<chrono::Utc>), ServiceError> {
    let crew = state.services.published_crew(caller, name, Protocol::A2a).await?;
    let spec = &crew.spec;
    let push = state.services.webhooks_configured();
    let card = card(headers, &spec.name, &spec.summary(), &format!("/a2a/{name}"), vec![skill(spec)], push);
    Ok((card, crew.updated_at))
}

/// The card of a crew name for a client without a key: the same for every name, published or
/// not, so it tells nothing of any tenant's crews; it says how to authenticate, and the crew's
/// own card is its extended card (`GetExtendedAgentCard`, with a key).
fn public_crew_card(headers: &HeaderMap, name: &str, push: bool) -> Value {
    let description = "An agentd crew. Authenticate (Authorization: Bearer <agentd API key>) to run it; its own card, \
                       with its description and inputs, is the extended card (GetExtendedAgentCard) or this card \
                       fetched with the key.";
    let generic = json!({
        "id": name,
        "name": name,
        "description": "Runs the crew with the message's text or data as its inputs.",
        "tags": ["crew"],
        "inputModes": ["text/plain", "application/json"],
        "outputModes": ["text/plain", "application/json"],
    });
    card(headers, name, description, &format!("/a2a/{name}"), vec![generic], push)
}

/// agentd's A2A agent card.
///
/// Open to anyone; with a key, its skills are the key's tenant's crews published through A2A
/// (`publish.a2a`), and its endpoint (`POST /a2a`) runs the one a message names in
/// `metadata.skill`. Cacheable: `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current
/// copy.
#[utoipa::path(
    get, path = "/.well-known/agent-card.json", tag = "protocols", security((), ("bearer" = [])),
    responses(
        (status = 200, description = "An A2A 1.0 agent card", body = Object),
        (status = 304, description = "The client's copy (`If-None-Match`, `If-Modified-Since`) is current"),
    )
)]
pub async fn discovery_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let caller = match optional_caller(&state, &headers).await {
        Ok(caller) => caller,
        Err(error) => return error.into_response(),
    };
    match agentd_card(&state, &headers, caller.as_ref()).await {
        Ok((card, modified)) => cacheable_card(&headers, &card, modified, caller.is_none()),
        Err(error) => crate::http::error::ApiError::from(error).into_response(),
    }
}

/// A published crew's A2A agent card.
///
/// Open to anyone. With a key (or on a server without keys) it is the crew's own card (404 when
/// the key's tenant publishes no crew of that name through A2A); without one, a public card that
/// is the same for every name (it names no tenant's crew) and says how to authenticate. Cacheable:
/// `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current copy.
#[utoipa::path(
    get, path = "/a2a/{name}/.well-known/agent-card.json", tag = "protocols", security((), ("bearer" = [])),
    params(("name" = String, Path, description = "Crew name")),
    responses(
        (status = 200, description = "An A2A 1.0 agent card", body = Object),
        (status = 304, description = "The client's copy (`If-None-Match`, `If-Modified-Since`) is current"),
        (status = 404, description = "No crew of that name is published through A2A", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn crew_card(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let caller = match optional_caller(&state, &headers).await {
        Ok(caller) => caller,
        Err(error) => return error.into_response(),
    };
    let Some(caller) = caller else {
        let card = public_crew_card(&headers, &name, state.services.webhooks_configured());
        return cacheable_card(&headers, &card, None, true);
    };
    match crew_card_of(&state, &headers, &caller, &name).await {
        Ok((card, modified)) => cacheable_card(&headers, &card, Some(modified), false),
        Err(error) => crate::http::error::ApiError::from(error).into_response(),
    }
}

/// A published crew's A2A endpoint (JSON-RPC binding).
///
/// `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
/// `SubscribeToTask` and the push notification config methods; errors are JSON-RPC errors with
/// HTTP 200, as A2A clients read them (a stream whose key ends: -32050 with `data.reason`). See
/// docs/guides/protocols.md.
#[utoipa::path(
    post, path = "/a2a/{name}", tag = "protocols",
    params(("name" = String, Path, description = "Crew name")),
    request_body(content = JsonRpcMessage, content_type = "application/json"),
    responses(
        (status = 200, description = "The response (JSON, errors included), or for the streaming methods an event stream of JSON-RPC responses",
         content((JsonRpcResponse = "application/json"), (String = "text/event-stream"))),
        (status = 202, description = "A notification or a response, accepted"),
        (status = 403, description = "The key lacks the method's scope, or the request's `Origin` is not allowed (`allowed_origins`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn crew_rpc(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    rpc(state, caller, headers, Some(name), body).await
}

/// agentd's A2A endpoint: a message names its crew in `metadata.skill` (or the tenant publishes
/// one crew).
#[utoipa::path(
    post, path = "/a2a", tag = "protocols",
    request_body(content = JsonRpcMessage, content_type = "application/json"),
    responses(
        (status = 200, description = "The response (JSON, errors included), or for the streaming methods an event stream of JSON-RPC responses",
         content((JsonRpcResponse = "application/json"), (String = "text/event-stream"))),
        (status = 202, description = "A notification or a response, accepted"),
        (status = 403, description = "The key lacks the method's scope, or the request's `Origin` is not allowed (`allowed_origins`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn agentd_rpc(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    rpc(state, caller, headers, None, body).await
}

/// A JSON-RPC answer: always HTTP 200 (an A2A client reads errors only from a 200).
fn reply(message: Value) -> Response {
    axum::Json(message).into_response()
}

fn task_not_found(id: &str) -> RpcError {
    RpcError::new(TASK_NOT_FOUND, format!("Task not found: {id}"))
}

fn service_error(error: &ServiceError) -> RpcError {
    RpcError::from_service(error, TASK_NOT_FOUND)
}

async fn rpc(
    state: AppState,
    caller: Caller,
    headers: HeaderMap,
    crew: Option<String>,
    body: Bytes,
) -> Response {
    let (id, method, params) = match Incoming::parse(&body) {
        Ok(Incoming::Request { id, method, params }) => (id, method, params),
        Ok(Incoming::Notification { .. } | Incoming::Response) => {
            return StatusCode::ACCEPTED.into_response();
        }
        Err((id, error)) => return reply(failure(&id, &error)),
    };
    if let Some(version) = headers.get("a2a-version").and_then(|v| v.to_str().ok()) {
        if !version.trim().starts_with("1.") && version.trim() != "1" {
            let error = RpcError::new(
                VERSION_NOT_SUPPORTED,
                format!("A2A version '{version}' is not supported; this agent speaks {PROTOCOL_VERSION}"),
            );
            return reply(failure(&id, &error));
        }
    }
    state.metrics.observe_protocol("a2a", served(&method));
    let trace = crate::http::extract::kickoff_trace(&headers);
    let a2a = A2a { state, caller, trace, crew, id };
    let needs = match method.as_str() {
        "SendMessage" | "SendStreamingMessage" | "CancelTask" => Scope::Kickoff,
        "CreateTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => Scope::Kickoff,
        _ => Scope::Read,
    };
    if !a2a.caller.may(needs) {
        let detail = format!("this key lacks the '{needs}' scope {method} needs");
        return crate::http::error::ApiError::Forbidden(detail).into_response();
    }
    let params = match params {
        Value::Object(params) => params,
        _ => Map::new(),
    };
    let params = match checked_params(&method, params) {
        Ok(params) => params,
        Err(error) => return reply(failure(&a2a.id, &error)),
    };
    let answer = match method.as_str() {
        "SendMessage" => a2a.send(params, false).await,
        "SendStreamingMessage" => a2a.send(params, true).await,
        "GetTask" => a2a.get_task(&params).await,
        "ListTasks" => a2a.list_tasks(&params).await,
        "CancelTask" => a2a.cancel(&params).await,
        "SubscribeToTask" => a2a.subscribe(&params).await,
        "CreateTaskPushNotificationConfig" => a2a.create_push(&params).await,
        "GetTaskPushNotificationConfig" => a2a.get_push(&params).await,
        "ListTaskPushNotificationConfigs" => a2a.list_push(&params).await,
        "DeleteTaskPushNotificationConfig" => a2a.delete_push(&params).await,
        "GetExtendedAgentCard" => a2a.extended_card(&headers).await,
        other => Err(RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    match answer {
        Ok(Answer::Result(result)) => reply(jsonrpc::success(&a2a.id, result)),
        Ok(Answer::Stream(response)) => response,
        Err(error) => reply(failure(&a2a.id, &error)),
    }
}

/// The fields of each method's params (A2A 1.0's request messages), by their JSON names.
fn fields_of(method: &str) -> Option<&'static [&'static str]> {
    Some(match method {
        "SendMessage" | "SendStreamingMessage" => &["tenant", "message", "configuration", "metadata"],
        "GetTask" => &["tenant", "id", "historyLength"],
        "ListTasks" => &[
            "tenant",
            "contextId",
            "status",
            "pageSize",
            "pageToken",
            "historyLength",
            "statusTimestampAfter",
            "includeArtifacts",
        ],
        "CancelTask" => &["tenant", "id", "metadata"],
        "SubscribeToTask" => &["tenant", "id"],
        "CreateTaskPushNotificationConfig" => &["tenant", "id", "taskId", "url", "token", "authentication"],
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => &["tenant", "taskId", "id"],
        "ListTaskPushNotificationConfigs" => &["tenant", "taskId", "pageSize", "pageToken"],
        "GetExtendedAgentCard" => &["tenant"],
        _ => return None,
    })
}

/// The fields of a `SendMessageConfiguration`.
const CONFIGURATION_FIELDS: [&str; 4] =
    ["acceptedOutputModes", "taskPushNotificationConfig", "historyLength", "returnImmediately"];

/// `name`'s proto field name (`contextId` → `context_id`), which ProtoJSON parsers accept too.
fn proto_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `given` with each field under its JSON name (a field given twice, by both names, is an
/// error). A field the message does not have is left out ("Implementations SHOULD ignore
/// unrecognized fields", A2A 1.0 §5.7), unless `strict`: a filter's (ListTasks), where a
/// misspelt field ignored would silently widen what is listed.
fn known_fields(
    given: Map<String, Value>,
    fields: &[&str],
    of: &str,
    strict: bool,
) -> Result<Map<String, Value>, RpcError> {
    let mut known = Map::new();
    for (name, value) in given {
        let Some(field) = fields.iter().find(|f| **f == name || proto_name(f) == name) else {
            if strict {
                let message = format!("unknown field `{name}` in {of} (it has: {})", fields.join(", "));
                return Err(RpcError::invalid_params(message));
            }
            continue;
        };
        if known.insert((*field).to_owned(), value).is_some() {
            return Err(RpcError::invalid_params(format!("`{field}` is given twice in {of}")));
        }
    }
    Ok(known)
}

/// A method's params as the handlers read them: its fields under their JSON names, and a
/// message's configuration likewise; `historyLength` a count (not negative).
fn checked_params(method: &str, params: Map<String, Value>) -> Result<Map<String, Value>, RpcError> {
    let Some(fields) = fields_of(method) else { return Ok(params) };
    let mut params = known_fields(params, fields, "params", method == "ListTasks")?;
    if let Some(configuration) = params.remove("configuration") {
        let Value::Object(configuration) = configuration else {
            return Err(RpcError::invalid_params("`configuration` must be an object"));
        };
        let configuration = known_fields(configuration, &CONFIGURATION_FIELDS, "configuration", false)?;
        history_length(&configuration)?;
        params.insert("configuration".into(), Value::Object(configuration));
    }
    history_length(&params)?;
    Ok(params)
}

/// `historyLength`, when given: a count of messages (tasks keep no history here, so any count
/// gives none; a negative one is an error).
fn history_length(params: &Map<String, Value>) -> Result<(), RpcError> {
    match params.get("historyLength") {
        None | Some(Value::Null) => Ok(()),
        Some(value) if value.as_u64().is_some_and(|n| n <= i32::MAX as u64) => Ok(()),
        Some(value) => Err(RpcError::invalid_params(format!(
            "`historyLength` must be a count of messages, 0 or more (got {value})"
        ))),
    }
}

/// A2A's name of an error (`google.rpc.ErrorInfo.reason`) and the domain that names it.
fn error_reason(code: i64) -> (&'static str, &'static str) {
    const A2A: &str = "a2a-protocol.org";
    match code {
        TASK_NOT_FOUND => ("TASK_NOT_FOUND", A2A),
        TASK_NOT_CANCELABLE => ("TASK_NOT_CANCELABLE", A2A),
        PUSH_NOT_SUPPORTED => ("PUSH_NOTIFICATION_NOT_SUPPORTED", A2A),
        UNSUPPORTED_OPERATION => ("UNSUPPORTED_OPERATION", A2A),
        CONTENT_TYPE_NOT_SUPPORTED => ("CONTENT_TYPE_NOT_SUPPORTED", A2A),
        VERSION_NOT_SUPPORTED => ("VERSION_NOT_SUPPORTED", A2A),
        jsonrpc::PARSE_ERROR => ("PARSE_ERROR", A2A),
        jsonrpc::INVALID_REQUEST => ("INVALID_REQUEST", A2A),
        METHOD_NOT_FOUND => ("METHOD_NOT_FOUND", A2A),
        jsonrpc::INVALID_PARAMS => ("INVALID_PARAMS", A2A),
        jsonrpc::KEY_ENDED => ("KEY_ENDED", "agentd"),
        _ => ("INTERNAL_ERROR", A2A),
    }
}

/// An error response as A2A 1.0 gives it: `error.data` is a list of typed details led by a
/// `google.rpc.ErrorInfo` (reason, domain, and what the error carries as string metadata); an
/// invalid-params error naming fields adds a `google.rpc.BadRequest` with their violations.
fn failure(id: &Value, error: &RpcError) -> Value {
    let (reason, domain) = error_reason(error.code);
    let mut metadata = Map::new();
    let mut details = Vec::new();
    if let Some(Value::Object(data)) = &error.data {
        for (key, value) in data {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            metadata.insert(key.clone(), Value::String(text));
        }
        if let Some(Value::Array(errors)) = data.get("errors") {
            let violations: Vec<Value> =
                errors.iter().map(|e| json!({"field": e["field"], "description": e["message"]})).collect();
            details.push(
                json!({"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}),
            );
        }
    }
    let info = json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain, "metadata": metadata});
    details.insert(0, info);
    let error = RpcError { data: Some(Value::Array(details)), ..error.clone() };
    jsonrpc::failure(id, &error)
}

/// The method as a metrics label: one this server serves, or `other`.
fn served(method: &str) -> &'static str {
    const SERVED: [&str; 11] = [
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    ];
    SERVED.into_iter().find(|served| *served == method).unwrap_or("other")
}

enum Answer {
    Result(Value),
    Stream(Response),
}

type Answered = Result<Answer, RpcError>;

/// One request to an agent.
struct A2a {
    state: AppState,
    caller: Caller,
    /// The caller's trace context (its `traceparent`), which a new task's run joins.
    trace: Option<crate::domain::RunTrace>,
    /// The agent's crew (`None`: agentd's own endpoint).
    crew: Option<String>,
    id: Value,
}

fn str_param<'p>(params: &'p Map<String, Value>, name: &str) -> Result<&'p str, RpcError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| RpcError::invalid_params(format!("`{name}` is required")))
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn state_of(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Queued | RunStatus::Waiting => "TASK_STATE_SUBMITTED",
        RunStatus::Running | RunStatus::Cancelling => "TASK_STATE_WORKING",
        RunStatus::AwaitingInput => "TASK_STATE_INPUT_REQUIRED",
        RunStatus::Completed => "TASK_STATE_COMPLETED",
        RunStatus::Failed => "TASK_STATE_FAILED",
        RunStatus::Cancelled => "TASK_STATE_CANCELED",
    }
}

/// A `ListTasks` page token: where the next page starts (status time in microseconds, run id).
fn page_token(cursor: StatusCursor) -> String {
    format!("{}.{}", cursor.at.timestamp_micros(), cursor.id)
}

/// The cursor of a page token this server gave.
fn page_cursor(token: &str) -> Option<StatusCursor> {
    let (micros, id) = token.split_once('.')?;
    let at = chrono::DateTime::from_timestamp_micros(micros.parse().ok()?)?;
    Some(StatusCursor { at, id: RunId(id.parse().ok()?) })
}

/// The run statuses of a task state (none for the states no run is in: rejected, auth
/// required); `None` for a text that is no task state.
fn run_statuses(state: &str) -> Option<Vec<RunStatus>> {
    Some(match state {
        "TASK_STATE_SUBMITTED" => vec![RunStatus::Queued, RunStatus::Waiting],
        "TASK_STATE_WORKING" => vec![RunStatus::Running, RunStatus::Cancelling],
        "TASK_STATE_INPUT_REQUIRED" => vec![RunStatus::AwaitingInput],
        "TASK_STATE_COMPLETED" => vec![RunStatus::Completed],
        "TASK_STATE_FAILED" => vec![RunStatus::Failed],
        "TASK_STATE_CANCELED" => vec![RunStatus::Cancelled],
        "TASK_STATE_REJECTED" | "TASK_STATE_AUTH_REQUIRED" => Vec::new(),
        _ => return None,
    })
}

/// Does the stream of a task end at this state?
fn settled(status: RunStatus) -> bool {
    status.is_terminal() || status == RunStatus::AwaitingInput
}

/// An agent message of task `task`. Its id follows from what it says (and `at`, the event it
/// tells of, if any): the same status read twice is the same message, a new one gets a new id.
fn agent_message(task: &Run, context: &str, parts: Vec<Value>, at: Option<i64>) -> Value {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(task.id.0.as_bytes());
    hash.update(at.unwrap_or(-1).to_be_bytes());
    hash.update(Value::Array(parts.clone()).to_string().as_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    let id = uuid::Builder::from_custom_bytes(bytes).into_uuid();
    json!({"messageId": id.to_string(), "taskId": task.id.to_string(), "contextId": context, "role": "ROLE_AGENT", "parts": parts})
}

fn text_part(text: impl Into<String>) -> Value {
    json!({"text": text.into()})
}

impl A2a {
    /// The run of task `id`, if it is one of this agent's tasks the caller may see.
    async fn task_run(&self, id: &str) -> Result<Run, RpcError> {
        let run_id = id.parse::<Uuid>().map_err(|_| task_not_found(id))?;
        let run = self.state.services.run(&self.caller, RunId(run_id)).await.map_err(|e| match e {
            ServiceError::NotFound(_) => task_not_found(id),
            other => service_error(&other),
        })?;
        let ours = run.metadata.contains_key("a2a_context")
            && self.crew.as_ref().is_none_or(|crew| *crew == run.crew_name);
        if !ours {
            return Err(task_not_found(id));
        }
        Ok(run)
    }

    fn context_of(run: &Run) -> String {
        run.metadata.get("a2a_context").and_then(Value::as_str).map(str::to_owned).unwrap_or_default()
    }

    /// The task a run is, with its status message (what input it needs) and its artifact.
    async fn task(&self, run: &Run) -> Value {
        let context = Self::context_of(run);
        let mut status = json!({"state": state_of(run.status), "timestamp": run.finished_at.or(run.started_at).unwrap_or(run.created_at).to_rfc3339_opts(SecondsFormat::Micros, true)});
        if let Some(message) = self.status_message(run, &context).await {
            status["message"] = message;
        }
        let mut task = json!({"id": run.id.to_string(), "contextId": context, "status": status, "metadata": {"run_id": run.id.to_string(), "crew": run.crew_name}});
        if let Some(artifact) = artifact(run) {
            task["artifacts"] = json!([artifact]);
        }
        task
    }

    /// What the task's status says: why it failed, or the decision it waits for.
    async fn status_message(&self, run: &Run, context: &str) -> Option<Value> {
        match run.status {
            RunStatus::Failed | RunStatus::Cancelled => {
                let text = run.error.as_ref().map_or_else(
                    || format!("the run {}", run.status.as_str()),
                    |e| format!("{}: {}", e.kind.as_str(), e.message),
                );
                Some(agent_message(run, context, vec![text_part(text)], None))
            }
            RunStatus::AwaitingInput => Some(agent_message(run, context, self.awaited(run).await, None)),
            _ => None,
        }
    }

    /// The parts of an input-required message: the tool calls awaiting approval, or the answer
    /// awaiting review, and how to answer.
    async fn awaited(&self, run: &Run) -> Vec<Value> {
        let calls = self.state.services.tool_calls(&self.caller, run.id).await.unwrap_or_default();
        let pending: Vec<Value> = calls
            .iter()
            .filter(|call| call.approval == Some(Approval::Pending))
            .map(|call| json!({"tool_call_id": call.id, "tool": call.tool, "arguments": call.arguments}))
            .collect();
        if !pending.is_empty() {
            let names: Vec<&str> = pending.iter().filter_map(|c| c["tool"].as_str()).collect();
            let text = format!(
                "Approve the call of {} (reply \"approve\", or \"reject: why\"; or a data part {{\"approve\": bool, \"reason\"?}}).",
                names.join(", ")
            );
            return vec![
                text_part(text),
                json!({"data": {"awaiting": "tool_approval", "tool_calls": pending}}),
            ];
        }
        let answer = run
            .tasks
            .iter()
            .rev()
            .find_map(|task| task.output.as_ref().map(|o| (task.name.clone(), o.raw.clone())));
        let (task, output) = answer.unwrap_or_default();
        let text = format!(
            "Review the answer of task '{task}' (reply \"approve\", or \"reject: feedback\"; or a data part {{\"approve\": bool, \"feedback\"?}}): {output}"
        );
        vec![text_part(text), json!({"data": {"awaiting": "review", "task": task, "output": output}})]
    }

    /// `SendMessage` / `SendStreamingMessage`: a new task, or the answer a waiting one needs.
    async fn send(&self, params: Map<String, Value>, streaming: bool) -> Answered {
        let message = params
            .get("message")
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("`message` is required"))?;
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| RpcError::invalid_params("`message.parts` must hold at least one part"))?;
        if message.get("messageId").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(RpcError::invalid_params("`message.messageId` is required"));
        }
        let configuration =
            params.get("configuration").and_then(Value::as_object).cloned().unwrap_or_default();
        let immediately = configuration.get("returnImmediately").and_then(Value::as_bool).unwrap_or(false);
        let push = configuration.get("taskPushNotificationConfig").and_then(Value::as_object);
        let context = message.get("contextId").and_then(Value::as_str).filter(|c| !c.is_empty());
        let (run, after) = match message.get("taskId").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            Some(task) => self.answer(task, context, parts).await?,
            None => (self.start(message, parts, context).await?, 0),
        };
        if let Some(push) = push {
            self.add_push(&run, push).await?;
        }
        if streaming {
            return Ok(Answer::Stream(self.stream(run, after, true)));
        }
        let run = if immediately { run } else { self.settle(run.id, after).await? };
        Ok(Answer::Result(json!({"task": self.task(&run).await})))
    }

    /// Start a task: the crew's inputs from the message (a data part's object; the text as the
    /// input `message`, or as the crew's one input).
    async fn start(
        &self,
        message: &Map<String, Value>,
        parts: &[Value],
        context: Option<&str>,
    ) -> Result<Run, RpcError> {
        let skill = message.get("metadata").and_then(|m| m.get("skill")).and_then(Value::as_str);
        let name = match (&self.crew, skill) {
            (Some(crew), _) => crew.clone(),
            (None, Some(skill)) => skill.to_owned(),
            (None, None) => {
                let crews = self
                    .state
                    .services
                    .published_crews(&self.caller, Protocol::A2a)
                    .await
                    .map_err(|e| service_error(&e))?;
                match crews.as_slice() {
                    [only] => only.name.clone(),
                    _ => {
                        return Err(RpcError::invalid_params(
                            "name the crew in `message.metadata.skill` (or talk to /a2a/{crew})",
                        ))
                    }
                }
            }
        };
        let crew = self.state.services.published_crew(&self.caller, &name, Protocol::A2a).await.map_err(
            |e| match e {
                ServiceError::NotFound(message) => RpcError::invalid_params(message),
                other => service_error(&other),
            },
        )?;
        let mut inputs = Map::new();
        let mut texts = Vec::new();
        for part in parts {
            if let Some(Value::Object(data)) = part.get("data") {
                inputs.extend(data.clone());
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                texts.push(text);
            } else if part.get("raw").is_some() || part.get("url").is_some() {
                return Err(RpcError::new(
                    CONTENT_TYPE_NOT_SUPPORTED,
                    "file parts are not supported: send text or data parts",
                ));
            }
        }
        if !texts.is_empty() {
            let wanted = crate::domain::interpolate::required_inputs(&crew.spec);
            let missing: Vec<&String> = wanted.iter().filter(|name| !inputs.contains_key(*name)).collect();
            let target = match missing.as_slice() {
                _ if wanted.contains("message") => Some("message".to_owned()),
                [only] => Some((*only).clone()),
                _ => None,
            };
            if let Some(target) = target.filter(|t| !inputs.contains_key(t)) {
                inputs.insert(target, json!(texts.join("\n")));
            }
        }
        let context = context.map_or_else(|| Uuid::now_v7().to_string(), str::to_owned);
        let thread = self
            .state
            .services
            .protocol_thread(&self.caller, Protocol::A2a, &context)
            .await
            .map_err(|e| service_error(&e))?;
        let mut metadata = Map::from_iter([("a2a_context".to_owned(), json!(context))]);
        if let Some(id) = message.get("messageId") {
            metadata.insert("a2a_message_id".into(), id.clone());
        }
        let kickoff = ProtocolKickoff {
            crew: &name,
            inputs,
            thread: Some(thread),
            metadata,
            enqueue: true,
            trace: self.trace.clone(),
            ..Default::default()
        };
        self.state.services.protocol_kickoff(&self.caller, kickoff).await.map_err(|e| match e {
            ServiceError::Invalid(errors) => {
                let text: Vec<String> =
                    errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
                let fields: Vec<Value> =
                    errors.iter().map(|e| json!({"field": e.field, "message": e.message})).collect();
                RpcError::invalid_params(format!(
                    "the message does not give the crew's inputs: {}",
                    text.join("; ")
                ))
                .with_data(json!({"errors": fields}))
            }
            other => service_error(&other),
        })
    }

    /// A follow-up message to a waiting task: its decision (approve or reject).
    async fn answer(
        &self,
        task: &str,
        context: Option<&str>,
        parts: &[Value],
    ) -> Result<(Run, i64), RpcError> {
        if !self.caller.may(Scope::Approve) {
            return Err(RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "this key lacks the 'approve' scope answering a task that needs input needs",
            ));
        }
        let run = self.task_run(task).await?;
        if context.is_some_and(|context| context != Self::context_of(&run)) {
            return Err(RpcError::invalid_params("`contextId` is not the task's"));
        }
        if run.status.is_terminal() {
            return Err(RpcError::new(
                UNSUPPORTED_OPERATION,
                format!("Task {task} is in terminal state: {}", run.status.as_str()),
            ));
        }
        if run.status != RunStatus::AwaitingInput {
            return Err(RpcError::new(
                UNSUPPORTED_OPERATION,
                format!("Task {task} is not waiting for input ({})", state_of(run.status)),
            ));
        }
        let (approve, why) = decision(parts).ok_or_else(|| {
            RpcError::invalid_params("the task waits for a decision: reply \"approve\" or \"reject: why\", or a data part {\"approve\": bool}")
        })?;
        let after = self
            .state
            .store
            .run_progress(run.id)
            .await
            .map_err(|e| service_error(&e.into()))?
            .map_or(0, |(_, last)| last);
        let audit = audit(&self.caller, "run.approval", "/a2a");
        let calls =
            self.state.services.tool_calls(&self.caller, run.id).await.map_err(|e| service_error(&e))?;
        let pending: Vec<String> =
            calls.into_iter().filter(|c| c.approval == Some(Approval::Pending)).map(|c| c.id).collect();
        let decided = if pending.is_empty() {
            let feedback = match (approve, why.as_deref()) {
                (false, None) => Some("rejected through A2A"),
                (_, why) => why,
            };
            self.state.services.resume(&self.caller, run.id, approve, feedback, &audit).await
        } else {
            let mut last = None;
            for call in &pending {
                let mut body = json!({"approve": approve});
                if let (false, Some(why)) = (approve, &why) {
                    body["reason"] = json!(why);
                }
                last = Some(
                    self.state.services.decide_tool_call(&self.caller, run.id, call, body, &audit).await,
                );
            }
            last.unwrap_or_else(|| Ok(run.clone()))
        };
        let run = decided.map_err(|e| service_error(&e))?;
        Ok((run, after))
    }

    /// Follow run `id` after `after` until it ends or needs input; the run then.
    async fn settle(&self, id: RunId, after: i64) -> Result<Run, RpcError> {
        let mut follow = self.state.follower.follow(&self.caller, id, after);
        loop {
            match follow.next().await {
                Step::Event(envelope) => {
                    let kind = envelope.event.event_type;
                    if kind.is_terminal()
                        || matches!(kind, EventType::RunAwaitingInput | EventType::ToolApprovalRequested)
                    {
                        break;
                    }
                }
                Step::Delta(_) => {}
                Step::End => break,
                Step::KeyEnded(why) => return Err(RpcError::key_ended(why)),
            }
        }
        self.state.services.run(&self.caller, id).await.map_err(|e| service_error(&e))
    }

    /// A task's stream: the task, then its updates from its events after `after`, ending when it
    /// ends or needs input.
    fn stream(&self, run: Run, after: i64, first: bool) -> Response {
        let (sender, receiver) = feed::channel();
        let streamer = Streamer {
            a2a: A2a {
                state: self.state.clone(),
                caller: self.caller.clone(),
                trace: None,
                crew: self.crew.clone(),
                id: self.id.clone(),
            },
            run,
            sender,
        };
        tokio::spawn(streamer.run(after, first));
        feed::response(receiver)
    }

    /// `GetExtendedAgentCard`: the card the key sees (the crew's own, or agentd's with the
    /// tenant's crews as skills).
    async fn extended_card(&self, headers: &HeaderMap) -> Answered {
        let card = match &self.crew {
            Some(name) => crew_card_of(&self.state, headers, &self.caller, name).await.map(|(card, _)| card),
            None => agentd_card(&self.state, headers, Some(&self.caller)).await.map(|(card, _)| card),
        };
        card.map(Answer::Result).map_err(|e| service_error(&e))
    }

    async fn get_task(&self, params: &Map<String, Value>) -> Answered {
        let run = self.task_run(str_param(params, "id")?).await?;
        Ok(Answer::Result(self.task(&run).await))
    }

    async fn list_tasks(&self, params: &Map<String, Value>) -> Answered {
        let page_size = match params.get("pageSize") {
            None | Some(Value::Null) => 50,
            Some(size) => match size.as_u64() {
                Some(size) if (1..=MAX_PAGE as u64).contains(&size) => size as usize,
                _ => return Err(RpcError::invalid_params(format!("`pageSize` must be 1 to {MAX_PAGE}"))),
            },
        };
        let text = |name: &str| match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(RpcError::invalid_params(format!("`{name}` must be a string"))),
        };
        let statuses = match text("status")? {
            None | Some("" | "TASK_STATE_UNSPECIFIED") => None,
            Some(state) => Some(run_statuses(state).ok_or_else(|| {
                RpcError::invalid_params(format!("`status` '{state}' is not a task state (TASK_STATE_…)"))
            })?),
        };
        let changed_since = match text("statusTimestampAfter")? {
            None => None,
            Some(at) => Some(
                chrono::DateTime::parse_from_rfc3339(at)
                    .map_err(|_| {
                        RpcError::invalid_params(format!(
                            "`statusTimestampAfter` '{at}' is not an RFC 3339 timestamp"
                        ))
                    })?
                    .with_timezone(&chrono::Utc),
            ),
        };
        let include_artifacts = match params.get("includeArtifacts") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(include)) => *include,
            Some(_) => return Err(RpcError::invalid_params("`includeArtifacts` must be a boolean")),
        };
        let after = match text("pageToken")?.filter(|t| !t.is_empty()) {
            Some(token) => Some(
                page_cursor(token)
                    .ok_or_else(|| RpcError::invalid_params("`pageToken` is not one of this server's"))?,
            ),
            None => None,
        };
        let filter = TaggedRuns {
            tag: "a2a_context",
            crew: self.crew.clone(),
            value: text("contextId")?.map(str::to_owned),
            statuses,
            changed_since,
        };
        let found = self
            .state
            .services
            .tagged_runs(&self.caller, &filter, after, page_size as i64)
            .await
            .map_err(|e| service_error(&e))?;
        let mut tasks = Vec::with_capacity(found.runs.len());
        for run in &found.runs {
            let mut task = self.task(run).await;
            if !include_artifacts {
                if let Some(task) = task.as_object_mut() {
                    task.remove("artifacts");
                }
            }
            tasks.push(task);
        }
        let token = found.next.map(page_token).unwrap_or_default();
        Ok(Answer::Result(
            json!({"tasks": tasks, "nextPageToken": token, "pageSize": page_size, "totalSize": found.total}),
        ))
    }

    async fn cancel(&self, params: &Map<String, Value>) -> Answered {
        let id = str_param(params, "id")?;
        let run = self.task_run(id).await?;
        if run.status.is_terminal() {
            return Err(RpcError::new(
                TASK_NOT_CANCELABLE,
                format!("Task {id} has already ended ({})", state_of(run.status)),
            ));
        }
        let audit = audit(&self.caller, "run.cancel", "/a2a");
        let after = self
            .state
            .store
            .run_progress(run.id)
            .await
            .map_err(|e| service_error(&e.into()))?
            .map_or(0, |(_, last)| last);
        self.state.services.cancel(&self.caller, run.id, &audit).await.map_err(|e| match e {
            ServiceError::Conflict(message) => RpcError::new(TASK_NOT_CANCELABLE, message),
            other => service_error(&other),
        })?;
        // A running run stops at its worker's next step: wait for it (briefly).
        let settled =
            tokio::time::timeout(std::time::Duration::from_secs(10), self.settle(run.id, after)).await;
        let run = match settled {
            Ok(run) => run?,
            Err(_) => self.task_run(id).await?,
        };
        Ok(Answer::Result(self.task(&run).await))
    }

    async fn subscribe(&self, params: &Map<String, Value>) -> Answered {
        let id = str_param(params, "id")?;
        let run = self.task_run(id).await?;
        if run.status.is_terminal() {
            return Err(RpcError::new(
                UNSUPPORTED_OPERATION,
                format!("Task {id} is in terminal state: {}", run.status.as_str()),
            ));
        }
        let after = self
            .state
            .store
            .run_progress(run.id)
            .await
            .map_err(|e| service_error(&e.into()))?
            .map_or(0, |(_, last)| last);
        Ok(Answer::Stream(self.stream(run, after, true)))
    }

    fn push_supported(&self) -> Result<(), RpcError> {
        match self.state.services.webhooks_configured() {
            true => Ok(()),
            false => Err(RpcError::new(
                PUSH_NOT_SUPPORTED,
                "push notifications need the server's webhook secret (AGENTD_WEBHOOK_SECRET)",
            )),
        }
    }

    async fn add_push(&self, run: &Run, config: &Map<String, Value>) -> Result<Value, RpcError> {
        self.push_supported()?;
        if config.contains_key("token") || config.contains_key("authentication") {
            return Err(RpcError::invalid_params(
                "push notifications are signed (Standard Webhooks, with the server's webhook secret): `token` and `authentication` are not used",
            ));
        }
        let url = str_param(config, "url")?;
        // The client's id for the config, kept as its name; a config of the same id is replaced.
        let id = match config.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if id.is_empty() => None,
            Some(Value::String(id))
                if id.chars().count() <= MAX_PUSH_ID_CHARS && !id.chars().any(char::is_control) =>
            {
                Some(id.as_str())
            }
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "`id` must be a text of at most {MAX_PUSH_ID_CHARS} characters, no control characters"
                )))
            }
        };
        let description = id.map_or_else(|| PUSH_NAMELESS.to_owned(), |id| format!("{PUSH_NAMED}{id}"));
        if let Some(id) = id {
            self.remove_push(run, id).await?;
        }
        let audit = audit(&self.caller, "webhook.create", "/a2a");
        let endpoint = self
            .state
            .services
            .add_run_webhook(&self.caller, run.id, url, &description, &audit)
            .await
            .map_err(|e| match e {
                ServiceError::Conflict(message) => RpcError::new(UNSUPPORTED_OPERATION, message),
                other => service_error(&other),
            })?;
        Ok(push_json(run, &endpoint))
    }

    async fn create_push(&self, params: &Map<String, Value>) -> Answered {
        self.push_supported()?;
        let run = self.task_run(str_param(params, "taskId")?).await?;
        Ok(Answer::Result(self.add_push(&run, params).await?))
    }

    /// The push configs (webhooks) of a task.
    async fn push_configs(&self, run: &Run) -> Result<Vec<WebhookEndpoint>, RpcError> {
        self.state.services.webhooks(&self.caller, Some(run.id)).await.map_err(|e| service_error(&e))
    }

    /// A push config (a webhook) of task `taskId`, by its id.
    async fn push_config(&self, params: &Map<String, Value>) -> Result<(Run, WebhookEndpoint), RpcError> {
        self.push_supported()?;
        let run = self.task_run(str_param(params, "taskId")?).await?;
        let id = str_param(params, "id")?;
        let endpoint = self.push_configs(&run).await?.into_iter().find(|e| push_id(e) == id);
        let endpoint = endpoint.ok_or_else(|| {
            RpcError::invalid_params(format!("the task has no push notification config {id}"))
        })?;
        Ok((run, endpoint))
    }

    async fn get_push(&self, params: &Map<String, Value>) -> Answered {
        let (run, endpoint) = self.push_config(params).await?;
        Ok(Answer::Result(push_json(&run, &endpoint)))
    }

    async fn list_push(&self, params: &Map<String, Value>) -> Answered {
        self.push_supported()?;
        let run = self.task_run(str_param(params, "taskId")?).await?;
        let configs: Vec<Value> = self.push_configs(&run).await?.iter().map(|e| push_json(&run, e)).collect();
        Ok(Answer::Result(json!({"configs": configs, "nextPageToken": ""})))
    }

    /// Deleting a config that is not there (any more) succeeds: the outcome is the same.
    async fn delete_push(&self, params: &Map<String, Value>) -> Answered {
        self.push_supported()?;
        let run = self.task_run(str_param(params, "taskId")?).await?;
        let id = str_param(params, "id")?;
        self.remove_push(&run, id).await?;
        Ok(Answer::Result(json!({})))
    }

    /// Remove the push config `id` of a task, if it has one.
    async fn remove_push(&self, run: &Run, id: &str) -> Result<(), RpcError> {
        let Some(endpoint) = self.push_configs(run).await?.into_iter().find(|e| push_id(e) == id) else {
            return Ok(());
        };
        let audit = audit(&self.caller, "webhook.delete", "/a2a");
        let deleted = self.state.services.delete_webhook(&self.caller, endpoint.id, &audit).await;
        deleted.map(|_| ()).map_err(|e| service_error(&e))
    }
}

/// Longest client-given push config id.
const MAX_PUSH_ID_CHARS: usize = 200;
/// The name of a push config's webhook: this, then the client's id for it.
const PUSH_NAMED: &str = "A2A push notification config ";
/// The name of a push config's webhook the client gave no id (its id is the webhook's).
const PUSH_NAMELESS: &str = "A2A push notifications";

/// A push config's id: the client's (kept in its webhook's name), else its webhook's.
fn push_id(endpoint: &WebhookEndpoint) -> String {
    endpoint.description.strip_prefix(PUSH_NAMED).map_or_else(|| endpoint.id.to_string(), str::to_owned)
}

/// A push config as A2A shows it (`TaskPushNotificationConfig`).
fn push_json(run: &Run, endpoint: &WebhookEndpoint) -> Value {
    json!({"id": push_id(endpoint), "taskId": run.id.to_string(), "url": endpoint.url})
}

/// A follow-up's decision: a data part `{"approve": bool, "reason"|"feedback"?}`, or a text
/// "approve"/"yes" or "reject[: why]"/"no".
fn decision(parts: &[Value]) -> Option<(bool, Option<String>)> {
    for part in parts {
        if let Some(data) = part.get("data").and_then(Value::as_object) {
            if let Some(approve) = data.get("approve").and_then(Value::as_bool) {
                let why = data
                    .get("reason")
                    .or_else(|| data.get("feedback"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                return Some((approve, why));
            }
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            let text = text.trim();
            let (word, why) = match text.split_once(':') {
                Some((word, why)) => (word.trim(), Some(why.trim().to_owned()).filter(|w| !w.is_empty())),
                None => (text, None),
            };
            match word.to_ascii_lowercase().as_str() {
                "approve" | "approved" | "yes" | "ok" => return Some((true, None)),
                "reject" | "rejected" | "no" => return Some((false, why)),
                _ => {}
            }
        }
    }
    None
}

/// The artifact of a completed run: its final output (text, and JSON when it has it).
fn artifact(run: &Run) -> Option<Value> {
    if run.status != RunStatus::Completed {
        return None;
    }
    let output = run.output.as_ref()?;
    let mut parts = vec![text_part(output.raw.clone())];
    if let Some(json) = &output.json {
        parts.push(json!({"data": json}));
    }
    Some(json!({"artifactId": format!("{}-output", run.id), "name": "output", "parts": parts}))
}

/// Streams one task's updates.
struct Streamer {
    a2a: A2a,
    run: Run,
    sender: mpsc::Sender<feed::Event>,
}

impl Streamer {
    async fn send(&self, item: Value) -> bool {
        let message = jsonrpc::success(&self.a2a.id, item);
        self.sender.send(feed::Event::data(message.to_string())).await.is_ok()
    }

    fn status(&self, state: &str, message: Option<Value>) -> Value {
        let context = A2a::context_of(&self.run);
        let mut status = json!({"state": state, "timestamp": now()});
        if let Some(message) = message {
            status["message"] = message;
        }
        json!({"statusUpdate": {"taskId": self.run.id.to_string(), "contextId": context, "status": status}})
    }

    async fn run(self, after: i64, first: bool) {
        if first && !self.send(json!({"task": self.a2a.task(&self.run).await})).await {
            return;
        }
        // A task that has ended or needs input: its snapshot says all (the stream closes).
        if settled(self.run.status) {
            return;
        }
        let mut follow = self.a2a.state.follower.follow(&self.a2a.caller, self.run.id, after);
        let context = A2a::context_of(&self.run);
        loop {
            let envelope = match follow.next().await {
                Step::Event(envelope) => envelope,
                Step::Delta(_) => continue,
                Step::End => return,
                Step::KeyEnded(why) => {
                    let message = failure(&self.a2a.id, &RpcError::key_ended(why));
                    let _ = self.sender.send(feed::Event::data(message.to_string())).await;
                    return;
                }
            };
            let event = &envelope.event;
            let task = event.task.as_deref().unwrap_or_default();
            let update = match event.event_type {
                EventType::RunStarted | EventType::RunResumed | EventType::RunRetried => {
                    Some(self.status("TASK_STATE_WORKING", None))
                }
                EventType::TaskStarted => {
                    let message = agent_message(
                        &self.run,
                        &context,
                        vec![text_part(format!("task '{task}' started"))],
                        Some(event.seq),
                    );
                    Some(self.status("TASK_STATE_WORKING", Some(message)))
                }
                EventType::TaskCompleted => {
                    let message = agent_message(
                        &self.run,
                        &context,
                        vec![text_part(format!("task '{task}' completed"))],
                        Some(event.seq),
                    );
                    Some(self.status("TASK_STATE_WORKING", Some(message)))
                }
                EventType::ToolApprovalRequested
                | EventType::RunAwaitingInput
                | EventType::RunCompleted
                | EventType::RunFailed
                | EventType::RunCancelled => {
                    // The run as it is now (its output, its error, what it waits for).
                    let run = match self.a2a.state.services.run(&self.a2a.caller, self.run.id).await {
                        Ok(run) => run,
                        Err(_) => return,
                    };
                    if let Some(artifact) = artifact(&run) {
                        let item = json!({"artifactUpdate": {"taskId": run.id.to_string(), "contextId": context, "artifact": artifact, "lastChunk": true}});
                        if !self.send(item).await {
                            return;
                        }
                    }
                    let state = match event.event_type {
                        EventType::RunCompleted => "TASK_STATE_COMPLETED",
                        EventType::RunFailed => "TASK_STATE_FAILED",
                        EventType::RunCancelled => "TASK_STATE_CANCELED",
                        _ => "TASK_STATE_INPUT_REQUIRED",
                    };
                    let message = self.a2a.status_message(&run, &context).await;
                    let message = match (state, message) {
                        ("TASK_STATE_INPUT_REQUIRED", None) => {
                            Some(agent_message(&run, &context, self.a2a.awaited(&run).await, None))
                        }
                        (_, message) => message,
                    };
                    self.send(self.status(state, message)).await;
                    return;
                }
                _ => None,
            };
            if let Some(update) = update {
                if !self.send(update).await {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_from_data_and_text() {
        assert_eq!(decision(&[json!({"data": {"approve": true}})]), Some((true, None)));
        assert_eq!(
            decision(&[json!({"data": {"approve": false, "reason": "too risky"}})]),
            Some((false, Some("too risky".into())))
        );
        assert_eq!(decision(&[json!({"text": "Approve"})]), Some((true, None)));
        assert_eq!(decision(&[json!({"text": "reject: not now"})]), Some((false, Some("not now".into()))));
        assert_eq!(decision(&[json!({"text": "what?"})]), None);
    }

    #[test]
    fn the_origin_follows_a_proxy() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(origin(&headers), "http://127.0.0.1:8080");
        headers.insert("x-forwarded-host", "agents.example.com".parse().unwrap());
        headers.insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(origin(&headers), "https://agents.example.com");
    }
}

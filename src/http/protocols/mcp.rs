//! The MCP server at `/mcp` (Streamable HTTP): each crew of the caller's tenant published with
//! `publish.mcp` is a tool. `tools/call` kicks the crew off and answers with its final output
//! (text and structured content); with a progress token, progress notifications from the run's
//! events stream first. A failed run is an `isError` result.
//!
//! Both eras of the protocol are spoken. The current revision (2026-07-28) is stateless: every
//! request carries its protocol version in `_meta` (and the `MCP-Protocol-Version` header),
//! `server/discover` advertises the server, and a client cancels a call by closing its response
//! stream. The older revisions (2024-11-05 to 2025-11-25) negotiate at `initialize`, which hands
//! out an `Mcp-Session-Id`; a call is cancelled by `notifications/cancelled`, and a broken
//! response stream is resumed with `GET /mcp` and `Last-Event-ID`. Nothing of a session is kept
//! in memory: a session id is the client's namespace for its request ids (a call's run is found
//! by its idempotency key, session and request id), and an event id names the run, its position
//! and the request it answers, so any replica can resume a stream or cancel a call.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::feed;
use super::jsonrpc::{
    self, Incoming, JsonRpcMessage, JsonRpcResponse, RpcError, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND,
};
use crate::domain::crew::Protocol;
use crate::domain::{Caller, EventType, Run, RunId, RunStatus, Scope};
use crate::http::auth::{audit, Authed};
use crate::http::error::Problem;
use crate::http::AppState;
use crate::service::{request_key, Envelope, ProtocolKickoff, ServiceError, Step};

/// Revisions negotiated at `initialize`, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Revisions of the per-request envelope (no handshake), oldest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
/// The error of a request at a protocol version the server does not speak.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The error of a request whose headers and body disagree (version header vs `_meta`).
const HEADER_MISMATCH: i64 = -32020;
/// How long a client waits before it resumes a broken stream (sent with the priming event): long
/// enough for a load balancer to notice a replica is gone.
const RESUME_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Which era a request belongs to, and at what version.
#[derive(Debug, Clone, PartialEq)]
enum Era {
    /// Negotiated at `initialize`; later requests carry the session.
    Handshake { version: String, session: Option<String> },
    /// The stateless per-request envelope.
    Modern { version: String },
}

impl Era {
    /// Does a response stream start with an event that only primes resumption (2025-11-25)?
    fn primes(&self) -> bool {
        match self {
            Era::Handshake { version, session: Some(_) } => version.as_str() >= "2025-11-25",
            Era::Handshake { session: None, .. } => false,
            Era::Modern { .. } => true,
        }
    }

    /// Are its streams resumable (event ids)? Not an older client's without a session, which
    /// never resumes.
    fn resumes(&self) -> bool {
        !matches!(self, Era::Handshake { session: None, .. })
    }
}

/// The MCP server (Streamable HTTP): one JSON-RPC message.
///
/// Published crews (`publish.mcp`) are its tools: `tools/list`, `tools/call` (answered with an
/// event stream of progress notifications and the result), `server/discover` and the current
/// revision's envelope (2026-07-28), or `initialize`, `ping` and `notifications/cancelled` of the
/// older revisions. A call's stream whose key is revoked, expires or loses its tenant ends with
/// a JSON-RPC error -32050 (`data.reason`). See docs/guides/protocols.md.
#[utoipa::path(
    post, path = "/mcp", tag = "protocols",
    request_body(content = JsonRpcMessage, content_type = "application/json"),
    responses(
        (status = 200, description = "The response (JSON), or for `tools/call` an event stream of JSON-RPC messages ending with it",
         content((JsonRpcResponse = "application/json"), (String = "text/event-stream"))),
        (status = 202, description = "A notification or a response, accepted"),
        (status = 400, description = "Not one JSON-RPC message, no session (older revisions), an envelope or header that does not fit, an unsupported version", body = JsonRpcResponse, content_type = "application/json"),
        (status = 403, description = "The key lacks the method's scope (`read` to list, `kickoff` to call; a JSON-RPC error), or the request's `Origin` is not allowed (`allowed_origins`; a problem)",
         content((JsonRpcResponse = "application/json"), (Problem = "application/problem+json"))),
    )
)]
pub async fn post_mcp(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (id, method, params) = match Incoming::parse(&body) {
        Ok(Incoming::Request { id, method, params }) => (id, method, params),
        Ok(Incoming::Notification { method, params }) => {
            notified(&state, &caller, &headers, &method, &params).await;
            return StatusCode::ACCEPTED.into_response();
        }
        Ok(Incoming::Response) => return StatusCode::ACCEPTED.into_response(),
        Err((id, error)) => return json_reply(StatusCode::BAD_REQUEST, &jsonrpc::failure(&id, &error), None),
    };
    state.metrics.observe_protocol("mcp", served(&method));
    let era = match era(&headers, &method, &params) {
        Ok(era) => era,
        Err((status, error)) => return json_reply(status, &jsonrpc::failure(&id, &error), None),
    };
    match method.as_str() {
        "initialize" => initialize(&id, &params),
        "server/discover" => json_reply(StatusCode::OK, &jsonrpc::success(&id, discover()), None),
        "ping" if matches!(era, Era::Handshake { .. }) => ok(&id, &era, json!({})),
        // A client lists the tools to check a call's result: a key that may call may list.
        "tools/list" if !(caller.may(Scope::Read) || caller.may(Scope::Kickoff)) => {
            forbidden(&id, Scope::Read)
        }
        "tools/call" if !caller.may(Scope::Kickoff) => forbidden(&id, Scope::Kickoff),
        "tools/list" => match list_tools(&state, &caller).await {
            Ok(tools) => ok(&id, &era, listed(&era, json!({"tools": tools}))),
            Err(error) => err(&id, &error),
        },
        "tools/call" => call_tool(state, caller, headers, id, era, params).await,
        _ => err(&id, &RpcError::new(METHOD_NOT_FOUND, format!("method '{method}' is not served here"))),
    }
}

/// The method as a metrics label: one this server serves, or `other`.
fn served(method: &str) -> &'static str {
    const SERVED: [&str; 5] = ["initialize", "server/discover", "ping", "tools/list", "tools/call"];
    SERVED.into_iter().find(|served| *served == method).unwrap_or("other")
}

/// Resume an MCP call's response stream.
///
/// After `Last-Event-ID` (an event id of a `tools/call` stream, from any replica): the rest of
/// its progress and its result. Without one there is no stream to open (the server sends nothing
/// unasked): 405.
#[utoipa::path(
    get, path = "/mcp", tag = "protocols",
    params(("Last-Event-ID" = Option<String>, Header, description = "The last event id of the stream to resume")),
    responses(
        (status = 200, description = "The rest of the call's stream", content_type = "text/event-stream"),
        (status = 400, description = "An event id this server did not write", body = JsonRpcResponse, content_type = "application/json"),
        (status = 404, description = "The call's run is not the caller's", body = JsonRpcResponse, content_type = "application/json"),
        (status = 405, description = "No Last-Event-ID: no stream to open", content_type = "text/plain"),
    )
)]
pub async fn get_mcp(State(state): State<AppState>, Authed(caller): Authed, headers: HeaderMap) -> Response {
    let Some(last) = headers.get(LAST_EVENT_ID).and_then(|value| value.to_str().ok()) else {
        return method_not_allowed(
            "GET /mcp resumes a response stream (send Last-Event-ID); the server opens no other stream",
        );
    };
    let Some(position) = Position::decode(last) else {
        return json_reply(
            StatusCode::BAD_REQUEST,
            &jsonrpc::failure(
                &Value::Null,
                &RpcError::new(INVALID_REQUEST, "Last-Event-ID names no event of this server"),
            ),
            None,
        );
    };
    let version = header_text(&headers, VERSION_HEADER).unwrap_or("2025-11-25").to_owned();
    let era = match MODERN_VERSIONS.contains(&version.as_str()) {
        true => Era::Modern { version },
        false => {
            Era::Handshake { version, session: header_text(&headers, SESSION_HEADER).map(str::to_owned) }
        }
    };
    if let Err(error) = state.services.visible_run(&caller, position.run).await {
        return json_reply(
            StatusCode::NOT_FOUND,
            &jsonrpc::failure(&position.request, &rpc_error(&error)),
            None,
        );
    }
    let call = Call {
        state,
        caller,
        era,
        request: position.request,
        progress: position.progress,
        run: position.run,
    };
    let (sender, receiver) = feed::channel();
    tokio::spawn(call.stream(position.seq, sender));
    feed::response(receiver)
}

/// End an MCP session: sessions hold nothing on the server, so there is none to end (405).
#[utoipa::path(delete, path = "/mcp", tag = "protocols", responses((status = 405, description = "Sessions hold no state here", content_type = "text/plain")))]
pub async fn delete_mcp(Authed(_caller): Authed) -> Response {
    method_not_allowed("sessions hold no state on this server: there is nothing to delete")
}

fn method_not_allowed(detail: &str) -> Response {
    let mut response = (StatusCode::METHOD_NOT_ALLOWED, detail.to_owned()).into_response();
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// The era and version of a request, from its `_meta` and headers. A current-revision request
/// must carry the envelope (`_meta` with its version and the client's capabilities) and headers
/// that repeat it (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for a call); an older one
/// follows `initialize` and carries its session.
fn era(headers: &HeaderMap, method: &str, params: &Value) -> Result<Era, (StatusCode, RpcError)> {
    let header_version = header_text(headers, VERSION_HEADER);
    let meta = params.get("_meta").and_then(Value::as_object);
    let meta_version = meta.and_then(|meta| meta.get(VERSION_META)).and_then(Value::as_str);
    let handshake_header = header_version.is_none_or(|version| HANDSHAKE_VERSIONS.contains(&version));
    let modern = meta_version.is_some()
        || method == "server/discover"
        || (!handshake_header && method != "initialize");
    if !modern {
        return handshake_era(headers, method, header_version);
    }
    let bad = |code: i64, message: String| Err((StatusCode::BAD_REQUEST, RpcError::new(code, message)));
    let (Some(version), true) = (meta_version, meta.is_some_and(|meta| meta.contains_key(CAPABILITIES_META)))
    else {
        return bad(
            INVALID_PARAMS,
            format!("params._meta must be an object carrying the required '{VERSION_META}' and '{CAPABILITIES_META}' envelope keys"),
        );
    };
    if [VERSION_HEADER, METHOD_HEADER, NAME_HEADER]
        .iter()
        .any(|name| headers.get_all(*name).iter().count() > 1)
    {
        return bad(
            HEADER_MISMATCH,
            "a routing header (mcp-protocol-version, mcp-method, mcp-name) is repeated".to_owned(),
        );
    }
    if header_version != Some(version) {
        return bad(
            HEADER_MISMATCH,
            format!("the {VERSION_HEADER} header does not match _meta's protocol version"),
        );
    }
    if header_text(headers, METHOD_HEADER) != Some(method) {
        return bad(
            HEADER_MISMATCH,
            "the mcp-method header does not match the request body's method".to_owned(),
        );
    }
    if method == "tools/call" {
        let name = params.get("name").and_then(Value::as_str);
        if header_text(headers, NAME_HEADER).is_some_and(|header| Some(header) != name) {
            return bad(
                HEADER_MISMATCH,
                "the mcp-name header does not match the request's tool name".to_owned(),
            );
        }
    }
    if !MODERN_VERSIONS.contains(&version) {
        return Err((StatusCode::BAD_REQUEST, unsupported(version)));
    }
    Ok(Era::Modern { version: version.to_owned() })
}

/// An older-revision request: `initialize`, or one of its session's.
fn handshake_era(
    headers: &HeaderMap,
    method: &str,
    header_version: Option<&str>,
) -> Result<Era, (StatusCode, RpcError)> {
    if method == "initialize" {
        return Ok(Era::Handshake { version: String::new(), session: None });
    }
    let Some(session) = header_text(headers, SESSION_HEADER) else {
        let message = format!(
            "Bad Request: Missing session ID (send initialize first, or the protocol version in _meta['{VERSION_META}'])"
        );
        return Err((StatusCode::BAD_REQUEST, RpcError::new(INVALID_REQUEST, message)));
    };
    // A client of 2025-03-26 may leave the version header out.
    let version = header_version.unwrap_or("2025-03-26");
    Ok(Era::Handshake { version: version.to_owned(), session: Some(session.to_owned()) })
}

fn unsupported(version: &str) -> RpcError {
    let supported: Vec<&str> = HANDSHAKE_VERSIONS.iter().chain(MODERN_VERSIONS.iter()).copied().collect();
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, format!("protocol version '{version}' is not supported"))
        .with_data(json!({"supported": supported, "requested": version}))
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim).filter(|value| !value.is_empty())
}

fn server_info() -> Value {
    json!({"name": "agentd", "title": "agentd crews", "version": env!("CARGO_PKG_VERSION")})
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

const INSTRUCTIONS: &str =
    "Each tool runs a crew of LLM agents on agentd and answers with its final output. \
A call can take minutes: ask for progress to follow its tasks.";

/// `initialize`: the client's version when it is one of the handshake's, else the newest; a new
/// session id.
fn initialize(id: &Value, params: &Value) -> Response {
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = match HANDSHAKE_VERSIONS.contains(&requested) {
        true => requested,
        false => HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1],
    };
    let result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    });
    let session = new_session_id();
    json_reply(StatusCode::OK, &jsonrpc::success(id, result), Some(&session))
}

/// A session id no one can guess: 128 random bits, as hex.
fn new_session_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // The system's randomness failing is not expected; a time-ordered id still works.
        return Uuid::now_v7().simple().to_string();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `server/discover` (2026-07-28).
fn discover() -> Value {
    let versions: Vec<&str> =
        MODERN_VERSIONS.iter().chain(HANDSHAKE_VERSIONS.iter().rev()).copied().collect();
    json!({
        "supportedVersions": versions,
        "capabilities": capabilities(),
        "instructions": INSTRUCTIONS,
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {SERVER_INFO_META: server_info()},
    })
}

/// A list result as the request's era wants it: the current revision's say how long a client may
/// cache them (not at all: a crew may be published or changed at any time; and they are the
/// key's tenant's own).
fn listed(era: &Era, mut result: Value) -> Value {
    if let (Era::Modern { .. }, Some(object)) = (era, result.as_object_mut()) {
        object.insert("ttlMs".into(), json!(0));
        object.insert("cacheScope".into(), json!("private"));
    }
    result
}

/// A result as the request's era wants it: the current revision's carry their type and the
/// server's name.
fn stamped(era: &Era, mut result: Value) -> Value {
    if let (Era::Modern { .. }, Some(object)) = (era, result.as_object_mut()) {
        object.insert("resultType".into(), json!("complete"));
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(SERVER_INFO_META.into(), server_info());
        }
    }
    result
}

fn ok(id: &Value, era: &Era, result: Value) -> Response {
    json_reply(StatusCode::OK, &jsonrpc::success(id, stamped(era, result)), None)
}

/// An error response, with the HTTP status the protocol gives its code: malformed requests 400,
/// the rest (an unknown method included: a 404 would tell the client its session is gone) 200.
fn err(id: &Value, error: &RpcError) -> Response {
    let status = match error.code {
        jsonrpc::PARSE_ERROR
        | INVALID_REQUEST
        | INVALID_PARAMS
        | HEADER_MISMATCH
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    json_reply(status, &jsonrpc::failure(id, error), None)
}

fn json_reply(status: StatusCode, message: &Value, session: Option<&str>) -> Response {
    let mut response = (status, axum::Json(message)).into_response();
    if let Some(session) = session.and_then(|session| HeaderValue::from_str(session).ok()) {
        response.headers_mut().insert(SESSION_HEADER, session);
    }
    response
}

fn rpc_error(error: &ServiceError) -> RpcError {
    RpcError::from_service(error, INVALID_PARAMS)
}

/// The tools: one per crew of the tenant published through MCP.
async fn list_tools(state: &AppState, caller: &Caller) -> Result<Vec<Value>, RpcError> {
    let crews = state.services.published_crews(caller, Protocol::Mcp).await.map_err(|e| rpc_error(&e))?;
    Ok(crews.iter().map(|crew| tool(&crew.spec)).collect())
}

/// A key without the scope a method needs: 403, with the JSON-RPC error a client shows.
fn forbidden(id: &Value, scope: Scope) -> Response {
    let error =
        RpcError::new(INVALID_REQUEST, format!("this key lacks the '{scope}' scope this method needs"));
    json_reply(StatusCode::FORBIDDEN, &jsonrpc::failure(id, &error), None)
}

fn tool(crew: &crate::domain::CrewSpec) -> Value {
    json!({
        "name": crew.name,
        "title": crew.name,
        "description": crew.summary(),
        "inputSchema": crew.inputs_json_schema(),
        "outputSchema": output_schema(),
        "annotations": {"title": crew.name, "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true},
    })
}

/// The structured content of a call's result.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "run_id": {"type": "string", "description": "The agentd run (GET /v1/runs/{id})"},
            "status": {"type": "string", "description": "How the run ended"},
            "output": {"type": "string", "description": "The final task's output"},
            "json": {"description": "The final output as JSON, when its task has an output schema"},
            "usage": {
                "type": "object",
                "properties": {
                    "llm_calls": {"type": "integer"},
                    "prompt_tokens": {"type": "integer"},
                    "completion_tokens": {"type": "integer"},
                    "cost_usd": {"type": "number"},
                },
            },
        },
        "required": ["run_id", "status", "output"],
    })
}

/// A legacy-era notification: `notifications/cancelled` cancels the call's run; the others need
/// nothing (`notifications/initialized`, progress of ours never asked).
async fn notified(state: &AppState, caller: &Caller, headers: &HeaderMap, method: &str, params: &Value) {
    // Cancelling needs what a call needs.
    if method != "notifications/cancelled" || !caller.may(Scope::Kickoff) {
        return;
    }
    let (Some(session), Some(request)) = (header_text(headers, SESSION_HEADER), params.get("requestId"))
    else {
        return;
    };
    let key = call_key(session, request);
    let runs = match state.services.runs_of_request(caller, &key).await {
        Ok(runs) => runs,
        Err(error) => {
            tracing::warn!(%error, "could not find the run of a cancelled MCP call");
            return;
        }
    };
    for run in runs {
        let audit = audit(caller, "run.cancel", "/mcp");
        if let Err(error) = state.services.cancel(caller, run, &audit).await {
            tracing::debug!(%error, %run, "an MCP call's run was not cancelled");
        }
    }
}

/// The idempotency key of a legacy call: its session and request id (hashed: ids may be long).
fn call_key(session: &str, request: &Value) -> String {
    request_key("mcp-call", &format!("{session}\n{request}"))
}

/// Where a call's response stream stands: its run and last `seq`, the request it answers and the
/// progress token it asked with. The SSE event id, so any replica can resume the stream.
#[derive(Debug, Clone, PartialEq)]
struct Position {
    run: RunId,
    seq: i64,
    request: Value,
    progress: Option<Value>,
}

impl Position {
    fn encode(&self) -> String {
        let value = json!([self.run.0, self.seq, self.request, self.progress]);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn decode(text: &str) -> Option<Self> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text.trim()).ok()?;
        let value: Value = serde_json::from_slice(&bytes).ok()?;
        let [run, seq, request, progress] = <[Value; 4]>::try_from(value.as_array()?.clone()).ok()?;
        let run = RunId(run.as_str()?.parse().ok()?);
        let seq = seq.as_i64().filter(|seq| *seq >= 0)?;
        if !(request.is_string() || request.is_i64() || request.is_u64()) {
            return None;
        }
        let progress = Some(progress).filter(|p| p.is_string() || p.is_i64() || p.is_u64());
        Some(Self { run, seq, request, progress })
    }
}

/// `tools/call`: kick the crew off and answer with a stream of its progress and its result.
async fn call_tool(
    state: AppState,
    caller: Caller,
    headers: HeaderMap,
    id: Value,
    era: Era,
    params: Value,
) -> Response {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return err(&id, &RpcError::invalid_params("tools/call needs the tool's `name`"));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return err(&id, &RpcError::invalid_params("`arguments` must be an object")),
    };
    let progress = params.get("_meta").and_then(|meta| meta.get("progressToken")).cloned();
    if let Err(error) = state.services.published_crew(&caller, name, Protocol::Mcp).await {
        let error = match error {
            ServiceError::NotFound(_) => RpcError::invalid_params(format!("unknown tool '{name}'")),
            other => rpc_error(&other),
        };
        return err(&id, &error);
    }
    let key = match &era {
        Era::Handshake { session: Some(session), .. } => Some(call_key(session, &id)),
        _ => None,
    };
    let metadata = Map::from_iter([("mcp_tool".to_owned(), json!(name))]);
    let kickoff = ProtocolKickoff {
        crew: name,
        inputs: arguments,
        metadata,
        idempotency_key: key.as_deref(),
        trace: crate::http::extract::kickoff_trace(&headers),
        ..Default::default()
    };
    let run = match state.services.protocol_kickoff(&caller, kickoff).await {
        Ok(run) => run,
        // The arguments do not fit the crew: an error the model can act on, not a protocol error.
        Err(ServiceError::Invalid(errors)) => {
            let text =
                errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("\n");
            let result = json!({"content": [{"type": "text", "text": format!("invalid arguments:\n{text}")}], "isError": true});
            return ok(&id, &era, result);
        }
        Err(error) => return err(&id, &rpc_error(&error)),
    };
    let call = Call { state, caller, era, request: id, progress, run: run.id };
    let (sender, receiver) = feed::channel();
    tokio::spawn(call.stream(0, sender));
    feed::response(receiver)
}

/// A call being answered on a response stream.
struct Call {
    state: AppState,
    caller: Caller,
    era: Era,
    request: Value,
    progress: Option<Value>,
    run: RunId,
}

impl Call {
    /// Follow the run after `after`, sending progress and then the result. A client that closes
    /// the stream of a current-revision call cancels it (unless the server is shutting down: the
    /// run goes on, on another replica).
    async fn stream(self, after: i64, sender: mpsc::Sender<feed::Event>) {
        let mut last = after;
        if self.era.primes() && sender.send(self.event(last, None)).await.is_err() {
            return;
        }
        let mut follow = self.state.follower.follow(&self.caller, self.run, after);
        loop {
            let step = tokio::select! {
                step = follow.next() => step,
                () = sender.closed() => {
                    self.client_left().await;
                    return;
                }
            };
            match step {
                Step::Event(envelope) => {
                    last = envelope.event.seq;
                    if envelope.event.event_type.is_terminal() {
                        self.finish(last, &sender).await;
                        return;
                    }
                    if let Some(message) = self.progress_message(&envelope) {
                        if sender.send(self.event(last, Some(message))).await.is_err() {
                            self.client_left().await;
                            return;
                        }
                    }
                }
                Step::Delta(_) => {}
                Step::End => return,
                Step::KeyEnded(why) => {
                    // The call's answer: an error (the run goes on; the client did not cancel it).
                    let message = jsonrpc::failure(&self.request, &RpcError::key_ended(why));
                    let _ = sender.send(self.event(last, Some(message))).await;
                    return;
                }
            }
        }
    }

    /// An SSE event: a message (or, with none, a priming event), with the position as its id in
    /// the legacy era (which resumes streams).
    fn event(&self, seq: i64, message: Option<Value>) -> feed::Event {
        let mut event = match message {
            Some(message) => feed::Event::data(message.to_string()).name("message"),
            None => feed::Event::data("").retry(RESUME_AFTER),
        };
        if self.era.resumes() {
            let position = Position {
                run: self.run,
                seq,
                request: self.request.clone(),
                progress: self.progress.clone(),
            };
            event = event.id(position.encode());
        }
        event
    }

    /// A progress notification for an event worth telling, when the client asked for progress.
    fn progress_message(&self, envelope: &Arc<Envelope>) -> Option<Value> {
        let token = self.progress.as_ref()?;
        let message = describe(envelope)?;
        let params = json!({"progressToken": token, "progress": envelope.event.seq, "message": message});
        Some(jsonrpc::notification("notifications/progress", params))
    }

    /// The result of the ended run.
    async fn finish(&self, seq: i64, sender: &mpsc::Sender<feed::Event>) {
        let message = match self.state.services.run(&self.caller, self.run).await {
            Ok(run) => jsonrpc::success(&self.request, stamped(&self.era, call_result(&run))),
            Err(error) => jsonrpc::failure(&self.request, &rpc_error(&error)),
        };
        let _ = sender.send(self.event(seq, Some(message))).await;
    }

    /// The client closed the stream: in the current revision that cancels the call.
    async fn client_left(&self) {
        if !matches!(self.era, Era::Modern { .. }) || self.state.follower.shutting_down() {
            return;
        }
        let audit = audit(&self.caller, "run.cancel", "/mcp");
        if let Err(error) = self.state.services.cancel(&self.caller, self.run, &audit).await {
            tracing::debug!(%error, run = %self.run, "an MCP call's run was not cancelled");
        }
    }
}

/// What an event says for a progress message, for the events worth telling.
fn describe(envelope: &Envelope) -> Option<String> {
    let event = &envelope.event;
    let task = event.task.as_deref().unwrap_or("?");
    let tool = || event.data.get("tool").and_then(Value::as_str).unwrap_or("a tool").to_owned();
    Some(match event.event_type {
        EventType::RunStarted => "started".to_owned(),
        EventType::TaskStarted => format!("task '{task}' started"),
        EventType::ToolStarted => format!("task '{task}': calling {}", tool()),
        EventType::ToolApprovalRequested => {
            format!(
                "task '{task}': {} awaits approval (POST /v1/runs/{}/tool-calls/…/approval)",
                tool(),
                event.run_id
            )
        }
        EventType::RunAwaitingInput => {
            format!("task '{task}': the answer awaits review (POST /v1/runs/{}/resume)", event.run_id)
        }
        EventType::TaskCompleted => format!("task '{task}' completed"),
        EventType::TaskFailed => format!("task '{task}' failed"),
        _ => return None,
    })
}

/// A `tools/call` result from an ended run.
fn call_result(run: &Run) -> Value {
    match run.status {
        RunStatus::Completed => {
            let output = run.output.as_ref();
            let text = output.map(|output| output.raw.clone()).unwrap_or_default();
            let mut structured = json!({
                "run_id": run.id.to_string(),
                "status": run.status.as_str(),
                "output": text,
                "usage": {
                    "llm_calls": run.usage.llm_calls,
                    "prompt_tokens": run.usage.prompt_tokens,
                    "completion_tokens": run.usage.completion_tokens,
                    "cost_usd": run.usage.cost_usd,
                },
            });
            if let Some(json) = output.and_then(|output| output.json.clone()) {
                structured["json"] = json;
            }
            json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": false})
        }
        status => {
            let why = match &run.error {
                Some(error) => {
                    format!("the run {} ({}): {}", status.as_str(), error.kind.as_str(), error.message)
                }
                None => format!("the run ended {}", status.as_str()),
            };
            json!({"content": [{"type": "text", "text": why}], "isError": true})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_refuse_forgeries() {
        let position = Position { run: RunId::new(), seq: 12, request: json!(4), progress: Some(json!("p")) };
        assert_eq!(Position::decode(&position.encode()), Some(position));
        assert_eq!(Position::decode("not base64!"), None);
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"["x", 1, 1, null]"#);
        assert_eq!(Position::decode(&forged), None);
    }

    #[test]
    fn eras_come_from_meta_headers_and_method() {
        let modern_headers = |version: &'static str, method: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(VERSION_HEADER, HeaderValue::from_static(version));
            headers.insert(METHOD_HEADER, HeaderValue::from_static(method));
            headers
        };
        let envelope = |version: &str| json!({"_meta": {VERSION_META: version, CAPABILITIES_META: {}}});
        let headers = modern_headers("2026-07-28", "tools/list");
        assert_eq!(
            era(&headers, "tools/list", &envelope("2026-07-28")),
            Ok(Era::Modern { version: "2026-07-28".into() })
        );
        let code = |headers: &HeaderMap, method: &str, params: &Value| {
            era(headers, method, params).unwrap_err().1.code
        };
        assert_eq!(
            code(&headers, "tools/list", &json!({"_meta": {VERSION_META: "2026-07-28"}})),
            INVALID_PARAMS
        );
        assert_eq!(
            code(&modern_headers("2025-06-18", "tools/list"), "tools/list", &envelope("2026-07-28")),
            HEADER_MISMATCH
        );
        assert_eq!(code(&headers, "tools/call", &envelope("2026-07-28")), HEADER_MISMATCH);
        let future = modern_headers("2099-01-01", "tools/list");
        assert_eq!(code(&future, "tools/list", &envelope("2099-01-01")), UNSUPPORTED_PROTOCOL_VERSION);
        let mut legacy = HeaderMap::new();
        legacy.insert(VERSION_HEADER, HeaderValue::from_static("2025-06-18"));
        assert_eq!(code(&legacy, "tools/list", &json!({})), INVALID_REQUEST);
        legacy.insert(SESSION_HEADER, HeaderValue::from_static("s1"));
        assert_eq!(
            era(&legacy, "tools/list", &json!({})),
            Ok(Era::Handshake { version: "2025-06-18".into(), session: Some("s1".into()) })
        );
        assert_eq!(
            era(&HeaderMap::new(), "initialize", &json!({})),
            Ok(Era::Handshake { version: String::new(), session: None })
        );
    }
}

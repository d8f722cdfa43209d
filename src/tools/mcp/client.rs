//! The client side of MCP's Streamable HTTP transport, over the guarded tool client: JSON-RPC
//! requests POSTed to the server's one endpoint, answered as JSON or as an event stream; the
//! session the server assigns at `initialize` (`Mcp-Session-Id`), re-initialised once when the
//! server has forgotten it (404); the negotiated `MCP-Protocol-Version` on every later request;
//! requests the server makes of us while it answers (`ping`) answered; `notifications/cancelled`
//! sent for a request abandoned before its answer (a cancelled run, a time-out). Headers whose
//! values are secrets are resolved for every request, so a rotation applies to the next one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::domain::crew::ValueSource;
use crate::sse::SseReader;
use crate::tools::http::Outbound;
use crate::tools::secrets::{self, Redactor, SecretSource};

/// The revision agentd asks for first.
pub const LATEST_PROTOCOL: &str = "2025-11-25";
/// The revisions agentd speaks (all those of the Streamable HTTP transport), newest first.
pub const SUPPORTED_PROTOCOLS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The most a response may hold (an image is up to 4 MiB, base64 makes it a third larger).
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The server answered with a JSON-RPC error.
    #[error("the MCP server answered error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// The server answered with an HTTP error.
    #[error("the MCP server answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the MCP server did not answer within {0} ms")]
    Timeout(u64),
    /// The connection failed, the egress guard refused it, or the answer made no sense.
    #[error("{0}")]
    Transport(String),
}

/// What the session knows after `initialize`.
#[derive(Debug, Clone)]
struct Session {
    id: Option<String>,
    protocol: String,
}

/// One MCP server, as one run reaches it.
pub struct McpClient {
    url: reqwest::Url,
    headers: Vec<(String, ValueSource)>,
    timeout: Duration,
    outbound: Arc<Outbound>,
    secrets: Arc<dyn SecretSource>,
    session: Mutex<Option<Session>>,
    next_id: AtomicU64,
}

impl McpClient {
    pub fn new(
        url: reqwest::Url,
        headers: Vec<(String, ValueSource)>,
        timeout: Duration,
        outbound: Arc<Outbound>,
        secrets: Arc<dyn SecretSource>,
    ) -> Self {
        Self {
            url,
            headers,
            timeout,
            outbound,
            secrets,
            session: Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// Call `method` with `params` and return its result. `redactor` collects the secrets sent,
    /// so that the caller can take them out of what comes back.
    pub async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        redactor: &mut Redactor,
    ) -> Result<Value, McpError> {
        for attempt in 0..2 {
            let session = self.session(redactor).await?;
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let mut guard = CancelOnDrop { client: Some(self.clone()), id, session: session.clone() };
            let answer = self.exchange(&message, Some(&session), redactor).await;
            guard.client = None;
            match answer {
                // The server forgot the session (restarted, expired): start a new one, once.
                Err(McpError::Http { status: 404, .. }) if attempt == 0 && session.id.is_some() => {
                    self.forget(&session).await;
                }
                Err(error) => return Err(error),
                Ok(response) => return Ok(response.unwrap_or(Value::Null)),
            }
        }
        Err(McpError::Transport("the MCP server forgot the session twice in a row".into()))
    }

    /// The current session, initialising one if there is none.
    async fn session(&self, redactor: &mut Redactor) -> Result<Session, McpError> {
        let mut current = self.session.lock().await;
        if let Some(session) = current.as_ref() {
            return Ok(session.clone());
        }
        let session = self.initialize(redactor).await?;
        *current = Some(session.clone());
        Ok(session)
    }

    async fn forget(&self, stale: &Session) {
        let mut current = self.session.lock().await;
        if current.as_ref().is_some_and(|s| s.id == stale.id) {
            *current = None;
        }
    }

    /// `initialize` with the newest revision (the server answers the one it speaks: one of ours,
    /// or the session is refused), then `notifications/initialized`.
    async fn initialize(&self, redactor: &mut Redactor) -> Result<Session, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "agentd", "version": env!("CARGO_PKG_VERSION")},
        }});
        let (result, session_id) = self.post(&message, None, redactor).await?;
        let result =
            result.ok_or_else(|| McpError::Transport("the MCP server did not answer initialize".into()))?;
        let protocol = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        if !SUPPORTED_PROTOCOLS.contains(&protocol) {
            return Err(McpError::Transport(format!(
                "the MCP server speaks protocol revision '{protocol}'; agentd speaks {}",
                SUPPORTED_PROTOCOLS.join(", ")
            )));
        }
        let session = Session { id: session_id, protocol: protocol.to_owned() };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.exchange(&initialized, Some(&session), redactor).await?;
        Ok(session)
    }

    /// POST `message` in `session` and return the response's result (none for a notification).
    async fn exchange(
        &self,
        message: &Value,
        session: Option<&Session>,
        redactor: &mut Redactor,
    ) -> Result<Option<Value>, McpError> {
        self.post(message, session, redactor).await.map(|(result, _)| result)
    }

    /// POST one message; the result of the response to it (if it is a request), and the session
    /// id the server gave.
    async fn post(
        &self,
        message: &Value,
        session: Option<&Session>,
        redactor: &mut Redactor,
    ) -> Result<(Option<Value>, Option<String>), McpError> {
        let request = self.build(message, session, redactor).await?;
        let response = crate::telemetry::inject(request).send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let session_id =
            response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let media_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
            .unwrap_or_default();
        let wanted = message.get("id").filter(|_| message.get("method").is_some()).cloned();
        if !status.is_success() {
            let body = read_text(response, 4096).await.unwrap_or_default();
            return Err(McpError::Http { status: status.as_u16(), body: body.trim().to_owned() });
        }
        let Some(wanted) = wanted else {
            // A notification: 202 Accepted and no body.
            return Ok((None, session_id));
        };
        if status == StatusCode::ACCEPTED {
            return Err(McpError::Transport("the MCP server accepted a request without answering it".into()));
        }
        let result = match media_type.as_str() {
            "text/event-stream" => self.read_stream(response, &wanted, session).await?,
            _ => {
                let body = read_text(response, MAX_RESPONSE_BYTES).await.map_err(|e| self.transport(e))?;
                let value: Value = serde_json::from_str(&body)
                    .map_err(|e| McpError::Transport(format!("the MCP server's answer is not JSON: {e}")))?;
                // A batch answer holds ours among others.
                let found = match value {
                    Value::Array(items) => items.into_iter().find(|m| m.get("id") == Some(&wanted)),
                    one => Some(one),
                };
                found.ok_or_else(|| {
                    McpError::Transport("the MCP server's answer is not the response".into())
                })?
            }
        };
        Ok((Some(response_result(result)?), session_id))
    }

    /// The request that POSTs `message` in `session`, with the crew's headers (secrets read now).
    async fn build(
        &self,
        message: &Value,
        session: Option<&Session>,
        redactor: &mut Redactor,
    ) -> Result<reqwest::RequestBuilder, McpError> {
        let headers = secrets::resolve(self.secrets.as_ref(), &self.headers, redactor)
            .await
            .map_err(McpError::Transport)?;
        let mut request = self
            .outbound
            .request(reqwest::Method::POST, &self.url)
            .map_err(McpError::Transport)?
            .timeout(self.timeout)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            let value = HeaderValue::from_str(&value).map_err(|_| {
                McpError::Transport(format!("the value of header '{name}' cannot be sent in a header"))
            })?;
            request = request.header(name.as_str(), value);
        }
        if let Some(session) = session {
            request = request.header(VERSION_HEADER, &session.protocol);
            if let Some(id) = &session.id {
                request = request.header(SESSION_HEADER, id);
            }
        }
        Ok(request.json(message))
    }

    /// POST a message that gets no response (a notification, or our answer to the server's
    /// request): the server acknowledges it with 202.
    async fn send(&self, message: &Value, session: Option<&Session>) -> Result<(), McpError> {
        let mut redactor = Redactor::default();
        let response = crate::telemetry::inject(self.build(message, session, &mut redactor).await?)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        match response.status().is_success() {
            true => Ok(()),
            false => Err(McpError::Http { status: response.status().as_u16(), body: String::new() }),
        }
    }

    /// Read an event stream until the response to `wanted`, answering the server's own requests.
    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        wanted: &Value,
        session: Option<&Session>,
    ) -> Result<Value, McpError> {
        let mut reader = SseReader::default();
        loop {
            let chunk = response.chunk().await.map_err(|e| self.transport(e))?;
            let Some(chunk) = chunk else {
                return Err(McpError::Transport("the MCP server ended its stream without answering".into()));
            };
            for data in reader.feed(&chunk, MAX_RESPONSE_BYTES).map_err(McpError::Transport)? {
                if data.trim().is_empty() {
                    continue;
                }
                let Ok(message) = serde_json::from_str::<Value>(&data) else { continue };
                if message.get("method").is_none() && message.get("id") == Some(wanted) {
                    return Ok(message);
                }
                if let (Some(method), Some(id)) =
                    (message.get("method").and_then(Value::as_str), message.get("id"))
                {
                    self.answer_server(method, id.clone(), session).await;
                }
            }
        }
    }

    /// Answer a request the server made of us: `ping` with an empty result, anything else (we
    /// declare no capabilities) with "method not found".
    async fn answer_server(&self, method: &str, id: Value, session: Option<&Session>) {
        let answer = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "agentd does not offer this"}})
            }
        };
        if let Err(error) = self.send(&answer, session).await {
            tracing::debug!(%error, method, "could not answer the MCP server's request");
        }
    }

    fn transport(&self, error: reqwest::Error) -> McpError {
        if error.is_timeout() {
            return McpError::Timeout(self.timeout.as_millis() as u64);
        }
        McpError::Transport(crate::outbound::describe(error))
    }
}

/// Sends `notifications/cancelled` for request `id` unless disarmed (`client` taken) first.
struct CancelOnDrop {
    client: Option<Arc<McpClient>>,
    id: u64,
    session: Session,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else { return };
        let (id, session) = (self.id, self.session.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            let notice = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the agentd run stopped waiting for it"}});
            if let Err(error) = client.send(&notice, Some(&session)).await {
                tracing::debug!(%error, "could not tell the MCP server a request was cancelled");
            }
        });
    }
}

/// The result of a JSON-RPC response, or its error.
fn response_result(mut message: Value) -> Result<Value, McpError> {
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("no message");
        return Err(McpError::Rpc { code, message: text.to_owned() });
    }
    match message.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(McpError::Transport("the MCP server's response has no result".into())),
    }
}

async fn read_text(mut response: reqwest::Response, limit: usize) -> Result<String, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

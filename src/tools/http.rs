//! Outbound HTTP for tools: the guarded client every tool request uses (egress policy checked on
//! the URL, on every redirect and on every resolved address), bounded response reading, and the
//! HTTP tools a crew declares.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::secrets::{self, Redactor, SecretSource};
use super::{image_result, CallInfo, Tool, ToolFuture, ToolInfo, ToolResult, MAX_IMAGE_BYTES};
use crate::domain::crew::{HttpMethod, ToolSpec, ValueSource};
use crate::outbound::describe;
use crate::outbound::egress::{guarded_client, EgressError, EgressPolicy};

/// The client and limits of outbound tool requests.
#[derive(Debug, Clone)]
pub struct Outbound {
    client: reqwest::Client,
    policy: Arc<EgressPolicy>,
    /// Longest response text handed to the model.
    pub max_response_bytes: usize,
}

impl Outbound {
    pub fn new(
        policy: EgressPolicy,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, EgressError> {
        let policy = Arc::new(policy);
        let client = guarded_client(policy.clone(), timeout)?;
        Ok(Self { client, policy, max_response_bytes })
    }
}

impl Outbound {
    /// A request through the guarded client, once the egress policy allows `url` (each resolved
    /// address and redirect is checked again as the request goes).
    pub fn request(&self, method: Method, url: &reqwest::Url) -> Result<reqwest::RequestBuilder, String> {
        self.policy.check_url(url).map_err(|e| e.to_string())?;
        Ok(self.client.request(method, url.clone()))
    }
}

/// One outbound tool request.
pub struct Request<'a> {
    pub method: Method,
    pub url: &'a str,
    /// Sent as JSON.
    pub body: Option<&'a Value>,
    /// The client's own when absent.
    pub timeout: Option<Duration>,
    /// Besides `Idempotency-Key`, which comes from the call.
    pub headers: Vec<(String, String)>,
}

/// Send one request (with the call's `Idempotency-Key`) and return the response text
/// (truncated), or an error observation.
pub async fn fetch(outbound: &Outbound, request: Request<'_>, call: &CallInfo) -> ToolResult {
    let Request { method, url, body, timeout, headers } = request;
    let url = reqwest::Url::parse(url).map_err(|e| format!("invalid URL '{url}': {e}"))?;
    outbound.policy.check_url(&url).map_err(|e| e.to_string())?;
    let mut request = outbound.client.request(method, url).header("idempotency-key", &call.idempotency_key);
    for (name, value) in headers {
        let value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of header '{name}' cannot be sent in a header"))?;
        request = request.header(name.as_str(), value);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    if let Some(timeout) = timeout {
        request = request.timeout(timeout);
    }
    let response = crate::telemetry::inject(request).send().await.map_err(describe)?;
    let status = response.status();
    let media_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .filter(|m| m.starts_with("image/"));
    if let (true, Some(media_type)) = (status.is_success(), media_type) {
        let bytes = read_bytes(response, MAX_IMAGE_BYTES).await?;
        return Ok(image_result(&media_type, &bytes));
    }
    let text = read_limited(response, outbound.max_response_bytes).await?;
    if status.is_success() {
        Ok(text)
    } else {
        Err(format!("HTTP {status}: {text}"))
    }
}

/// Read a whole body of at most `limit` bytes; a larger one is an error.
async fn read_bytes(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        if bytes.len() + chunk.len() > limit {
            return Err(format!("the image is larger than the limit of {limit} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Read at most `limit` bytes of the body, marking a cut.
async fn read_limited(mut response: reqwest::Response, limit: usize) -> ToolResult {
    let mut bytes = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        let room = limit.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            truncated = true;
            break;
        }
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if truncated {
        text.push_str("\n[response truncated]");
    }
    Ok(text)
}

/// A crew's HTTP tool: arguments go as query parameters (GET) or a JSON body (POST), with the
/// crew's headers and query parameters, whose secrets are read when each request is sent and
/// redacted from what it returns.
pub struct HttpTool {
    info: ToolInfo,
    url: String,
    method: HttpMethod,
    timeout: Duration,
    headers: Vec<(String, ValueSource)>,
    query: Vec<(String, ValueSource)>,
    outbound: Arc<Outbound>,
    secrets: Arc<dyn SecretSource>,
}

impl HttpTool {
    pub fn new(spec: &ToolSpec, outbound: Arc<Outbound>, secrets: Arc<dyn SecretSource>) -> Self {
        let info = ToolInfo {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            idempotent: spec.is_idempotent(),
        };
        let pairs = |map: &std::collections::BTreeMap<String, ValueSource>| {
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>()
        };
        Self {
            info,
            url: spec.http.url.clone(),
            method: spec.http.method,
            timeout: Duration::from_millis(spec.http.timeout_ms),
            headers: pairs(&spec.http.headers),
            query: pairs(&spec.http.query),
            outbound,
            secrets,
        }
    }

    async fn send(&self, arguments: Value, call: &CallInfo, redactor: &mut Redactor) -> ToolResult {
        let headers = secrets::resolve(self.secrets.as_ref(), &self.headers, redactor).await?;
        let query = secrets::resolve(self.secrets.as_ref(), &self.query, redactor).await?;
        let (url, body) = match self.method {
            HttpMethod::Post => (with_query(&self.url, &query, None)?, Some(&arguments)),
            HttpMethod::Get => (with_query(&self.url, &query, Some(&arguments))?, None),
        };
        let method = match self.method {
            HttpMethod::Post => Method::POST,
            HttpMethod::Get => Method::GET,
        };
        let request = Request { method, url: &url, body, timeout: Some(self.timeout), headers };
        fetch(&self.outbound, request, call).await
    }
}

impl Tool for HttpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn kind(&self) -> (&'static str, Option<&str>) {
        ("http", None)
    }

    fn call(&self, arguments: Value, call: CallInfo) -> ToolFuture<'_> {
        Box::pin(async move {
            let mut redactor = Redactor::default();
            let mut result = self.send(arguments, &call, &mut redactor).await;
            match &mut result {
                Ok(text) | Err(text) => redactor.redact(text),
            }
            result
        })
    }
}

/// The URL with the crew's `fixed` parameters, then each argument (strings as they are, others as
/// JSON).
fn with_query(url: &str, fixed: &[(String, String)], arguments: Option<&Value>) -> Result<String, String> {
    let mut url = reqwest::Url::parse(url).map_err(|e| format!("invalid tool URL: {e}"))?;
    let fields = arguments.and_then(Value::as_object);
    if fixed.is_empty() && fields.is_none_or(|f| f.is_empty()) {
        return Ok(url.to_string());
    }
    {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in fixed {
            pairs.append_pair(name, value);
        }
        for (name, value) in fields.into_iter().flatten() {
            match value {
                Value::String(text) => pairs.append_pair(name, text),
                other => pairs.append_pair(name, &other.to_string()),
            };
        }
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_holds_the_crews_parameters_then_the_arguments() {
        let fixed = [("key".to_owned(), "a b&c".to_owned())];
        let url = with_query("https://x.example/p?v=1", &fixed, Some(&serde_json::json!({"n": 2, "s": "t"})))
            .expect("url");
        assert_eq!(url, "https://x.example/p?v=1&key=a+b%26c&n=2&s=t");
        assert_eq!(with_query("https://x.example/p", &[], None).expect("url"), "https://x.example/p");
    }
}

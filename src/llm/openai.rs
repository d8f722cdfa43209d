//! An OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama, LiteLLM, llama.cpp, …):
//! request and response mapping, transient-failure retries, and error classification. The API
//! key is sent in the `Authorization` header and nowhere else: it is scrubbed from every message.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::retry::Backoff;
use super::transport::{
    classify, provider_error, transport_failure, Attempt, RateLimitHook, RetryGate, Transport,
};
use super::types::{
    ChatMessage, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmErrorKind, ResponseSchema, TokenUsage,
    ToolCallRequest, ToolDefinition,
};
use super::{EmbedFuture, Embeddings, LlmClient, LlmFuture};
use crate::outbound::parse_retry_after;
use crate::outbound::Secret;

/// Where the chat completions of a model are, and how the key is sent.
#[derive(Debug, Clone)]
enum Endpoint {
    /// `<base>/chat/completions`, the key as a bearer token (OpenAI and compatible servers).
    OpenAi(String),
    /// Azure OpenAI: `<resource>/openai/deployments/<model>/chat/completions?api-version=…`, the
    /// key in the `api-key` header. The model of a request names the deployment.
    Azure { resource: String, api_version: String },
}

/// A client of one OpenAI-compatible provider.
#[derive(Clone)]
pub struct OpenAiClient {
    transport: Transport,
    endpoint: Endpoint,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl OpenAiClient {
    /// A client for the provider at `base_url` (e.g. `https://api.openai.com/v1`).
    pub fn new(http: reqwest::Client, base_url: &str, api_key: Option<Secret>, backoff: Backoff) -> Self {
        let endpoint = Endpoint::OpenAi(format!("{}/chat/completions", base_url.trim_end_matches('/')));
        Self { transport: Transport::new(http, api_key, backoff), endpoint }
    }

    /// A client for the Azure OpenAI resource at `resource` (e.g.
    /// `https://my-resource.openai.azure.com`), calling API version `api_version`.
    pub fn azure(
        http: reqwest::Client,
        resource: &str,
        api_version: &str,
        api_key: Option<Secret>,
        backoff: Backoff,
    ) -> Self {
        let endpoint = Endpoint::Azure {
            resource: resource.trim_end_matches('/').to_owned(),
            api_version: api_version.to_owned(),
        };
        Self { transport: Transport::new(http, api_key, backoff), endpoint }
    }

    /// Call `hook` with the wait whenever the provider answers 429.
    pub fn on_rate_limit(mut self, hook: RateLimitHook) -> Self {
        self.transport.on_rate_limit = Some(hook);
        self
    }

    /// Ask `gate`, if any, how long to wait before each retry (see [`RetryGate`]).
    pub fn before_retry(mut self, gate: Option<RetryGate>) -> Self {
        self.transport.before_retry = gate;
        self
    }

    fn url(&self, model: &str) -> String {
        match &self.endpoint {
            Endpoint::OpenAi(url) => url.clone(),
            Endpoint::Azure { resource, api_version } => {
                let deployment: String = url::form_urlencoded::byte_serialize(model.as_bytes()).collect();
                let version: String = url::form_urlencoded::byte_serialize(api_version.as_bytes()).collect();
                format!("{resource}/openai/deployments/{deployment}/chat/completions?api-version={version}")
            }
        }
    }

    #[tracing::instrument(skip_all, fields(model = %request.model), err)]
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request_body(request)?;
        let url = self.url(&request.model);
        let last = std::sync::atomic::AtomicU32::new(1);
        let mut response = self
            .transport
            .with_retries(|attempt| {
                last.store(attempt, std::sync::atomic::Ordering::Relaxed);
                self.attempt(&url, &body, request, attempt)
            })
            .await?;
        response.retries = last.into_inner().saturating_sub(1);
        super::estimate::complete_usage(request, &mut response).await;
        Ok(response)
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Bytes,
        request: &ChatRequest,
        attempt: u32,
    ) -> Result<ChatResponse, Attempt> {
        let timeout = self.transport.policy().request_timeout;
        let response = self.send(url, body.clone(), timeout).await?;
        if let (true, true, Some(sink)) =
            (response.status().is_success(), is_event_stream(&response), &request.deltas)
        {
            if let Some(answer) = read_stream(response, sink, attempt, &request.stop, timeout).await? {
                return Ok(answer);
            }
            // A stream that closed without a single event: the server failed after answering
            // 200 (llama.cpp's server does, for a prompt over its context window). Asked without
            // streaming, it answers with its error (or the reply). The server may drop the
            // connection it failed on as the request reuses it: a fresh one is tried once.
            let unstreamed =
                request_body(&ChatRequest { deltas: None, ..request.clone() }).map_err(Attempt::fatal)?;
            let response = match self.send(url, unstreamed.clone(), timeout).await {
                Err(failed) if failed.transient && failed.error.kind != LlmErrorKind::Timeout => {
                    self.send(url, unstreamed, timeout).await?
                }
                sent => sent?,
            };
            return read_answer(response, timeout).await;
        }
        read_answer(response, timeout).await
    }

    /// POST `body` to `url` with the key.
    async fn send(&self, url: &str, body: Bytes, timeout: Duration) -> Result<reqwest::Response, Attempt> {
        let mut builder = self
            .transport
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(timeout);
        if let Some(key) = &self.transport.api_key {
            builder = match self.endpoint {
                Endpoint::OpenAi(_) => builder.bearer_auth(key.expose()),
                Endpoint::Azure { .. } => builder.header("api-key", key.expose()),
            };
        }
        crate::telemetry::inject(builder).send().await.map_err(|e| transport_failure(e, timeout))
    }
}

/// Read a whole (not streamed) answer: the completion, or the provider's error.
async fn read_answer(response: reqwest::Response, timeout: Duration) -> Result<ChatResponse, Attempt> {
    let status = response.status();
    let retry_after = parse_retry_after(response.headers(), SystemTime::now());
    let text = response.text().await.map_err(|e| transport_failure(e, timeout))?;
    if status.is_success() {
        return parse_response(&text).map_err(Attempt::fatal);
    }
    Err(Transport::failed(status, &text, retry_after))
}

/// Is the answer a stream of server-sent events?
pub(super) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

impl LlmClient for OpenAiClient {
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        Box::pin(self.complete(request))
    }

    fn system(&self) -> &'static str {
        match self.endpoint {
            Endpoint::OpenAi(_) => "openai",
            Endpoint::Azure { .. } => "azure.ai.openai",
        }
    }

    fn embed<'a>(&'a self, model: &'a str, inputs: &'a [String]) -> EmbedFuture<'a> {
        Box::pin(self.embeddings(model, inputs))
    }
}

impl OpenAiClient {
    /// `<base>/embeddings`, or the Azure deployment's.
    fn embeddings_url(&self, model: &str) -> String {
        match &self.endpoint {
            Endpoint::OpenAi(url) => format!("{}/embeddings", url.trim_end_matches("/chat/completions")),
            Endpoint::Azure { resource, api_version } => {
                let deployment: String = url::form_urlencoded::byte_serialize(model.as_bytes()).collect();
                let version: String = url::form_urlencoded::byte_serialize(api_version.as_bytes()).collect();
                format!("{resource}/openai/deployments/{deployment}/embeddings?api-version={version}")
            }
        }
    }

    /// `POST /embeddings` with every input in one request (the caller batches).
    #[tracing::instrument(skip_all, fields(model = %model, inputs = inputs.len()), err)]
    async fn embeddings(&self, model: &str, inputs: &[String]) -> Result<Embeddings, LlmError> {
        if inputs.is_empty() {
            return Ok(Embeddings { vectors: Vec::new(), tokens: 0, estimated: false });
        }
        let body = serde_json::json!({"model": model, "input": inputs, "encoding_format": "float"});
        let body = serde_json::to_vec(&body).map(Bytes::from).map_err(|e| {
            LlmError::new(LlmErrorKind::Other, format!("the request does not serialise: {e}"))
        })?;
        let url = self.embeddings_url(model);
        let timeout = self.transport.policy().request_timeout;
        let mut embedded = self
            .transport
            .with_retries(|_| async {
                let response = self.send(&url, body.clone(), timeout).await?;
                let status = response.status();
                let retry_after = parse_retry_after(response.headers(), SystemTime::now());
                let text = response.text().await.map_err(|e| transport_failure(e, timeout))?;
                if !status.is_success() {
                    return Err(Transport::failed(status, &text, retry_after));
                }
                parse_embeddings(&text, inputs.len()).map_err(Attempt::fatal)
            })
            .await?;
        if embedded.tokens == 0 {
            embedded.tokens = inputs.iter().map(|input| super::estimate::count(input)).sum();
            embedded.estimated = true;
        }
        Ok(embedded)
    }
}

/// An embeddings answer: `{"data": [{"index", "embedding"}], "usage": {"prompt_tokens"}}`, one
/// finite vector per input, all of one length.
fn parse_embeddings(text: &str, expected: usize) -> Result<Embeddings, LlmError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Vec<Item>,
        #[serde(default)]
        usage: Option<Usage>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        index: Option<usize>,
        embedding: Vec<f32>,
    }
    #[derive(serde::Deserialize)]
    struct Usage {
        #[serde(default)]
        prompt_tokens: u64,
    }
    let malformed =
        |why: String| LlmError::new(LlmErrorKind::Other, format!("malformed embeddings answer: {why}"));
    let answer: Answer = serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    if answer.data.len() != expected {
        return Err(malformed(format!("{} vectors for {expected} inputs", answer.data.len())));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in answer.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(position);
        match slots.get_mut(index) {
            Some(slot @ None) => *slot = Some(item.embedding),
            _ => return Err(malformed(format!("index {index} is out of range or repeated"))),
        }
    }
    let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
    let dims = vectors.first().map_or(0, Vec::len);
    if dims == 0 || vectors.iter().any(|v| v.len() != dims || v.iter().any(|x| !x.is_finite())) {
        return Err(malformed("vectors must be non-empty, finite and of one length".into()));
    }
    let tokens = answer.usage.map_or(0, |u| u.prompt_tokens);
    Ok(Embeddings { vectors, tokens, estimated: false })
}

/// The JSON body of a chat-completions request, serialised straight from the request (nothing
/// is copied into an intermediate `Value`).
fn request_body(request: &ChatRequest) -> Result<Bytes, LlmError> {
    let body = WireRequest {
        model: &request.model,
        messages: request.messages.iter().map(WireMessage::from).collect(),
        tools: request.tools.iter().map(|tool| WireTool { kind: "function", function: tool }).collect(),
        stop: &request.stop,
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        stream: request.deltas.is_some(),
        stream_options: request.deltas.is_some().then_some(StreamOptions { include_usage: true }),
        response_format: request
            .response_schema
            .as_ref()
            .map(|schema| ResponseFormat { kind: "json_schema", json_schema: schema.as_ref() }),
    };
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|e| LlmError::new(LlmErrorKind::Other, format!("the request does not serialise: {e}")))
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

/// `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: &'a ResponseSchema,
}

impl Serialize for ResponseSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ResponseSchema", 3)?;
        out.serialize_field("name", &self.name)?;
        out.serialize_field("schema", &self.schema)?;
        out.serialize_field("strict", &self.strict)?;
        out.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolDefinition,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        let text = message.content.as_deref();
        let content = if message.images.is_empty() {
            WireContent::Text(text)
        } else {
            let images = message.images.iter().map(|image| WirePart::ImageUrl {
                image_url: WireUrl { url: format!("data:{};base64,{}", image.media_type, image.data) },
            });
            let text = WirePart::Text { text: text.unwrap_or_default() };
            WireContent::Parts(std::iter::once(text).chain(images).collect())
        };
        let tool_calls = message
            .tool_calls
            .iter()
            .map(|call| WireCall {
                id: &call.id,
                kind: "function",
                function: WireFunction { name: &call.name, arguments: &call.arguments },
            })
            .collect();
        Self {
            role: message.role.as_str(),
            content,
            tool_calls,
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

/// A message's content: text (`null` when absent), or parts when it carries images.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(Option<&'a str>),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: WireUrl },
}

#[derive(Serialize)]
struct WireUrl {
    url: String,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// The longest streamed answer read, in bytes.
const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;

/// Read a streamed answer (`chat.completion.chunk` events): the text is handed to `sink` as it
/// arrives and assembled with the tool calls (by index), the finish reason and the usage. The
/// text stops at the first stop sequence even if the provider goes on (the rest is not read), so
/// ReAct's stop words hold for providers that ignore `stop`. A stream that ends before its
/// finish reason or `[DONE]` was cut: a transient failure, retried like a lost connection. One
/// that ends (or breaks) before its first event is `None`.
async fn read_stream(
    mut response: reqwest::Response,
    sink: &DeltaSink,
    attempt: u32,
    stop: &[String],
    timeout: Duration,
) -> Result<Option<ChatResponse>, Attempt> {
    let mut reader = crate::sse::SseReader::default();
    let mut answer = StreamedAnswer::default();
    let mut any = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(error) if any || error.is_timeout() => return Err(transport_failure(error, timeout)),
            Err(_) => return Ok(None),
        };
        let events = reader.feed(&chunk, MAX_STREAM_BYTES).map_err(|message| Attempt {
            error: LlmError::new(LlmErrorKind::Other, format!("the provider's stream: {message}")),
            transient: false,
        })?;
        for data in events {
            any = true;
            if answer.take(&data, sink, attempt, stop)? {
                return Ok(Some(answer.finish(sink, attempt)));
            }
        }
    }
    if answer.finish_reason.is_some() {
        return Ok(Some(answer.finish(sink, attempt)));
    }
    if !any {
        return Ok(None);
    }
    let message = "the provider's stream ended before the answer did (cut mid-reply)";
    Err(Attempt { error: LlmError::new(LlmErrorKind::Other, message), transient: true })
}

/// A streamed answer as it is assembled.
#[derive(Default)]
struct StreamedAnswer {
    content: Option<String>,
    /// Tool calls by index: id, name, arguments so far.
    calls: Vec<(Option<String>, String, String)>,
    finish_reason: Option<String>,
    /// `None` until a chunk carries it (some servers never send it; a stream cut at a stop
    /// sequence is not read to it).
    usage: Option<TokenUsage>,
    /// The text stopped at a stop sequence: later text is dropped.
    stopped: bool,
    /// The reply's id and model, from its chunks.
    id: Option<String>,
    model: Option<String>,
    /// Bytes of `content` handed to the sink (the rest may begin a stop sequence).
    sent: usize,
}

impl StreamedAnswer {
    /// Take one event's data; `true` when the answer is complete (`[DONE]`, or a stop sequence).
    fn take(&mut self, data: &str, sink: &DeltaSink, attempt: u32, stop: &[String]) -> Result<bool, Attempt> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| Attempt {
            error: LlmError::new(LlmErrorKind::Other, format!("unreadable provider stream: {e}")),
            transient: false,
        })?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let (code, message) = provider_error(data);
            let kind = classify(StatusCode::OK, code.as_deref(), &message);
            return Err(Attempt { error: LlmError::new(kind, message), transient: false });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(read_usage(usage));
        }
        if self.id.is_none() {
            self.id = chunk.get("id").and_then(Value::as_str).map(str::to_owned);
            self.model = chunk.get("model").and_then(Value::as_str).map(str::to_owned);
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(false) };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if self.add_text(text, sink, attempt, stop) {
                return Ok(true);
            }
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if index >= 128 {
                continue;
            }
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, Default::default);
            }
            let (id, name, arguments) = &mut self.calls[index];
            if let Some(new) = call.get("id").and_then(Value::as_str) {
                *id = Some(new.to_owned());
            }
            let function = call.get("function").unwrap_or(&Value::Null);
            if let Some(piece) = function.get("name").and_then(Value::as_str) {
                name.push_str(piece);
            }
            if let Some(piece) = function.get("arguments").and_then(Value::as_str) {
                arguments.push_str(piece);
            }
        }
        Ok(false)
    }

    /// Add text, handing to `sink` what can no longer be the start of a stop sequence; `true`
    /// when a stop sequence ended it.
    fn add_text(&mut self, text: &str, sink: &DeltaSink, attempt: u32, stop: &[String]) -> bool {
        if self.stopped || text.is_empty() {
            return self.stopped;
        }
        let content = self.content.get_or_insert_with(String::new);
        let before = content.len();
        content.push_str(text);
        // A stop sequence may straddle chunks: look from where one could have begun.
        let longest = stop.iter().map(String::len).max().unwrap_or(0);
        let from = floor_boundary(content, before.saturating_sub(longest));
        let cut =
            stop.iter().filter(|s| !s.is_empty()).filter_map(|s| content[from..].find(s.as_str())).min();
        if let Some(at) = cut {
            content.truncate(from + at);
            self.stopped = true;
            self.finish_reason = Some("stop".to_owned());
            self.flush(sink, attempt);
            return true;
        }
        let safe = floor_boundary(content, content.len().saturating_sub(longest.saturating_sub(1)));
        if safe > self.sent {
            (sink.0)(attempt, &content[self.sent..safe]);
            self.sent = safe;
        }
        false
    }

    /// Hand the sink whatever text it has not had.
    fn flush(&mut self, sink: &DeltaSink, attempt: u32) {
        if let Some(content) = &self.content {
            if content.len() > self.sent {
                (sink.0)(attempt, &content[self.sent..]);
                self.sent = content.len();
            }
        }
    }

    fn finish(mut self, sink: &DeltaSink, attempt: u32) -> ChatResponse {
        self.flush(sink, attempt);
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(_, (_, name, _))| !name.is_empty())
            .map(|(i, (id, name, arguments))| ToolCallRequest {
                id: id.unwrap_or_else(|| format!("call_{i}")),
                name,
                arguments: if arguments.is_empty() { "{}".to_owned() } else { arguments },
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            finish_reason: self.finish_reason,
            usage: self.usage.unwrap_or_else(TokenUsage::unreported),
            response_id: self.id,
            response_model: self.model,
            retries: 0,
        }
    }
}

/// The char boundary at or before `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Read a successful answer: the first choice's text and tool calls, and the usage.
fn parse_response(text: &str) -> Result<ChatResponse, LlmError> {
    let unreadable =
        |why: &str| LlmError::new(LlmErrorKind::Other, format!("unreadable provider answer: {why}"));
    let body: Value = serde_json::from_str(text).map_err(|e| unreadable(&e.to_string()))?;
    if body.get("error").is_some_and(|e| !e.is_null()) {
        let (code, message) = provider_error(text);
        return Err(LlmError::new(classify(StatusCode::OK, code.as_deref(), &message), message));
    }
    let choice = body.pointer("/choices/0").ok_or_else(|| unreadable("no choices"))?;
    let message = choice.get("message").ok_or_else(|| unreadable("no message"))?;
    let tool_calls = match message.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().enumerate().map(|(i, c)| tool_call(i, c)).collect(),
        _ => Vec::new(),
    };
    Ok(ChatResponse {
        content: message.get("content").and_then(Value::as_str).map(str::to_owned),
        tool_calls,
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
        usage: body.get("usage").filter(|u| !u.is_null()).map_or_else(TokenUsage::unreported, read_usage),
        response_id: body.get("id").and_then(Value::as_str).map(str::to_owned),
        response_model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        retries: 0,
    })
}

/// `usage`: prompt and completion tokens, and the cached part of the prompt
/// (`prompt_tokens_details.cached_tokens`).
fn read_usage(usage: &Value) -> TokenUsage {
    let count = |path: &str| usage.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    TokenUsage {
        prompt_tokens: count("/prompt_tokens"),
        completion_tokens: count("/completion_tokens"),
        cached_tokens: count("/prompt_tokens_details/cached_tokens"),
        estimated: false,
    }
}

/// One native tool call; tolerant of providers that send arguments as an object or omit the id.
fn tool_call(index: usize, call: &Value) -> ToolCallRequest {
    let function = call.get("function").unwrap_or(&Value::Null);
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => "{}".to_owned(),
        Some(other) => other.to_string(),
    };
    ToolCallRequest {
        id: call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{index}"), str::to_owned),
        name: function.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
        arguments,
    }
}

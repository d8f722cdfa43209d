//! A client of Anthropic's Messages API (`POST /v1/messages`): the system prompt apart, tool use
//! and results as content blocks, images, stop reasons, `max_tokens` (required there), usage with
//! the prompt cache's tokens, optional prompt caching of the system prompt and tools, native
//! structured output as a forced tool, streaming, and the errors and rate-limit headers
//! (`retry-after`, `anthropic-ratelimit-*`). The key goes in `x-api-key` and nowhere else.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use serde_json::{json, Map, Value};

use super::openai::is_event_stream;
use super::retry::Backoff;
use super::transport::{
    classify, provider_error, transport_failure, Attempt, RateLimitHook, RetryGate, Transport,
};
use super::types::{
    ChatMessage, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmErrorKind, Role, TokenUsage,
    ToolCallRequest,
};
use super::{LlmClient, LlmFuture};
use crate::outbound::parse_retry_after;
use crate::outbound::Secret;

/// The API version this client speaks (the `anthropic-version` header).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` of requests that set none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Anthropic's sampling temperature goes up to 1 (OpenAI's to 2): higher values are capped.
const MAX_TEMPERATURE: f64 = 1.0;
/// The longest streamed answer read, in bytes.
const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;

/// Settings of an Anthropic provider beyond its URL and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// `max_tokens` of calls that set none.
    pub max_tokens: u32,
    /// Mark the system prompt and the tools cacheable (`cache_control: ephemeral`).
    pub prompt_caching: bool,
}

impl Default for AnthropicOptions {
    fn default() -> Self {
        Self { max_tokens: DEFAULT_MAX_TOKENS, prompt_caching: false }
    }
}

/// A client of one Anthropic-format provider.
#[derive(Clone)]
pub struct AnthropicClient {
    transport: Transport,
    endpoint: String,
    options: AnthropicOptions,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl AnthropicClient {
    /// A client for the API at `base_url` (e.g. `https://api.anthropic.com`).
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Option<Secret>,
        backoff: Backoff,
        options: AnthropicOptions,
    ) -> Self {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        Self {
            transport: Transport::new(http, api_key, backoff),
            endpoint: format!("{base}/v1/messages"),
            options,
        }
    }

    /// Call `hook` with the wait whenever the provider answers 429 or says a budget is spent.
    pub fn on_rate_limit(mut self, hook: RateLimitHook) -> Self {
        self.transport.on_rate_limit = Some(hook);
        self
    }

    /// Ask `gate`, if any, how long to wait before each retry (see [`RetryGate`]).
    pub fn before_retry(mut self, gate: Option<RetryGate>) -> Self {
        self.transport.before_retry = gate;
        self
    }

    #[tracing::instrument(skip_all, fields(model = %request.model), err)]
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request_body(request, self.options);
        let body = serde_json::to_vec(&body).map_err(|e| {
            LlmError::new(LlmErrorKind::Other, format!("the request does not serialise: {e}"))
        })?;
        let body = bytes::Bytes::from(body);
        let forced = forced_tool(request);
        let last = std::sync::atomic::AtomicU32::new(1);
        let mut response = self
            .transport
            .with_retries(|attempt| {
                last.store(attempt, std::sync::atomic::Ordering::Relaxed);
                self.attempt(&body, request, forced.as_deref(), attempt)
            })
            .await?;
        response.retries = last.into_inner().saturating_sub(1);
        super::estimate::complete_usage(request, &mut response).await;
        Ok(response)
    }

    async fn attempt(
        &self,
        body: &bytes::Bytes,
        request: &ChatRequest,
        forced: Option<&str>,
        attempt: u32,
    ) -> Result<ChatResponse, Attempt> {
        let timeout = self.transport.policy().request_timeout;
        let mut builder = self
            .transport
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(body.clone())
            .timeout(timeout);
        if let Some(key) = &self.transport.api_key {
            builder = builder.header("x-api-key", key.expose());
        }
        let response =
            crate::telemetry::inject(builder).send().await.map_err(|e| transport_failure(e, timeout))?;
        let status = response.status();
        let now = SystemTime::now();
        let retry_after =
            parse_retry_after(response.headers(), now).or_else(|| budget_reset(response.headers(), now));
        if status.is_success() {
            // A spent budget pauses the provider's other callers until it resets.
            if let Some(wait) = budget_reset(response.headers(), now) {
                self.transport.rate_limited(wait.min(self.transport.policy().max_retry_after));
            }
        }
        if let (true, true, Some(sink)) = (status.is_success(), is_event_stream(&response), &request.deltas) {
            return read_stream(response, sink, attempt, forced, timeout).await;
        }
        let text = response.text().await.map_err(|e| transport_failure(e, timeout))?;
        if status.is_success() {
            return parse_response(&text, forced).map_err(Attempt::fatal);
        }
        Err(Transport::failed(status, &text, retry_after))
    }
}

impl LlmClient for AnthropicClient {
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        Box::pin(self.complete(request))
    }

    fn system(&self) -> &'static str {
        "anthropic"
    }
}

/// The tool a structured output is forced through: the schema's name, when the schema is an
/// object (a tool's input must be one).
fn forced_tool(request: &ChatRequest) -> Option<String> {
    request.response_schema.as_ref().filter(|s| s.is_object()).map(|s| s.name.clone())
}

/// How long until a spent budget resets: the latest reset among the `anthropic-ratelimit-*`
/// budgets (requests, tokens, input and output tokens) whose remaining count is 0.
fn budget_reset(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: String| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let now: DateTime<Utc> = now.into();
    ["requests", "tokens", "input-tokens", "output-tokens"]
        .into_iter()
        .filter(|budget| header(format!("anthropic-ratelimit-{budget}-remaining")) == Some("0"))
        .filter_map(|budget| header(format!("anthropic-ratelimit-{budget}-reset")))
        .filter_map(|reset| DateTime::parse_from_rfc3339(reset).ok())
        .map(|reset| (reset.with_timezone(&Utc) - now).to_std().unwrap_or(Duration::ZERO))
        .max()
}

/// The Messages API body of `request`.
fn request_body(request: &ChatRequest, options: AnthropicOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_tokens.unwrap_or(options.max_tokens)));
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .filter_map(|m| m.content.as_deref())
        .collect();
    if !system.is_empty() {
        let text = system.join("\n\n");
        let system = match options.prompt_caching {
            true => json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]),
            false => json!(text),
        };
        body.insert("system".into(), system);
    }
    body.insert("messages".into(), Value::Array(messages(&request.messages)));
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
        .collect();
    let forced = forced_tool(request);
    if let (Some(name), Some(schema)) = (&forced, &request.response_schema) {
        let description = "Give your final answer by calling this tool with the answer as its input.";
        tools.push(json!({"name": name, "description": description, "input_schema": schema.schema}));
        // With no other tool, the answer is forced; with others, some tool must be called.
        let choice = match request.tools.is_empty() {
            true => json!({"type": "tool", "name": name}),
            false => json!({"type": "any"}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if options.prompt_caching {
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.trim().is_empty()).collect();
    if !stops.is_empty() {
        body.insert("stop_sequences".into(), json!(stops));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature.clamp(0.0, MAX_TEMPERATURE)));
    }
    if request.deltas.is_some() {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}

/// The conversation as Messages API turns: system messages left out (they go in `system`), tool
/// results as `tool_result` blocks of a user turn, consecutive turns of one role merged (the API
/// wants them alternating, tool results first in their turn), and a user turn first.
fn messages(conversation: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", user_blocks(message)),
            Role::Tool => {
                let content = message.content.as_deref().filter(|c| !c.is_empty()).unwrap_or("(no output)");
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                ("user", vec![json!({"type": "tool_result", "tool_use_id": id, "content": content})])
            }
            Role::Assistant => ("assistant", assistant_blocks(message)),
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns.first().is_none_or(|(role, _)| *role != "user") {
        turns.insert(0, ("user", vec![json!({"type": "text", "text": "Begin."})]));
    }
    turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

fn user_blocks(message: &ChatMessage) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(text) = message.content.as_deref().filter(|t| !t.trim().is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for image in &message.images {
        blocks.push(json!({"type": "image",
                           "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}));
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "(empty)"}));
    }
    blocks
}

fn assistant_blocks(message: &ChatMessage) -> Vec<Value> {
    let mut blocks = Vec::new();
    // The API refuses empty text blocks and a final assistant turn ending in white space.
    if let Some(text) = message.content.as_deref().map(str::trim_end).filter(|t| !t.trim().is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in &message.tool_calls {
        // A tool's input is an object; arguments the model got wrong are sent back as none.
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(Value::Object(input)) => Value::Object(input),
            _ => json!({}),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "(no answer)"}));
    }
    blocks
}

/// The OpenAI finish reason a stop reason means (the engine speaks that vocabulary).
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "refusal" => "content_filter",
        other => other,
    }
    .to_owned()
}

/// `usage`: the input counts separately what was read from and written to the cache.
/// Nothing is recorded from a `usage` without counts (the reply's usage stays unreported).
fn read_usage(usage: &Value, into: &mut Option<TokenUsage>) {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64);
    let (input, created, read) =
        (count("input_tokens"), count("cache_creation_input_tokens"), count("cache_read_input_tokens"));
    let output = count("output_tokens");
    if input.is_none() && created.is_none() && read.is_none() && output.is_none() {
        return;
    }
    let into = into.get_or_insert_with(TokenUsage::default);
    if input.is_some() || created.is_some() || read.is_some() {
        into.prompt_tokens = input.unwrap_or(0) + created.unwrap_or(0) + read.unwrap_or(0);
        into.cached_tokens = read.unwrap_or(0);
    }
    if let Some(output) = output {
        into.completion_tokens = output;
    }
}

/// Read a message: its text, its tool calls (the forced structured-output tool's input becomes
/// the text), its stop reason and usage.
fn parse_response(text: &str, forced: Option<&str>) -> Result<ChatResponse, LlmError> {
    let unreadable =
        |why: &str| LlmError::new(LlmErrorKind::Other, format!("unreadable provider answer: {why}"));
    let body: Value = serde_json::from_str(text).map_err(|e| unreadable(&e.to_string()))?;
    if body.get("type").and_then(Value::as_str) == Some("error") {
        let (code, message) = provider_error(text);
        return Err(LlmError::new(classify(reqwest::StatusCode::OK, code.as_deref(), &message), message));
    }
    let blocks = body.get("content").and_then(Value::as_array).ok_or_else(|| unreadable("no content"))?;
    let mut answer = Assembled::default();
    for (index, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => answer.text(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => answer.calls.push((
                block
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("toolu_{index}"), str::to_owned),
                block.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                block.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
            )),
            _ => {}
        }
    }
    answer.stop_reason = body.get("stop_reason").and_then(Value::as_str).map(str::to_owned);
    answer.id = body.get("id").and_then(Value::as_str).map(str::to_owned);
    answer.model = body.get("model").and_then(Value::as_str).map(str::to_owned);
    if let Some(usage) = body.get("usage") {
        read_usage(usage, &mut answer.usage);
    }
    Ok(answer.finish(forced))
}

/// An answer as it is read: text, tool calls (id, name, input), stop reason, usage.
#[derive(Default)]
struct Assembled {
    content: Option<String>,
    calls: Vec<(String, String, String)>,
    stop_reason: Option<String>,
    /// `None` until the provider sends counts.
    usage: Option<TokenUsage>,
    /// The message's id and model.
    id: Option<String>,
    model: Option<String>,
}

impl Assembled {
    fn text(&mut self, text: &str) {
        self.content.get_or_insert_with(String::new).push_str(text);
    }

    /// The response; a call of the forced tool is the final answer, its input the text.
    fn finish(mut self, forced: Option<&str>) -> ChatResponse {
        let answer = forced.and_then(|name| self.calls.iter().position(|(_, n, _)| n == name));
        let mut finish_reason = self.stop_reason.as_deref().map(finish_reason);
        match answer {
            // The answer, unless the model also asked for other tools: those run first.
            Some(at) if self.calls.len() == 1 => {
                let (_, _, input) = self.calls.remove(at);
                self.content = Some(input);
                finish_reason = Some("stop".to_owned());
            }
            Some(at) => {
                self.calls.remove(at);
            }
            None => {}
        }
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|(_, name, _)| !name.is_empty())
            .map(|(id, name, arguments)| ToolCallRequest { id, name, arguments })
            .collect();
        let usage = self.usage.unwrap_or_else(TokenUsage::unreported);
        ChatResponse {
            content: self.content,
            tool_calls,
            finish_reason,
            usage,
            response_id: self.id,
            response_model: self.model,
            retries: 0,
        }
    }
}

/// Read a streamed message (`message_start`, `content_block_start` / `_delta` / `_stop`,
/// `message_delta`, `message_stop`, `ping`, `error`): text goes to `sink` as it arrives (not the
/// forced tool's input: that is the answer, not prose). A stream that ends before
/// `message_stop` was cut: a transient failure.
async fn read_stream(
    mut response: reqwest::Response,
    sink: &DeltaSink,
    attempt: u32,
    forced: Option<&str>,
    timeout: Duration,
) -> Result<ChatResponse, Attempt> {
    let mut reader = crate::sse::SseReader::default();
    let mut answer = Assembled::default();
    // The content blocks by index: a tool call's place in `answer.calls`, or text.
    let mut blocks: Vec<Option<usize>> = Vec::new();
    let stream_error = |message: String| Attempt::fatal(LlmError::new(LlmErrorKind::Other, message));
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(error) => return Err(transport_failure(error, timeout)),
        };
        let events = reader
            .feed(&chunk, MAX_STREAM_BYTES)
            .map_err(|message| stream_error(format!("the provider's stream: {message}")))?;
        for data in events {
            let event: Value = serde_json::from_str(data.trim())
                .map_err(|e| stream_error(format!("unreadable provider stream: {e}")))?;
            match event.get("type").and_then(Value::as_str).unwrap_or_default() {
                "message_start" => {
                    if let Some(usage) = event.pointer("/message/usage") {
                        read_usage(usage, &mut answer.usage);
                    }
                    answer.id = event.pointer("/message/id").and_then(Value::as_str).map(str::to_owned);
                    answer.model = event.pointer("/message/model").and_then(Value::as_str).map(str::to_owned);
                }
                "content_block_start" => {
                    let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    if index >= 256 {
                        continue;
                    }
                    if blocks.len() <= index {
                        blocks.resize(index + 1, None);
                    }
                    let block = event.get("content_block").unwrap_or(&Value::Null);
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                        let name = block.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                        blocks[index] = Some(answer.calls.len());
                        answer.calls.push((id, name, String::new()));
                    } else if let Some(text) = block.get("text").and_then(Value::as_str) {
                        answer.text(text);
                    }
                }
                "content_block_delta" => {
                    let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    let delta = event.get("delta").unwrap_or(&Value::Null);
                    match blocks.get(index).copied().flatten() {
                        Some(call) => {
                            if let Some(piece) = delta.get("partial_json").and_then(Value::as_str) {
                                answer.calls[call].2.push_str(piece);
                            }
                        }
                        None => {
                            if let Some(text) = delta.get("text").and_then(Value::as_str) {
                                answer.text(text);
                                (sink.0)(attempt, text);
                            }
                        }
                    }
                }
                "message_delta" => {
                    if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                        answer.stop_reason = Some(reason.to_owned());
                    }
                    if let Some(usage) = event.get("usage") {
                        read_usage(usage, &mut answer.usage);
                    }
                }
                "message_stop" => {
                    for call in &mut answer.calls {
                        if call.2.is_empty() {
                            call.2.push_str("{}");
                        }
                    }
                    return Ok(answer.finish(forced));
                }
                "error" => {
                    let (code, message) = provider_error(data.trim());
                    let kind = classify(reqwest::StatusCode::OK, code.as_deref(), &message);
                    // An overloaded API mid-stream is worth another attempt.
                    let transient = code.as_deref() == Some("overloaded_error");
                    return Err(Attempt { error: LlmError::new(kind, message), transient });
                }
                _ => {}
            }
        }
    }
    let message = "the provider's stream ended before the answer did (cut mid-reply)";
    Err(Attempt { error: LlmError::new(LlmErrorKind::Other, message), transient: true })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, ResponseSchema, ToolDefinition};

    fn conversation() -> Vec<ChatMessage> {
        vec![
            ChatMessage::system("You are terse."),
            ChatMessage::user("Add 2 and 3."),
            ChatMessage {
                role: Role::Assistant,
                content: Some("Let me add. ".into()),
                tool_calls: vec![
                    ToolCallRequest {
                        id: "toolu_1".into(),
                        name: "add".into(),
                        arguments: r#"{"a":2}"#.into(),
                    },
                    ToolCallRequest {
                        id: "toolu_2".into(),
                        name: "add".into(),
                        arguments: "not json".into(),
                    },
                ],
                tool_call_id: None,
                images: Vec::new(),
            },
            ChatMessage::tool("toolu_1", "5"),
            ChatMessage::tool("toolu_2", ""),
            ChatMessage {
                images: vec![Image { media_type: "image/png".into(), data: "iVBOR".into() }],
                ..ChatMessage::user("")
            },
        ]
    }

    #[test]
    fn the_conversation_maps_to_alternating_turns_with_blocks() {
        let request = ChatRequest {
            model: "claude-test".into(),
            messages: conversation(),
            tools: vec![ToolDefinition {
                name: "add".into(),
                description: "adds".into(),
                parameters: json!({"type": "object"}),
            }],
            stop: vec!["\nObservation:".into(), " ".into()],
            temperature: Some(1.7),
            ..ChatRequest::default()
        };
        let body = request_body(&request, AnthropicOptions { max_tokens: 777, prompt_caching: true });
        assert_eq!(body["max_tokens"], 777);
        assert_eq!(body["temperature"], 1.0);
        assert_eq!(body["stop_sequences"], json!(["\nObservation:"]));
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
        let turns = body["messages"].as_array().expect("messages");
        let roles: Vec<&str> = turns.iter().map(|t| t["role"].as_str().unwrap_or_default()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            turns[1]["content"],
            json!([
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}}
            ])
        );
        assert_eq!(
            turns[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "(no output)"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
            ])
        );
    }

    #[test]
    fn a_structured_output_is_a_forced_tool_whose_input_is_the_answer() {
        let schema = ResponseSchema::new(
            "report",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        );
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::user("go")],
            response_schema: Some(std::sync::Arc::new(schema)),
            ..ChatRequest::default()
        };
        let body = request_body(&request, AnthropicOptions::default());
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "report"}));
        assert_eq!(body["tools"][0]["name"], "report");
        let reply = json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "report", "input": {"n": 3}}],
            "usage": {"input_tokens": 20, "output_tokens": 4, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 7}});
        let response = parse_response(&reply.to_string(), Some("report")).expect("answer");
        assert_eq!(response.content.as_deref(), Some(r#"{"n":3}"#));
        assert!(response.tool_calls.is_empty());
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            response.usage,
            TokenUsage { prompt_tokens: 127, completion_tokens: 4, cached_tokens: 100, estimated: false }
        );
    }

    #[test]
    fn a_message_without_counts_is_left_to_be_estimated() {
        let reply = json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "Fine."}], "usage": {}});
        let response = parse_response(&reply.to_string(), None).expect("answer");
        assert_eq!(response.usage, TokenUsage::unreported());
        let reply = json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "Fine."}], "usage": {"output_tokens": 2}});
        let response = parse_response(&reply.to_string(), None).expect("answer");
        assert_eq!(
            response.usage,
            TokenUsage { prompt_tokens: 0, completion_tokens: 2, cached_tokens: 0, estimated: false },
            "a count the provider sent is its own"
        );
    }

    #[test]
    fn a_spent_budget_resets_at_its_latest_reset() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |secs: u64| {
            let time: DateTime<Utc> = (now + Duration::from_secs(secs)).into();
            time.to_rfc3339()
        };
        let mut headers = HeaderMap::new();
        let mut set = |name: &'static str, value: String| {
            headers.insert(name, value.parse().expect("header"));
        };
        set("anthropic-ratelimit-requests-remaining", "0".into());
        set("anthropic-ratelimit-requests-reset", at(3));
        set("anthropic-ratelimit-tokens-remaining", "10".into());
        set("anthropic-ratelimit-tokens-reset", at(50));
        set("anthropic-ratelimit-output-tokens-remaining", "0".into());
        set("anthropic-ratelimit-output-tokens-reset", at(7));
        assert_eq!(budget_reset(&headers, now), Some(Duration::from_secs(7)));
        assert_eq!(budget_reset(&HeaderMap::new(), now), None);
    }
}

//! The chat vocabulary shared by the engine and the clients: messages, tool definitions and
//! calls, responses, usage and classified errors.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::domain::chat::{ChatMessage, Image, Role, ToolCallRequest};

/// A tool offered to the model for native function calling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

/// One chat-completion request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The provider's model name (without the `provider/` prefix).
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Tools for native function calling; empty for none.
    pub tools: Vec<ToolDefinition>,
    /// Stop sequences (ReAct uses `\nObservation:`).
    pub stop: Vec<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// The JSON schema a final answer must match, for providers that enforce it natively
    /// (OpenAI's `response_format`, a forced tool for Anthropic); `None`: the prompt says it.
    pub response_schema: Option<std::sync::Arc<ResponseSchema>>,
    /// Stream the reply, handing its text to this sink as it arrives (`None`: one answer).
    pub deltas: Option<DeltaSink>,
}

/// Tokens counted for an image before the provider counts them.
pub(super) const IMAGE_TOKENS: u64 = 800;

impl ChatRequest {
    /// About how many input tokens the request holds (four bytes a token, a fixed count per
    /// image), for budgets checked before the provider counts them.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        let mut bytes = 0usize;
        let mut images = 0u64;
        for message in &self.messages {
            bytes += message.content.as_ref().map_or(0, String::len) + 4;
            bytes += message.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
            images += message.images.len() as u64;
        }
        for tool in &self.tools {
            bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
        }
        bytes as u64 / 4 + 1 + images * IMAGE_TOKENS
    }
}

/// A schema for a native structured output.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseSchema {
    /// A name for it (`[a-zA-Z0-9_-]`, at most 64 characters).
    pub name: String,
    pub schema: Value,
    /// Does the schema fit OpenAI's strict mode (every object closed, every property required)?
    pub strict: bool,
}

impl ResponseSchema {
    /// The schema of a task's output, named after it.
    pub fn new(name: &str, schema: Value) -> Self {
        let mut name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        if name.is_empty() {
            name.push_str("output");
        }
        let strict = fits_strict_mode(&schema);
        Self { name, schema, strict }
    }

    /// Is the schema's root an object (what a tool's input must be)?
    pub fn is_object(&self) -> bool {
        self.schema.get("type").is_some_and(|t| t == "object")
    }
}

/// Does every object of `schema` forbid additional properties and require all of its own?
/// (OpenAI's strict mode refuses other schemas.)
fn fits_strict_mode(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties");
            if is_object {
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let names: Vec<&String> = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().collect())
                    .unwrap_or_default();
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !closed || names.iter().any(|n| !required.contains(&n.as_str())) {
                    return false;
                }
            }
            map.values().all(fits_strict_mode)
        }
        Value::Array(items) => items.iter().all(fits_strict_mode),
        _ => true,
    }
}

/// Where a streamed reply's text goes as it arrives: called with the attempt (from 1; a retried
/// call starts its text again) and the new text.
#[derive(Clone)]
pub struct DeltaSink(pub std::sync::Arc<DeltaFn>);

/// What a [`DeltaSink`] calls: `(attempt, text)`.
pub type DeltaFn = dyn Fn(u32, &str) + Send + Sync;

impl std::fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeltaSink")
    }
}

impl PartialEq for DeltaSink {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Tokens a call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Every input token, cached ones included.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Input tokens read from the provider's prompt cache (part of `prompt_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// The provider sent no usage: the counts are agentd's estimate (see `llm::estimate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl TokenUsage {
    /// The usage of a reply that came without any: to be estimated from the request and reply.
    pub fn unreported() -> Self {
        Self { estimated: true, ..Self::default() }
    }
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish_reason: Option<String>,
    pub usage: TokenUsage,
    /// The provider's id of the reply and the model that wrote it, when it says (for traces;
    /// never journaled).
    #[serde(skip)]
    pub response_id: Option<String>,
    #[serde(skip)]
    pub response_model: Option<String>,
    /// How many times the call was retried before this reply (transient failures, 429s).
    #[serde(skip)]
    pub retries: u32,
}

/// The classes of failure the engine reacts to differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// The prompt is too long for the model: summarise and retry.
    ContextWindowExceeded,
    /// The provider rejects native tools: fall back to ReAct text.
    ToolsUnsupported,
    /// The provider rejects a native structured output (`response_format`): fall back to the
    /// prompt's instructions.
    SchemaUnsupported,
    /// The key is missing, wrong or not allowed.
    Authentication,
    /// Still rate limited after the retries.
    RateLimited,
    /// No answer in time, after the retries.
    Timeout,
    /// Anything else (bad request, server errors after the retries, unreadable answers).
    Other,
}

impl LlmErrorKind {
    /// Its name, as an error's `error.type` in a trace.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmErrorKind::ContextWindowExceeded => "context_window_exceeded",
            LlmErrorKind::ToolsUnsupported => "tools_unsupported",
            LlmErrorKind::SchemaUnsupported => "schema_unsupported",
            LlmErrorKind::Authentication => "authentication",
            LlmErrorKind::RateLimited => "rate_limited",
            LlmErrorKind::Timeout => "timeout",
            LlmErrorKind::Other => "other",
        }
    }
}

/// A failed chat call. Its message never contains the API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct LlmError {
    pub kind: LlmErrorKind,
    pub message: String,
    /// For rate limits: how long the provider asked us to wait.
    pub retry_after: Option<Duration>,
}

impl LlmError {
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), retry_after: None }
    }
}

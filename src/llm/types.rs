//! The chat vocabulary shared by the engine and the clients: messages, tool definitions and
//! calls, responses, usage and classified errors.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool call the model asked for (native function calling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The provider's id of the call, echoed back in the `tool` message that answers it.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Option<String>,
    /// For an assistant message: the native tool calls it asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images sent with a user message (a tool's image result).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image for the model, base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    pub data: String,
}

impl ChatMessage {
    fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::text(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::text(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::text(Role::Assistant, content)
    }

    /// The answer to a native tool call.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(tool_call_id.into()), ..Self::text(Role::Tool, content) }
    }
}

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
    /// Stream the reply, handing its text to this sink as it arrives (`None`: one answer).
    pub deltas: Option<DeltaSink>,
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
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish_reason: Option<String>,
    pub usage: TokenUsage,
}

/// The classes of failure the engine reacts to differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// The prompt is too long for the model: summarise and retry.
    ContextWindowExceeded,
    /// The provider rejects native tools: fall back to ReAct text.
    ToolsUnsupported,
    /// The key is missing, wrong or not allowed.
    Authentication,
    /// Still rate limited after the retries.
    RateLimited,
    /// No answer in time, after the retries.
    Timeout,
    /// Anything else (bad request, server errors after the retries, unreadable answers).
    Other,
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

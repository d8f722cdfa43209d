//! Tools agents can call: the [`Tool`] trait, the catalogue of built-in tools (which specs are
//! validated against and `GET /v1/tools` lists), their implementations, the HTTP tools a crew
//! declares, and the egress guard every outbound tool request goes through.

pub mod builtin;
pub mod calculator;
pub mod egress;
pub mod http;

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// What a tool call produced, or why it failed; both are shown to the model as the observation.
pub type ToolResult = Result<String, String>;

/// A boxed tool future (tools are used as `dyn Tool`).
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// Something an agent can call.
pub trait Tool: Send + Sync {
    /// Name, description, argument schema and whether it is safe to repeat.
    fn info(&self) -> &ToolInfo;
    /// Run with arguments already validated against `info().parameters`.
    fn call(&self, arguments: Value) -> ToolFuture<'_>;
}

/// A tool as clients and models see it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments.
    #[schema(value_type = Object)]
    pub parameters: Value,
    /// Safe to run again after a crash interrupted a call.
    pub idempotent: bool,
}

/// The built-in tools.
pub fn builtin_tools() -> Vec<ToolInfo> {
    vec![
        ToolInfo {
            name: "calculator".into(),
            description: "Evaluate an arithmetic expression: + - * / ^ %, parentheses, unary minus \
                          and decimals, e.g. \"2*(3+4)\"."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"expression": {"type": "string", "description": "The expression to evaluate"}},
                "required": ["expression"]
            }),
            idempotent: true,
        },
        ToolInfo {
            name: "current_time".into(),
            description: "The current date and time in UTC (RFC 3339).".into(),
            parameters: json!({"type": "object", "properties": {}}),
            idempotent: true,
        },
        ToolInfo {
            name: "http_request".into(),
            description: "Fetch a public URL with GET, or POST a JSON body to it, and return the \
                          response text. Private and internal addresses are blocked."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "An http or https URL"},
                    "method": {"type": "string", "enum": ["GET", "POST"], "default": "GET"},
                    "body": {"description": "JSON body for POST"}
                },
                "required": ["url"]
            }),
            idempotent: false,
        },
    ]
}

/// The names of the built-in tools.
pub fn builtin_tool_names() -> Vec<String> {
    builtin_tools().into_iter().map(|t| t.name).collect()
}

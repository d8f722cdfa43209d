//! Tools agents can call. This module owns the catalogue of built-in tools (names, descriptions
//! and JSON schemas of their arguments), which specs are validated against and `GET /v1/tools`
//! lists; their execution arrives with the engine. The egress guard for outbound tool requests
//! lives in [`egress`].

pub mod egress;

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

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

//! Tools agents can call: the [`Tool`] trait, the catalogue of built-in tools (which specs are
//! validated against and `GET /v1/tools` lists), their implementations, the HTTP tools a crew
//! declares, and the egress guard every outbound tool request goes through.

pub mod builtin;
pub mod calculator;
pub mod http;
pub mod mcp;
pub mod secrets;

use std::future::Future;
use std::pin::Pin;

use crate::domain::RunId;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// What a tool call produced, or why it failed; both are shown to the model as the observation.
/// An image is returned as `VISION_IMAGE:<media type>:<base64>` (see [`image_result`]).
pub type ToolResult = Result<String, String>;

/// The prefix of a tool result that is an image.
pub const IMAGE_PREFIX: &str = "VISION_IMAGE:";
/// The largest image handed to a model, in bytes.
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;

/// A tool result carrying an image.
pub fn image_result(media_type: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!("{IMAGE_PREFIX}{media_type}:{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The media type and base64 data of an image result (`VISION_IMAGE:image/png:iVBOR...`).
pub fn parse_image(result: &str) -> Option<(&str, &str)> {
    parse_captioned_image(result).map(|(media_type, data, _)| (media_type, data))
}

/// An image result with text after it (`VISION_IMAGE:image/png:iVBOR...\n<text>`), as a tool
/// whose answer holds both returns it.
pub fn captioned_image(media_type: &str, bytes: &[u8], text: &str) -> String {
    format!("{}\n{text}", image_result(media_type, bytes))
}

/// The media type, base64 data and text (empty if none) of an image result.
pub fn parse_captioned_image(result: &str) -> Option<(&str, &str, &str)> {
    let (media_type, rest) = result.strip_prefix(IMAGE_PREFIX)?.split_once(':')?;
    let (data, text) = rest.split_once('\n').unwrap_or((rest, ""));
    let valid = media_type.starts_with("image/")
        && !data.is_empty()
        && data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    valid.then_some((media_type, data, text))
}

/// A boxed tool future (tools are used as `dyn Tool`).
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// Something an agent can call.
pub trait Tool: Send + Sync {
    /// Name, description, argument schema and whether it is safe to repeat.
    fn info(&self) -> &ToolInfo;
    /// Run with arguments already validated against `info().parameters`.
    fn call(&self, arguments: Value, call: CallInfo) -> ToolFuture<'_>;
    /// What kind of tool it is, for traces (`builtin`, `http`, `mcp`, `knowledge`), and the MCP
    /// server of an MCP tool.
    fn kind(&self) -> (&'static str, Option<&str>) {
        ("builtin", None)
    }
    /// The MCP method a call of an MCP tool sends, for traces: `tools/call` (a server's listing
    /// sends `tools/list`).
    fn mcp_method(&self) -> &'static str {
        "tools/call"
    }
}

/// What a tool knows of the call it performs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    /// Stable for this call of this run: the same on every retry and after a crash (sent as the
    /// `Idempotency-Key` header of HTTP tools and in the `_meta` of MCP calls), so that a service
    /// honouring it applies a repeated call once.
    pub idempotency_key: String,
}

impl CallInfo {
    /// The call journaled under `key` in run `run_id`: a UUID (version 8) from a digest of both.
    pub fn for_call(run_id: RunId, key: &str) -> Self {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest([run_id.0.as_bytes().as_slice(), b"\0", key.as_bytes()].concat());
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        let id = uuid::Builder::from_custom_bytes(bytes).into_uuid();
        Self { idempotency_key: id.to_string() }
    }
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
                "properties": {"expression": {"type": "string", "description": "The expression to evaluate", "examples": ["2*(3+4)"]}},
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
        ToolInfo {
            name: SEARCH_KNOWLEDGE.into(),
            description: "Search the knowledge bases (the team's documents) for passages about a \
                          question, best first."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in your own words"},
                    "base": {"type": "string", "description": "The knowledge base to search (all of yours when left out)"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many passages (default 5)"}
                },
                "required": ["query"]
            }),
            idempotent: true,
        },
    ]
}

/// The built-in tool that searches the run's knowledge bases (made per run by the engine).
pub const SEARCH_KNOWLEDGE: &str = "search_knowledge";

/// The names of the built-in tools.
pub fn builtin_tool_names() -> Vec<String> {
    builtin_tools().into_iter().map(|t| t.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_idempotency_key_depends_on_its_run_and_journal_key_only() {
        let run = uuid::Uuid::now_v7();
        let key = CallInfo::for_call(RunId(run), "t#1/c1").idempotency_key;
        assert_eq!(key, CallInfo::for_call(RunId(run), "t#1/c1").idempotency_key);
        assert_ne!(key, CallInfo::for_call(RunId(run), "t#1/c2").idempotency_key);
        assert_ne!(key, CallInfo::for_call(RunId(uuid::Uuid::now_v7()), "t#1/c1").idempotency_key);
        let parsed = uuid::Uuid::parse_str(&key).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 8);
    }

    #[test]
    fn image_results_round_trip_and_reject_malformed_ones() {
        let result = image_result("image/jpeg", b"\xff\xd8\xff");
        assert_eq!(parse_image(&result), Some(("image/jpeg", "/9j/")));
        assert_eq!(parse_image("VISION_IMAGE:text/plain:aGk="), None);
        assert_eq!(parse_image("VISION_IMAGE:image/png:"), None);
        assert_eq!(parse_image("VISION_IMAGE:image/png:not base64!"), None);
        assert_eq!(parse_image("plain text"), None);
        let captioned = captioned_image("image/png", b"\x89PNG", "the logo\nin two lines");
        assert_eq!(
            parse_captioned_image(&captioned),
            Some(("image/png", "iVBORw==", "the logo\nin two lines"))
        );
        assert_eq!(parse_image(&captioned), Some(("image/png", "iVBORw==")));
    }
}

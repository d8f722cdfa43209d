//! MCP tools: discovery (`tools/list`, every page) and calls (`tools/call`) on servers a crew
//! declares, over the Streamable HTTP transport ([`client`]); what a call's result becomes as an
//! observation; the metrics of every call.
//!
//! Not [`rmcp`](https://crates.io/crates/rmcp), the official Rust SDK: its HTTP client is built
//! on reqwest 0.13 (agentd and its egress guard are on 0.12; a custom transport would rewrite
//! what is here), it fixes a connection's headers when the transport is made (secrets must be
//! read for every request), and it brings ~100 crates for the ~400 lines this client needs.
//! The client is tested against the reference server and the official Python SDK instead.

pub mod client;

use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use self::client::{McpClient, McpError};
use super::secrets::Redactor;
use super::{captioned_image, CallInfo, Tool, ToolFuture, ToolInfo, ToolResult, MAX_IMAGE_BYTES};
use crate::metrics::Metrics;

/// The most `tools/list` pages read, and tools kept, from one server.
const MAX_PAGES: usize = 100;
const MAX_TOOLS: usize = 1000;
/// Where a call's idempotency key travels in `tools/call`'s `_meta`.
pub const IDEMPOTENCY_META: &str = "agentd/idempotency-key";

/// The journal key of the `attempt`th listing (from 1) of a server's tools in a run (a tool call
/// of the runtime, not the model): a listing that failed stays in the journal, and the next task
/// that needs the server lists its tools again under the next key.
pub fn discovery_key(server: &str, attempt: u32) -> String {
    match attempt {
        0 | 1 => format!("mcp:{server}#tools/list"),
        n => format!("mcp:{server}#tools/list#{n}"),
    }
}

/// Is journal key `id` a listing of `server`'s tools (any attempt)?
pub fn is_discovery_key(server: &str, id: &str) -> bool {
    let first = discovery_key(server, 1);
    id.strip_prefix(first.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('#'))
}

/// A tool a server offers, as discovered and journaled with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolInfo {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
}

fn empty_object_schema() -> Value {
    json!({"type": "object"})
}

impl McpToolInfo {
    /// Do its annotations say a repeated call does no harm (`readOnlyHint` or `idempotentHint`)?
    pub fn idempotent_by_annotations(&self) -> bool {
        let hint = |name: &str| self.annotations.get(name).and_then(Value::as_bool).unwrap_or(false);
        hint("readOnlyHint") || hint("idempotentHint")
    }
}

/// Every tool `client`'s server offers, following `nextCursor` from page to page.
pub async fn discover(client: &Arc<McpClient>) -> Result<Vec<McpToolInfo>, McpError> {
    let mut tools: Vec<McpToolInfo> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let mut redactor = Redactor::default();
        let page = client.request("tools/list", params, &mut redactor).await?;
        let listed = page.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
        for tool in listed {
            let tool: McpToolInfo = serde_json::from_value(tool)
                .map_err(|e| McpError::Transport(format!("the MCP server listed a malformed tool: {e}")))?;
            if tools.len() < MAX_TOOLS && !tools.iter().any(|t| t.name == tool.name) {
                tools.push(tool);
            }
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Ok(tools)
}

/// A discovered tool as agents call it (`<server>__<tool>`).
pub struct McpTool {
    info: ToolInfo,
    server: String,
    remote: String,
    client: Arc<McpClient>,
    metrics: Arc<Metrics>,
    max_text_bytes: usize,
}

impl McpTool {
    pub fn new(
        info: ToolInfo,
        server: &str,
        remote: &str,
        client: Arc<McpClient>,
        metrics: Arc<Metrics>,
        max_text_bytes: usize,
    ) -> Self {
        Self { info, server: server.to_owned(), remote: remote.to_owned(), client, metrics, max_text_bytes }
    }
}

impl Tool for McpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn kind(&self) -> (&'static str, Option<&str>) {
        ("mcp", Some(&self.server))
    }

    fn call(&self, arguments: Value, call: CallInfo) -> ToolFuture<'_> {
        Box::pin(async move {
            let params = json!({
                "name": self.remote,
                "arguments": arguments,
                "_meta": {IDEMPOTENCY_META: call.idempotency_key},
            });
            let mut redactor = Redactor::default();
            let started = Instant::now();
            let answer = self.client.request("tools/call", params, &mut redactor).await;
            let (mut result, outcome) = match answer {
                Ok(result) => {
                    let result = observation(&result, self.max_text_bytes);
                    let outcome = if result.is_ok() { "ok" } else { "tool_error" };
                    (result, outcome)
                }
                Err(error) => (Err(error.to_string()), "error"),
            };
            self.metrics.observe_mcp(&self.server, &self.remote, started.elapsed(), outcome);
            match &mut result {
                Ok(text) | Err(text) => redactor.redact(text),
            }
            result
        })
    }
}

/// The listing of a server's tools (`tools/list`, every page) as a call the engine's effects layer
/// runs like any other (`mcp:<server>`): its result is the tools as JSON, as the run journals
/// them; its error says why the server is unavailable (the egress guard's verdict, say).
pub struct McpListing {
    info: ToolInfo,
    server: String,
    client: Arc<McpClient>,
}

impl McpListing {
    pub fn new(server: &str, client: Arc<McpClient>) -> Self {
        let info = ToolInfo {
            name: format!("mcp:{server}"),
            description: format!("The tools MCP server '{server}' offers"),
            parameters: empty_object_schema(),
            idempotent: true,
        };
        Self { info, server: server.to_owned(), client }
    }
}

impl Tool for McpListing {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn kind(&self) -> (&'static str, Option<&str>) {
        ("mcp", Some(&self.server))
    }

    fn mcp_method(&self) -> &'static str {
        "tools/list"
    }

    fn call(&self, _arguments: Value, _call: CallInfo) -> ToolFuture<'_> {
        Box::pin(async move {
            let server = &self.server;
            let tools = discover(&self.client)
                .await
                .map_err(|error| format!("MCP server '{server}' is unavailable: {error}"))?;
            serde_json::to_string(&tools)
                .map_err(|error| format!("the tools of MCP server '{server}' could not be kept: {error}"))
        })
    }
}

/// A tool an agent names that cannot be had (its server is out of reach, or offers no such
/// tool): every call is that error.
pub struct UnavailableTool {
    info: ToolInfo,
    error: String,
}

impl UnavailableTool {
    pub fn new(name: &str, error: String) -> Self {
        let info = ToolInfo {
            name: name.to_owned(),
            description: format!("Unavailable: {error}"),
            parameters: empty_object_schema(),
            idempotent: true,
        };
        Self { info, error }
    }
}

impl Tool for UnavailableTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, _arguments: Value, _call: CallInfo) -> ToolFuture<'_> {
        let error = self.error.clone();
        Box::pin(async move { Err(error) })
    }
}

/// What a `tools/call` result tells the model: `structuredContent` as JSON text; else the text
/// of its content (resources by their text or address, other media named), and the first image
/// as an image (the image observation path) with the rest of the content as its caption. `isError: true` is a failed call with the
/// server's text.
pub fn observation(result: &Value, max_text_bytes: usize) -> ToolResult {
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let content = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if !is_error {
        if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null()) {
            return Ok(cut(structured.to_string(), max_text_bytes));
        }
        if let Some(first) = content.iter().position(|c| kind(c) == "image") {
            // The first image goes to the model as an image, with the rest as its caption.
            let (media_type, bytes) = image(&content[first])?;
            let rest: Vec<String> =
                content.iter().enumerate().filter(|(i, _)| *i != first).map(|(_, c)| describe(c)).collect();
            return Ok(captioned_image(&media_type, &bytes, &cut(rest.join("\n"), max_text_bytes)));
        }
    }
    let parts: Vec<String> = content.iter().map(describe).collect();
    let text = cut(parts.join("\n"), max_text_bytes);
    match is_error {
        true if text.is_empty() => Err("the MCP tool reported an error".to_owned()),
        true => Err(text),
        false => Ok(text),
    }
}

fn kind(content: &Value) -> &str {
    content.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn field<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// One content block as text.
fn describe(content: &Value) -> String {
    match kind(content) {
        "text" => field(content, "text").to_owned(),
        "image" | "audio" => format!("[{} content: {}]", kind(content), field(content, "mimeType")),
        "resource" => {
            let resource = content.get("resource").cloned().unwrap_or(Value::Object(Map::new()));
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => format!("[resource {} ({})]", field(&resource, "uri"), field(&resource, "mimeType")),
            }
        }
        "resource_link" => format!("[resource link {}: {}]", field(content, "uri"), field(content, "name")),
        other => format!("[{other} content]"),
    }
}

fn image(content: &Value) -> Result<(String, Vec<u8>), String> {
    let media_type = field(content, "mimeType");
    if !media_type.starts_with("image/") {
        return Err(format!("the MCP tool returned an image of type '{media_type}'"));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(field(content, "data"))
        .map_err(|_| "the MCP tool returned an image that is not base64".to_owned())?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!("the image is larger than the limit of {MAX_IMAGE_BYTES} bytes"));
    }
    Ok((media_type.to_owned(), bytes))
}

/// `text` cut to at most `max` bytes (on a character boundary), marking the cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("\n[response truncated]");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_observations() {
        let text = json!({"content": [{"type": "text", "text": "a"}, {"type": "resource_link", "uri": "file:///x", "name": "x"}]});
        assert_eq!(observation(&text, 100), Ok("a\n[resource link file:///x: x]".to_owned()));
        let structured =
            json!({"content": [{"type": "text", "text": "{...}"}], "structuredContent": {"t": 21}});
        assert_eq!(observation(&structured, 100), Ok("{\"t\":21}".to_owned()));
        let failed = json!({"content": [{"type": "text", "text": "down"}], "isError": true});
        assert_eq!(observation(&failed, 100), Err("down".to_owned()));
        assert_eq!(
            observation(&json!({"isError": true}), 100),
            Err("the MCP tool reported an error".to_owned())
        );
        let picture = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw=="}]});
        let png = [0x89, b'P', b'N', b'G'];
        assert_eq!(observation(&picture, 100), Ok(captioned_image("image/png", &png, "")));
        let mixed = json!({"content": [{"type": "text", "text": "see"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw=="},
                                       {"type": "image", "mimeType": "image/gif", "data": "R0lG"}]});
        assert_eq!(
            observation(&mixed, 100),
            Ok(captioned_image("image/png", &png, "see\n[image content: image/gif]"))
        );
        let failed_image = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw=="}], "isError": true});
        assert_eq!(observation(&failed_image, 100), Err("[image content: image/png]".to_owned()));
        let long = json!({"content": [{"type": "text", "text": "é".repeat(10)}]});
        assert_eq!(observation(&long, 5), Ok("éé\n[response truncated]".to_owned()));
    }
}

//! The built-in tools: `calculator`, `current_time` and `http_request`.

use std::sync::Arc;

use serde_json::Value;

use super::http::{fetch, Outbound, Request};
use super::{builtin_tools, CallInfo, Tool, ToolFuture, ToolInfo};

/// Every built-in tool, ready to call; outbound requests use `outbound`.
pub fn instantiate(outbound: Arc<Outbound>) -> Vec<Arc<dyn Tool>> {
    builtin_tools()
        .into_iter()
        .filter_map(|info| -> Option<Arc<dyn Tool>> {
            match info.name.as_str() {
                "calculator" => Some(Arc::new(Calculator { info })),
                "current_time" => Some(Arc::new(CurrentTime { info })),
                "http_request" => Some(Arc::new(HttpRequest { info, outbound: outbound.clone() })),
                _ => None,
            }
        })
        .collect()
}

struct Calculator {
    info: ToolInfo,
}

impl Tool for Calculator {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value, _call: CallInfo) -> ToolFuture<'_> {
        let expression = arguments.get("expression").and_then(Value::as_str).unwrap_or_default().to_owned();
        Box::pin(async move { super::calculator::evaluate(&expression).map_err(|e| e.to_string()) })
    }
}

struct CurrentTime {
    info: ToolInfo,
}

impl Tool for CurrentTime {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, _arguments: Value, _call: CallInfo) -> ToolFuture<'_> {
        Box::pin(async { Ok(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)) })
    }
}

struct HttpRequest {
    info: ToolInfo,
    outbound: Arc<Outbound>,
}

impl Tool for HttpRequest {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value, call: CallInfo) -> ToolFuture<'_> {
        Box::pin(async move {
            let url = arguments.get("url").and_then(Value::as_str).unwrap_or_default();
            let method = arguments.get("method").and_then(Value::as_str).unwrap_or("GET");
            let body = arguments.get("body").filter(|b| !b.is_null());
            let method = match method.to_ascii_uppercase().as_str() {
                "GET" => reqwest::Method::GET,
                "POST" => reqwest::Method::POST,
                other => return Err(format!("unsupported method '{other}': use GET or POST")),
            };
            let request = Request { method, url, body, timeout: None, headers: Vec::new() };
            fetch(&self.outbound, request, &call).await
        })
    }
}

//! The agent protocols' DNS-rebinding defence: a browser request to `/mcp`, `/a2a…` or the AG-UI
//! endpoint whose `Origin` the `allowed_origins` setting does not allow gets 403 before anything
//! else (the key check included). MCP's transport (2025-11-25): "Servers MUST validate the
//! `Origin` header on all incoming connections to prevent DNS rebinding attacks. If the `Origin`
//! header is present and invalid, servers MUST respond with HTTP 403 Forbidden."

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;
use crate::net::OriginPolicy;

/// The policy with the address it is judged against (the listener's own).
#[derive(Debug, Clone)]
pub struct Origins {
    pub policy: OriginPolicy,
    pub local: SocketAddr,
}

/// Is `path` one of the protocols' endpoints the origin rule covers?
pub fn guarded(path: &str) -> bool {
    path == "/mcp" || path == "/a2a" || path.starts_with("/a2a/") || path.starts_with("/v1/ag-ui/")
}

/// The refusal of a guarded request whose `Origin` is not allowed (403), if it is one. Called
/// first by the key check ([`crate::http::auth::require_api_key`]), which every request passes:
/// no layer of its own.
pub fn refusal(origins: &Origins, request: &Request) -> Option<Response> {
    if !guarded(request.uri().path()) {
        return None;
    }
    let origin = request.headers().get(header::ORIGIN)?;
    if origin.to_str().is_ok_and(|origin| origins.policy.allows(origin, origins.local)) {
        return None;
    }
    let shown = String::from_utf8_lossy(origin.as_bytes()).chars().take(200).collect::<String>();
    let detail = format!("the Origin '{shown}' is not allowed here (the allowed_origins setting)");
    Some(ApiError::Forbidden(detail).into_response())
}

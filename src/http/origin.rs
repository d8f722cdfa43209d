//! The agent protocols' DNS-rebinding defence: a browser request to `/mcp`, `/a2a…` or the AG-UI
//! endpoint whose `Origin` the `allowed_origins` setting does not allow gets 403 before anything
//! else (the key check included). MCP's transport (2025-11-25): "Servers MUST validate the
//! `Origin` header on all incoming connections to prevent DNS rebinding attacks. If the `Origin`
//! header is present and invalid, servers MUST respond with HTTP 403 Forbidden."

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
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

/// Refuse a guarded request whose `Origin` is not allowed (403, problem+json).
pub async fn check(State(origins): State<Arc<Origins>>, request: Request, next: Next) -> Response {
    if guarded(request.uri().path()) {
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|origin| origins.policy.allows(origin, origins.local));
            if !allowed {
                let shown = String::from_utf8_lossy(origin.as_bytes()).chars().take(200).collect::<String>();
                return ApiError::Forbidden(format!(
                    "the Origin '{shown}' is not allowed here (the allowed_origins setting)"
                ))
                .into_response();
            }
        }
    }
    next.run(request).await
}

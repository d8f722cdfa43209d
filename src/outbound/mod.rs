//! What every outbound request shares, whoever sends it (the LLM clients, the HTTP and MCP tools,
//! the webhook deliverer): a secret value that must never be shown ([`Secret`]), the egress guard
//! ([`egress`]), reading a `Retry-After` ([`parse_retry_after`]) and describing a transport error
//! without its URL ([`describe`]). A leaf: it imports nothing of agentd's.

pub mod egress;
mod retry_after;
mod secret;

pub use retry_after::parse_retry_after;
pub use secret::Secret;

use egress::EgressError;

/// A transport error as a short text: the error and its causes (which carry the egress guard's
/// reason when a resolved address was blocked), without the URL.
pub fn describe(error: reqwest::Error) -> String {
    if error.is_timeout() {
        return "the request timed out".to_owned();
    }
    if let Some(blocked) = EgressError::find_in(&error) {
        return blocked.to_string();
    }
    let error = error.without_url();
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    message
}

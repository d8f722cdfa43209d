//! What every provider client shares: the retry loop of one call (backoff, the provider's
//! `Retry-After`, the 429 hook that pauses other callers), transport failures, the provider's
//! error text (scrubbed of the API key) and its classification.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::retry::{Backoff, RetryPolicy};
use super::types::{LlmError, LlmErrorKind};
use crate::outbound::Secret;

/// Longest provider error text kept in an error message.
const MAX_ERROR_TEXT: usize = 500;

/// Told how long to wait whenever the provider answers 429, or says its budget is spent (to
/// pause other callers too).
pub type RateLimitHook = Arc<dyn Fn(Duration) + Send + Sync>;

/// Asked before a retry with the wait the client would take; answers the wait to take instead
/// (a provider whose budget is shared books the retry's slot on the cluster's schedule).
pub type RetryGate =
    Arc<dyn Fn(Duration) -> std::pin::Pin<Box<dyn Future<Output = Duration> + Send>> + Send + Sync>;

/// One failed attempt: whether it is worth another, and the error if not.
pub(super) struct Attempt {
    pub error: LlmError,
    pub transient: bool,
}

impl Attempt {
    pub fn fatal(error: LlmError) -> Self {
        Self { error, transient: false }
    }
}

/// The HTTP side of a provider client.
#[derive(Clone)]
pub(super) struct Transport {
    pub http: reqwest::Client,
    pub api_key: Option<Secret>,
    pub backoff: Backoff,
    pub on_rate_limit: Option<RateLimitHook>,
    pub before_retry: Option<RetryGate>,
}

impl Transport {
    pub fn new(http: reqwest::Client, api_key: Option<Secret>, backoff: Backoff) -> Self {
        Self { http, api_key, backoff, on_rate_limit: None, before_retry: None }
    }

    pub fn policy(&self) -> &RetryPolicy {
        self.backoff.policy()
    }

    /// Run `attempt` (given its number, from 1) until it answers, fails for good, or the
    /// attempts run out. Rate limits are told to the hook; errors leave without the API key.
    pub async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, Attempt>>,
    {
        let mut retry = 0;
        loop {
            let failed = match attempt(retry + 1).await {
                Ok(response) => return Ok(response),
                Err(failed) => failed,
            };
            let mut error = failed.error;
            error.message = self.scrub(&error.message);
            let wait = error.retry_after.unwrap_or_else(|| self.backoff.delay(retry));
            if error.kind == LlmErrorKind::RateLimited {
                // Others pause at most as long as this call would have waited.
                self.rate_limited(wait.min(self.policy().max_retry_after));
            }
            let exhausted = retry + 1 >= self.policy().max_attempts;
            if !failed.transient || exhausted || wait > self.policy().max_retry_after {
                return Err(error);
            }
            // A retry is a request too: where the budget is shared, it books its slot.
            let wait = match &self.before_retry {
                Some(gate) => gate(wait).await.max(wait),
                None => wait,
            };
            tracing::warn!(error = %error.message, retry, wait_ms = wait.as_millis() as u64, "LLM call failed; retrying");
            crate::telemetry::note("gen_ai.retry", || {
                vec![
                    opentelemetry::KeyValue::new("agentd.retry", i64::from(retry + 1)),
                    opentelemetry::KeyValue::new("agentd.wait_ms", wait.as_millis() as i64),
                    opentelemetry::KeyValue::new("error.type", error.kind.as_str()),
                    opentelemetry::KeyValue::new(
                        "agentd.rate_limited",
                        error.kind == LlmErrorKind::RateLimited,
                    ),
                ]
            });
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    /// Tell the hook that nothing should start on this provider for `wait`.
    pub fn rate_limited(&self, wait: Duration) {
        if let Some(hook) = &self.on_rate_limit {
            hook(wait);
        }
    }

    /// A provider's error text as the run may keep it: without the API key, and without NUL
    /// characters (Postgres cannot store them).
    pub fn scrub(&self, text: &str) -> String {
        let mut text = match &self.api_key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "[redacted]"),
            _ => text.to_owned(),
        };
        crate::text::scrub(&mut text);
        text
    }

    /// A failed answer: its error, classified, with the wait the provider asked for; 408, 409,
    /// 429 and 5xx (Anthropic's 529 among them) are worth another attempt, unless the error says
    /// the request itself is refused (llama.cpp's server answers 500 to a `response_format` it
    /// does not know: the same request would fail again).
    pub fn failed(status: StatusCode, text: &str, retry_after: Option<Duration>) -> Attempt {
        let (code, message) = provider_error(text);
        let kind = classify(status, code.as_deref(), &message);
        let refused = matches!(
            kind,
            LlmErrorKind::ContextWindowExceeded
                | LlmErrorKind::SchemaUnsupported
                | LlmErrorKind::ToolsUnsupported
        );
        let transient = (matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()) && !refused;
        let mut error = LlmError::new(kind, format!("provider answered {status}: {message}"));
        error.retry_after = retry_after;
        Attempt { error, transient }
    }
}

/// A request that got no answer. The message says why (reqwest's own text, e.g. "error sending
/// request", names neither a timeout nor the cause), without the URL: it is configuration, not
/// something to repeat in every event.
pub(super) fn transport_failure(error: reqwest::Error, timeout: Duration) -> Attempt {
    if error.is_timeout() {
        let message = format!("the provider did not answer within the request timeout of {timeout:?}");
        return Attempt { error: LlmError::new(LlmErrorKind::Timeout, message), transient: true };
    }
    let error = error.without_url();
    let mut message = format!("request to the provider failed: {error}");
    let mut cause = std::error::Error::source(&error);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    Attempt { error: LlmError::new(LlmErrorKind::Other, message), transient: true }
}

/// The provider's error code and message, from `{"error": {"code" | "type", "message"}}` (OpenAI,
/// Azure, Anthropic) or the raw text.
pub(super) fn provider_error(text: &str) -> (Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let code = error
        .and_then(|e| e.get("code").or_else(|| e.get("type")))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let message = match error {
        Some(Value::String(message)) => message.clone(),
        Some(error) => error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
        None => text.to_owned(),
    };
    (code, truncate(message.trim()))
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Which kind of failure a provider's error is.
pub(crate) fn classify(status: StatusCode, code: Option<&str>, message: &str) -> LlmErrorKind {
    let text = format!("{} {}", code.unwrap_or_default(), message).to_lowercase();
    let mentions = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    let refuses = |text: &[&str]| {
        mentions(text)
            && mentions(&[
                "not support",
                "unsupported",
                "not enabled",
                "enabled only",
                "not available",
                "not allowed",
                "invalid",
                // A server validating the request: llama.cpp's "Input should be 'text' or
                // 'json_object'" for a `json_schema` response format.
                "validation error",
                "input should be",
            ])
    };
    match status.as_u16() {
        401 | 403 => LlmErrorKind::Authentication,
        429 => LlmErrorKind::RateLimited,
        _ if mentions(&[
            "context_length",
            "context length",
            "context window",
            "maximum context",
            "too many tokens",
            "prompt is too long",
            "reduce the length",
        ]) =>
        {
            LlmErrorKind::ContextWindowExceeded
        }
        _ if refuses(&["response_format", "json_schema", "structured output"]) => {
            LlmErrorKind::SchemaUnsupported
        }
        _ if mentions(&["tool", "function"])
            && mentions(&["not support", "unsupported", "not enabled", "not available", "not allowed"]) =>
        {
            LlmErrorKind::ToolsUnsupported
        }
        _ => LlmErrorKind::Other,
    }
}

//! Scripted fakes of the providers agentd speaks natively besides OpenAI: Anthropic's Messages
//! API and Azure OpenAI, each checking requests against its documented wire format (a request
//! the real service would refuse gets the refusal it would give, a 400 naming the problem) and
//! answering from a queue of scripted replies, errors and rate-limit answers included. Written
//! from the providers' public documentation, apart from agentd's clients, so that a mapping bug
//! in a client is refused here rather than agreed with.
//!
//! A fake may also act as a provider enforcing a requests-per-minute budget (GCRA with a
//! tolerance, as providers quantise it): a request that comes too early gets a 429.

pub mod anthropic;
pub mod azure;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Headers holding a time this long after the answer is sent (RFC 3339), as a provider
    /// dates its rate-limit resets when it answers.
    pub resets: Vec<(String, Duration)>,
    pub body: Value,
    pub delay: Duration,
    /// Between the events of a streamed answer.
    pub chunk_delay: Duration,
}

impl Scripted {
    pub fn ok(body: Value) -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            resets: Vec::new(),
            body,
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
        }
    }

    /// A header holding the time `after` from when the answer is sent.
    pub fn with_reset(mut self, name: &str, after: Duration) -> Self {
        self.resets.push((name.to_owned(), after));
        self
    }

    /// The headers to send now, the resets dated from this instant.
    pub fn headers_now(&self) -> Vec<(String, String)> {
        let now = chrono::Utc::now();
        let dated = self.resets.iter().map(|(name, after)| {
            let at = now + chrono::Duration::from_std(*after).unwrap_or_default();
            (name.clone(), at.to_rfc3339())
        });
        self.headers.iter().cloned().chain(dated).collect()
    }

    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request as the fake received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Value,
    /// The status answered.
    pub status: u16,
}

/// A provider's own requests-per-minute enforcement.
struct Budget {
    interval: Duration,
    tolerance: Duration,
    /// The theoretical arrival time of the next request.
    next: Option<Instant>,
}

#[derive(Default)]
pub(crate) struct State {
    replies: Mutex<VecDeque<Scripted>>,
    default: Mutex<Option<Scripted>>,
    seen: Mutex<Vec<Seen>>,
    budget: Mutex<Option<Budget>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The parts every fake shares: the script, the record, the budget.
#[derive(Clone, Default)]
pub struct Script(pub(crate) Arc<State>);

impl Script {
    pub fn push(&self, replies: impl IntoIterator<Item = Scripted>) {
        lock(&self.0.replies).extend(replies);
    }

    /// Answer this once the queue is empty (otherwise: a 500 saying nothing was scripted).
    pub fn set_default(&self, reply: Scripted) {
        *lock(&self.0.default) = Some(reply);
    }

    /// Refuse (429) requests beyond `rpm` a minute, allowing `tolerance` of early arrival.
    pub fn enforce_rpm(&self, rpm: u32, tolerance: Duration) {
        let interval = Duration::from_secs(60) / rpm;
        *lock(&self.0.budget) = Some(Budget { interval, tolerance, next: None });
    }

    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.0.seen).clone()
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.seen().into_iter().map(|s| s.body).collect()
    }

    /// Is this request within the provider's budget? (Books it if so.)
    pub(crate) fn admit(&self, at: Instant) -> Result<(), Duration> {
        let mut budget = lock(&self.0.budget);
        let Some(budget) = budget.as_mut() else { return Ok(()) };
        let next = budget.next.unwrap_or(at);
        if at + budget.tolerance < next {
            return Err(next - at);
        }
        budget.next = Some(next.max(at) + budget.interval);
        Ok(())
    }

    /// The next scripted answer.
    pub(crate) fn next(&self) -> Option<Scripted> {
        lock(&self.0.replies).pop_front().or_else(|| lock(&self.0.default).clone())
    }

    pub(crate) fn record(&self, seen: Seen) {
        lock(&self.0.seen).push(seen);
    }
}

/// Serve `app` on a free loopback port; its base URL.
pub(crate) async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a fake provider");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve a fake provider") });
    format!("http://{addr}")
}

/// An answer with these headers.
pub(crate) fn respond(status: u16, headers: &[(String, String)], body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body.clone())).into_response();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) =
            (axum::http::HeaderName::try_from(name.as_str()), axum::http::HeaderValue::from_str(value))
        {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

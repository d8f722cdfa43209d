//! What the protocol surfaces (MCP, A2A, AG-UI) share at the HTTP edge: server-sent events fed
//! from a task. Following a run and kicking one off for a protocol's request are use cases
//! ([`crate::service::Follower`], [`crate::service::Services::protocol_kickoff`]).
//!
//! The events are framed here rather than by axum's `Sse`: an MCP priming event is an `id`, a
//! `retry` and an empty `data:` line (the 2025-11-25 revision: "an event ID and an empty data
//! field"), and axum writes no `data:` line for empty data, which the TypeScript SDK's parser then
//! never delivers.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use tokio::sync::mpsc;

/// Comments sent on idle protocol streams so proxies keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Messages buffered between a protocol stream's task and its response.
const BUFFER: usize = 64;

/// One server-sent event: always a `data` field (possibly empty), optionally `id`, `event` and
/// `retry`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    id: Option<String>,
    name: Option<&'static str>,
    retry: Option<Duration>,
    data: String,
}

impl Event {
    /// An event carrying `data` (a JSON message; an empty string for a priming event).
    pub fn data(data: impl Into<String>) -> Self {
        Self { data: data.into(), ..Self::default() }
    }

    /// Its id (`Last-Event-ID` on reconnection). Line breaks are dropped: a field is one line.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into().replace(['\r', '\n', '\0'], ""));
        self
    }

    /// Its event type (`message` when none is given).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// How long a client waits before it reconnects.
    pub fn retry(mut self, after: Duration) -> Self {
        self.retry = Some(after);
        self
    }

    /// The event as it goes on the wire, ending with its blank line.
    pub fn encode(&self) -> Bytes {
        let mut text = String::with_capacity(self.data.len() + 64);
        if let Some(id) = &self.id {
            let _ = writeln!(text, "id: {id}");
        }
        if let Some(name) = self.name {
            let _ = writeln!(text, "event: {name}");
        }
        if let Some(retry) = self.retry {
            let _ = writeln!(text, "retry: {}", retry.as_millis());
        }
        // Every line of the data its own field; an empty payload still one empty field.
        for line in self.data.split('\n') {
            let _ = writeln!(text, "data: {}", line.strip_suffix('\r').unwrap_or(line));
        }
        text.push('\n');
        Bytes::from(text)
    }
}

/// A channel whose messages become a server-sent event stream; the sender's task sees the
/// client leave when `send` fails (or `closed()` resolves).
pub fn channel() -> (mpsc::Sender<Event>, mpsc::Receiver<Event>) {
    mpsc::channel(BUFFER)
}

/// The response of a stream fed by `receiver`, with a keep-alive comment after every quiet
/// [`KEEP_ALIVE`].
pub fn response(receiver: mpsc::Receiver<Event>) -> Response {
    let frames = stream::unfold(receiver, |mut receiver| async move {
        let frame = match tokio::time::timeout(KEEP_ALIVE, receiver.recv()).await {
            Ok(Some(event)) => event.encode(),
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok::<_, Infallible>(frame), receiver))
    });
    let mut response = Body::from_stream(frames).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priming_event_has_an_empty_data_field() {
        let event = Event::data("").id("p1").retry(Duration::from_secs(2));
        assert_eq!(&event.encode()[..], b"id: p1\nretry: 2000\ndata: \n\n");
    }

    #[test]
    fn every_line_of_the_data_is_a_field_and_ids_stay_one_line() {
        let event = Event::data("a\nb").name("message").id("x\ny");
        assert_eq!(&event.encode()[..], b"id: xy\nevent: message\ndata: a\ndata: b\n\n");
    }
}

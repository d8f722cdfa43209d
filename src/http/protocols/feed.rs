//! What the protocol surfaces (MCP, A2A, AG-UI) share at the HTTP edge: server-sent events fed
//! from a task. Following a run and kicking one off for a protocol's request are use cases
//! ([`crate::service::Follower`], [`crate::service::Services::protocol_kickoff`]).

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use tokio::sync::mpsc;

/// Comments sent on idle protocol streams so proxies keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Messages buffered between a protocol stream's task and its response.
const BUFFER: usize = 64;

/// A channel whose messages become a server-sent event stream; the sender's task sees the
/// client leave when `send` fails (or `closed()` resolves).
pub fn channel() -> (mpsc::Sender<SseEvent>, mpsc::Receiver<SseEvent>) {
    mpsc::channel(BUFFER)
}

/// The response of a stream fed by `receiver`, with keep-alive comments.
pub fn response(receiver: mpsc::Receiver<SseEvent>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let events = stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((Ok(event), receiver))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

//! What the protocol surfaces (MCP, A2A, AG-UI) share: kicking off a published crew for a
//! protocol's request, following the run's events from any replica (the event bus, with the
//! database behind it, so a stream that resumes on another replica after a crash misses nothing),
//! and server-sent events fed from a task.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::AppState;
use crate::domain::{Caller, KeyEnd, Run, RunId};
use crate::events::stream::{run_stream, FrameStream};
use crate::events::Envelope;
use crate::service::{Kicked, ServiceResult, WatchedKey};
use crate::store::Audit;

/// Comments sent on idle protocol streams so proxies keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Messages buffered between a protocol stream's task and its response.
const BUFFER: usize = 64;

/// What a followed run brings next.
pub enum Step {
    /// A journaled event (in `seq` order, none skipped).
    Event(Arc<Envelope>),
    /// A streamed reply's text (`llm.delta` data), live only.
    Delta(Arc<str>),
    /// The stream ended: after the run's terminal event, or the server is shutting down.
    End,
    /// The caller's key ended (revoked, expired, its tenant deleted): the protocol's stream ends
    /// with its own error saying so, and sends nothing more.
    KeyEnded(KeyEnd),
}

/// A run's events after a position, as a protocol stream consumes them for a caller (whose key
/// ending ends the following).
pub struct Follow {
    frames: FrameStream,
    key: WatchedKey,
    shutdown: CancellationToken,
}

impl Follow {
    pub fn new(state: &AppState, caller: &Caller, run: RunId, after: i64) -> Self {
        let key = state.services.watch_key(caller);
        let frames = run_stream(state.store.clone(), &state.bus, run, after);
        Self { frames, key, shutdown: state.shutdown.clone() }
    }

    pub async fn next(&mut self) -> Step {
        let frame = tokio::select! {
            // The key first: nothing more is handed on once it has ended.
            biased;
            why = self.key.ended() => return Step::KeyEnded(why),
            () = self.shutdown.cancelled() => None,
            frame = self.frames.frames.recv() => frame,
        };
        match frame {
            Some(frame) => match (frame.event, frame.delta) {
                (Some(event), _) => Step::Event(event),
                (None, Some(delta)) => Step::Delta(delta),
                (None, None) => Step::End,
            },
            None => Step::End,
        }
    }
}

/// A protocol request's kickoff of a published crew (checked by the caller): a run like any
/// other.
#[derive(Debug, Default)]
pub struct ProtocolKickoff<'a> {
    pub crew: &'a str,
    pub inputs: Map<String, Value>,
    /// The thread the run joins; a busy thread refuses it (409) unless `enqueue`.
    pub thread: Option<uuid::Uuid>,
    pub metadata: Map<String, Value>,
    /// Makes a repeated request answer with the same run.
    pub idempotency_key: Option<&'a str>,
    /// Stream the model's replies (`llm.delta`).
    pub stream: bool,
    /// A busy thread queues the run (`enqueue`) instead of refusing it.
    pub enqueue: bool,
    /// The caller's trace (its `traceparent`), which the run joins.
    pub trace: Option<crate::domain::RunTrace>,
}

impl ProtocolKickoff<'_> {
    pub async fn start(self, state: &AppState, caller: &Caller) -> ServiceResult<Run> {
        let mut body = json!({"crew": self.crew, "inputs": self.inputs, "metadata": self.metadata});
        if let Some(thread) = self.thread {
            body["thread_id"] = json!(thread);
            body["multitask_strategy"] = json!(if self.enqueue { "enqueue" } else { "reject" });
        }
        if self.stream {
            body["stream"] = json!(true);
        }
        match state.services.kickoff(caller, body, self.idempotency_key, self.trace).await? {
            Kicked::Created(run) | Kicked::Replayed(run) => Ok(run),
        }
    }
}

/// The idempotency key of a protocol request named by `identity` (a session and request id, a
/// thread and run id): `prefix:` and 128 bits of its SHA-256, as hex (ids may be long).
pub fn request_key(prefix: &str, identity: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().take(16).map(|byte| format!("{byte:02x}")).collect();
    format!("{prefix}:{hex}")
}

/// The audit record of a change a protocol request makes (`run.cancel` from `/mcp`, …).
pub fn audit(caller: &Caller, action: &str, resource: &str) -> Arc<Audit> {
    Arc::new(Audit::new(caller.key_id, &caller.tenant, action, resource))
}

/// A channel whose messages become a server-sent event stream; the sender's task sees the
/// client leave when `send` fails (or `closed()` resolves).
pub fn sse_channel() -> (mpsc::Sender<SseEvent>, mpsc::Receiver<SseEvent>) {
    mpsc::channel(BUFFER)
}

/// The response of a stream fed by `receiver`, with keep-alive comments.
pub fn sse_response(
    receiver: mpsc::Receiver<SseEvent>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let events = stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((Ok(event), receiver))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

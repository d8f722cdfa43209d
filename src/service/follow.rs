//! A run followed for a protocol's stream (MCP, A2A, AG-UI): its events after a position from any
//! replica (the event bus, with the database behind it, so a stream that resumes on another
//! replica after a crash misses nothing), ended by the caller's key ending or the server shutting
//! down.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Services, WatchedKey};
use crate::domain::{Caller, KeyEnd, RunId};
use crate::events::stream::{run_stream, FrameStream};
use crate::events::{Envelope, EventBus};

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

/// Follows runs for the protocols' streams: the use cases with this replica's event bus and its
/// shutdown signal (only a replica that serves the API has them). Cheap to clone.
#[derive(Clone)]
pub struct Follower {
    services: Services,
    bus: EventBus,
    shutdown: CancellationToken,
}

impl Follower {
    pub fn new(services: Services, bus: EventBus, shutdown: CancellationToken) -> Self {
        Self { services, bus, shutdown }
    }

    /// `run`'s events after `after`, as `caller` may read them (the caller has been shown the run:
    /// this checks nothing but the caller's key, which ending ends the following).
    pub fn follow(&self, caller: &Caller, run: RunId, after: i64) -> Follow {
        let key = self.services.watch_key(caller);
        let frames = run_stream(self.services.store.clone(), &self.bus, run, after);
        Follow { frames, key, shutdown: self.shutdown.clone() }
    }

    /// Cancelled when the server shuts down.
    pub fn shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }
}

/// A run's events after a position, as a protocol stream consumes them for a caller.
pub struct Follow {
    frames: FrameStream,
    key: WatchedKey,
    shutdown: CancellationToken,
}

impl Follow {
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

//! Live reply text (`llm.delta`): a streaming run's worker hands each piece of a reply to the
//! [`DeltaRelay`], which coalesces what arrives while a notification is on its way and announces
//! it on `agentd_deltas` (a plain `pg_notify`, outside any transaction: deltas are never
//! journaled). Every replica's listener hands them to the streams there that follow the run
//! ([`super::EventBus::publish_delta`]). Best effort by design: the journaled reply is the record,
//! a delta lost to a full queue or a dropped connection is not sent again, and a stream that
//! reconnects gets only durable events.

use std::sync::Arc;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::domain::RunId;
use crate::engine::{DeltaPublisher, LiveDelta};
use crate::store::{Store, DELTAS_CHANNEL};

/// The SSE `event:` of a delta.
pub const LLM_DELTA: &str = "llm.delta";
/// Deltas waiting to be announced at most; past it new ones are dropped (and counted in the log).
const QUEUE: usize = 8192;
/// The longest text one notification carries (a notification holds under 8,000 bytes).
const MAX_TEXT_BYTES: usize = 6000;

/// The longest a call waits for its deltas to be announced before going on without them.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// What the relay's queue carries: a delta, or a caller waiting until those before it are out.
enum Item {
    Delta(LiveDelta),
    Flush(oneshot::Sender<()>),
}

/// Announces live deltas for every replica's streams.
pub struct DeltaRelay {
    queue: mpsc::Sender<Item>,
}

impl DeltaRelay {
    /// A relay announcing through `store` until the process ends.
    pub fn start(store: Store) -> Arc<Self> {
        let (queue, deltas) = mpsc::channel(QUEUE);
        tokio::spawn(announce(store, deltas));
        Arc::new(Self { queue })
    }
}

impl DeltaPublisher for DeltaRelay {
    fn publish(&self, delta: LiveDelta) {
        if self.queue.try_send(Item::Delta(delta)).is_err() {
            tracing::debug!(
                "the delta queue is full; a live delta was dropped (the reply is journaled whole)"
            );
        }
    }

    fn flushed(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let (done, announced) = oneshot::channel();
            let waited = tokio::time::timeout(FLUSH_WAIT, async {
                if self.queue.send(Item::Flush(done)).await.is_ok() {
                    let _ = announced.await;
                }
            });
            if waited.await.is_err() {
                tracing::debug!("live deltas were not announced in time; the call goes on");
            }
        })
    }
}

/// An `llm.delta` message's data: an envelope like the durable events', without `seq`.
#[derive(Serialize)]
struct Message<'a> {
    run_id: RunId,
    #[serde(rename = "type")]
    event_type: &'static str,
    at: String,
    task: &'a str,
    agent: &'a str,
    data: Data<'a>,
}

#[derive(Serialize)]
struct Data<'a> {
    iteration: u32,
    attempt: u32,
    text: &'a str,
}

/// Announce deltas as they come: everything queued while the previous notification went out is
/// coalesced (per run, task, iteration and attempt, in order) into the next.
/// A flush is answered once what came before it is announced.
async fn announce(store: Store, mut items: mpsc::Receiver<Item>) {
    while let Some(first) = items.recv().await {
        let mut batch: Vec<LiveDelta> = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(item) = next.take().or_else(|| items.try_recv().ok()) {
            match item {
                Item::Flush(done) => flushes.push(done),
                Item::Delta(more) => match batch.last_mut() {
                    Some(last)
                        if last.same_reply(&more) && last.text.len() + more.text.len() <= MAX_TEXT_BYTES =>
                    {
                        last.text.push_str(&more.text)
                    }
                    _ => batch.push(more),
                },
            }
        }
        if !batch.is_empty() {
            let at = Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true);
            let payloads: Vec<String> = batch.iter().flat_map(|delta| payloads(delta, &at)).collect();
            if let Err(error) = store.notify_all(DELTAS_CHANNEL, &payloads).await {
                tracing::debug!(%error, "live deltas were not announced (the reply is journaled whole)");
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// A delta's notifications: its text in pieces that fit one.
fn payloads(delta: &LiveDelta, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = delta.text.as_str();
    while !rest.is_empty() {
        let mut end = rest.len().min(MAX_TEXT_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        let message = Message {
            run_id: delta.run_id,
            event_type: LLM_DELTA,
            at: at.to_owned(),
            task: &delta.task,
            agent: &delta.agent,
            data: Data { iteration: delta.iteration, attempt: delta.attempt, text: piece },
        };
        if let Ok(json) = serde_json::to_string(&message) {
            out.push(json);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_delta_is_split_on_char_boundaries_into_notifications_that_fit() {
        let delta = LiveDelta {
            run_id: RunId::new(),
            task: "t".into(),
            agent: "a".into(),
            iteration: 2,
            attempt: 1,
            text: "é".repeat(5000),
        };
        let all = payloads(&delta, "2026-12-01T00:00:00Z");
        assert_eq!(all.len(), 2);
        let mut text = String::new();
        for payload in &all {
            assert!(payload.len() < 7900, "{}", payload.len());
            let value: serde_json::Value = serde_json::from_str(payload).expect("json");
            assert_eq!(
                (value["type"].as_str(), value["data"]["iteration"].as_u64()),
                (Some("llm.delta"), Some(2))
            );
            text.push_str(value["data"]["text"].as_str().expect("text"));
        }
        assert_eq!(text, delta.text);
    }
}

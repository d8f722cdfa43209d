//! Live step events for every replica: one `Store::listen` stream on `agentd_events` per replica (a
//! trigger names each event at commit, in commit order) feeds in-process broadcast channels,
//! one per watched run plus one for the firehose. The listener reads the events that a stream on
//! this replica follows (one query for the notifications waiting) and passes on the others'
//! names only, for waiters. Streams subscribe first, then replay from the database, then follow
//! the channel; a subscriber that falls behind reads the database again instead of losing events,
//! so a slow client never slows a worker or grows memory.

pub mod deltas;
mod listener;
pub mod stream;
mod wait;

pub use wait::wait_for_run;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::domain::{Event, EventType, RunId};
use crate::store::Store;

/// Items per channel a subscriber may fall behind before it reads the database instead.
const CHANNEL_CAPACITY: usize = 1024;

/// An event with its JSON, serialised once for every subscriber.
#[derive(Debug)]
pub struct Envelope {
    pub event: Event,
    pub json: String,
}

impl Envelope {
    pub fn new(event: Event) -> Arc<Self> {
        let json = serde_json::to_string(&event).unwrap_or_else(|_| "{}".to_owned());
        Arc::new(Self { event, json })
    }
}

/// What the bus carries.
#[derive(Debug, Clone)]
pub enum BusItem {
    /// A committed event with its global id and its run's crew and tenant.
    Event { id: i64, crew: Option<Arc<str>>, tenant: Option<Arc<str>>, event: Arc<Envelope> },
    /// A committed event that no stream here needed the body of (a waiter follows its run):
    /// what it is, not what it says. A stream that receives one reads the database.
    Notice { run_id: RunId, seq: i64, event_type: EventType },
    /// Notifications may have been missed (the listener reconnected): read the database.
    Resync,
    /// Live only, for the run's streams: a streamed reply's text, as the `data` of an
    /// `llm.delta` message (never journaled, no `seq`).
    Delta { run_id: RunId, json: Arc<str> },
}

/// The replica's event bus. Cheap to clone.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

/// One followed run's channel, and how many of its receivers need events' bodies (streams; a
/// waiter needs only their types).
struct RunChannel {
    sender: broadcast::Sender<BusItem>,
    readers: usize,
}

struct Inner {
    runs: Mutex<HashMap<RunId, RunChannel>>,
    all: broadcast::Sender<BusItem>,
    published: AtomicU64,
    subscribers: AtomicI64,
}

impl EventBus {
    /// A bus fed by `store`'s notifications until `stop`.
    pub fn start(store: Store, stop: CancellationToken) -> Self {
        let bus = Self::detached();
        tokio::spawn(listener::listen(store, bus.clone(), stop));
        bus
    }

    /// A bus with no listener (fed by hand in tests).
    pub fn detached() -> Self {
        let (all, _) = broadcast::channel(CHANNEL_CAPACITY);
        let inner = Inner {
            runs: Mutex::new(HashMap::new()),
            all,
            published: AtomicU64::new(0),
            subscribers: AtomicI64::new(0),
        };
        Self { inner: Arc::new(inner) }
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, RunChannel>> {
        self.inner.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follow one run's events, bodies included. The run's channel exists while someone follows it.
    pub fn subscribe_run(&self, run_id: RunId) -> RunSubscription {
        self.follow(run_id, true)
    }

    /// Follow one run's events by type only (`Notice`s, or `Event`s when a stream here reads them).
    pub fn watch_run(&self, run_id: RunId) -> RunSubscription {
        self.follow(run_id, false)
    }

    fn follow(&self, run_id: RunId, reads: bool) -> RunSubscription {
        let mut runs = self.runs();
        let channel = runs
            .entry(run_id)
            .or_insert_with(|| RunChannel { sender: broadcast::channel(CHANNEL_CAPACITY).0, readers: 0 });
        channel.readers += usize::from(reads);
        let receiver = channel.sender.subscribe();
        RunSubscription { receiver, bus: self.clone(), run_id, reads }
    }

    /// Follow every run's events.
    pub fn subscribe_all(&self) -> broadcast::Receiver<BusItem> {
        self.inner.all.subscribe()
    }

    /// Deliver an item to the run's followers and the firehose.
    pub fn publish(&self, item: BusItem) {
        self.inner.published.fetch_add(1, Ordering::Relaxed);
        let run_id = match &item {
            BusItem::Event { event, .. } => Some(event.event.run_id),
            BusItem::Notice { run_id, .. } | BusItem::Delta { run_id, .. } => Some(*run_id),
            BusItem::Resync => None,
        };
        {
            let mut runs = self.runs();
            match run_id {
                Some(run_id) => {
                    if let Some(channel) = runs.get(&run_id) {
                        if channel.sender.send(item.clone()).is_err() {
                            runs.remove(&run_id);
                        }
                    }
                }
                None => runs.retain(|_, channel| channel.sender.send(item.clone()).is_ok()),
            }
        }
        let _ = self.inner.all.send(item);
    }

    /// Hand a streamed reply's text to the run's streams here (not the firehose, not waiters).
    pub fn publish_delta(&self, run_id: RunId, json: Arc<str>) {
        let runs = self.runs();
        if let Some(channel) = runs.get(&run_id).filter(|c| c.readers > 0) {
            let _ = channel.sender.send(BusItem::Delta { run_id, json });
        }
    }

    /// Does anyone on this replica follow `run_id`'s events (or every run's)?
    pub fn is_followed(&self, run_id: RunId) -> bool {
        self.inner.all.receiver_count() > 0 || self.runs().contains_key(&run_id)
    }

    /// Does a stream on this replica need the bodies of `run_id`'s events?
    pub fn is_read(&self, run_id: RunId) -> bool {
        self.inner.all.receiver_count() > 0 || self.runs().get(&run_id).is_some_and(|c| c.readers > 0)
    }

    /// Events arrived that nobody here follows (counted as published, delivered to no one).
    pub fn count_unfollowed(&self, events: usize) {
        self.inner.published.fetch_add(events as u64, Ordering::Relaxed);
    }

    /// Events published on this replica since start.
    pub fn published(&self) -> u64 {
        self.inner.published.load(Ordering::Relaxed)
    }

    /// Streams currently open on this replica.
    pub fn subscribers(&self) -> i64 {
        self.inner.subscribers.load(Ordering::Relaxed)
    }

    /// Count an open stream for as long as the guard lives.
    pub fn track_subscriber(&self) -> SubscriberGuard {
        self.inner.subscribers.fetch_add(1, Ordering::Relaxed);
        SubscriberGuard { bus: self.clone() }
    }
}

/// A receiver of one run's events; the last one dropped removes the run's channel.
pub struct RunSubscription {
    pub receiver: broadcast::Receiver<BusItem>,
    bus: EventBus,
    run_id: RunId,
    reads: bool,
}

impl Drop for RunSubscription {
    fn drop(&mut self) {
        let mut runs = self.bus.runs();
        let Some(channel) = runs.get_mut(&self.run_id) else { return };
        channel.readers = channel.readers.saturating_sub(usize::from(self.reads));
        // The count still includes this receiver, which is dropped right after.
        if channel.sender.receiver_count() <= 1 {
            runs.remove(&self.run_id);
        }
    }
}

/// Counts a stream as open until dropped.
pub struct SubscriberGuard {
    bus: EventBus,
}

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        self.bus.inner.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_channel_lives_as_long_as_its_subscribers() {
        let bus = EventBus::detached();
        let run = RunId::new();
        let first = bus.subscribe_run(run);
        let second = bus.subscribe_run(run);
        drop(first);
        assert_eq!(bus.runs().len(), 1);
        drop(second);
        assert!(bus.runs().is_empty(), "no channel left behind");
    }

    #[test]
    fn bodies_are_read_for_streams_not_for_waiters() {
        let bus = EventBus::detached();
        let run = RunId::new();
        let waiter = bus.watch_run(run);
        assert!(bus.is_followed(run) && !bus.is_read(run), "a waiter needs types only");
        let stream = bus.subscribe_run(run);
        assert!(bus.is_read(run));
        drop(stream);
        assert!(bus.is_followed(run) && !bus.is_read(run), "the stream's need left with it");
        drop(waiter);
        assert!(!bus.is_followed(run));
        let firehose = bus.subscribe_all();
        assert!(bus.is_read(RunId::new()), "the firehose reads every run's events");
        drop(firehose);
    }
}

//! The streams clients tail: one run's events after a `seq`, or every run's after a global id.
//! Each stream is a task that subscribes first, replays from the database, then follows the bus,
//! feeding a small bounded channel the HTTP layer drains. When the client is slow the task waits on
//! that channel, its bus receiver falls behind, and it reads the database again when it goes on:
//! memory stays bounded and no event is lost, duplicated or reordered. A live delta that comes
//! after its reply's `llm.finished` (it was on its way while the stream read that event from the
//! database) is dropped: a client never sees a reply's text after the reply ended.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::{BusItem, Envelope, EventBus, RunSubscription, SubscriberGuard};
use crate::domain::{EventType, RunId, TenantId};
use crate::store::{Store, StoreResult};

/// Frames buffered between a stream's task and its HTTP response.
const FRAME_BUFFER: usize = 64;
/// Events read from the database per query.
const PAGE: i64 = 500;

/// One message of a stream.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The resume position: the run's `seq`, or the global event id on the firehose.
    pub id: i64,
    /// The event; none for a bare position (where a firehose that starts at the end starts).
    pub event: Option<Arc<Envelope>>,
    /// Live only: the data of an `llm.delta` message, sent without an id (so `Last-Event-ID`
    /// keeps naming the last durable event); `id` and `event` are then unused.
    pub delta: Option<Arc<str>>,
}

/// Frames of a stream, in order; ends after a run's terminal event (or when the bus closes).
pub struct FrameStream {
    pub frames: mpsc::Receiver<Frame>,
    _guard: SubscriberGuard,
}

/// Stream run `run_id`'s events after `after`, ending with its terminal event.
pub fn run_stream(store: Store, bus: &EventBus, run_id: RunId, after: i64) -> FrameStream {
    let subscription = bus.subscribe_run(run_id);
    let (sender, frames) = mpsc::channel(FRAME_BUFFER);
    tokio::spawn(async move {
        let mut pump = RunPump { store, run_id, last: after, sender, ended: HashSet::new() };
        if let Err(error) = pump.run(subscription).await {
            tracing::warn!(%error, %run_id, "event stream stopped on a database error");
        }
    });
    FrameStream { frames, _guard: bus.track_subscriber() }
}

/// Whether the pump should go on.
enum Flow {
    Continue,
    Done,
}

/// A stream's pump: what it does with an item of the bus, and how it reads what it missed.
trait Pump {
    fn sender(&self) -> &mpsc::Sender<Frame>;
    /// Send what `item` brings the client, if anything.
    async fn item(&mut self, item: BusItem) -> StoreResult<Flow>;
    /// Send everything the database has that the client has not had.
    async fn catch_up(&mut self) -> StoreResult<Flow>;
}

/// Pump the bus's items into `pump`'s stream until its client leaves or the bus closes; a lagging
/// receiver catches up from the database.
async fn pump<P: Pump>(pump: &mut P, receiver: &mut broadcast::Receiver<BusItem>) -> StoreResult<()> {
    loop {
        let item = tokio::select! {
            item = receiver.recv() => item,
            () = pump.sender().closed() => return Ok(()),
        };
        let flow = match item {
            Ok(item) => pump.item(item).await?,
            Err(broadcast::error::RecvError::Lagged(_)) => pump.catch_up().await?,
            Err(broadcast::error::RecvError::Closed) => Flow::Done,
        };
        if let Flow::Done = flow {
            return Ok(());
        }
    }
}

struct RunPump {
    store: Store,
    run_id: RunId,
    /// The last `seq` sent.
    last: i64,
    sender: mpsc::Sender<Frame>,
    /// The agent turns whose `llm.finished` was sent (and no `llm.started` since): a delta of one
    /// of them is late.
    ended: HashSet<Reply>,
}

/// An agent's turn, as its `llm.*` events and its deltas name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Reply {
    task: String,
    agent: String,
    iteration: u64,
}

impl Reply {
    /// The turn an `llm.started` or `llm.finished` event is of (`None` for a side call).
    fn of_event(event: &crate::domain::Event) -> Option<Self> {
        Some(Self {
            task: event.task.clone()?,
            agent: event.agent.clone()?,
            iteration: event.data.get("iteration")?.as_u64()?,
        })
    }

    /// The turn a delta's data is of.
    fn of_delta(json: &str) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Delta {
            task: String,
            agent: String,
            data: Data,
        }
        #[derive(serde::Deserialize)]
        struct Data {
            iteration: u64,
        }
        let delta: Delta = serde_json::from_str(json).ok()?;
        Some(Self { task: delta.task, agent: delta.agent, iteration: delta.data.iteration })
    }
}

impl Pump for RunPump {
    fn sender(&self) -> &mpsc::Sender<Frame> {
        &self.sender
    }

    async fn item(&mut self, item: BusItem) -> StoreResult<Flow> {
        Ok(match item {
            BusItem::Event { event, .. } if event.event.seq == self.last + 1 => self.send(event).await,
            BusItem::Event { event, .. } if event.event.seq <= self.last => Flow::Continue,
            BusItem::Delta { json, .. } => self.send_delta(json).await,
            _ => return self.read_missed().await,
        })
    }

    async fn catch_up(&mut self) -> StoreResult<Flow> {
        self.read_missed().await
    }
}

impl RunPump {
    async fn run(&mut self, mut subscription: RunSubscription) -> StoreResult<()> {
        // The status before the events: a run's terminal event commits with its terminal status,
        // so a run seen ended has all its events readable by the catch-up that follows. Read the
        // other way round, a run ending between the two reads ended the stream without them.
        let ended = self.store.run_status(self.run_id).await?.is_none_or(|status| status.is_terminal());
        if let Flow::Done = self.catch_up().await? {
            return Ok(());
        }
        // Resumed after the terminal event of a finished run: nothing more will come. A run not
        // ended when its status was read sends the rest through the subscription, taken first.
        if ended {
            return Ok(());
        }
        pump(self, &mut subscription.receiver).await
    }

    /// Send everything the database has after `last`.
    async fn read_missed(&mut self) -> StoreResult<Flow> {
        loop {
            let page = self.store.list_events(self.run_id, self.last, PAGE).await?;
            let full = page.len() as i64 == PAGE;
            for event in page {
                if let Flow::Done = self.send(Envelope::new(event)).await {
                    return Ok(Flow::Done);
                }
            }
            if !full {
                return Ok(Flow::Continue);
            }
        }
    }

    /// A streamed reply's text, as it arrives (a stream that is catching up drops none: deltas
    /// come only live).
    async fn send_delta(&mut self, json: Arc<str>) -> Flow {
        if !self.ended.is_empty() && Reply::of_delta(&json).is_some_and(|reply| self.ended.contains(&reply)) {
            return Flow::Continue;
        }
        match self.sender.send(Frame { id: self.last, event: None, delta: Some(json) }).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Done,
        }
    }

    async fn send(&mut self, event: Arc<Envelope>) -> Flow {
        self.last = event.event.seq;
        match event.event.event_type {
            EventType::LlmFinished => self.ended.extend(Reply::of_event(&event.event)),
            EventType::LlmStarted if !self.ended.is_empty() => {
                if let Some(reply) = Reply::of_event(&event.event) {
                    self.ended.remove(&reply);
                }
            }
            _ => {}
        }
        let terminal = event.event.event_type.is_terminal();
        let frame = Frame { id: event.event.seq, event: Some(event), delta: None };
        if self.sender.send(frame).await.is_err() || terminal {
            return Flow::Done;
        }
        Flow::Continue
    }
}

/// Which runs' events a firehose shows.
#[derive(Debug, Clone, Default)]
pub struct FirehoseFilter {
    /// Only this crew's runs.
    pub crew: Option<String>,
    /// Only this tenant's runs (`None`: every tenant's, for an admin).
    pub tenant: Option<TenantId>,
}

impl FirehoseFilter {
    fn wants(&self, crew: Option<&str>, tenant: Option<&str>) -> bool {
        self.crew.as_deref().is_none_or(|c| crew == Some(c))
            && self.tenant.as_ref().is_none_or(|t| tenant == Some(t.as_str()))
    }
}

/// Stream every run's events after global id `after`, optionally of one crew's runs. With no
/// `after`, start at the end of the log: the first frame is a bare position (the highest id
/// committed once the stream is subscribed), then only events committed later follow.
pub fn firehose(store: Store, bus: &EventBus, after: Option<i64>, filter: FirehoseFilter) -> FrameStream {
    let receiver = bus.subscribe_all();
    let (sender, frames) = mpsc::channel(FRAME_BUFFER);
    tokio::spawn(async move {
        let last = after.unwrap_or(0);
        let mut pump = FirehosePump { store, filter, last, sent: HashSet::new(), sender };
        if let Err(error) = pump.run(receiver, after.is_none()).await {
            tracing::warn!(%error, "firehose stopped on a database error");
        }
    });
    FrameStream { frames, _guard: bus.track_subscriber() }
}

struct FirehosePump {
    store: Store,
    filter: FirehoseFilter,
    /// The highest global id sent.
    last: i64,
    /// Ids sent out of the database at or below `last` (live events can commit out of id order;
    /// these are not sent twice).
    sent: HashSet<i64>,
    sender: mpsc::Sender<Frame>,
}

impl Pump for FirehosePump {
    fn sender(&self) -> &mpsc::Sender<Frame> {
        &self.sender
    }

    async fn item(&mut self, item: BusItem) -> StoreResult<Flow> {
        Ok(match item {
            BusItem::Event { id, crew, tenant, event } => {
                let wanted = self.filter.wants(crew.as_deref(), tenant.as_deref());
                if wanted && !self.sent.contains(&id) {
                    self.send(id, event).await
                } else {
                    Flow::Continue
                }
            }
            _ => return self.read_missed().await,
        })
    }

    async fn catch_up(&mut self) -> StoreResult<Flow> {
        self.read_missed().await
    }
}

impl FirehosePump {
    async fn run(&mut self, mut receiver: broadcast::Receiver<BusItem>, from_end: bool) -> StoreResult<()> {
        if from_end {
            // Subscribed already: an event committed from here on reaches the receiver, whatever
            // its id (ids are taken at insert, so a later commit may carry a lower one).
            self.last = self.store.last_event_id().await?;
            if self.sender.send(Frame { id: self.last, event: None, delta: None }).await.is_err() {
                return Ok(());
            }
        } else if let Flow::Done = self.catch_up().await? {
            return Ok(());
        }
        pump(self, &mut receiver).await
    }

    async fn read_missed(&mut self) -> StoreResult<Flow> {
        loop {
            let (crew, tenant) = (self.filter.crew.as_deref(), self.filter.tenant.as_ref());
            let page = self.store.list_all_events(self.last, PAGE, crew, tenant).await?;
            let full = page.len() as i64 == PAGE;
            for (id, event) in page {
                if let Flow::Done = self.send(id, Envelope::new(event)).await {
                    return Ok(Flow::Done);
                }
            }
            if !full {
                return Ok(Flow::Continue);
            }
        }
    }

    async fn send(&mut self, id: i64, event: Arc<Envelope>) -> Flow {
        if id > self.last {
            self.last = id;
        }
        self.sent.insert(id);
        if self.sent.len() > 100_000 {
            let floor = self.last - 50_000;
            self.sent.retain(|sent| *sent > floor);
        }
        match self.sender.send(Frame { id, event: Some(event), delta: None }).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Done,
        }
    }
}

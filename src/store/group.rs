//! Group commit: concurrent writes of one kind (kickoffs, journal steps, lease renewals) queue for
//! a few writer tasks, each of which stores whatever has queued in one transaction with one
//! statement per table. Under load many writes share a commit and every statement covers many
//! rows; a lone write is taken at once (nothing waits for a batch to fill), so an idle service
//! answers as fast as with a transaction per write.
//!
//! A batch holds at most one item per key (the run a journal step belongs to): a key's items are
//! written in the order they were submitted. When a batch fails as a whole for a reason that is
//! not the database being unreachable (a row one item carries that Postgres refuses, a deadlock),
//! its items are retried one by one, so one bad item never fails the others. An item whose future
//! is dropped is still written: as with an acknowledgement lost in transit, the submitter cannot
//! tell the two apart, and every writer here is fenced against stale submitters.
//!
//! A writer keeps a connection of its own, outside the pool ([`Held`]): taking one from the pool
//! and giving it back cost each write an acquire and a round trip (sqlx tests every connection it
//! takes back), on the critical path of every run. It is closed, and another taken, after a write
//! that failed as a whole; it is closed when the pool is.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use sqlx::{PgConnection, PgPool};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::StoreError;

/// One kind of grouped write.
pub(super) trait GroupWrite: Send + Sync + 'static {
    type Item: Send + 'static;
    type Output: Send + 'static;

    /// Items per transaction at most.
    const MAX_BATCH: usize;

    /// The key no two items of one batch may share; `None` for items that may go with any.
    fn key(item: &Self::Item) -> Option<Uuid>;

    /// Write `items` in one transaction: one output per item, in order, once it committed.
    fn write(
        connection: &mut Held,
        items: &[Self::Item],
    ) -> impl Future<Output = Result<Vec<Self::Output>, Failure<Self::Output>>> + Send;

    /// An item's answer when its write failed with `error`.
    fn failed(error: StoreError) -> Self::Output;
}

/// Why a batch did not commit.
pub(super) enum Failure<O> {
    /// The item at this index cannot be written (the others may be): it gets this answer and the
    /// rest are written without it.
    Item(usize, O),
    /// The transaction failed.
    Whole(StoreError),
}

impl<O> From<sqlx::Error> for Failure<O> {
    fn from(e: sqlx::Error) -> Self {
        Failure::Whole(e.into())
    }
}

impl<O> From<StoreError> for Failure<O> {
    fn from(e: StoreError) -> Self {
        Failure::Whole(e)
    }
}

struct Job<W: GroupWrite> {
    key: Option<Uuid>,
    item: W::Item,
    reply: oneshot::Sender<W::Output>,
}

/// The queues of one kind of write, one per writer task (started on first use).
pub(super) struct Group<W: GroupWrite> {
    queues: Vec<mpsc::UnboundedSender<Job<W>>>,
    next: AtomicUsize,
    counters: Arc<Counters>,
}

/// What a group's writers have done (for `/metrics`).
#[derive(Debug, Default)]
struct Counters {
    batches: AtomicU64,
    items: AtomicU64,
    busy_micros: AtomicU64,
}

/// A snapshot of a group's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupStats {
    /// Transactions written (retries of a failed batch included).
    pub batches: u64,
    /// Items written in them.
    pub items: u64,
    /// Time the writers spent writing, in seconds.
    pub busy_seconds: f64,
}

impl<W: GroupWrite> Group<W> {
    /// Start `writers` writer tasks on the current runtime. They end when the group is dropped.
    pub(super) fn start(pool: &PgPool, writers: usize) -> Self {
        let counters = Arc::new(Counters::default());
        let queues = (0..writers.max(1))
            .map(|_| {
                let (sender, receiver) = mpsc::unbounded_channel();
                tokio::spawn(writer::<W>(pool.clone(), receiver, counters.clone()));
                sender
            })
            .collect();
        Self { queues, next: AtomicUsize::new(0), counters }
    }

    pub(super) fn stats(&self) -> GroupStats {
        GroupStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            items: self.counters.items.load(Ordering::Relaxed),
            busy_seconds: self.counters.busy_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// Queue `item` and wait for its answer. Items with a key always go to the same writer (so
    /// they stay in order); others go round the writers.
    pub(super) async fn submit(&self, item: W::Item) -> W::Output {
        let key = W::key(&item);
        let index = match key {
            Some(key) => (key.as_u64_pair().1 as usize) % self.queues.len(),
            None => self.next.fetch_add(1, Ordering::Relaxed) % self.queues.len(),
        };
        let (reply, answer) = oneshot::channel();
        if self.queues[index].send(Job { key, item, reply }).is_err() {
            return W::failed(StoreError::Stopped);
        }
        answer.await.unwrap_or_else(|_| W::failed(StoreError::Stopped))
    }
}

/// A writer's connection: taken from the pool at its first write and kept, outside the pool, until
/// the pool is closed (a new one after a write that failed as a whole).
pub(super) struct Held {
    pool: PgPool,
    connection: Option<PgConnection>,
    last_used: Instant,
}

impl Held {
    fn new(pool: PgPool) -> Self {
        Self { pool, connection: None, last_used: Instant::now() }
    }

    /// The connection to write with: the one kept, tested first (a round trip) when it sat
    /// unused for [`super::TEST_IDLE_AFTER`] (Postgres may have restarted under it), else one
    /// taken from the pool (set up as the pool sets up its own) and detached from it, so the
    /// pool opens another for everything else.
    pub(super) async fn get(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        use sqlx::Connection;
        if self.pool.is_closed() {
            self.release();
        }
        let kept = match self.connection.take() {
            Some(mut kept) if self.last_used.elapsed() >= super::TEST_IDLE_AFTER => {
                kept.ping().await.is_ok().then_some(kept)
            }
            kept => kept,
        };
        let connection = match kept {
            Some(kept) => kept,
            None => self.pool.acquire().await?.detach(),
        };
        self.last_used = Instant::now();
        Ok(self.connection.insert(connection))
    }

    /// Close the connection: the next write takes another.
    fn release(&mut self) {
        self.connection = None;
    }
}

/// Take batches off `queue` until every sender is gone.
async fn writer<W: GroupWrite>(
    pool: PgPool,
    mut queue: mpsc::UnboundedReceiver<Job<W>>,
    counters: Arc<Counters>,
) {
    // Closing the pool closes the kept connection too (a database is not dropped while one is open).
    let mut closed = std::pin::pin!(pool.close_event());
    let mut held = Held::new(pool);
    let mut waiting: VecDeque<Job<W>> = VecDeque::new();
    loop {
        if waiting.is_empty() {
            let next = tokio::select! {
                next = queue.recv() => next,
                () = &mut closed, if held.connection.is_some() => {
                    held.release();
                    queue.recv().await
                }
            };
            match next {
                Some(job) => waiting.push_back(job),
                None => return,
            }
        }
        while waiting.len() < 2 * W::MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => waiting.push_back(job),
                Err(_) => break,
            }
        }
        let batch = take_batch::<W>(&mut waiting);
        write_batch::<W>(&mut held, batch, &counters).await;
    }
}

/// The oldest waiting jobs with distinct keys, up to a batch; the rest keep their order.
fn take_batch<W: GroupWrite>(waiting: &mut VecDeque<Job<W>>) -> Vec<Job<W>> {
    let mut batch = Vec::new();
    let mut keys = HashSet::new();
    let mut rest = VecDeque::new();
    for job in waiting.drain(..) {
        let fits = batch.len() < W::MAX_BATCH && job.key.is_none_or(|key| keys.insert(key));
        if fits {
            batch.push(job);
        } else {
            rest.push_back(job);
        }
    }
    *waiting = rest;
    batch
}

/// Write a batch, answering every job in it.
async fn write_batch<W: GroupWrite>(held: &mut Held, mut batch: Vec<Job<W>>, counters: &Counters) {
    loop {
        if batch.is_empty() {
            return;
        }
        let (items, replies): (Vec<W::Item>, Vec<_>) =
            batch.into_iter().map(|j| (j.item, (j.key, j.reply))).unzip();
        let started = Instant::now();
        // A panic in a write must not take the writer (and every later write of its kind) with it.
        let written = AssertUnwindSafe(W::write(held, &items)).catch_unwind().await.unwrap_or_else(|_| {
            tracing::error!(items = items.len(), "a grouped write panicked");
            Err(Failure::Whole(StoreError::Corrupt("a grouped write panicked".into())))
        });
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters.items.fetch_add(items.len() as u64, Ordering::Relaxed);
        counters.busy_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        if matches!(written, Err(Failure::Whole(_))) {
            // Whatever failed, the connection is not trusted again.
            held.release();
        }
        match written {
            Ok(outputs) => {
                for ((_, reply), output) in replies.into_iter().zip(outputs) {
                    let _ = reply.send(output);
                }
                return;
            }
            Err(Failure::Item(index, output)) => {
                let mut jobs: Vec<Job<W>> = rejoin(items, replies);
                if index < jobs.len() {
                    let _ = jobs.remove(index).reply.send(output);
                }
                batch = jobs;
            }
            Err(Failure::Whole(error)) if items.len() > 1 && !error.is_unavailable() => {
                tracing::warn!(%error, items = items.len(), "a grouped write failed; writing its items one by one");
                for job in rejoin(items, replies) {
                    Box::pin(write_batch::<W>(held, vec![job], counters)).await;
                }
                return;
            }
            Err(Failure::Whole(error)) => {
                // A lone item gets the error itself; several share it.
                if let [(_, _)] = replies.as_slice() {
                    if let Some((_, reply)) = replies.into_iter().next() {
                        let _ = reply.send(W::failed(error));
                    }
                    return;
                }
                let error = Arc::new(error);
                for (_, reply) in replies {
                    let _ = reply.send(W::failed(StoreError::Group(error.clone())));
                }
                return;
            }
        }
    }
}

type Reply<W> = (Option<Uuid>, oneshot::Sender<<W as GroupWrite>::Output>);

fn rejoin<W: GroupWrite>(items: Vec<W::Item>, replies: Vec<Reply<W>>) -> Vec<Job<W>> {
    items.into_iter().zip(replies).map(|(item, (key, reply))| Job { key, item, reply }).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Items are (key, value); values 0 and up are written, -1 is refused alone, -2 fails its whole
    /// batch, -3 panics. Every transaction's items are recorded.
    struct Recording;

    static BATCHES: Mutex<Vec<Vec<(u128, i64)>>> = Mutex::new(Vec::new());

    impl GroupWrite for Recording {
        type Item = (u128, i64);
        type Output = Result<i64, String>;
        const MAX_BATCH: usize = 4;

        fn key(item: &Self::Item) -> Option<Uuid> {
            Some(Uuid::from_u128(item.0))
        }

        async fn write(
            _: &mut Held,
            items: &[Self::Item],
        ) -> Result<Vec<Self::Output>, Failure<Self::Output>> {
            BATCHES.lock().unwrap_or_else(|p| p.into_inner()).push(items.to_vec());
            if let Some(index) = items.iter().position(|(_, v)| *v == -1) {
                return Err(Failure::Item(index, Err("refused".into())));
            }
            if items.iter().any(|(_, v)| *v == -3) {
                panic!("a bug");
            }
            if items.iter().any(|(_, v)| *v == -2) {
                return Err(Failure::Whole(StoreError::Corrupt("bad row".into())));
            }
            Ok(items.iter().map(|(_, v)| Ok(*v)).collect())
        }

        fn failed(error: StoreError) -> Self::Output {
            Err(error.to_string())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn batches_keep_one_item_per_key_in_order_and_failures_stay_with_their_item() {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost/none")
            .expect("lazy");
        let group = Arc::new(Group::<Recording>::start(&pool, 1));
        let items =
            [(1, 10), (1, 11), (2, 20), (3, -1), (4, 40), (5, 50), (1, 12), (6, -2), (7, -3), (8, 80)];
        let submits: Vec<_> = items
            .iter()
            .map(|item| {
                let (group, item) = (group.clone(), *item);
                tokio::spawn(async move { group.submit(item).await })
            })
            .collect();
        let mut answers = Vec::new();
        for submit in submits {
            answers.push(submit.await.expect("join"));
        }
        let expected: Vec<Result<i64, String>> = vec![
            Ok(10),
            Ok(11),
            Ok(20),
            Err("refused".into()),
            Ok(40),
            Ok(50),
            Ok(12),
            Err("corrupt row: bad row".into()),
            Err("corrupt row: a grouped write panicked".into()),
            Ok(80),
        ];
        assert_eq!(answers, expected);
        let batches = BATCHES.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for batch in &batches {
            assert!(batch.len() <= 4, "{batch:?}");
            let mut keys: Vec<u128> = batch.iter().map(|(k, _)| *k).collect();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), batch.len(), "one item per key in a batch: {batch:?}");
        }
        // Key 1's items were written in the order they came, each in a later transaction.
        let firsts: Vec<usize> = [10, 11, 12]
            .iter()
            .map(|v| batches.iter().position(|b| b.contains(&(1, *v))).expect("written"))
            .collect();
        assert!(firsts[0] < firsts[1] && firsts[1] < firsts[2], "{batches:?}");
        assert!(batches.iter().any(|b| b.len() > 1), "items shared transactions: {batches:?}");
        let stats = group.stats();
        assert_eq!(stats.batches as usize, batches.len());
    }
}

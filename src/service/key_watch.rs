//! What a key may see ends when the key does: the replica's watch over the stored keys its open
//! streams (and long polls) were opened with.
//!
//! A stream opened with a stored key registers the key ([`KeyWatch::watch`]) and holds a
//! [`WatchedKey`] while it is open. One checker per replica ([`KeyWatch::run`]) reads every
//! registered key once a second, all in one query (revoked, expired, tenant gone), and tells the
//! streams of a key that ended, which close saying why. The cost is one query a second per replica
//! while any keyed stream is open, however many streams and keys (up to [`CHECK_BATCH`] keys a
//! query), and nothing while none is: the checker sleeps until a key is registered. A revocation
//! made on this replica ends its streams here at once. The keys of `AGENTD_API_KEYS` and an open
//! API have no row to end: their streams register nothing and never end this way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::domain::KeyId;
use crate::domain::TenantId;
use crate::domain::{Caller, KeyEnd};
use crate::store::{KeyStanding, Store};

/// How often the registered keys are read.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);
/// Keys read per query at most (more registered keys take more queries of a check).
pub const CHECK_BATCH: usize = 5_000;

/// The replica's registered keys and their checker.
pub struct KeyWatch {
    store: Store,
    keys: Mutex<HashMap<KeyId, Watched>>,
    /// Wakes the checker when a key is registered.
    registered: Notify,
}

/// A registered key: its tenant, how many streams hold it, and how it ended (once it has).
struct Watched {
    tenant: TenantId,
    ended: watch::Sender<Option<KeyEnd>>,
    holders: usize,
}

/// A stream's hold on the key it was opened with; the key's registration goes with its last
/// holder. Without a stored key (a key of `AGENTD_API_KEYS`, an open API) it holds nothing and
/// never ends.
pub struct WatchedKey {
    held: Option<Held>,
}

struct Held {
    watch: Arc<KeyWatch>,
    id: KeyId,
    /// Made once and kept across polls, so a stream waiting on its key (every time it waits for a
    /// message) does not register anew with the key's channel each time.
    ended: Pin<Box<dyn Future<Output = KeyEnd> + Send>>,
    /// What `ended` resolved to (it is not polled again).
    why: Option<KeyEnd>,
}

impl KeyWatch {
    pub fn new(store: Store) -> Self {
        Self { store, keys: Mutex::default(), registered: Notify::new() }
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashMap<KeyId, Watched>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold `caller`'s key while a stream of it is open (nothing for a caller without a stored key).
    pub fn watch(self: &Arc<Self>, caller: &Caller) -> WatchedKey {
        let Some(id) = caller.key_id else { return WatchedKey { held: None } };
        let ended = {
            let mut keys = self.keys();
            let watched = keys.entry(id).or_insert_with(|| Watched {
                tenant: caller.tenant.clone(),
                ended: watch::channel(None).0,
                holders: 0,
            });
            watched.holders += 1;
            watched.ended.subscribe()
        };
        self.registered.notify_one();
        let ended = Box::pin(end_of_watch(ended));
        WatchedKey { held: Some(Held { watch: self.clone(), id, ended, why: None }) }
    }

    /// Tell the streams of key `id` on this replica that it ended.
    pub fn end(&self, id: KeyId, why: KeyEnd) {
        if let Some(watched) = self.keys().get(&id) {
            let first = watched.ended.send_if_modified(|ended| match ended {
                Some(_) => false,
                None => {
                    *ended = Some(why);
                    true
                }
            });
            if first {
                tracing::info!(key = %id, reason = why.as_str(), streams = watched.holders, "closing the streams of a key that ended");
            }
        }
    }

    /// Is every registered key (if any) known to have ended?
    fn is_idle(&self) -> bool {
        self.keys().values().all(|watched| watched.ended.borrow().is_some())
    }

    /// The registered keys not known to have ended, with their tenants.
    fn pending(&self) -> Vec<(KeyId, TenantId)> {
        self.keys()
            .iter()
            .filter(|(_, watched)| watched.ended.borrow().is_none())
            .map(|(id, watched)| (*id, watched.tenant.clone()))
            .collect()
    }

    /// Check the registered keys every [`CHECK_EVERY`] while there are any, until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if self.is_idle() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = self.registered.notified() => tick.reset(),
                }
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            self.check(Utc::now()).await;
        }
    }

    /// Read every registered key (a query per [`CHECK_BATCH`]) and end those that ended by `now`.
    /// A failed read ends nothing: the next check reads again.
    async fn check(&self, now: DateTime<Utc>) {
        let pending = self.pending();
        for batch in pending.chunks(CHECK_BATCH) {
            let (ids, tenants): (Vec<KeyId>, Vec<TenantId>) = batch.iter().cloned().unzip();
            match self.store.key_standings(&ids, &tenants).await {
                Ok(standings) => {
                    for standing in standings {
                        if let Some(why) = end_of(&standing, now) {
                            self.end(standing.id, why);
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, keys = ids.len(), "could not check the keys of open streams")
                }
            }
        }
    }

    /// Keys registered here.
    #[cfg(test)]
    fn watched(&self) -> usize {
        self.keys().len()
    }
}

/// How a key stands ended by `now`, if it has: its tenant gone, its row revoked (or gone), or past
/// its expiry.
fn end_of(standing: &KeyStanding, now: DateTime<Utc>) -> Option<KeyEnd> {
    if !standing.tenant_exists {
        Some(KeyEnd::TenantDeleted)
    } else if standing.revoked || !standing.exists {
        Some(KeyEnd::KeyRevoked)
    } else if standing.expires_at.is_some_and(|at| at <= now) {
        Some(KeyEnd::KeyExpired)
    } else {
        None
    }
}

/// Resolves when the key `receiver` watches has ended (never, if its registration went first).
async fn end_of_watch(mut receiver: watch::Receiver<Option<KeyEnd>>) -> KeyEnd {
    let why = match receiver.wait_for(Option::is_some).await {
        Ok(ended) => *ended,
        Err(_) => None,
    };
    match why {
        Some(why) => why,
        None => std::future::pending().await,
    }
}

impl WatchedKey {
    /// Resolves when the key has ended, with why; never, for no key. Cancel-safe: a stream may
    /// drop it for another message and ask again.
    pub async fn ended(&mut self) -> KeyEnd {
        let Some(held) = &mut self.held else { return std::future::pending().await };
        if let Some(why) = held.why {
            return why;
        }
        let why = held.ended.as_mut().await;
        held.why = Some(why);
        why
    }
}

impl Drop for WatchedKey {
    fn drop(&mut self) {
        let Some(held) = &self.held else { return };
        let mut keys = held.watch.keys();
        if let Some(watched) = keys.get_mut(&held.id) {
            watched.holders = watched.holders.saturating_sub(1);
            if watched.holders == 0 {
                keys.remove(&held.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use uuid::Uuid;

    fn standing() -> KeyStanding {
        KeyStanding { id: KeyId::new(), exists: true, revoked: false, expires_at: None, tenant_exists: true }
    }

    #[test]
    fn a_key_ends_by_its_tenant_then_its_revocation_then_its_expiry() {
        let now = Utc::now();
        assert_eq!(end_of(&standing(), now), None);
        let later = KeyStanding { expires_at: Some(now + TimeDelta::seconds(1)), ..standing() };
        assert_eq!(end_of(&later, now), None);
        let expired = KeyStanding { expires_at: Some(now), ..standing() };
        assert_eq!(end_of(&expired, now), Some(KeyEnd::KeyExpired));
        let revoked = KeyStanding { revoked: true, ..expired.clone() };
        assert_eq!(end_of(&revoked, now), Some(KeyEnd::KeyRevoked));
        let gone = KeyStanding { exists: false, ..standing() };
        assert_eq!(end_of(&gone, now), Some(KeyEnd::KeyRevoked));
        let orphan = KeyStanding { exists: false, tenant_exists: false, ..revoked };
        assert_eq!(end_of(&orphan, now), Some(KeyEnd::TenantDeleted));
    }

    fn watch() -> Arc<KeyWatch> {
        let options: sqlx::postgres::PgConnectOptions = "postgres://unused@127.0.0.1:9/none".parse().unwrap();
        let settings =
            crate::store::PoolSettings { max_connections: 1, acquire_timeout: Duration::from_millis(10) };
        Arc::new(KeyWatch::new(Store::connect_lazy(options, &settings)))
    }

    fn caller(key: Option<Uuid>) -> Caller {
        Caller { key_id: key.map(KeyId), ..Caller::operator() }
    }

    #[tokio::test]
    async fn a_key_is_registered_while_a_stream_holds_it_and_its_end_reaches_every_holder() {
        let watch = watch();
        let mut none = watch.watch(&caller(None));
        assert_eq!(watch.watched(), 0, "a caller without a stored key registers nothing");
        let key = Uuid::now_v7();
        let (mut first, mut second) = (watch.watch(&caller(Some(key))), watch.watch(&caller(Some(key))));
        assert_eq!((watch.watched(), watch.pending().len()), (1, 1));
        let waited = tokio::time::timeout(Duration::from_millis(10), first.ended()).await;
        assert!(waited.is_err(), "a live key has not ended (and a wait given up is no harm)");
        watch.end(KeyId(key), KeyEnd::KeyExpired);
        watch.end(KeyId(key), KeyEnd::KeyRevoked);
        assert_eq!(first.ended().await, KeyEnd::KeyExpired, "the first end is the one told");
        assert_eq!(second.ended().await, KeyEnd::KeyExpired);
        assert!(watch.pending().is_empty(), "an ended key is not read again");
        let mut late = watch.watch(&caller(Some(key)));
        assert_eq!(late.ended().await, KeyEnd::KeyExpired, "a stream opened after the end ends at once");
        drop((first, second, late));
        assert_eq!(watch.watched(), 0, "the registration went with its last holder");
        let never = tokio::time::timeout(Duration::from_millis(20), none.ended()).await;
        assert!(never.is_err(), "no key never ends");
    }
}

//! The replica's `LISTEN agentd_events` connection, reconnecting on loss (and telling
//! subscribers to resynchronise from the database, since notifications may have been missed).
//! A notification names the events a statement committed (the `events_publish` trigger bundles
//! them as `[id, run_id, seq, type]`); the listener reads the ones a stream here follows, in one
//! query, and passes the rest of the followed ones on by type (waiters need no more).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{BusItem, Envelope, EventBus};
use crate::domain::{Event, EventType, RunId};
use crate::store::{Store, EVENTS_CHANNEL};

/// A committed event as a notification names it.
#[derive(Debug, Deserialize)]
struct Ref(i64, Uuid, i64, String);

impl Ref {
    fn run_id(&self) -> RunId {
        RunId(self.1)
    }
}

pub(super) async fn listen(store: Store, bus: EventBus, stop: CancellationToken) {
    let mut connected_before = false;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            Err(error) = session(&store, &bus, &mut connected_before) => {
                tracing::warn!(%error, "the events LISTEN connection failed; reconnecting");
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn session(
    store: &Store,
    bus: &EventBus,
    connected_before: &mut bool,
) -> Result<Infallible, sqlx::Error> {
    let mut listener = PgListener::connect_with(store.pool()).await?;
    listener.listen(EVENTS_CHANNEL).await?;
    if *connected_before {
        bus.publish(BusItem::Resync);
    }
    *connected_before = true;
    loop {
        // `try_recv` reports a lost connection (`None`, then reconnects): notifications may have
        // been missed meanwhile, so subscribers read the database again.
        let Some(notification) = listener.try_recv().await? else {
            tracing::warn!("the events LISTEN connection was lost; subscribers resynchronise");
            bus.publish(BusItem::Resync);
            continue;
        };
        // Notifications that arrived meanwhile go with it: one read for all of them.
        let mut notifications = vec![notification];
        while notifications.len() < MAX_NOTIFICATIONS_PER_READ {
            match listener.next_buffered() {
                Some(notification) => notifications.push(notification),
                None => break,
            }
        }
        deliver(store, bus, notifications.iter().map(|n| n.payload())).await;
    }
}

/// Notifications whose events are read in one query at most.
const MAX_NOTIFICATIONS_PER_READ: usize = 32;

/// Publish notifications' events, in order, to their followers here, reading the bodies streams
/// need.
async fn deliver<'p>(store: &Store, bus: &EventBus, payloads: impl Iterator<Item = &'p str>) {
    let mut refs: Vec<Ref> = Vec::new();
    for payload in payloads {
        match serde_json::from_str::<Vec<Ref>>(payload) {
            Ok(more) => refs.extend(more),
            Err(error) => {
                tracing::warn!(%error, "malformed event notification; subscribers will resynchronise");
                return bus.publish(BusItem::Resync);
            }
        }
    }
    // Most events have no follower on this replica: those are counted, not read.
    let total = refs.len();
    let followed: Vec<Ref> = refs.into_iter().filter(|r| bus.is_followed(r.run_id())).collect();
    bus.count_unfollowed(total - followed.len());
    let wanted: Vec<i64> = followed.iter().filter(|r| bus.is_read(r.run_id())).map(|r| r.0).collect();
    let bodies = if wanted.is_empty() {
        Vec::new()
    } else {
        match store.events_by_id(&wanted).await {
            Ok(bodies) => bodies,
            Err(error) => {
                tracing::warn!(%error, "reading notified events failed; subscribers will resynchronise");
                return bus.publish(BusItem::Resync);
            }
        }
    };
    // Published in notification order (commit order), which ids need not follow.
    let mut bodies: HashMap<i64, (String, Event)> =
        bodies.into_iter().map(|(id, crew, event)| (id, (crew, event))).collect();
    for Ref(id, run_id, seq, event_type) in followed {
        let item = match bodies.remove(&id) {
            Some((crew, event)) => {
                BusItem::Event { id, crew: Some(Arc::from(crew)), event: Envelope::new(event) }
            }
            // Not read (a waiter's run), or gone: a stream that gets a notice reads the database.
            None => match event_type.parse::<EventType>() {
                Ok(event_type) => BusItem::Notice { run_id: RunId(run_id), seq, event_type },
                Err(_) => BusItem::Resync,
            },
        };
        bus.publish(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_is_an_array_of_references() {
        let run = Uuid::now_v7();
        let payload = format!(r#"[[7,"{run}",2,"task.started"],[8,"{run}",3,"llm.started"]]"#);
        let refs: Vec<Ref> = serde_json::from_str(&payload).expect("references");
        assert_eq!(refs.len(), 2);
        assert_eq!((refs[1].0, refs[1].run_id(), refs[1].2), (8, RunId(run), 3));
        assert_eq!(refs[0].3.parse::<EventType>().ok(), Some(EventType::TaskStarted));
        for malformed in ["[[7]]", "{\"id\": 7}", &format!(r#"[["7","{run}",2,"x"]]"#)] {
            assert!(serde_json::from_str::<Vec<Ref>>(malformed).is_err(), "{malformed}");
        }
    }
}

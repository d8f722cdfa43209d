//! The replica's events notifications (`Store::listen` on `agentd_events`); after a lost
//! connection subscribers resynchronise from the database, since notifications may have been
//! missed.
//! A notification names the events a statement committed (the `events_publish` trigger bundles
//! them as `[id, run_id, seq, type]`); the listener reads the ones a stream here follows, in one
//! query, and passes the rest of the followed ones on by type (waiters need no more).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{BusItem, Envelope, EventBus};
use crate::domain::{EventType, RunId};
use crate::store::{Listened, LoggedEvent, Notification, Store, DELTAS_CHANNEL, EVENTS_CHANNEL};

/// A committed event as a notification names it.
#[derive(Debug, Deserialize)]
struct Ref(i64, Uuid, i64, String);

impl Ref {
    fn run_id(&self) -> RunId {
        RunId(self.1)
    }
}

pub(super) async fn listen(store: Store, bus: EventBus, stop: CancellationToken) {
    let notices = store.listen_until(&[EVENTS_CHANNEL, DELTAS_CHANNEL], stop);
    tokio::pin!(notices);
    while let Some(listened) = notices.next().await {
        match listened {
            Listened::Connected { again: false } => {}
            // Notifications may have been missed meanwhile: subscribers read the database again.
            Listened::Connected { again: true } | Listened::Lost => bus.publish(BusItem::Resync),
            Listened::Notifications(batch) => {
                let (deltas, events): (Vec<Notification>, Vec<Notification>) =
                    batch.into_iter().partition(|n| n.channel == DELTAS_CHANNEL);
                for delta in deltas {
                    relay_delta(&bus, delta.payload);
                }
                if !events.is_empty() {
                    deliver(&store, &bus, events.iter().map(|n| n.payload.as_str())).await
                }
            }
        }
    }
}

/// The run a delta names.
#[derive(Deserialize)]
struct DeltaOf {
    run_id: Uuid,
}

/// Hand a live delta to the run's streams here, if any (its payload is the message's data).
fn relay_delta(bus: &EventBus, payload: String) {
    match serde_json::from_str::<DeltaOf>(&payload) {
        Ok(of) if bus.is_read(RunId(of.run_id)) => bus.publish_delta(RunId(of.run_id), Arc::from(payload)),
        Ok(_) => {}
        Err(error) => tracing::debug!(%error, "malformed delta notification ignored"),
    }
}

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
    let mut bodies: HashMap<i64, LoggedEvent> =
        bodies.into_iter().map(|logged| (logged.id, logged)).collect();
    for Ref(id, run_id, seq, event_type) in followed {
        let item = match bodies.remove(&id) {
            Some(logged) => BusItem::Event {
                id,
                crew: Some(Arc::from(logged.crew)),
                tenant: Some(Arc::from(logged.tenant.as_str())),
                event: Envelope::new(logged.event),
            },
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

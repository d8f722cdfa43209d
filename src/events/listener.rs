//! The replica's `LISTEN agentd_events` connection, reconnecting on loss (and telling
//! subscribers to resynchronise from the database, since notifications may have been missed).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{BusItem, Envelope, EventBus};
use crate::domain::{Event, EventType, RunId};
use crate::store::{Store, EVENTS_CHANNEL};

/// The one field of a payload read before the rest: whose event it is.
#[derive(Debug, Deserialize)]
struct Head {
    run_id: Uuid,
}

/// The notification payload the `events_publish` trigger sends.
#[derive(Debug, Deserialize)]
struct Payload {
    id: i64,
    run_id: Uuid,
    seq: i64,
    #[serde(rename = "type")]
    event_type: Option<String>,
    task: Option<String>,
    agent: Option<String>,
    data: Option<Value>,
    at: Option<DateTime<Utc>>,
    crew: Option<String>,
    #[serde(default, rename = "ref")]
    reference: bool,
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
        // Most events have no follower on this replica: those are counted, not decoded.
        let followed = match serde_json::from_str::<Head>(notification.payload()) {
            Ok(head) => bus.is_followed(RunId(head.run_id)),
            Err(_) => true,
        };
        if !followed {
            bus.count_unfollowed();
            continue;
        }
        match serde_json::from_str::<Payload>(notification.payload()) {
            Ok(payload) => bus.publish(item(payload)),
            Err(error) => {
                tracing::warn!(%error, "malformed event notification; subscribers will resynchronise");
                bus.publish(BusItem::Resync);
            }
        }
    }
}

fn item(payload: Payload) -> BusItem {
    let run_id = RunId(payload.run_id);
    let event_type = payload.event_type.as_deref().and_then(|t| t.parse::<EventType>().ok());
    match (payload.reference, event_type, payload.at) {
        (false, Some(event_type), Some(at)) => BusItem::Event {
            id: payload.id,
            crew: payload.crew.map(Arc::from),
            event: Envelope::new(Event {
                seq: payload.seq,
                run_id,
                event_type,
                at,
                task: payload.task,
                agent: payload.agent,
                data: payload.data.unwrap_or(Value::Null),
            }),
        },
        _ => BusItem::Reference { id: payload.id, run_id, seq: payload.seq },
    }
}

//! The replica's `LISTEN agentd_events` connection, reconnecting on loss (and telling
//! subscribers to resynchronise from the database, since notifications may have been missed).
//! A notification carries a JSON array of events (the `events_publish` trigger bundles a
//! statement's events), each an envelope or a reference to read from the table.

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

/// The one field of an event read before the rest: whose event it is.
#[derive(Debug, Deserialize)]
struct Head {
    run_id: Uuid,
}

/// An event as the `events_publish` trigger sends it.
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
        let text = notification.payload();
        if let Ok(heads) = parse_list::<Head>(text) {
            if !heads.iter().any(|head| bus.is_followed(RunId(head.run_id))) {
                bus.count_unfollowed(heads.len());
                continue;
            }
        }
        match parse_list::<Payload>(text) {
            Ok(payloads) => payloads.into_iter().for_each(|payload| bus.publish(item(payload))),
            Err(error) => {
                tracing::warn!(%error, "malformed event notification; subscribers will resynchronise");
                bus.publish(BusItem::Resync);
            }
        }
    }
}

/// A payload's events: an array of them, or one alone.
fn parse_list<T: serde::de::DeserializeOwned>(text: &str) -> serde_json::Result<Vec<T>> {
    if text.trim_start().starts_with('[') {
        serde_json::from_str(text)
    } else {
        serde_json::from_str(text).map(|one| vec![one])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_an_array_of_events_or_one_event() {
        let run = Uuid::now_v7();
        let full = format!(
            r#"{{"id": 7, "run_id": "{run}", "seq": 2, "type": "task.started", "task": "t", "agent": "a",
                 "data": {{"x": 1}}, "at": "2026-11-30T07:13:13.115828+00:00", "crew": "c"}}"#
        );
        let reference = format!(r#"{{"id": 8, "run_id": "{run}", "seq": 3, "ref": true}}"#);
        let items: Vec<Payload> = parse_list(&format!("[{full}, {reference}]")).expect("array");
        assert_eq!(items.len(), 2);
        match item(items.into_iter().next().expect("first")) {
            BusItem::Event { id, crew, event } => {
                assert_eq!((id, crew.as_deref()), (7, Some("c")));
                assert_eq!((event.event.seq, event.event.event_type), (2, EventType::TaskStarted));
                assert_eq!(event.event.data, serde_json::json!({"x": 1}));
            }
            other => panic!("expected an event, got {other:?}"),
        }
        let one: Vec<Payload> = parse_list(&reference).expect("one");
        assert!(matches!(
            item(one.into_iter().next().expect("one")),
            BusItem::Reference { id: 8, seq: 3, .. }
        ));
        let heads: Vec<Head> = parse_list(&format!("[{full}]")).expect("heads");
        assert_eq!(heads[0].run_id, run);
        assert!(parse_list::<Head>("[{\"id\": 1}]").is_err(), "an event without a run is malformed");
    }
}

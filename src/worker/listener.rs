//! The worker's notifications: new and requeued runs wake idle slots; cancellations stop the run
//! if it executes here. After a lost connection, idle slots look for work they may have missed
//! (heartbeats catch missed cancellations).

use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Shared, StopReason};
use crate::domain::RunId;
use crate::store::{Listened, CANCEL_CHANNEL, RUNS_CHANNEL};

/// Listen until `stop`.
pub(super) async fn listen(shared: Arc<Shared>, stop: CancellationToken) {
    let notices = shared.store.listen_until(&[RUNS_CHANNEL, CANCEL_CHANNEL], stop);
    tokio::pin!(notices);
    while let Some(listened) = notices.next().await {
        match listened {
            // A notification may have been missed while (re)connecting: look for work now.
            Listened::Connected { .. } | Listened::Lost => shared.wake.notify_one(),
            Listened::Notifications(batch) => {
                for notification in batch {
                    dispatch(&shared, &notification.channel, &notification.payload);
                }
            }
        }
    }
}
fn dispatch(shared: &Shared, channel: &str, payload: &str) {
    match channel {
        RUNS_CHANNEL => shared.wake.notify_one(),
        CANCEL_CHANNEL => match payload.parse::<uuid::Uuid>() {
            Ok(id) => shared.stop(RunId(id), StopReason::Cancelled),
            Err(_) => tracing::warn!(payload, "malformed cancellation notice"),
        },
        _ => {}
    }
}

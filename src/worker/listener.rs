//! The replica's `LISTEN` connection: new and requeued runs wake idle slots; cancellations stop
//! the run if it executes here. Reconnects after losing the connection.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use super::{Shared, StopReason};
use crate::domain::RunId;
use crate::store::{CANCEL_CHANNEL, RUNS_CHANNEL};

/// Listen until `stop`.
pub(super) async fn listen(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            Err(error) = session(&shared) => {
                tracing::warn!(%error, "the LISTEN connection failed; reconnecting");
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One connection's worth of notifications; ends only with an error.
async fn session(shared: &Shared) -> Result<Infallible, sqlx::Error> {
    let mut listener = PgListener::connect_with(shared.store.pool()).await?;
    listener.listen_all([RUNS_CHANNEL, CANCEL_CHANNEL]).await?;
    tracing::debug!("listening for runs and cancellations");
    // A notification may have been missed while (re)connecting: look for work now.
    shared.wake.notify_one();
    loop {
        match listener.try_recv().await? {
            Some(notification) => dispatch(shared, notification.channel(), notification.payload()),
            // The connection was lost and is being re-established: look for work we may have
            // missed (heartbeats catch missed cancellations).
            None => shared.wake.notify_one(),
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

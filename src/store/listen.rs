//! Postgres notifications: the channels agentd announces on, [`notify`] (inside a write's
//! transaction, so a notice is delivered only if the write commits), and [`Store::listen`], one
//! reconnecting `LISTEN` connection as a stream. Notifications may be missed while a connection is
//! down; the stream says when that may have happened ([`Listened::Connected`] after a loss,
//! [`Listened::Lost`]), and listeners catch up from the tables.

use std::time::Duration;

use futures_util::Stream;
use sqlx::postgres::PgListener;
use sqlx::{PgPool, Postgres, Transaction};

use super::{Store, StoreResult};
use crate::domain::RunId;

/// The channel on which new and requeued runs are announced (payload: the run id).
pub const RUNS_CHANNEL: &str = "agentd_runs";
/// The channel on which cancellations are announced (payload: the run id).
pub const CANCEL_CHANNEL: &str = "agentd_cancel";
/// The channel on which every committed event is published (by the `events_publish` trigger).
pub const EVENTS_CHANNEL: &str = "agentd_events";
/// The channel on which new webhook deliveries are announced (by the `events_webhooks` trigger).
pub const WEBHOOKS_CHANNEL: &str = "agentd_webhooks";
/// The channel on which streaming runs' reply text is announced, live and unjournaled (payload:
/// an `llm.delta` message).
pub const DELTAS_CHANNEL: &str = "agentd_deltas";

/// Notifications handed over at once at most (those that arrived together).
const MAX_BATCH: usize = 32;
/// The pause before connecting again after a failure.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// Announce `id` on `channel`; delivered when the transaction commits.
pub(crate) async fn notify(tx: &mut Transaction<'_, Postgres>, channel: &str, id: RunId) -> StoreResult<()> {
    sqlx::query!("SELECT pg_notify($1, $2)", channel, id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

impl Store {
    /// Send `payloads` on `channel` now, in order (one statement, outside any write).
    #[tracing::instrument(level = "debug", skip_all, fields(notifications = payloads.len()), err)]
    pub async fn notify_all(&self, channel: &str, payloads: &[String]) -> StoreResult<()> {
        sqlx::query!(
            "SELECT pg_notify($1, p) FROM UNNEST($2::text[]) WITH ORDINALITY AS x(p, n) ORDER BY n",
            channel,
            payloads
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub channel: String,
    pub payload: String,
}

/// What a listening connection reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listened {
    /// Listening on every channel; `again` when an earlier connection was lost (notifications may
    /// have been missed in between).
    Connected { again: bool },
    /// Notifications in commit order: one, with those that had arrived with it.
    Notifications(Vec<Notification>),
    /// The connection was lost; notifications may be missed until the next `Connected`.
    Lost,
}

struct Listener {
    pool: PgPool,
    channels: Vec<&'static str>,
    connection: Option<PgListener>,
    connected_before: bool,
}

impl Store {
    /// Listen on `channels` for as long as the stream is polled, reconnecting (after a second)
    /// whenever the connection fails. The stream never ends; drop it to stop listening.
    pub fn listen(&self, channels: &[&'static str]) -> impl Stream<Item = Listened> + Send + 'static {
        let listener = Listener {
            pool: self.pool.clone(),
            channels: channels.to_vec(),
            connection: None,
            connected_before: false,
        };
        futures_util::stream::unfold(listener, |mut listener| async move {
            let item = listener.next().await;
            Some((item, listener))
        })
    }

    /// [`Store::listen`] until `stop`, when the stream ends.
    pub fn listen_until(
        &self,
        channels: &[&'static str],
        stop: tokio_util::sync::CancellationToken,
    ) -> impl Stream<Item = Listened> + Send + 'static {
        use futures_util::StreamExt;
        self.listen(channels).take_until(stop.cancelled_owned())
    }

    /// A wake-up that fires whenever notices arrive on `channels`, and at each (re)connection
    /// (notices may have been missed meanwhile), until `stop` (a task listens meanwhile).
    pub fn waker(
        &self,
        channels: &[&'static str],
        stop: tokio_util::sync::CancellationToken,
    ) -> std::sync::Arc<tokio::sync::Notify> {
        use futures_util::StreamExt;
        let wake = std::sync::Arc::new(tokio::sync::Notify::new());
        let notices = self.listen_until(channels, stop);
        let woken = wake.clone();
        tokio::spawn(async move {
            tokio::pin!(notices);
            while let Some(listened) = notices.next().await {
                if matches!(listened, Listened::Notifications(_) | Listened::Connected { .. }) {
                    woken.notify_one();
                }
            }
        });
        wake
    }
}

impl Listener {
    async fn next(&mut self) -> Listened {
        loop {
            let Some(connection) = &mut self.connection else {
                match self.connect().await {
                    Ok(connection) => {
                        self.connection = Some(connection);
                        let again = std::mem::replace(&mut self.connected_before, true);
                        return Listened::Connected { again };
                    }
                    Err(error) => {
                        tracing::warn!(%error, channels = ?self.channels, "LISTEN failed; connecting again");
                        tokio::time::sleep(RECONNECT_DELAY).await;
                        continue;
                    }
                }
            };
            match connection.try_recv().await {
                Ok(Some(first)) => {
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match connection.next_buffered() {
                            Some(notification) => batch.push(notification),
                            None => break,
                        }
                    }
                    let batch = batch
                        .into_iter()
                        .map(|n| Notification {
                            channel: n.channel().to_owned(),
                            payload: n.payload().to_owned(),
                        })
                        .collect();
                    return Listened::Notifications(batch);
                }
                // The connection was lost; sqlx re-establishes it on the next receive.
                Ok(None) => {
                    tracing::warn!(channels = ?self.channels, "the LISTEN connection was lost; reconnecting");
                    return Listened::Lost;
                }
                Err(error) => {
                    tracing::warn!(%error, channels = ?self.channels, "the LISTEN connection failed; reconnecting");
                    self.connection = None;
                    tokio::time::sleep(RECONNECT_DELAY).await;
                }
            }
        }
    }

    async fn connect(&self) -> Result<PgListener, sqlx::Error> {
        let mut connection = PgListener::connect_with(&self.pool).await?;
        connection.listen_all(self.channels.iter().copied()).await?;
        Ok(connection)
    }
}

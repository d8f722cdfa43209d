//! The deliverer every replica runs: it leases due (endpoint, run) queues, sends each queue's
//! pending deliveries in `seq` order (stopping at the first failure, so a later event waits while
//! an earlier one is retried) and records what happened. It wakes when the outbox trigger
//! announces new deliveries (`agentd_webhooks`) and every second for retries that came due.
//!
//! A lease outlives the work done under it: a queue's requests stop being started after 40 % of
//! the lease and each request is cut at that much too, so no other replica can take the queue
//! while a request is in flight; a replica killed mid-delivery leaves its queues to expire, and
//! another replica sends the same messages again (same `webhook-id`: at-least-once).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ring::rand::{SecureRandom, SystemRandom};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::signing::{signature_header, EndpointSecret};
use super::{SigningKey, WebhookSettings};
use crate::domain::WebhookId;
use crate::metrics::Metrics;
use crate::outbound::egress::{EgressError, GuardedResolver};
use crate::store::{Delivered, FailedAttempt, LeasedQueue, PendingDelivery, Store, WEBHOOKS_CHANNEL};

/// Queues delivered at once per replica.
const CONCURRENCY: usize = 32;
/// Deliveries sent per lease of a queue, at most.
const PER_LEASE: i64 = 100;
/// How often due retries are looked for without a notification.
const POLL: Duration = Duration::from_secs(1);
/// The longest a request may take (also bounded by the lease).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Response bytes read (and dropped) so that the connection can be reused.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Delivers webhooks until stopped.
pub struct Deliverer {
    store: Store,
    key: SigningKey,
    settings: Arc<WebhookSettings>,
    client: reqwest::Client,
    metrics: Arc<Metrics>,
    lease: Duration,
}

/// Why an attempt did not deliver.
#[derive(Debug)]
struct Failure {
    status: Option<u16>,
    error: String,
    /// The receiver said when to come back (429/503 `Retry-After`).
    retry_after: Option<Duration>,
    /// The receiver answered 410 Gone.
    gone: bool,
}

impl Deliverer {
    /// A deliverer signing with `key`, leasing queues for `lease`.
    pub fn new(
        store: Store,
        key: SigningKey,
        settings: Arc<WebhookSettings>,
        metrics: Arc<Metrics>,
        lease: Duration,
    ) -> Result<Self, String> {
        let budget = Self::budget(lease);
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .tcp_nodelay(true)
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver::new(Arc::new(settings.egress.clone()))))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT.min(budget))
            .timeout(REQUEST_TIMEOUT.min(budget))
            .user_agent(concat!("agentd-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the webhook HTTP client: {e}"))?;
        Ok(Self { store, key, settings, client, metrics, lease })
    }

    /// How long into a lease requests may still be started (and may take).
    fn budget(lease: Duration) -> Duration {
        lease.mul_f64(0.4)
    }

    /// Deliver until `stop`; in-flight requests are given a few seconds to finish (their queues'
    /// leases expire otherwise, and another replica sends them again).
    pub async fn run(self, stop: CancellationToken) {
        let this = Arc::new(self);
        let wake = this.store.waker(&[WEBHOOKS_CHANNEL], stop.clone());
        let slots = Arc::new(Semaphore::new(CONCURRENCY));
        let mut tasks = JoinSet::new();
        tracing::info!("webhook deliverer started");
        while !stop.is_cancelled() {
            let free = slots.available_permits();
            let mut full = false;
            if free > 0 {
                match this.store.lease_webhook_queues(free as i64, this.lease).await {
                    Ok(queues) => {
                        full = queues.len() == free;
                        for queue in queues {
                            let Ok(permit) = slots.clone().try_acquire_owned() else { break };
                            let this = this.clone();
                            tasks.spawn(async move {
                                this.deliver_queue(queue).await;
                                drop(permit);
                            });
                        }
                    }
                    Err(error) => tracing::warn!(%error, "webhooks: leasing queues failed; trying again"),
                }
            }
            while tasks.try_join_next().is_some() {}
            if full {
                // More may be due: look again when a slot is free.
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = tasks.join_next() => continue,
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        let drained = tokio::time::timeout(Duration::from_secs(5), async {
            while tasks.join_next().await.is_some() {}
        });
        if drained.await.is_err() {
            tracing::warn!(
                "webhooks: deliveries still in flight at shutdown; another replica will send them"
            );
        }
    }

    /// Send a leased queue's deliveries in order until one fails, then record the lot.
    async fn deliver_queue(&self, queue: LeasedQueue) {
        let started = Instant::now();
        let LeasedQueue { target, run_id } = queue;
        let pending =
            match self.store.queued_deliveries(WebhookId(target.endpoint_id), run_id, PER_LEASE).await {
                Ok(pending) => pending,
                Err(error) => {
                    tracing::warn!(%error, "webhooks: reading a queue failed; its lease will expire");
                    return;
                }
            };
        let mut secrets = vec![self.key.endpoint_secret(target.salt.as_deref())];
        if let Some(previous) = &target.previous_salt {
            secrets.push(self.key.endpoint_secret(Some(previous)));
        }
        let mut delivered = Vec::new();
        let mut failed = None;
        for delivery in pending {
            if started.elapsed() >= Self::budget(self.lease) {
                break;
            }
            match self.send(&target.url, &secrets, &delivery).await {
                Ok(status) => {
                    let lag = (chrono::Utc::now() - delivery.event.at).to_std().ok();
                    self.metrics.observe_webhook("delivered", lag);
                    delivered.push(Delivered { id: delivery.id, status: i32::from(status) });
                }
                Err(failure) => {
                    failed = Some(self.attempt_failed(&delivery, failure));
                    break;
                }
            }
        }
        let recorded = self
            .store
            .finish_webhook_queue(WebhookId(target.endpoint_id), run_id, &delivered, failed.as_ref())
            .await;
        if let Err(error) = recorded {
            tracing::warn!(%error, "webhooks: recording deliveries failed; they will be sent again");
        }
    }

    /// What a failed attempt leads to: a retry by the schedule (or `Retry-After`), or giving up
    /// and disabling the endpoint.
    fn attempt_failed(&self, delivery: &PendingDelivery, failure: Failure) -> FailedAttempt {
        let attempt = delivery.attempts.max(0) as u32 + 1;
        let scheduled = self.settings.schedule.delay_after(attempt, jitter());
        let (retry_in, disable, outcome) = match (&failure, scheduled) {
            (Failure { gone: true, .. }, _) => (
                Some(scheduled.unwrap_or(Duration::ZERO)),
                Some("the receiver answered 410 Gone".to_owned()),
                "gone",
            ),
            (_, None) => {
                let reason = format!(
                    "{} attempts failed over the whole retry schedule; the last: {}",
                    attempt, failure.error
                );
                (None, Some(reason), "failed")
            }
            (Failure { retry_after: Some(after), .. }, Some(_)) => (Some(*after), None, "retrying"),
            (_, Some(delay)) => (Some(delay), None, "retrying"),
        };
        self.metrics.observe_webhook(outcome, None);
        tracing::info!(
            delivery = delivery.id, attempt, status = failure.status, error = %failure.error, outcome,
            "webhook delivery attempt failed"
        );
        FailedAttempt {
            id: delivery.id,
            status: failure.status.map(i32::from),
            error: failure.error,
            retry_in,
            disable,
        }
    }

    /// POST one event; the response status if the receiver took it (2xx).
    async fn send(
        &self,
        url: &str,
        secrets: &[EndpointSecret],
        delivery: &PendingDelivery,
    ) -> Result<u16, Failure> {
        let failure = |error: String| Failure { status: None, error, retry_after: None, gone: false };
        let url = reqwest::Url::parse(url).map_err(|e| failure(format!("invalid URL: {e}")))?;
        let refused = |e: EgressError| failure(format!("refused by the egress guard: {e}"));
        self.settings.egress.check_url(&url).map_err(refused)?;
        let body = serde_json::to_string(&delivery.event).map_err(|e| failure(e.to_string()))?;
        let id = message_id(delivery.id);
        let timestamp = chrono::Utc::now().timestamp();
        let event = delivery.event.event_type.as_str();
        let span = crate::telemetry::webhook_delivery(delivery.trace.as_ref(), event, &url);
        if let Some(span) = &span {
            span.set("agentd.webhook.attempt", i64::from(delivery.attempts) + 1);
        }
        let request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature_header(secrets, &id, timestamp, &body))
            .body(body);
        let sent =
            crate::telemetry::within(span.as_ref(), async { crate::telemetry::inject(request).send().await })
                .await;
        if let Some(span) = span {
            match &sent {
                Ok(response) => {
                    let status = response.status();
                    span.set("http.response.status_code", i64::from(status.as_u16()));
                    if !status.is_success() {
                        span.fail(status.as_str(), "the receiver did not take the event");
                    }
                }
                Err(error) => {
                    let kind = if error.is_timeout() {
                        "timeout"
                    } else if error.is_connect() {
                        "connect"
                    } else {
                        "request"
                    };
                    span.fail(kind, "the request failed");
                }
            }
            span.end();
        }
        let response = sent.map_err(|e| failure(describe(e)))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        drain(response).await;
        if status.is_success() {
            return Ok(status.as_u16());
        }
        let error = match status.as_u16() {
            300..=399 => format!("answered {status}: redirects are not followed"),
            _ => format!("answered {status}"),
        };
        let honoured = matches!(status.as_u16(), 429 | 503).then_some(retry_after).flatten();
        Err(Failure {
            status: Some(status.as_u16()),
            error,
            retry_after: honoured,
            gone: status.as_u16() == 410,
        })
    }
}

pub use crate::domain::webhook::message_id;

/// A uniform number in [-1, 1].
fn jitter() -> f64 {
    let mut bytes = [0u8; 4];
    match SystemRandom::new().fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX) * 2.0 - 1.0,
        Err(_) => 0.0,
    }
}

/// `Retry-After` (seconds or an HTTP date, as the LLM client reads it), at most an hour.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    crate::outbound::parse_retry_after(headers, std::time::SystemTime::now())
        .map(|delay| delay.min(MAX_RETRY_AFTER))
}

/// Read a little of the response (so the connection may be reused) and drop the rest.
async fn drain(mut response: reqwest::Response) {
    let mut read = 0;
    while let Ok(Some(chunk)) = response.chunk().await {
        read += chunk.len();
        if read >= MAX_RESPONSE_BYTES {
            break;
        }
    }
}

/// A transport error, as a delivery's `last_error` shows it (as tool requests describe theirs,
/// the egress guard's refusal saying so).
fn describe(error: reqwest::Error) -> String {
    match EgressError::find_in(&error) {
        Some(refused) => format!("refused by the egress guard: {refused}"),
        None => crate::outbound::describe(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_capped() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "7".parse().expect("value"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(reqwest::header::RETRY_AFTER, "99999".parse().expect("value"));
        assert_eq!(retry_after(&headers), Some(MAX_RETRY_AFTER));
        let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
        headers.insert(reqwest::header::RETRY_AFTER, later.parse().expect("value"));
        let delay = retry_after(&headers).expect("a date");
        assert!(delay > Duration::from_secs(100) && delay <= Duration::from_secs(120), "{delay:?}");
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().expect("value"));
        assert_eq!(retry_after(&headers), None);
    }

    /// Deliveries that failed together do not all come back together: their retries spread
    /// over the whole ±10 % around the schedule's delay, and never outside it.
    #[test]
    fn retries_of_failures_at_one_instant_spread_within_ten_percent() {
        let schedule = crate::webhooks::RetrySchedule(vec![Duration::from_secs(100)]);
        let delays: Vec<Duration> =
            (0..1000).map(|_| schedule.delay_after(1, jitter()).expect("a retry")).collect();
        let (least, most) = (delays.iter().min().expect("delays"), delays.iter().max().expect("delays"));
        assert!(
            *least >= Duration::from_secs(90) && *most <= Duration::from_secs(110),
            "{least:?}..{most:?}"
        );
        // A tenth of uniform draws falls in each end's last 2 s: 1,000 miss one with a chance of 0.9^1000.
        assert!(*least < Duration::from_secs(92) && *most > Duration::from_secs(108), "{least:?}..{most:?}");
        let mut distinct = delays.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 990, "{} distinct delays of 1,000", distinct.len());
        assert_eq!(schedule.delay_after(2, jitter()), None, "the schedule's end");
    }
}

//! Webhook endpoints, their deliveries (written by the `events_webhooks` trigger in each event's
//! transaction) and the per (endpoint, run) queues the deliverers lease.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{parse, Audit, Owner, Store, StoreResult};
use crate::domain::webhook::Delivery;
use crate::domain::webhook::DeliveryPage;
use crate::domain::webhook::WebhookEndpoint;
use crate::domain::TenantId;
use crate::domain::WebhookId;
use crate::domain::{Event, RunId};

/// A new registered endpoint.
#[derive(Debug, Clone)]
pub struct NewEndpoint {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub crew: Option<String>,
    /// The run it belongs to (an A2A push notification config); `None`: registered.
    pub run_id: Option<RunId>,
    pub description: String,
    /// `None` for a run's endpoint: signed with the server's secret, as a kickoff's webhooks.
    pub salt: Option<Vec<u8>>,
}

/// A change of an endpoint (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct EndpointPatch {
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub description: Option<String>,
}

/// What a deliverer needs of an endpoint.
#[derive(Debug, Clone)]
pub struct DeliveryTarget {
    pub endpoint_id: Uuid,
    pub url: String,
    /// `None`: signed with the server secret (a kickoff's webhook).
    pub salt: Option<Vec<u8>>,
    /// The rotated-out salt, while it still signs.
    pub previous_salt: Option<Vec<u8>>,
}

/// A leased queue: one endpoint's pending deliveries of one run.
#[derive(Debug, Clone)]
pub struct LeasedQueue {
    pub target: DeliveryTarget,
    pub run_id: RunId,
}

/// A pending delivery with its event.
#[derive(Debug, Clone)]
pub struct PendingDelivery {
    pub id: i64,
    pub attempts: i32,
    /// Global id of the event.
    pub event_id: i64,
    pub event: Event,
    /// The trace of the event's run, which the delivery's span joins.
    pub trace: Option<crate::domain::RunTrace>,
}

/// A delivery the receiver took.
#[derive(Debug, Clone, Copy)]
pub struct Delivered {
    pub id: i64,
    pub status: i32,
}

/// A failed attempt and what follows from it.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub id: i64,
    /// The response's status, if one came.
    pub status: Option<i32>,
    pub error: String,
    /// When to try again; `None`: the schedule is used up (the delivery has failed).
    pub retry_in: Option<Duration>,
    /// Disable the endpoint, for this reason (410 Gone, or the schedule used up).
    pub disable: Option<String>,
}

/// The outbox's size, for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutboxGauges {
    pub pending: i64,
    /// Age of the oldest pending delivery, in seconds.
    pub oldest_pending_s: f64,
}

struct EndpointRow {
    id: Uuid,
    url: String,
    events: Vec<String>,
    crew: Option<String>,
    run_id: Option<Uuid>,
    description: String,
    enabled: bool,
    disabled_reason: Option<String>,
    previous_until: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<EndpointRow> for WebhookEndpoint {
    fn from(row: EndpointRow) -> Self {
        let EndpointRow {
            id,
            url,
            events,
            crew,
            run_id,
            description,
            enabled,
            disabled_reason,
            previous_until,
            created_at,
            updated_at,
        } = row;
        Self {
            id: WebhookId(id),
            url,
            events,
            crew,
            run_id: run_id.map(RunId),
            description,
            enabled,
            disabled_reason,
            previous_secret_until: previous_until.filter(|until| *until > Utc::now()),
            created_at,
            updated_at,
        }
    }
}

struct DeliveryRow {
    id: i64,
    run_id: Uuid,
    seq: i64,
    event_type: String,
    status: String,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    last_attempt_at: Option<DateTime<Utc>>,
    last_status: Option<i32>,
    last_error: Option<String>,
    delivered_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl From<DeliveryRow> for Delivery {
    fn from(row: DeliveryRow) -> Self {
        let pending = row.status == "pending";
        Self {
            id: row.id,
            message_id: crate::domain::webhook::message_id(row.id),
            run_id: RunId(row.run_id),
            seq: row.seq,
            event_type: row.event_type,
            status: row.status,
            attempts: row.attempts,
            next_attempt_at: pending.then_some(row.next_attempt_at),
            last_attempt_at: row.last_attempt_at,
            last_status: row.last_status,
            last_error: row.last_error,
            delivered_at: row.delivered_at,
            created_at: row.created_at,
        }
    }
}

fn interval(duration: Duration) -> sqlx::postgres::types::PgInterval {
    sqlx::postgres::types::PgInterval {
        months: 0,
        days: 0,
        microseconds: i64::try_from(duration.as_micros()).unwrap_or(i64::MAX),
    }
}

impl Store {
    /// Register an endpoint.
    #[tracing::instrument(skip_all, fields(endpoint = %endpoint.id), err)]
    pub async fn create_webhook(
        &self,
        tenant: &TenantId,
        endpoint: &NewEndpoint,
        audit: &Audit,
    ) -> StoreResult<WebhookEndpoint> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            EndpointRow,
            r#"INSERT INTO webhook_endpoints (id, url, events, crew, description, salt, tenant, run_id)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               RETURNING id, url, events, crew, run_id, description, enabled, disabled_reason,
                         previous_until, created_at, updated_at"#,
            endpoint.id,
            endpoint.url,
            &endpoint.events,
            endpoint.crew,
            endpoint.description,
            endpoint.salt,
            tenant.as_str(),
            endpoint.run_id.map(|run| run.0),
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, Some(&format!("/v1/webhooks/{}", endpoint.id))).await?;
        tx.commit().await?;
        Ok(row.into())
    }

    /// The tenant of an endpoint; `None` when there is no such endpoint.
    #[tracing::instrument(skip_all, fields(endpoint = %id), err)]
    pub async fn webhook_tenant(&self, id: WebhookId) -> StoreResult<Option<TenantId>> {
        let tenant = sqlx::query_scalar!("SELECT tenant FROM webhook_endpoints WHERE id = $1", id.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(tenant.map(TenantId::from))
    }

    /// Registered endpoints (oldest first; of `tenant`, or every tenant's), or a run's.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_webhooks(
        &self,
        tenant: Option<&TenantId>,
        run: Option<RunId>,
    ) -> StoreResult<Vec<WebhookEndpoint>> {
        let rows = sqlx::query_as!(
            EndpointRow,
            r#"SELECT id, url, events, crew, run_id, description, enabled, disabled_reason,
                      previous_until, created_at, updated_at
                 FROM webhook_endpoints
                WHERE run_id IS NOT DISTINCT FROM $1 AND ($2::text IS NULL OR tenant = $2)
                ORDER BY created_at, id"#,
            run.map(|r| r.0),
            tenant.map(TenantId::as_str),
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(WebhookEndpoint::from).collect())
    }

    #[tracing::instrument(skip_all, fields(endpoint = %id), err)]
    pub async fn get_webhook(&self, id: WebhookId) -> StoreResult<Option<WebhookEndpoint>> {
        let row = sqlx::query_as!(
            EndpointRow,
            r#"SELECT id, url, events, crew, run_id, description, enabled, disabled_reason,
                      previous_until, created_at, updated_at
                 FROM webhook_endpoints WHERE id = $1"#,
            id.0,
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(WebhookEndpoint::from))
    }

    /// Change an endpoint. Enabling it clears the reason it was disabled for and makes its
    /// queues due at once.
    #[tracing::instrument(skip_all, fields(endpoint = %id), err)]
    pub async fn update_webhook(
        &self,
        id: WebhookId,
        patch: &EndpointPatch,
        audit: &Audit,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            EndpointRow,
            r#"UPDATE webhook_endpoints
                  SET events = coalesce($2, events),
                      enabled = coalesce($3, enabled),
                      disabled_reason = CASE WHEN $3 IS NULL THEN disabled_reason
                                             WHEN $3 THEN NULL
                                             ELSE 'disabled through the API' END,
                      description = coalesce($4, description),
                      updated_at = now()
                WHERE id = $1
            RETURNING id, url, events, crew, run_id, description, enabled, disabled_reason,
                      previous_until, created_at, updated_at"#,
            id.0,
            patch.events.as_deref(),
            patch.enabled,
            patch.description,
        )
        .fetch_optional(&mut *tx)
        .await?;
        if row.is_some() && patch.enabled == Some(true) {
            sqlx::query!("UPDATE webhook_queues SET next_attempt_at = now() WHERE endpoint_id = $1", id.0)
                .execute(&mut *tx)
                .await?;
        }
        audit.settle_for(tx, row.is_some().then_some(Owner::Webhook(id.0))).await?;
        Ok(row.map(WebhookEndpoint::from))
    }

    /// Remove an endpoint with its deliveries; `false` if there was none.
    #[tracing::instrument(skip_all, fields(endpoint = %id), err)]
    pub async fn delete_webhook(&self, id: WebhookId, audit: &Audit) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let owner = sqlx::query_scalar!("DELETE FROM webhook_endpoints WHERE id = $1 RETURNING tenant", id.0)
            .fetch_optional(&mut *tx)
            .await?;
        audit.settle(tx, owner.map(TenantId::from).as_ref()).await
    }

    /// Give a registered endpoint a new salt, the current one signing too for `grace`.
    #[tracing::instrument(skip_all, fields(endpoint = %id), err)]
    pub async fn rotate_webhook(
        &self,
        id: WebhookId,
        salt: &[u8],
        grace: Duration,
        audit: &Audit,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            EndpointRow,
            r#"UPDATE webhook_endpoints
                  SET previous_salt = salt, previous_until = now() + $3, salt = $2, updated_at = now()
                WHERE id = $1 AND run_id IS NULL
            RETURNING id, url, events, crew, run_id, description, enabled, disabled_reason,
                      previous_until, created_at, updated_at"#,
            id.0,
            salt,
            interval(grace),
        )
        .fetch_optional(&mut *tx)
        .await?;
        audit.settle_for(tx, row.is_some().then_some(Owner::Webhook(id.0))).await?;
        Ok(row.map(WebhookEndpoint::from))
    }

    /// An endpoint's deliveries, newest first, below `before`.
    #[tracing::instrument(skip_all, fields(endpoint = %endpoint), err)]
    pub async fn list_deliveries(
        &self,
        endpoint: WebhookId,
        before: Option<i64>,
        limit: i64,
    ) -> StoreResult<DeliveryPage> {
        let mut rows = sqlx::query_as!(
            DeliveryRow,
            r#"SELECT d.id, d.run_id, d.seq, e.type AS event_type, d.status, d.attempts,
                      d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.delivered_at,
                      d.created_at
                 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
                WHERE d.endpoint_id = $1 AND d.id < $2
                ORDER BY d.id DESC LIMIT $3"#,
            endpoint.0,
            before.unwrap_or(i64::MAX),
            limit + 1,
        )
        .fetch_all(&self.pool)
        .await?;
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit.max(0) as usize);
        let next_before = has_more.then(|| rows.last().map(|r| r.id)).flatten();
        Ok(DeliveryPage { deliveries: rows.into_iter().map(Delivery::from).collect(), next_before })
    }

    /// Send a delivery again as soon as its queue allows (a failed or delivered one is pending
    /// again); `None` if the endpoint has no such delivery.
    #[tracing::instrument(skip_all, fields(endpoint = %endpoint, delivery = id), err)]
    pub async fn retry_delivery(
        &self,
        endpoint: WebhookId,
        id: i64,
        audit: &Audit,
    ) -> StoreResult<Option<Delivery>> {
        let mut tx = self.pool.begin().await?;
        let Some(before) = sqlx::query!(
            "SELECT run_id, status FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 FOR UPDATE",
            id,
            endpoint.0
        )
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let added = i32::from(before.status != "pending");
        sqlx::query!(
            "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE id = $1",
            id
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query!(
            r#"INSERT INTO webhook_queues AS q (endpoint_id, run_id, pending) VALUES ($1, $2, $3)
               ON CONFLICT (endpoint_id, run_id)
               DO UPDATE SET pending = q.pending + excluded.pending, next_attempt_at = now()"#,
            endpoint.0,
            before.run_id,
            added,
        )
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query_as!(
            DeliveryRow,
            r#"SELECT d.id, d.run_id, d.seq, e.type AS event_type, d.status, d.attempts,
                      d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.delivered_at,
                      d.created_at
                 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1"#,
            id,
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_for(&mut tx, Owner::Webhook(endpoint.0)).await?;
        tx.commit().await?;
        Ok(Some(row.into()))
    }

    /// Lease up to `limit` due queues of enabled endpoints for `lease`.
    #[tracing::instrument(level = "debug", skip_all, err)]
    pub async fn lease_webhook_queues(&self, limit: i64, lease: Duration) -> StoreResult<Vec<LeasedQueue>> {
        let rows = sqlx::query!(
            r#"UPDATE webhook_queues AS q SET lease_until = now() + $2
                 FROM (SELECT q2.endpoint_id, q2.run_id
                         FROM webhook_queues q2
                         JOIN webhook_endpoints w ON w.id = q2.endpoint_id AND w.enabled
                        WHERE q2.next_attempt_at <= now()
                          AND (q2.lease_until IS NULL OR q2.lease_until < now())
                        ORDER BY q2.next_attempt_at
                        LIMIT $1
                          FOR UPDATE OF q2 SKIP LOCKED) AS due,
                      webhook_endpoints w
                WHERE q.endpoint_id = due.endpoint_id AND q.run_id = due.run_id AND w.id = q.endpoint_id
            RETURNING q.endpoint_id, q.run_id, w.url, w.salt,
                      CASE WHEN w.previous_until > now() THEN w.previous_salt END AS previous_salt"#,
            limit,
            interval(lease),
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| LeasedQueue {
                target: DeliveryTarget {
                    endpoint_id: r.endpoint_id,
                    url: r.url,
                    salt: r.salt,
                    previous_salt: r.previous_salt,
                },
                run_id: RunId(r.run_id),
            })
            .collect())
    }

    /// A leased queue's first `limit` pending deliveries, in `seq` order, with their events.
    #[tracing::instrument(level = "debug", skip_all, err)]
    pub async fn queued_deliveries(
        &self,
        endpoint: WebhookId,
        run_id: RunId,
        limit: i64,
    ) -> StoreResult<Vec<PendingDelivery>> {
        let rows = sqlx::query!(
            r#"SELECT d.id, d.attempts, e.id AS event_id, e.seq, e.type AS event_type, e.at, e.task,
                      e.agent, e.data, r.trace_id AS "trace_id?", r.traceparent AS "traceparent?",
                      r.tracestate AS "tracestate?"
                 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
                 LEFT JOIN runs r ON r.id = d.run_id
                WHERE d.endpoint_id = $1 AND d.run_id = $2 AND d.status = 'pending'
                ORDER BY d.seq LIMIT $3"#,
            endpoint.0,
            run_id.0,
            limit,
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|r| {
                let event = Event {
                    seq: r.seq,
                    run_id,
                    event_type: parse(&r.event_type)?,
                    at: r.at,
                    task: r.task,
                    agent: r.agent,
                    data: r.data,
                };
                let trace = crate::domain::RunTrace::from_columns(r.trace_id, r.traceparent, r.tracestate);
                Ok(PendingDelivery { id: r.id, attempts: r.attempts, event_id: r.event_id, event, trace })
            })
            .collect()
    }

    /// Record what a lease of a queue did: deliveries taken, and at most one failed attempt
    /// (after which the queue waits); the queue is released, or removed when nothing is left.
    #[tracing::instrument(level = "debug", skip_all, fields(delivered = delivered.len()), err)]
    pub async fn finish_webhook_queue(
        &self,
        endpoint: WebhookId,
        run_id: RunId,
        delivered: &[Delivered],
        failed: Option<&FailedAttempt>,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let ids: Vec<i64> = delivered.iter().map(|d| d.id).collect();
        let statuses: Vec<i32> = delivered.iter().map(|d| d.status).collect();
        if !ids.is_empty() {
            sqlx::query!(
                r#"UPDATE webhook_deliveries d
                      SET status = 'delivered', attempts = d.attempts + 1, last_status = x.status,
                          last_error = NULL, last_attempt_at = now(), delivered_at = now()
                     FROM UNNEST($1::bigint[], $2::int4[]) AS x(id, status)
                    WHERE d.id = x.id AND d.status = 'pending'"#,
                &ids,
                &statuses,
            )
            .execute(&mut *tx)
            .await?;
        }
        let mut done = ids.len() as i32;
        let mut retry_in = Duration::ZERO;
        if let Some(failed) = failed {
            let gave_up = failed.retry_in.is_none();
            retry_in = failed.retry_in.unwrap_or_default();
            sqlx::query!(
                r#"UPDATE webhook_deliveries
                      SET attempts = attempts + 1, last_status = $2, last_error = $3, last_attempt_at = now(),
                          next_attempt_at = now() + $4,
                          status = CASE WHEN $5 THEN 'failed' ELSE 'pending' END
                    WHERE id = $1 AND status = 'pending'"#,
                failed.id,
                failed.status,
                failed.error,
                interval(retry_in),
                gave_up,
            )
            .execute(&mut *tx)
            .await?;
            done += i32::from(gave_up);
            if let Some(reason) = &failed.disable {
                sqlx::query!(
                    r#"UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
                        WHERE id = $1"#,
                    endpoint.0,
                    reason,
                )
                .execute(&mut *tx)
                .await?;
            }
        }
        sqlx::query!(
            r#"UPDATE webhook_queues
                  SET pending = greatest(pending - $3, 0), lease_until = NULL, next_attempt_at = now() + $4
                WHERE endpoint_id = $1 AND run_id = $2"#,
            endpoint.0,
            run_id.0,
            done,
            interval(retry_in),
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query!(
            "DELETE FROM webhook_queues WHERE endpoint_id = $1 AND run_id = $2 AND pending = 0",
            endpoint.0,
            run_id.0
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Pending deliveries and the age of the oldest.
    #[tracing::instrument(skip_all, err)]
    pub async fn outbox_gauges(&self) -> StoreResult<OutboxGauges> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "pending!",
                      coalesce(extract(epoch FROM now() - min(created_at))::float8, 0) AS "oldest!"
                 FROM webhook_deliveries WHERE status = 'pending'"#
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(OutboxGauges { pending: row.pending, oldest_pending_s: row.oldest })
    }
}

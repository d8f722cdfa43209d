//! Webhook endpoints and their deliveries, as the API shows them.

use chrono::{DateTime, Utc};

use super::ids::{RunId, WebhookId};

/// A registered endpoint, or one of a run's (a kickoff's `webhooks`).
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEndpoint {
    pub id: WebhookId,
    pub url: String,
    pub events: Vec<String>,
    pub crew: Option<String>,
    /// The run it belongs to (a kickoff's webhook); `None`: registered.
    pub run_id: Option<RunId>,
    pub description: String,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    /// Until when the rotated-out secret signs too.
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One delivery of one event to one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: i64,
    pub endpoint_id: WebhookId,
    pub run_id: RunId,
    pub seq: i64,
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

//! Webhook endpoints and their deliveries, as the API shows them.

use chrono::{DateTime, Utc};

use super::ids::{RunId, WebhookId};

/// A webhook endpoint.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[schema(as = WebhookBody)]
pub struct WebhookEndpoint {
    #[schema(value_type = uuid::Uuid)]
    pub id: WebhookId,
    pub url: String,
    /// Event types, `<prefix>.*` or `*`.
    pub events: Vec<String>,
    /// Only this crew's runs (registered endpoints).
    pub crew: Option<String>,
    /// The run whose kickoff carried it; `null`: registered.
    #[schema(value_type = Option<uuid::Uuid>)]
    pub run_id: Option<RunId>,
    pub description: String,
    pub enabled: bool,
    /// Why it was disabled: through the API, a 410 Gone, or the retry schedule used up.
    pub disabled_reason: Option<String>,
    /// Until when the secret rotated out signs alongside the current one.
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One event's delivery to one endpoint.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[schema(as = DeliveryBody)]
pub struct Delivery {
    pub id: i64,
    /// The `webhook-id` header: the same on every attempt (receivers dedupe on it).
    pub message_id: String,
    #[schema(value_type = uuid::Uuid)]
    pub run_id: RunId,
    pub seq: i64,
    pub event_type: String,
    /// `pending`, `delivered` or `failed` (the retry schedule was used up).
    pub status: String,
    pub attempts: i32,
    /// When the next attempt is due (pending ones).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// The status code of the last response, if one came.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// The `webhook-id` of delivery `delivery`: the same on every attempt.
pub fn message_id(delivery: i64) -> String {
    format!("msg_{delivery}")
}

/// A page of an endpoint's deliveries, newest first.
#[derive(Debug, Clone)]
pub struct DeliveryPage {
    pub deliveries: Vec<Delivery>,
    /// Where the next page starts (`before`), if there is one.
    pub next_before: Option<i64>,
}

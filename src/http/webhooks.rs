//! Webhook endpoints and their deliveries: `/v1/webhooks[/{id}[/rotate-secret|/deliveries[/{id}/retry]]]`.
//! An endpoint's signing secret is answered when it is made (create, rotate) and never again.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiResult, Problem};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::runs::bounded;
use super::AppState;
use crate::domain::RunId;
use crate::domain::WebhookId;
use crate::service::WithSecret;

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;

pub use crate::domain::webhook::WebhookEndpoint as WebhookBody;

/// An endpoint with its signing secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookWithSecret {
    #[serde(flatten)]
    pub webhook: WebhookBody,
    /// The Standard Webhooks secret (`whsec_...`) receivers verify signatures with.
    pub secret: String,
}

impl From<WithSecret> for WebhookWithSecret {
    fn from(w: WithSecret) -> Self {
        Self { webhook: w.endpoint, secret: w.secret }
    }
}

/// Endpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookBody>,
}

/// The body of `POST /v1/webhooks`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct WebhookCreate {
    /// An `http` or `https` URL on a public address (or one the operator allows), without
    /// credentials.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
    /// Event types, `<prefix>.*` (e.g. `task.*`) or `*` (the default).
    #[schema(min_items = 1, max_items = 64, default = json!(["*"]))]
    events: Option<Vec<String>>,
    /// Only this crew's runs.
    #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")]
    crew: Option<String>,
    /// Lines of text (line feeds and tabs, no other control characters).
    #[schema(max_length = 1024, pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$")]
    description: Option<String>,
}

/// The body of `PATCH /v1/webhooks/{id}`: the fields to change.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct WebhookPatch {
    #[schema(min_items = 1, max_items = 64)]
    events: Option<Vec<String>>,
    /// `true` resumes a disabled endpoint's deliveries where they stopped.
    enabled: Option<bool>,
    /// Lines of text (line feeds and tabs, no other control characters).
    #[schema(max_length = 1024, pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$")]
    description: Option<String>,
}

pub use crate::domain::webhook::Delivery as DeliveryBody;

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<i64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WebhooksQuery {
    /// The endpoints of this run's kickoff instead of the registered ones.
    #[param(nullable = false)]
    pub run_id: Option<Uuid>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// Page size, 1 to 200 (default 50).
    #[param(nullable = false, minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(nullable = false, minimum = 1)]
    pub cursor: Option<i64>,
}

/// Register a webhook endpoint.
///
/// Every committed event of every run (or of `crew`'s runs) that matches `events` is POSTed to
/// `url`, signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`), in `seq` order per run, at least once. The answer holds the endpoint's
/// secret: it is not shown again (rotate it to get a new one).
#[utoipa::path(
    post, path = "/webhooks", tag = "webhooks",
    request_body = WebhookCreate,
    responses(
        (status = 201, description = "Registered", body = WebhookWithSecret),
        (status = 422, description = "Invalid URL (or refused by the egress guard), events, crew or description", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_webhook(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<WebhookWithSecret>)> {
    let created = state.services.create_webhook(&caller, body, &audit).await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// List registered endpoints (or a run's, with `run_id`), oldest first.
#[utoipa::path(
    get, path = "/webhooks", tag = "webhooks",
    params(WebhooksQuery),
    responses(
        (status = 200, body = WebhookList),
        (status = 400, description = "Malformed run_id", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_webhooks(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<WebhooksQuery>,
) -> ApiResult<Json<WebhookList>> {
    let webhooks = state.services.webhooks(&caller, query.run_id.map(RunId)).await?;
    Ok(Json(WebhookList { webhooks }))
}

/// Get an endpoint (never its secret).
#[utoipa::path(
    get, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    responses(
        (status = 200, body = WebhookBody),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_webhook(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<WebhookBody>> {
    Ok(Json(state.services.webhook(&caller, WebhookId(id)).await?))
}

/// Change an endpoint's `events`, `description`, or `enabled`.
#[utoipa::path(
    patch, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    request_body = WebhookPatch,
    responses(
        (status = 200, body = WebhookBody),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid events or description", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn update_webhook(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<WebhookBody>> {
    Ok(Json(state.services.update_webhook(&caller, WebhookId(id), body, &audit).await?))
}

/// Remove an endpoint and its deliveries.
#[utoipa::path(
    delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_webhook(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.delete_webhook(&caller, WebhookId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Give a registered endpoint a new secret.
///
/// The previous secret keeps signing alongside the new one (two `v1,` signatures in
/// `webhook-signature`) until `previous_secret_until`, so receivers can switch without losing a
/// message.
#[utoipa::path(
    post, path = "/webhooks/{id}/rotate-secret", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The new secret", body = WebhookWithSecret),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A kickoff's webhook (signed with the server's secret)", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn rotate_webhook_secret(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<WebhookWithSecret>> {
    Ok(Json(state.services.rotate_webhook_secret(&caller, WebhookId(id), &audit).await?.into()))
}

/// An endpoint's deliveries, newest first.
#[utoipa::path(
    get, path = "/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id"), DeliveriesQuery),
    responses(
        (status = 200, body = DeliveryList),
        (status = 400, description = "Malformed id, limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_deliveries(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<DeliveryList>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = query.cursor.map(|c| bounded(Some(c), 1, i64::MAX, "cursor")).transpose()?;
    let page = state.services.deliveries(&caller, WebhookId(id), before, limit).await?;
    Ok(Json(DeliveryList { deliveries: page.deliveries, next_cursor: page.next_before }))
}

/// Send a delivery again, as soon as the ones before it in its run's queue are delivered.
#[utoipa::path(
    post, path = "/webhooks/{id}/deliveries/{delivery_id}/retry", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Endpoint id"), ("delivery_id" = i64, Path, description = "Delivery id", minimum = 1)),
    responses(
        (status = 202, description = "Pending again", body = DeliveryBody),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint or delivery", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The endpoint is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Webhooks are not configured on this server (no AGENTD_WEBHOOK_SECRET)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retry_delivery(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath((id, delivery)): ApiPath<(Uuid, i64)>,
) -> ApiResult<(StatusCode, Json<DeliveryBody>)> {
    let delivery = state.services.retry_delivery(&caller, WebhookId(id), delivery, &audit).await?;
    Ok((StatusCode::ACCEPTED, Json(delivery)))
}

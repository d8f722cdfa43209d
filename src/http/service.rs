//! Service endpoints that need no API key: liveness, readiness, the OpenAPI document and its
//! browsable page.

use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult, Problem};
use crate::app::AppState;
use crate::metrics::Gauges;

/// How long readiness waits for the database.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The state of the service.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// Liveness: 200 while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "service", security(()), responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Readiness: 200 when the database answers and every migration is applied, 503 otherwise.
#[utoipa::path(
    get, path = "/readyz", tag = "service", security(()),
    responses(
        (status = 200, body = Health),
        (status = 503, description = "Database unreachable or not migrated", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Health>> {
    match tokio::time::timeout(READY_TIMEOUT, state.store.check_ready()).await {
        Ok(Ok(true)) => Ok(Json(Health { status: "ready" })),
        Ok(Ok(false)) => Err(ApiError::Unavailable("database migrations are pending".into())),
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness check failed");
            Err(ApiError::Unavailable("database unreachable".into()))
        }
        Err(_) => Err(ApiError::Unavailable("database did not answer in time".into())),
    }
}

/// Metrics in the Prometheus text format.
#[utoipa::path(
    get, path = "/metrics", tag = "service", security(()),
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain"),
        (status = 503, description = "Database unreachable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn metrics(State(state): State<AppState>) -> ApiResult<Response> {
    let runs_by_status = match tokio::time::timeout(READY_TIMEOUT, state.store.runs_by_status()).await {
        Ok(Ok(counts)) => counts,
        Ok(Err(error)) => {
            tracing::warn!(%error, "reading run counts for metrics failed");
            return Err(ApiError::Unavailable("database unreachable".into()));
        }
        Err(_) => return Err(ApiError::Unavailable("database did not answer in time".into())),
    };
    let gauges = Gauges {
        runs_by_status,
        sse_subscribers: state.bus.subscribers(),
        events_published: state.bus.published(),
    };
    let body = state.metrics.render(&gauges);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response())
}

/// The OpenAPI document of this API.
#[utoipa::path(get, path = "/openapi.json", tag = "service", security(()), responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json(State(state): State<AppState>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], state.openapi_json.to_string()).into_response()
}

/// A browsable page of the OpenAPI document (self-contained, no external assets).
#[utoipa::path(get, path = "/docs", tag = "service", security(()), responses((status = 200, description = "HTML page", content_type = "text/html")))]
pub async fn docs() -> Html<&'static str> {
    Html(include_str!("docs.html"))
}

//! Service endpoints that need no API key: liveness, readiness, the OpenAPI document, its
//! browsable page and the dashboard.

use std::sync::LazyLock;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use axum::Json;
use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult, Problem};
use super::{AppState, OpenApiJson};
use crate::metrics::{Gauges, GroupCommits};

/// How long readiness waits for the database.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The state of the service, and what this replica is.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
    /// This replica's release (`0.2.0`, or `0.2.0-dev` between releases).
    #[schema(example = "0.2.0")]
    pub release: &'static str,
    /// The schema this replica knows: the version of its newest migration. During a rolling
    /// upgrade, replicas of two releases serve one database and answer different values.
    #[schema(example = 20261206000028_i64)]
    pub schema: i64,
}

impl Health {
    fn of(status: &'static str) -> Self {
        Health { status, release: crate::release::RELEASE, schema: crate::store::schema_version() }
    }
}

/// Liveness: 200 while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "service", security(()), responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health::of("ok"))
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
    match tokio::time::timeout(READY_TIMEOUT, state.services.ready()).await {
        Ok(Ok(true)) => Ok(Json(Health::of("ready"))),
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
    let stored = scraped("run counts and the webhook outbox", state.services.stored_gauges()).await?;
    let (runs_by_status, outbox) = (stored.runs_by_status, stored.outbox);
    let gauges = Gauges {
        runs_by_status,
        webhook_pending: outbox.pending,
        webhook_oldest_pending_s: outbox.oldest_pending_s,
        schema: crate::store::schema_version(),
        sse_subscribers: state.bus.subscribers(),
        events_published: state.bus.published(),
        group_commits: state
            .services
            .group_commits()
            .into_iter()
            .map(|(kind, s)| {
                (kind, GroupCommits { batches: s.batches, items: s.items, busy_seconds: s.busy_seconds })
            })
            .collect(),
    };
    let body = state.metrics.render(&gauges);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response())
}

/// A value `/metrics` reads from the database, within the readiness time-out.
async fn scraped<T>(
    what: &str,
    read: impl std::future::Future<Output = crate::service::ServiceResult<T>>,
) -> ApiResult<T> {
    match tokio::time::timeout(READY_TIMEOUT, read).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            tracing::warn!(%error, "reading {what} for metrics failed");
            Err(ApiError::Unavailable("database unreachable".into()))
        }
        Err(_) => Err(ApiError::Unavailable("database did not answer in time".into())),
    }
}

/// The OpenAPI document of this API.
#[utoipa::path(get, path = "/openapi.json", tag = "service", security(()), responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json(Extension(OpenApiJson(json)): Extension<OpenApiJson>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], json).into_response()
}

/// A browsable page of the OpenAPI document (self-contained, no external assets).
#[utoipa::path(get, path = "/docs", tag = "service", security(()), responses((status = 200, description = "HTML page", content_type = "text/html")))]
pub async fn docs() -> Html<&'static str> {
    Html(include_str!("docs.html"))
}

/// The dashboard page (self-contained: HTML, CSS and JS inline).
const DASHBOARD: &str = include_str!("dashboard.html");

/// The dashboard's Content-Security-Policy: only its own inline script and style (by hash), and
/// requests to this origin; so even a slip in escaping could not run injected script.
static DASHBOARD_CSP: LazyLock<HeaderValue> = LazyLock::new(|| {
    let scripts = inline_hashes(DASHBOARD, "<script>", "</script>");
    let styles = inline_hashes(DASHBOARD, "<style>", "</style>");
    let policy = format!(
        "default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).expect("the policy is ASCII")
});

/// The CSP source list (`'sha256-…'`) of every inline element between `open` and `close`.
fn inline_hashes(html: &str, open: &str, close: &str) -> String {
    let mut hashes = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(close) else { break };
        let digest = Sha256::digest(&body.as_bytes()[..end]);
        hashes.push(format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest)));
        rest = &body[end + close.len()..];
    }
    if hashes.is_empty() {
        return "'none'".to_owned();
    }
    hashes.join(" ")
}

/// The dashboard: recent runs with live status, a run's live event timeline, and a kickoff form.
///
/// The page needs no key; it asks for one and sends it with its API requests (as
/// `Authorization: Bearer`, and as `access_token` on the event streams only).
#[utoipa::path(get, path = "/", tag = "service", security(()), responses((status = 200, description = "HTML page", content_type = "text/html")))]
pub async fn dashboard() -> Response {
    let headers = [
        (header::CONTENT_SECURITY_POLICY, DASHBOARD_CSP.clone()),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
    ];
    (headers, Html(DASHBOARD)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_every_inline_element() {
        let html = "<style>a{}</style><script>1</script><p></p><script>2</script>";
        let scripts = inline_hashes(html, "<script>", "</script>");
        assert_eq!(scripts.matches("'sha256-").count(), 2);
        // sha256("1"), base64.
        assert!(scripts.starts_with("'sha256-a4ayc/80/OGda4BO/1o/V0etpOqiLx1JwB5S3beHW0s='"), "{scripts}");
        assert_eq!(inline_hashes("<p></p>", "<script>", "</script>"), "'none'");
    }

    #[test]
    fn the_dashboard_has_one_inline_script_and_style_and_no_external_assets() {
        assert_eq!(DASHBOARD.matches("<script").count(), 1);
        assert_eq!(DASHBOARD.matches("<style").count(), 1);
        for external in
            ["src=\"http", "href=\"http", "//cdn", "@import", "innerHTML", "outerHTML", "insertAdjacentHTML"]
        {
            assert!(!DASHBOARD.contains(external), "the dashboard must not use {external}");
        }
        assert!(DASHBOARD_CSP.to_str().expect("ASCII").contains("script-src 'sha256-"));
    }
}

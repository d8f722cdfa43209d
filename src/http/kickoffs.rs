//! `POST /v1/kickoffs` and `/batch`: start runs (see [`crate::service`]), answer 202 with them
//! (200 when an `Idempotency-Key` replays).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::auth::Authed;
use super::error::{ApiError, ApiResult, Problem};
use super::extract::ApiJson;
use super::wire::RunBody;
use super::AppState;
use crate::domain::kickoff::{BatchKickoffRequest, KickoffRequest};
use crate::service::Kicked;

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Start a run of a crew.
///
/// The crew is an inline spec or a registered crew's name; its spec is snapshotted into the run.
/// With an `Idempotency-Key`, the same key and body return the original run (200,
/// `Idempotent-Replayed: true`) and the same key with another body is a 422.
#[utoipa::path(
    post, path = "/kickoffs", tag = "runs",
    request_body = KickoffRequest,
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters (no spaces); kept at least 24 hours", pattern = "^[!-~]{1,255}$", nullable = false),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the run's spans (every attempt) become children of this span, and the run's `trace_id` is its trace. An invalid value is ignored", nullable = false),
        ("tracestate" = Option<String>, Header, description = "W3C trace context's vendor state, kept with the run and passed on", nullable = false),
    ),
    responses(
        (status = 202, description = "Run queued", body = RunBody,
            headers(("Location" = String, description = "The run's URL"))),
        (status = 200, description = "Replayed: the run this key created before", body = RunBody),
        (status = 400, description = "Malformed JSON or header", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or bad API key", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown registered crew, or no such thread", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`multitask_strategy: reject` and a run of the thread has not ended", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 2 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew or inputs, or key reused with another body", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "A quota of the tenant refuses it (`max_queued`, a daily cap); `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_kickoff(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let key = idempotency_key(&headers)?;
    let (status, run, replayed) =
        match state.services.kickoff(&caller, body, key, super::extract::kickoff_trace(&headers)).await? {
            Kicked::Created(run) => (StatusCode::ACCEPTED, run, false),
            Kicked::Replayed(run) => (StatusCode::OK, run, true),
        };
    let run = RunBody::from(run);
    let location = run.links.self_.clone();
    let response = (status, [(header::LOCATION, location)], axum::Json(run)).into_response();
    Ok(mark_replayed(response, replayed))
}

/// The request's `Idempotency-Key`.
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let visible = |k: &&str| (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic());
    let key = value.to_str().ok().filter(visible).ok_or_else(|| {
        ApiError::BadRequest("Idempotency-Key must be 1 to 255 visible ASCII characters".into())
    })?;
    Ok(Some(key))
}

fn mark_replayed(mut response: Response, replayed: bool) -> Response {
    if replayed {
        response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

/// The runs a batch kickoff made.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RunBatch {
    pub runs: Vec<RunBody>,
}

/// Start one run of a crew per input set, all or none (CrewAI's `kickoff_for_each`).
///
/// One `Idempotency-Key` covers the whole batch.
#[utoipa::path(
    post, path = "/kickoffs/batch", tag = "runs",
    request_body = BatchKickoffRequest,
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters (no spaces); kept at least 24 hours", pattern = "^[!-~]{1,255}$", nullable = false),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the run's spans (every attempt) become children of this span, and the run's `trace_id` is its trace. An invalid value is ignored", nullable = false),
        ("tracestate" = Option<String>, Header, description = "W3C trace context's vendor state, kept with the run and passed on", nullable = false),
    ),
    responses(
        (status = 202, description = "Runs queued", body = RunBatch),
        (status = 200, description = "Replayed: the runs this key created before", body = RunBatch),
        (status = 400, description = "Malformed JSON or header", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown registered crew", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 2 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew or inputs, or key reused with another body", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "A quota of the tenant refuses it (`max_queued`, a daily cap); `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_batch(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let key = idempotency_key(&headers)?;
    let (status, runs, replayed) = match state
        .services
        .kickoff_batch(&caller, body, key, super::extract::kickoff_trace(&headers))
        .await?
    {
        Kicked::Created(runs) => (StatusCode::ACCEPTED, runs, false),
        Kicked::Replayed(runs) => (StatusCode::OK, runs, true),
    };
    let runs = runs.into_iter().map(RunBody::from).collect();
    Ok(mark_replayed((status, axum::Json(RunBatch { runs })).into_response(), replayed))
}

//! `POST /v1/kickoffs`: validate a crew and its inputs, store a queued run, answer 202.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::{ApiError, ApiResult, Problem};
use super::extract::{from_value, ApiJson};
use crate::app::AppState;
use crate::domain::kickoff::{
    prepare_batch, prepare_run, request_fingerprint, BatchKickoffRequest, CrewRef, KickoffRequest,
};
use crate::domain::{CrewSpec, FieldError, Run};
use crate::store::{BatchOutcome, IdempotencyKey, KickoffOutcome};

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
    params(("Idempotency-Key" = Option<String>, Header, description = "At most 255 characters; kept at least 24 hours")),
    responses(
        (status = 202, description = "Run queued", body = Run,
            headers(("Location" = String, description = "The run's URL"))),
        (status = 200, description = "Replayed: the run this key created before", body = Run),
        (status = 400, description = "Malformed JSON or header", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or bad API key", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown registered crew", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 2 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew or inputs, or key reused with another body", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_kickoff(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let key = idempotency_key(&headers, &body, "kickoff")?;
    if let Some(key) = &key {
        if let Some(earlier) = state.store.find_idempotent_run(key).await? {
            return respond(earlier);
        }
    }
    let request: KickoffRequest = from_value(body)?;
    let crew = resolve_crew(&state, request.crew).await?;
    let run = prepare_run(crew, request.inputs, request.metadata, request.timeout_s, &state.validation)
        .map_err(ApiError::validation)?;
    respond(state.store.create_run(&run, key.as_ref()).await?)
}

/// The crew a kickoff names or carries.
async fn resolve_crew(state: &AppState, crew: Value) -> ApiResult<CrewSpec> {
    match CrewRef::parse(crew).map_err(ApiError::validation)? {
        CrewRef::Spec(spec) => Ok(*spec),
        CrewRef::Name(name) => match state.store.get_crew(&name).await? {
            Some(record) => Ok(record.spec),
            None => Err(ApiError::NotFound(format!("no registered crew named '{name}'"))),
        },
    }
}

/// The request's `Idempotency-Key`, with the fingerprint of its body.
fn idempotency_key(
    headers: &HeaderMap,
    body: &Value,
    scope: &'static str,
) -> ApiResult<Option<IdempotencyKey>> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let key = value.to_str().ok().filter(|k| (1..=255).contains(&k.len())).ok_or_else(|| {
        ApiError::BadRequest("Idempotency-Key must be 1 to 255 visible ASCII characters".into())
    })?;
    Ok(Some(IdempotencyKey { key: key.to_owned(), scope, fingerprint: request_fingerprint(body) }))
}

fn key_conflict() -> ApiError {
    let message = "this key was already used with a different request body";
    ApiError::validation(vec![FieldError::new("Idempotency-Key", message)])
}

fn respond(outcome: KickoffOutcome) -> ApiResult<Response> {
    let (status, run, replayed) = match outcome {
        KickoffOutcome::Created(run) => (StatusCode::ACCEPTED, run, false),
        KickoffOutcome::Replayed(run) => (StatusCode::OK, run, true),
        KickoffOutcome::KeyConflict => return Err(key_conflict()),
    };
    let location = run.links.self_.clone();
    let mut response = (status, [(header::LOCATION, location)], axum::Json(run)).into_response();
    if replayed {
        response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// The runs a batch kickoff made.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RunBatch {
    pub runs: Vec<Run>,
}

/// Start one run of a crew per input set, all or none (CrewAI's `kickoff_for_each`).
///
/// One `Idempotency-Key` covers the whole batch.
#[utoipa::path(
    post, path = "/kickoffs/batch", tag = "runs",
    request_body = BatchKickoffRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "At most 255 characters; kept at least 24 hours")),
    responses(
        (status = 202, description = "Runs queued", body = RunBatch),
        (status = 200, description = "Replayed: the runs this key created before", body = RunBatch),
        (status = 400, description = "Malformed JSON or header", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown registered crew", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 2 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew or inputs, or key reused with another body", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_batch(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let key = idempotency_key(&headers, &body, "batch")?;
    if let Some(key) = &key {
        if let Some(earlier) = state.store.find_idempotent_runs(key).await? {
            return respond_batch(earlier);
        }
    }
    let request: BatchKickoffRequest = from_value(body)?;
    let crew = resolve_crew(&state, request.crew).await?;
    let runs = prepare_batch(crew, request.inputs, request.metadata, request.timeout_s, &state.validation)
        .map_err(ApiError::validation)?;
    respond_batch(state.store.create_runs(&runs, key.as_ref()).await?)
}

fn respond_batch(outcome: BatchOutcome) -> ApiResult<Response> {
    let (status, runs, replayed) = match outcome {
        BatchOutcome::Created(runs) => (StatusCode::ACCEPTED, runs, false),
        BatchOutcome::Replayed(runs) => (StatusCode::OK, runs, true),
        BatchOutcome::KeyConflict => return Err(key_conflict()),
    };
    let mut response = (status, axum::Json(RunBatch { runs })).into_response();
    if replayed {
        response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}

//! Runs that continue: `POST /v1/runs/{id}/fork` (a new run from an ended run's journal, from a
//! task on) and `POST /v1/runs/{id}/retry` (a failed run continues where it failed).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::wire::RunBody;
use super::AppState;
use crate::domain::fork::ForkRequest;
use crate::domain::RunId;

/// Fork an ended run at a task.
///
/// The new run takes over the tasks before `at.task` as they completed (no model or tool call of
/// theirs is made again; their messages, tool calls and events are copied into it after a
/// `run.forked` event), and runs `at.task` and every task after it anew, with `changes` applied:
/// inputs merged over the run's, fields of agents and tasks (at or after `at.task`) by name. The
/// new run's `forked_from` names the run and task.
#[utoipa::path(
    post, path = "/runs/{id}/fork", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    request_body = ForkRequest,
    responses(
        (status = 202, description = "The fork, queued", body = RunBody,
            headers(("Location" = String, description = "The new run's URL"))),
        (status = 400, description = "Malformed id or JSON", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run has not ended, or a task before `at` did not complete in it", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown task, or changes that do not fit the crew", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "A quota of the tenant refuses it (`max_queued`, a daily cap); `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn fork_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let run = state.services.fork(&caller, RunId(id), body, &audit).await?;
    let location = format!("/v1/runs/{}", run.id);
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(RunBody::from(run))).into_response())
}

/// Retry a failed run: it is queued again and continues its journal from where it failed (the
/// completed tasks, model calls and tool calls are not repeated), a new series of attempts.
#[utoipa::path(
    post, path = "/runs/{id}/retry", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 202, description = "Queued again (`waiting` while another run of its thread has not ended)", body = RunBody),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run has not failed", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The tenant's `max_queued` refuses it; `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retry_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<(StatusCode, Json<RunBody>)> {
    let run = state.services.retry(&caller, RunId(id), &audit).await?;
    Ok((StatusCode::ACCEPTED, Json(run.into())))
}

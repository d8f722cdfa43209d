//! Schedules: `/v1/schedules[/{id}[/runs]]`. A schedule kicks off a crew at the ticks of a cron
//! expression in a time zone, exactly once per tick across replicas.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::runs::bounded;
use super::AppState;
use crate::domain::schedule::{CatchUp, Overlap, Schedule, ScheduleTick};
use crate::domain::ScheduleId;

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;

/// The body of `POST /v1/schedules`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewSchedule {
    /// A name to tell it by (1 to 200 characters, one line, no control characters).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    name: Option<String>,
    /// 5 fields (minute hour day-of-month month day-of-week, e.g. `0 9 * * MON-FRI`) or 6 with
    /// seconds first (`*/10 * * * * *`).
    #[schema(min_length = 1, max_length = 200)]
    cron: String,
    /// An IANA time zone (default `UTC`); daylight-saving changes are handled as cron does.
    #[schema(min_length = 1, max_length = 64)]
    timezone: Option<String>,
    /// The kickoff each tick makes, as `POST /v1/kickoffs` takes it; checked now.
    #[schema(value_type = Object)]
    kickoff: Value,
    /// While a run of the schedule has not ended: `skip` the tick (default), `enqueue` its run
    /// behind, or `allow` it to run beside.
    overlap: Option<Overlap>,
    /// Missed ticks (later than the misfire grace): `none` run (default), or the `latest` once.
    catch_up: Option<CatchUp>,
    /// Default true.
    enabled: Option<bool>,
}

/// The body of `PATCH /v1/schedules/{id}`: the fields to change.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct SchedulePatch {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    name: Option<String>,
    #[schema(min_length = 1, max_length = 200)]
    cron: Option<String>,
    #[schema(min_length = 1, max_length = 64)]
    timezone: Option<String>,
    #[schema(value_type = Object)]
    kickoff: Option<Value>,
    overlap: Option<Overlap>,
    catch_up: Option<CatchUp>,
    /// Enable (from the next tick after now) or disable.
    enabled: Option<bool>,
}

/// Query of the list of schedules.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScheduleQuery {
    /// Page size, 1 to 200 (default 50).
    #[param(nullable = false, minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page (a schedule id).
    #[param(nullable = false, value_type = Option<Uuid>)]
    pub cursor: Option<String>,
}

/// Query of a schedule's ticks.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TickQuery {
    /// Page size, 1 to 200 (default 50).
    #[param(nullable = false, minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page (a tick's time).
    #[param(nullable = false, value_type = Option<DateTime<Utc>>)]
    pub cursor: Option<String>,
}

/// A page of schedules, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<Schedule>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A page of a schedule's handled ticks, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleRuns {
    pub ticks: Vec<ScheduleTick>,
    /// Pass as `cursor` for the next page (a tick's time); `null` on the last page.
    pub next_cursor: Option<String>,
}

fn cursor<T: std::str::FromStr>(cursor: Option<String>) -> ApiResult<Option<T>> {
    cursor
        .map(|c| c.parse::<T>().map_err(|_| ApiError::BadRequest(format!("invalid cursor '{c}'"))))
        .transpose()
}

/// Create a schedule.
#[utoipa::path(
    post, path = "/schedules", tag = "schedules",
    request_body = NewSchedule,
    responses(
        (status = 201, description = "Created, with its `next_run_at`", body = Schedule,
            headers(("Location" = String, description = "The schedule's URL"))),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid cron expression, time zone or kickoff (an unknown crew, say)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_schedule(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let schedule = state.services.create_schedule(&caller, body, &audit).await?;
    let location = format!("/v1/schedules/{}", schedule.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(schedule)).into_response())
}

/// The tenant's schedules, newest first.
#[utoipa::path(
    get, path = "/schedules", tag = "schedules",
    params(ScheduleQuery),
    responses(
        (status = 200, body = ScheduleList),
        (status = 400, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_schedules(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<ScheduleQuery>,
) -> ApiResult<Json<ScheduleList>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = cursor::<Uuid>(query.cursor)?;
    let page = state.services.schedules(&caller, before.map(ScheduleId), limit).await?;
    Ok(Json(ScheduleList {
        schedules: page.schedules,
        next_cursor: page.next_before.map(|id| id.to_string()),
    }))
}

/// A schedule.
#[utoipa::path(
    get, path = "/schedules/{id}", tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, body = Schedule),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_schedule(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Schedule>> {
    Ok(Json(state.services.schedule(&caller, ScheduleId(id)).await?))
}

/// Change a schedule (enable or disable it, say).
#[utoipa::path(
    patch, path = "/schedules/{id}", tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    request_body = SchedulePatch,
    responses(
        (status = 200, body = Schedule),
        (status = 400, description = "A malformed id or JSON", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid cron expression, time zone or kickoff", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn update_schedule(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Schedule>> {
    Ok(Json(state.services.update_schedule(&caller, ScheduleId(id), body, &audit).await?))
}

/// Delete a schedule (the runs it kicked off stay).
#[utoipa::path(
    delete, path = "/schedules/{id}", tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_schedule(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.delete_schedule(&caller, ScheduleId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A schedule's handled ticks, newest first: each `kicked` (with its run and the run's status),
/// `skipped` (a run of the schedule had not ended), `missed` or `failed` (with why).
#[utoipa::path(
    get, path = "/schedules/{id}/runs", tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id"), TickQuery),
    responses(
        (status = 200, body = ScheduleRuns),
        (status = 400, description = "A malformed id, limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn schedule_runs(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<TickQuery>,
) -> ApiResult<Json<ScheduleRuns>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = cursor::<DateTime<Utc>>(query.cursor)?;
    let mut ticks = state.services.schedule_runs(&caller, ScheduleId(id), before, limit + 1).await?;
    let more = ticks.len() as i64 > limit;
    ticks.truncate(limit as usize);
    let next_cursor = more.then(|| ticks.last().map(|t| t.tick.to_rfc3339())).flatten();
    Ok(Json(ScheduleRuns { ticks, next_cursor }))
}

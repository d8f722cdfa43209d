//! Threads: `/v1/threads[/{id}]`. A thread is a conversation of runs: kickoffs join it with
//! `thread_id`, see its earlier runs, and run one at a time (`multitask_strategy`).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::runs::bounded;
use super::AppState;
use crate::domain::thread::Thread;
use crate::domain::ThreadId;

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;

/// The body of `POST /v1/threads`.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewThread {
    /// Free-form data kept with the thread (at most 16 KiB as JSON); `GET /v1/threads?metadata=`
    /// finds threads by it.
    #[serde(default)]
    #[schema(value_type = Object)]
    metadata: serde_json::Map<String, Value>,
}

/// Query of `GET /v1/threads`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreadsQuery {
    /// `key:value`: only threads whose metadata has this key with this string value
    /// (`user:42`; the key is what comes before the first colon).
    #[param(nullable = false, min_length = 2, max_length = 4096, pattern = r"^[^:\x00]+:[^\x00]*$")]
    pub metadata: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(nullable = false, minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page (a thread id).
    #[param(nullable = false, value_type = Option<Uuid>)]
    pub cursor: Option<String>,
}

/// A page of threads, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadList {
    pub threads: Vec<Thread>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// What deleting a thread removed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadRemoved {
    pub id: Uuid,
    /// Its runs, deleted with it (and their journals).
    pub runs_deleted: u64,
}

/// Create a thread.
#[utoipa::path(
    post, path = "/threads", tag = "threads",
    request_body = NewThread,
    responses(
        (status = 201, description = "Created", body = Thread,
            headers(("Location" = String, description = "The thread's URL"))),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown fields, or metadata that is not an object or too large", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_thread(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let thread = state.services.create_thread(&caller, body, &audit).await?;
    let location = format!("/v1/threads/{}", thread.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(thread)).into_response())
}

/// The tenant's threads, newest first.
#[utoipa::path(
    get, path = "/threads", tag = "threads",
    params(ThreadsQuery),
    responses(
        (status = 200, body = ThreadList),
        (status = 400, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`metadata` is not a JSON object", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_threads(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<ThreadsQuery>,
) -> ApiResult<Json<ThreadList>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = query
        .cursor
        .map(|c| Uuid::parse_str(&c).map_err(|_| ApiError::BadRequest(format!("invalid cursor '{c}'"))))
        .transpose()?;
    let page =
        state.services.threads(&caller, query.metadata.as_deref(), before.map(ThreadId), limit).await?;
    let next_cursor = page.next_before.map(|id| id.to_string());
    Ok(Json(ThreadList { threads: page.threads, next_cursor }))
}

/// A thread with its status (`busy` while one of its runs has not ended) and runs.
#[utoipa::path(
    get, path = "/threads/{id}", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id")),
    responses(
        (status = 200, body = Thread),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such thread", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_thread(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Thread>> {
    Ok(Json(state.services.thread(&caller, ThreadId(id)).await?))
}

/// Delete a thread with its runs (queued, waiting and finished ones; refused while one is running).
#[utoipa::path(
    delete, path = "/threads/{id}", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id")),
    responses(
        (status = 200, description = "Deleted, with its runs", body = ThreadRemoved),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such thread", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A run of the thread is running: cancel it first", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_thread(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<ThreadRemoved>> {
    let runs_deleted = state.services.delete_thread(&caller, ThreadId(id), &audit).await?;
    Ok(Json(ThreadRemoved { id, runs_deleted }))
}

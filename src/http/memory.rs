//! Memories: `/v1/memories[/{id}]`. A scope's items are listed (or searched with `q`), seeded
//! with a note, deleted one by one, or forgotten all together (`DELETE /v1/memories?scope=`).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiResult, Problem};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::AppState;
use crate::domain::memory::MemoryItem;
use crate::domain::MemoryId;

/// A scope's items.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryList {
    /// Most relevant first with `q` (each `score` its relevance), else newest first (`score` 0).
    pub memories: Vec<MemoryItem>,
}

/// The body of `POST /v1/memories`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewMemoryNote {
    /// The scope it belongs to (`user:42`): 1 to 256 characters, not blank, no control
    /// characters.
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    scope: String,
    /// What to remember (at most 4,096 bytes).
    #[schema(min_length = 1, max_length = 4096)]
    text: String,
    /// `<provider>/<model>`: save the item with its vector by this embedding model, so crews
    /// whose memory names the model recall it by meaning (the database needs pgvector).
    #[schema(min_length = 3, max_length = 200)]
    embedding: Option<String>,
}

/// Which items to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemoryQuery {
    /// The scope.
    #[param(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub scope: String,
    /// Only items matching these words, most relevant first (at most 4,096 characters, not
    /// blank).
    #[param(min_length = 1, max_length = 4096, pattern = "\\S")]
    pub q: Option<String>,
    /// At most this many (default 20).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// Which scope to forget.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForgetQuery {
    /// The scope, all of whose items are deleted.
    #[param(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub scope: String,
}

/// What forgetting a scope deleted.
#[derive(Debug, Serialize, ToSchema)]
pub struct Forgotten {
    pub scope: String,
    /// Items deleted.
    pub deleted: u64,
}

#[utoipa::path(
    get, path = "/memories", tag = "memory",
    params(MemoryQuery),
    responses(
        (status = 200, body = MemoryList),
        (status = 400, description = "A malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid scope, query or limit", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_memories(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<MemoryQuery>,
) -> ApiResult<Json<MemoryList>> {
    let memories = state.services.memories(&caller, &query.scope, query.q.as_deref(), query.limit).await?;
    Ok(Json(MemoryList { memories }))
}

#[utoipa::path(
    post, path = "/memories", tag = "memory",
    request_body = NewMemoryNote,
    responses(
        (status = 201, description = "Saved", body = MemoryItem,
            headers(("Location" = String, description = "The item's URL"))),
        (status = 422, description = "An invalid scope, or an empty or oversized text", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_memory(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let item = state.services.create_memory(&caller, body, &audit).await?;
    let location = format!("/v1/memories/{}", item.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(item)).into_response())
}

#[utoipa::path(
    delete, path = "/memories", tag = "memory",
    params(ForgetQuery),
    responses(
        (status = 200, description = "The scope is forgotten (every item of it, in one transaction)", body = Forgotten),
        (status = 400, description = "A malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid scope", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn forget_memories(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiQuery(query): ApiQuery<ForgetQuery>,
) -> ApiResult<Json<Forgotten>> {
    let deleted = state.services.forget_memories(&caller, &query.scope, &audit).await?;
    Ok(Json(Forgotten { scope: query.scope, deleted }))
}

#[utoipa::path(
    get, path = "/memories/{id}", tag = "memory",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = MemoryItem),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such memory", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_memory(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<MemoryItem>> {
    Ok(Json(state.services.memory(&caller, MemoryId(id)).await?))
}

#[utoipa::path(
    delete, path = "/memories/{id}", tag = "memory",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such memory", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_memory(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.delete_memory(&caller, MemoryId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

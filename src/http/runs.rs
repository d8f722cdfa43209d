//! Reading runs: one run, the newest-first list, and a run's messages, tool calls and events.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::wire::{MessageBody, RunBody, ToolCallBody};
use super::AppState;
use crate::domain::{RunId, RunStatus, TaskRun};

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;

/// Get a run with its tasks, output, error and usage.
#[utoipa::path(
    get, path = "/runs/{id}", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, body = RunBody),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<RunBody>> {
    Ok(Json(state.services.run(&caller, RunId(id)).await?.into()))
}

/// One task of a run, with its output whole (a run's own resource cuts long outputs).
#[utoipa::path(
    get, path = "/runs/{id}/tasks/{name}", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), ("name" = String, Path, description = "Task name")),
    responses(
        (status = 200, body = TaskRun),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run, or no such task in it", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_task(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath((id, name)): ApiPath<(Uuid, String)>,
) -> ApiResult<Json<TaskRun>> {
    Ok(Json(state.services.task(&caller, RunId(id), &name).await?))
}

/// Query of `GET /v1/runs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// Only runs in this status.
    #[param(nullable = false)]
    pub status: Option<RunStatus>,
    /// Page size, 1 to 200 (default 50).
    #[param(nullable = false, minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page (a run id).
    #[param(nullable = false, value_type = Option<Uuid>)]
    pub cursor: Option<String>,
}

/// A page of runs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunList {
    pub runs: Vec<RunBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// List runs, newest first.
#[utoipa::path(
    get, path = "/runs", tag = "runs",
    params(RunsQuery),
    responses(
        (status = 200, body = RunList),
        (status = 400, description = "Bad status, limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_runs(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<RunsQuery>,
) -> ApiResult<Json<RunList>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = query
        .cursor
        .map(|c| {
            Uuid::parse_str(&c).map(RunId).map_err(|_| ApiError::BadRequest(format!("invalid cursor '{c}'")))
        })
        .transpose()?;
    let page = state.services.runs(&caller, query.status, before, limit).await?;
    let next_cursor = page.next_before.map(|id| id.to_string());
    Ok(Json(RunList { runs: page.runs.into_iter().map(RunBody::from).collect(), next_cursor }))
}

/// A run's conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageList {
    pub messages: Vec<MessageBody>,
}

/// A run's messages, in conversation order.
#[utoipa::path(
    get, path = "/runs/{id}/messages", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, body = MessageList),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_messages(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<MessageList>> {
    let messages = state.services.messages(&caller, RunId(id)).await?;
    Ok(Json(MessageList { messages: messages.into_iter().map(MessageBody::from).collect() }))
}

/// A run's tool calls.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolCallList {
    pub tool_calls: Vec<ToolCallBody>,
}

/// A run's tool calls, in the order they started.
#[utoipa::path(
    get, path = "/runs/{id}/tool-calls", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, body = ToolCallList),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_tool_calls(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<ToolCallList>> {
    let tool_calls = state.services.tool_calls(&caller, RunId(id)).await?;
    Ok(Json(ToolCallList { tool_calls: tool_calls.into_iter().map(ToolCallBody::from).collect() }))
}

/// A page size from the query: the default when absent, a 400 outside `1..=max`.
pub(super) fn bounded(value: Option<i64>, default: i64, max: i64, name: &str) -> ApiResult<i64> {
    match value {
        None => Ok(default),
        Some(v) if (1..=max).contains(&v) => Ok(v),
        Some(_) => Err(ApiError::BadRequest(format!("{name} must be between 1 and {max}"))),
    }
}

/// Cancel a run.
///
/// A queued or waiting run (or one awaiting input) is cancelled at once; a running one becomes `cancelling`
/// and its worker, on whichever replica, aborts its in-flight LLM or tool request and ends it
/// `cancelled`.
#[utoipa::path(
    post, path = "/runs/{id}/cancel", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 202, description = "Cancelled, or being cancelled", body = RunBody),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run has already ended", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn cancel_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<(StatusCode, Json<RunBody>)> {
    let run = state.services.cancel(&caller, RunId(id), &audit).await?;
    Ok((StatusCode::ACCEPTED, Json(run.into())))
}

/// Delete a finished run: the run, its tasks, events, messages and tool calls, and its
/// idempotency key (a batch's key, which names several runs, goes with any of them).
#[utoipa::path(
    delete, path = "/runs/{id}", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run has not ended (cancel it first)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.delete(&caller, RunId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A human's decision on a task's answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// Accept the answer (`true`), or have the agent redo the task with the feedback (`false`).
    pub approve: bool,
    /// What to change; required to reject.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// Its schema says what the handler enforces: `feedback` (not blank) is required to reject.
impl utoipa::PartialSchema for ResumeRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, SchemaType, Type};
        let decision = |approve: bool| {
            ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([approve])).description(Some(
                if approve {
                    "Accept the answer."
                } else {
                    "Have the agent redo the task with the feedback."
                },
            ))
        };
        let accept = ObjectBuilder::new()
            .property("approve", decision(true))
            .property(
                "feedback",
                ObjectBuilder::new().schema_type(SchemaType::Array(vec![Type::String, Type::Null])),
            )
            .required("approve")
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        let reject = ObjectBuilder::new()
            .property("approve", decision(false))
            .property(
                "feedback",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("\\S"))
                    .description(Some("What to change.")),
            )
            .required("approve")
            .required("feedback")
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        OneOfBuilder::new()
            .item(accept)
            .item(reject)
            .description(Some(
                "A human's decision on a task's answer: accept it, or reject it with feedback.",
            ))
            .into()
    }
}

impl ToSchema for ResumeRequest {}

/// Resume a run awaiting human input.
///
/// For a task with `human_input`, the run stops in `awaiting_input` after the task's answer;
/// `approve: true` accepts it, `approve: false` re-runs the task with the feedback.
#[utoipa::path(
    post, path = "/runs/{id}/resume", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    request_body = ResumeRequest,
    responses(
        (status = 202, description = "Resumed: the run is queued again", body = RunBody),
        (status = 400, description = "Malformed id or JSON", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run is not awaiting input", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Rejection without feedback", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn resume_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<ResumeRequest>,
) -> ApiResult<(StatusCode, Json<RunBody>)> {
    let run = state
        .services
        .resume(&caller, RunId(id), request.approve, request.feedback.as_deref(), &audit)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(run.into())))
}

/// The body of a decision on a tool call that awaits approval.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct ApprovalRequest {
    /// Run the call (`true`) or not (`false`: the model is told it was rejected).
    approve: bool,
    /// Approving: the arguments to run with instead of the model's (checked against the
    /// tool's schema).
    #[schema(value_type = Option<Object>)]
    arguments: Option<Value>,
    /// Rejecting: why (the model is told).
    reason: Option<String>,
}

/// Decide on a tool call that awaits approval.
///
/// A call of a tool that `requires_approval` is journaled, announced as
/// `tool.approval_requested`, and waits while the run is `awaiting_input`. Approve it (with the
/// model's arguments or edited ones) and it runs; reject it and the model is told why. When every
/// waiting call of the run is decided the run is queued again. `tool_call_id` is the call's `id`
/// (`GET /v1/runs/{id}/tool-calls`), percent-encoded in the path (`t%231%2Fcall_1`).
#[utoipa::path(
    post, path = "/runs/{id}/tool-calls/{tool_call_id}/approval", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), ("tool_call_id" = String, Path, description = "The tool call's id")),
    request_body(content = ApprovalRequest, example = json!({"approve": true})),
    responses(
        (status = 200, description = "Decided: the run as it is now (queued again when no call waits)", body = RunBody),
        (status = 400, description = "Malformed id or JSON", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run or tool call", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The call is not awaiting approval", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Arguments that break the tool's schema, or a reason with an approval", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn approve_tool_call(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath((id, call_id)): ApiPath<(Uuid, String)>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<RunBody>> {
    let run = state.services.decide_tool_call(&caller, RunId(id), &call_id, body, &audit).await?;
    Ok(Json(run.into()))
}

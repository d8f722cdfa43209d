//! Registered crews: `PUT/GET/DELETE /v1/crews/{name}`, the list, and a crew's inputs.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use crate::app::AppState;
use crate::domain::interpolate::required_inputs;
use crate::domain::validate::{check_crew_name, validate_crew};
use crate::domain::{CrewSpec, FieldError};
use crate::store::{CrewRecord, UpsertOutcome};

/// Create or replace a crew.
///
/// The body is a crew spec; its `name` may be left out, and must equal the path's when given.
#[utoipa::path(
    put, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name")),
    request_body = CrewSpec,
    responses(
        (status = 201, description = "Created", body = CrewRecord),
        (status = 200, description = "Replaced", body = CrewRecord),
        (status = 400, description = "Malformed JSON or name", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew spec", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_crew(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(mut body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<CrewRecord>)> {
    check_name(&name)?;
    let Some(fields) = body.as_object_mut() else {
        return Err(ApiError::validation(vec![FieldError::new("", "a crew spec must be a JSON object")]));
    };
    match fields.get("name") {
        None => {
            fields.insert("name".into(), Value::String(name.clone()));
        }
        Some(given) if given.as_str() != Some(name.as_str()) => {
            return Err(ApiError::validation(vec![FieldError::new(
                "name",
                format!("must equal the crew name in the path ('{name}') or be left out"),
            )]));
        }
        Some(_) => {}
    }
    let spec = CrewSpec::from_json(body).map_err(ApiError::validation)?;
    validate_crew(&spec, &state.validation).map_err(ApiError::validation)?;
    let (record, outcome) = state.store.upsert_crew(&spec).await?;
    let status = match outcome {
        UpsertOutcome::Created => StatusCode::CREATED,
        UpsertOutcome::Replaced => StatusCode::OK,
    };
    Ok((status, Json(record)))
}

/// Every registered crew.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewList {
    pub crews: Vec<CrewRecord>,
}

/// List registered crews by name.
#[utoipa::path(get, path = "/crews", tag = "crews", responses((status = 200, body = CrewList)))]
pub async fn list_crews(State(state): State<AppState>) -> ApiResult<Json<CrewList>> {
    Ok(Json(CrewList { crews: state.store.list_crews().await? }))
}

/// Get a registered crew.
#[utoipa::path(
    get, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name")),
    responses(
        (status = 200, body = CrewRecord),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_crew(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<CrewRecord>> {
    find(&state, &name).await.map(Json)
}

/// Delete a registered crew. Runs already started keep their snapshot of it.
#[utoipa::path(
    delete, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_crew(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if state.store.delete_crew(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&name))
    }
}

/// The inputs a crew needs.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewInputs {
    /// Placeholder names used by the crew, sorted.
    pub inputs: Vec<String>,
}

/// The `{placeholder}` inputs a kickoff of this crew must provide.
#[utoipa::path(
    get, path = "/crews/{name}/inputs", tag = "crews",
    params(("name" = String, Path, description = "Crew name")),
    responses(
        (status = 200, body = CrewInputs),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn crew_inputs(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<CrewInputs>> {
    let record = find(&state, &name).await?;
    Ok(Json(CrewInputs { inputs: required_inputs(&record.spec).into_iter().collect() }))
}

async fn find(state: &AppState, name: &str) -> ApiResult<CrewRecord> {
    state.store.get_crew(name).await?.ok_or_else(|| not_found(name))
}

fn check_name(name: &str) -> ApiResult<()> {
    check_crew_name(name).map_err(|message| ApiError::BadRequest(format!("invalid crew name: {message}")))
}

fn not_found(name: &str) -> ApiError {
    ApiError::NotFound(format!("no registered crew named '{name}'"))
}

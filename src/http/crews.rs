//! Registered crews: `PUT/GET/DELETE /v1/crews/{name}`, the list, and a crew's inputs.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::wire::CrewBody;
use super::AppState;
use crate::domain::crew::UpsertOutcome;
use crate::domain::crewai::{CrewImport, ImportWarning};
use crate::domain::interpolate::required_inputs;
use crate::domain::validate::check_crew_name;
use crate::domain::CrewSpec;

/// Create or replace a crew.
///
/// The body is a crew spec; its `name` may be left out, and must equal the path's when given.
#[utoipa::path(
    put, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$", example = "research")),
    request_body = CrewPutBody,
    responses(
        (status = 201, description = "Created", body = CrewBody),
        (status = 200, description = "Replaced", body = CrewBody),
        (status = 400, description = "Malformed JSON or name", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid crew spec", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_crew(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<CrewBody>)> {
    check_name(&name)?;
    let (record, outcome) = state.services.register_crew(&caller, &name, body, &audit).await?;
    let status = match outcome {
        UpsertOutcome::Created => StatusCode::CREATED,
        UpsertOutcome::Replaced => StatusCode::OK,
    };
    Ok((status, Json(record.into())))
}

/// The body of `PUT /v1/crews/{name}`: a crew spec whose `name` comes from the path. The schema
/// is `CrewSpec`'s without `name` (a `name` equal to the path's is accepted too).
pub struct CrewPutBody;

impl utoipa::PartialSchema for CrewPutBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::Schema;
        use utoipa::openapi::RefOr;
        let mut schema = <CrewSpec as utoipa::PartialSchema>::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.properties.remove("name");
            object.required.retain(|field| field != "name");
            object.description =
                Some("A crew spec whose name is the path's (a `name` equal to it may be given too).".into());
        }
        schema
    }
}

impl ToSchema for CrewPutBody {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        <CrewSpec as ToSchema>::schemas(schemas);
    }
}

/// Import a CrewAI project as a crew.
///
/// Takes the project's `config/agents.yaml` and `config/tasks.yaml` as text, with a mapping for
/// what only its `crew.py` says, and stores the crew (replacing any crew of that name). The
/// answer lists, as warnings, every field of the project the crew does not honour. The crew's
/// `inputs_schema` declares each `{placeholder}` of the YAML as a required string unless the
/// mapping gives one. See docs/guides/moving-a-crewai-project.md.
#[utoipa::path(
    post, path = "/crews:import", tag = "crews",
    request_body(content = CrewImport, example = json!({
        "name": "latest-ai",
        "agents_yaml": "researcher:\n  role: >\n    {topic} Senior Data Researcher\n  goal: >\n    Uncover cutting-edge developments in {topic}\n  backstory: >\n    You're a seasoned researcher.\n",
        "tasks_yaml": "research_task:\n  description: >\n    Conduct a thorough research about {topic}\n  expected_output: >\n    A list with 10 bullet points\n  agent: researcher\n",
        "mapping": {"process": "sequential"}
    })),
    responses(
        (status = 201, description = "Created", body = ImportedCrew),
        (status = 200, description = "Replaced a crew of that name", body = ImportedCrew),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid YAML, mapping or crew: each error names `agents_yaml.<agent>.<field>`, `tasks_yaml.<task>.<field>` or `mapping.<field>`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn import_crew(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(import): ApiJson<CrewImport>,
) -> ApiResult<(StatusCode, Json<ImportedCrew>)> {
    let (record, outcome, warnings) = state.services.import_crew(&caller, &import, &audit).await?;
    let status = match outcome {
        UpsertOutcome::Created => StatusCode::CREATED,
        UpsertOutcome::Replaced => StatusCode::OK,
    };
    Ok((status, Json(ImportedCrew { crew: record.into(), warnings })))
}

/// An imported crew, as stored, and what it does not do as the project would under CrewAI.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportedCrew {
    pub crew: CrewBody,
    /// Every field of the project the crew does not honour, with what agentd does instead.
    pub warnings: Vec<ImportWarning>,
}

/// Every registered crew.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewList {
    pub crews: Vec<CrewBody>,
}

/// List registered crews by name.
#[utoipa::path(get, path = "/crews", tag = "crews", responses(
        (status = 200, body = CrewList),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_crews(State(state): State<AppState>, Authed(caller): Authed) -> ApiResult<Json<CrewList>> {
    let crews = state.services.crews(&caller).await?;
    Ok(Json(CrewList { crews: crews.into_iter().map(CrewBody::from).collect() }))
}

/// Get a registered crew.
#[utoipa::path(
    get, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = CrewBody),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_crew(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<CrewBody>> {
    Ok(Json(state.services.crew(&caller, &name).await?.into()))
}

/// Delete a registered crew. Runs already started keep their snapshot of it.
#[utoipa::path(
    delete, path = "/crews/{name}", tag = "crews",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_crew(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.services.delete_crew(&caller, &name, &audit).await?;
    Ok(StatusCode::NO_CONTENT)
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
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = CrewInputs),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn crew_inputs(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<CrewInputs>> {
    let record = state.services.crew(&caller, &name).await?;
    Ok(Json(CrewInputs { inputs: required_inputs(&record.spec).into_iter().collect() }))
}

fn check_name(name: &str) -> ApiResult<()> {
    check_crew_name(name).map_err(|message| ApiError::BadRequest(format!("invalid crew name: {message}")))
}

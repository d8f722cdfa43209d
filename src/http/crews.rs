//! Registered crews: `PUT/GET/DELETE /v1/crews/{name}`, the list, and a crew's inputs.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::wire::CrewBody;
use super::AppState;
use crate::domain::crew::{CrewAlias, CrewVersion, UpsertOutcome};
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

/// One version of a crew, without its spec (`GET /v1/crews/{name}/versions/{version}` has it).
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewVersionSummary {
    pub name: String,
    #[schema(minimum = 1)]
    pub version: i32,
    /// sha256 of the spec's canonical JSON, hex: two versions with one hash have one content.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_hash: String,
    /// The id of the key that stored it, or `operator` (a key of `AGENTD_API_KEYS`, or an open
    /// API); absent for a version stored by a release before versions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_by: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The aliases that name it.
    pub aliases: Vec<String>,
}

/// One version of a crew, with its spec.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewVersionBody {
    #[serde(flatten)]
    pub version: CrewVersionSummary,
    pub spec: CrewSpec,
}

fn summary(version: CrewVersion) -> (CrewVersionSummary, CrewSpec) {
    let CrewVersion { name, version, spec, content_hash, stored_by, created_at, aliases } = version;
    (CrewVersionSummary { name, version, content_hash, stored_by, created_at, aliases }, spec)
}

/// A crew's versions, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrewVersionList {
    pub versions: Vec<CrewVersionSummary>,
}

/// List a crew's versions, newest first.
///
/// Every store of a crew whose spec differs from its newest version's makes a new version;
/// versions never change and are removed only with the crew.
#[utoipa::path(
    get, path = "/crews/{name}/versions", tag = "crews",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = CrewVersionList),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_crew_versions(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<CrewVersionList>> {
    let versions = state.services.crew_versions(&caller, &name).await?;
    Ok(Json(CrewVersionList { versions: versions.into_iter().map(|v| summary(v).0).collect() }))
}

/// Get one version of a crew, with its spec.
#[utoipa::path(
    get, path = "/crews/{name}/versions/{version}", tag = "crews",
    params(
        ("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        ("version" = i32, Path, description = "Version number", minimum = 1),
    ),
    responses(
        (status = 200, body = CrewVersionBody),
        (status = 400, description = "The version is not a number", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such crew or version", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_crew_version(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath((name, version)): ApiPath<(String, i32)>,
) -> ApiResult<Json<CrewVersionBody>> {
    let (version, spec) = summary(state.services.crew_version(&caller, &name, version).await?);
    Ok(Json(CrewVersionBody { version, spec }))
}

/// An alias of a crew: a name for one of its versions.
#[derive(Debug, Serialize, ToSchema)]
pub struct AliasBody {
    pub alias: String,
    /// The version it names.
    #[schema(minimum = 1)]
    pub version: i32,
    /// The version it named before this move (`PUT` answers only; absent when the alias is new).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_version: Option<i32>,
    /// The id of the key that last moved it, or `operator`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

fn alias_body(alias: CrewAlias, previous_version: Option<i32>) -> AliasBody {
    let CrewAlias { alias, version, updated_by, created_at, updated_at } = alias;
    AliasBody { alias, version, previous_version, updated_by, created_at, updated_at }
}

/// A crew's aliases, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct AliasList {
    pub aliases: Vec<AliasBody>,
}

/// List a crew's aliases.
#[utoipa::path(
    get, path = "/crews/{name}/aliases", tag = "crews",
    params(("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = AliasList),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_aliases(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<AliasList>> {
    let aliases = state.services.crew_aliases(&caller, &name).await?;
    Ok(Json(AliasList { aliases: aliases.into_iter().map(|a| alias_body(a, None)).collect() }))
}

/// The body of `PUT /v1/crews/{name}/aliases/{alias}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AliasMoveBody {
    /// The version the alias is to name.
    #[schema(minimum = 1)]
    pub version: i32,
    /// Move the alias only if it names this version now (else 409, nothing moved): a promotion
    /// that does not undo someone else's.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub expected_version: Option<i32>,
}

/// Point an alias at a version of the crew (create it, or move it).
///
/// The move is one transaction: a kickoff naming `name@alias` (or the crew alone, for
/// `production`) runs the version before or the version after, never anything else. Rolling
/// back is moving the alias back.
#[utoipa::path(
    put, path = "/crews/{name}/aliases/{alias}", tag = "crews",
    params(
        ("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        ("alias" = String, Path, description = "Alias: a crew name's characters, not all digits, not `latest`", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z_.-][A-Za-z0-9._-]*$", example = "production"),
    ),
    request_body(content = AliasMoveBody, example = json!({"version": 2})),
    responses(
        (status = 201, description = "Created", body = AliasBody),
        (status = 200, description = "Moved", body = AliasBody),
        (status = 400, description = "Malformed JSON or name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such crew", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The alias does not name `expected_version`", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid alias, or the crew has no such version", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_alias(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath((name, alias)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<AliasMoveBody>,
) -> ApiResult<(StatusCode, Json<AliasBody>)> {
    check_name(&name)?;
    let (moved, previous) = state
        .services
        .move_alias(&caller, &name, &alias, body.version, body.expected_version, &audit)
        .await?;
    let status = if previous.is_some() { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(alias_body(moved, previous))))
}

/// Remove an alias. Kickoffs naming it are refused from then on; a kickoff naming the crew alone
/// runs its newest version once `production` is gone.
#[utoipa::path(
    delete, path = "/crews/{name}/aliases/{alias}", tag = "crews",
    params(
        ("name" = String, Path, description = "Crew name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        ("alias" = String, Path, description = "Alias", min_length = 1, max_length = 100),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such crew or alias", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_alias(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath((name, alias)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    state.services.delete_alias(&caller, &name, &alias, &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

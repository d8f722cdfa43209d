//! Datasets (`/v1/datasets[/{id}]`) and evaluations (`/v1/evaluations[/{id}]`): a version of a
//! crew run on a dataset's cases, replayed against recorded runs or live, and its report.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::domain::evaluation::{
    CaseReport, Dataset, DatasetCase, DatasetRequest, Evaluation, EvaluationMode, EvaluationRequest,
    ReportSummary,
};
use crate::service::EvaluationReport;

/// A dataset, with its cases.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetBody {
    #[serde(flatten)]
    pub dataset: DatasetSummary,
    pub cases: Vec<DatasetCase>,
}

/// A dataset, without its cases.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetSummary {
    pub id: Uuid,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub case_count: usize,
    /// The id of the key that made it, or `operator`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

fn dataset_body(dataset: Dataset) -> DatasetBody {
    let Dataset { id, name, description, cases, created_by, created_at } = dataset;
    let dataset = DatasetSummary { id, name, description, case_count: cases.len(), created_by, created_at };
    DatasetBody { dataset, cases }
}

/// The tenant's datasets, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetList {
    pub datasets: Vec<DatasetSummary>,
}

/// Store a dataset: cases given (inputs and expectations), or made from past runs (`from_runs`:
/// each run's inputs, and as reference its id and output, which a replay answers tool calls from).
#[utoipa::path(
    post, path = "/datasets", tag = "evaluations",
    request_body(content = DatasetRequest, example = json!({"name": "tide questions", "cases": [{"inputs": {"topic": "tides"}, "expect": {"contains": ["high tide"]}}]})),
    responses(
        (status = 201, description = "Created", body = DatasetBody,
            headers(("Location" = String, description = "The dataset's URL"))),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid cases, a run that is not the tenant's or has not ended", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_dataset(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let dataset = state.services.create_dataset(&caller, body, &audit).await?;
    let location = format!("/v1/datasets/{}", dataset.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(dataset_body(dataset))).into_response())
}

/// List the tenant's datasets, newest first.
#[utoipa::path(get, path = "/datasets", tag = "evaluations", responses(
    (status = 200, body = DatasetList),
    (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
))]
pub async fn list_datasets(
    State(state): State<AppState>,
    Authed(caller): Authed,
) -> ApiResult<Json<DatasetList>> {
    let datasets = state.services.datasets(&caller).await?;
    Ok(Json(DatasetList { datasets: datasets.into_iter().map(|d| dataset_body(d).dataset).collect() }))
}

/// Get a dataset with its cases.
#[utoipa::path(
    get, path = "/datasets/{id}", tag = "evaluations",
    params(("id" = Uuid, Path, description = "Dataset id")),
    responses(
        (status = 200, body = DatasetBody),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such dataset", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_dataset(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<DatasetBody>> {
    Ok(Json(dataset_body(state.services.dataset(&caller, id).await?)))
}

/// Delete a dataset. Evaluations that ran it keep their copy of its cases.
#[utoipa::path(
    delete, path = "/datasets/{id}", tag = "evaluations",
    params(("id" = Uuid, Path, description = "Dataset id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such dataset", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_dataset(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.delete_dataset(&caller, id, &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An evaluation, without its report.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvaluationSummary {
    pub id: Uuid,
    /// The crew's name.
    pub crew: String,
    /// The crew as the request named it (`digest@staging`).
    pub crew_ref: String,
    /// The version that reference named when the evaluation started: every case ran it.
    pub crew_version: i32,
    pub mode: EvaluationMode,
    pub safe_tools: Vec<String>,
    /// The model that judges the cases with a rubric, when the request named one (otherwise the
    /// default model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset_id: Option<Uuid>,
    pub case_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

fn evaluation_summary(evaluation: Evaluation) -> EvaluationSummary {
    let Evaluation {
        id,
        crew,
        crew_ref,
        crew_version,
        mode,
        safe_tools,
        judge_model,
        dataset_id,
        cases,
        created_by,
        created_at,
    } = evaluation;
    let case_count = cases.len();
    EvaluationSummary {
        id,
        crew,
        crew_ref,
        crew_version,
        mode,
        safe_tools,
        judge_model,
        dataset_id,
        case_count,
        created_by,
        created_at,
    }
}

/// An evaluation and its report as of now: each case's run against its expectations and its
/// reference run, and the totals.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvaluationBody {
    #[serde(flatten)]
    pub evaluation: EvaluationSummary,
    /// `running` until every case's run has ended, then `completed`.
    #[schema(pattern = "^(running|completed)$")]
    pub status: String,
    pub summary: ReportSummary,
    pub cases: Vec<CaseReport>,
}

fn evaluation_body(report: EvaluationReport) -> EvaluationBody {
    let EvaluationReport { evaluation, ended, summary, cases } = report;
    let status = if ended { "completed" } else { "running" }.to_owned();
    EvaluationBody { evaluation: evaluation_summary(evaluation), status, summary, cases }
}

/// The tenant's evaluations, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvaluationList {
    pub evaluations: Vec<EvaluationSummary>,
}

/// Start an evaluation: the crew's version named by `crew` runs each case of the dataset (or of
/// `runs`) as an ordinary run (tenant-fair, under the tenant's quotas, durable, streamed, traced).
///
/// Mode `replay`: each case's tool calls are answered from its recorded run where tool and
/// arguments match; a call that matches none is not executed (a divergence, in the report) unless
/// the tool is in `safe_tools`. Model calls go to the version's models. Mode `live`: everything
/// real. A case whose expectations have a `rubric` is judged in its run, before it completes, by
/// `judge_model` (else the default model): the call is journaled and costed with the run's, and
/// its verdict is the event `evaluation.judged` and the case's `rubric` check. Each case's run has
/// `metadata` `{"evaluation_id", "case"}`.
#[utoipa::path(
    post, path = "/evaluations", tag = "evaluations",
    request_body(content = EvaluationRequest, example = json!({"crew": "digest@staging", "dataset": "01936f7e-2c4b-7d2a-9c1e-0a1b2c3d4e5f", "mode": "replay"})),
    responses(
        (status = 202, description = "Started: every case's run is queued", body = EvaluationBody,
            headers(("Location" = String, description = "The evaluation's URL"))),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such crew, version, alias or dataset", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, a case the crew cannot run, a replay case without a recorded run", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The tenant's max_queued or daily caps refuse the runs", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_evaluation(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let report = state.services.create_evaluation(&caller, body, &audit).await?;
    let location = format!("/v1/evaluations/{}", report.evaluation.id);
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(evaluation_body(report))).into_response())
}

/// List the tenant's evaluations, newest first (without reports).
#[utoipa::path(get, path = "/evaluations", tag = "evaluations", responses(
    (status = 200, body = EvaluationList),
    (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
))]
pub async fn list_evaluations(
    State(state): State<AppState>,
    Authed(caller): Authed,
) -> ApiResult<Json<EvaluationList>> {
    let evaluations = state.services.evaluations(&caller).await?;
    Ok(Json(EvaluationList { evaluations: evaluations.into_iter().map(evaluation_summary).collect() }))
}

/// An evaluation with its report as of now.
#[utoipa::path(
    get, path = "/evaluations/{id}", tag = "evaluations",
    params(("id" = Uuid, Path, description = "Evaluation id")),
    responses(
        (status = 200, body = EvaluationBody),
        (status = 400, description = "A malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such evaluation", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_evaluation(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<EvaluationBody>> {
    Ok(Json(evaluation_body(state.services.evaluation(&caller, id).await?)))
}

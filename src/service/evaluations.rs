//! Datasets (`/v1/datasets`) and evaluations (`/v1/evaluations`): a version of a crew run on a
//! dataset's cases, each case an ordinary run, replayed against its recorded run's tool results or
//! live; the report is built from those runs whenever it is read.

use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::access::queue_full;
use super::{ServiceError, ServiceResult, Services};
use crate::domain::crew::CrewSelector;
use crate::domain::evaluation::{
    case_report, check_cases, check_dataset_text, check_expectations, check_judge_model, summarize,
    CaseReference, CaseReport, Dataset, DatasetCase, DatasetRequest, Evaluation, EvaluationMode,
    EvaluationRequest, Expectations, Replay, ReportSummary, MAX_CASES,
};
use crate::domain::kickoff::{prepare_run, NewRun};
use crate::domain::validate::{parse_json, FieldError};
use crate::domain::{Caller, RunId, TenantId};
use crate::store::{Audit, NewEvaluation};

/// An evaluation with its report as of now.
#[derive(Debug, Clone)]
pub struct EvaluationReport {
    pub evaluation: Evaluation,
    /// Every case's run has ended.
    pub ended: bool,
    pub summary: ReportSummary,
    pub cases: Vec<CaseReport>,
}

impl Services {
    /// Store a dataset (`POST /v1/datasets`).
    pub async fn create_dataset(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<Dataset> {
        let request: DatasetRequest = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        check_dataset_text(&request.name, request.description.as_deref(), &mut errors);
        let cases = match (request.cases, request.from_runs) {
            (Some(cases), None) => {
                if request.expect.is_some() {
                    errors.push(FieldError::new("expect", "goes with from_runs (give each case its own)"));
                }
                if cases.is_empty() {
                    errors.push(FieldError::new("cases", "give at least one case"));
                }
                check_cases(&cases, &mut errors);
                cases
            }
            (None, Some(runs)) => {
                check_expectations(request.expect.as_ref(), "expect", &mut errors);
                self.cases_from_runs(&caller.tenant, &runs, request.expect.as_ref(), "from_runs", &mut errors)
                    .await?
            }
            _ => {
                errors.push(FieldError::new("", "give cases or from_runs (one of them)"));
                Vec::new()
            }
        };
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let description = request.description.as_deref();
        Ok(self.store.create_dataset(&caller.tenant, &request.name, description, &cases, audit).await?)
    }

    pub async fn datasets(&self, caller: &Caller) -> ServiceResult<Vec<Dataset>> {
        Ok(self.store.list_datasets(&caller.tenant).await?)
    }

    pub async fn dataset(&self, caller: &Caller, id: Uuid) -> ServiceResult<Dataset> {
        self.store.get_dataset(&caller.tenant, id).await?.ok_or_else(|| no_dataset(id))
    }

    pub async fn delete_dataset(&self, caller: &Caller, id: Uuid, audit: &Audit) -> ServiceResult<()> {
        match self.store.delete_dataset(&caller.tenant, id, audit).await? {
            true => Ok(()),
            false => Err(no_dataset(id)),
        }
    }

    /// Cases made from the tenant's runs `ids`: each run's inputs, and as reference its id and
    /// output; a run that is not the tenant's, or has not ended, is an error under `field[i]`.
    async fn cases_from_runs(
        &self,
        tenant: &TenantId,
        ids: &[Uuid],
        expect: Option<&Expectations>,
        field: &str,
        errors: &mut Vec<FieldError>,
    ) -> ServiceResult<Vec<DatasetCase>> {
        if ids.is_empty() || ids.len() > MAX_CASES {
            errors.push(FieldError::new(field, format!("give 1 to {MAX_CASES} runs")));
            return Ok(Vec::new());
        }
        let found = self.store.past_runs(tenant, ids).await?;
        let mut cases = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let Some(run) = found.iter().find(|run| run.id.0 == *id) else {
                errors.push(FieldError::new(format!("{field}[{i}]"), format!("no run {id}")));
                continue;
            };
            let status = run.status;
            if !status.is_terminal() {
                errors.push(FieldError::new(
                    format!("{field}[{i}]"),
                    format!("run {id} has not ended ({status})"),
                ));
                continue;
            }
            cases.push(DatasetCase {
                inputs: run.inputs.clone(),
                expect: expect.cloned(),
                reference: Some(CaseReference {
                    run_id: *id,
                    output: run.output.as_ref().map(|o| o.raw.clone()),
                }),
            });
        }
        Ok(cases)
    }

    /// Start an evaluation (`POST /v1/evaluations`): one run of the crew's version per case, all
    /// or none; the report as it stands (every case queued).
    pub async fn create_evaluation(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<EvaluationReport> {
        let request: EvaluationRequest = parse_json(body).map_err(ServiceError::Invalid)?;
        let tenant = &caller.tenant;
        let selector = CrewSelector::parse(&request.crew)
            .map_err(|message| ServiceError::Invalid(vec![FieldError::new("crew", message)]))?;
        let mut errors = Vec::new();
        let (cases, dataset_id) = match (request.dataset, request.runs) {
            (Some(id), None) => {
                if request.expect.is_some() {
                    errors
                        .push(FieldError::new("expect", "goes with runs (a dataset's cases have their own)"));
                }
                let dataset = self.store.get_dataset(tenant, id).await?.ok_or_else(|| no_dataset(id))?;
                (dataset.cases, Some(id))
            }
            (None, Some(runs)) => {
                check_expectations(request.expect.as_ref(), "expect", &mut errors);
                (
                    self.cases_from_runs(tenant, &runs, request.expect.as_ref(), "runs", &mut errors).await?,
                    None,
                )
            }
            _ => {
                errors.push(FieldError::new("", "give dataset or runs (one of them)"));
                (Vec::new(), None)
            }
        };
        check_judge_model(request.judge_model.as_deref(), &mut errors);
        for (i, tool) in request.safe_tools.iter().enumerate() {
            if let Err(message) = crate::domain::validate::check_crew_name(tool) {
                errors.push(FieldError::new(format!("safe_tools[{i}]"), message));
            }
        }
        if request.mode == EvaluationMode::Replay {
            for (i, case) in cases.iter().enumerate() {
                if case.reference.is_none() {
                    errors.push(FieldError::new(
                        format!("cases[{i}]"),
                        "has no recorded run to replay: replay needs cases made from runs (from_runs), or use mode live",
                    ));
                }
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let (version, spec) = self.resolve_named_crew(tenant, &selector).await?;
        let id = Uuid::now_v7();
        let mut runs = Vec::with_capacity(cases.len());
        let mut errors = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            let metadata =
                Map::from_iter([("evaluation_id".to_owned(), json!(id)), ("case".to_owned(), json!(i))]);
            match prepare_run(spec.clone(), case.inputs.clone(), metadata, None, tenant, &self.validation) {
                Ok(run) => runs.push(NewRun { crew_version: Some(version), ..run }),
                Err(found) => errors.extend(found.into_iter().map(|e| e.under(&format!("cases[{i}]")))),
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        self.check_secrets_exist(tenant, &spec, "crew.").await?;
        self.check_knowledge_exists(tenant, &spec, "crew.").await?;
        self.admit(tenant, &mut runs).await?;
        let replay_of: Vec<Option<RunId>> = cases
            .iter()
            .map(|case| {
                let recorded = case.reference.as_ref().map(|r| RunId(r.run_id));
                recorded.filter(|_| request.mode == EvaluationMode::Replay)
            })
            .collect();
        let evaluation = Evaluation {
            id,
            crew: selector.name.clone(),
            crew_ref: request.crew.clone(),
            crew_version: version,
            mode: request.mode,
            safe_tools: request.safe_tools,
            judge_model: request.judge_model,
            dataset_id,
            cases,
            created_by: None,
            created_at: chrono::Utc::now(),
        };
        let new = NewEvaluation { evaluation: &evaluation, runs: &runs, replay_of: &replay_of };
        if let Err(full) = self.store.create_evaluation(tenant, new, audit).await? {
            return Err(queue_full(&full));
        }
        self.evaluation(caller, id).await
    }

    pub async fn evaluations(&self, caller: &Caller) -> ServiceResult<Vec<Evaluation>> {
        Ok(self.store.list_evaluations(&caller.tenant).await?)
    }

    /// An evaluation and its report as of now.
    pub async fn evaluation(&self, caller: &Caller, id: Uuid) -> ServiceResult<EvaluationReport> {
        let evaluation =
            self.store.get_evaluation(&caller.tenant, id).await?.ok_or_else(|| no_evaluation(id))?;
        let refs: Vec<Uuid> =
            evaluation.cases.iter().filter_map(|c| c.reference.as_ref().map(|r| r.run_id)).collect();
        let (runs, references) = self.store.evaluation_runs(id, &refs).await?;
        let cases: Vec<CaseReport> = evaluation
            .cases
            .iter()
            .enumerate()
            .map(|(i, case)| {
                let reference = case.reference.as_ref().and_then(|r| references.get(&r.run_id));
                let replay = (evaluation.mode == EvaluationMode::Replay).then(|| Replay {
                    recorded: reference.map(|r| r.calls.clone()).unwrap_or_default(),
                    safe_tools: evaluation.safe_tools.clone(),
                });
                case_report(i, case, runs.get(&i), reference, replay.as_ref())
            })
            .collect();
        let summary = summarize(&cases);
        let ended = summary.ended == summary.cases;
        Ok(EvaluationReport { evaluation, ended, summary, cases })
    }
}

fn no_dataset(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no dataset {id}"))
}

fn no_evaluation(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no evaluation {id}"))
}

//! Datasets and evaluations: a tenant's cases, the evaluations that ran a crew's version on them
//! (their runs are ordinary runs, tied to the evaluation by `runs.evaluation_id`), what the report
//! reads of those runs, and what a case's run needs: the calls a replay answers its tool calls
//! with, and its judge.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::runs::{insert_runs, QueuedRun};
use super::tenants::hold_queue;
use super::{decode, parse, Audit, Store, StoreError, StoreResult};
use crate::domain::evaluation::{
    Dataset, DatasetCase, Evaluation, EvaluationCase, Judge, RecordedCall, Replay, RunFacts,
};
use crate::domain::event::EvaluationJudged;
use crate::domain::kickoff::NewRun;
use crate::domain::{QueueFull, RunId, RunStatus, TaskOutput, TenantId};

struct DatasetRow {
    id: Uuid,
    name: String,
    description: Option<String>,
    cases: Value,
    created_by: Option<String>,
    created_at: DateTime<Utc>,
}

impl DatasetRow {
    fn into_dataset(self) -> StoreResult<Dataset> {
        Ok(Dataset {
            cases: decode(self.cases, "datasets.cases")?,
            id: self.id,
            name: self.name,
            description: self.description,
            created_by: self.created_by,
            created_at: self.created_at,
        })
    }
}

struct EvaluationRow {
    id: Uuid,
    crew: String,
    crew_ref: String,
    crew_version: i32,
    mode: String,
    safe_tools: Vec<String>,
    judge_model: Option<String>,
    dataset_id: Option<Uuid>,
    cases: Value,
    created_by: Option<String>,
    created_at: DateTime<Utc>,
}

impl EvaluationRow {
    fn into_evaluation(self) -> StoreResult<Evaluation> {
        Ok(Evaluation {
            mode: parse(&self.mode)?,
            cases: decode(self.cases, "evaluations.cases")?,
            id: self.id,
            crew: self.crew,
            crew_ref: self.crew_ref,
            crew_version: self.crew_version,
            safe_tools: self.safe_tools,
            judge_model: self.judge_model,
            dataset_id: self.dataset_id,
            created_by: self.created_by,
            created_at: self.created_at,
        })
    }
}

/// A past run a dataset case is made from (`from_runs`).
#[derive(Debug, Clone)]
pub struct PastRunCase {
    pub id: RunId,
    pub status: RunStatus,
    pub inputs: serde_json::Map<String, Value>,
    pub output: Option<TaskOutput>,
}

/// An evaluation to store with its runs: run `i` is case `i`'s, replaying `replay_of[i]` when
/// given.
pub struct NewEvaluation<'a> {
    pub evaluation: &'a Evaluation,
    pub runs: &'a [NewRun],
    pub replay_of: &'a [Option<RunId>],
}

impl Store {
    /// Store a dataset.
    #[tracing::instrument(skip_all, fields(dataset = %name), err)]
    pub async fn create_dataset(
        &self,
        tenant: &TenantId,
        name: &str,
        description: Option<&str>,
        cases: &[DatasetCase],
        audit: &Audit,
    ) -> StoreResult<Dataset> {
        let cases = serde_json::to_value(cases)
            .map_err(|e| StoreError::Corrupt(format!("dataset cases do not serialize: {e}")))?;
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            DatasetRow,
            "INSERT INTO datasets (id, tenant, name, description, cases, created_by) VALUES ($1, $2, $3, $4, $5, $6)
             RETURNING id, name, description, cases, created_by, created_at",
            Uuid::now_v7(),
            tenant.as_str(),
            name,
            description,
            cases,
            audit.actor()
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, Some(&format!("/v1/datasets/{}", row.id))).await?;
        tx.commit().await?;
        row.into_dataset()
    }

    /// The tenant's datasets, newest first.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_datasets(&self, tenant: &TenantId) -> StoreResult<Vec<Dataset>> {
        let rows = sqlx::query_as!(
            DatasetRow,
            "SELECT id, name, description, cases, created_by, created_at FROM datasets
              WHERE tenant = $1 ORDER BY created_at DESC, id DESC",
            tenant.as_str()
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(DatasetRow::into_dataset).collect()
    }

    #[tracing::instrument(skip_all, fields(dataset = %id), err)]
    pub async fn get_dataset(&self, tenant: &TenantId, id: Uuid) -> StoreResult<Option<Dataset>> {
        let row = sqlx::query_as!(
            DatasetRow,
            "SELECT id, name, description, cases, created_by, created_at FROM datasets WHERE tenant = $1 AND id = $2",
            tenant.as_str(),
            id
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(DatasetRow::into_dataset).transpose()
    }

    /// Remove a dataset; `false` if there was none. Evaluations keep their copy of its cases.
    #[tracing::instrument(skip_all, fields(dataset = %id), err)]
    pub async fn delete_dataset(&self, tenant: &TenantId, id: Uuid, audit: &Audit) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!("DELETE FROM datasets WHERE tenant = $1 AND id = $2", tenant.as_str(), id),
            tenant,
            audit,
        )
        .await
    }

    /// The tenant's runs `ids` as cases are made from them (missing ones and other tenants' left
    /// out).
    #[tracing::instrument(skip_all, err)]
    pub async fn past_runs(&self, tenant: &TenantId, ids: &[Uuid]) -> StoreResult<Vec<PastRunCase>> {
        let rows = sqlx::query!(
            "SELECT id, status, inputs, output FROM runs WHERE tenant = $1 AND id = ANY($2)",
            tenant.as_str(),
            ids
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(PastRunCase {
                    id: RunId(row.id),
                    status: parse(&row.status)?,
                    inputs: decode(row.inputs, "runs.inputs")?,
                    output: row.output.map(|o| decode(o, "runs.output")).transpose()?,
                })
            })
            .collect()
    }

    /// Store an evaluation with its runs, all or none, in one transaction (under the tenant's
    /// `max_queued`, as a batch kickoff is): the runs are queued, tied to the evaluation, and
    /// written at record format 2 (a replica that reads format 1 neither replays nor judges).
    #[tracing::instrument(skip_all, fields(evaluation = %new.evaluation.id, runs = new.runs.len()), err)]
    pub async fn create_evaluation(
        &self,
        tenant: &TenantId,
        new: NewEvaluation<'_>,
        audit: &Audit,
    ) -> StoreResult<Result<(), QueueFull>> {
        let NewEvaluation { evaluation, runs, replay_of } = new;
        let cases = serde_json::to_value(&evaluation.cases)
            .map_err(|e| StoreError::Corrupt(format!("evaluation cases do not serialize: {e}")))?;
        let created_at = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
        let rows = runs.iter().map(|run| QueuedRun::new(run, created_at)).collect::<StoreResult<Vec<_>>>()?;
        let mut tx = self.pool.begin().await?;
        if let Err(full) = hold_queue(&mut tx, runs).await? {
            tx.rollback().await?;
            return Ok(Err(full));
        }
        sqlx::query!(
            "INSERT INTO evaluations (id, tenant, crew, crew_ref, crew_version, mode, safe_tools, judge_model,
                                      dataset_id, cases, created_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            evaluation.id,
            tenant.as_str(),
            evaluation.crew,
            evaluation.crew_ref,
            evaluation.crew_version,
            <&str>::from(evaluation.mode),
            &evaluation.safe_tools,
            evaluation.judge_model,
            evaluation.dataset_id,
            cases,
            audit.actor()
        )
        .execute(&mut *tx)
        .await?;
        insert_runs(&mut tx, &rows).await?;
        let ids: Vec<Uuid> = runs.iter().map(|run| run.id.0).collect();
        let cases: Vec<i32> = (0..runs.len()).map(|i| i32::try_from(i).unwrap_or(i32::MAX)).collect();
        let replays: Vec<Option<Uuid>> = replay_of.iter().map(|r| r.map(|id| id.0)).collect();
        sqlx::query!(
            "UPDATE runs AS r SET evaluation_id = $1, evaluation_case = u.n, replay_of = u.replay,
                    record_format = greatest(r.record_format, 2)
               FROM UNNEST($2::uuid[], $3::int4[], $4::uuid[]) AS u(id, n, replay)
              WHERE r.id = u.id",
            evaluation.id,
            &ids,
            &cases,
            &replays as &[Option<Uuid>]
        )
        .execute(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, Some(&format!("/v1/evaluations/{}", evaluation.id))).await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// The tenant's evaluations, newest first.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_evaluations(&self, tenant: &TenantId) -> StoreResult<Vec<Evaluation>> {
        let rows = sqlx::query_as!(
            EvaluationRow,
            "SELECT id, crew, crew_ref, crew_version, mode, safe_tools, judge_model, dataset_id, cases, created_by,
                    created_at
               FROM evaluations WHERE tenant = $1 ORDER BY created_at DESC, id DESC",
            tenant.as_str()
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(EvaluationRow::into_evaluation).collect()
    }

    #[tracing::instrument(skip_all, fields(evaluation = %id), err)]
    pub async fn get_evaluation(&self, tenant: &TenantId, id: Uuid) -> StoreResult<Option<Evaluation>> {
        let row = sqlx::query_as!(
            EvaluationRow,
            "SELECT id, crew, crew_ref, crew_version, mode, safe_tools, judge_model, dataset_id, cases, created_by,
                    created_at
               FROM evaluations WHERE tenant = $1 AND id = $2",
            tenant.as_str(),
            id
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(EvaluationRow::into_evaluation).transpose()
    }

    /// An evaluation's runs by case, and the reference runs they replay or compare with (`refs`),
    /// as the report reads them.
    #[tracing::instrument(skip_all, fields(evaluation = %id), err)]
    pub async fn evaluation_runs(
        &self,
        id: Uuid,
        refs: &[Uuid],
    ) -> StoreResult<(HashMap<usize, RunFacts>, HashMap<Uuid, RunFacts>)> {
        let rows = sqlx::query!(
            r#"SELECT id, status, output, error, evaluation_id, evaluation_case,
                      prompt_tokens + completion_tokens AS "tokens!", cost_usd,
                      (extract(epoch FROM finished_at - started_at) * 1000)::int8 AS duration_ms
                 FROM runs WHERE evaluation_id = $1 OR id = ANY($2)"#,
            id,
            refs
        )
        .fetch_all(&self.pool)
        .await?;
        let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
        let mut calls = recorded_calls(&self.pool, &ids).await?;
        let mut judged = verdicts(&self.pool, &ids).await?;
        let (mut cases, mut references) = (HashMap::new(), HashMap::new());
        for row in rows {
            let facts = RunFacts {
                id: RunId(row.id),
                status: parse(&row.status)?,
                output: row.output.map(|o| decode(o, "runs.output")).transpose()?,
                error: row.error.and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_owned)),
                tokens: row.tokens,
                cost_usd: row.cost_usd,
                duration_ms: row.duration_ms,
                calls: calls.remove(&row.id).unwrap_or_default(),
                judged: judged.remove(&row.id),
            };
            if refs.contains(&row.id) {
                references.insert(row.id, facts.clone());
            }
            if let (Some(evaluation), Some(case)) = (row.evaluation_id, row.evaluation_case) {
                if evaluation == id {
                    cases.insert(usize::try_from(case).unwrap_or_default(), facts);
                }
            }
        }
        Ok((cases, references))
    }

    /// What evaluation case run `run` needs beside its crew: in mode `replay`, the calls its
    /// recorded run made (and the tools it may run for real); when its case has a rubric, its
    /// judge.
    #[tracing::instrument(skip_all, fields(run_id = %run), err)]
    pub async fn evaluation_case(&self, run: RunId) -> StoreResult<EvaluationCase> {
        let row = sqlx::query!(
            r#"SELECT r.replay_of, e.safe_tools, e.judge_model,
                      e.cases -> r.evaluation_case -> 'expect' ->> 'rubric' AS rubric
                 FROM runs AS r JOIN evaluations AS e ON e.id = r.evaluation_id WHERE r.id = $1"#,
            run.0
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(EvaluationCase::default()) };
        let replay = match row.replay_of {
            None => None,
            Some(recorded) => {
                let calls =
                    recorded_calls(&self.pool, &[recorded]).await?.remove(&recorded).unwrap_or_default();
                Some(Replay { recorded: calls, safe_tools: row.safe_tools })
            }
        };
        let judge = row.rubric.map(|rubric| Judge { rubric, model: row.judge_model });
        Ok(EvaluationCase { replay, judge })
    }
}

/// The judges' verdicts on `runs` (`evaluation.judged`), the last of each run's.
async fn verdicts(pool: &sqlx::PgPool, runs: &[Uuid]) -> StoreResult<HashMap<Uuid, EvaluationJudged>> {
    let rows = sqlx::query!(
        "SELECT run_id, data FROM events WHERE run_id = ANY($1) AND type = 'evaluation.judged' ORDER BY run_id, seq",
        runs
    )
    .fetch_all(pool)
    .await?;
    let mut verdicts = HashMap::new();
    for row in rows {
        verdicts.insert(row.run_id, decode(row.data, "events.data of evaluation.judged")?);
    }
    Ok(verdicts)
}

/// The finished tool calls of `runs`, each run's in the order they started.
async fn recorded_calls(pool: &sqlx::PgPool, runs: &[Uuid]) -> StoreResult<HashMap<Uuid, Vec<RecordedCall>>> {
    let rows = sqlx::query!(
        "SELECT run_id, tool, arguments, status, result, error FROM tool_calls
          WHERE run_id = ANY($1) AND status <> 'running' ORDER BY run_id, started_at, id",
        runs
    )
    .fetch_all(pool)
    .await?;
    let mut calls: HashMap<Uuid, Vec<RecordedCall>> = HashMap::new();
    for row in rows {
        let outcome = match row.status.as_str() {
            "succeeded" => Ok(row.result.unwrap_or_default()),
            _ => Err(row.error.unwrap_or_default()),
        };
        calls.entry(row.run_id).or_default().push(RecordedCall {
            tool: row.tool,
            arguments: row.arguments,
            outcome,
        });
    }
    Ok(calls)
}

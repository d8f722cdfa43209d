//! Datasets and evaluations: cases (inputs, expectations, a reference run), how a replay answers a
//! tool call from a recorded run, how a case's output is scored, and the report of an evaluation.
//! Plain data and pure functions: the store keeps them, the engine asks [`Replay`], the service
//! builds the [`Report`] from what the store read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::event::EvaluationJudged;
use super::field::{check_text, FieldError, TextKind};
use super::schema::{check_schema, CompiledSchema};
use super::{RunId, RunStatus, TaskOutput};

/// The most cases a dataset (an evaluation) holds.
pub const MAX_CASES: usize = 1_000;
/// The longest rubric, in characters.
pub const MAX_RUBRIC_CHARS: usize = 4_000;

/// What a case's output should be. Every expectation given must hold for the case to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// The output, exactly (leading and trailing whitespace aside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Texts the output contains, each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contains: Vec<String>,
    /// A JSON Schema the output, read as JSON, satisfies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub json_schema: Option<Value>,
    /// What a good output does, in words (at most 4,000 characters): a judge model reads the
    /// case's inputs and output and decides, in the case's run (`evaluation.judged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4000)]
    pub rubric: Option<String>,
}

impl Expectations {
    fn is_empty(&self) -> bool {
        self.exact.is_none()
            && self.contains.is_empty()
            && self.json_schema.is_none()
            && self.rubric.is_none()
    }
}

/// What an evaluation case's run needs beside its crew: the recorded calls a replay answers its
/// tool calls with, and the judge of a case with a rubric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvaluationCase {
    pub replay: Option<Replay>,
    pub judge: Option<Judge>,
}

/// An evaluation case's judge: its run's final answer is judged against `rubric` before the run
/// completes.
#[derive(Debug, Clone, PartialEq)]
pub struct Judge {
    pub rubric: String,
    /// The judge's model (`provider/model`, or a model of the default provider); `None`: the
    /// default model.
    pub model: Option<String>,
}

/// The recorded run a case was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CaseReference {
    #[schema(value_type = String, format = Uuid)]
    pub run_id: Uuid,
    /// Its final output, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// One case of a dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetCase {
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectations>,
    /// Set for a case made from a run (`from_runs`): a replay answers tool calls from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<CaseReference>,
}

/// Check cases given in a request (not made from runs): at most [`MAX_CASES`], schemas that
/// compile, texts without control characters; errors under `cases[i]`.
pub fn check_cases(cases: &[DatasetCase], errors: &mut Vec<FieldError>) {
    if cases.len() > MAX_CASES {
        errors.push(FieldError::new("cases", format!("at most {MAX_CASES} cases")));
        return;
    }
    for (i, case) in cases.iter().enumerate() {
        let path = format!("cases[{i}]");
        if case.reference.is_some() {
            errors.push(FieldError::new(
                format!("{path}.reference"),
                "is made by the server for cases from runs (`from_runs`)",
            ));
        }
        check_expectations(case.expect.as_ref(), &format!("{path}.expect"), errors);
    }
}

/// Check expectations (`path` names them in errors).
pub fn check_expectations(expect: Option<&Expectations>, path: &str, errors: &mut Vec<FieldError>) {
    let Some(expect) = expect else { return };
    if expect.is_empty() {
        errors.push(FieldError::new(path, "give at least one of exact, contains, json_schema, rubric"));
    }
    if let Some(rubric) = &expect.rubric {
        let path = format!("{path}.rubric");
        if rubric.trim().is_empty() || rubric.chars().count() > MAX_RUBRIC_CHARS {
            errors.push(FieldError::new(
                path,
                format!("must be 1 to {MAX_RUBRIC_CHARS} characters, not blank"),
            ));
        } else if let Err(error) = check_text(&path, rubric, TextKind::Lines) {
            errors.push(error);
        }
    }
    if let Some(exact) = &expect.exact {
        if let Err(error) = check_text(&format!("{path}.exact"), exact, TextKind::Lines) {
            errors.push(error);
        }
    }
    for (i, text) in expect.contains.iter().enumerate() {
        if text.is_empty() {
            errors.push(FieldError::new(format!("{path}.contains[{i}]"), "must not be empty"));
        }
    }
    if let Some(schema) = &expect.json_schema {
        check_schema(schema, &format!("{path}.json_schema"), errors);
    }
}

/// A tool call of a recorded run: what a replay answers matching calls with.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub tool: String,
    pub arguments: Value,
    /// Its result, or its error.
    pub outcome: Result<String, String>,
}

/// How a replayed run answers its tool calls: from the recorded run's calls, matched by tool and
/// arguments (JSON equality: key order and number spelling aside). A call that matches several
/// recorded calls gets the first one's outcome, on every attempt alike, so a resumed run answers
/// as its first attempt did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    pub recorded: Vec<RecordedCall>,
    /// Tools the evaluation lets run for real when a call diverges.
    pub safe_tools: Vec<String>,
}

/// What a replay does with a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayAnswer<'a> {
    /// The recorded run made the same call: its outcome, without running the tool.
    Recorded(&'a Result<String, String>),
    /// No recorded call matches, and the tool is safe to run: run it.
    Run,
    /// No recorded call matches: not run; the model is told why.
    Diverged(String),
}

impl Replay {
    pub fn answer(&self, tool: &str, arguments: &Value) -> ReplayAnswer<'_> {
        if let Some(call) = self.matching(tool, arguments) {
            return ReplayAnswer::Recorded(&call.outcome);
        }
        if self.safe_tools.iter().any(|safe| safe == tool) {
            return ReplayAnswer::Run;
        }
        ReplayAnswer::Diverged(format!(
            "not executed: this is a replay of a recorded run, which made no call of '{tool}' with these \
             arguments (a divergence; the evaluation reports it)"
        ))
    }

    pub fn matching(&self, tool: &str, arguments: &Value) -> Option<&RecordedCall> {
        self.recorded.iter().find(|call| call.tool == tool && same_json(&call.arguments, arguments))
    }
}

/// JSON equality where `1` and `1.0` are one number.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

snake_case_enum! {
    /// How an evaluation runs its cases.
    #[strum(serialize_all = "snake_case", parse_err_fn = bad_mode, parse_err_ty = String)]
    pub enum EvaluationMode {
        /// Tool calls answered from each case's recorded run; model calls real.
        Replay,
        /// Everything real.
        Live,
    }
}

fn bad_mode(mode: &str) -> String {
    format!("unknown evaluation mode '{mode}'")
}

/// One check of a case's output against an expectation.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Check {
    /// `exact`, `contains`, `json_schema` or `rubric`.
    pub kind: String,
    pub passed: bool,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Score `output` against `expect`: one check per expectation.
pub fn score(expect: &Expectations, output: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let check = |kind: &str, detail: Option<String>| Check {
        kind: kind.to_owned(),
        passed: detail.is_none(),
        detail,
    };
    if let Some(exact) = &expect.exact {
        let detail =
            (output.trim() != exact.trim()).then(|| "the output is not the expected text".to_owned());
        checks.push(check("exact", detail));
    }
    for text in &expect.contains {
        let detail =
            (!output.contains(text.as_str())).then(|| format!("the output does not contain {text:?}"));
        checks.push(check("contains", detail));
    }
    if let Some(schema) = &expect.json_schema {
        let detail = match (serde_json::from_str::<Value>(output.trim()), CompiledSchema::compile(schema)) {
            (Err(e), _) => Some(format!("the output is not JSON: {e}")),
            (_, Err(e)) => Some(format!("the schema does not compile: {e}")),
            (Ok(value), Ok(schema)) => {
                let violations = schema.validate(&value);
                (!violations.is_empty()).then(|| violations.join("; "))
            }
        };
        checks.push(check("json_schema", detail));
    }
    checks
}

/// What the report needs of a run (a case's, or its reference).
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub id: RunId,
    pub status: RunStatus,
    pub output: Option<TaskOutput>,
    pub error: Option<String>,
    pub tokens: i64,
    pub cost_usd: f64,
    /// From its first start to its end, when it has ended.
    pub duration_ms: Option<i64>,
    /// Its tool calls, in order.
    pub calls: Vec<RecordedCall>,
    /// Its judge's verdict (`evaluation.judged`), when it was judged.
    pub judged: Option<EvaluationJudged>,
}

/// A tool call of a replayed case that its recorded run did not make.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Divergence {
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// Run for real anyway (the tool is in `safe_tools`).
    pub executed: bool,
}

/// A run as a case's report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunSummary {
    #[schema(value_type = String, format = Uuid)]
    pub run_id: Uuid,
    pub status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub tokens: i64,
    pub cost_usd: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    pub tool_calls: usize,
}

impl RunSummary {
    fn of(run: &RunFacts) -> Self {
        Self {
            run_id: run.id.0,
            status: run.status,
            output: run.output.as_ref().map(|o| o.raw.clone()),
            error: run.error.clone(),
            tokens: run.tokens,
            cost_usd: run.cost_usd,
            duration_ms: run.duration_ms,
            tool_calls: run.calls.len(),
        }
    }
}

/// One case of an evaluation's report.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CaseReport {
    pub case: usize,
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
    /// The case's run (absent only if it was deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSummary>,
    /// The recorded run it was made from, as it is now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<RunSummary>,
    /// Tool calls answered from the recorded run (replay).
    pub replayed_calls: usize,
    pub divergences: Vec<Divergence>,
    pub checks: Vec<Check>,
    /// The judge's verdict on the output (cases with a rubric).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<EvaluationJudged>,
    /// Whether the case passed: it completed, and every check held. `null` until its run has ended.
    pub passed: Option<bool>,
}

/// An evaluation's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct ReportSummary {
    pub cases: usize,
    /// Cases whose run has ended.
    pub ended: usize,
    pub passed: usize,
    /// `passed / ended` (0 before any case ended).
    pub pass_rate: f64,
    /// Tool calls that diverged from the recorded runs, in all cases.
    pub divergences: usize,
    pub replayed_calls: usize,
    pub tokens: i64,
    pub cost_usd: f64,
    /// The sum of the ended cases' durations.
    pub duration_ms: i64,
    /// The same figures of the reference runs (cases made from runs).
    pub reference_tokens: i64,
    pub reference_cost_usd: f64,
    pub reference_duration_ms: i64,
}

/// Build a case's report from its run and its reference run (replay: `replay` says how its calls
/// were answered).
pub fn case_report(
    index: usize,
    case: &DatasetCase,
    run: Option<&RunFacts>,
    reference: Option<&RunFacts>,
    replay: Option<&Replay>,
) -> CaseReport {
    let (mut replayed_calls, mut divergences) = (0, Vec::new());
    if let (Some(run), Some(replay)) = (run, replay) {
        for call in &run.calls {
            match replay.answer(&call.tool, &call.arguments) {
                ReplayAnswer::Recorded(_) => replayed_calls += 1,
                answer => divergences.push(Divergence {
                    tool: call.tool.clone(),
                    arguments: call.arguments.clone(),
                    executed: answer == ReplayAnswer::Run,
                }),
            }
        }
    }
    let ended = run.is_some_and(|run| run.status.is_terminal());
    let output = run.and_then(|run| run.output.as_ref()).map(|o| o.raw.as_str());
    let mut checks = match (&case.expect, output) {
        (Some(expect), Some(output)) if ended => score(expect, output),
        _ => Vec::new(),
    };
    let judged = run.and_then(|run| run.judged.clone());
    if case.expect.as_ref().is_some_and(|e| e.rubric.is_some()) && output.is_some() && ended {
        checks.push(match &judged {
            Some(verdict) => Check {
                kind: "rubric".into(),
                passed: verdict.passed,
                detail: (!verdict.passed).then(|| verdict.reason.clone()),
            },
            None => {
                Check { kind: "rubric".into(), passed: false, detail: Some("the run was not judged".into()) }
            }
        });
    }
    let completed = run.is_some_and(|run| run.status == RunStatus::Completed);
    let passed = ended.then(|| completed && checks.iter().all(|check| check.passed));
    CaseReport {
        case: index,
        inputs: case.inputs.clone(),
        run: run.map(RunSummary::of),
        reference: reference.map(RunSummary::of),
        replayed_calls,
        divergences,
        checks,
        judged,
        passed,
    }
}

/// The totals of the cases' reports.
pub fn summarize(cases: &[CaseReport]) -> ReportSummary {
    let mut summary = ReportSummary { cases: cases.len(), ..ReportSummary::default() };
    for case in cases {
        if let Some(passed) = case.passed {
            summary.ended += 1;
            summary.passed += usize::from(passed);
        }
        summary.divergences += case.divergences.len();
        summary.replayed_calls += case.replayed_calls;
        if let Some(run) = &case.run {
            summary.tokens += run.tokens;
            summary.cost_usd += run.cost_usd;
            summary.duration_ms += run.duration_ms.unwrap_or_default();
        }
        if let Some(reference) = &case.reference {
            summary.reference_tokens += reference.tokens;
            summary.reference_cost_usd += reference.cost_usd;
            summary.reference_duration_ms += reference.duration_ms.unwrap_or_default();
        }
    }
    if summary.ended > 0 {
        summary.pass_rate = summary.passed as f64 / summary.ended as f64;
    }
    summary
}

/// A stored dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub cases: Vec<DatasetCase>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A stored evaluation (its report is built when it is read).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub id: Uuid,
    pub crew: String,
    pub crew_ref: String,
    pub crew_version: i32,
    pub mode: EvaluationMode,
    pub safe_tools: Vec<String>,
    /// The model that judges cases with a rubric (`None`: the default model).
    pub judge_model: Option<String>,
    pub dataset_id: Option<Uuid>,
    pub cases: Vec<DatasetCase>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn replay() -> Replay {
        Replay {
            recorded: vec![
                RecordedCall {
                    tool: "lookup".into(),
                    arguments: json!({"q": "tides", "n": 1}),
                    outcome: Ok("6am".into()),
                },
                RecordedCall {
                    tool: "lookup".into(),
                    arguments: json!({"q": "tides", "n": 1}),
                    outcome: Ok("7am".into()),
                },
                RecordedCall {
                    tool: "fetch".into(),
                    arguments: json!({"url": "x"}),
                    outcome: Err("404".into()),
                },
            ],
            safe_tools: vec!["calculator".into()],
        }
    }

    #[test]
    fn a_replay_answers_matching_calls_from_the_recording_and_refuses_the_rest() {
        let replay = replay();
        // Key order and number spelling aside; the first matching call, every time.
        assert_eq!(
            replay.answer("lookup", &json!({"n": 1.0, "q": "tides"})),
            ReplayAnswer::Recorded(&Ok("6am".into()))
        );
        assert_eq!(replay.answer("fetch", &json!({"url": "x"})), ReplayAnswer::Recorded(&Err("404".into())));
        assert!(
            matches!(replay.answer("lookup", &json!({"q": "ebb", "n": 1})), ReplayAnswer::Diverged(m) if m.contains("'lookup'"))
        );
        assert!(matches!(
            replay.answer("fetch", &json!({"url": "x", "extra": true})),
            ReplayAnswer::Diverged(_)
        ));
        assert_eq!(replay.answer("calculator", &json!({"e": "1+1"})), ReplayAnswer::Run);
    }

    #[test]
    fn outputs_are_scored_against_each_expectation() {
        let expect = Expectations {
            exact: Some("{\"tide\": 6}".into()),
            contains: vec!["tide".into(), "moon".into()],
            json_schema: Some(
                json!({"type": "object", "required": ["tide"], "properties": {"tide": {"type": "integer"}}}),
            ),
            rubric: None,
        };
        let checks = score(&expect, " {\"tide\": 6}\n");
        let passed: Vec<(&str, bool)> = checks.iter().map(|c| (c.kind.as_str(), c.passed)).collect();
        assert_eq!(passed, [("exact", true), ("contains", true), ("contains", false), ("json_schema", true)]);
        let checks = score(&expect, "{\"tide\": \"six\"}");
        assert!(checks[3].detail.as_deref().is_some_and(|d| d.contains("tide")), "{checks:?}");
        assert!(score(&expect, "not json")[3].detail.as_deref().is_some_and(|d| d.contains("not JSON")));
    }

    #[test]
    fn a_case_passes_when_its_run_completed_and_every_check_held() {
        let case = DatasetCase {
            inputs: Map::new(),
            expect: Some(Expectations { contains: vec!["6am".into()], ..Expectations::default() }),
            reference: None,
        };
        let mut run = RunFacts {
            id: RunId::new(),
            status: RunStatus::Running,
            output: None,
            error: None,
            tokens: 10,
            cost_usd: 0.5,
            duration_ms: None,
            calls: vec![
                RecordedCall {
                    tool: "lookup".into(),
                    arguments: json!({"q": "tides", "n": 1}),
                    outcome: Ok("6am".into()),
                },
                RecordedCall {
                    tool: "lookup".into(),
                    arguments: json!({"q": "moon"}),
                    outcome: Err("not executed".into()),
                },
            ],
            judged: None,
        };
        let replay = replay();
        let pending = case_report(0, &case, Some(&run), None, Some(&replay));
        assert_eq!((pending.passed, pending.replayed_calls, pending.divergences.len()), (None, 1, 1));
        run.status = RunStatus::Completed;
        run.output = Some(TaskOutput::new("High tide at 6am", None));
        run.duration_ms = Some(120);
        let done = case_report(0, &case, Some(&run), Some(&run), Some(&replay));
        assert_eq!(done.passed, Some(true));
        let summary = summarize(&[done.clone(), pending]);
        assert_eq!((summary.cases, summary.ended, summary.passed, summary.divergences), (2, 1, 1, 2));
        assert_eq!((summary.pass_rate, summary.tokens, summary.reference_tokens), (1.0, 20, 10));
    }

    #[test]
    fn a_rubric_is_a_check_that_holds_when_the_judge_passed_the_output() {
        let rubric = Expectations { rubric: Some("Names the hour.".into()), ..Expectations::default() };
        let case = DatasetCase { inputs: Map::new(), expect: Some(rubric), reference: None };
        let mut run = RunFacts {
            id: RunId::new(),
            status: RunStatus::Completed,
            output: Some(TaskOutput::new("High tide at 6am", None)),
            error: None,
            tokens: 10,
            cost_usd: 0.0,
            duration_ms: Some(5),
            calls: Vec::new(),
            judged: None,
        };
        let unjudged = case_report(0, &case, Some(&run), None, None);
        assert_eq!(unjudged.passed, Some(false));
        assert_eq!(unjudged.checks[0].detail.as_deref(), Some("the run was not judged"));
        let verdict = |passed: bool| EvaluationJudged {
            passed,
            score: Some(if passed { 0.9 } else { 0.2 }),
            reason: "the hour".into(),
            model: "fake/judge".into(),
        };
        run.judged = Some(verdict(true));
        let passed = case_report(0, &case, Some(&run), None, None);
        assert_eq!((passed.passed, passed.checks.len()), (Some(true), 1));
        assert_eq!(passed.judged.as_ref().and_then(|j| j.score), Some(0.9));
        run.judged = Some(verdict(false));
        let failed = case_report(0, &case, Some(&run), None, None);
        assert_eq!((failed.passed, failed.checks[0].detail.as_deref()), (Some(false), Some("the hour")));
        let mut errors = Vec::new();
        let blank = Expectations { rubric: Some(" ".into()), ..Expectations::default() };
        check_expectations(Some(&blank), "expect", &mut errors);
        assert_eq!(errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["expect.rubric"]);
    }
}

/// The body of `POST /v1/datasets`: cases given, or made from past runs.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetRequest {
    /// A name for people (1 to 200 characters, one line).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// The cases (at most 1,000). Give `cases` or `from_runs`.
    #[serde(default)]
    pub cases: Option<Vec<DatasetCase>>,
    /// Past runs of the tenant, each made a case: its inputs, and as reference its id and output
    /// (at most 1,000; each must have ended).
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub from_runs: Option<Vec<Uuid>>,
    /// With `from_runs`: the expectations of every case made.
    #[serde(default)]
    pub expect: Option<Expectations>,
}

/// The body of `POST /v1/evaluations`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluationRequest {
    /// The registered crew to evaluate: `name`, `name@version`, `name@latest` or `name@alias`.
    pub crew: String,
    /// The dataset whose cases it runs. Give `dataset` or `runs`.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub dataset: Option<Uuid>,
    /// Past runs to run again as cases (as a dataset `from_runs` would make them).
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub runs: Option<Vec<Uuid>>,
    /// With `runs`: the expectations of every case.
    #[serde(default)]
    pub expect: Option<Expectations>,
    /// `replay` (the default): tool calls answered from each case's recorded run, model calls
    /// real; every case needs one. `live`: everything real.
    #[serde(default = "replay_mode")]
    pub mode: EvaluationMode,
    /// Tools a replay runs for real when a call diverges from the recording (by default a
    /// divergent call is not executed).
    #[serde(default)]
    pub safe_tools: Vec<String>,
    /// The model that judges the cases with a rubric (`provider/model`, or a model of the default
    /// provider; at most 200 characters); by default the server's default model.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    pub judge_model: Option<String>,
}

/// Check an evaluation's `judge_model` (the text only: a model that is not configured gives each
/// judged case a failed verdict saying so, as an agent's model fails its run).
pub fn check_judge_model(model: Option<&str>, errors: &mut Vec<FieldError>) {
    let Some(model) = model else { return };
    if model.trim().is_empty() || model.chars().count() > 200 {
        errors.push(FieldError::new("judge_model", "must be 1 to 200 characters, not blank"));
    } else if let Err(error) = check_text("judge_model", model, TextKind::Line) {
        errors.push(error);
    }
}

fn replay_mode() -> EvaluationMode {
    EvaluationMode::Replay
}

/// Check a dataset's name and description.
pub fn check_dataset_text(name: &str, description: Option<&str>, errors: &mut Vec<FieldError>) {
    if name.trim().is_empty() || name.chars().count() > 200 {
        errors.push(FieldError::new("name", "must be 1 to 200 characters, not blank"));
    } else if let Err(error) = check_text("name", name, TextKind::Line) {
        errors.push(error);
    }
    if let Some(description) = description {
        if description.chars().count() > 2000 {
            errors.push(FieldError::new("description", "at most 2,000 characters"));
        } else if let Err(error) = check_text("description", description, TextKind::Lines) {
            errors.push(error);
        }
    }
}

//! Datasets and evaluations over HTTP: a dataset made from ten recorded runs, replayed against a
//! changed version of their crew on the fake model without one call reaching the tool server, the
//! one changed prompt's divergence named in the report, the unchanged version replayed clean for
//! comparison, live mode calling the tool for real; cases with a rubric judged by a judge model in
//! their runs (journaled and costed); bad requests; and a replay killed mid-way (`kill -9`, while
//! a case is being judged) that resumes without running a case, or a judged case's judge, twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::domain::schedule::SystemClock;
use agentd::fake_llm::{FakeLlm, Script};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, expect_problem, loopback_egress, problem_fields, TestApp};
use crate::worker::{fake_config, wait_for, wait_requests};

const PLACES: [&str; 10] =
    ["Brest", "Cadiz", "Dover", "Bergen", "Porto", "Gdansk", "Oslo", "Riga", "Malmo", "Cork"];

/// The fake model's script: look the tides up for the place the task names, then report what the
/// tool said. A version whose agent reports "in metric units" asks for Brest's tides in metric: the
/// one call of the changed version that the recorded runs never made.
fn script(extra: Vec<Value>) -> Arc<Script> {
    let mut rules = extra;
    rules.extend([
        json!({"name": "metric Brest", "when": {"system": "in metric units", "message": {"regex": "tides at (Brest)"}, "call": 1},
               "reply": {"tool_calls": [{"name": "lookup", "arguments": {"place": "{{1}}", "units": "metric"}}]}}),
        json!({"name": "look up", "when": {"message": {"regex": "tides at (\\w+)"}, "call": 1},
               "reply": {"tool_calls": [{"name": "lookup", "arguments": {"place": "{{1}}"}}]}}),
        json!({"name": "report", "when": {"call": 2}, "reply": {"text": "Report: {{tool_result}}"}}),
    ]);
    let script = json!({"rules": rules}).to_string();
    Arc::new(Script::from_json(&script).expect("script"))
}

/// The judge's rules (before the crew's): an answer that gives the hour of high tide passes.
fn judge_rules() -> Vec<Value> {
    vec![
        json!({"name": "judge: passes", "when": {"system": "strict evaluator", "message": {"regex": "final answer:\\s*Report: High tide at 6am in (\\w+)"}},
               "reply": {"text": "{\"pass\": true, \"score\": 0.9, \"reason\": \"gives the hour of high tide at {{1}}\"}"}}),
        json!({"name": "judge: fails", "when": {"system": "strict evaluator"},
               "reply": {"text": "{\"pass\": false, \"score\": 0.1, \"reason\": \"gives no hour of high tide\"}"}}),
    ]
}

/// A tide service on loopback that counts its calls.
async fn tide_server() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                format!("High tide at 6am in {}", body["place"].as_str().unwrap_or("?"))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/lookup"), hits)
}

fn tides_crew(tool_url: &str, goal: &str) -> Value {
    json!({
        "name": "tides",
        "agents": [{"name": "a", "role": "Harbour master", "goal": goal, "backstory": "Knows the sea.", "tools": ["lookup"]}],
        "tasks": [{"name": "t", "description": "Find the tides at {place}.", "expected_output": "A tide report", "agent": "a"}],
        "tools": [{"name": "lookup", "description": "Look up the tides of a place",
                   "parameters": {"type": "object", "properties": {"place": {"type": "string"}, "units": {"type": "string"}}, "required": ["place"]},
                   "http": {"url": tool_url, "timeout_ms": 5000}}]
    })
}

async fn wait_evaluation(app: &TestApp, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let report = expect_json(app.get(&format!("/v1/evaluations/{id}")).await, StatusCode::OK).await;
        if report["status"] == "completed" {
            return report;
        }
        assert!(Instant::now() < deadline, "the evaluation never ended: {report}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The report's cases as (place, passed, divergences).
fn outcomes(report: &Value) -> Vec<(String, bool, usize)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let place = case["inputs"]["place"].as_str().expect("place").to_owned();
            let passed = case["passed"].as_bool().expect("ended");
            (place, passed, case["divergences"].as_array().expect("divergences").len())
        })
        .collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_changed_version_replayed_on_ten_recorded_runs_diverges_where_its_prompt_changed(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_script(Some(script(Vec::new())));
    let (tool_url, hits) = tide_server().await;
    let mut config = fake_config(&fake);
    config.tool_egress = loopback_egress();
    let app = TestApp::spawn_full(pool.clone(), config, Arc::new(SystemClock)).await;
    let v1 = tides_crew(&tool_url, "Report the tides");
    expect_json(app.put_json("/v1/crews/tides", &v1).await, StatusCode::CREATED).await;

    // Production traffic: ten runs, each a real call of the tide service.
    let mut recorded = Vec::new();
    for place in PLACES {
        let body = json!({"crew": "tides", "inputs": {"place": place}});
        let run = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
        recorded.push(run["id"].as_str().expect("id").to_owned());
    }
    for id in &recorded {
        let run = wait_for(&app, id, &["completed", "failed"]).await;
        assert_eq!(run["status"], "completed", "{run}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 10);

    let dataset = json!({"name": "harbours", "from_runs": recorded, "expect": {"contains": ["High tide"]}});
    let dataset = expect_json(app.post_json("/v1/datasets", &dataset).await, StatusCode::CREATED).await;
    assert_eq!(dataset["case_count"], 10);
    assert_eq!(dataset["cases"][0]["reference"]["run_id"], recorded[0].as_str());
    assert_eq!(dataset["cases"][0]["reference"]["output"], "Report: High tide at 6am in Brest");
    let dataset_id = dataset["id"].as_str().expect("id").to_owned();

    // The change under test: a new version whose agent reports in metric units.
    let v2 = tides_crew(&tool_url, "Report the tides in metric units");
    expect_json(app.put_json("/v1/crews/tides", &v2).await, StatusCode::OK).await;

    let mut reports = Vec::new();
    for crew in ["tides@2", "tides@1"] {
        let body = json!({"crew": crew, "dataset": dataset_id, "mode": "replay"});
        let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
        assert_eq!((started["status"].as_str(), started["case_count"].as_i64()), (Some("running"), Some(10)));
        let id = started["id"].as_str().expect("id").to_owned();
        reports.push(wait_evaluation(&app, &id).await);
    }
    let (changed, unchanged) = (&reports[0], &reports[1]);
    eprintln!(
        "tides@2 (changed) on the dataset:\n{}",
        serde_json::to_string_pretty(&changed["summary"]).expect("json")
    );
    eprintln!(
        "tides@1 (recorded) on the dataset:\n{}",
        serde_json::to_string_pretty(&unchanged["summary"]).expect("json")
    );
    // Not one call reached the tide service: every call was answered from the recordings or refused.
    assert_eq!(hits.load(Ordering::SeqCst), 10, "a replay never calls the tool");

    assert_eq!(changed["crew_version"], 2);
    let expected: Vec<(String, bool, usize)> =
        PLACES.iter().map(|p| (p.to_string(), *p != "Brest", usize::from(*p == "Brest"))).collect();
    assert_eq!(outcomes(changed), expected);
    let brest = &changed["cases"][0];
    assert_eq!(
        brest["divergences"],
        json!([{"tool": "lookup", "arguments": {"place": "Brest", "units": "metric"}, "executed": false}])
    );
    assert_eq!(brest["checks"][0]["passed"], false);
    assert!(brest["run"]["output"].as_str().is_some_and(|o| o.contains("not executed")), "{brest}");
    assert_eq!(brest["reference"]["output"], "Report: High tide at 6am in Brest");
    let summary = &changed["summary"];
    assert_eq!(
        (
            summary["cases"].as_i64(),
            summary["passed"].as_i64(),
            summary["divergences"].as_i64(),
            summary["replayed_calls"].as_i64()
        ),
        (Some(10), Some(9), Some(1), Some(9))
    );
    assert_eq!(summary["pass_rate"], 0.9);
    // Each case is an ordinary run of the version, tied to the evaluation.
    let dover = &changed["cases"][2]["run"];
    let run = expect_json(
        app.get(&format!("/v1/runs/{}", dover["run_id"].as_str().expect("id"))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (run["crew_version"].as_i64(), run["metadata"]["evaluation_id"].clone()),
        (Some(2), changed["id"].clone())
    );
    assert_eq!(run["output"]["raw"], "Report: High tide at 6am in Dover");
    // Tokens are counted against the reference's.
    assert_eq!(summary["tokens"], summary["reference_tokens"], "{summary}");

    // The recorded version replays clean.
    assert!(outcomes(unchanged).iter().all(|(_, passed, divergences)| *passed && *divergences == 0));
    assert_eq!(unchanged["summary"]["pass_rate"], 1.0);

    // Live: everything real, the changed call included.
    let body = json!({"crew": "tides@2", "runs": [recorded[0], recorded[1]], "mode": "live"});
    let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
    let live = wait_evaluation(&app, started["id"].as_str().expect("id")).await;
    assert_eq!(hits.load(Ordering::SeqCst), 12, "live mode calls the tool");
    assert_eq!(live["summary"]["divergences"], 0, "live mode compares nothing with the recording");
    assert_eq!(live["cases"][0]["run"]["output"], "Report: High tide at 6am in Brest");

    let listed = expect_json(app.get("/v1/evaluations").await, StatusCode::OK).await;
    assert_eq!(listed["evaluations"].as_array().map(Vec::len), Some(3));
    let listed = expect_json(app.get("/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(listed["datasets"][0]["case_count"], 10);
    assert!(listed["datasets"][0].get("cases").is_none());

    // Deleting the dataset leaves the evaluations' reports whole.
    assert_eq!(app.delete(&format!("/v1/datasets/{dataset_id}")).await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get(&format!("/v1/datasets/{dataset_id}")).await, StatusCode::NOT_FOUND).await;
    let again = expect_json(
        app.get(&format!("/v1/evaluations/{}", changed["id"].as_str().expect("id"))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(outcomes(&again), outcomes(changed));
}

/// A rubric is judged in each case's run, before it completes, by the evaluation's judge model:
/// the verdict is `evaluation.judged` and the case's `rubric` check, the call is journaled in the
/// run (`#judge`) and its tokens counted in the run's; a judge model that is not configured fails
/// the check with the reason, and the run still completes.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_rubric_is_judged_in_each_case_run_by_the_judge_model_and_costed_with_it(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_script(Some(script(judge_rules())));
    let (tool_url, hits) = tide_server().await;
    let mut config = fake_config(&fake);
    config.tool_egress = loopback_egress();
    let app = TestApp::spawn_full(pool.clone(), config, Arc::new(SystemClock)).await;
    expect_json(
        app.put_json("/v1/crews/tides", &tides_crew(&tool_url, "Report the tides")).await,
        StatusCode::CREATED,
    )
    .await;
    let mut recorded = Vec::new();
    for place in ["Brest", "Cadiz"] {
        let body = json!({"crew": "tides", "inputs": {"place": place}});
        let run = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
        recorded.push(run["id"].as_str().expect("id").to_owned());
    }
    for id in &recorded {
        assert_eq!(wait_for(&app, id, &["completed", "failed"]).await["status"], "completed");
    }
    // The metric version's Brest call diverges: its report says the call was not executed.
    let v2 = tides_crew(&tool_url, "Report the tides in metric units");
    expect_json(app.put_json("/v1/crews/tides", &v2).await, StatusCode::OK).await;
    let before = fake.requests().len();
    let body = json!({"crew": "tides@2", "runs": recorded, "mode": "replay", "judge_model": "openai/judge-1",
                      "expect": {"rubric": "The report gives the hour of high tide."}});
    let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
    assert_eq!(started["judge_model"], "openai/judge-1");
    let report = wait_evaluation(&app, started["id"].as_str().expect("id")).await;
    assert_eq!(hits.load(Ordering::SeqCst), 2, "the replay called no tool");

    let (brest, cadiz) = (&report["cases"][0], &report["cases"][1]);
    assert_eq!(
        cadiz["judged"],
        json!({"passed": true, "score": 0.9, "reason": "gives the hour of high tide at Cadiz", "model": "openai/judge-1"})
    );
    assert_eq!(cadiz["checks"], json!([{"kind": "rubric", "passed": true}]));
    assert_eq!(cadiz["passed"], true);
    assert_eq!(
        (
            brest["judged"]["passed"].as_bool(),
            brest["checks"][0]["detail"].as_str(),
            brest["passed"].as_bool()
        ),
        (Some(false), Some("gives no hour of high tide"), Some(false)),
        "{brest}"
    );
    assert_eq!(
        (report["summary"]["passed"].as_i64(), report["summary"]["pass_rate"].as_f64()),
        (Some(1), Some(0.5))
    );

    // Two model calls and the judge's per case; the judge asked the judge model.
    let requests = fake.requests();
    let judged: Vec<&Value> =
        requests[before..].iter().filter(|r| r.to_string().contains("strict evaluator")).collect();
    assert_eq!(judged.len(), 2);
    assert!(judged.iter().all(|r| r["model"] == "judge-1"), "{judged:?}");
    assert_eq!(requests.len() - before, 6);

    // In the run: llm.started (purpose judge) and evaluation.judged before run.completed, the
    // judge's conversation journaled, its usage a line of its own and part of the run's tokens.
    let run_id = cadiz["run"]["run_id"].as_str().expect("id");
    let events =
        expect_json(app.get(&format!("/v1/runs/{run_id}/events?limit=100")).await, StatusCode::OK).await;
    let types: Vec<&str> =
        events["events"].as_array().expect("events").iter().filter_map(|e| e["type"].as_str()).collect();
    let at =
        |ty: &str| types.iter().rposition(|t| *t == ty).unwrap_or_else(|| panic!("no {ty} in {types:?}"));
    assert!(
        at("task.completed") < at("evaluation.judged") && at("evaluation.judged") < at("run.completed"),
        "{types:?}"
    );
    assert_eq!(types.iter().filter(|t| **t == "evaluation.judged").count(), 1);
    let judge_call = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "llm.started" && e["data"]["purpose"] == "judge")
        .unwrap_or_else(|| panic!("no judge call in {events}"));
    assert_eq!((judge_call["agent"].as_str(), judge_call["task"].as_str()), (Some("#judge"), Some("t")));
    let messages = expect_json(app.get(&format!("/v1/runs/{run_id}/messages")).await, StatusCode::OK).await;
    let judge_messages =
        messages["messages"].as_array().expect("messages").iter().filter(|m| m["agent"] == "#judge").count();
    assert_eq!(judge_messages, 3, "system, question, verdict: {messages}");
    let usage: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT agent, model, llm_calls FROM run_usage WHERE run_id = $1::uuid ORDER BY agent",
    )
    .bind(run_id)
    .fetch_all(&pool)
    .await
    .expect("usage");
    assert_eq!(usage.len(), 2, "{usage:?}");
    assert_eq!((usage[0].0.as_str(), usage[0].1.as_str(), usage[0].2), ("#judge", "openai/judge-1", 1));
    assert!(cadiz["run"]["tokens"].as_i64() > cadiz["reference"]["tokens"].as_i64(), "{cadiz}");

    // A judge model that is not configured: the check fails saying why; the run completes.
    let body = json!({"crew": "tides@1", "runs": [recorded[1]], "mode": "replay", "judge_model": "nowhere/judge",
                      "expect": {"rubric": "The report gives the hour of high tide."}});
    let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
    let report = wait_evaluation(&app, started["id"].as_str().expect("id")).await;
    let case = &report["cases"][0];
    assert_eq!(case["run"]["status"], "completed");
    assert_eq!(case["passed"], false);
    assert!(
        case["checks"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("judge could not be called") && d.contains("nowhere")),
        "{case}"
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn bad_datasets_and_evaluations_are_refused_with_the_field_that_is_wrong(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = TestApp::spawn_full(pool, fake_config(&fake), Arc::new(SystemClock)).await;
    let crew = tides_crew("http://127.0.0.1:9/lookup", "Report the tides");
    expect_json(app.put_json("/v1/crews/tides", &crew).await, StatusCode::CREATED).await;
    let given =
        json!({"name": "given", "cases": [{"inputs": {"place": "Oslo"}, "expect": {"exact": "High tide"}}]});
    let given = expect_json(app.post_json("/v1/datasets", &given).await, StatusCode::CREATED).await;
    let given = given["id"].as_str().expect("id").to_owned();

    for (body, field) in [
        (json!({"name": "x"}), ""),
        (json!({"name": "x", "cases": [], }), "cases"),
        (json!({"name": " ", "cases": [{"inputs": {}}]}), "name"),
        (json!({"name": "x", "cases": [{"inputs": {}, "expect": {}}]}), "cases[0].expect"),
        (
            json!({"name": "x", "cases": [{"inputs": {}, "expect": {"json_schema": {"type": "nonsense"}}}]}),
            "cases[0].expect.json_schema.type",
        ),
        (
            json!({"name": "x", "cases": [{"inputs": {}, "expect": {"rubric": "  "}}]}),
            "cases[0].expect.rubric",
        ),
        (json!({"name": "x", "from_runs": [uuid::Uuid::now_v7()]}), "from_runs[0]"),
        (json!({"name": "x", "cases": [{"inputs": {}}], "from_runs": []}), ""),
        (
            json!({"name": "x", "cases": [{"inputs": {}, "reference": {"run_id": uuid::Uuid::now_v7()}}]}),
            "cases[0].reference",
        ),
    ] {
        let problem =
            expect_problem(app.post_json("/v1/datasets", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    for (body, status, field) in [
        (json!({"crew": "tides", "dataset": given}), StatusCode::UNPROCESSABLE_ENTITY, Some("cases[0]")),
        (
            json!({"crew": "tides", "dataset": given, "mode": "sometimes"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("mode"),
        ),
        (json!({"crew": "tides", "dataset": given, "runs": []}), StatusCode::UNPROCESSABLE_ENTITY, Some("")),
        (json!({"crew": "tides@0", "dataset": given}), StatusCode::UNPROCESSABLE_ENTITY, Some("crew")),
        (
            json!({"crew": "tides", "dataset": given, "mode": "live", "judge_model": "a\nb"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("judge_model"),
        ),
        (
            json!({"crew": "tides", "dataset": given, "mode": "live", "safe_tools": ["a b"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("safe_tools[0]"),
        ),
        (json!({"crew": "nothing", "dataset": given, "mode": "live"}), StatusCode::NOT_FOUND, None),
        (json!({"crew": "tides@staging", "dataset": given, "mode": "live"}), StatusCode::NOT_FOUND, None),
        (
            json!({"crew": "tides", "dataset": uuid::Uuid::now_v7(), "mode": "live"}),
            StatusCode::NOT_FOUND,
            None,
        ),
    ] {
        let problem = expect_problem(app.post_json("/v1/evaluations", &body).await, status).await;
        if let Some(field) = field {
            assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
        }
    }
    // A case the crew cannot run (a missing input) names the case.
    let missing = json!({"name": "y", "cases": [{"inputs": {}}]});
    let missing = expect_json(app.post_json("/v1/datasets", &missing).await, StatusCode::CREATED).await;
    let body = json!({"crew": "tides", "dataset": missing["id"], "mode": "live"});
    let problem =
        expect_problem(app.post_json("/v1/evaluations", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).keys().any(|k| k.starts_with("cases[0].")), "{problem}");
    expect_problem(
        app.get(&format!("/v1/evaluations/{}", uuid::Uuid::now_v7())).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(app.get("/v1/evaluations/not-an-id").await, StatusCode::BAD_REQUEST).await;
}

/// An evaluation's runs count against the tenant's `max_queued` like a batch kickoff's: all or
/// none, 429 with Retry-After and nothing stored when they do not fit. A case whose run is
/// cancelled ends not passed, and the evaluation completes when the other cases do.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_evaluation_is_held_to_max_queued_and_a_cancelled_case_ends_failed(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(agentd::fake_llm::FakeReply::text("High tide at 6am")));
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse("root-of-evaluations");
    // No workers yet: the cases stay queued.
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some("root-of-evaluations"));
    expect_json(
        root.post_json("/v1/tenants", &json!({"name": "harbour", "max_queued": 2})).await,
        StatusCode::CREATED,
    )
    .await;
    let key = json!({"tenant": "harbour", "name": "evaluator", "scopes": ["read", "kickoff", "manage"]});
    let key = expect_json(root.post_json("/v1/keys", &key).await, StatusCode::CREATED).await;
    let app = root.as_key(key["key"].as_str());
    expect_json(
        app.put_json("/v1/crews/tides", &tides_crew("http://127.0.0.1:9/lookup", "Report the tides")).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = |places: &[&str]| {
        let cases: Vec<Value> = places
            .iter()
            .map(|p| json!({"inputs": {"place": p}, "expect": {"contains": ["High tide"]}}))
            .collect();
        json!({"name": "places", "cases": cases})
    };
    let three = expect_json(
        app.post_json("/v1/datasets", &dataset(&["Oslo", "Riga", "Cork"])).await,
        StatusCode::CREATED,
    )
    .await;
    let refused = app
        .post_json("/v1/evaluations", &json!({"crew": "tides", "dataset": three["id"], "mode": "live"}))
        .await;
    let wait: u64 = refused.headers()["retry-after"].to_str().expect("ascii").parse().expect("seconds");
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("max_queued")), "{problem}");
    let listed = expect_json(app.get("/v1/evaluations").await, StatusCode::OK).await;
    assert_eq!(listed["evaluations"], json!([]), "nothing stored");
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs").fetch_one(&pool).await.expect("count");
    assert_eq!(runs, 0);

    let two =
        expect_json(app.post_json("/v1/datasets", &dataset(&["Oslo", "Riga"])).await, StatusCode::CREATED)
            .await;
    let body = json!({"crew": "tides", "dataset": two["id"], "mode": "live"});
    let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
    let id = started["id"].as_str().expect("id").to_owned();
    let oslo = started["cases"][0]["run"]["run_id"].as_str().expect("run").to_owned();
    expect_json(app.post_json(&format!("/v1/runs/{oslo}/cancel"), &json!({})).await, StatusCode::ACCEPTED)
        .await;
    let report = expect_json(app.get(&format!("/v1/evaluations/{id}")).await, StatusCode::OK).await;
    assert_eq!(
        (
            report["status"].as_str(),
            report["cases"][0]["passed"].as_bool(),
            report["cases"][1]["passed"].as_bool()
        ),
        (Some("running"), Some(false), None),
        "{report}"
    );
    assert_eq!(report["cases"][0]["run"]["status"], "cancelled");

    let _workers =
        crate::worker::start_workers(&pool, &config, crate::worker::fast_settings(2, Duration::from_secs(5)));
    let report = wait_evaluation(&app, &id).await;
    assert_eq!(
        (
            report["summary"]["ended"].as_i64(),
            report["summary"]["passed"].as_i64(),
            report["summary"]["pass_rate"].as_f64()
        ),
        (Some(2), Some(1), Some(0.5)),
        "{report}"
    );
    assert_eq!(report["cases"][1]["run"]["output"], "High tide at 6am");
}

#[sqlx::test(migrations = false)]
async fn a_replay_killed_mid_way_resumes_without_running_a_case_twice(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_script(Some(script(Vec::new())));
    let (tool_url, hits) = tide_server().await;
    let base_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-evaluation-test"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
    ];
    let first = Agentd::start(&url, &env);
    let app = TestApp::at(&first.base);
    expect_json(
        app.put_json("/v1/crews/tides", &tides_crew(&tool_url, "Report the tides")).await,
        StatusCode::CREATED,
    )
    .await;
    let mut recorded = Vec::new();
    for place in ["Brest", "Cadiz", "Cork"] {
        let body = json!({"crew": "tides", "inputs": {"place": place}});
        let run = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
        recorded.push(run["id"].as_str().expect("id").to_owned());
    }
    for id in &recorded {
        crate::crash::wait_done(&first.base, id).await;
    }
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    // Cork's judge is held past the crash (once: the next replica's request is answered).
    let held = json!({"name": "held", "when": {"system": "strict evaluator", "message": {"regex": "in Cork"}}, "times": 1,
                      "reply": {"text": "never delivered", "delay_ms": 60000}});
    let mut rules = vec![held];
    rules.extend(judge_rules());
    fake.set_script(Some(script(rules)));
    let before = fake.requests().len();
    let body = json!({"crew": "tides", "runs": recorded, "mode": "replay",
                      "expect": {"rubric": "The report gives the hour of high tide."}});
    let started = expect_json(app.post_json("/v1/evaluations", &body).await, StatusCode::ACCEPTED).await;
    let id = started["id"].as_str().expect("id").to_owned();
    // Brest and Cadiz completed and judged, and Cork's judge asked (and held).
    wait_requests(&fake, before + 9).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let report = expect_json(app.get(&format!("/v1/evaluations/{id}")).await, StatusCode::OK).await;
        let ended: Vec<bool> =
            report["cases"].as_array().expect("cases").iter().map(|c| !c["passed"].is_null()).collect();
        if ended == [true, true, false] {
            break;
        }
        assert!(Instant::now() < deadline, "Brest and Cadiz never completed: {report}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.signal("-KILL").await;

    let second = Agentd::start(&url, &env);
    let app = TestApp::at(&second.base);
    let report = wait_evaluation(&app, &id).await;
    assert_eq!(report["summary"]["passed"], 3, "{report}");
    assert_eq!(hits.load(Ordering::SeqCst), 3, "the replay called no tool, before the crash or after");
    // One run per case, each completed once: Cork's resumed at attempt 2 with its call journaled;
    // the others, done before the crash, were not run again.
    let runs: Vec<(i32, i32, String)> = sqlx::query_as(
        "SELECT evaluation_case, attempt, status FROM runs WHERE evaluation_id = $1::uuid ORDER BY evaluation_case",
    )
    .bind(&id)
    .fetch_all(&pool)
    .await
    .expect("runs");
    let attempts: Vec<(i32, String)> = runs.iter().map(|(_, a, s)| (*a, s.clone())).collect();
    let done = ("completed".to_owned(), 1);
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(attempts[..2].iter().all(|(a, s)| (s.clone(), *a) == done), "{runs:?}");
    assert_eq!(attempts[2], (2, "completed".to_owned()), "{runs:?}");
    // The model saw 9 requests before the crash and Cork's judge once more after it: no case's
    // call was made again, nor a judged case's judge.
    assert_eq!(fake.requests().len(), before + 10);
    let cork = &report["cases"][2];
    assert_eq!(
        (cork["replayed_calls"].as_i64(), cork["run"]["output"].as_str()),
        (Some(1), Some("Report: High tide at 6am in Cork"))
    );
    assert_eq!(cork["judged"]["reason"], "gives the hour of high tide at Cork", "{cork}");
    // Each run announced one verdict, and journaled the judge's question once.
    let counts: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT (SELECT count(*) FROM events AS e WHERE e.run_id = r.id AND e.type = 'evaluation.judged'),
                (SELECT count(*) FROM messages AS m WHERE m.run_id = r.id AND m.agent = '#judge')
           FROM runs AS r WHERE r.evaluation_id = $1::uuid ORDER BY r.evaluation_case",
    )
    .bind(&id)
    .fetch_all(&pool)
    .await
    .expect("counts");
    assert_eq!(counts, [(1, 3), (1, 3), (1, 3)]);
}

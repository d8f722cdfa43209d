//! Forks and retries over HTTP: a fork at the second of three tasks makes no call for the first
//! (the fake model's recorded requests show it), applies a changed model and task, and carries the
//! first task's journal over; a fork that does not fit is refused with its reason; a failed run,
//! retried once its provider is back, completes without repeating its completed calls.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::memory::{event, events, user_prompt};
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{event_types, fake_config, fast_settings, start_workers, wait_for, wait_requests};

/// Three tasks by one writer; the first uses the calculator.
fn three_tasks() -> Value {
    json!({
        "name": "report",
        "agents": [{"name": "w", "role": "Writer", "goal": "Write about {topic}", "backstory": "Careful.",
                    "tools": ["calculator"], "llm": "openai/gpt-4o-mini"}],
        "tasks": [
            {"name": "research", "description": "Research {topic}.", "expected_output": "Facts", "agent": "w"},
            {"name": "draft", "description": "Draft a report on {topic}.", "expected_output": "A draft", "agent": "w"},
            {"name": "polish", "description": "Polish the draft.", "expected_output": "A report", "agent": "w"}
        ]
    })
}

fn id(run: &Value) -> String {
    run["id"].as_str().expect("id").to_owned()
}

fn models(fake: &FakeLlm, from: usize) -> Vec<String> {
    fake.requests()[from..].iter().map(|r| r["model"].as_str().expect("model").to_owned()).collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_fork_at_the_second_of_three_tasks_repeats_nothing_of_the_first_and_applies_its_changes(
    pool: PgPool,
) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("calc-1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("Research: the answer is 42."),
        FakeReply::text("Draft one."),
        FakeReply::text("Report one."),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let original = app.kickoff(&three_tasks(), json!({"topic": "tides"})).await;
    let original = wait_for(&app, &id(&original), &["completed", "failed"]).await;
    assert_eq!(original["status"], "completed", "{original}");
    assert_eq!(fake.requests().len(), 4);

    // Fork at `draft` on a bigger model, with another polish and topic.
    fake.push([FakeReply::text("Draft two."), FakeReply::text("Report two.")]);
    let body = json!({
        "at": {"task": "draft"},
        "changes": {
            "inputs": {"topic": "tidal power"},
            "agents": {"w": {"llm": "openai/gpt-4o"}},
            "tasks": {"polish": {"description": "Polish the draft, in three sentences."}}
        }
    });
    let response = app.post_json(&format!("/v1/runs/{}/fork", id(&original)), &body).await;
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let fork = expect_json(response, StatusCode::ACCEPTED).await;
    assert_eq!(location, format!("/v1/runs/{}", id(&fork)));
    assert_eq!(fork["forked_from"], json!({"run_id": id(&original), "task": "draft"}), "{fork}");
    assert_eq!(fork["tasks"][0]["status"], "completed", "{fork}");
    let fork = wait_for(&app, &id(&fork), &["completed", "failed"]).await;
    assert_eq!(fork["status"], "completed", "{fork}");

    // Two calls, both on the changed model, none for `research`; its output carried over.
    assert_eq!(models(&fake, 4), ["gpt-4o", "gpt-4o"]);
    assert!(user_prompt(&fake, 4).contains("Draft a report on tidal power."), "{}", user_prompt(&fake, 4));
    assert!(
        user_prompt(&fake, 4).contains("Research: the answer is 42."),
        "the draft sees research's output"
    );
    assert!(user_prompt(&fake, 5).contains("in three sentences"), "{}", user_prompt(&fake, 5));
    let outputs: Vec<&str> = fork["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["output"]["raw"].as_str().expect("raw"))
        .collect();
    assert_eq!(outputs, ["Research: the answer is 42.", "Draft two.", "Report two."]);
    assert_eq!(fork["output"]["raw"], "Report two.");
    assert_eq!(fork["usage"]["llm_calls"], 2, "only the fork's own calls count: {fork}");

    // The first task's journal came along: its tool call, its messages, its events.
    let calls =
        expect_json(app.get(&format!("/v1/runs/{}/tool-calls", id(&fork))).await, StatusCode::OK).await;
    let calls = calls["tool_calls"].as_array().expect("tool_calls").clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0]["tool"].as_str(), calls[0]["task"].as_str()),
        (Some("calculator"), Some("research"))
    );
    let messages =
        expect_json(app.get(&format!("/v1/runs/{}/messages", id(&fork))).await, StatusCode::OK).await;
    let tasks: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["task"].as_str())
        .collect();
    assert!(tasks.first() == Some(&"research") && tasks.contains(&"draft"), "{tasks:?}");
    let log = events(&app, &id(&fork)).await;
    let types = event_types(&log);
    assert_eq!(&types[..3], ["run.queued", "run.forked", "task.started"], "{types:?}");
    assert_eq!(
        event(&log, "run.forked")["data"],
        json!({"run_id": id(&original), "task": "draft", "tasks": ["research"]})
    );
    let seqs: Vec<i64> =
        log["events"].as_array().expect("events").iter().map(|e| e["seq"].as_i64().expect("seq")).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "dense seqs");
    let started: Vec<&str> = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "task.started")
        .filter_map(|e| e["task"].as_str())
        .collect();
    assert_eq!(started, ["research", "draft", "polish"]);
    // The original is as it was.
    let again = expect_json(app.get(&format!("/v1/runs/{}", id(&original))).await, StatusCode::OK).await;
    assert_eq!(again["output"]["raw"], "Report one.");
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn forks_that_do_not_fit_are_refused_with_their_reason(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.llm_max_attempts = 1;
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let fork = |run: String, body: Value| {
        let app = &app;
        async move { app.post_json(&format!("/v1/runs/{run}/fork"), &body).await }
    };

    // A run that has not ended: 409.
    let queued = app.kickoff(&three_tasks(), json!({"topic": "tides"})).await;
    let problem =
        expect_problem(fork(id(&queued), json!({"at": {"task": "draft"}})).await, StatusCode::CONFLICT).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("not ended")), "{problem}");
    expect_problem(
        fork(uuid::Uuid::now_v7().to_string(), json!({"at": {"task": "draft"}})).await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // A run that failed in `draft`: forking after it is a 409, at it works.
    fake.push([FakeReply::text("Research done."), FakeReply::error(400, "bad request")]);
    let cancelled = app.post_json(&format!("/v1/runs/{}/cancel", id(&queued)), &json!({})).await;
    assert_eq!(expect_json(cancelled, StatusCode::ACCEPTED).await["status"], "cancelled");
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let failed = app.kickoff(&three_tasks(), json!({"topic": "tides"})).await;
    let failed = wait_for(&app, &id(&failed), &["failed", "completed"]).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let problem =
        expect_problem(fork(id(&failed), json!({"at": {"task": "polish"}})).await, StatusCode::CONFLICT)
            .await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("'draft'")), "{problem}");

    let invalid = [
        (json!({"at": {"task": "nope"}}), "at.task"),
        (
            json!({"at": {"task": "draft"}, "changes": {"tasks": {"research": {"description": "x"}}}}),
            "changes.tasks.research",
        ),
        (
            json!({"at": {"task": "draft"}, "changes": {"agents": {"ghost": {"goal": "x"}}}}),
            "changes.agents.ghost",
        ),
        (
            json!({"at": {"task": "draft"}, "changes": {"agents": {"w": {"llm": "nowhere/model"}}}}),
            "crew.agents[0].llm",
        ),
        (
            json!({"at": {"task": "draft"}, "changes": {"agents": {"w": {"max_iter": "many"}}}}),
            "changes.agents[0].max_iter",
        ),
        (json!({"at": {"task": "draft"}, "changes": {"inputs": {"topic": null}}}), "inputs.topic"),
        (json!({"at": {"task": "draft"}, "later": true}), "later"),
    ];
    for (body, field) in invalid {
        let problem =
            expect_problem(fork(id(&failed), body.clone()).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    let no_task =
        expect_problem(fork(id(&failed), json!({"changes": {}})).await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    assert!(no_task["detail"].as_str().is_some_and(|d| d.contains("`at`")), "{no_task}");

    // Forking at the failed task continues with research taken over.
    fake.push([FakeReply::text("Draft."), FakeReply::text("Report.")]);
    let before = fake.requests().len();
    let forked =
        expect_json(fork(id(&failed), json!({"at": {"task": "draft"}})).await, StatusCode::ACCEPTED).await;
    let forked = wait_for(&app, &id(&forked), &["completed", "failed"]).await;
    assert_eq!(forked["status"], "completed", "{forked}");
    assert_eq!(fake.requests().len(), before + 2);
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_failed_run_retried_once_its_provider_is_back_repeats_no_completed_call(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    // research: a calculator call and an answer; then the provider is down for draft.
    fake.push([
        FakeReply::tool_calls(&[("calc-1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("Research: 42."),
        FakeReply::error(503, "the provider is down"),
    ]);
    let mut config = fake_config(&fake);
    config.llm_max_attempts = 1;
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let run = app.kickoff(&three_tasks(), json!({"topic": "tides"})).await;
    let failed = wait_for(&app, &id(&run), &["failed", "completed"]).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let statuses: Vec<&str> =
        failed["tasks"].as_array().expect("tasks").iter().filter_map(|t| t["status"].as_str()).collect();
    assert_eq!(statuses, ["completed", "failed", "pending"]);
    wait_requests(&fake, 3).await;

    // A run that does not exist is not found (one that has not failed: below).
    let missing = format!("/v1/runs/{}/retry", uuid::Uuid::now_v7());
    expect_problem(app.post_json(&missing, &json!({})).await, StatusCode::NOT_FOUND).await;

    // The provider is back: the retry completes, making only the calls that had not been made.
    fake.push([FakeReply::text("Draft."), FakeReply::text("Report.")]);
    let retried = app.post_json(&format!("/v1/runs/{}/retry", id(&run)), &json!({})).await;
    let retried = expect_json(retried, StatusCode::ACCEPTED).await;
    assert!(["queued", "running"].contains(&retried["status"].as_str().unwrap_or_default()), "{retried}");
    assert_eq!(retried["error"], Value::Null);
    let done = wait_for(&app, &id(&run), &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"]["raw"], "Report.");
    assert_eq!(fake.requests().len(), 5, "no call of research again");
    assert!(user_prompt(&fake, 3).contains("Research: 42."), "{}", user_prompt(&fake, 3));
    let calls =
        expect_json(app.get(&format!("/v1/runs/{}/tool-calls", id(&run))).await, StatusCode::OK).await;
    assert_eq!(calls["tool_calls"].as_array().map(Vec::len), Some(1), "{calls}");
    let log = events(&app, &id(&run)).await;
    let retried_event = event(&log, "run.retried");
    assert_eq!(retried_event["data"]["error"]["kind"], failed["error"]["kind"], "{retried_event}");
    let types = event_types(&log);
    let after = types.iter().position(|t| t == "run.retried").expect("retried");
    assert_eq!(types[after - 1], "run.failed");
    assert_eq!(types[after + 1], "run.started");
    assert_eq!(types.last().map(String::as_str), Some("run.completed"));
    // Completed now: a second retry is refused (only a failed run is retried).
    expect_problem(
        app.post_json(&format!("/v1/runs/{}/retry", id(&run)), &json!({})).await,
        StatusCode::CONFLICT,
    )
    .await;
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

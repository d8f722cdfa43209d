//! Bounded runs: a crew over the server's size limits is a 422 naming the limit; a run whose
//! reply, task output or journal grows over its limit fails with `error.kind = "limit"`; and a
//! run's resource stays small whatever its outputs, which its task resource serves whole.

use super::*;
use crate::support::{expect_problem, problem_fields};
use agentd::domain::{CrewLimits, RunLimits};

/// A crew of `agents` agents and `tasks` tasks (task i by agent i mod agents).
fn crew_of(agents: usize, tasks: usize) -> Value {
    let agents: Vec<Value> = (0..agents)
        .map(|i| json!({"name": format!("a{i}"), "role": "R", "goal": "G", "backstory": "B", "llm": "openai/test-model"}))
        .collect();
    let count = agents.len();
    let tasks: Vec<Value> = (0..tasks)
        .map(|i| json!({"name": format!("t{i}"), "description": "D", "expected_output": "E", "agent": format!("a{}", i % count)}))
        .collect();
    json!({"name": "big", "agents": agents, "tasks": tasks})
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_crew_over_the_size_limits_is_a_422_naming_the_limit(pool: PgPool) {
    let h = Harness::start(pool.clone(), true).await;
    let limits = CrewLimits::default();
    // A real crew is far below every limit.
    let accepted = h.app.post_json("/v1/kickoffs", &json!({"crew": crew_of(3, 5), "inputs": {}})).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);

    let cases = [
        (crew_of(limits.max_agents + 1, 1), "crew.agents", "max_agents"),
        (crew_of(1, limits.max_tasks + 1), "crew.tasks", "max_tasks"),
        (crew_of(1, 10_000), "crew.tasks", "max_tasks"),
    ];
    for (crew, field, limit) in cases {
        let problem = expect_problem(
            h.app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": {}})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let fields = problem_fields(&problem);
        assert!(fields.get(field).is_some_and(|m| m.contains(limit)), "{problem}");
        assert_eq!(fields.len(), 1, "one error for the limit, not one per item: {problem}");
    }
    let mut tooled = crew_of(1, 1);
    let tools: Vec<Value> = (0..=limits.max_tools)
        .map(|i| {
            json!({"name": format!("tool{i}"), "description": "d", "parameters": {"type": "object"},
                        "http": {"url": "http://127.0.0.1:9/x"}})
        })
        .collect();
    tooled["tools"] = json!(tools);
    let problem =
        expect_problem(h.app.put_json("/v1/crews/big", &tooled).await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    assert!(problem_fields(&problem)["tools"].contains("max_tools"), "{problem}");
    let names: Vec<String> = (0..=limits.max_tools).map(|i| format!("calculator{i}")).collect();
    let mut named = crew_of(1, 1);
    named["agents"][0]["tools"] = json!(names);
    let problem = expect_problem(
        h.app.post_json("/v1/kickoffs", &json!({"crew": named, "inputs": {}})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem)["crew.agents[0].tools"].contains("max_tools"), "{problem}");
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs").fetch_one(&pool).await.expect("count");
    assert_eq!(runs, 1, "only the crew within the limits became a run");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_size_limits_are_settings(pool: PgPool) {
    let h = Harness::start_with(pool, true, |config| {
        config.crew_limits = CrewLimits { max_agents: 2, max_tasks: 3, max_tools: 1 };
    })
    .await;
    let problem = expect_problem(
        h.app.post_json("/v1/kickoffs", &json!({"crew": crew_of(2, 4), "inputs": {}})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        problem_fields(&problem).get("crew.tasks").map(String::as_str),
        Some("4 tasks: at most 3 per crew (the server's max_tasks limit)"),
        "{problem}"
    );
    let accepted = h.app.post_json("/v1/kickoffs", &json!({"crew": crew_of(2, 3), "inputs": {}})).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
}

fn small_limits(config: &mut Config) {
    config.run_limits =
        RunLimits { max_reply_bytes: 4_096, max_task_output_bytes: 2_048, max_journal_bytes: 20_000 };
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_reply_over_the_limit_fails_the_run_with_kind_limit(pool: PgPool) {
    let h = Harness::start_with(pool, true, small_limits).await;
    h.fake.push([FakeReply::text(&"x".repeat(5_000))]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "limit");
    assert_eq!(
        out.run["error"]["message"],
        "the model's reply of 5000 bytes is over the limit of 4096 (max_reply_bytes)"
    );
    // The call was made and counted.
    assert_eq!(out.run["usage"]["llm_calls"], 1);
    assert!(matches!(out.result, Err(EngineError::Failed { kind: ErrorKind::Limit, .. })));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_task_output_over_the_limit_fails_the_task_and_the_run(pool: PgPool) {
    let h = Harness::start_with(pool, true, small_limits).await;
    h.fake.push([FakeReply::text(&"y".repeat(3_000))]);
    let mut spec = crew(json!([]), "auto", json!({}));
    spec["tasks"] = json!([
        {"name": "t", "description": "Study {topic}", "expected_output": "A sentence", "agent": "a"},
        {"name": "u", "description": "Go on", "expected_output": "A sentence", "agent": "a"}
    ]);
    let out = h.run(&spec).await;
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "limit");
    assert_eq!(
        out.run["error"]["message"],
        "task 't' produced 3000 bytes of output, over the limit of 2048 (max_task_output_bytes)"
    );
    assert_eq!(out.run["tasks"][0]["status"], "failed");
    assert_eq!(out.run["tasks"][1]["status"], "pending", "the output was never handed on");
    assert_eq!(h.fake.requests().len(), 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_run_that_journals_more_than_its_limit_fails_with_kind_limit(pool: PgPool) {
    let h = Harness::start_with(pool, true, small_limits).await;
    // Each task's answer is 1,500 bytes, and each later task gets every earlier one as context:
    // the journal grows faster with every task, as a runaway crew's does.
    let tasks: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("t{i}"), "description": "Go on", "expected_output": "Text", "agent": "a"}))
        .collect();
    let mut spec = crew(json!([]), "auto", json!({}));
    spec["tasks"] = json!(tasks);
    h.fake.push((0..12).map(|_| FakeReply::text(&"z".repeat(1_500))));
    let out = h.run(&spec).await;
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "limit");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.ends_with("over the limit of 20000 (max_run_journal_bytes)"), "{message}");
    let finished =
        out.run["tasks"].as_array().expect("tasks").iter().filter(|t| t["status"] == "completed").count();
    assert!((2..12).contains(&finished), "stopped part way: {finished} tasks completed");
    assert!(h.fake.requests().len() < 12);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn long_outputs_are_cut_in_the_run_and_whole_in_the_task_resource(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let long: String = "An answer of some length. ".repeat(2_000);
    h.fake.push([FakeReply::text(&long)]);
    let mut spec = crew(json!([]), "auto", json!({}));
    spec["tasks"][0]["name"] = json!("the report");
    let out = h.run(&spec).await;
    assert_eq!(out.run["status"], "completed");
    let id = out.run["id"].as_str().expect("id");
    let view = &out.run["tasks"][0]["output"];
    let shown = view["raw"].as_str().expect("raw");
    assert!(shown.len() < 17 * 1024, "{} bytes shown", shown.len());
    assert!(long.starts_with(&shown[..16 * 1024]));
    let marker =
        format!("[cut at 16384 of {} bytes; GET /v1/runs/{id}/tasks/the%20report has it whole]", long.len());
    assert!(shown.ends_with(&marker), "{}", &shown[16 * 1024..]);
    assert_eq!(view["full_bytes"], long.len());
    assert_eq!(out.run["output"]["full_bytes"], long.len(), "the run's output is cut the same way");
    let response = h.app.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.bytes().await.expect("body");
    assert!(body.len() < 48 * 1024, "the run resource is {} bytes", body.len());

    let task =
        expect_json(h.app.get(&format!("/v1/runs/{id}/tasks/the%20report")).await, StatusCode::OK).await;
    assert_eq!(task["output"]["raw"], long.as_str());
    assert!(task["output"].get("full_bytes").is_none(), "{}", task["output"]);
    assert_eq!((&task["name"], &task["status"]), (&json!("the report"), &json!("completed")));
    let missing = h.app.get(&format!("/v1/runs/{id}/tasks/nope")).await;
    let problem = expect_problem(missing, StatusCode::NOT_FOUND).await;
    assert_eq!(problem["detail"], format!("run {id} has no task 'nope'"));
    let no_run = h.app.get(&format!("/v1/runs/{}/tasks/t", Uuid::now_v7())).await;
    expect_problem(no_run, StatusCode::NOT_FOUND).await;
    // Short outputs are shown whole, without the field.
    h.fake.push([FakeReply::text("Short.")]);
    let short = h.run(&crew(json!([]), "auto", json!({}))).await;
    assert_eq!(short.run["output"], json!({"raw": "Short.", "json": null}));
}

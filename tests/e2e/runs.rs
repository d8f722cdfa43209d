//! Reading runs: one run, the list with its cursor and filter, messages, tool calls and events.

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use agentd::domain::RunId;

use crate::support::{expect_json, expect_problem, sample_crew, sample_inputs, thought, TestApp};

fn run_id(run: &Value) -> Uuid {
    Uuid::parse_str(run["id"].as_str().expect("id")).expect("uuid")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn get_run_answers_404_and_400(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let missing = app.get(&format!("/v1/runs/{}", Uuid::now_v7())).await;
    expect_problem(missing, StatusCode::NOT_FOUND).await;
    let problem = expect_problem(app.get("/v1/runs/not-a-uuid").await, StatusCode::BAD_REQUEST).await;
    assert!(problem["detail"].as_str().expect("detail").contains("invalid path"), "{problem}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn list_pages_newest_first_and_filters_by_status(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(app.kickoff(&sample_crew(), sample_inputs()).await["id"].clone());
    }
    ids.reverse();
    let first = expect_json(app.get("/v1/runs?limit=2").await, StatusCode::OK).await;
    let cursor = first["next_cursor"].as_str().expect("cursor").to_owned();
    let second =
        expect_json(app.get(&format!("/v1/runs?limit=2&cursor={cursor}")).await, StatusCode::OK).await;
    let cursor = second["next_cursor"].as_str().expect("cursor").to_owned();
    let third =
        expect_json(app.get(&format!("/v1/runs?limit=2&cursor={cursor}")).await, StatusCode::OK).await;
    assert_eq!(third["next_cursor"], Value::Null);
    let seen: Vec<Value> = [first, second, third]
        .iter()
        .flat_map(|page| page["runs"].as_array().expect("runs").iter().map(|r| r["id"].clone()))
        .collect();
    assert_eq!(seen, ids);

    sqlx::query("UPDATE runs SET status = 'completed' WHERE id = $1")
        .bind(Uuid::parse_str(ids[1].as_str().expect("id")).expect("uuid"))
        .execute(&pool)
        .await
        .expect("update");
    let completed = expect_json(app.get("/v1/runs?status=completed").await, StatusCode::OK).await;
    let completed: Vec<&Value> =
        completed["runs"].as_array().expect("runs").iter().map(|r| &r["id"]).collect();
    assert_eq!(completed, [&ids[1]]);
    let queued = expect_json(app.get("/v1/runs?status=queued&limit=200").await, StatusCode::OK).await;
    assert_eq!(queued["runs"].as_array().map(Vec::len), Some(4));
    let default = expect_json(app.get("/v1/runs").await, StatusCode::OK).await;
    assert_eq!(default["runs"][0]["tasks"].as_array().map(Vec::len), Some(2));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn list_rejects_bad_queries(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for query in ["status=sleeping", "limit=0", "limit=201", "limit=ten", "cursor=abc"] {
        expect_problem(app.get(&format!("/v1/runs?{query}")).await, StatusCode::BAD_REQUEST).await;
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn messages_and_tool_calls_are_listed_in_order(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let run = app.kickoff(&sample_crew(), sample_inputs()).await;
    let id = run_id(&run);
    let empty = expect_json(app.get(&format!("/v1/runs/{id}/messages")).await, StatusCode::OK).await;
    assert_eq!(empty, json!({"messages": []}));
    // The engine writes the journal; here the rows are written directly.
    sqlx::query(
        "INSERT INTO messages (run_id, seq, task, agent, role, content, tool_calls, tool_call_id, attempt) VALUES
         ($1, 2, 'research', 'researcher', 'assistant', NULL,
          '[{\"id\": \"c1\", \"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"2*7\\\"}\"}]', NULL, 1),
         ($1, 1, 'research', 'researcher', 'system', 'You are a researcher', NULL, NULL, 1),
         ($1, 3, 'research', 'researcher', 'tool', '14', NULL, 'c1', 1)",
    )
    .bind(id)
    .execute(&pool)
    .await
    .expect("messages");
    sqlx::query(
        "INSERT INTO tool_calls (run_id, id, task, agent, tool, arguments, status, result, attempt, finished_at)
         VALUES ($1, 'c1', 'research', 'researcher', 'calculator', '{\"expression\": \"2*7\"}', 'succeeded', '14', 1, now())",
    )
    .bind(id)
    .execute(&pool)
    .await
    .expect("tool call");

    let messages = expect_json(app.get(&format!("/v1/runs/{id}/messages")).await, StatusCode::OK).await;
    let roles: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["system", "assistant", "tool"]);
    assert_eq!(
        messages["messages"][1]["tool_calls"],
        json!([{"id": "c1", "name": "calculator", "arguments": "{\"expression\": \"2*7\"}"}])
    );
    assert_eq!(messages["messages"][0]["tool_calls"], Value::Null, "no tool calls: null");
    assert_eq!(messages["messages"][2]["tool_call_id"], "c1");

    let calls = expect_json(app.get(&format!("/v1/runs/{id}/tool-calls")).await, StatusCode::OK).await;
    let call = &calls["tool_calls"][0];
    assert_eq!(
        (call["id"].as_str(), call["tool"].as_str(), call["status"].as_str()),
        (Some("c1"), Some("calculator"), Some("succeeded"))
    );
    assert_eq!(call["arguments"], json!({"expression": "2*7"}));
    assert_eq!((call["result"].as_str(), call["cached"].as_bool()), (Some("14"), Some(false)));

    let unknown = Uuid::now_v7();
    expect_problem(app.get(&format!("/v1/runs/{unknown}/messages")).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get(&format!("/v1/runs/{unknown}/tool-calls")).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get("/v1/runs/xyz/tool-calls").await, StatusCode::BAD_REQUEST).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn events_json_pages_with_after_and_limit(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let run = app.kickoff(&sample_crew(), sample_inputs()).await;
    let id = run_id(&run);
    let store = agentd::store::Store::new(pool.clone());
    for i in 0..4 {
        store
            .append_event(RunId(id), Some("research"), Some("researcher"), thought(i.to_string()))
            .await
            .expect("append");
    }
    let all = expect_json(app.get(&format!("/v1/runs/{id}/events")).await, StatusCode::OK).await;
    let seqs: Vec<i64> =
        all["events"].as_array().expect("events").iter().map(|e| e["seq"].as_i64().expect("seq")).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(all["next_after"], 5);
    let page =
        expect_json(app.get(&format!("/v1/runs/{id}/events?after=2&limit=2")).await, StatusCode::OK).await;
    let seqs: Vec<i64> =
        page["events"].as_array().expect("events").iter().map(|e| e["seq"].as_i64().expect("seq")).collect();
    assert_eq!(seqs, [3, 4]);
    assert_eq!(page["next_after"], 4);
    assert_eq!(page["events"][0]["type"], "agent.thought");
    assert_eq!(page["events"][0]["data"], json!({"text": "1"}));
    let end = expect_json(app.get(&format!("/v1/runs/{id}/events?after=5")).await, StatusCode::OK).await;
    assert_eq!(end, json!({"events": [], "next_after": 5}));

    expect_problem(app.get(&format!("/v1/runs/{}/events", Uuid::now_v7())).await, StatusCode::NOT_FOUND)
        .await;
    expect_problem(app.get(&format!("/v1/runs/{id}/events?after=-1")).await, StatusCode::BAD_REQUEST).await;
    expect_problem(app.get(&format!("/v1/runs/{id}/events?limit=5000")).await, StatusCode::BAD_REQUEST).await;
}

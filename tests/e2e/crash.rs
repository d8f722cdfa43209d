//! Crash recovery with the real binary: `kill -9` in the middle of a run, start again, and the
//! run completes without repeating a completed LLM or tool call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::support::expect_json;
use crate::worker::{calc_crew, wait_requests};

fn env<'a>(fake: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env =
        vec![("OPENAI_BASE_URL", fake), ("OPENAI_API_KEY", "sk-crash-test"), ("AGENTD_LEASE_S", "2")];
    env.extend_from_slice(extra);
    env
}

pub(crate) async fn get(base: &str, path: &str) -> Value {
    let response = reqwest::get(format!("{base}{path}")).await.expect("GET");
    expect_json(response, StatusCode::OK).await
}

async fn kickoff(base: &str, body: &Value) -> String {
    let response =
        reqwest::Client::new().post(format!("{base}/v1/kickoffs")).json(body).send().await.expect("POST");
    expect_json(response, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned()
}

pub(crate) async fn wait_done(base: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = get(base, &format!("/v1/runs/{id}")).await;
        if ["completed", "failed", "cancelled"].contains(&run["status"].as_str().unwrap_or_default()) {
            return run;
        }
        assert!(Instant::now() < deadline, "run never ended: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrations = false)]
async fn kill_9_during_an_llm_call_resumes_without_repeating_completed_calls(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        FakeReply::text("42, after the restart"),
    ]);
    let base_url = fake.base_url();
    let first = Agentd::start(&url, &env(&base_url, &[]));
    let id = kickoff(&first.base, &json!({"crew": calc_crew(), "inputs": {"expr": "6*7"}})).await;
    wait_requests(&fake, 2).await;
    let killed = first.signal("-KILL").await;
    assert!(!killed.success());
    let restarted_at = Instant::now();
    let second = Agentd::start(&url, &env(&base_url, &[]));
    let done = wait_done(&second.base, &id).await;
    eprintln!("recovered and completed {:?} after the restart", restarted_at.elapsed());
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        (done["output"]["raw"].as_str(), done["attempt"].as_i64()),
        (Some("42, after the restart"), Some(2))
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "the first LLM call was not made again");
    // Every call the provider served is counted, the one lost to the crash too (its tokens are
    // not known: only the two answered calls' are counted).
    assert_eq!(done["usage"]["llm_calls"], 3, "{}", done["usage"]);
    assert_eq!(requests[2]["messages"], requests[1]["messages"], "the conversation was rebuilt exactly");
    let calls = get(&second.base, &format!("/v1/runs/{id}/tool-calls")).await;
    let calls = calls["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 1, "the tool call was not repeated");
    assert_eq!((calls[0]["status"].as_str(), calls[0]["result"].as_str()), (Some("succeeded"), Some("42")));
    let messages = get(&second.base, &format!("/v1/runs/{id}/messages")).await;
    let roles: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user", "assistant"]);
    let metrics =
        reqwest::get(format!("{}/metrics", second.base)).await.expect("GET").text().await.expect("text");
    let line = "agentd_llm_call_duration_seconds_count{provider=\"openai\",model=\"gpt-4o-mini\"} 1";
    assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    assert!(metrics.contains("agentd_runs{status=\"completed\"} 1"), "{metrics}");
}

/// A tool server that takes every request and never answers in time.
async fn hanging_tool() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/charge",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                "charged"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/charge"), hits)
}

#[sqlx::test(migrations = false)]
async fn kill_9_during_a_non_idempotent_tool_call_does_not_repeat_it(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "charge_card", json!({"amount": 10}))]),
        FakeReply::text("I could not confirm the charge."),
    ]);
    let (tool_url, hits) = hanging_tool().await;
    let crew = json!({
        "name": "billing",
        "agents": [{"name": "a", "role": "Cashier", "goal": "Charge", "backstory": "Careful.", "tools": ["charge_card"]}],
        "tasks": [{"name": "t", "description": "Charge 10", "expected_output": "A receipt", "agent": "a"}],
        "tools": [{"name": "charge_card", "description": "Charge the card",
                   "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
                   "http": {"url": tool_url, "timeout_ms": 120000}, "idempotent": false}]
    });
    let base_url = fake.base_url();
    let extra = [("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32")];
    let first = Agentd::start(&url, &env(&base_url, &extra));
    let id = kickoff(&first.base, &json!({"crew": crew, "inputs": {}})).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while hits.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the tool was never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.signal("-KILL").await;
    let second = Agentd::start(&url, &env(&base_url, &extra));
    let done = wait_done(&second.base, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the non-idempotent call was not repeated");
    let calls = get(&second.base, &format!("/v1/runs/{id}/tool-calls")).await;
    let call = &calls["tool_calls"][0];
    assert_eq!(call["status"], "failed");
    assert!(call["error"].as_str().is_some_and(|e| e.contains("not idempotent")), "{call}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let observation = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message");
    assert!(observation["content"].as_str().is_some_and(|c| c.contains("interrupted")), "{observation}");
}

#[sqlx::test(migrations = false)]
async fn kill_9_during_a_planned_run_resumes_at_the_step_in_flight(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    let plan = json!({"steps": [{"description": "Find high tide"}, {"description": "Find low tide"}]});
    fake.push([
        FakeReply::text(&plan.to_string()),
        FakeReply::text("High tide at 6"),
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        FakeReply::text("Low tide at 12"),
        FakeReply::text("Tides: 6 and 12"),
    ]);
    let crew = json!({
        "name": "tides", "planning": true,
        "agents": [{"name": "a", "role": "Researcher", "goal": "Tides", "backstory": "Careful."}],
        "tasks": [{"name": "t", "description": "Report the tides", "expected_output": "Two times", "agent": "a"}]
    });
    let base_url = fake.base_url();
    let first = Agentd::start(&url, &env(&base_url, &[]));
    let id = kickoff(&first.base, &json!({"crew": crew, "inputs": {}})).await;
    wait_requests(&fake, 3).await;
    first.signal("-KILL").await;
    let second = Agentd::start(&url, &env(&base_url, &[]));
    let done = wait_done(&second.base, &id).await;
    assert_eq!(
        (done["status"].as_str(), done["output"]["raw"].as_str()),
        (Some("completed"), Some("Tides: 6 and 12"))
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 5, "no new plan and step 1 not redone");
    assert_eq!(requests[3]["messages"], requests[2]["messages"], "step 2 resumed from its own conversation");
    let events = get(&second.base, &format!("/v1/runs/{id}/events?limit=1000")).await;
    let planned =
        events["events"].as_array().expect("events").iter().filter(|e| e["type"] == "task.planned").count();
    assert_eq!(planned, 1);
}

/// A reply that reports `tokens` in all (prompt and completion).
fn costing(mut reply: FakeReply, tokens: u64) -> FakeReply {
    reply.body["usage"] = json!({"prompt_tokens": tokens - 100, "completion_tokens": 100});
    reply
}

#[sqlx::test(migrations = false)]
async fn kill_9_keeps_the_spend_and_the_repeated_call_counts_against_the_budget(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        costing(FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]), 1000),
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        costing(FakeReply::text("42, after the restart"), 1000),
    ]);
    let base_url = fake.base_url();
    let first = Agentd::start(&url, &env(&base_url, &[]));
    // 1,000 tokens before the crash, 1,000 for the call repeated after it: over 1,500.
    let mut crew = calc_crew();
    crew["max_tokens"] = json!(1500);
    let id = kickoff(&first.base, &json!({"crew": crew, "inputs": {"expr": "6*7"}})).await;
    wait_requests(&fake, 2).await;
    assert!(!first.signal("-KILL").await.success());
    let second = Agentd::start(&url, &env(&base_url, &[]));
    let done = wait_done(&second.base, &id).await;
    assert_eq!(
        (done["status"].as_str(), done["error"]["kind"].as_str()),
        (Some("failed"), Some("budget")),
        "{done}"
    );
    let message = done["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("took it to 2000 tokens, over max_tokens = 1500 (1000 used before it)"),
        "{message}"
    );
    assert_eq!(fake.requests().len(), 3, "the lost call was repeated once, and nothing after it");
    assert_eq!(
        (done["usage"]["llm_calls"].as_i64(), done["usage"]["prompt_tokens"].as_i64()),
        (Some(3), Some(1800)),
        "the lost call counts as a call, its tokens unknown"
    );
    let lines = done["usage_breakdown"].as_array().expect("breakdown");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        (lines[0]["llm_calls"].as_i64(), lines[0]["completion_tokens"].as_i64()),
        (Some(3), Some(200))
    );
}

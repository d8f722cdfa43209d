//! Approval before a tool runs, over HTTP: a call of a tool that requires approval is journaled,
//! announced, and waits with the run in `awaiting_input`; a reviewer approves it (as asked or with
//! edited arguments) or rejects it; the run continues when every waiting call is decided, on
//! whichever replica, after a crash too.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::domain::{RunId, TaskOutput};
use agentd::engine::EngineError;
use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::mcp::Peer;
use super::{allow_loopback, allow_loopback_with_secrets, crew, expect_json, lookup_tool, Harness, LEASE};
use crate::cli::{child_database_url, Agentd};
use crate::support::expect_problem;
use crate::worker::event_types;

/// A tool server recording each request's JSON body.
async fn orders() -> (String, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let app = axum::Router::new().route(
        "/orders",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                let id = body["order_id"].to_string();
                seen.lock().expect("bodies").push(body);
                format!("order {id}: shipped")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, bodies)
}

/// A crew whose `lookup_order` tool at `url` requires approval (and with the calculator).
fn gated_crew(url: &str) -> Value {
    let tool = lookup_tool(url, json!({"requires_approval": true}));
    crew(json!(["lookup_order", "calculator"]), "native", json!({"tools": [tool]}))
}

/// Claim the queued run and let the engine execute it once (to its end or a pause).
async fn execute(h: &Harness, id: RunId) -> Result<TaskOutput, EngineError> {
    let claimed = h.store.claim_run(id, "e2e-worker", LEASE).await.expect("claim").expect("queued");
    let engine = crate::support::engine_for(&h.config, &h.store);
    let journal = h.store.journal(claimed.id, claimed.attempt);
    engine.run(&claimed.crew, &claimed.inputs, &journal, &CancellationToken::new()).await
}

async fn kickoff(h: &Harness, spec: &Value) -> RunId {
    let queued = h.app.kickoff(spec, json!({"topic": "tides"})).await;
    RunId(Uuid::parse_str(queued["id"].as_str().expect("id")).expect("uuid"))
}

async fn get(h: &Harness, path: &str) -> Value {
    expect_json(h.app.get(path).await, StatusCode::OK).await
}

fn decide_path(id: RunId, call: &str) -> String {
    let call: String = url::form_urlencoded::byte_serialize(call.as_bytes()).collect();
    format!("/v1/runs/{id}/tool-calls/{call}/approval")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_approved_call_runs_once_the_reviewer_says_so(pool: PgPool) {
    let (url, bodies) = orders().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::text("A1 shipped."),
    ]);
    let id = kickoff(&h, &gated_crew(&url)).await;
    assert_eq!(execute(&h, id).await, Err(EngineError::AwaitingInput));

    let run = get(&h, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "awaiting_input");
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    let call = &calls["tool_calls"][0];
    assert_eq!((call["id"].as_str(), call["status"].as_str()), (Some("t#1/c1"), Some("awaiting_approval")));
    assert_eq!(call["approval"], json!({"state": "pending"}));
    let events = get(&h, &format!("/v1/runs/{id}/events")).await;
    let requested = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "tool.approval_requested")
        .expect("requested");
    assert_eq!(
        requested["data"],
        json!({"tool_call_id": "t#1/c1", "tool": "lookup_order", "arguments": {"order_id": "A1"}})
    );
    assert!(bodies.lock().expect("bodies").is_empty(), "nothing ran before the decision");

    // The answer review's resume is not the way out of this pause; bad decisions are refused.
    let resume = h.app.post_json(&format!("/v1/runs/{id}/resume"), &json!({"approve": true})).await;
    assert!(expect_problem(resume, StatusCode::CONFLICT).await["detail"]
        .as_str()
        .is_some_and(|d| d.contains("tool-calls")));
    expect_problem(
        h.app.post_json(&decide_path(id, "t#1/nope"), &json!({"approve": true})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let other = RunId(Uuid::now_v7());
    expect_problem(
        h.app.post_json(&decide_path(other, "t#1/c1"), &json!({"approve": true})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let mixed = json!({"approve": true, "reason": "why not"});
    expect_problem(
        h.app.post_json(&decide_path(id, "t#1/c1"), &mixed).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let bad = json!({"approve": true, "arguments": {"order_id": 5}});
    let problem = expect_problem(
        h.app.post_json(&decide_path(id, "t#1/c1"), &bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(problem["errors"][0]["field"], "arguments", "{problem}");

    let decided = expect_json(
        h.app.post_json(&decide_path(id, "t#1/c1"), &json!({"approve": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decided["status"], "queued");
    expect_problem(
        h.app.post_json(&decide_path(id, "t#1/c1"), &json!({"approve": true})).await,
        StatusCode::CONFLICT,
    )
    .await;

    let output = execute(&h, id).await.expect("the run completes");
    assert_eq!(output.raw, "A1 shipped.");
    assert_eq!(*bodies.lock().expect("bodies"), [json!({"order_id": "A1"})]);
    assert_eq!(h.fake.requests().len(), 2, "the model was not asked again for the reply it had given");
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    assert_eq!(calls["tool_calls"][0]["status"], "succeeded");
    assert_eq!(calls["tool_calls"][0]["approval"], json!({"state": "approved"}));
    let types = event_types(&get(&h, &format!("/v1/runs/{id}/events")).await);
    let at = |t: &str| types.iter().position(|x| x == t).unwrap_or_else(|| panic!("{t} in {types:?}"));
    assert!(at("tool.approval_requested") < at("tool.approved") && at("tool.approved") < at("tool.finished"));
    assert_eq!(types.last().map(String::as_str), Some("run.completed"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_reviewer_may_edit_the_arguments_or_reject_the_call(pool: PgPool) {
    let (url, bodies) = orders().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    // Two gated calls and an ungated one in one round.
    h.fake.push([
        FakeReply::tool_calls(&[
            ("c1", "lookup_order", json!({"order_id": "A1"})),
            ("c2", "lookup_order", json!({"order_id": "ZZ"})),
            ("c3", "calculator", json!({"expression": "6*7"})),
        ]),
        FakeReply::text("B2 shipped, ZZ refused, 42."),
    ]);
    let id = kickoff(&h, &gated_crew(&url)).await;
    assert_eq!(execute(&h, id).await, Err(EngineError::AwaitingInput));
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    let states: Vec<&Value> =
        calls["tool_calls"].as_array().expect("calls").iter().map(|c| &c["approval"]["state"]).collect();
    assert_eq!(states, [&json!("pending"), &json!("pending"), &json!("deferred")]);

    let edit = json!({"approve": true, "arguments": {"order_id": "B2"}});
    let after_one =
        expect_json(h.app.post_json(&decide_path(id, "t#1/c1"), &edit).await, StatusCode::OK).await;
    assert_eq!(after_one["status"], "awaiting_input", "one call still waits");
    let reject = json!({"approve": false, "reason": "ZZ is not one of ours"});
    let after_two =
        expect_json(h.app.post_json(&decide_path(id, "t#1/c2"), &reject).await, StatusCode::OK).await;
    assert_eq!(after_two["status"], "queued");

    let output = execute(&h, id).await.expect("the run completes");
    assert_eq!(output.raw, "B2 shipped, ZZ refused, 42.");
    assert_eq!(
        *bodies.lock().expect("bodies"),
        [json!({"order_id": "B2"})],
        "the edited arguments ran; the rejected call did not"
    );
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    let calls = calls["tool_calls"].as_array().expect("calls");
    assert_eq!(calls[0]["result"], "order \"B2\": shipped");
    assert_eq!(calls[1]["status"], "failed");
    assert_eq!(calls[1]["error"], "A reviewer rejected this call: ZZ is not one of ours");
    assert_eq!(calls[2]["result"], "42");
    // The model saw the rejection as the call's observation.
    let request = &h.fake.requests()[1];
    let observations: Vec<&str> = request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert!(
        observations.iter().any(|o| o.contains("A reviewer rejected this call: ZZ is not one of ours")),
        "{observations:?}"
    );
    let types = event_types(&get(&h, &format!("/v1/runs/{id}/events")).await);
    assert_eq!(types.iter().filter(|t| *t == "tool.approval_requested").count(), 2);
    assert!(types.contains(&"tool.rejected".to_owned()) && types.contains(&"tool.approved".to_owned()));
}

#[sqlx::test(migrations = false)]
async fn a_crash_while_awaiting_approval_loses_nothing_and_another_replica_takes_the_decision(pool: PgPool) {
    let peer = Peer::scripted().await;
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "scripted__record", json!({"note": "ship it"}))]),
        FakeReply::text("Recorded."),
    ]);
    let base_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-approval"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
        ("AGENTD_SECRETS_KEY", crate::secrets::TEST_KEY),
    ];
    let crew = json!({
        "name": "notary",
        "agents": [{"name": "a", "role": "Notary", "goal": "Record", "backstory": "Careful.", "tools": ["scripted__record"]}],
        "tasks": [{"name": "t", "description": "Record the note", "expected_output": "Done", "agent": "a"}],
        "mcp_servers": [{"name": "scripted", "url": peer.url(), "requires_approval": ["record"],
                         "headers": {"Authorization": {"secret": "notary_token", "prefix": "Bearer "}}}]
    });
    let first = Agentd::start(&url, &env);
    let client = reqwest::Client::new();
    let secret = json!({"value": "tok-NOTARY-31337"});
    let stored = client
        .put(format!("{}/v1/secrets/notary_token", first.base))
        .json(&secret)
        .send()
        .await
        .expect("put");
    expect_json(stored, StatusCode::CREATED).await;
    let response = client
        .post(format!("{}/v1/kickoffs", first.base))
        .json(&json!({"crew": crew}))
        .send()
        .await
        .expect("kickoff");
    let id = expect_json(response, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned();
    let run_path = |base: &str| format!("{base}/v1/runs/{id}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run =
            expect_json(client.get(run_path(&first.base)).send().await.expect("get"), StatusCode::OK).await;
        if run["status"] == "awaiting_input" {
            break;
        }
        assert!(Instant::now() < deadline, "never awaited approval: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, first_logs) = first.stop("-KILL").await;
    assert!(peer.calls().is_empty(), "the call waits for its decision");

    // Another replica: the API takes the decision, its worker runs the call.
    let second = Agentd::start(&url, &env);
    let decision = client
        .post(format!("{}/v1/runs/{id}/tool-calls/t%231%2Fc1/approval", second.base))
        .json(&json!({"approve": true}))
        .send()
        .await
        .expect("decide");
    expect_json(decision, StatusCode::OK).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        let run =
            expect_json(client.get(run_path(&second.base)).send().await.expect("get"), StatusCode::OK).await;
        if ["completed", "failed"].contains(&run["status"].as_str().unwrap_or_default()) {
            break run;
        }
        assert!(Instant::now() < deadline, "never finished: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(run["status"], "completed", "{run}");
    let logged = peer.calls();
    assert_eq!(logged.len(), 1, "the approved MCP call ran once");
    assert_eq!(logged[0]["note"], "ship it");
    assert_eq!(logged[0]["authorization"], "Bearer tok-NOTARY-31337", "the secret reached the MCP server");
    assert_eq!(fake.requests().len(), 2);
    // Discovery and the call logged at info level on both replicas: never the secret.
    let (_, second_logs) = second.stop("-TERM").await;
    assert!(first_logs.len() > 3 && second_logs.len() > 3, "the logs were read");
    for line in first_logs.iter().chain(&second_logs) {
        assert!(!line.contains("tok-NOTARY-31337"), "a secret in a log line: {line}");
    }
}

/// The end-to-end case: one agent with an MCP server's tools (the reference server), an
/// HTTP tool authenticated with a stored secret, and a tool that needs approval, in one round.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn mcp_an_authenticated_http_tool_and_an_approval_complete_together(pool: PgPool) {
    let everything = Peer::everything().await;
    let h = Harness::start_with(pool, true, allow_loopback_with_secrets).await;
    expect_json(
        h.app.put_json("/v1/secrets/orders_key", &json!({"value": "k-orders-7"})).await,
        StatusCode::CREATED,
    )
    .await;
    let app = axum::Router::new().route(
        "/orders",
        axum::routing::post(|headers: axum::http::HeaderMap| async move {
            match headers.get("authorization").and_then(|v| v.to_str().ok()) {
                Some("Bearer k-orders-7") => (StatusCode::OK, "order A1: shipped"),
                _ => (StatusCode::UNAUTHORIZED, "who are you?"),
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });

    h.fake.push([
        FakeReply::tool_calls(&[
            ("c1", "everything__echo", json!({"message": "hello"})),
            ("c2", "lookup_order", json!({"order_id": "A1"})),
            ("c3", "calculator", json!({"expression": "6*7"})),
        ]),
        FakeReply::text("Echoed, shipped, 42."),
    ]);
    let tool = lookup_tool(
        &url,
        json!({"http": {"headers": {"Authorization": {"secret": "orders_key", "prefix": "Bearer "}}}}),
    );
    let spec = crew(
        json!(["everything__echo", "lookup_order", "calculator"]),
        "native",
        json!({"tools": [tool], "requires_approval": ["calculator"],
               "mcp_servers": [{"name": "everything", "url": everything.url()}]}),
    );
    let id = kickoff(&h, &spec).await;
    assert_eq!(execute(&h, id).await, Err(EngineError::AwaitingInput));
    expect_json(h.app.post_json(&decide_path(id, "t#1/c3"), &json!({"approve": true})).await, StatusCode::OK)
        .await;
    let output = execute(&h, id).await.expect("the run completes");
    assert_eq!(output.raw, "Echoed, shipped, 42.");
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    let results: Vec<(&str, &str)> = calls["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| (c["tool"].as_str().unwrap_or_default(), c["result"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(results[0].0, "mcp:everything");
    assert_eq!(
        results[1..],
        [("everything__echo", "Echo: hello"), ("lookup_order", "order A1: shipped"), ("calculator", "42")]
    );
    let run = get(&h, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "completed");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_coworkers_call_waits_for_approval_and_the_delegation_goes_on_after_it(pool: PgPool) {
    let (url, bodies) = orders().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([
        FakeReply::tool_calls(&[(
            "m1",
            "delegate_work_to_coworker",
            json!({"task": "Look up order A1", "context": "A customer asks", "coworker": "Analyst of tides"}),
        )]),
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::text("A1 has shipped."),
        FakeReply::text("The coworker says A1 has shipped."),
    ]);
    let spec = json!({
        "name": "e2e", "process": "hierarchical", "manager_llm": "openai/test-model",
        "agents": [{"name": "a", "role": "Analyst of {topic}", "goal": "Answer", "backstory": "Precise.",
                    "llm": "openai/test-model", "tools": ["lookup_order"], "tool_calling": "native"}],
        "tasks": [{"name": "t", "description": "Study {topic}", "expected_output": "A sentence"}],
        "tools": [lookup_tool(&url, json!({"requires_approval": true}))]
    });
    let id = kickoff(&h, &spec).await;
    assert_eq!(execute(&h, id).await, Err(EngineError::AwaitingInput));
    let calls = get(&h, &format!("/v1/runs/{id}/tool-calls")).await;
    let waiting: Vec<&Value> = calls["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["status"] == "awaiting_approval")
        .collect();
    assert_eq!(waiting.len(), 1, "{calls}");
    let call_id = waiting[0]["id"].as_str().expect("id").to_owned();
    assert!(bodies.lock().expect("bodies").is_empty());
    expect_json(h.app.post_json(&decide_path(id, &call_id), &json!({"approve": true})).await, StatusCode::OK)
        .await;
    let output = execute(&h, id).await.expect("the run completes");
    assert_eq!(output.raw, "The coworker says A1 has shipped.");
    assert_eq!(*bodies.lock().expect("bodies"), [json!({"order_id": "A1"})]);
    assert_eq!(h.fake.requests().len(), 4, "no model call repeated");
}

//! AG-UI (`POST /v1/ag-ui/crews/{name}`) driven by the AG-UI client (`@ag-ui/client`,
//! `tests/ag-ui/client.mjs`) with its own event verification on: a run's event sequence, a
//! thread whose second run sees the first, a tool call interrupted for approval and resumed, an
//! unpublished crew and another tenant's key, bad input, and a replica killed mid-run whose run
//! the client follows again with the same input.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::{published_crew, register, run, Client, Failover, ROOT};
use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers};

/// The AG-UI client running `input` against crew `name` at `base`.
fn client(base: &str, name: &str, key: Option<&str>, input: &Value) -> Client {
    let mut args = vec![
        format!("{ROOT}/tests/ag-ui/client.mjs"),
        "--url".into(),
        format!("{base}/v1/ag-ui/crews/{name}"),
        "--input".into(),
        input.to_string(),
    ];
    if let Some(key) = key {
        args.extend(["--key".into(), key.into()]);
    }
    if !std::path::Path::new(&format!("{ROOT}/tests/ag-ui/node_modules/@ag-ui/client")).exists() {
        panic!("@ag-ui/client is not installed: run tests/ag-ui/setup.sh (scripts/test.sh does) before the tests");
    }
    Client::start("node", &args, "tests/ag-ui/setup.sh")
}

async fn lines(base: &str, name: &str, key: Option<&str>, input: &Value) -> Vec<Value> {
    client(base, name, key, input).finish(Duration::from_secs(60)).await
}

/// The events a finished client printed, after checking it ended `done` with no warnings.
fn events(printed: &[Value]) -> Vec<Value> {
    assert!(printed.iter().all(|l| l.get("warning").is_none()), "the client warned: {printed:#?}");
    assert!(printed.last().is_some_and(|l| l.get("done").is_some()), "not done: {printed:#?}");
    printed.iter().filter_map(|l| l.get("event").cloned()).collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

fn input(thread: &str, run: &str, message: &str) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [{"id": format!("m-{run}"), "role": "user", "content": message}]})
}

fn chat_crew() -> Value {
    json!({
        "name": "chat",
        "agents": [{"name": "a", "role": "Assistant", "goal": "Help", "backstory": "Brief."}],
        "tasks": [{"name": "reply", "description": "The user says: {message}", "expected_output": "A reply", "agent": "a"}],
        "publish": {"ag_ui": true},
    })
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_client_runs_a_crew_in_a_thread_and_verifies_its_events(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    register(&app, &chat_crew()).await;
    fake.push([FakeReply::text("Hello, Ada!"), FakeReply::text("You said your name is Ada.")]);

    let first = events(&lines(&app.base, "chat", None, &input("thr-1", "run-1", "Hi, I am Ada.")).await);
    assert_eq!(
        (first[0]["type"].as_str(), first[0]["threadId"].as_str(), first[0]["runId"].as_str()),
        (Some("RUN_STARTED"), Some("thr-1"), Some("run-1"))
    );
    let kinds = types(&first);
    let at = |kind: &str| {
        kinds.iter().position(|k| *k == kind).unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
    };
    assert!(
        at("STEP_STARTED") < at("TEXT_MESSAGE_START") && at("TEXT_MESSAGE_END") < at("STEP_FINISHED"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"), "{kinds:?}");
    let text: String = first
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, "Hello, Ada!");
    let finished = first.last().expect("last");
    assert_eq!((finished["threadId"].as_str(), finished["runId"].as_str()), (Some("thr-1"), Some("run-1")));
    assert_eq!(finished["result"]["output"], "Hello, Ada!");
    let snapshot = first.iter().rev().find(|e| e["type"] == "STATE_SNAPSHOT").expect("a snapshot");
    assert_eq!(snapshot["snapshot"]["outputs"]["reply"], "Hello, Ada!");
    let id = finished["result"]["run_id"].as_str().expect("run id").to_owned();
    let done = run(&app, &id).await;
    assert_eq!(
        (done["metadata"]["ag_ui_run_id"].as_str(), done["status"].as_str()),
        (Some("run-1"), Some("completed"))
    );

    // The same thread's next run sees the first: the thread is an agentd thread.
    let second = events(&lines(&app.base, "chat", None, &input("thr-1", "run-2", "What is my name?")).await);
    assert_eq!(second.last().expect("last")["result"]["output"], "You said your name is Ada.");
    let prompt = fake.requests()[1].to_string();
    assert!(prompt.contains("Conversation so far") && prompt.contains("Hi, I am Ada."), "{prompt}");
    let second_id = second.last().expect("last")["result"]["run_id"].as_str().expect("id").to_owned();
    assert_eq!(run(&app, &second_id).await["thread_id"], done["thread_id"]);

    // The same input again follows the same run (it does not run again).
    let again = events(&lines(&app.base, "chat", None, &input("thr-1", "run-2", "What is my name?")).await);
    assert_eq!(again.last().expect("last")["result"]["run_id"].as_str(), Some(second_id.as_str()));
    assert_eq!(fake.requests().len(), 2);
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    let line = "agentd_protocol_requests_total{protocol=\"ag_ui\",method=\"run\"} 3";
    assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_tool_call_awaiting_approval_is_an_interrupt_the_client_resumes(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let crew = json!({
        "name": "calc",
        "agents": [{"name": "a", "role": "Mathematician", "goal": "Compute", "backstory": "Exact.", "tools": ["calculator"]}],
        "tasks": [{"name": "t", "description": "What is {message}?", "expected_output": "A number", "agent": "a"}],
        "requires_approval": ["calculator"],
        "publish": {"ag_ui": true},
    });
    register(&app, &crew).await;
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("It is 42."),
    ]);
    let printed = lines(&app.base, "calc", None, &input("thr-calc", "r1", "6*7")).await;
    let first = events(&printed);
    let kinds = types(&first);
    assert!(kinds.contains(&"TOOL_CALL_START") && kinds.contains(&"TOOL_CALL_END"), "{kinds:?}");
    let finished = first.last().expect("last");
    assert_eq!(finished["type"], "RUN_FINISHED");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(
        (finished["outcome"]["type"].as_str(), interrupt["reason"].as_str()),
        (Some("interrupt"), Some("tool_approval")),
        "{finished}"
    );
    let call = interrupt["toolCallId"].as_str().expect("a tool call id").to_owned();
    assert!(first.iter().any(|e| e["type"] == "TOOL_CALL_START"
        && e["toolCallId"] == call.as_str()
        && e["toolCallName"] == "calculator"));
    assert_eq!(
        printed.last().expect("done")["pendingInterrupts"].as_array().map(Vec::len),
        Some(1),
        "{printed:#?}"
    );

    // A new run of the thread, covering nothing, is refused while the interrupt stands.
    let busy = app.post_json("/v1/ag-ui/crews/calc", &input("thr-calc", "r-other", "1+1")).await;
    expect_problem(busy, StatusCode::CONFLICT).await;

    // Resume: approved. The same agentd run goes on: the call's result, then the answer.
    let mut resume = input("thr-calc", "r2", "6*7");
    resume["parentRunId"] = json!("r1");
    resume["resume"] =
        json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]);
    let second = events(&lines(&app.base, "calc", None, &resume).await);
    let result = second.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").expect("a tool result");
    assert_eq!(
        (result["toolCallId"].as_str(), result["content"].as_str()),
        (Some(call.as_str()), Some("42"))
    );
    let last = second.last().expect("last");
    assert_eq!(
        (last["type"].as_str(), last["runId"].as_str(), last["result"]["output"].as_str()),
        (Some("RUN_FINISHED"), Some("r2"), Some("It is 42."))
    );
    let calls = expect_json(
        app.get(&format!("/v1/runs/{}/tool-calls", last["result"]["run_id"].as_str().expect("id"))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(calls["tool_calls"].as_array().map(Vec::len), Some(1), "{calls}");

    // A resume naming no interrupt of this thread.
    let mut stale = input("thr-calc", "r3", "6*7");
    stale["resume"] = json!([{"interruptId": "nope", "status": "resolved"}]);
    let problem =
        expect_problem(app.post_json("/v1/ag-ui/crews/calc", &stale).await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    assert!(problem_fields(&problem).contains_key("resume[0].interruptId"), "{problem}");

    // Resume: rejected. The call's result is told once, as the rejection (the engine's own
    // observation of it when the run resumes is not a second result for the same call).
    fake.push([
        FakeReply::tool_calls(&[("c2", "calculator", json!({"expression": "1/0"}))]),
        FakeReply::text("I will not compute that."),
    ]);
    let first = events(&lines(&app.base, "calc", None, &input("thr-reject", "r1", "1/0")).await);
    let interrupt = first.last().expect("last")["outcome"]["interrupts"][0].clone();
    let call = interrupt["toolCallId"].as_str().expect("a tool call id").to_owned();
    let mut reject = input("thr-reject", "r2", "1/0");
    reject["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": false, "reason": "not that"}}]);
    let second = events(&lines(&app.base, "calc", None, &reject).await);
    let results: Vec<&Value> = second.iter().filter(|e| e["type"] == "TOOL_CALL_RESULT").collect();
    assert_eq!(results.len(), 1, "one result per tool call: {second:#?}");
    assert_eq!(results[0]["toolCallId"].as_str(), Some(call.as_str()));
    assert!(
        results[0]["content"].as_str().is_some_and(|c| c.contains("rejected") && c.contains("not that")),
        "{results:?}"
    );
    assert_eq!(second.last().expect("last")["type"], "RUN_FINISHED", "{second:#?}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn unpublished_crews_other_tenants_and_bad_input_are_refused(pool: PgPool) {
    let mut config = crate::support::test_config();
    config.api_keys = agentd::config::ApiKeys::parse("root-ag-ui");
    let root = TestApp::spawn_with(pool, config).await.as_key(Some("root-ag-ui"));
    for tenant in ["team-a", "team-b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
    }
    let key = |tenant: &'static str, scopes: Value| {
        let root = &root;
        async move {
            let body = json!({"tenant": tenant, "name": "k", "scopes": scopes});
            expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await["key"]
                .as_str()
                .expect("key")
                .to_owned()
        }
    };
    let a_key = key("team-a", json!(["read", "kickoff", "manage"])).await;
    let b_key = key("team-b", json!(["read", "kickoff", "manage"])).await;
    let reader = key("team-a", json!(["read"])).await;
    let a = root.as_key(Some(&a_key));
    register(&a, &chat_crew()).await;
    register(&a, &published_crew("mcp-only", json!({"mcp": true}))).await;
    let body = input("t", "r", "hello");

    // Through the client: an unpublished crew, another tenant, no key.
    assert_eq!(
        lines(&root.base, "mcp-only", Some(&a_key), &body).await.last().expect("line")["http_error"],
        404
    );
    assert_eq!(lines(&root.base, "chat", Some(&b_key), &body).await.last().expect("line")["http_error"], 404);
    assert_eq!(lines(&root.base, "chat", None, &body).await.last().expect("line")["http_error"], 401);
    assert_eq!(
        lines(&root.base, "chat", Some(&reader), &body).await.last().expect("line")["http_error"],
        403
    );

    // Raw: what the client would not send.
    let missing = expect_problem(
        a.post_json("/v1/ag-ui/crews/chat", &json!({"runId": "r", "messages": []})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(missing["detail"].as_str().is_some_and(|d| d.contains("threadId")), "{missing}");
    for (bad, field) in [
        (json!({"threadId": "t", "runId": "", "messages": []}), "runId"),
        (json!({"threadId": "t", "runId": "r", "forwardedProps": {"inputs": [1]}}), "forwardedProps.inputs"),
        (
            json!({"threadId": "t", "runId": "r", "resume": [{"interruptId": "x", "status": "maybe"}]}),
            "resume[0].status",
        ),
    ] {
        let problem =
            expect_problem(a.post_json("/v1/ag-ui/crews/chat", &bad).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{field}: {problem}");
    }
    // The crew's own inputs are checked as a kickoff's: no message, no `message` input.
    let problem = expect_problem(
        a.post_json("/v1/ag-ui/crews/chat", &json!({"threadId": "t", "runId": "r2", "messages": []})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem).contains_key("inputs.message"), "{problem}");
}

/// Another tenant's thread id is, to AG-UI, an id like any it has not seen: the run starts a
/// thread of the caller's own (answered as for a made-up id), neither joining the other tenant's
/// thread nor seeing its history.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenants_thread_id_starts_a_thread_of_ones_own(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse("root-ag-ui");
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some("root-ag-ui"));
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let mut keys = Vec::new();
    for tenant in ["team-a", "team-b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
        let body = json!({"tenant": tenant, "name": "k", "scopes": ["read", "kickoff", "manage"]});
        let key = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
        let key = key["key"].as_str().expect("key").to_owned();
        register(&root.as_key(Some(&key)), &chat_crew()).await;
        keys.push(key);
    }
    let (a_key, b_key) = (keys[0].as_str(), keys[1].as_str());
    let (a, b) = (root.as_key(Some(a_key)), root.as_key(Some(b_key)));
    fake.set_default(Some(FakeReply::text("Noted.")));

    // A's thread, named by its id, with a run that tells it a secret.
    let thread = expect_json(a.post_json("/v1/threads", &json!({})).await, StatusCode::CREATED).await;
    let theirs = thread["id"].as_str().expect("id").to_owned();
    let told =
        events(&lines(&root.base, "chat", Some(a_key), &input(&theirs, "a-1", "My PIN is 4711.")).await);
    assert_eq!(told.last().expect("last")["type"], "RUN_FINISHED", "{told:#?}");

    // B names A's thread, then a made-up id: the same answer, each a new thread of B's.
    let made_up = uuid::Uuid::now_v7().to_string();
    let mut answers = Vec::new();
    for (n, id) in [&theirs, &made_up].into_iter().enumerate() {
        let printed =
            events(&lines(&root.base, "chat", Some(b_key), &input(id, &format!("b-{n}"), "My PIN?")).await);
        let (first, last) = (&printed[0], printed.last().expect("last"));
        assert_eq!(
            (first["type"].as_str(), first["threadId"].as_str()),
            (Some("RUN_STARTED"), Some(id.as_str()))
        );
        assert_eq!(
            (last["type"].as_str(), last["threadId"].as_str()),
            (Some("RUN_FINISHED"), Some(id.as_str())),
            "{printed:#?}"
        );
        let done = run(&b, last["result"]["run_id"].as_str().expect("run id")).await;
        let joined = done["thread_id"].as_str().expect("a thread").to_owned();
        assert_ne!(joined, theirs, "B's run joined A's thread");
        let thread = expect_json(b.get(&format!("/v1/threads/{joined}")).await, StatusCode::OK).await;
        assert_eq!(thread["metadata"]["ag_ui_id"], id.as_str(), "{thread}");
        answers.push((
            types(&printed).join(" "),
            done["status"].clone(),
            thread["runs"].as_array().map(Vec::len),
        ));
    }
    assert_eq!(answers[0], answers[1]);
    // B's model never saw A's conversation; A's thread has A's run only.
    for request in &fake.requests()[1..] {
        let prompt = request.to_string();
        assert!(!prompt.contains("4711") && !prompt.contains("Conversation so far"), "{prompt}");
    }
    let thread = expect_json(a.get(&format!("/v1/threads/{theirs}")).await, StatusCode::OK).await;
    assert_eq!(thread["runs"].as_array().map(Vec::len), Some(1), "{thread}");
}

#[sqlx::test(migrations = false)]
async fn a_run_whose_replica_dies_is_followed_again_with_the_same_input(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    let base_url = fake.base_url();
    let env =
        [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-ag-ui"), ("AGENTD_LEASE_S", "2")];
    let first = Agentd::start(&url, &env);
    let proxy = Failover::start(&[first.base.as_str()]).await;
    register(&TestApp::at(&first.base), &chat_crew()).await;
    fake.push([
        FakeReply::text("lost with the replica").with_delay(Duration::from_secs(30)),
        FakeReply::text("Still here."),
    ]);
    let body = input("thr-kill", "run-kill", "Are you there?");
    let mut broken = client(&proxy.base, "chat", None, &body);
    let started = broken.wait_for("event", Duration::from_secs(30)).await;
    assert_eq!(started["event"]["type"], "RUN_STARTED");
    crate::worker::wait_requests(&fake, 1).await;
    let second = Agentd::start(&url, &env);
    proxy.add(&second.base);
    proxy.remove(&first.base);
    assert!(!first.signal("-KILL").await.success());
    let ended = broken.finish(Duration::from_secs(30)).await;
    assert!(
        ended.last().is_some_and(|l| l.get("done").is_none()),
        "the broken stream cannot end well: {ended:#?}"
    );

    // The same input again, through the same URL: the run, recovered on the other replica.
    let again = events(&lines(&proxy.base, "chat", None, &body).await);
    let finished = again.last().expect("last");
    assert_eq!(
        (finished["type"].as_str(), finished["result"]["output"].as_str()),
        (Some("RUN_FINISHED"), Some("Still here.")),
        "{again:#?}"
    );
    let done = run(&TestApp::at(&second.base), finished["result"]["run_id"].as_str().expect("id")).await;
    assert_eq!(done["attempt"], 2, "{done}");
    assert_eq!(fake.requests().len(), 2);
}

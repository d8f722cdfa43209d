//! A2A 1.0 driven by the official A2A SDK's client (`a2a-sdk`, `tests/a2a/client.py`): cards,
//! a blocking message, a streamed task, get/list/cancel, a tool call approved through
//! `INPUT_REQUIRED`, a context as a thread, push notification configs as signed webhooks, an
//! unpublished crew and another tenant's key, protocol errors, and a replica killed mid-task
//! whose task the client subscribes to again and sees complete.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::{published_crew, register, run, Client, Failover, ROOT};
use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, loopback_egress, TestApp, WebhookSink};
use crate::worker::{fake_config, fast_settings, start_workers};

fn python() -> String {
    format!("{ROOT}/target/a2a-venv/bin/python")
}

/// The SDK's client against the card at `card`, running `command`.
fn client(card: &str, key: Option<&str>, command: &[&str]) -> Client {
    let mut args = vec![
        format!("{ROOT}/tests/a2a/client.py"),
        "--card-url".into(),
        card.into(),
        "--timeout".into(),
        "60".into(),
    ];
    if let Some(key) = key {
        args.extend(["--key".into(), key.into()]);
    }
    args.extend(command.iter().map(|s| (*s).to_owned()));
    Client::start(&python(), &args, "tests/a2a/setup.sh")
}

async fn last(card: &str, key: Option<&str>, command: &[&str]) -> Value {
    client(card, key, command).finish(Duration::from_secs(90)).await.pop().expect("a line")
}

fn card_url(base: &str, crew: &str) -> String {
    format!("{base}/a2a/{crew}/.well-known/agent-card.json")
}

const ROOT_KEY: &str = "root-key-a2a";

async fn tenant_key(root: &TestApp, tenant: &str, scopes: &[&str]) -> String {
    if root.get(&format!("/v1/tenants/{tenant}")).await.status() == StatusCode::NOT_FOUND {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
    }
    let body = json!({"tenant": tenant, "name": format!("{tenant} {scopes:?}"), "scopes": scopes});
    expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await["key"]
        .as_str()
        .expect("key")
        .to_owned()
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_sdk_sends_streams_gets_lists_and_cancels_tasks(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse(ROOT_KEY);
    config.webhooks.key = Some(
        agentd::webhooks::SigningKey::parse("whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=").expect("key"),
    );
    // Push notifications go to a receiver of the test's own, on loopback.
    config.webhooks.egress = loopback_egress();
    let sink = WebhookSink::start().await;
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some(ROOT_KEY));
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let key = tenant_key(&root, "team-a", &["read", "kickoff", "manage", "approve"]).await;
    let other = tenant_key(&root, "team-b", &["read", "kickoff", "manage"]).await;
    let a = root.as_key(Some(&key));
    register(&a, &published_crew("research", json!({"a2a": true}))).await;
    register(&a, &published_crew("hidden", json!({"mcp": true}))).await;
    let card = card_url(&root.base, "research");

    // The card: the crew as an agent, bearer auth, streaming, push notifications.
    let resolved = last(&card, Some(&key), &["card"]).await;
    let resolved = &resolved["card"];
    assert_eq!(
        (resolved["name"].as_str(), resolved["description"].as_str()),
        (Some("research"), Some("Answers a question (research).")),
        "{resolved}"
    );
    assert_eq!(resolved["supportedInterfaces"][0]["url"], format!("{}/a2a/research", root.base));
    assert_eq!(
        (
            resolved["capabilities"]["streaming"].as_bool(),
            resolved["capabilities"]["pushNotifications"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert_eq!(resolved["skills"][0]["id"], "research");

    // A blocking message: the task, completed, with the output as its artifact.
    fake.push([FakeReply::text("Because of physics.")]);
    let sent = last(&card, Some(&key), &["send", "Why is the sky blue?"]).await;
    let task = &sent["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Because of physics.");
    let task_id = task["id"].as_str().expect("id").to_owned();
    let context = task["contextId"].as_str().expect("context").to_owned();
    let done = run(&a, &task_id).await;
    assert_eq!(
        (done["status"].as_str(), done["inputs"]["question"].as_str()),
        (Some("completed"), Some("Why is the sky blue?"))
    );

    // The same context: a thread, whose next task sees the first.
    fake.push([FakeReply::text("Rayleigh, as I said.")]);
    let streamed = client(&card, Some(&key), &["stream", "And at sunset?", "--context-id", &context])
        .finish(Duration::from_secs(60))
        .await;
    let items: Vec<&Value> = streamed.iter().filter_map(|l| l.get("event")).collect();
    assert!(items[0].get("task").is_some(), "{streamed:#?}");
    let states: Vec<&str> =
        items.iter().filter_map(|i| i["statusUpdate"]["status"]["state"].as_str()).collect();
    assert_eq!(states.first(), Some(&"TASK_STATE_WORKING"), "{states:?}");
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{states:?}");
    let artifact = items.iter().find_map(|i| i.get("artifactUpdate")).expect("an artifact update");
    assert_eq!(artifact["artifact"]["parts"][0]["text"], "Rayleigh, as I said.");
    assert!(fake.requests()[1].to_string().contains("Conversation so far"), "the context is a thread");
    assert_eq!(streamed.last().expect("done")["done"], true);

    // get and list (by context).
    let got = last(&card, Some(&key), &["get", &task_id]).await;
    assert_eq!(state(&got["task"]), "TASK_STATE_COMPLETED");
    let listed = last(&card, Some(&key), &["list", "--context-id", &context]).await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(2), "{listed}");
    let one = last(&card, Some(&key), &["list", "--page-size", "1"]).await;
    assert_eq!(one["tasks"].as_array().map(Vec::len), Some(1), "{one}");
    let token = one["nextPageToken"].as_str().expect("a next page").to_owned();
    let rest = last(&card, Some(&key), &["list", "--page-size", "1", "--page-token", &token]).await;
    assert_ne!(rest["tasks"][0]["id"], one["tasks"][0]["id"], "{rest}");

    // Cancel a task that is still working; a finished one cannot be.
    fake.push([FakeReply::text("too late").with_delay(Duration::from_secs(30))]);
    let pending = last(&card, Some(&key), &["send", "Slowly?", "--return-immediately"]).await;
    let slow = pending["task"]["id"].as_str().expect("id").to_owned();
    crate::worker::wait_requests(&fake, 3).await;
    // A push config on it: a webhook of the run, signed.
    let push_url = sink.url("/a2a");
    let pushed = last(&card, Some(&key), &["push-set", &slow, &push_url]).await;
    let config_id = pushed["config"]["id"].as_str().unwrap_or_else(|| panic!("{pushed}")).to_owned();
    let hooks = expect_json(a.get(&format!("/v1/webhooks?run_id={slow}")).await, StatusCode::OK).await;
    assert!(hooks.to_string().contains(&push_url), "{hooks}");
    assert_eq!(last(&card, Some(&key), &["push-get", &slow, &config_id]).await["config"]["url"], push_url);
    assert_eq!(
        last(&card, Some(&key), &["push-list", &slow]).await["configs"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(last(&card, Some(&key), &["push-delete", &slow, &config_id]).await["deleted"], true);
    let cancelled = last(&card, Some(&key), &["cancel", &slow]).await;
    assert_eq!(state(&cancelled["task"]), "TASK_STATE_CANCELED", "{cancelled}");
    assert_eq!(last(&card, Some(&key), &["cancel", &task_id]).await["error"]["code"], -32002);

    // Errors: an unknown task, an unpublished crew, another tenant.
    assert_eq!(
        last(&card, Some(&key), &["get", "0195f0c2-0000-7000-8000-000000000000"]).await["error"]["code"],
        -32001
    );
    assert_eq!(last(&card_url(&root.base, "hidden"), Some(&key), &["card"]).await["http_error"], 404);
    assert_eq!(last(&card, Some(&other), &["card"]).await["http_error"], 404);
    // Without a key: the public card, the same for any name (it tells nothing of the tenant's
    // crews), saying how to authenticate.
    let public = last(&card, None, &["card"]).await;
    assert_eq!(public["card"]["name"], "research", "{public}");
    assert!(public["card"]["description"].as_str().is_some_and(|d| d.contains("Authenticate")), "{public}");
    assert!(!public.to_string().contains("Answers a question"), "{public}");
    let unknown = last(&card_url(&root.base, "no-such-crew"), None, &["card"]).await;
    assert_eq!(unknown["card"]["name"], "no-such-crew", "{unknown}");
    let theirs = format!("{}/.well-known/agent-card.json", root.base);
    let discovery = last(&theirs, Some(&other), &["card"]).await;
    // (ProtoJSON leaves an empty list out.)
    assert!(
        discovery["card"]["name"] == "agentd"
            && discovery["card"]["skills"].as_array().is_none_or(Vec::is_empty),
        "{discovery}"
    );
    let ours = last(&theirs, Some(&key), &["card"]).await;
    assert_eq!(ours["card"]["skills"][0]["id"], "research", "{ours}");
    // Another tenant cannot see the task through agentd's own endpoint either.
    assert_eq!(last(&theirs, Some(&other), &["get", &task_id]).await["error"]["code"], -32001);
}

/// Another tenant's thread id as a `contextId` is a context like any the server has not seen: a
/// new thread of the caller's own (answered as for a made-up id), which neither joins the other
/// tenant's thread nor sees its history.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenants_thread_as_a_context_is_a_new_context(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse(ROOT_KEY);
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some(ROOT_KEY));
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let key = tenant_key(&root, "team-a", &["read", "kickoff", "manage"]).await;
    let other = tenant_key(&root, "team-b", &["read", "kickoff", "manage"]).await;
    let (a, b) = (root.as_key(Some(&key)), root.as_key(Some(&other)));
    for app in [&a, &b] {
        register(app, &published_crew("research", json!({"a2a": true}))).await;
    }
    let card = card_url(&root.base, "research");
    fake.set_default(Some(FakeReply::text("Noted.")));

    // A's thread, named as a context, with a task that tells it a secret.
    let thread = expect_json(a.post_json("/v1/threads", &json!({})).await, StatusCode::CREATED).await;
    let theirs = thread["id"].as_str().expect("id").to_owned();
    let told = last(&card, Some(&key), &["send", "My PIN is 4711.", "--context-id", &theirs]).await;
    assert_eq!(state(&told["task"]), "TASK_STATE_COMPLETED", "{told}");
    assert_eq!(run(&a, told["task"]["id"].as_str().expect("id")).await["thread_id"], theirs.as_str());

    // B names A's thread, then a made-up id: the same answer, each a new context of B's.
    let made_up = uuid::Uuid::now_v7().to_string();
    let mut answers = Vec::new();
    for id in [&theirs, &made_up] {
        let sent = last(&card, Some(&other), &["send", "My PIN?", "--context-id", id]).await;
        let task = &sent["task"];
        assert_eq!(task["contextId"], id.as_str(), "{sent}");
        let done = run(&b, task["id"].as_str().expect("id")).await;
        let joined = done["thread_id"].as_str().expect("a thread").to_owned();
        assert_ne!(joined, theirs, "B's task joined A's thread");
        let thread = expect_json(b.get(&format!("/v1/threads/{joined}")).await, StatusCode::OK).await;
        assert_eq!(thread["metadata"]["a2a_id"], id.as_str(), "{thread}");
        answers.push((
            state(task).to_owned(),
            task["artifacts"][0]["parts"].clone(),
            thread["runs"].as_array().map(Vec::len),
        ));
    }
    assert_eq!(answers[0], answers[1]);
    for request in &fake.requests()[1..] {
        let prompt = request.to_string();
        assert!(!prompt.contains("4711") && !prompt.contains("Conversation so far"), "{prompt}");
    }
    let thread = expect_json(a.get(&format!("/v1/threads/{theirs}")).await, StatusCode::OK).await;
    assert_eq!(thread["runs"].as_array().map(Vec::len), Some(1), "{thread}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_tool_call_awaiting_approval_is_input_required_and_a_reply_decides_it(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse(ROOT_KEY);
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some(ROOT_KEY));
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let approver = tenant_key(&root, "team-a", &["read", "kickoff", "manage", "approve"]).await;
    let kicker = tenant_key(&root, "team-a", &["read", "kickoff"]).await;
    let app = root.as_key(Some(&approver));
    register(&app, &json!({
        "name": "calc",
        "agents": [{"name": "a", "role": "Mathematician", "goal": "Compute", "backstory": "Exact.", "tools": ["calculator"]}],
        "tasks": [{"name": "t", "description": "What is {expr}?", "expected_output": "A number", "agent": "a"}],
        "requires_approval": ["calculator"],
        "publish": {"a2a": true},
    })).await;
    let card = card_url(&app.base, "calc");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("42."),
    ]);
    // The text is the crew's one input.
    let waiting = last(&card, Some(&approver), &["send", "6*7"]).await;
    let task = &waiting["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let parts = &task["status"]["message"]["parts"];
    assert_eq!(parts[1]["data"]["tool_calls"][0]["tool"], "calculator", "{task}");
    let id = task["id"].as_str().expect("id").to_owned();
    let context = task["contextId"].as_str().expect("context").to_owned();

    // A key that may kick off but not approve cannot decide.
    let refused = last(&card, Some(&kicker), &["send", "approve", "--task-id", &id]).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("'approve' scope"), "{refused}");
    // A reply that decides nothing, one in another context.
    let unclear = last(&card, Some(&approver), &["send", "hmm", "--task-id", &id]).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    let elsewhere =
        last(&card, Some(&approver), &["send", "approve", "--task-id", &id, "--context-id", "other"]).await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");

    // Approve (streamed): the call runs, the task completes.
    let streamed =
        client(&card, Some(&approver), &["stream", "approve", "--task-id", &id, "--context-id", &context])
            .finish(Duration::from_secs(60))
            .await;
    let items: Vec<&Value> = streamed.iter().filter_map(|l| l.get("event")).collect();
    let states: Vec<&str> =
        items.iter().filter_map(|i| i["statusUpdate"]["status"]["state"].as_str()).collect();
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{streamed:#?}");
    let calls = expect_json(app.get(&format!("/v1/runs/{id}/tool-calls")).await, StatusCode::OK).await;
    assert_eq!(calls["tool_calls"][0]["result"], "42", "{calls}");
    // A finished task takes no more messages.
    assert_eq!(
        last(&card, Some(&approver), &["send", "approve", "--task-id", &id]).await["error"]["code"],
        -32004
    );
    assert_eq!(last(&card, Some(&approver), &["subscribe", &id]).await["error"]["code"], -32004);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn malformed_requests_get_the_protocols_errors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    register(&app, &published_crew("research", json!({"a2a": true}))).await;
    let rpc = |body: &'static str| {
        app.client
            .post(format!("{}/a2a/research", app.base))
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .body(body)
            .send()
    };
    let code = |value: Value| value["error"]["code"].as_i64();
    let answer = |response: reqwest::Response| async move {
        assert_eq!(response.status(), StatusCode::OK, "A2A errors come with HTTP 200");
        response.json::<Value>().await.expect("json")
    };
    assert_eq!(code(answer(rpc("{").await.expect("POST")).await), Some(-32700));
    assert_eq!(
        code(
            answer(
                rpc(r#"{"jsonrpc":"2.0","id":"1","method":"message/send","params":{}}"#).await.expect("POST")
            )
            .await
        ),
        Some(-32601)
    );
    assert_eq!(
        code(
            answer(
                rpc(r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{}}"#).await.expect("POST")
            )
            .await
        ),
        Some(-32602)
    );
    let no_parts = r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#;
    assert_eq!(code(answer(rpc(no_parts).await.expect("POST")).await), Some(-32602));
    let no_inputs = r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"other":1}}]}}}"#;
    assert_eq!(code(answer(rpc(no_inputs).await.expect("POST")).await), Some(-32602));
    let file = r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"http://127.0.0.1:9/y.png"}]}}}"#;
    assert_eq!(code(answer(rpc(file).await.expect("POST")).await), Some(-32005));
    // The extended card is the crew's own card (the public one, to a client without a key, names
    // no crew).
    let extended = answer(
        rpc(r#"{"jsonrpc":"2.0","id":"1","method":"GetExtendedAgentCard","params":{}}"#).await.expect("POST"),
    )
    .await;
    assert_eq!(extended["result"]["name"], "research", "{extended}");
    assert_eq!(
        extended["result"]["skills"][0]["description"],
        "Answers a question (research). Inputs (a data part, or the text as `message`): question.",
        "{extended}"
    );
    assert_eq!(
        code(
            answer(
                rpc(r#"{"jsonrpc":"2.0","id":"1","method":"ListTasks","params":{"pageSize":1000}}"#)
                    .await
                    .expect("POST")
            )
            .await
        ),
        Some(-32602)
    );
    // Push configs need the server's webhook secret (none here).
    let push =
        r#"{"jsonrpc":"2.0","id":"1","method":"ListTaskPushNotificationConfigs","params":{"taskId":"x"}}"#;
    assert_eq!(code(answer(rpc(push).await.expect("POST")).await), Some(-32003));
    let old = app
        .client
        .post(format!("{}/a2a/research", app.base))
        .header("a2a-version", "0.3")
        .json(&json!({"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("POST");
    assert_eq!(code(answer(old).await), Some(-32009));
    // agentd's own endpoint needs the crew named when the tenant publishes more than one.
    register(&app, &published_crew("second", json!({"a2a": true}))).await;
    let unnamed = app.client.post(format!("{}/a2a", app.base)).json(&json!({"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "q"}]}}})).send().await.expect("POST");
    let unnamed: Value = unnamed.json().await.expect("json");
    assert_eq!(code(unnamed.clone()), Some(-32602), "{unnamed}");
    assert!(unnamed["error"]["message"].as_str().is_some_and(|m| m.contains("metadata.skill")));
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    for line in [
        "agentd_protocol_requests_total{protocol=\"a2a\",method=\"other\"} 1",
        "agentd_protocol_requests_total{protocol=\"a2a\",method=\"SendMessage\"} 5",
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_task_whose_replica_dies_completes_and_the_client_sees_it_through_a_new_subscription(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    let base_url = fake.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-a2a"), ("AGENTD_LEASE_S", "2")];
    let first = Agentd::start(&url, &env);
    let proxy = Failover::start(&[first.base.as_str()]).await;
    register(&TestApp::at(&first.base), &published_crew("research", json!({"a2a": true}))).await;
    fake.push([
        FakeReply::text("lost with the replica").with_delay(Duration::from_secs(30)),
        FakeReply::text("Still here."),
    ]);
    let card = card_url(&proxy.base, "research");
    let mut streaming = client(&card, None, &["stream", "Are you there?"]);
    let first_item = streaming.wait_for("event", Duration::from_secs(30)).await;
    let id = first_item["event"]["task"]["id"].as_str().expect("the task").to_owned();
    crate::worker::wait_requests(&fake, 1).await;
    let second = Agentd::start(&url, &env);
    proxy.add(&second.base);
    proxy.remove(&first.base);
    assert!(!first.signal("-KILL").await.success());
    let broken = streaming.finish(Duration::from_secs(60)).await;
    assert!(
        broken.iter().all(|l| l["event"]["statusUpdate"]["status"]["state"] != "TASK_STATE_COMPLETED"),
        "{broken:#?}"
    );

    // The client subscribes again through the same URL: the task completes on the other replica.
    let resumed = client(&card, None, &["subscribe", &id]).finish(Duration::from_secs(60)).await;
    let items: Vec<&Value> = resumed.iter().filter_map(|l| l.get("event")).collect();
    assert_eq!(items[0]["task"]["id"].as_str(), Some(id.as_str()), "{resumed:#?}");
    let states: Vec<&str> =
        items.iter().filter_map(|i| i["statusUpdate"]["status"]["state"].as_str()).collect();
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{resumed:#?}");
    let got = last(&card, None, &["get", &id]).await;
    assert_eq!(got["task"]["artifacts"][0]["parts"][0]["text"], "Still here.");
    assert_eq!(run(&TestApp::at(&second.base), &id).await["attempt"], 2);
}

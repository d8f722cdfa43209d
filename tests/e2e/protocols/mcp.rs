//! agentd's MCP server (`/mcp`) driven by the official MCP Python SDK's client
//! (`tests/mcp/client.py`) in each of its connect modes: the current revision (2026-07-28,
//! stateless), the handshake (`initialize`, 2025-11-25) and `auto` (discover, then whichever
//! the server speaks). Published crews are tools; an unpublished one and another tenant's are not;
//! calls report progress, fail as `isError`, are cancelled, and survive the death of the replica
//! serving them; malformed requests get the protocol's errors.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::{published_crew, register, run, Client, Failover, ROOT};
use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers, wait_for};

const MODES: [&str; 3] = ["auto", "legacy", "2026-07-28"];

fn python() -> String {
    format!("{ROOT}/target/mcp-venv/bin/python")
}

/// The SDK's client against `url` with `key`, in `mode`, running `command`.
fn client(url: &str, key: Option<&str>, mode: &str, command: &[&str]) -> Client {
    let mut args =
        vec![format!("{ROOT}/tests/mcp/client.py"), "--url".into(), url.into(), "--mode".into(), mode.into()];
    if let Some(key) = key {
        args.extend(["--key".into(), key.into()]);
    }
    args.extend(command.iter().map(|s| (*s).to_owned()));
    Client::start(&python(), &args, "tests/mcp/setup.sh")
}

/// Every line a finished command printed.
async fn lines(url: &str, key: Option<&str>, mode: &str, command: &[&str]) -> Vec<Value> {
    client(url, key, mode, command).finish(Duration::from_secs(60)).await
}

/// The last line of a finished command.
async fn last(url: &str, key: Option<&str>, mode: &str, command: &[&str]) -> Value {
    lines(url, key, mode, command).await.pop().expect("a line")
}

/// A tenant with a key of `scopes`, created by the operator (`root`).
async fn tenant_key(root: &TestApp, tenant: &str, scopes: &[&str]) -> String {
    if root.get(&format!("/v1/tenants/{tenant}")).await.status() == StatusCode::NOT_FOUND {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
    }
    let body = json!({"tenant": tenant, "name": format!("{tenant} {scopes:?}"), "scopes": scopes});
    let created = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
    created["key"].as_str().expect("key").to_owned()
}

const ROOT_KEY: &str = "root-key-mcp";

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_sdk_lists_and_calls_published_crews_with_progress_in_every_mode(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse(ROOT_KEY);
    let root = TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some(ROOT_KEY));
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let key = tenant_key(&root, "team-a", &["read", "kickoff", "manage"]).await;
    let other = tenant_key(&root, "team-b", &["read", "kickoff", "manage"]).await;
    let a = root.as_key(Some(&key));
    let mut research = published_crew("research", json!({"mcp": true}));
    research["inputs_schema"] = json!({
        "type": "object",
        "properties": {"question": {"type": "string", "minLength": 3, "description": "What to answer"}},
        "required": ["question"],
    });
    register(&a, &research).await;
    register(&a, &published_crew("hidden", json!({}))).await;
    register(&a, &published_crew("a2a-only", json!({"a2a": true}))).await;
    let url = format!("{}/mcp", root.base);

    for (i, mode) in MODES.iter().enumerate() {
        // tools/list: the published crew only, with its schema and description.
        let listed = last(&url, Some(&key), mode, &["list"]).await;
        let tools = listed["tools"].as_array().unwrap_or_else(|| panic!("{mode}: {listed}"));
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["research"], "{mode}: {listed}");
        assert_eq!(tools[0]["description"], "Answers a question (research).");
        assert_eq!(tools[0]["inputSchema"]["properties"]["question"]["minLength"], 3);
        assert_eq!(tools[0]["outputSchema"]["required"], json!(["run_id", "status", "output"]));

        // tools/call with progress: the run's tasks as notifications, then the final output.
        let answer = format!("Answer number {i}.");
        fake.push([FakeReply::text(&answer)]);
        let printed =
            lines(&url, Some(&key), mode, &["call", "research", r#"{"question": "Why?"}"#, "--progress"])
                .await;
        let (progress, rest): (Vec<&Value>, Vec<&Value>) =
            printed.iter().partition(|l| l.get("progress").is_some());
        let messages: Vec<&str> = progress.iter().filter_map(|p| p["message"].as_str()).collect();
        assert!(
            messages.contains(&"task 'answer' started") && messages.contains(&"task 'answer' completed"),
            "{mode}: {printed:#?}"
        );
        let values: Vec<f64> = progress.iter().filter_map(|p| p["progress"].as_f64()).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{mode}: progress must increase: {values:?}");
        let result = &rest.last().expect("a result")["result"];
        assert_eq!(result["isError"], false, "{mode}: {printed:#?}");
        assert_eq!(result["content"][0]["text"].as_str(), Some(answer.as_str()));
        let structured = &result["structuredContent"];
        assert_eq!(
            (structured["output"].as_str(), structured["status"].as_str()),
            (Some(answer.as_str()), Some("completed"))
        );
        let done = run(&a, structured["run_id"].as_str().expect("run id")).await;
        assert_eq!(
            (done["status"].as_str(), done["crew_name"].as_str()),
            (Some("completed"), Some("research"))
        );
        assert_eq!(done["metadata"]["mcp_tool"], "research");

        // Arguments the inputs schema refuses: a tool error the model can act on, no run.
        let refused = last(&url, Some(&key), mode, &["call", "research", r#"{"question": "?"}"#]).await;
        assert_eq!(refused["result"]["isError"], true, "{mode}: {refused}");
        let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("inputs.question"), "{mode}: {text}");

        // An unpublished crew, and one published elsewhere, are unknown tools.
        for name in ["hidden", "a2a-only", "nope"] {
            let unknown = last(&url, Some(&key), mode, &["call", name, r#"{"question": "Why?"}"#]).await;
            assert_eq!(unknown["error"]["code"], -32602, "{mode} {name}: {unknown}");
        }

        // Another tenant sees no tools and cannot call this tenant's.
        let theirs = last(&url, Some(&other), mode, &["list"]).await;
        assert_eq!(theirs["tools"], json!([]), "{mode}: {theirs}");
        let theirs = last(&url, Some(&other), mode, &["call", "research", r#"{"question": "Why?"}"#]).await;
        assert_eq!(theirs["error"]["code"], -32602, "{mode}: {theirs}");

        // No key, or a wrong one.
        assert_eq!(last(&url, None, mode, &["list"]).await["http_error"], 401, "{mode}");
        assert_eq!(last(&url, Some("agd_wrong"), mode, &["list"]).await["http_error"], 401, "{mode}");
    }

    // A run that fails is an isError result naming why.
    fake.push([FakeReply::error(400, "the model refuses")]);
    let failed = last(&url, Some(&key), "auto", &["call", "research", r#"{"question": "Fail?"}"#]).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = failed["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("the run failed"), "{text}");
    assert!(failed["result"].get("structuredContent").is_none(), "{failed}");

    // A key that may read but not kick off lists, and is refused the call.
    let reader = tenant_key(&root, "team-a", &["read"]).await;
    assert_eq!(last(&url, Some(&reader), "auto", &["list"]).await["tools"][0]["name"], "research");
    let refused = last(&url, Some(&reader), "auto", &["call", "research", r#"{"question": "Why?"}"#]).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("'kickoff' scope"), "{refused}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn cancelling_a_call_cancels_its_run_in_both_eras(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let _workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    register(&app, &published_crew("slow", json!({"mcp": true}))).await;
    let url = format!("{}/mcp", app.base);
    for mode in ["legacy", "2026-07-28"] {
        fake.push([FakeReply::text("too late").with_delay(Duration::from_secs(30))]);
        let printed =
            lines(&url, None, mode, &["cancel", "slow", r#"{"question": "Wait?"}"#, "--after-progress", "2"])
                .await;
        assert_eq!(printed.last().expect("a line")["cancelled"], true, "{mode}: {printed:#?}");
        // The run the call started is cancelled.
        let runs = expect_json(app.get("/v1/runs?limit=1").await, StatusCode::OK).await;
        let id = runs["runs"][0]["id"].as_str().expect("a run").to_owned();
        let cancelled = wait_for(&app, &id, &["cancelled"]).await;
        assert_eq!(cancelled["status"], "cancelled", "{mode}");
        let audit = expect_json(app.get("/v1/audit?action=run.cancel").await, StatusCode::OK).await;
        assert!(audit.to_string().contains("/mcp"), "{mode}: {audit}");
    }
}

/// A request as a current-revision client sends it, with `headers` replacing its own (a name
/// given twice in `headers` is sent twice).
async fn modern_post(app: &TestApp, body: &Value, headers: &[(&str, &str)]) -> (StatusCode, Value) {
    let method = body["method"].as_str().unwrap_or_default();
    let defaults = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    let mut request =
        app.client.post(format!("{}/mcp", app.base)).header("accept", "application/json, text/event-stream");
    for (name, value) in defaults.into_iter().filter(|(name, _)| !headers.iter().any(|(n, _)| n == name)) {
        request = request.header(name, value);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.json(body).send().await.expect("POST /mcp");
    let status = response.status();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(json!({"text": text})))
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn malformed_requests_get_the_protocols_errors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    register(&app, &published_crew("research", json!({"mcp": true}))).await;
    let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let request =
        |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let with_meta = |mut params: Value| {
        params["_meta"] = envelope.clone();
        params
    };
    let code = |answer: &(StatusCode, Value)| (answer.0, answer.1["error"]["code"].as_i64());

    // Not JSON; a batch; not JSON-RPC.
    let raw = |body: &'static str| {
        app.client
            .post(format!("{}/mcp", app.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let parse = raw("{").await.expect("POST");
    assert_eq!(parse.status(), StatusCode::BAD_REQUEST);
    assert_eq!(parse.json::<Value>().await.expect("json")["error"]["code"], -32700);
    let batch = raw(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#).await.expect("POST");
    assert_eq!(
        (batch.status(), batch.json::<Value>().await.expect("json")["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32600))
    );

    // The current revision's envelope and headers.
    let listed = modern_post(&app, &request("tools/list", with_meta(json!({}))), &[]).await;
    assert_eq!(listed.0, StatusCode::OK, "{listed:?}");
    assert_eq!(
        (listed.1["result"]["resultType"].as_str(), listed.1["result"]["ttlMs"].as_i64()),
        (Some("complete"), Some(0))
    );
    assert_eq!(listed.1["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "agentd");
    let no_envelope = modern_post(&app, &request("tools/list", json!({})), &[]).await;
    assert_eq!(code(&no_envelope), (StatusCode::BAD_REQUEST, Some(-32602)), "{no_envelope:?}");
    let wrong_method =
        modern_post(&app, &request("tools/list", with_meta(json!({}))), &[("mcp-method", "tools/call")])
            .await;
    assert_eq!(code(&wrong_method), (StatusCode::BAD_REQUEST, Some(-32020)), "{wrong_method:?}");
    let call = request("tools/call", with_meta(json!({"name": "research", "arguments": {"question": "q"}})));
    let wrong_name = modern_post(&app, &call, &[("mcp-name", "other")]).await;
    assert_eq!(code(&wrong_name), (StatusCode::BAD_REQUEST, Some(-32020)), "{wrong_name:?}");
    let mut future = request("tools/list", json!({}));
    future["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
    let unsupported = modern_post(&app, &future, &[("mcp-protocol-version", "2099-01-01")]).await;
    assert_eq!(code(&unsupported), (StatusCode::BAD_REQUEST, Some(-32022)), "{unsupported:?}");
    assert!(unsupported.1["error"]["data"]["supported"]
        .as_array()
        .is_some_and(|v| v.contains(&json!("2026-07-28"))));
    let unknown = modern_post(
        &app,
        &request("resources/list", with_meta(json!({}))),
        &[("mcp-method", "resources/list")],
    )
    .await;
    // An unknown method is a JSON-RPC error with 200: a 404 tells a client its session ended.
    assert_eq!(code(&unknown), (StatusCode::OK, Some(-32601)), "{unknown:?}");
    let discover = modern_post(
        &app,
        &request("server/discover", with_meta(json!({}))),
        &[("mcp-method", "server/discover")],
    )
    .await;
    assert!(
        discover.1["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28")) && v.contains(&json!("2025-11-25"))),
        "{discover:?}"
    );
    let bad_arguments = request("tools/call", with_meta(json!({"name": "research", "arguments": [1]})));
    let bad_arguments = modern_post(&app, &bad_arguments, &[("mcp-method", "tools/call")]).await;
    assert_eq!(code(&bad_arguments), (StatusCode::BAD_REQUEST, Some(-32602)), "{bad_arguments:?}");

    // The handshake: a session id on initialize; later requests without it are refused.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = app.client.post(format!("{}/mcp", app.base)).json(&init).send().await.expect("POST");
    let session =
        response.headers().get("mcp-session-id").expect("a session id").to_str().expect("text").to_owned();
    assert_eq!(session.len(), 32);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18", "{answer}");
    let legacy = |session: Option<&str>| {
        let mut request =
            app.client.post(format!("{}/mcp", app.base)).header("mcp-protocol-version", "2025-06-18");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).send()
    };
    let pong = legacy(Some(&session)).await.expect("POST");
    assert_eq!(pong.json::<Value>().await.expect("json")["result"], json!({}));
    let missing = legacy(None).await.expect("POST");
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert_eq!(missing.json::<Value>().await.expect("json")["error"]["code"], -32600);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = app
        .client
        .post(format!("{}/mcp", app.base))
        .header("mcp-session-id", &session)
        .json(&note)
        .send()
        .await
        .expect("POST");
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);

    // GET opens no stream without Last-Event-ID; one it did not write is refused; DELETE: 405.
    let get = app.client.get(format!("{}/mcp", app.base)).send().await.expect("GET");
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let forged =
        app.client.get(format!("{}/mcp", app.base)).header("last-event-id", "abc").send().await.expect("GET");
    assert_eq!(forged.status(), StatusCode::BAD_REQUEST);
    let delete = app.client.delete(format!("{}/mcp", app.base)).send().await.expect("DELETE");
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);

    // Requests are counted by method; one the server does not serve is `other` (a client's text
    // never becomes a label).
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    for line in [
        "agentd_protocol_requests_total{protocol=\"mcp\",method=\"other\"} 1",
        "agentd_protocol_requests_total{protocol=\"mcp\",method=\"server/discover\"} 1",
        "agentd_protocol_requests_total{protocol=\"mcp\",method=\"initialize\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_call_survives_the_death_of_the_replica_serving_it(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    let base_url = fake.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-mcp"), ("AGENTD_LEASE_S", "2")];
    let mut serving = Agentd::start(&url, &env);
    let proxy = Failover::start(&[serving.base.as_str()]).await;
    register(&TestApp::at(&serving.base), &published_crew("research", json!({"mcp": true}))).await;
    let mcp = format!("{}/mcp", proxy.base);

    for (round, mode) in ["2026-07-28", "legacy"].into_iter().enumerate() {
        // The only replica takes the call and the run; while the model answers (slowly), a second
        // replica starts behind the same URL and the first is killed. The second recovers the run
        // and the client resumes its stream there.
        let answer = format!("survived {round}");
        fake.push([
            FakeReply::text("lost with the replica").with_delay(Duration::from_secs(30)),
            FakeReply::text(&answer),
        ]);
        let mut call =
            client(&mcp, None, mode, &["call", "research", r#"{"question": "Still there?"}"#, "--progress"]);
        let started = call.wait_for("progress", Duration::from_secs(30)).await;
        assert!(started["message"].is_string(), "{started}");
        crate::worker::wait_requests(&fake, 2 * round + 1).await;
        let next = Agentd::start(&url, &env);
        proxy.add(&next.base);
        let dead = std::mem::replace(&mut serving, next);
        proxy.remove(&dead.base);
        assert!(!dead.signal("-KILL").await.success());

        let printed = call.finish(Duration::from_secs(60)).await;
        let result = &printed.last().expect("a line")["result"];
        assert_eq!(result["content"][0]["text"].as_str(), Some(answer.as_str()), "{mode}: {printed:#?}");
        let id = result["structuredContent"]["run_id"].as_str().expect("run id");
        let done = run(&TestApp::at(&serving.base), id).await;
        assert_eq!(
            (done["status"].as_str(), done["attempt"].as_i64()),
            (Some("completed"), Some(2)),
            "{mode}: {done}"
        );
        let messages: Vec<&str> = printed.iter().filter_map(|l| l["message"].as_str()).collect();
        assert!(messages.contains(&"task 'answer' started"), "{mode}: {messages:?}");
    }
    assert_eq!(fake.requests().len(), 4, "each call's lost model call was made again once, no more");
}

//! The protocols' own conformance tools against agentd, installed pinned by
//! `tests/conformance/setup.sh`: the MCP conformance suite (`@modelcontextprotocol/conformance`
//! 0.1.16, on npm's Node.js 22) with every server scenario, and the official MCP TypeScript SDK's
//! client (`@modelcontextprotocol/sdk` 1.32.2) resuming a `tools/call` stream cut by the death of
//! the replica serving it. The DNS-rebinding defence (`allowed_origins`) on every protocol
//! endpoint is tested here too.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply, Script};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::{published_crew, register, run, Client, Failover, ROOT};
use crate::cli::{child_database_url, Agentd};
use crate::support::TestApp;
use crate::worker::{fake_config, fast_settings, start_workers};

fn here() -> String {
    format!("{ROOT}/tests/conformance")
}

/// npm's Node.js 22, which the suite needs.
fn node() -> String {
    format!("{}/node_modules/.bin/node", here())
}

/// The scenarios of the suite's baseline (`mcp-baseline.yml`): those agentd does not serve.
fn baseline() -> BTreeSet<String> {
    let text = std::fs::read_to_string(format!("{}/mcp-baseline.yml", here())).expect("mcp-baseline.yml");
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|name| name.trim().to_owned())
        .collect()
}

/// The scenario of a result folder: `server-<scenario>-<YYYY-MM-DD>T<time>`.
fn scenario_of(folder: &str) -> Option<String> {
    let rest = folder.strip_prefix("server-")?;
    let bytes = rest.as_bytes();
    // The first `-` followed by a date (`dddd-dd-ddT`) ends the scenario's name.
    let shape = b"-0000-00-00T";
    let at = (0..bytes.len().saturating_sub(shape.len() - 1)).find(|&i| {
        shape.iter().enumerate().all(|(k, &c)| {
            let b = bytes[i + k];
            if c == b'0' {
                b.is_ascii_digit()
            } else {
                b == c
            }
        })
    })?;
    Some(rest[..at].to_owned())
}

#[test]
fn result_folders_name_their_scenario() {
    let folder = "server-tools-call-embedded-resource-2026-12-06T00-30-02-208Z";
    assert_eq!(scenario_of(folder).as_deref(), Some("tools-call-embedded-resource"));
    assert_eq!(scenario_of("server-ping-2026-12-06T00-20-20-200Z").as_deref(), Some("ping"));
    assert_eq!(scenario_of("ping-2026"), None);
}

/// A crew the suite calls by its tool name: one task, published through MCP.
fn scenario_crew(name: &str, task: &str) -> Value {
    json!({
        "name": name,
        "description": format!("The MCP conformance suite's {name}."),
        "agents": [{"name": "a", "role": "Assistant", "goal": "Answer", "backstory": "Brief."}],
        "tasks": [{"name": "answer", "description": task, "expected_output": "A sentence", "agent": "a"}],
        "publish": {"mcp": true},
    })
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_mcp_conformance_suite_passes_every_scenario_agentd_serves(pool: PgPool) {
    let node = node();
    assert!(
        std::path::Path::new(&node).exists(),
        "{node} is missing: run tests/conformance/setup.sh (scripts/test.sh does) before the tests"
    );
    // The model answers every task, except the error scenario's: its run fails.
    let fake = FakeLlm::start().await.expect("fake");
    let script = Script::from_value(json!({"rules": [
            {"name": "the error scenario's run fails", "when": {"message": "FAIL ON PURPOSE"},
             "reply": {"error": {"status": 400, "message": "the model refuses (on purpose)"}}},
            {"name": "everything else", "reply": {"text": "Hello from the conformance crew."}},
    ]}))
    .expect("script");
    fake.set_script(Some(Arc::new(script)));
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let _workers = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));

    // The tools the scenarios call, as crews.
    register(&app, &scenario_crew("test_simple_text", "Say hello.")).await;
    register(&app, &scenario_crew("test_tool_with_progress", "Say hello.")).await;
    register(&app, &scenario_crew("test_error_handling", "FAIL ON PURPOSE")).await;
    let mut schema = scenario_crew("json_schema_2020_12_tool", "Say hello.");
    schema["inputs_schema"] = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": false,
    });
    register(&app, &schema).await;

    let results = std::env::temp_dir().join(format!("agentd-mcp-conformance-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&results).expect("results folder");
    let suite = format!("{}/node_modules/@modelcontextprotocol/conformance/dist/index.js", here());
    let output = tokio::time::timeout(
        Duration::from_secs(600),
        tokio::process::Command::new(&node)
            .args([suite.as_str(), "server", "--url", &format!("{}/mcp", app.base), "--suite", "all"])
            .args(["--expected-failures", &format!("{}/mcp-baseline.yml", here())])
            .args(["-o", results.to_str().expect("path")])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the suite took more than 10 minutes")
    .expect("run the suite");
    let printed =
        format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the MCP conformance suite failed:\n{printed}");

    // Every scenario's checks, read back: those agentd serves passed each check (at least one),
    // those of the baseline failed (the suite also refuses a baseline entry that passes).
    let not_served = baseline();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(&results).expect("results") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let scenario = scenario_of(&name).unwrap_or_else(|| panic!("unexpected result folder {name}"));
        let checks: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("checks.json")).expect("checks.json"))
                .expect("checks are JSON");
        let status = |s: &str| checks.iter().filter(|c| c["status"] == s).count();
        if not_served.contains(&scenario) {
            assert!(
                status("FAILURE") + status("WARNING") > 0,
                "{scenario} is in the baseline but passed: {checks:#?}"
            );
        } else {
            assert!(
                status("SUCCESS") > 0 && status("FAILURE") == 0 && status("WARNING") == 0,
                "{scenario}: {checks:#?}"
            );
        }
        seen.insert(scenario);
    }
    let served: Vec<&str> = [
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "tools-call-with-progress",
        "json-schema-2020-12",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ]
    .into_iter()
    .filter(|s| !seen.contains(*s))
    .collect();
    assert!(served.is_empty(), "scenarios that did not run: {served:?}\n{printed}");
    let missing: Vec<&String> = not_served.iter().filter(|s| !seen.contains(*s)).collect();
    assert!(missing.is_empty(), "baseline scenarios that did not run: {missing:?}");
    let _ = std::fs::remove_dir_all(&results);
}

/// The TypeScript SDK's client against `url`, running `command`.
fn ts_client(url: &str, command: &[&str]) -> Client {
    let mut args = vec![format!("{}/ts-client.mjs", here()), "--url".into(), url.into()];
    args.extend(command.iter().map(|s| (*s).to_owned()));
    Client::start(&node(), &args, "tests/conformance/setup.sh")
}

#[sqlx::test(migrations = false)]
async fn the_typescript_sdk_resumes_a_call_whose_replica_died(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    let base_url = fake.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-ts"), ("AGENTD_LEASE_S", "2")];
    let serving = Agentd::start(&url, &env);
    let proxy = Failover::start(&[serving.base.as_str()]).await;
    register(&TestApp::at(&serving.base), &published_crew("research", json!({"mcp": true}))).await;
    let mcp = format!("{}/mcp", proxy.base);

    // The SDK negotiates 2025-11-25: its call's stream starts with a priming event (an id, a
    // retry and an empty data field; without the data field the SDK's parser drops the event and
    // the call is never resumed). While the model answers (slowly) a second replica starts
    // behind the same URL and the first is killed: the SDK reconnects by itself with GET and
    // Last-Event-ID, reaching the second, which recovers the run and finishes the stream.
    fake.push([
        FakeReply::text("lost with the replica").with_delay(Duration::from_secs(30)),
        FakeReply::text("survived, in TypeScript"),
    ]);
    // No progress token: the priming event is the only one with an id before the cut.
    let call = ts_client(&mcp, &["call", "research", r#"{"question": "Still there?"}"#]);
    crate::worker::wait_requests(&fake, 1).await;
    let next = Agentd::start(&url, &env);
    proxy.add(&next.base);
    proxy.remove(&serving.base);
    assert!(!serving.signal("-KILL").await.success());

    let printed = call.finish(Duration::from_secs(90)).await;
    let resumed: Vec<&Value> = printed.iter().filter_map(|l| l.get("resumed")).collect();
    assert!(
        resumed
            .iter()
            .any(|r| r["status"] == 200 && r["last_event_id"].as_str().is_some_and(|id| !id.is_empty())),
        "the SDK never resumed the stream: {printed:#?}"
    );
    let result = &printed.last().expect("a line")["result"];
    assert_eq!(result["isError"], false, "{printed:#?}");
    assert_eq!(result["content"][0]["text"], "survived, in TypeScript", "{printed:#?}");
    let id = result["structuredContent"]["run_id"].as_str().expect("run id");
    let done = run(&TestApp::at(&next.base), id).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)), "{done}");
    assert_eq!(fake.requests().len(), 2, "the lost model call was made again once, no more");
}

/// A request of `method` to `path` with `Origin: origin` (none: no Origin header).
async fn with_origin(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    origin: Option<&str>,
) -> reqwest::Response {
    let mut request = app.request(method.clone(), path);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    if method == reqwest::Method::POST {
        request = request
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    }
    request.send().await.expect("request")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_origin_that_is_not_allowed_gets_403_on_every_protocol_endpoint(pool: PgPool) {
    use reqwest::Method;
    let app = TestApp::spawn_with_keys(pool.clone(), "origin-test-key").await;
    let protocol_endpoints = [
        (Method::POST, "/mcp"),
        (Method::GET, "/mcp"),
        (Method::POST, "/a2a"),
        (Method::POST, "/a2a/research"),
        (Method::POST, "/a2a/research/"),
        (Method::GET, "/a2a/research/.well-known/agent-card.json"),
        (Method::POST, "/v1/ag-ui/crews/research"),
    ];
    let own = app.base.clone();
    let port = own.rsplit(':').next().expect("port").to_owned();
    for (method, path) in &protocol_endpoints {
        // A page of another site (a DNS-rebinding attack): refused before the key is looked at,
        // with a key or without.
        for key in [Some("origin-test-key"), None] {
            let refused =
                with_origin(&app.as_key(key), method.clone(), path, Some("http://evil.example.com")).await;
            assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{method} {path} key {key:?}");
            assert_eq!(refused.headers()["content-type"], "application/problem+json", "{method} {path}");
            let body: Value = refused.json().await.expect("problem");
            assert!(body["detail"].as_str().is_some_and(|d| d.contains("allowed_origins")), "{body}");
        }
        // The server's own origins (the default: its bind), and clients that send no Origin,
        // reach the endpoint (its answer is whatever it is, never the origin's 403).
        for origin in [Some(own.as_str()), Some(&*format!("http://localhost:{port}")), None] {
            let passed = with_origin(&app, method.clone(), path, origin).await;
            let status = passed.status();
            let text = passed.text().await.unwrap_or_default();
            assert!(!text.contains("allowed_origins"), "{method} {path} from {origin:?}: {status} {text}");
        }
        // The same host at another port is another origin.
        let other_port = with_origin(&app, method.clone(), path, Some("http://127.0.0.1:1")).await;
        assert_eq!(other_port.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    // The REST API is not a protocol endpoint: its browsers are the dashboard's (same origin) and
    // keys guard it.
    let rest = with_origin(&app, Method::GET, "/v1/runs", Some("http://evil.example.com")).await;
    assert_eq!(rest.status(), StatusCode::OK);

    // An operator's list replaces the default: its origins pass, the bind's own no longer do.
    let mut config = crate::support::test_config();
    config.allowed_origins =
        agentd::net::OriginPolicy::parse("https://agents.example.com, http://localhost:3000")
            .expect("origins");
    let listed = TestApp::spawn_with(pool.clone(), config).await;
    let allowed = with_origin(&listed, Method::POST, "/mcp", Some("https://agents.example.com")).await;
    assert_ne!(allowed.status(), StatusCode::FORBIDDEN);
    let bind = listed.base.clone();
    let refused = with_origin(&listed, Method::POST, "/mcp", Some(&bind)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    // `*`: any origin.
    let mut config = crate::support::test_config();
    config.allowed_origins = agentd::net::OriginPolicy::Any;
    let open = TestApp::spawn_with(pool, config).await;
    let any = with_origin(&open, Method::POST, "/mcp", Some("http://evil.example.com")).await;
    assert_ne!(any.status(), StatusCode::FORBIDDEN);
}

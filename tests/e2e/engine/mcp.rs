//! MCP tools end to end, against servers nobody here wrote: the reference server
//! (`@modelcontextprotocol/server-everything`, Streamable HTTP) and a server on the official Python
//! SDK (`tests/mcp/server.py`) for what must be scripted. Both are installed from their registries
//! by `tests/mcp/setup.sh` (which `scripts/test.sh` and CI run).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::tools::CallInfo;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{allow_loopback, allow_loopback_with_secrets, crew, expect_json, offered, sent, Harness, LEASE};
use crate::cli::{child_database_url, Agentd};
use crate::support::{database_text, expect_problem};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// An MCP server in a child process, on a port of its own.
pub(crate) struct Peer {
    child: tokio::process::Child,
    kind: PeerKind,
    pub port: u16,
    /// Where the scripted server logs each call (one JSON line per call).
    log: PathBuf,
    _dir: Option<tempdir::Dir>,
}

#[derive(Clone, Copy)]
enum PeerKind {
    Everything,
    Scripted,
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Peer {
    /// The reference server, `@modelcontextprotocol/server-everything streamableHttp`.
    pub async fn everything() -> Self {
        Self::start(PeerKind::Everything, free_port(), None).await
    }

    /// The scripted server on the Python SDK.
    pub async fn scripted() -> Self {
        let dir = std::env::temp_dir().join(format!("agentd-mcp-{}", Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self::start(PeerKind::Scripted, free_port(), Some(tempdir::Dir(dir))).await
    }

    async fn start(kind: PeerKind, port: u16, dir: Option<tempdir::Dir>) -> Self {
        let log = dir.as_ref().map(|d| d.0.join("calls.jsonl")).unwrap_or_default();
        let child = spawn(kind, port, &log);
        wait_listening(port).await;
        Self { child, kind, port, log, _dir: dir }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Stop the server and start it again on the same port: every session is forgotten.
    pub async fn restart(&mut self) {
        self.child.kill().await.expect("kill the MCP server");
        self.child = spawn(self.kind, self.port, &self.log);
        wait_listening(self.port).await;
    }

    /// The calls the scripted server logged, in order.
    pub fn calls(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect()
    }

    /// Wait until the scripted server has logged `n` calls.
    pub async fn wait_calls(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let calls = self.calls();
            if calls.len() >= n {
                return calls;
            }
            assert!(Instant::now() < deadline, "the MCP server logged {} calls, not {n}", calls.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn spawn(kind: PeerKind, port: u16, log: &std::path::Path) -> tokio::process::Child {
    let missing = |what: &str| -> ! {
        panic!("{what} is not installed: run tests/mcp/setup.sh (scripts/test.sh does) before the tests")
    };
    let mut command = match kind {
        PeerKind::Everything => {
            let script = format!(
                "{ROOT}/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
            );
            if !std::path::Path::new(&script).exists() {
                missing("the MCP reference server (@modelcontextprotocol/server-everything)");
            }
            let mut command = tokio::process::Command::new("node");
            command.arg(script).arg("streamableHttp").env("PORT", port.to_string());
            command
        }
        PeerKind::Scripted => {
            let python = format!("{ROOT}/target/mcp-venv/bin/python");
            if !std::path::Path::new(&python).exists() {
                missing("the MCP Python SDK (target/mcp-venv)");
            }
            let mut command = tokio::process::Command::new(python);
            command.arg(format!("{ROOT}/tests/mcp/server.py")).arg(port.to_string()).arg(log);
            command
        }
    };
    command.stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true);
    command.spawn().expect("start the MCP server")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

async fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "the MCP server never listened on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The crew of these tests with `servers` and the agent's `tools`.
fn mcp_crew(tools: Value, servers: Value) -> Value {
    crew(tools, "native", json!({"mcp_servers": servers}))
}

fn results(out: &super::Outcome) -> Vec<(String, String, Value)> {
    out.tool_calls
        .iter()
        .map(|c| {
            let text = c["result"].as_str().or(c["error"].as_str()).unwrap_or_default().to_owned();
            (
                c["tool"].as_str().unwrap_or_default().to_owned(),
                c["status"].as_str().unwrap_or_default().to_owned(),
                json!(text),
            )
        })
        .collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_reference_servers_tools_are_discovered_and_each_kind_of_content_reaches_the_model(pool: PgPool) {
    let peer = Peer::everything().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([
        FakeReply::tool_calls(&[
            ("c1", "everything__echo", json!({"message": "tides"})),
            ("c2", "everything__get-structured-content", json!({"location": "Chicago"})),
        ]),
        FakeReply::tool_calls(&[("c3", "everything__get-tiny-image", json!({}))]),
        FakeReply::text("Echoed, forecast and pictured."),
    ]);
    let servers = json!([{"name": "everything", "url": peer.url()}]);
    let out = h.run(&mcp_crew(json!(["everything__*"]), servers)).await;
    assert_eq!(out.raw(), "Echoed, forecast and pictured.");

    let requests = h.fake.requests();
    let tools = offered(&requests[0]);
    for name in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
        "everything__get-structured-content",
    ] {
        assert!(tools.contains(&name), "{name} offered: {tools:?}");
    }
    // The input schema the server declared is what the model sees.
    let echo = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .expect("echo");
    assert_eq!(echo["function"]["parameters"]["required"], json!(["message"]));

    // The discovery is journaled first, then the model's three calls.
    let calls = results(&out);
    assert_eq!(calls[0].0, "mcp:everything");
    let listed: Vec<Value> =
        serde_json::from_str(calls[0].2.as_str().expect("list")).expect("journaled tools");
    assert_eq!(listed.len(), tools.len());
    assert_eq!(calls[1], ("everything__echo".into(), "succeeded".into(), json!("Echo: tides")));
    let structured: Value =
        serde_json::from_str(calls[2].2.as_str().expect("text")).expect("structured content as JSON");
    assert!(structured["temperature"].is_number(), "{structured}");
    let image = out
        .data("tool.finished")
        .into_iter()
        .find(|d| d["tool"] == "everything__get-tiny-image")
        .expect("image call");
    assert_eq!(image["media_type"], "image/png", "{image}");
    // The server's text around the image is its caption.
    assert!(
        calls[3].2.as_str().is_some_and(|t| t.contains("it is attached") && t.len() > 80),
        "{:?}",
        calls[3]
    );
    let multimodal =
        sent(&requests[2]).iter().find(|m| m["content"].is_array()).expect("the image reached the model");
    assert!(multimodal["content"][1]["image_url"]["url"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_scripted_server_pages_errors_schemas_meta_and_secret_headers(pool: PgPool) {
    let peer = Peer::scripted().await;
    let h = Harness::start_with(pool.clone(), true, allow_loopback_with_secrets).await;
    expect_json(
        h.app.put_json("/v1/secrets/mcp_token", &json!({"value": "tok-MCP-4242"})).await,
        StatusCode::CREATED,
    )
    .await;
    h.fake.push([
        FakeReply::tool_calls(&[
            ("c1", "scripted__whoami", json!({})),
            ("c2", "scripted__fail", json!({})),
            ("c3", "scripted__lookup", json!({"id": 7})),
            ("c4", "scripted__weather", json!({"city": "Oslo"})),
        ]),
        FakeReply::text("Done."),
    ]);
    let servers = json!([{"name": "scripted", "url": peer.url(),
                           "headers": {"Authorization": {"secret": "mcp_token", "prefix": "Bearer "}}}]);
    let out = h.run(&mcp_crew(json!(["scripted__*"]), servers)).await;
    assert_eq!(out.raw(), "Done.");

    // tools/list came in three pages of three: all seven offered.
    let requests = h.fake.requests();
    let mut tools = offered(&requests[0]);
    tools.sort();
    let expected = [
        "scripted__fail",
        "scripted__lookup",
        "scripted__picture",
        "scripted__record",
        "scripted__slow",
        "scripted__weather",
        "scripted__whoami",
    ];
    assert_eq!(tools, expected);

    let calls = results(&out);
    assert_eq!(
        calls[1],
        (
            "scripted__whoami".into(),
            "succeeded".into(),
            json!(r#"{"result":"authorization=Bearer [secret:mcp_token]"}"#)
        )
    );
    assert_eq!(calls[2].1, "failed");
    assert!(calls[2].2.as_str().is_some_and(|e| e.contains("the order service is down")), "{:?}", calls[2]);
    // Arguments that break the tool's inputSchema never reach the server.
    assert_eq!(calls[3].1, "failed");
    assert!(
        calls[3].2.as_str().is_some_and(|e| e.contains("Invalid arguments") && e.contains("order_id")),
        "{:?}",
        calls[3]
    );
    assert_eq!(calls[4].2, json!(r#"{"city":"Oslo","sky":"clear","temperature_c":21}"#));

    // The round's calls ran together, in any order.
    let mut logged = peer.calls();
    logged.sort_by_key(|c| c["tool"].as_str().unwrap_or_default().to_owned());
    let tools_called: Vec<&str> = logged.iter().map(|c| c["tool"].as_str().expect("tool")).collect();
    assert_eq!(tools_called, ["fail", "weather", "whoami"]);
    assert_eq!(logged[2]["authorization"], "Bearer tok-MCP-4242");
    let run_id = Uuid::parse_str(out.run["id"].as_str().expect("id")).expect("uuid");
    assert_eq!(
        logged[2]["meta"]["agentd/idempotency-key"],
        CallInfo::for_call(agentd::domain::RunId(run_id), "t#1/c1").idempotency_key
    );
    assert_eq!(
        logged[1]["meta"]["agentd/idempotency-key"],
        CallInfo::for_call(agentd::domain::RunId(run_id), "t#1/c4").idempotency_key
    );
    assert!(!database_text(&pool).await.contains("tok-MCP-4242"), "the secret is nowhere in the database");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_allow_list_limits_what_is_offered_and_what_a_crew_may_name(pool: PgPool) {
    let peer = Peer::scripted().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([FakeReply::text("Nothing to do.")]);
    let servers = json!([{"name": "scripted", "url": peer.url(), "tools": ["whoami", "lookup"]}]);
    let out = h.run(&mcp_crew(json!(["scripted__*"]), servers.clone())).await;
    assert_eq!(out.raw(), "Nothing to do.");
    let requests = h.fake.requests();
    let mut tools = offered(&requests[0]);
    tools.sort();
    assert_eq!(tools, ["scripted__lookup", "scripted__whoami"]);

    let refused = h
        .app
        .post_json("/v1/kickoffs", &json!({"crew": mcp_crew(json!(["scripted__record"]), servers)}))
        .await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(problem["errors"][0]["field"], "crew.agents[0].tools[0]");
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("allows only these tools: whoami, lookup")),
        "{problem}"
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn mcp_servers_in_a_crew_are_checked_at_kickoff(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let long = "x".repeat(60);
    let cases = [
        (
            json!(["nowhere__tool"]),
            json!([{"name": "files", "url": "http://127.0.0.1:9/mcp"}]),
            "crew.agents[0].tools[0]",
            "unknown tool",
        ),
        (
            json!([]),
            json!([{"name": "a__b", "url": "http://127.0.0.1:9/mcp"}]),
            "crew.mcp_servers[0].name",
            "not '__'",
        ),
        (
            json!([]),
            json!([{"name": "files", "url": "ftp://127.0.0.1/"}]),
            "crew.mcp_servers[0].url",
            "http or https",
        ),
        (
            json!([]),
            json!([{"name": "files", "url": "http://127.0.0.1:9/mcp", "headers": {"Mcp-Session-Id": "x"}}]),
            "crew.mcp_servers[0].headers.Mcp-Session-Id",
            "set by agentd",
        ),
        (
            json!([format!("files__{long}")]),
            json!([{"name": "files", "url": "http://127.0.0.1:9/mcp"}]),
            "crew.agents[0].tools[0]",
            "1 to 64",
        ),
        (
            json!([]),
            json!([{"name": "files", "url": "http://127.0.0.1:9/mcp"}, {"name": "files", "url": "http://127.0.0.1:9/other"}]),
            "crew.mcp_servers[1].name",
            "duplicate",
        ),
        (
            json!([]),
            json!([{"name": "files", "url": "http://127.0.0.1:9/mcp", "command": "rm -rf /"}]),
            "crew",
            "unknown field",
        ),
    ];
    for (tools, servers, field, message) in cases {
        let response =
            h.app.post_json("/v1/kickoffs", &json!({"crew": mcp_crew(tools, servers.clone())})).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let text = problem.to_string();
        assert!(text.contains(field) && text.contains(message), "{servers}: {field} / {message}: {problem}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_egress_guard_refuses_an_mcp_server_on_a_private_address(pool: PgPool) {
    let peer = Peer::scripted().await;
    let h = Harness::start(pool, true).await; // No private address allowed.
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "scripted__whoami", json!({}))]),
        FakeReply::text("The server is out of reach."),
    ]);
    let servers = json!([{"name": "scripted", "url": peer.url()}]);
    let out = h.run(&mcp_crew(json!(["scripted__whoami"]), servers)).await;
    assert_eq!(out.raw(), "The server is out of reach.");
    let calls = results(&out);
    // The listing that failed, and the model's call of the tool it could not offer.
    let tools: Vec<(&str, &str)> =
        calls.iter().map(|(tool, status, _)| (tool.as_str(), status.as_str())).collect();
    assert_eq!(tools, [("mcp:scripted", "failed"), ("scripted__whoami", "failed")], "{calls:?}");
    for (_, _, error) in &calls {
        let error = error.as_str().expect("error");
        assert!(
            error.contains("MCP server 'scripted' is unavailable") && error.contains("127.0.0.1"),
            "{error}"
        );
    }
    assert!(peer.calls().is_empty());
}

/// An MCP server the egress guard refuses (one on loopback, one on the cloud metadata address;
/// the guard judges IP literals before any connection) leaves, for each task that needs it, a
/// failed tool call `mcp:<server>` with the guard's reason in the run, announced as
/// `tool.started` and `tool.failed`; the run goes on without its tools, and no byte reaches the
/// refused address.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_refused_mcp_server_leaves_a_failed_call_with_the_reason(pool: PgPool) {
    // Loopback is refused (no allow-list): this listener counts every connection it gets.
    let sentinel = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = sentinel.local_addr().expect("addr").port();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while sentinel.accept().await.is_ok() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let h = Harness::start(pool, true).await;
    h.fake.push([FakeReply::text("Done without tools."), FakeReply::text("Still without.")]);
    let servers = json!([
        {"name": "sentinel", "url": format!("http://127.0.0.1:{port}/mcp")},
        {"name": "metadata", "url": "http://169.254.169.254/mcp"},
    ]);
    let second_task = json!({"tasks": [{}, {"name": "t2", "description": "Again", "expected_output": "A line", "agent": "a"}]});
    let mut spec = mcp_crew(json!(["sentinel__*", "metadata__lookup"]), servers);
    super::merge(&mut spec, second_task);
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Still without.");

    // Each task listed each server again: four failed calls, each with the guard's verdict.
    let mut calls: Vec<(String, String, String, String)> = out
        .tool_calls
        .iter()
        .map(|c| {
            let field = |name: &str| c[name].as_str().unwrap_or_default().to_owned();
            (field("task"), field("id"), field("status"), field("error"))
        })
        .collect();
    calls.sort();
    let ids: Vec<(&str, &str, &str)> =
        calls.iter().map(|(t, id, s, _)| (t.as_str(), id.as_str(), s.as_str())).collect();
    assert_eq!(
        ids,
        [
            ("t", "mcp:metadata#tools/list", "failed"),
            ("t", "mcp:sentinel#tools/list", "failed"),
            ("t2", "mcp:metadata#tools/list#2", "failed"),
            ("t2", "mcp:sentinel#tools/list#2", "failed"),
        ],
        "{calls:?}"
    );
    for (_, id, _, error) in &calls {
        let (server, address) = match id.contains("sentinel") {
            true => ("sentinel", "127.0.0.1"),
            false => ("metadata", "169.254.169.254"),
        };
        assert!(
            error.contains(&format!("MCP server '{server}' is unavailable"))
                && error.contains("blocked")
                && error.contains(address),
            "{id}: {error}"
        );
    }
    let call = out.tool_calls.iter().find(|c| c["id"] == "mcp:sentinel#tools/list").expect("the listing");
    assert_eq!(
        (call["tool"].as_str(), call["arguments"].clone()),
        (Some("mcp:sentinel"), json!({"method": "tools/list"}))
    );
    // The run's events say so too, each failure after its start.
    let failed: Vec<&str> =
        out.data("tool.failed").iter().filter_map(|d| d["tool_call_id"].as_str()).collect();
    let started: Vec<&str> =
        out.data("tool.started").iter().filter_map(|d| d["tool_call_id"].as_str()).collect();
    assert_eq!((failed.len(), started.len()), (4, 4), "{:?}", out.event_types());
    assert_eq!(failed, started);
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0, "the refused address was contacted");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn cancelling_a_run_mid_call_tells_the_server(pool: PgPool) {
    let peer = Peer::scripted().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([FakeReply::tool_calls(&[("c1", "scripted__slow", json!({"seconds": 30}))])]);
    let servers = json!([{"name": "scripted", "url": peer.url()}]);
    let queued =
        h.app.kickoff(&mcp_crew(json!(["scripted__slow"]), servers), json!({"topic": "tides"})).await;
    let id = agentd::domain::RunId(Uuid::parse_str(queued["id"].as_str().expect("id")).expect("uuid"));
    let claimed = h.store.claim_run(id, "e2e-worker", LEASE).await.expect("claim").expect("queued");
    let engine = crate::support::engine_for(&h.config, &h.store);
    let journal = h.store.journal(claimed.id, claimed.attempt);
    let cancel = CancellationToken::new();
    let run = engine.run(&claimed.crew, &claimed.inputs, &journal, &cancel);
    let watch = async {
        peer.wait_calls(1).await;
        cancel.cancel();
    };
    let started = Instant::now();
    let (result, ()) = tokio::join!(run, watch);
    assert_eq!(result, Err(agentd::engine::EngineError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(20), "the call was abandoned at once");
    let calls = peer.wait_calls(2).await;
    assert_eq!(
        (calls[0]["phase"].as_str(), calls[1]["phase"].as_str()),
        (Some("started"), Some("cancelled")),
        "notifications/cancelled arrived"
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_server_that_forgot_the_session_is_initialised_again(pool: PgPool) {
    let mut peer = Peer::scripted().await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    // The second call is asked for only once the server has restarted (however long that takes).
    let restarted = std::sync::Arc::new(tokio::sync::Notify::new());
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "scripted__lookup", json!({"order_id": "A1"}))]),
        FakeReply::tool_calls(&[("c2", "scripted__lookup", json!({"order_id": "A2"}))])
            .after(restarted.clone()),
        FakeReply::text("Both shipped."),
    ]);
    let servers = json!([{"name": "scripted", "url": peer.url()}]);
    let spec = mcp_crew(json!(["scripted__lookup"]), servers);
    let restart = async {
        peer.wait_calls(1).await;
        peer.restart().await;
        restarted.notify_one();
    };
    let (out, ()) = tokio::join!(h.run(&spec), restart);
    assert_eq!(out.raw(), "Both shipped.");
    let calls = results(&out);
    assert_eq!(
        calls[2],
        ("scripted__lookup".into(), "succeeded".into(), json!(r#"{"result":"order A2: shipped"}"#))
    );
    assert_eq!(peer.calls().len(), 2);
}

/// A crew for the real binary: one agent with the scripted server's `slow` tool.
fn slow_crew(url: &str, idempotent: Option<bool>) -> Value {
    let mut server = json!({"name": "scripted", "url": url});
    if let Some(idempotent) = idempotent {
        server["idempotent"] = json!({"slow": idempotent});
    }
    json!({
        "name": "waiting",
        "agents": [{"name": "a", "role": "Waiter", "goal": "Wait", "backstory": "Patient.", "tools": ["scripted__slow"]}],
        "tasks": [{"name": "t", "description": "Wait a little", "expected_output": "Done", "agent": "a"}],
        "mcp_servers": [server]
    })
}

/// Kill -9 agentd while the MCP call is in flight, start it again; the resumed run's end, its
/// tool calls, and the second replica's `/metrics`.
async fn crash_during_slow_call(
    pool: &PgPool,
    peer: &Peer,
    fake: &FakeLlm,
    idempotent: Option<bool>,
) -> (Value, Value, String) {
    let url = child_database_url(pool).await;
    let base_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-mcp-crash"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
    ];
    let first = Agentd::start(&url, &env);
    let client = reqwest::Client::new();
    let body = json!({"crew": slow_crew(&peer.url(), idempotent)});
    let response =
        client.post(format!("{}/v1/kickoffs", first.base)).json(&body).send().await.expect("kickoff");
    let id = expect_json(response, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned();
    peer.wait_calls(1).await;
    // An idempotent call's start is journaled while it runs (after 10 ms): wait until it is.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let calls =
            client.get(format!("{}/v1/runs/{id}/tool-calls", first.base)).send().await.expect("calls");
        let calls = expect_json(calls, StatusCode::OK).await;
        let journaled = calls["tool_calls"].as_array().is_some_and(|calls| {
            calls.iter().any(|c| c["tool"] == "scripted__slow" && c["status"] == "running")
        });
        if journaled {
            break;
        }
        assert!(Instant::now() < deadline, "the call's start was never journaled: {calls}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.signal("-KILL").await;
    let second = Agentd::start(&url, &env);
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let run = expect_json(
            client.get(format!("{}/v1/runs/{id}", second.base)).send().await.expect("get"),
            StatusCode::OK,
        )
        .await;
        if ["completed", "failed"].contains(&run["status"].as_str().unwrap_or_default()) {
            break run;
        }
        assert!(Instant::now() < deadline, "the run never ended: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let calls = client.get(format!("{}/v1/runs/{id}/tool-calls", second.base)).send().await.expect("calls");
    let calls = expect_json(calls, StatusCode::OK).await;
    let metrics = client.get(format!("{}/metrics", second.base)).send().await.expect("metrics");
    (run, calls, metrics.text().await.expect("metrics text"))
}

#[sqlx::test(migrations = false)]
async fn kill_9_during_an_idempotent_mcp_call_repeats_it_with_the_same_key(pool: PgPool) {
    let peer = Peer::scripted().await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "scripted__slow", json!({"seconds": 3}))]),
        FakeReply::text("Waited."),
    ]);
    let (run, calls, metrics) = crash_during_slow_call(&pool, &peer, &fake, None).await;
    assert_eq!(run["status"], "completed", "{run}");
    // The replica that finished the run counted its MCP call.
    let counted = |name: &str| {
        metrics.lines().any(|l| {
            l.starts_with(name) && l.contains(r#"server="scripted""#) && l.contains(r#"tool="slow""#)
        })
    };
    assert!(counted("agentd_mcp_calls_total{") && metrics.contains(r#"outcome="ok""#), "{metrics}");
    assert!(counted("agentd_mcp_call_duration_seconds_count{"), "{metrics}");
    let slow: Vec<Value> = peer.calls().into_iter().filter(|c| c["phase"] == "started").collect();
    assert_eq!(slow.len(), 2, "readOnlyHint: repeated after the crash");
    assert_eq!(slow[0]["meta"], slow[1]["meta"], "with the same idempotency key");
    let call = calls["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["tool"] == "scripted__slow")
        .cloned()
        .expect("slow");
    assert_eq!(call["status"], "succeeded", "{call}");
    // The resumed run offered the journaled tools, without listing them again.
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(offered(&fake.requests()[1]), ["scripted__slow"]);
}

#[sqlx::test(migrations = false)]
async fn kill_9_during_a_non_idempotent_mcp_call_does_not_repeat_it(pool: PgPool) {
    let peer = Peer::scripted().await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "scripted__slow", json!({"seconds": 3}))]),
        FakeReply::text("I could not confirm it."),
    ]);
    let (run, calls, _) = crash_during_slow_call(&pool, &peer, &fake, Some(false)).await;
    assert_eq!(run["status"], "completed", "{run}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = peer.calls().into_iter().filter(|c| c["phase"] == "started").count();
    assert_eq!(started, 1, "the crew's override made it non-idempotent: not repeated");
    let call = calls["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["tool"] == "scripted__slow")
        .cloned()
        .expect("slow");
    assert_eq!(call["status"], "failed");
    assert!(call["error"].as_str().is_some_and(|e| e.contains("not idempotent")), "{call}");
}

/// An MCP server of our own that answers in JSON (not an event stream), speaking `version`: the
/// requests it got are kept.
async fn json_server(version: &'static str) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |headers: axum::http::HeaderMap, axum::Json(message): axum::Json<Value>| {
            let log = log.clone();
            async move {
                use axum::response::IntoResponse;
                let version_header = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()).map(str::to_owned);
                log.lock().expect("log").push(json!({"message": message, "version": version_header}));
                let id = message["id"].clone();
                let answer = |result: Value| axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
                match message["method"].as_str().unwrap_or_default() {
                    "initialize" => (
                        [("mcp-session-id", "s-1")],
                        answer(json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "json", "version": "1"}})),
                    )
                        .into_response(),
                    "tools/list" => answer(json!({"tools": [
                        {"name": "ok", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                        {"name": "broken", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                    ]}))
                    .into_response(),
                    "tools/call" if message["params"]["name"] == "broken" => {
                        (StatusCode::INTERNAL_SERVER_ERROR, "the database fell over").into_response()
                    }
                    "tools/call" => answer(json!({"content": [{"type": "text", "text": "fine"}]})).into_response(),
                    _ => StatusCode::ACCEPTED.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, seen)
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_older_revision_is_spoken_json_answers_are_read_and_http_errors_are_tool_errors(pool: PgPool) {
    let (url, seen) = json_server("2025-03-26").await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "old__ok", json!({})), ("c2", "old__broken", json!({}))]),
        FakeReply::text("One of two."),
    ]);
    let out = h.run(&mcp_crew(json!(["old__*"]), json!([{"name": "old", "url": url}]))).await;
    assert_eq!(out.raw(), "One of two.");
    let calls = results(&out);
    assert_eq!(calls[1], ("old__ok".into(), "succeeded".into(), json!("fine")));
    assert_eq!(calls[2].1, "failed");
    assert_eq!(calls[2].2, json!("the MCP server answered HTTP 500: the database fell over"));
    let seen = seen.lock().expect("log").clone();
    assert_eq!(
        seen[0]["message"]["params"]["protocolVersion"], "2025-11-25",
        "the newest revision is asked for"
    );
    // Every later request says the revision the server chose.
    assert!(seen[1..].iter().all(|r| r["version"] == "2025-03-26"), "{seen:?}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_server_on_a_revision_agentd_does_not_speak_is_unavailable(pool: PgPool) {
    let (url, _) = json_server("2024-11-05").await;
    let h = Harness::start_with(pool, true, allow_loopback).await;
    h.fake.push([FakeReply::tool_calls(&[("c1", "old__ok", json!({}))]), FakeReply::text("No.")]);
    let out = h.run(&mcp_crew(json!(["old__ok"]), json!([{"name": "old", "url": url}]))).await;
    assert_eq!(out.raw(), "No.");
    let error = out.tool_calls[0]["error"].as_str().expect("error");
    assert!(error.contains("protocol revision '2024-11-05'") && error.contains("2025-11-25"), "{error}");
}

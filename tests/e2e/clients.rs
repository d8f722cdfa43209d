//! The typed clients shipped in `clients/` against the real server: the Python client
//! (`clients/python`, installed by its `setup.sh` into a venv) and the TypeScript client
//! (`clients/typescript`, built by its `setup.sh`). Each has a driver script printing JSON lines;
//! these tests run it against replicas of `agentd serve` behind one address and check what it
//! printed against what the server holds: a kickoff waited for, a problem read as a typed error,
//! a webhook verified (and a tampered one refused), a tool call approved, and a run followed
//! through the kill of the replica serving its stream, resumed exactly.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::io::AsyncWriteExt;

use crate::cli::{child_database_url, Agentd};
use crate::protocols::{Client, Failover, ROOT};
use crate::support::{expect_json, TestApp};
use crate::webhooks::SERVER_SECRET;
use crate::worker::wait_requests;

/// A client's driver: the program and the arguments before `--url`.
struct Driver {
    name: &'static str,
    program: String,
    script: String,
    setup: &'static str,
}

impl Driver {
    fn python() -> Self {
        Self {
            name: "python",
            program: format!("{ROOT}/clients/python/.venv/bin/python"),
            script: format!("{ROOT}/clients/python/tests/driver.py"),
            setup: "clients/python/setup.sh",
        }
    }

    fn typescript() -> Self {
        let built = format!("{ROOT}/clients/typescript/dist");
        assert!(
            std::path::Path::new(&built).exists(),
            "{built} is missing: run clients/typescript/setup.sh (scripts/test.sh does)"
        );
        Self {
            name: "typescript",
            program: "node".into(),
            script: format!("{ROOT}/clients/typescript/test/driver.mjs"),
            setup: "clients/typescript/setup.sh",
        }
    }

    fn args(&self, url: &str, command: &[&str]) -> Vec<String> {
        let mut args = vec![self.script.clone(), "--url".into(), url.into()];
        args.extend(command.iter().map(|s| (*s).to_owned()));
        args
    }

    /// Run `command` to its end; every line it printed.
    async fn run(&self, url: &str, command: &[&str]) -> Vec<Value> {
        Client::start(&self.program, &self.args(url, command), self.setup)
            .finish(Duration::from_secs(90))
            .await
    }

    fn start(&self, url: &str, command: &[&str]) -> Client {
        Client::start(&self.program, &self.args(url, command), self.setup)
    }

    /// `verify-webhook SECRET` with `delivery` on stdin: the line it printed.
    async fn verify(&self, secret: &str, delivery: &Value) -> Value {
        let mut child = tokio::process::Command::new(&self.program)
            .args(self.args("http://127.0.0.1:9", &["verify-webhook", secret]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the driver");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(delivery.to_string().as_bytes()).await.expect("write stdin");
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("the driver answers in time")
            .expect("output");
        assert!(output.status.success(), "{}: verify-webhook failed", self.name);
        let text = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(text.lines().last().unwrap_or_default())
            .unwrap_or_else(|_| panic!("not JSON: {text}"))
    }
}

/// The first printed line with `key`, its value.
fn line<'a>(printed: &'a [Value], key: &str) -> &'a Value {
    printed.iter().find_map(|l| l.get(key)).unwrap_or_else(|| panic!("no '{key}' line in {printed:#?}"))
}

/// A delivery as it arrived: its `webhook-*` headers and its raw body.
type Delivery = (BTreeMap<String, String>, String);

/// A webhook receiver keeping each request's headers and raw body.
struct RawSink {
    base: String,
    received: Arc<Mutex<Vec<Delivery>>>,
}

impl RawSink {
    async fn start() -> Self {
        let received: Arc<Mutex<Vec<Delivery>>> = Arc::default();
        let kept = received.clone();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: String| {
            let kept = kept.clone();
            async move {
                let headers = headers
                    .iter()
                    .filter(|(name, _)| name.as_str().starts_with("webhook-"))
                    .map(|(name, value)| {
                        (name.as_str().to_owned(), value.to_str().unwrap_or_default().to_owned())
                    })
                    .collect();
                kept.lock().expect("lock").push((headers, body));
                StatusCode::NO_CONTENT
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Self { base: format!("http://{addr}/hook"), received }
    }

    /// The first delivery whose body has `event.type` = `kind`, waiting up to 30 s.
    async fn delivery(&self, kind: &str) -> Delivery {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let found =
                self.received.lock().expect("lock").iter().find(|(_, body)| body.contains(kind)).cloned();
            if let Some(found) = found {
                return found;
            }
            assert!(std::time::Instant::now() < deadline, "no {kind} delivery arrived");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn crew(name: &str) -> Value {
    json!({
        "name": name,
        "agents": [{"name": "researcher", "role": "Researcher", "goal": "Answer {question}", "backstory": "Brief.",
                    "tools": ["calculator"]}],
        "tasks": [{"name": "answer", "description": "Answer {question}", "expected_output": "An answer", "agent": "researcher"}]
    })
}

/// Everything the issue asks of a client, through `driver`.
async fn a_client_does_what_callers_need(pool: PgPool, driver: Driver) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done")));
    let base_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-clients"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_WEBHOOK_SECRET", SERVER_SECRET),
        ("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "127.0.0.1"),
    ];
    let first = Agentd::start(&url, &env);
    let proxy = Failover::start(&[first.base.as_str()]).await;
    let api = TestApp::at(&proxy.base);
    let name = driver.name;

    // A problem is a typed error naming the field.
    let printed = driver.run(&proxy.base, &["problem"]).await;
    let problem = line(&printed, "problem");
    assert_eq!(
        (problem["kind"].as_str(), problem["status"].as_i64()),
        (Some("ValidationError"), Some(422)),
        "{name}: {problem}"
    );
    assert_eq!(problem["type"], "/problems/validation", "{name}");
    assert!(problem["errors"].to_string().contains("crew.tasks[0].agent"), "{name}: {problem}");

    // A kickoff waited for, with an idempotency key of the client's making; its webhook verified.
    let sink = RawSink::start().await;
    let hook = api.post_json("/v1/webhooks", &json!({"url": sink.base, "events": ["run.completed"]})).await;
    let hook = expect_json(hook, StatusCode::CREATED).await;
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let body = json!({"crew": crew("waited"), "inputs": {"question": "why?"}}).to_string();
    let printed = driver.run(&proxy.base, &["kickoff-and-wait", &body]).await;
    let kicked = line(&printed, "kicked");
    assert!(kicked["idempotency_key"].as_str().is_some_and(|k| !k.is_empty()), "{name}: {kicked}");
    let run = line(&printed, "run");
    assert_eq!(
        (run["status"].as_str(), run["output"]["raw"].as_str()),
        (Some("completed"), Some("done")),
        "{name}: {run}"
    );
    assert_eq!(run["id"], kicked["id"]);

    let (headers, raw) = sink.delivery("run.completed").await;
    let verified = driver.verify(&secret, &json!({"headers": headers, "body": raw})).await;
    let payload = verified.get("verified").unwrap_or_else(|| panic!("{name}: not verified: {verified}"));
    assert_eq!(payload["run_id"], kicked["id"], "{name}: {payload}");
    let tampered = raw.replacen("run.completed", "run.failed", 1);
    let refused = driver.verify(&secret, &json!({"headers": headers, "body": tampered})).await;
    assert!(refused.get("rejected").is_some(), "{name}: a tampered body was accepted: {refused}");
    let other = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let refused = driver.verify(other, &json!({"headers": headers, "body": raw})).await;
    assert!(refused.get("rejected").is_some(), "{name}: another secret was accepted: {refused}");

    // A tool call approved: the run waits, the client approves it, the call runs once.
    let mut gated = crew("gated");
    gated["requires_approval"] = json!(["calculator"]);
    fake.push([
        FakeReply::tool_calls(&[("call_1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("It is 42"),
    ]);
    let kickoff = json!({"crew": gated, "inputs": {"question": "6*7?"}});
    let id = expect_json(api.post_json("/v1/kickoffs", &kickoff).await, StatusCode::ACCEPTED).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let printed = driver.run(&proxy.base, &["approve", &id]).await;
    assert_eq!(line(&printed, "approval_requested")["tool"], "calculator", "{name}");
    let done = line(&printed, "run");
    assert_eq!(
        (done["status"].as_str(), done["output"]["raw"].as_str()),
        (Some("completed"), Some("It is 42")),
        "{name}: {done}"
    );
    let calls = expect_json(api.get(&format!("/v1/runs/{id}/tool-calls")).await, StatusCode::OK).await;
    assert_eq!(calls["tool_calls"].as_array().map(Vec::len), Some(1), "{name}: {calls}");
    assert_eq!(calls["tool_calls"][0]["approval"]["state"], "approved", "{name}: {calls}");

    // A run followed through the kill of the replica serving its stream: the client reconnects
    // to the next replica and resumes after the last event it saw, none repeated, none lost.
    fake.push([
        FakeReply::text("lost with the replica").with_delay(Duration::from_secs(30)),
        FakeReply::text("survived"),
    ]);
    let requests = fake.requests().len();
    let kickoff = json!({"crew": crew("followed"), "inputs": {"question": "still there?"}});
    let id = expect_json(api.post_json("/v1/kickoffs", &kickoff).await, StatusCode::ACCEPTED).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut follow = driver.start(&proxy.base, &["follow", &id]);
    wait_requests(&fake, requests + 1).await;
    loop {
        let line = follow.next(Duration::from_secs(30)).await.unwrap_or_else(|| panic!("{name}: no events"));
        if line["event"]["type"] == "llm.started" {
            break;
        }
    }
    let second = Agentd::start(&url, &env);
    proxy.add(&second.base);
    proxy.remove(&first.base);
    assert!(!first.signal("-KILL").await.success());
    let printed = follow.finish(Duration::from_secs(90)).await;
    assert_eq!(line(&printed, "done"), "run.completed", "{name}");
    assert!(
        printed.iter().any(|l| l.get("resumed").is_some()),
        "{name}: the stream never resumed: {printed:#?}"
    );
    let seen: Vec<i64> = printed.iter().filter_map(|l| l["event"]["seq"].as_i64()).collect();
    let events =
        expect_json(TestApp::at(&second.base).get(&format!("/v1/runs/{id}/events")).await, StatusCode::OK)
            .await;
    let stored: Vec<i64> =
        events["events"].as_array().expect("events").iter().filter_map(|e| e["seq"].as_i64()).collect();
    assert_eq!(seen, stored, "{name}: the client saw each stored event once, in order");
    assert_eq!(seen, (1..=stored.len() as i64).collect::<Vec<_>>(), "{name}");
    let finished =
        expect_json(TestApp::at(&second.base).get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
    assert_eq!(
        (finished["output"]["raw"].as_str(), finished["attempt"].as_i64()),
        (Some("survived"), Some(2)),
        "{name}"
    );
}

#[sqlx::test(migrations = false)]
async fn the_python_client_does_what_callers_need(pool: PgPool) {
    a_client_does_what_callers_need(pool, Driver::python()).await;
}

#[sqlx::test(migrations = false)]
async fn the_typescript_client_does_what_callers_need(pool: PgPool) {
    a_client_does_what_callers_need(pool, Driver::typescript()).await;
}

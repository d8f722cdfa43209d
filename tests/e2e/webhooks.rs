//! Webhooks with the real binary and a receiver that verifies every delivery with the official
//! Standard Webhooks library (`tests/webhooks/receiver.py`, PyPI `standardwebhooks`): every
//! event of every run, in `seq` order per run and endpoint, through receiver outages, 410s,
//! exhausted schedules, secret rotations, the egress guard and a replica killed mid-delivery.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, expect_problem, problem_fields};

/// The server's signing secret in these tests (32 bytes of 0x2a).
const SERVER_SECRET: &str = "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

/// The receiver process; killed when dropped.
struct Receiver {
    child: Child,
    base: String,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start() -> Self {
        let root = env!("CARGO_MANIFEST_DIR");
        let python = format!("{root}/target/webhooks-venv/bin/python");
        assert!(
            std::path::Path::new(&python).exists(),
            "{python} is missing: run tests/webhooks/setup.sh (scripts/test.sh does)"
        );
        let mut child = Command::new(python)
            .arg(format!("{root}/tests/webhooks/receiver.py"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiver");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("the receiver prints its port");
        let port = line.trim().strip_prefix("listening on ").expect("listening line").to_owned();
        Self { child, base: format!("http://127.0.0.1:{port}") }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn control(&self, control: Value) {
        let response =
            reqwest::Client::new().post(self.url("/control")).json(&control).send().await.expect("control");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }

    async fn received(&self) -> Vec<Value> {
        let response = reqwest::get(self.url("/received")).await.expect("received");
        expect_json(response, StatusCode::OK).await.as_array().expect("array").clone()
    }

    /// Wait until `done` holds of what was received.
    async fn wait_until(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let received = self.received().await;
            if done(&received) {
                return received;
            }
            assert!(Instant::now() < deadline, "never {what}; received:\n{received:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The environment of a replica sending webhooks to loopback receivers.
fn env<'a>(fake: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("OPENAI_BASE_URL", fake),
        ("OPENAI_API_KEY", "sk-webhook-test"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_WEBHOOK_SECRET", SERVER_SECRET),
        ("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "127.0.0.1"),
        ("AGENTD_WEBHOOK_RETRY_SCHEDULE", "300ms,300ms,500ms,1s,1s,2s,2s"),
    ];
    env.extend_from_slice(extra);
    env
}

/// A one-task crew answering at once.
fn crew(name: &str) -> Value {
    json!({
        "name": name,
        "agents": [{"name": "a", "role": "Writer", "goal": "Write", "backstory": "Brief."}],
        "tasks": [{"name": "t", "description": "Say {word}.", "expected_output": "A word", "agent": "a"}]
    })
}

async fn start_fake() -> FakeLlm {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done")));
    fake
}

async fn send(base: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(method, format!("{base}{path}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("request")
}

async fn register(base: &str, body: Value) -> Value {
    expect_json(send(base, reqwest::Method::POST, "/v1/webhooks", Some(body)).await, StatusCode::CREATED)
        .await
}

async fn kickoff(base: &str, body: Value) -> String {
    let response = send(base, reqwest::Method::POST, "/v1/kickoffs", Some(body)).await;
    expect_json(response, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned()
}

async fn get(base: &str, path: &str) -> Value {
    expect_json(send(base, reqwest::Method::GET, path, None).await, StatusCode::OK).await
}

/// A run's events as the API lists them, once it has ended.
async fn finished_events(base: &str, run: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = get(base, &format!("/v1/runs/{run}")).await["status"].clone();
        if ["completed", "failed", "cancelled"].contains(&status.as_str().unwrap_or_default()) {
            break;
        }
        assert!(Instant::now() < deadline, "run {run} never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    get(base, &format!("/v1/runs/{run}/events")).await["events"].as_array().expect("events").clone()
}

/// The deliveries a receiver took (answered 2xx) on `path`, by run, in arrival order, each
/// verified by secret `secret`.
fn taken(received: &[Value], path: &str, secret: usize) -> BTreeMap<String, Vec<Value>> {
    let mut runs: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in received.iter().filter(|r| r["path"] == path && r["answered"].as_i64().is_some_and(|s| s < 300))
    {
        let verified: Vec<i64> =
            r["verified"].as_array().expect("verified").iter().filter_map(Value::as_i64).collect();
        assert!(verified.contains(&(secret as i64)), "not verified by secret {secret}: {r}");
        runs.entry(r["event"]["run_id"].as_str().expect("run_id").to_owned()).or_default().push(r.clone());
    }
    runs
}

fn seqs(records: &[Value]) -> Vec<i64> {
    records.iter().map(|r| r["event"]["seq"].as_i64().expect("seq")).collect()
}

#[sqlx::test(migrations = false)]
async fn every_event_of_every_run_arrives_signed_and_in_order(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let all = register(&agentd.base, json!({"url": receiver.url("/all"), "description": "everything"})).await;
    let secret = all["secret"].as_str().expect("secret").to_owned();
    assert!(secret.starts_with("whsec_") && secret != SERVER_SECRET, "{all}");
    assert_eq!((all["events"].clone(), all["enabled"].clone()), (json!(["*"]), json!(true)));
    let other = register(&agentd.base, json!({"url": receiver.url("/other"), "crew": "someone-else"})).await;
    receiver.control(json!({"secrets": [secret, SERVER_SECRET]})).await;

    let mut runs = Vec::new();
    for i in 0..3 {
        let body = json!({"crew": crew("writer"), "inputs": {"word": format!("w{i}")},
                          "webhooks": [{"url": receiver.url("/kickoff"), "events": ["run.*", "task.completed"]}]});
        runs.push(kickoff(&agentd.base, body).await);
    }
    let mut logs = BTreeMap::new();
    for run in &runs {
        logs.insert(run.clone(), finished_events(&agentd.base, run).await);
    }
    let total: usize = logs.values().map(Vec::len).sum();
    let received = receiver
        .wait_until("every event arrived", |r| {
            r.iter().filter(|r| r["path"] == "/all").count() >= total
                && r.iter().filter(|r| r["path"] == "/kickoff").count() >= 12
        })
        .await;

    // The registered endpoint: every event, in seq order per run, verified with its secret, the
    // body the envelope the event API shows.
    let everything = taken(&received, "/all", 0);
    assert_eq!(everything.len(), 3);
    for (run, records) in &everything {
        let events = &logs[run];
        assert_eq!(seqs(records), (1..=events.len() as i64).collect::<Vec<_>>(), "run {run}");
        for (record, event) in records.iter().zip(events) {
            assert_eq!(&record["event"], event, "the body is the event envelope");
        }
    }
    let ids: std::collections::BTreeSet<&str> =
        received.iter().filter(|r| r["path"] == "/all").map(|r| r["id"].as_str().expect("id")).collect();
    assert_eq!(ids.len(), total, "one webhook-id per event");
    // A kickoff's webhooks: only the patterns' events, signed with the server secret.
    let kicked = taken(&received, "/kickoff", 1);
    for (run, records) in &kicked {
        let types: Vec<&str> = records.iter().map(|r| r["event"]["type"].as_str().expect("type")).collect();
        assert_eq!(types, ["run.queued", "run.started", "task.completed", "run.completed"], "run {run}");
        assert!(records.iter().all(|r| r["verified"] == json!([1])), "not the endpoint secret");
    }
    assert!(received.iter().all(|r| r["path"] != "/other"), "the crew filter held");

    // The API: deliveries, a run's endpoints, metrics.
    let id = all["id"].as_str().expect("id");
    let page = get(&agentd.base, &format!("/v1/webhooks/{id}/deliveries?limit=5")).await;
    let first = &page["deliveries"][0];
    assert_eq!(
        (first["status"].as_str(), first["attempts"].as_i64(), first["last_status"].as_i64()),
        (Some("delivered"), Some(1), Some(204)),
        "{page}"
    );
    assert_eq!(page["deliveries"].as_array().map(Vec::len), Some(5));
    let cursor = page["next_cursor"].as_i64().expect("a next page");
    let rest = get(&agentd.base, &format!("/v1/webhooks/{id}/deliveries?limit=200&cursor={cursor}")).await;
    assert_eq!(rest["deliveries"].as_array().map(Vec::len), Some(total - 5));
    assert!(rest["next_cursor"].is_null());
    let message_ids: Vec<&str> = page["deliveries"]
        .as_array()
        .expect("d")
        .iter()
        .map(|d| d["message_id"].as_str().expect("message_id"))
        .collect();
    assert!(message_ids.iter().all(|m| ids.contains(m)), "message_id is the webhook-id header");
    let of_run = get(&agentd.base, &format!("/v1/webhooks?run_id={}", runs[0])).await;
    assert_eq!(of_run["webhooks"][0]["url"], receiver.url("/kickoff"));
    assert_eq!(of_run["webhooks"][0]["run_id"], json!(runs[0]));
    let registered = get(&agentd.base, "/v1/webhooks").await;
    let urls: Vec<&Value> =
        registered["webhooks"].as_array().expect("list").iter().map(|w| &w["url"]).collect();
    assert_eq!(urls, [&json!(receiver.url("/all")), &json!(receiver.url("/other"))]);
    assert!(registered.to_string().find("whsec_").is_none(), "secrets are shown once: {registered}");
    let other_id = other["id"].as_str().expect("id");
    let none = get(&agentd.base, &format!("/v1/webhooks/{other_id}/deliveries")).await;
    assert_eq!(none["deliveries"], json!([]));
    let metrics =
        reqwest::get(format!("{}/metrics", agentd.base)).await.expect("GET").text().await.expect("text");
    let delivered = total + 12;
    assert!(
        metrics.contains(&format!("agentd_webhook_deliveries_total{{outcome=\"delivered\"}} {delivered}")),
        "{metrics}"
    );
    assert!(metrics.contains("agentd_webhook_queue_depth 0"), "{metrics}");
    assert!(metrics.contains(&format!("agentd_webhook_delivery_lag_seconds_count {delivered}")), "{metrics}");
}

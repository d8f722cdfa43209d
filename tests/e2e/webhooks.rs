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
pub(crate) const SERVER_SECRET: &str = "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

/// The receiver process; killed when dropped.
pub(crate) struct Receiver {
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
    pub(crate) fn start() -> Self {
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

    pub(crate) fn url(&self, path: &str) -> String {
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
    pub(crate) async fn wait_until(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
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

/// Wait until the endpoint's deliveries satisfy `done`.
async fn wait_deliveries(base: &str, id: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = get(base, &format!("/v1/webhooks/{id}/deliveries?limit=200")).await;
        let deliveries = page["deliveries"].as_array().expect("deliveries").clone();
        if done(&deliveries) {
            return deliveries;
        }
        assert!(Instant::now() < deadline, "never {what}: {deliveries:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrations = false)]
async fn a_receiver_that_fails_for_a_while_gets_everything_in_order_once_back(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let hook = register(&agentd.base, json!({"url": receiver.url("/down"), "events": ["*"]})).await;
    let id = hook["id"].as_str().expect("id");
    // Down: refusals, a redirect (not followed), a 429 saying when to come back, then up.
    let plan = json!([
        {"status": 503}, {"status": 500}, {"status": 307, "location": receiver.url("/elsewhere")},
        {"status": 429, "retry_after": "2"}, {"status": 502},
    ]);
    receiver.control(json!({"secrets": [hook["secret"]], "plan": plan})).await;
    let runs = [
        kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await,
        kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "b"}})).await,
    ];
    let mut total = 0;
    for run in &runs {
        total += finished_events(&agentd.base, run).await.len();
    }
    let received = receiver
        .wait_until("everything arrived", |r| r.iter().filter(|r| r["answered"] == 204).count() >= total)
        .await;
    let taken = taken(&received, "/down", 0);
    for (run, records) in &taken {
        let expected: Vec<i64> = (1..=records.len() as i64).collect();
        assert_eq!(seqs(records), expected, "run {run}: in order, each once");
    }
    assert_eq!(taken.values().map(Vec::len).sum::<usize>(), total);
    assert!(received.iter().all(|r| r["path"] != "/elsewhere"), "a redirect is not followed");
    // Every failed attempt was retried with the same webhook-id, and later events of the run
    // waited for it.
    let failed: Vec<&Value> = received.iter().filter(|r| r["answered"] != 204).collect();
    assert_eq!(failed.len(), 5);
    for attempt in &failed {
        let again = received.iter().find(|r| r["answered"] == 204 && r["id"] == attempt["id"]);
        assert!(again.is_some(), "{attempt} was never delivered");
    }
    // The 429's Retry-After (2 s) was honoured, over the schedule's 1 s.
    let after_429 = received.iter().position(|r| r["answered"] == 429).expect("the 429");
    let next = received[after_429 + 1..]
        .iter()
        .find(|r| r["event"]["run_id"] == received[after_429]["event"]["run_id"])
        .expect("an attempt after the 429");
    let waited = next["at"].as_f64().expect("at") - received[after_429]["at"].as_f64().expect("at");
    assert!(waited >= 1.9, "retried {waited:.2} s after a Retry-After of 2 s");
    let deliveries =
        wait_deliveries(&agentd.base, id, "all delivered", |d| d.iter().all(|d| d["status"] == "delivered"))
            .await;
    let retried: Vec<&Value> = deliveries.iter().filter(|d| d["attempts"].as_i64() > Some(1)).collect();
    assert!(
        !retried.is_empty() && retried.iter().all(|d| d["last_status"] == 204 && d["last_error"].is_null())
    );
    let metrics =
        reqwest::get(format!("{}/metrics", agentd.base)).await.expect("GET").text().await.expect("text");
    assert!(metrics.contains("agentd_webhook_deliveries_total{outcome=\"retrying\"} 5"), "{metrics}");
}

#[sqlx::test(migrations = false)]
async fn a_410_disables_the_endpoint_and_enabling_it_resumes_where_it_stopped(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let hook = register(&agentd.base, json!({"url": receiver.url("/gone"), "events": ["run.*"]})).await;
    let id = hook["id"].as_str().expect("id");
    receiver.control(json!({"secrets": [hook["secret"]], "default": {"status": 410}})).await;
    let run = kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await;
    finished_events(&agentd.base, &run).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let disabled = loop {
        let endpoint = get(&agentd.base, &format!("/v1/webhooks/{id}")).await;
        if endpoint["enabled"] == false {
            break endpoint;
        }
        assert!(Instant::now() < deadline, "the 410 never disabled the endpoint: {endpoint}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(disabled["disabled_reason"], "the receiver answered 410 Gone");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.received().await.len(), 1, "nothing more is sent to a disabled endpoint");
    let deliveries = get(&agentd.base, &format!("/v1/webhooks/{id}/deliveries")).await;
    let statuses: Vec<&str> = deliveries["deliveries"]
        .as_array()
        .expect("d")
        .iter()
        .map(|d| d["status"].as_str().expect("s"))
        .collect();
    assert_eq!(statuses, ["pending", "pending", "pending"], "run.queued, run.started, run.completed wait");
    // A retry while disabled is refused.
    let first = deliveries["deliveries"][2]["id"].as_i64().expect("id");
    let refused = send(
        &agentd.base,
        reqwest::Method::POST,
        &format!("/v1/webhooks/{id}/deliveries/{first}/retry"),
        None,
    )
    .await;
    let problem = expect_problem(refused, StatusCode::CONFLICT).await;
    assert!(problem["detail"].as_str().expect("detail").contains("410 Gone"), "{problem}");

    receiver.control(json!({"default": {"status": 200}})).await;
    let patched = send(
        &agentd.base,
        reqwest::Method::PATCH,
        &format!("/v1/webhooks/{id}"),
        Some(json!({"enabled": true})),
    )
    .await;
    let patched = expect_json(patched, StatusCode::OK).await;
    assert_eq!((patched["enabled"].clone(), patched["disabled_reason"].clone()), (json!(true), Value::Null));
    let received = receiver
        .wait_until("the run's events", |r| r.iter().filter(|r| r["answered"] == 200).count() == 3)
        .await;
    let types: Vec<&str> = received[1..].iter().map(|r| r["event"]["type"].as_str().expect("type")).collect();
    assert_eq!(types, ["run.queued", "run.started", "run.completed"]);
    assert_eq!(received[0]["id"], received[1]["id"], "the 410'd message again, same webhook-id");
}

#[sqlx::test(migrations = false)]
async fn a_delivery_failing_the_whole_schedule_fails_and_can_be_retried(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd =
        Agentd::start(&url, &env(&fake.base_url(), &[("AGENTD_WEBHOOK_RETRY_SCHEDULE", "200ms,200ms")]));
    let hook =
        register(&agentd.base, json!({"url": receiver.url("/broken"), "events": ["run.completed"]})).await;
    let id = hook["id"].as_str().expect("id");
    receiver.control(json!({"secrets": [hook["secret"]], "default": {"status": 500}})).await;
    let run = kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await;
    finished_events(&agentd.base, &run).await;
    let deliveries =
        wait_deliveries(&agentd.base, id, "failed", |d| d.first().is_some_and(|d| d["status"] == "failed"))
            .await;
    let failed = &deliveries[0];
    assert_eq!(
        (failed["attempts"].as_i64(), failed["last_status"].as_i64()),
        (Some(3), Some(500)),
        "{failed}"
    );
    assert_eq!(failed["last_error"], "answered 500 Internal Server Error");
    assert!(failed["next_attempt_at"].is_null());
    let endpoint = get(&agentd.base, &format!("/v1/webhooks/{id}")).await;
    assert_eq!(endpoint["enabled"], false);
    let reason = endpoint["disabled_reason"].as_str().expect("reason");
    assert!(reason.starts_with("3 attempts failed over the whole retry schedule"), "{reason}");
    assert_eq!(receiver.received().await.len(), 3);

    receiver.control(json!({"default": {"status": 204}})).await;
    let enabled = send(
        &agentd.base,
        reqwest::Method::PATCH,
        &format!("/v1/webhooks/{id}"),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(enabled.status(), StatusCode::OK);
    let delivery = failed["id"].as_i64().expect("id");
    let retried = send(
        &agentd.base,
        reqwest::Method::POST,
        &format!("/v1/webhooks/{id}/deliveries/{delivery}/retry"),
        None,
    )
    .await;
    let retried = expect_json(retried, StatusCode::ACCEPTED).await;
    assert_eq!(retried["status"], "pending");
    let received = receiver.wait_until("the retry", |r| r.len() == 4).await;
    assert_eq!(
        (received[3]["answered"].clone(), received[3]["id"].clone()),
        (json!(204), received[0]["id"].clone())
    );
    wait_deliveries(&agentd.base, id, "delivered", |d| d[0]["status"] == "delivered").await;
    let missing = send(
        &agentd.base,
        reqwest::Method::POST,
        &format!("/v1/webhooks/{id}/deliveries/999999/retry"),
        None,
    )
    .await;
    expect_problem(missing, StatusCode::NOT_FOUND).await;
}

#[sqlx::test(migrations = false)]
async fn a_rotated_secret_signs_alongside_the_new_one_for_the_grace_period(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[("AGENTD_WEBHOOK_ROTATION_GRACE_S", "3600")]));
    let hook = register(&agentd.base, json!({"url": receiver.url("/r"), "events": ["run.completed"]})).await;
    let id = hook["id"].as_str().expect("id");
    let rotated =
        send(&agentd.base, reqwest::Method::POST, &format!("/v1/webhooks/{id}/rotate-secret"), None).await;
    let rotated = expect_json(rotated, StatusCode::OK).await;
    assert_ne!(rotated["secret"], hook["secret"]);
    let until: chrono::DateTime<chrono::Utc> =
        rotated["previous_secret_until"].as_str().expect("previous_secret_until").parse().expect("a time");
    let grace = (until - chrono::Utc::now()).num_seconds();
    assert!((3500..=3600).contains(&grace), "the grace is the configured hour: {rotated}");
    receiver.control(json!({"secrets": [hook["secret"], rotated["secret"]]})).await;
    let run = kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await;
    finished_events(&agentd.base, &run).await;
    let received = receiver.wait_until("the first", |r| r.len() == 1).await;
    assert_eq!(received[0]["verified"], json!([0, 1]), "both secrets verify during the grace: {received:?}");
    // The hour passes: the stored end of the grace moves to now.
    let uuid = uuid::Uuid::parse_str(id).expect("uuid");
    sqlx::query("UPDATE webhook_endpoints SET previous_until = now() WHERE id = $1")
        .bind(uuid)
        .execute(&pool)
        .await
        .expect("end the grace");
    let run = kickoff(&agentd.base, json!({"crew": crew("writer"), "inputs": {"word": "b"}})).await;
    finished_events(&agentd.base, &run).await;
    let received = receiver.wait_until("the second", |r| r.len() == 2).await;
    assert_eq!(received[1]["verified"], json!([1]), "only the new secret after it: {received:?}");
    assert!(get(&agentd.base, &format!("/v1/webhooks/{id}")).await["previous_secret_until"].is_null());
}

#[sqlx::test(migrations = false)]
async fn webhooks_to_private_addresses_are_refused_at_registration_and_at_delivery(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    // Allowed on the first replica: the endpoint is registered.
    let open = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let hook = register(&open.base, json!({"url": receiver.url("/p"), "events": ["run.completed"]})).await;
    let id = hook["id"].as_str().expect("id").to_owned();
    receiver.control(json!({"secrets": [hook["secret"]]})).await;
    open.stop("-TERM").await;
    // Not on the second.
    let guarded = Agentd::start(&url, &env(&fake.base_url(), &[("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "")]));
    for url in [receiver.url("/p"), "http://10.1.2.3/hook".into(), "http://localhost:9/x".into()] {
        let refused =
            send(&guarded.base, reqwest::Method::POST, "/v1/webhooks", Some(json!({"url": url}))).await;
        let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        let fields = problem_fields(&problem);
        assert!(fields["url"].starts_with("refused by the egress guard"), "{url}: {problem}");
    }
    let body = json!({"crew": crew("writer"), "inputs": {"word": "a"},
                      "webhooks": [{"url": "http://192.168.0.10/x"}]});
    let refused = send(&guarded.base, reqwest::Method::POST, "/v1/kickoffs", Some(body)).await;
    let fields = problem_fields(&expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await);
    assert!(fields["webhooks[0].url"].starts_with("refused by the egress guard"), "{fields:?}");
    // At delivery: the registered endpoint's request is refused by this replica.
    let run = kickoff(&guarded.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await;
    finished_events(&guarded.base, &run).await;
    let deliveries = wait_deliveries(&guarded.base, &id, "an attempt", |d| {
        d.first().is_some_and(|d| d["attempts"].as_i64() >= Some(1))
    })
    .await;
    let error = deliveries[0]["last_error"].as_str().expect("error");
    assert!(error.starts_with("refused by the egress guard"), "{error}");
    assert!(receiver.received().await.is_empty(), "nothing reached the private address");
}

#[sqlx::test(migrations = false)]
async fn kill_9_mid_delivery_loses_nothing_and_keeps_the_order(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let first = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let hook = register(&first.base, json!({"url": receiver.url("/k"), "events": ["*"]})).await;
    // The first request hangs until the replica is gone.
    receiver.control(json!({"secrets": [hook["secret"]], "plan": [{"status": 204, "delay_s": 30}]})).await;
    let run = kickoff(&first.base, json!({"crew": crew("writer"), "inputs": {"word": "a"}})).await;
    let events = finished_events(&first.base, &run).await;
    receiver.wait_until("the first request", |r| !r.is_empty()).await;
    assert!(!first.signal("-KILL").await.success());
    let second = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let received = receiver.wait_until("everything again", |r| r.len() > events.len()).await;
    // The hung message once more (same webhook-id), then the rest, in order.
    assert_eq!(received[0]["id"], received[1]["id"]);
    let seqs: Vec<i64> = received[1..].iter().map(|r| r["event"]["seq"].as_i64().expect("seq")).collect();
    assert_eq!(seqs, (1..=events.len() as i64).collect::<Vec<_>>());
    assert!(received.iter().all(|r| r["verified"] == json!([0])));
    let id = hook["id"].as_str().expect("id");
    wait_deliveries(&second.base, id, "all delivered", |d| d.iter().all(|d| d["status"] == "delivered"))
        .await;
}

#[sqlx::test(migrations = false)]
async fn webhook_routes_check_what_they_are_sent(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let without = Agentd::start(&url, &env(&fake.base_url(), &[("AGENTD_WEBHOOK_SECRET", "")]));
    for (method, path) in [(reqwest::Method::GET, "/v1/webhooks"), (reqwest::Method::POST, "/v1/webhooks")] {
        let answer = send(&without.base, method, path, Some(json!({"url": receiver.url("/x")}))).await;
        let problem = expect_problem(answer, StatusCode::NOT_IMPLEMENTED).await;
        assert_eq!(problem["type"], "/problems/not-configured");
    }
    let body =
        json!({"crew": crew("writer"), "inputs": {"word": "a"}, "webhooks": [{"url": receiver.url("/x")}]});
    let refused = send(&without.base, reqwest::Method::POST, "/v1/kickoffs", Some(body)).await;
    let fields = problem_fields(&expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await);
    assert!(fields["webhooks"].contains("AGENTD_WEBHOOK_SECRET"), "{fields:?}");
    without.stop("-TERM").await;

    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[]));
    let base = &agentd.base;
    let cases = [
        (json!({"url": "ftp://127.0.0.1/x"}), "url"),
        (json!({"url": "https://user:pw@127.0.0.1/x"}), "url"),
        (json!({"url": receiver.url("/x"), "events": []}), "events"),
        (json!({"url": receiver.url("/x"), "events": ["run.finished"]}), "events"),
        (json!({"url": receiver.url("/x"), "events": ["llm.delta"]}), "events"),
        (json!({"url": receiver.url("/x"), "crew": "no spaces"}), "crew"),
        (json!({"url": receiver.url("/x"), "description": "d".repeat(1025)}), "description"),
        (json!({"url": receiver.url("/x"), "secret": "mine"}), "secret"),
    ];
    for (body, field) in cases {
        let answer = send(base, reqwest::Method::POST, "/v1/webhooks", Some(body.clone())).await;
        let fields = problem_fields(&expect_problem(answer, StatusCode::UNPROCESSABLE_ENTITY).await);
        assert!(fields.contains_key(field), "{body}: {fields:?}");
    }
    let run = kickoff(
        base,
        json!({"crew": crew("writer"), "inputs": {"word": "a"},
                                   "webhooks": [{"url": receiver.url("/x"), "events": ["task.*"]}]}),
    )
    .await;
    let of_run = get(base, &format!("/v1/webhooks?run_id={run}")).await;
    let run_hook = of_run["webhooks"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(of_run["webhooks"][0]["events"], json!(["task.*"]));
    let rotate =
        send(base, reqwest::Method::POST, &format!("/v1/webhooks/{run_hook}/rotate-secret"), None).await;
    expect_problem(rotate, StatusCode::CONFLICT).await;
    let bad_patterns = json!({"crew": crew("writer"), "inputs": {"word": "a"},
                              "webhooks": [{"url": receiver.url("/x"), "events": ["nope"]}]});
    let refused = send(
        base,
        reqwest::Method::POST,
        "/v1/kickoffs/batch",
        Some(json!({
        "crew": crew("writer"), "inputs": [{"word": "a"}], "webhooks": bad_patterns["webhooks"]})),
    )
    .await;
    let fields = problem_fields(&expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await);
    assert!(fields.contains_key("webhooks[0].events"), "{fields:?}");

    let hook =
        register(base, json!({"url": receiver.url("/x"), "events": ["run.completed"], "description": "d"}))
            .await;
    let id = hook["id"].as_str().expect("id");
    let patch = json!({"events": ["task.*", "run.failed"], "description": "changed", "enabled": false});
    let patched = expect_json(
        send(base, reqwest::Method::PATCH, &format!("/v1/webhooks/{id}"), Some(patch)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (patched["events"].clone(), patched["description"].clone()),
        (json!(["task.*", "run.failed"]), json!("changed"))
    );
    assert_eq!(
        (patched["enabled"].clone(), patched["disabled_reason"].clone()),
        (json!(false), json!("disabled through the API"))
    );
    let bad = send(
        base,
        reqwest::Method::PATCH,
        &format!("/v1/webhooks/{id}"),
        Some(json!({"url": "http://127.0.0.1/x"})),
    )
    .await;
    expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    let unknown = uuid::Uuid::now_v7();
    for (method, path) in [
        (reqwest::Method::GET, format!("/v1/webhooks/{unknown}")),
        (reqwest::Method::DELETE, format!("/v1/webhooks/{unknown}")),
        (reqwest::Method::GET, format!("/v1/webhooks/{unknown}/deliveries")),
        (reqwest::Method::POST, format!("/v1/webhooks/{unknown}/rotate-secret")),
    ] {
        expect_problem(send(base, method, &path, None).await, StatusCode::NOT_FOUND).await;
    }
    for path in [
        "/v1/webhooks/not-a-uuid",
        &format!("/v1/webhooks/{id}/deliveries?limit=0"),
        &format!("/v1/webhooks/{id}/deliveries?cursor=x"),
    ] {
        expect_problem(send(base, reqwest::Method::GET, path, None).await, StatusCode::BAD_REQUEST).await;
    }
    let deleted = send(base, reqwest::Method::DELETE, &format!("/v1/webhooks/{id}"), None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_problem(
        send(base, reqwest::Method::GET, &format!("/v1/webhooks/{id}"), None).await,
        StatusCode::NOT_FOUND,
    )
    .await;
}

/// A batch's webhooks reach every run of the batch; one run's failing deliveries hold back only
/// that run's later events, never another run's.
#[sqlx::test(migrations = false)]
async fn a_failing_run_does_not_hold_back_another_runs_deliveries(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = start_fake().await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &[]));
    receiver.control(json!({"secrets": [SERVER_SECRET], "fail_first_run": 503})).await;
    let body = json!({"crew": crew("writer"), "inputs": [{"word": "a"}, {"word": "b"}],
                      "webhooks": [{"url": receiver.url("/batch"), "events": ["run.*"]}]});
    let response = send(&agentd.base, reqwest::Method::POST, "/v1/kickoffs/batch", Some(body)).await;
    let runs: Vec<String> = expect_json(response, StatusCode::ACCEPTED).await["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    for run in &runs {
        finished_events(&agentd.base, run).await;
    }
    // The other run's three run.* events all arrive while the first one's keep failing.
    let received = receiver
        .wait_until("the healthy run's events", |r| {
            let failing = r.first().and_then(|f| f["event"]["run_id"].as_str()).map(str::to_owned);
            r.iter()
                .filter(|r| r["answered"] == 204 && r["event"]["run_id"].as_str() != failing.as_deref())
                .count()
                == 3
        })
        .await;
    let failing = received[0]["event"]["run_id"].as_str().expect("run").to_owned();
    assert!(runs.contains(&failing));
    let stuck: Vec<&Value> = received.iter().filter(|r| r["event"]["run_id"] == failing.as_str()).collect();
    assert!(
        stuck.iter().all(|r| r["answered"] == 503 && r["event"]["seq"] == 1),
        "only its first event was tried: {stuck:?}"
    );
    // Once the receiver takes it, the held-back run's events follow in order.
    receiver.control(json!({"fail_first_run": null})).await;
    let received = receiver
        .wait_until("the held-back run's events", |r| {
            r.iter().filter(|r| r["answered"] == 204 && r["event"]["run_id"] == failing.as_str()).count() == 3
        })
        .await;
    let taken = taken(&received, "/batch", 0);
    assert_eq!(taken.len(), 2, "both runs of the batch");
    for records in taken.values() {
        let types: Vec<&str> = records.iter().map(|r| r["event"]["type"].as_str().expect("type")).collect();
        assert_eq!(types, ["run.queued", "run.started", "run.completed"]);
    }
}

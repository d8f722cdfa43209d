//! The worker pool in-process against the real router and database, with a fake LLM: execution,
//! cancellation, recovery of expired leases, max_attempts, time limits, fencing and drain.

use std::time::{Duration, Instant};

use agentd::config::{self, Config, Settings};
use agentd::domain::RunId;
use agentd::engine::journal::{Journal, JournalError, Step};
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use agentd::worker::{WorkerPool, WorkerSettings};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::{expect_json, expect_problem, test_config, TestApp};

/// A configuration whose `openai` provider is `fake`.
pub fn fake_config(fake: &FakeLlm) -> Config {
    let toml = format!("[providers.openai]\nbase_url = \"{}\"\nnative_tools = true\n", fake.base_url());
    let file: Settings = toml::from_str(&toml).expect("toml");
    Config { providers: config::providers(&file, |_| None).expect("providers"), ..test_config() }
}

/// Fast settings for tests: short lease, quick polling and recovery.
pub fn fast_settings(slots: usize, lease: Duration) -> WorkerSettings {
    WorkerSettings {
        poll_interval: Duration::from_millis(100),
        recovery_interval: Duration::from_millis(200),
        grace: Duration::from_millis(300),
        ..WorkerSettings::new(slots, lease)
    }
}

/// A worker pool running in the background until `stop` is cancelled.
pub struct Workers {
    pub stop: CancellationToken,
    pub done: tokio::task::JoinHandle<()>,
}

pub fn start_workers(pool: &PgPool, config: &Config, settings: WorkerSettings) -> Workers {
    let engine = std::sync::Arc::new(crate::support::engine_for(config, &Store::new(pool.clone())));
    let workers = WorkerPool::new(Store::new(pool.clone()), engine, settings);
    let stop = CancellationToken::new();
    let done = tokio::spawn(workers.run(stop.clone()));
    Workers { stop, done }
}

impl Workers {
    pub async fn shutdown(self) {
        self.stop.cancel();
        self.done.await.expect("pool task");
    }
}

/// A one-agent crew with the calculator.
pub fn calc_crew() -> Value {
    json!({
        "name": "calc",
        "agents": [{"name": "a", "role": "Mathematician", "goal": "Compute", "backstory": "Exact.",
                    "tools": ["calculator"]}],
        "tasks": [{"name": "t", "description": "What is {expr}?", "expected_output": "A number", "agent": "a"}]
    })
}

/// Poll the run until its status is one of `statuses` (the SSE/wait endpoints come later).
pub async fn wait_for(app: &TestApp, id: &str, statuses: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
        if statuses.contains(&run["status"].as_str().unwrap_or_default()) {
            return run;
        }
        assert!(Instant::now() < deadline, "run {id} never reached {statuses:?}: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the fake has received `n` requests.
pub async fn wait_requests(fake: &FakeLlm, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < n {
        assert!(Instant::now() < deadline, "the fake LLM got {} requests, not {n}", fake.requests().len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The types of an events page, in order.
pub fn event_types(events: &Value) -> Vec<String> {
    events["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().expect("type").to_owned())
        .collect()
}

async fn events(app: &TestApp, id: &str) -> Value {
    expect_json(app.get(&format!("/v1/runs/{id}/events?limit=1000")).await, StatusCode::OK).await
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn workers_execute_kickoffs_to_completion(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]),
        FakeReply::text("42"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let run = app.kickoff(&calc_crew(), json!({"expr": "6*7"})).await;
    let id = run["id"].as_str().expect("id");
    let done = wait_for(&app, id, &["completed", "failed"]).await;
    assert_eq!((done["status"].as_str(), done["output"]["raw"].as_str()), (Some("completed"), Some("42")));
    assert_eq!((done["attempt"].as_i64(), done["usage"]["llm_calls"].as_i64()), (Some(1), Some(2)));
    assert_eq!(done["tasks"][0]["status"], "completed");
    let types = event_types(&events(&app, id).await);
    assert_eq!(types.first().map(String::as_str), Some("run.queued"));
    assert_eq!(types[1], "run.started");
    assert_eq!(types.last().map(String::as_str), Some("run.completed"));
    assert_eq!(fake.requests().len(), 2);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn cancelling_a_queued_run_is_immediate(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = run["id"].as_str().expect("id");
    let cancel = app.request(Method::POST, &format!("/v1/runs/{id}/cancel")).send().await.expect("POST");
    let cancelled = expect_json(cancel, StatusCode::ACCEPTED).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["error"]["kind"], "cancelled");
    assert_eq!(cancelled["tasks"][0]["status"], "cancelled");
    assert!(cancelled["finished_at"].is_string());
    assert_eq!(event_types(&events(&app, id).await), ["run.queued", "run.cancelled"]);
    let again = app.request(Method::POST, &format!("/v1/runs/{id}/cancel")).send().await.expect("POST");
    expect_problem(again, StatusCode::CONFLICT).await;
    let unknown =
        app.request(Method::POST, &format!("/v1/runs/{}/cancel", Uuid::now_v7())).send().await.expect("POST");
    expect_problem(unknown, StatusCode::NOT_FOUND).await;
    let malformed = app.request(Method::POST, "/v1/runs/nope/cancel").send().await.expect("POST");
    expect_problem(malformed, StatusCode::BAD_REQUEST).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn cancelling_mid_llm_call_aborts_it(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("too late").with_delay(Duration::from_secs(30))]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = run["id"].as_str().expect("id");
    wait_requests(&fake, 1).await;
    let asked = Instant::now();
    let cancel = app.request(Method::POST, &format!("/v1/runs/{id}/cancel")).send().await.expect("POST");
    let accepted = expect_json(cancel, StatusCode::ACCEPTED).await;
    assert!(
        ["cancelling", "cancelled"].contains(&accepted["status"].as_str().unwrap_or_default()),
        "{accepted}"
    );
    let done = wait_for(&app, id, &["cancelled", "completed", "failed"]).await;
    let took = asked.elapsed();
    assert_eq!(done["status"], "cancelled", "{done}");
    // The fake answers after 30 s: ending long before proves the request was aborted.
    assert!(took < Duration::from_secs(5), "cancellation took {took:?}");
    let types = event_types(&events(&app, id).await);
    assert_eq!(types.last().map(String::as_str), Some("run.cancelled"));
    assert_eq!(types.iter().filter(|t| t.as_str() == "run.cancelled").count(), 1);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn expired_leases_are_recovered_by_a_new_attempt(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("done")]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = RunId(Uuid::parse_str(run["id"].as_str().expect("id")).expect("uuid"));
    // A worker claims the run and dies at once: its lease runs out.
    let store = Store::new(pool.clone());
    store.claim_run(id, "dead-worker", Duration::from_millis(300)).await.expect("claim").expect("claimed");
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let done = wait_for(&app, &id.to_string(), &["completed", "failed"]).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)));
    let events = events(&app, &id.to_string()).await;
    let attempts: Vec<i64> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "run.started")
        .map(|e| e["data"]["attempt"].as_i64().expect("attempt"))
        .collect();
    assert_eq!(attempts, [1, 2]);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_attempts_bounds_recovery(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = RunId(Uuid::parse_str(run["id"].as_str().expect("id")).expect("uuid"));
    sqlx::query("UPDATE runs SET max_attempts = 1 WHERE id = $1")
        .bind(id.0)
        .execute(&pool)
        .await
        .expect("limit");
    let store = Store::new(pool.clone());
    store.claim_run(id, "dead-worker", Duration::from_millis(200)).await.expect("claim").expect("claimed");
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let done = wait_for(&app, &id.to_string(), &["completed", "failed"]).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["kind"], "internal");
    assert!(done["error"]["message"].as_str().is_some_and(|m| m.contains("interrupted 1 times")), "{done}");
    assert_eq!(interruptions(&pool, id).await, 1, "the count agrees with the message");
    assert_eq!(fake.requests().len(), 0, "no attempt beyond the limit ran");
    assert_eq!(
        event_types(&events(&app, &id.to_string()).await).last().map(String::as_str),
        Some("run.failed")
    );
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn runs_over_their_time_limit_fail(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("slow").with_delay(Duration::from_secs(30))]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let body = json!({"crew": calc_crew(), "inputs": {"expr": "1"}, "timeout_s": 1});
    let run = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
    let id = run["id"].as_str().expect("id");
    let done = wait_for(&app, id, &["completed", "failed", "cancelled"]).await;
    assert_eq!((done["status"].as_str(), done["error"]["kind"].as_str()), (Some("failed"), Some("timeout")));
    let bad = json!({"crew": calc_crew(), "inputs": {"expr": "1"}, "timeout_s": 0});
    expect_problem(app.post_json("/v1/kickoffs", &bad).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_worker_that_lost_its_lease_cannot_write(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = RunId(Uuid::parse_str(run["id"].as_str().expect("id")).expect("uuid"));
    let store = Store::new(pool.clone());
    let first =
        store.claim_run(id, "paused", Duration::from_millis(100)).await.expect("claim").expect("claimed");
    tokio::time::sleep(Duration::from_millis(150)).await;
    store.recover_expired_leases(2).await.expect("recover");
    let second = store.claim_run(id, "live", Duration::from_secs(30)).await.expect("claim").expect("claimed");
    assert_eq!((first.attempt, second.attempt), (1, 2));
    let mut step = Step::default();
    step.event(Some("t"), Some("a"), crate::support::thought("stale"));
    let stale = store.journal(id, first.attempt).commit(step.clone()).await;
    assert_eq!(stale, Err(JournalError::Fenced));
    store.journal(id, second.attempt).commit(step).await.expect("the new attempt writes");
    let thoughts =
        event_types(&events(&app, &id.to_string()).await).iter().filter(|t| *t == "agent.thought").count();
    assert_eq!(thoughts, 1);
    let renewed = store.renew_lease(id, first.attempt, Duration::from_secs(5)).await.expect("renew");
    assert_eq!(renewed, agentd::store::Lease::Lost);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn shutdown_hands_in_flight_runs_back_to_the_queue(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("never delivered").with_delay(Duration::from_secs(30)),
        FakeReply::text("done"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let first = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(30)));
    let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
    let id = run["id"].as_str().expect("id");
    wait_requests(&fake, 1).await;
    first.shutdown().await;
    let released = expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
    assert_eq!(released["status"], "queued", "handed back without waiting for the 30 s lease");
    let second = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(30)));
    let done = wait_for(&app, id, &["completed", "failed"]).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)));
    second.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn two_replicas_complete_fifty_runs_exactly_once(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    // Each answer takes a while, so one replica's 8 slots fill up and the other must take runs too.
    fake.push(
        (0..50).map(|i| FakeReply::text(&format!("answer {i}")).with_delay(Duration::from_millis(150))),
    );
    let config = fake_config(&fake);
    let (a, b) = (
        TestApp::spawn_with(pool.clone(), config.clone()).await,
        TestApp::spawn_with(pool.clone(), config.clone()).await,
    );
    let workers_a = start_workers(
        &pool,
        &config,
        WorkerSettings { owner: "replica-a".into(), ..fast_settings(8, Duration::from_secs(10)) },
    );
    let workers_b = start_workers(
        &pool,
        &config,
        WorkerSettings { owner: "replica-b".into(), ..fast_settings(8, Duration::from_secs(10)) },
    );
    let mut ids = Vec::new();
    for i in 0..50 {
        let app = if i % 2 == 0 { &a } else { &b };
        ids.push(app.kickoff(&calc_crew(), json!({"expr": i})).await["id"].as_str().expect("id").to_owned());
    }
    let mut owners = std::collections::BTreeMap::<String, usize>::new();
    for id in &ids {
        let done = wait_for(&a, id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["attempt"], 1);
        let seen_by_b = expect_json(b.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
        assert_eq!(seen_by_b, done, "both replicas show the same run");
        let events = events(&b, id).await;
        let started: Vec<&Value> = events["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["type"] == "run.started")
            .collect();
        assert_eq!(started.len(), 1, "claimed exactly once");
        *owners.entry(started[0]["data"]["worker"].as_str().expect("worker").to_owned()).or_default() += 1;
    }
    assert_eq!(fake.requests().len(), 50, "one LLM call per run, none repeated");
    assert_eq!(owners.len(), 2, "both replicas executed runs: {owners:?}");
    workers_a.shutdown().await;
    workers_b.shutdown().await;
}

async fn post(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.request(Method::POST, path).json(body).send().await.expect("POST")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn human_input_pauses_then_reject_redoes_and_approve_continues(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("Draft 1"),
        FakeReply::text("Draft 2"),
        FakeReply::text("Summary of draft 2"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let crew = json!({
        "name": "review",
        "agents": [{"name": "w", "role": "Writer", "goal": "Write", "backstory": "Careful."}],
        "tasks": [
            {"name": "draft", "description": "Draft a note", "expected_output": "A note", "agent": "w", "human_input": true},
            {"name": "summary", "description": "Summarise the note", "expected_output": "One line", "agent": "w"}
        ]
    });
    let id = app.kickoff(&crew, json!({})).await["id"].as_str().expect("id").to_owned();
    let paused = wait_for(&app, &id, &["awaiting_input", "failed"]).await;
    assert_eq!(paused["status"], "awaiting_input", "{paused}");
    assert_eq!(
        (paused["tasks"][0]["status"].as_str(), paused["tasks"][0]["output"]["raw"].as_str()),
        (Some("running"), Some("Draft 1"))
    );
    let awaiting =
        events(&app, &id).await["events"].as_array().expect("events").last().cloned().expect("event");
    assert_eq!(
        (awaiting["type"].as_str(), awaiting["data"]["output"].as_str()),
        (Some("run.awaiting_input"), Some("Draft 1"))
    );

    let no_feedback = post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": false})).await;
    expect_problem(no_feedback, StatusCode::UNPROCESSABLE_ENTITY).await;
    let rejected =
        post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": false, "feedback": "Add a date"}))
            .await;
    // Requeued: a worker may already have claimed it again (its second attempt) by the time the
    // answer is built, and even have redone the draft (the fake answers at once) and paused again.
    let requeued = expect_json(rejected, StatusCode::ACCEPTED).await;
    match (requeued["status"].as_str().unwrap_or_default(), requeued["attempt"].as_i64()) {
        ("queued", Some(1)) | ("running", Some(2)) => {}
        ("awaiting_input", Some(2)) => {
            assert_eq!(requeued["tasks"][0]["output"]["raw"], "Draft 2", "{requeued}")
        }
        _ => panic!("a rejected run is requeued: {requeued}"),
    }
    let paused = wait_for(&app, &id, &["awaiting_input", "failed"]).await;
    assert_eq!(paused["tasks"][0]["output"]["raw"], "Draft 2");
    let redo = &fake.requests()[1]["messages"];
    let last = redo.as_array().and_then(|m| m.last()).expect("message");
    assert!(last["content"].as_str().is_some_and(|c| c.contains("Add a date")), "{last}");
    assert_eq!(last["role"], "user");

    let approved = post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": true})).await;
    expect_json(approved, StatusCode::ACCEPTED).await;
    let done = wait_for(&app, &id, &["completed", "failed"]).await;
    assert_eq!(
        (done["status"].as_str(), done["output"]["raw"].as_str()),
        (Some("completed"), Some("Summary of draft 2"))
    );
    assert_eq!(done["tasks"][0]["output"]["raw"], "Draft 2");
    let summary_prompt = fake.requests()[2]["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
    assert!(summary_prompt.contains("Draft 2"), "the next task sees the approved answer");
    let types = event_types(&events(&app, &id).await);
    assert_eq!(types.iter().filter(|t| *t == "run.resumed").count(), 2);
    assert_eq!(types.iter().filter(|t| *t == "run.awaiting_input").count(), 2);

    let again = post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": true})).await;
    expect_problem(again, StatusCode::CONFLICT).await;
    let unknown = post(&app, &format!("/v1/runs/{}/resume", Uuid::now_v7()), &json!({"approve": true})).await;
    expect_problem(unknown, StatusCode::NOT_FOUND).await;
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_rpm_spaces_llm_calls_and_announces_the_wait(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "1+1"}))]),
        FakeReply::tool_calls(&[("c2", "calculator", json!({"expression": "2+2"}))]),
        FakeReply::text("4"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let mut crew = calc_crew();
    crew["max_rpm"] = json!(120);
    // The first call is booked after this instant; the k-th one at least k × 500 ms after it.
    let before = chrono::Utc::now();
    let id = app.kickoff(&crew, json!({"expr": "2+2"})).await["id"].as_str().expect("id").to_owned();
    let done = wait_for(&app, &id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed");
    let events = events(&app, &id).await;
    let events = events["events"].as_array().expect("events");
    let throttled: Vec<&Value> = events.iter().filter(|e| e["type"] == "run.throttled").collect();
    assert_eq!(throttled.len(), 2, "the second and third calls waited");
    assert!(throttled.iter().all(|e| e["data"]["wait_ms"].as_u64().is_some_and(|w| w > 0 && w <= 500)));
    assert!(throttled[0]["data"]["limit"]
        .as_str()
        .is_some_and(|l| l.contains("crew") && l.contains("120/min")));
    let starts: Vec<chrono::DateTime<chrono::Utc>> = events
        .iter()
        .filter(|e| e["type"] == "llm.started")
        .map(|e| e["at"].as_str().expect("at").parse().expect("time"))
        .collect();
    assert_eq!(starts.len(), 3);
    for (k, start) in starts.iter().enumerate() {
        let after = (*start - before).num_milliseconds();
        assert!(after >= 500 * k as i64, "call {k} started {after} ms after the kickoff under 120/min");
    }
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn releasing_after_failures_gives_up_at_max_attempts(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let store = Store::new(pool.clone());
    let id = RunId(
        Uuid::parse_str(app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id"))
            .expect("uuid"),
    );
    sqlx::query("UPDATE runs SET max_attempts = 2 WHERE id = $1")
        .bind(id.0)
        .execute(&pool)
        .await
        .expect("limit");
    let first = store.claim_run(id, "w", Duration::from_secs(30)).await.expect("claim").expect("claimed");
    assert!(store.release_run(id, first.attempt, Some("the database went away")).await.expect("release"));
    assert_eq!(store.get_run(id).await.expect("get").expect("run").status, agentd::domain::RunStatus::Queued);
    assert!(!store.release_run(id, first.attempt, None).await.expect("release"), "not ours any more");
    let second = store.claim_run(id, "w", Duration::from_secs(30)).await.expect("claim").expect("claimed");
    assert!(store.release_run(id, second.attempt, Some("the database went away")).await.expect("release"));
    let run = store.get_run(id).await.expect("get").expect("run");
    assert_eq!(run.status, agentd::domain::RunStatus::Failed);
    let error = run.error.expect("error");
    assert!(
        error.message.contains("gave up after 2 interrupted attempts") && error.message.contains("went away"),
        "{error:?}"
    );
    assert_eq!(interruptions(&pool, id).await, 2, "the count agrees with the message");
}

/// How many interruptions the run's row counts.
async fn interruptions(pool: &PgPool, id: RunId) -> i32 {
    sqlx::query_scalar("SELECT interruptions FROM runs WHERE id = $1")
        .bind(id.0)
        .fetch_one(pool)
        .await
        .expect("interruptions")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn time_awaiting_input_does_not_count_toward_the_time_limit(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let store = Store::new(pool.clone());
    let id = RunId(
        Uuid::parse_str(app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id"))
            .expect("uuid"),
    );
    store.claim_run(id, "w", Duration::from_secs(30)).await.expect("claim").expect("claimed");
    // The run paused for human review ten minutes ago with an answer waiting.
    sqlx::query(
        "UPDATE runs SET status = 'awaiting_input', updated_at = now() - interval '10 minutes' WHERE id = $1;",
    )
    .bind(id.0)
    .execute(&pool)
    .await
    .expect("pause");
    sqlx::query("UPDATE run_tasks SET status = 'running', output = '{\"raw\": \"draft\", \"json\": null}' WHERE run_id = $1")
        .bind(id.0)
        .execute(&pool)
        .await
        .expect("answer");
    let resumed = post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": true})).await;
    expect_json(resumed, StatusCode::ACCEPTED).await;
    let claimed = store.claim_run(id, "w", Duration::from_secs(30)).await.expect("claim").expect("claimed");
    assert!(claimed.paused >= Duration::from_secs(599), "{:?}", claimed.paused);
}

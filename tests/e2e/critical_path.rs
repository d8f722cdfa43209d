//! The critical path of a run (issue 47), through the real server with its workers: a kickoff
//! answered by a replica with a free slot starts its run there (stored claimed by the kickoff's
//! statement) unless a run is queued or its tenant has a quota that binds claims, and a batch
//! kickoff starts as many of its runs as slots are free; `/wait` answers with the run as its
//! last step left it; the latency budget in `/metrics`.

use std::sync::Arc;

use agentd::domain::schedule::SystemClock;
use agentd::domain::TenantId;
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, new_run, TestApp};
use crate::worker::{calc_crew, fake_config};

/// The server with its workers, on the fake model answering each run with one calculator call
/// then `42`.
async fn serve(pool: PgPool, fake: &FakeLlm, budget: bool) -> TestApp {
    serve_with(pool, fake, budget, 64).await
}

/// [`serve`] with `workers` slots.
async fn serve_with(pool: PgPool, fake: &FakeLlm, budget: bool, workers: usize) -> TestApp {
    let call = FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]);
    fake.set_tool_round(Some((call, FakeReply::text("42"))));
    let mut config = fake_config(fake);
    config.latency_budget = budget;
    config.workers = workers;
    TestApp::spawn_full(pool, config, Arc::new(SystemClock)).await
}

/// Kick off the calculator crew and long-poll it: the kickoff's answer and the wait's.
async fn kickoff_and_wait(app: &TestApp) -> (Value, Value) {
    let kicked = app.kickoff(&calc_crew(), json!({"expr": "6*7"})).await;
    let id = kicked["id"].as_str().expect("id");
    let waited =
        expect_json(app.get(&format!("/v1/runs/{id}/wait?timeout_s=30")).await, StatusCode::OK).await;
    (kicked, waited)
}

/// Was the run claimed by its kickoff? Such a run starts the instant it is stored (its
/// `started_at` is its `created_at`); a claimer's claim comes in a later transaction.
fn claimed_at_kickoff(run: &Value) -> bool {
    run["started_at"] == run["created_at"]
}

async fn event_types(app: &TestApp, id: &str) -> Vec<(i64, String, Value)> {
    let events =
        expect_json(app.get(&format!("/v1/runs/{id}/events?limit=1000")).await, StatusCode::OK).await;
    events["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (e["seq"].as_i64().expect("seq"), e["type"].as_str().expect("type").to_owned(), e["data"].clone())
        })
        .collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_kickoff_starts_its_run_here_and_the_wait_answers_with_the_run_as_committed(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = serve(pool, &fake, false).await;
    let (kicked, waited) = kickoff_and_wait(&app).await;
    let id = kicked["id"].as_str().expect("id");
    // The kickoff answers with the run as kicked off, whatever it has done since.
    assert_eq!((kicked["status"].as_str(), kicked["attempt"].as_i64()), (Some("queued"), Some(0)));
    assert_eq!(
        (waited["status"].as_str(), waited["output"]["raw"].as_str()),
        (Some("completed"), Some("42"))
    );
    assert!(claimed_at_kickoff(&waited), "stored claimed: {waited}");
    assert_eq!(waited["attempt"], 1);
    // The wait's answer (the run read back as its last step committed) is the run as read.
    let read = expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
    assert_eq!(waited, read);
    assert_eq!(read["usage"]["llm_calls"], 2);
    assert_eq!(read["tasks"][0]["status"], "completed");
    assert!(read["finished_at"].is_string(), "{read}");
    // Its events are a claimed run's: `run.queued`, then `run.started` naming the worker.
    let events = event_types(&app, id).await;
    assert_eq!((events[0].0, events[0].1.as_str()), (1, "run.queued"));
    assert_eq!((events[1].0, events[1].1.as_str()), (2, "run.started"));
    assert_eq!(events[1].2["attempt"], 1);
    assert!(events[1].2["worker"].as_str().is_some_and(|w| !w.is_empty()), "{:?}", events[1]);
    let seqs: Vec<i64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "dense");
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("run.completed"));
    // The model's start of the task and its first reply share a commit: the task started once.
    let started = events.iter().filter(|e| e.1 == "task.started").count();
    assert_eq!(started, 1, "{events:?}");
    assert_eq!(fake.requests().len(), 2);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_kickoff_never_overtakes_a_queued_run(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    // A run that stays queued: its tenant may run none at once.
    sqlx::query("INSERT INTO tenants (name, max_running) VALUES ('parked', 0)")
        .execute(&pool)
        .await
        .expect("tenant");
    let store = Store::new(pool.clone());
    let parked = agentd::domain::kickoff::NewRun { tenant: TenantId::from("parked".to_owned()), ..new_run() };
    store.create_runs(std::slice::from_ref(&parked), None).await.expect("queued run");
    let app = serve(pool.clone(), &fake, false).await;
    let (_, waited) = kickoff_and_wait(&app).await;
    assert_eq!(waited["status"], "completed", "{waited}");
    assert!(!claimed_at_kickoff(&waited), "a run was queued, so the kickoff queued its own: {waited}");
    let still: String = sqlx::query_scalar("SELECT status FROM runs WHERE id = $1")
        .bind(parked.id.0)
        .fetch_one(&pool)
        .await
        .expect("parked run");
    assert_eq!(still, "queued");
    // With the queue empty again, the next kickoff starts at once.
    sqlx::query("DELETE FROM runs WHERE id = $1").bind(parked.id.0).execute(&pool).await.expect("delete");
    let (_, waited) = kickoff_and_wait(&app).await;
    assert_eq!(waited["status"], "completed", "{waited}");
    assert!(claimed_at_kickoff(&waited), "{waited}");
}

/// Kick off `runs` runs of the calculator crew in one batch; wait for each; the runs as read.
async fn batch_and_wait(app: &TestApp, runs: usize) -> Vec<Value> {
    let inputs: Vec<Value> = (0..runs).map(|i| json!({"expr": format!("{i}*7")})).collect();
    let body = json!({"crew": calc_crew(), "inputs": inputs});
    let kicked = expect_json(app.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    let kicked = kicked["runs"].as_array().expect("runs").clone();
    assert_eq!(kicked.len(), runs, "{kicked:?}");
    let mut waited = Vec::new();
    for run in &kicked {
        assert_eq!(run["status"], "queued", "answered as kicked off: {run}");
        let id = run["id"].as_str().expect("id");
        let path = format!("/v1/runs/{id}/wait?timeout_s=30");
        let done = expect_json(app.get(&path).await, StatusCode::OK).await;
        assert_eq!(done["status"], "completed", "{done}");
        waited.push(done);
    }
    waited
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_batch_kickoff_starts_every_run_here_when_slots_are_free(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    // Slots to spare: every run of the batch starts at once.
    let app = serve_with(pool, &fake, false, 64).await;
    for run in batch_and_wait(&app, 5).await {
        assert!(claimed_at_kickoff(&run), "{run}");
        assert_eq!(run["attempt"], 1);
        let events = event_types(&app, run["id"].as_str().expect("id")).await;
        assert_eq!(
            (events[1].0, events[1].1.as_str(), &events[1].2["attempt"]),
            (2, "run.started", &json!(1))
        );
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_batch_kickoff_larger_than_the_free_slots_starts_its_first_runs_here_and_queues_the_rest(
    pool: PgPool,
) {
    // Three slots (an idle claimer may hold one of them for an instant): the batch's first runs
    // start here, one per free slot, and the others queue for the claimers, in the batch's order.
    let fake = FakeLlm::start().await.expect("fake");
    let app = serve_with(pool, &fake, false, 3).await;
    let runs = batch_and_wait(&app, 6).await;
    let claimed: Vec<bool> = runs.iter().map(claimed_at_kickoff).collect();
    let here = claimed.iter().take_while(|c| **c).count();
    assert!((1..=3).contains(&here), "{claimed:?}");
    assert!(claimed[here..].iter().all(|c| !c), "the claimed runs are the batch's first: {claimed:?}");
    for run in &runs {
        let events = event_types(&app, run["id"].as_str().expect("id")).await;
        let seqs: Vec<i64> = events.iter().map(|e| e.0).collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "dense: {events:?}");
        let types: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(types[..2], ["run.queued", "run.started"], "{types:?}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_tenant_with_max_running_or_a_daily_cap_is_always_claimed_by_the_queue(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = serve(pool.clone(), &fake, false).await;
    // Set after the server started: the kickoff's quota cache may not know it yet, the insert does.
    for quota in ["max_running = 5", "max_running = NULL, max_tokens_per_day = 1000000"] {
        sqlx::query(&format!("UPDATE tenants SET {quota} WHERE name = 'default'"))
            .execute(&pool)
            .await
            .expect("quota");
        let (_, waited) = kickoff_and_wait(&app).await;
        assert_eq!(waited["status"], "completed", "{quota}: {waited}");
        assert!(
            !claimed_at_kickoff(&waited),
            "{quota}: counted by the claim, not claimed at kickoff: {waited}"
        );
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_latency_budget_shows_where_a_runs_time_went_when_it_is_on(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = serve(pool, &fake, true).await;
    for _ in 0..3 {
        let (_, waited) = kickoff_and_wait(&app).await;
        assert_eq!(waited["status"], "completed");
    }
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    let value = |family: &str, stage: &str| -> f64 {
        let prefix = format!("{family}{{stage=\"{stage}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {family} for {stage} in:\n{metrics}"))
    };
    for stage in
        ["kickoff.prepare", "kickoff.insert", "queue.handoff", "llm.request", "tool.call", "journal.commit"]
    {
        assert!(value("agentd_latency_budget_marks_total", stage) >= 3.0, "{stage}");
        assert!(value("agentd_latency_budget_seconds_total", stage) >= 0.0, "{stage}");
    }
    // Those with a round trip take time (the hand-over to a slot may take under a microsecond).
    for stage in ["kickoff.insert", "llm.request", "journal.commit"] {
        assert!(value("agentd_latency_budget_seconds_total", stage) > 0.0, "{stage}");
    }
    // Two model calls and two commits per run.
    assert_eq!(value("agentd_latency_budget_marks_total", "llm.request"), 6.0);
    assert!(metrics.contains("# TYPE agentd_latency_budget_seconds_total counter"), "{metrics}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_latency_budget_is_off_by_default(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = serve(pool, &fake, false).await;
    let (_, waited) = kickoff_and_wait(&app).await;
    assert_eq!(waited["status"], "completed");
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    assert!(metrics.contains("agentd_runs"), "{metrics}");
    assert!(!metrics.contains("agentd_latency_budget"), "{metrics}");
}

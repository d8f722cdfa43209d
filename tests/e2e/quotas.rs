//! Tenant quotas and fair claims over HTTP against the real server and workers: `max_queued`
//! refuses kickoffs (429 with `Retry-After`) and holds under concurrent kickoffs and batches on one
//! replica and on two, `max_running` holds across two worker pools (and a claim that waited for
//! the tenant's lock is stamped as started after the run that ended meanwhile), a run
//! that crosses its tenant's daily token cap fails with `budget` and later kickoffs are 429 until
//! midnight UTC, and one tenant's backlog does not hold back another's runs.

use std::time::{Duration, Instant};

use agentd::config::{ApiKeys, Config};
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, sample_crew, sample_inputs, test_config, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers, wait_for};

const ROOT: &str = "root-key-of-the-operator";

async fn server(pool: PgPool, config: Config) -> TestApp {
    let config = Config { api_keys: ApiKeys::parse(ROOT), ..config };
    TestApp::spawn_with(pool, config).await.as_key(Some(ROOT))
}

/// Create a tenant with `body` (its name and quotas) and a key of it that may read and kick off.
async fn tenant_with_key(root: &TestApp, body: Value) -> TestApp {
    root.as_key(Some(&tenant_key(root, body).await))
}

/// [`tenant_with_key`]'s key, as text.
async fn tenant_key(root: &TestApp, body: Value) -> String {
    let created = expect_json(root.post_json("/v1/tenants", &body).await, StatusCode::CREATED).await;
    let name = created["name"].as_str().expect("name").to_owned();
    let key = json!({"tenant": name, "name": "runner", "scopes": ["read", "kickoff"]});
    let key = expect_json(root.post_json("/v1/keys", &key).await, StatusCode::CREATED).await;
    key["key"].as_str().expect("key").to_owned()
}

/// A crew of one agent and one task (one model call when the model answers at once).
fn one_task_crew() -> Value {
    json!({
        "name": "one",
        "agents": [{"name": "a", "role": "Writer", "goal": "Write", "backstory": "Brief."}],
        "tasks": [{"name": "t", "description": "Say something about {topic}.", "expected_output": "A line",
                   "agent": "a"}]
    })
}

async fn kickoff(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post_json("/v1/kickoffs", body).await
}

fn retry_after(response: &reqwest::Response) -> u64 {
    let value = response.headers().get("retry-after").expect("a Retry-After header");
    value.to_str().expect("ascii").parse().expect("seconds")
}

async fn tenant_state(root: &TestApp, name: &str) -> Value {
    expect_json(root.get(&format!("/v1/tenants/{name}")).await, StatusCode::OK).await
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_queued_refuses_kickoffs_beyond_it_with_retry_after(pool: PgPool) {
    // No workers: kickoffs stay queued.
    let root = server(pool, test_config()).await;
    let a = tenant_with_key(&root, json!({"name": "team-a", "max_queued": 2})).await;
    let b = tenant_with_key(&root, json!({"name": "team-b"})).await;
    let body = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    let first = a
        .request(Method::POST, "/v1/kickoffs")
        .header("idempotency-key", "first")
        .json(&body)
        .send()
        .await
        .expect("kickoff");
    let first = expect_json(first, StatusCode::ACCEPTED).await;
    expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;

    let refused = kickoff(&a, &body).await;
    let wait = retry_after(&refused);
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(problem["type"], "/problems/quota", "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("max_queued")), "{problem}");
    let batch = json!({"crew": sample_crew(), "inputs": [sample_inputs(), sample_inputs()]});
    expect_problem(a.post_json("/v1/kickoffs/batch", &batch).await, StatusCode::TOO_MANY_REQUESTS).await;
    // A replayed kickoff queues nothing: it is answered, not refused.
    let replay = a
        .request(Method::POST, "/v1/kickoffs")
        .header("idempotency-key", "first")
        .json(&body)
        .send()
        .await
        .expect("replay");
    assert!(replay.status().is_success(), "{}", replay.status());
    assert_eq!(replay.json::<Value>().await.expect("json")["id"], first["id"]);
    // Another tenant's queue is its own.
    expect_json(kickoff(&b, &body).await, StatusCode::ACCEPTED).await;

    let state = tenant_state(&root, "team-a").await;
    assert_eq!(state["quotas"]["max_queued"], 2, "{state}");
    assert_eq!((state["usage"]["queued"].as_i64(), state["usage"]["running"].as_i64()), (Some(2), Some(0)));

    // Bad changes are refused, field by field; a missing tenant is a 404.
    let patch = |name: &str, body: Value| {
        root.request(Method::PATCH, &format!("/v1/tenants/{name}")).json(&body).send()
    };
    expect_problem(
        patch("team-a", json!({"max_queue": 3})).await.expect("patch"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        patch("team-a", json!({"max_queued": -1})).await.expect("patch"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    for bad in [json!([null, null]), json!({"max_running": 3_000_000_000u64})] {
        expect_problem(patch("team-a", bad).await.expect("patch"), StatusCode::UNPROCESSABLE_ENTITY).await;
    }
    expect_problem(patch("team-z", json!({"max_queued": 3})).await.expect("patch"), StatusCode::NOT_FOUND)
        .await;
    // The same change through PATCH /v1/tenants, the tenant named in the body.
    let named = json!({"name": "team-a", "max_queued": 2});
    let response = root.request(Method::PATCH, "/v1/tenants").json(&named).send().await.expect("patch");
    assert_eq!(expect_json(response, StatusCode::OK).await["quotas"]["max_queued"], 2);
    let unnamed = root.request(Method::PATCH, "/v1/tenants").json(&json!({"max_queued": 2})).send();
    expect_problem(unnamed.await.expect("patch"), StatusCode::UNPROCESSABLE_ENTITY).await;
    let missing = root.request(Method::PATCH, "/v1/tenants").json(&json!({"name": "team-z"})).send();
    expect_problem(missing.await.expect("patch"), StatusCode::NOT_FOUND).await;
    // Lifting the limit lets kickoffs in again at once (on this replica; others within a second).
    let lifted =
        expect_json(patch("team-a", json!({"max_queued": null})).await.expect("patch"), StatusCode::OK).await;
    assert_eq!(lifted["quotas"]["max_queued"], Value::Null, "{lifted}");
    expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;
}

/// Send `requests` kickoffs at once, the `i`th to `replicas[i % len]` (a batch of `per_batch`
/// runs each when `per_batch` is given): the ids of the runs accepted, after checking every
/// refusal is a 429 quota problem with `Retry-After`.
async fn kickoffs_at_once(replicas: &[&TestApp], requests: usize, per_batch: Option<usize>) -> Vec<String> {
    let sends = (0..requests).map(|i| {
        let app = replicas[i % replicas.len()];
        let (path, body) = match per_batch {
            None => ("/v1/kickoffs", json!({"crew": one_task_crew(), "inputs": {"topic": format!("t{i}")}})),
            Some(n) => {
                let inputs: Vec<Value> = (0..n).map(|j| json!({"topic": format!("t{i}-{j}")})).collect();
                ("/v1/kickoffs/batch", json!({"crew": one_task_crew(), "inputs": inputs}))
            }
        };
        async move { app.post_json(path, &body).await }
    });
    let mut accepted = Vec::new();
    for response in futures_util::future::join_all(sends).await {
        if response.status() == StatusCode::ACCEPTED {
            let body: Value = response.json().await.expect("json");
            match body["runs"].as_array() {
                Some(runs) => accepted.extend(runs.iter().map(|r| r["id"].as_str().expect("id").to_owned())),
                None => accepted.push(body["id"].as_str().expect("id").to_owned()),
            }
            continue;
        }
        let wait = retry_after(&response);
        assert!((1..=60).contains(&wait), "Retry-After {wait}");
        let problem = expect_problem(response, StatusCode::TOO_MANY_REQUESTS).await;
        assert_eq!(problem["type"], "/problems/quota", "{problem}");
        assert!(problem["detail"].as_str().is_some_and(|d| d.contains("max_queued")), "{problem}");
    }
    accepted
}

/// `max_queued` holds however kickoffs arrive: thirty at once to one replica, or spread over two
/// replicas of one database, queue exactly as many runs as the limit (3), round after round; so do
/// concurrent batches (of two runs: one batch fits). The rest are 429 with `Retry-After`.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_queued_holds_under_concurrent_kickoffs_on_one_and_two_replicas(pool: PgPool) {
    // No workers: kickoffs stay queued until the test cancels them.
    let mut config = test_config();
    config.db_max_connections = 8;
    let first = server(pool.clone(), config.clone()).await;
    let second = server(pool, config).await;
    let key = tenant_key(&first, json!({"name": "team-a", "max_queued": 3})).await;
    let (a, on_second) = (first.as_key(Some(&key)), second.as_key(Some(&key)));
    let cases: [(&str, Vec<&TestApp>, Option<usize>); 3] = [
        ("one replica", vec![&a], None),
        ("two replicas", vec![&a, &on_second], None),
        ("batches on two replicas", vec![&a, &on_second], Some(2)),
    ];
    for (case, replicas, per_batch) in cases {
        for round in 0..3 {
            let accepted = kickoffs_at_once(&replicas, 30, per_batch).await;
            let expected = per_batch.unwrap_or(1) * (3 / per_batch.unwrap_or(1));
            assert_eq!(accepted.len(), expected, "{case}, round {round}: {accepted:?}");
            let state = tenant_state(&first, "team-a").await;
            assert_eq!(state["usage"]["queued"].as_i64(), Some(expected as i64), "{case}: {state}");
            // Empty the queue for the next round.
            for id in accepted {
                let cancelled = a.post_json(&format!("/v1/runs/{id}/cancel"), &json!({})).await;
                assert!(cancelled.status().is_success(), "cancel {id}: {}", cancelled.status());
            }
        }
    }
}

/// A retry queues a failed run again: `max_queued` holds it back as it does a kickoff.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_retry_is_held_to_max_queued(pool: PgPool) {
    let root = server(pool.clone(), test_config()).await;
    let a = tenant_with_key(&root, json!({"name": "team-a", "max_queued": 1})).await;
    let body = json!({"crew": one_task_crew(), "inputs": {"topic": "retries"}});
    let first = expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;
    let first = first["id"].as_str().expect("id").to_owned();
    // It failed, as a worker would leave it: the queue has room for another.
    sqlx::query("UPDATE runs SET status = 'failed', finished_at = now() WHERE id = $1::uuid")
        .bind(&first)
        .execute(&pool)
        .await
        .expect("fail the run");
    let second = expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;
    let retry = format!("/v1/runs/{first}/retry");
    let refused = a.post_json(&retry, &json!({})).await;
    assert!((1..=60).contains(&retry_after(&refused)));
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("max_queued")), "{problem}");
    // Once the queue has room again, the retry is taken.
    let cancel = format!("/v1/runs/{}/cancel", second["id"].as_str().expect("id"));
    expect_json(a.post_json(&cancel, &json!({})).await, StatusCode::ACCEPTED).await;
    let retried = expect_json(a.post_json(&retry, &json!({})).await, StatusCode::ACCEPTED).await;
    assert_eq!(retried["status"], "queued", "{retried}");
}

/// Two worker pools (two replicas' worth of slots) never run more of a tenant's runs at once than
/// its `max_running`: the runs of a tenant capped at one do not overlap, while another tenant's
/// run alongside them.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_running_holds_across_worker_pools(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done").with_delay(Duration::from_millis(150))));
    let config = fake_config(&fake);
    let root = server(pool.clone(), config.clone()).await;
    let first = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let second = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let a = tenant_with_key(&root, json!({"name": "team-a", "max_running": 1})).await;
    let b = tenant_with_key(&root, json!({"name": "team-b"})).await;
    let body = json!({"crew": one_task_crew(), "inputs": [{"topic": "x"}, {"topic": "y"}, {"topic": "z"}, {"topic": "w"}]});
    let a_runs = expect_json(a.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    let b_runs = expect_json(b.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    let ids = |runs: &Value| -> Vec<String> {
        runs["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let mut most_running = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = tenant_state(&root, "team-a").await;
        most_running = most_running.max(state["usage"]["running"].as_i64().expect("running"));
        if state["usage"]["queued"] == 0 && state["usage"]["running"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "team-a's runs never finished: {state}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(most_running, 1, "team-a ran more than max_running at once");
    let mut spans = Vec::new();
    for id in ids(&a_runs) {
        let run = wait_for(&a, &id, &["completed", "failed"]).await;
        assert_eq!(run["status"], "completed", "{run}");
        let at = |field: &str| run[field].as_str().expect(field).parse::<DateTime<Utc>>().expect("time");
        spans.push((at("started_at"), at("finished_at")));
    }
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[1].0 >= pair[0].1, "team-a's runs overlapped: {pair:?}");
    }
    for id in ids(&b_runs) {
        assert_eq!(wait_for(&b, &id, &["completed", "failed"]).await["status"], "completed");
    }
    first.shutdown().await;
    second.shutdown().await;
}

/// A claim that waits for a capped tenant's lock (another replica is claiming) and then finds the
/// tenant's running run ended stamps its run's `started_at` after that run's `finished_at`: the
/// runs of a tenant at `max_running = 1` never look as if they had overlapped. (The stamp was the
/// start of the claiming statement, before the wait; `max_running_holds_across_worker_pools` saw
/// two spans overlap by that wait once.)
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_claim_that_waited_for_its_tenants_lock_starts_after_the_run_that_ended_meanwhile(pool: PgPool) {
    const LEASE: Duration = Duration::from_secs(30);
    // No workers: this test claims as two replicas would.
    let root = server(pool.clone(), test_config()).await;
    let a = tenant_with_key(&root, json!({"name": "team-a", "max_running": 1})).await;
    let body = json!({"crew": one_task_crew(), "inputs": [{"topic": "x"}, {"topic": "y"}]});
    expect_json(a.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    let store = Store::new(pool.clone());
    let first = store.claim_next_run("replica-1", LEASE).await.expect("claim").expect("the first run");
    assert!(
        store.claim_next_run("replica-1", LEASE).await.expect("claim").is_none(),
        "team-a is at max_running"
    );

    // Another replica's claim holds team-a's lock while this one starts and waits for it.
    let mut holder = pool.begin().await.expect("begin");
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('agentd.tenant.running:' || $1, 0))")
        .bind("team-a")
        .execute(&mut *holder)
        .await
        .expect("the tenant's lock");
    let claiming = tokio::spawn({
        let store = store.clone();
        async move { store.claim_next_run("replica-2", LEASE).await }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&pool)
        .await
        .expect("locks");
        if waiting > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the claim never waited for team-a's lock");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first run ends meanwhile, as the journal ends a run (finished_at = now()).
    sqlx::query("UPDATE runs SET status = 'completed', finished_at = now() WHERE id = $1")
        .bind(first.id.0)
        .execute(&pool)
        .await
        .expect("end the first run");
    holder.commit().await.expect("release the lock");
    let second =
        claiming.await.expect("join").expect("claim").expect("the second run, now that the first ended");

    let at = |run: &Value, field: &str| {
        run[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field}: {run}"))
            .parse::<DateTime<Utc>>()
            .expect("time")
    };
    let first = expect_json(a.get(&format!("/v1/runs/{}", first.id)).await, StatusCode::OK).await;
    let second = expect_json(a.get(&format!("/v1/runs/{}", second.id)).await, StatusCode::OK).await;
    assert_eq!(second["status"], "running", "{second}");
    assert!(
        at(&second, "started_at") >= at(&first, "finished_at"),
        "the second run is stamped as started before the first ended: {second} {first}"
    );
}

/// A run whose model call takes its tenant over the daily token cap fails with `budget`; the
/// tenant's next kickoff is refused until midnight UTC; another tenant is not affected; raising
/// the cap lets kickoffs in again.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_daily_token_cap_fails_the_run_that_crosses_it_and_refuses_kickoffs(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::ok(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "a long answer"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5000}
    }))));
    let config = fake_config(&fake);
    let root = server(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let a = tenant_with_key(&root, json!({"name": "team-a", "max_tokens_per_day": 1000})).await;
    let b = tenant_with_key(&root, json!({"name": "team-b"})).await;
    let body = json!({"crew": one_task_crew(), "inputs": {"topic": "caps"}});

    let run = expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;
    let run = wait_for(&a, run["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(
        (run["status"].as_str(), run["error"]["kind"].as_str()),
        (Some("failed"), Some("budget")),
        "{run}"
    );
    let message = run["error"]["message"].as_str().expect("message");
    assert!(message.contains("max_tokens_per_day = 1000"), "{message}");
    assert_eq!(run["usage"]["completion_tokens"], 5000, "the call's usage is kept: {run}");
    let state = tenant_state(&root, "team-a").await;
    assert_eq!(state["usage"]["tokens_today"], 5010, "{state}");

    let refused = kickoff(&a, &body).await;
    let wait = retry_after(&refused);
    let midnight =
        (Utc::now().date_naive() + chrono::Days::new(1)).and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    let to_midnight = (midnight - Utc::now()).num_seconds().max(1) as u64;
    assert!(wait.abs_diff(to_midnight) <= 5, "Retry-After {wait} s, midnight in {to_midnight} s");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("max_tokens_per_day")), "{problem}");

    let other = expect_json(kickoff(&b, &body).await, StatusCode::ACCEPTED).await;
    let other = wait_for(&b, other["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(other["status"], "completed", "{other}");
    let untouched = tenant_state(&root, "team-b").await;
    assert_eq!(untouched["usage"]["tokens_today"], 0, "an uncapped tenant keeps no ledger: {untouched}");

    let raised = json!({"max_tokens_per_day": 1_000_000});
    let response =
        root.request(Method::PATCH, "/v1/tenants/team-a").json(&raised).send().await.expect("patch");
    expect_json(response, StatusCode::OK).await;
    let again = expect_json(kickoff(&a, &body).await, StatusCode::ACCEPTED).await;
    let again = wait_for(&a, again["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(again["status"], "completed", "{again}");
    assert_eq!(tenant_state(&root, "team-a").await["usage"]["tokens_today"], 10_020);
    workers.shutdown().await;
}

/// Tenant A's backlog of forty runs does not hold back tenant B's two: B's runs are claimed as
/// soon as slots free up, while most of A's are still queued (first come, first served would have
/// started all of A's before any of B's).
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_backlog_of_one_tenant_does_not_hold_back_another(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done").with_delay(Duration::from_millis(150))));
    let config = fake_config(&fake);
    let root = server(pool.clone(), config.clone()).await;
    let a = tenant_with_key(&root, json!({"name": "team-a"})).await;
    let b = tenant_with_key(&root, json!({"name": "team-b"})).await;
    let inputs: Vec<Value> = (0..40).map(|i| json!({"topic": format!("t{i}")})).collect();
    let backlog = json!({"crew": one_task_crew(), "inputs": inputs});
    expect_json(a.post_json("/v1/kickoffs/batch", &backlog).await, StatusCode::ACCEPTED).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    // A's runs fill both slots...
    let deadline = Instant::now() + Duration::from_secs(20);
    while tenant_state(&root, "team-a").await["usage"]["running"] != 2 {
        assert!(Instant::now() < deadline, "team-a's runs never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...then B kicks off two.
    let body = json!({"crew": one_task_crew(), "inputs": [{"topic": "b1"}, {"topic": "b2"}]});
    let b_runs = expect_json(b.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    for run in b_runs["runs"].as_array().expect("runs") {
        let done = wait_for(&b, run["id"].as_str().expect("id"), &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
    let a_state = tenant_state(&root, "team-a").await;
    let queued = a_state["usage"]["queued"].as_i64().expect("queued");
    assert!(queued >= 25, "B's runs waited for A's backlog: only {queued} of A's 40 are still queued");
    workers.shutdown().await;
}

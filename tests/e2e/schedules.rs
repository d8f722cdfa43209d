//! Schedules over HTTP: created, read, listed, changed (disabled and enabled) and deleted, with the
//! bad input each route refuses; ticks across daylight-saving changes in Berlin, missed ticks and
//! `catch_up`, and `overlap`, on a clock the test moves; and three real replicas under `kill -9`
//! with a schedule every second for a minute: no tick fires twice and none is missed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::domain::schedule::ManualClock;
use agentd::fake_llm::{FakeLlm, FakeReply};
use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::fake_config;

fn digest_crew() -> Value {
    json!({
        "name": "digest",
        "agents": [{"name": "a", "role": "Editor", "goal": "Summarise", "backstory": "Brief."}],
        "tasks": [{"name": "digest", "description": "Write the {edition} digest.", "expected_output": "A digest", "agent": "a"}]
    })
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("a time")
}

fn time_of(value: &Value) -> Option<DateTime<Utc>> {
    value.as_str().map(|t| t.parse().expect("a time"))
}

async fn create(app: &TestApp, body: Value) -> Value {
    expect_json(app.post_json("/v1/schedules", &body).await, StatusCode::CREATED).await
}

async fn schedule(app: &TestApp, id: &str) -> Value {
    expect_json(app.get(&format!("/v1/schedules/{id}")).await, StatusCode::OK).await
}

async fn ticks(app: &TestApp, id: &str) -> Vec<Value> {
    let page =
        expect_json(app.get(&format!("/v1/schedules/{id}/runs?limit=200")).await, StatusCode::OK).await;
    let mut ticks = page["ticks"].as_array().expect("ticks").clone();
    ticks.reverse();
    ticks
}

/// Wait until the schedule has handled `n` ticks; them, oldest first.
async fn wait_ticks(app: &TestApp, id: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let handled = ticks(app, id).await;
        if handled.len() >= n {
            return handled;
        }
        assert!(Instant::now() < deadline, "{} of {n} ticks: {handled:?}", handled.len());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Wait until the runs `ticks` kicked off have ended, so that the next tick finds none under way
/// (under `overlap: skip` it would be skipped).
async fn wait_runs_ended(app: &TestApp, ticks: &[Value]) {
    for run in ticks.iter().filter_map(|tick| tick["run_id"].as_str()) {
        crate::worker::wait_for(app, run, &["completed", "failed", "cancelled"]).await;
    }
}

fn summary(ticks: &[Value]) -> Vec<(DateTime<Utc>, String)> {
    ticks
        .iter()
        .map(|t| (time_of(&t["tick"]).expect("tick"), t["outcome"].as_str().expect("outcome").to_owned()))
        .collect()
}

/// The app with its scheduler and workers on `clock`, polling fast.
async fn app_on(pool: PgPool, fake: &FakeLlm, clock: Arc<ManualClock>) -> TestApp {
    let mut config = fake_config(fake);
    config.scheduler.poll = Duration::from_millis(20);
    TestApp::spawn_full(pool, config, clock).await
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn schedules_are_created_read_changed_and_deleted_and_bad_input_refused(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let clock = Arc::new(ManualClock::at(at("2026-12-04T10:00:00Z")));
    let app = app_on(pool, &fake, clock.clone()).await;
    let body = json!({
        "name": "morning digest", "cron": "0 9 * * MON-FRI", "timezone": "Europe/Berlin",
        "kickoff": {"crew": digest_crew(), "inputs": {"edition": "morning"}}
    });
    let response = app.post_json("/v1/schedules", &body).await;
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let created = expect_json(response, StatusCode::CREATED).await;
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(location, format!("/v1/schedules/{id}"));
    // Friday 11:00 in Berlin: the next is Monday 09:00 CET.
    assert_eq!(time_of(&created["next_run_at"]), Some(at("2026-12-07T08:00:00Z")), "{created}");
    assert_eq!((created["overlap"].as_str(), created["catch_up"].as_str()), (Some("skip"), Some("none")));
    assert_eq!(created["enabled"], true);
    assert_eq!(schedule(&app, &id).await, created);
    let list = expect_json(app.get("/v1/schedules").await, StatusCode::OK).await;
    assert_eq!(list["schedules"].as_array().map(Vec::len), Some(1));

    // Disabled: no next tick; enabled again on Tuesday: from then on.
    let disabled =
        app.request(Method::PATCH, &location).json(&json!({"enabled": false})).send().await.expect("PATCH");
    let disabled = expect_json(disabled, StatusCode::OK).await;
    assert_eq!((disabled["enabled"].clone(), disabled["next_run_at"].clone()), (json!(false), Value::Null));
    clock.set(at("2026-12-08T12:00:00Z"));
    let patch = json!({"enabled": true, "cron": "30 7 * * *", "overlap": "allow"});
    let enabled = expect_json(
        app.request(Method::PATCH, &location).json(&patch).send().await.expect("PATCH"),
        StatusCode::OK,
    )
    .await;
    assert_eq!(time_of(&enabled["next_run_at"]), Some(at("2026-12-09T06:30:00Z")), "{enabled}");
    assert_eq!(
        (enabled["overlap"].as_str(), enabled["name"].as_str()),
        (Some("allow"), Some("morning digest"))
    );

    // Bad input names its field.
    let invalid = [
        (
            json!({"cron": "61 * * * *", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}}}),
            "cron",
        ),
        (
            json!({"cron": "0 9 * * *", "timezone": "Mars/Olympus", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}}}),
            "timezone",
        ),
        (json!({"cron": "0 9 * * *", "kickoff": {"crew": "no-such-crew"}}), "kickoff.crew"),
        (json!({"cron": "0 9 * * *", "kickoff": {"crew": digest_crew()}}), "kickoff.inputs.edition"),
        (
            json!({"cron": "0 9 * * *", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}, "thread_id": uuid::Uuid::now_v7()}}),
            "kickoff.thread_id",
        ),
        (
            json!({"cron": "0 9 * * *", "overlap": "sometimes", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}}}),
            "overlap",
        ),
        (
            json!({"cron": "0 9 * * *", "name": " ", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}}}),
            "name",
        ),
        (
            json!({"cron": "0 9 * * *", "kickoff": {"crew": digest_crew(), "inputs": {"edition": "x"}}, "every": 1}),
            "every",
        ),
    ];
    for (body, field) in invalid {
        let problem =
            expect_problem(app.post_json("/v1/schedules", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    let bad_patch = app
        .request(Method::PATCH, &location)
        .json(&json!({"timezone": "Nowhere"}))
        .send()
        .await
        .expect("PATCH");
    assert!(problem_fields(&expect_problem(bad_patch, StatusCode::UNPROCESSABLE_ENTITY).await)
        .contains_key("timezone"));
    expect_problem(app.get("/v1/schedules?limit=0").await, StatusCode::BAD_REQUEST).await;
    expect_problem(app.get(&format!("{location}/runs?cursor=yesterday")).await, StatusCode::BAD_REQUEST)
        .await;
    expect_problem(app.get("/v1/schedules/not-a-uuid").await, StatusCode::BAD_REQUEST).await;

    assert_eq!(app.delete(&location).await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get(&location).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get(&format!("{location}/runs")).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.delete(&location).await, StatusCode::NOT_FOUND).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn ticks_follow_berlin_across_daylight_saving_changes(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("Today's digest.")));
    let clock = Arc::new(ManualClock::at(at("2026-03-27T12:00:00Z")));
    let app = app_on(pool, &fake, clock.clone()).await;
    let daily = create(
        &app,
        json!({
            "cron": "30 2 * * *", "timezone": "Europe/Berlin",
            "kickoff": {"crew": digest_crew(), "inputs": {"edition": "night"}}
        }),
    )
    .await;
    let id = daily["id"].as_str().expect("id").to_owned();
    assert_eq!(time_of(&daily["next_run_at"]), Some(at("2026-03-28T01:30:00Z")), "02:30 CET");

    // Spring forward: 02:30 does not exist on the 29th; it runs at 03:00 CEST, 01:00 UTC.
    clock.set(at("2026-03-28T01:30:01Z"));
    wait_runs_ended(&app, &wait_ticks(&app, &id, 1).await).await;
    assert_eq!(time_of(&schedule(&app, &id).await["next_run_at"]), Some(at("2026-03-29T01:00:00Z")));
    clock.set(at("2026-03-29T01:00:00Z"));
    wait_runs_ended(&app, &wait_ticks(&app, &id, 2).await).await;
    assert_eq!(
        time_of(&schedule(&app, &id).await["next_run_at"]),
        Some(at("2026-03-30T00:30:00Z")),
        "02:30 CEST"
    );

    // Fall back: 02:30 happens twice on 25 October, and runs once, at the first.
    // (Disabled over the summer, so that its ticks are not missed ones.)
    let patch = |enabled: bool| {
        let body = json!({ "enabled": enabled });
        app.request(Method::PATCH, &format!("/v1/schedules/{id}")).json(&body).send()
    };
    expect_json(patch(false).await.expect("PATCH"), StatusCode::OK).await;
    clock.set(at("2026-10-24T12:00:00Z"));
    let patched = expect_json(patch(true).await.expect("PATCH"), StatusCode::OK).await;
    assert_eq!(time_of(&patched["next_run_at"]), Some(at("2026-10-25T00:30:00Z")), "02:30 CEST");
    clock.set(at("2026-10-25T00:30:00Z"));
    wait_ticks(&app, &id, 3).await;
    assert_eq!(
        time_of(&schedule(&app, &id).await["next_run_at"]),
        Some(at("2026-10-26T01:30:00Z")),
        "02:30 CET, next day"
    );
    clock.set(at("2026-10-25T01:30:00Z"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let handled = ticks(&app, &id).await;
    assert_eq!(
        summary(&handled),
        [
            (at("2026-03-28T01:30:00Z"), "kicked".to_owned()),
            (at("2026-03-29T01:00:00Z"), "kicked".to_owned()),
            (at("2026-10-25T00:30:00Z"), "kicked".to_owned()),
        ],
        "no second 02:30 on the 25th"
    );
    // Each kicked tick's run ran.
    for tick in &handled {
        let run = tick["run_id"].as_str().expect("a run");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let body = expect_json(app.get(&format!("/v1/runs/{run}")).await, StatusCode::OK).await;
            if body["status"] == "completed" {
                break;
            }
            assert!(Instant::now() < deadline, "{body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn missed_ticks_follow_catch_up_and_overlapping_ticks_follow_overlap(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("ok")));
    let clock = Arc::new(ManualClock::at(at("2026-06-01T12:00:00Z")));
    let app = app_on(pool, &fake, clock.clone()).await;
    let kickoff = json!({"crew": digest_crew(), "inputs": {"edition": "hourly"}});
    let none = create(&app, json!({"cron": "0 * * * *", "kickoff": kickoff})).await;
    let latest = create(&app, json!({"cron": "0 * * * *", "kickoff": kickoff, "catch_up": "latest"})).await;
    let (none, latest) =
        (none["id"].as_str().expect("id").to_owned(), latest["id"].as_str().expect("id").to_owned());

    // The service was away for three hours and five minutes: 13:00, 14:00 and 15:00 are late.
    clock.set(at("2026-06-01T15:05:00Z"));
    let missed = wait_ticks(&app, &none, 3).await;
    assert!(missed.iter().all(|t| t["outcome"] == "missed" && t["run_id"].is_null()), "{missed:?}");
    let caught = wait_ticks(&app, &latest, 3).await;
    assert_eq!(
        caught.iter().map(|t| t["outcome"].as_str().expect("outcome")).collect::<Vec<_>>(),
        ["missed", "missed", "kicked"]
    );
    for id in [&none, &latest] {
        assert_eq!(time_of(&schedule(&app, id).await["next_run_at"]), Some(at("2026-06-01T16:00:00Z")));
    }

    // overlap: a slow run is still going at the next tick.
    fake.set_default(Some(FakeReply::text("slow").with_delay(Duration::from_secs(2))));
    clock.set(at("2026-06-01T16:00:00Z"));
    let skip = create(&app, json!({"cron": "* * * * * *", "kickoff": kickoff, "overlap": "skip"})).await;
    let enqueue =
        create(&app, json!({"cron": "* * * * * *", "kickoff": kickoff, "overlap": "enqueue"})).await;
    let (skip, enqueue) =
        (skip["id"].as_str().expect("id").to_owned(), enqueue["id"].as_str().expect("id").to_owned());
    clock.set(at("2026-06-01T16:00:01Z"));
    wait_ticks(&app, &skip, 1).await;
    wait_ticks(&app, &enqueue, 1).await;
    clock.set(at("2026-06-01T16:00:02Z"));
    let skipped = wait_ticks(&app, &skip, 2).await;
    assert_eq!(summary(&skipped).into_iter().map(|(_, o)| o).collect::<Vec<_>>(), ["kicked", "skipped"]);
    let queued = wait_ticks(&app, &enqueue, 2).await;
    assert_eq!(queued[1]["outcome"], "kicked");
    assert_eq!(queued[1]["status"], "waiting", "{queued:?}");
    fake.set_default(Some(FakeReply::text("ok")));
}

#[sqlx::test(migrations = false)]
async fn a_schedule_every_second_on_three_replicas_under_kill_9_fires_each_tick_once(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("tick")));
    let base_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-schedule-test"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_SCHEDULE_POLL_MS", "100"),
    ];
    let mut replicas: Vec<Agentd> = (0..3).map(|_| Agentd::start(&url, &env)).collect();
    let api = TestApp::at(&replicas[0].base);
    let created = create(
        &api,
        json!({
            "cron": "* * * * * *", "overlap": "allow",
            "kickoff": {"crew": digest_crew(), "inputs": {"edition": "storm"}}
        }),
    )
    .await;
    let id = created["id"].as_str().expect("id").to_owned();

    // A minute of ticks, a random replica killed (and started again) every two to four seconds.
    let started = Instant::now();
    let mut kills = 0;
    while started.elapsed() < Duration::from_secs(60) {
        let random = uuid::Uuid::now_v7().as_bytes()[15] as usize;
        tokio::time::sleep(Duration::from_millis(2_000 + (random % 9) as u64 * 250)).await;
        let victim = replicas.remove(random % replicas.len());
        assert!(!victim.signal("-KILL").await.success());
        kills += 1;
        replicas.push(Agentd::start(&url, &env));
    }
    let api = TestApp::at(&replicas[0].base);
    let stop =
        api.request(Method::PATCH, &format!("/v1/schedules/{id}")).json(&json!({"enabled": false})).send();
    expect_json(stop.await.expect("PATCH"), StatusCode::OK).await;

    let mut handled = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/schedules/{id}/runs?limit=200");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={}", urlencode(cursor)));
        }
        let page = expect_json(api.get(&path).await, StatusCode::OK).await;
        handled.extend(page["ticks"].as_array().expect("ticks").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    handled.reverse();
    let times: Vec<DateTime<Utc>> = handled.iter().map(|t| time_of(&t["tick"]).expect("tick")).collect();
    eprintln!("{} ticks in {:?}, {kills} replicas killed", times.len(), started.elapsed());
    assert!(times.len() >= 55, "{} ticks", times.len());
    // Every second from the first tick to the last, once, each with a run of its own.
    for pair in times.windows(2) {
        assert_eq!(pair[1] - pair[0], chrono::Duration::seconds(1), "a tick missed or twice: {pair:?}");
    }
    assert!(handled.iter().all(|t| t["outcome"] == "kicked"), "{handled:?}");
    let mut runs: Vec<&str> = handled.iter().map(|t| t["run_id"].as_str().expect("a run")).collect();
    runs.sort_unstable();
    runs.dedup();
    assert_eq!(runs.len(), handled.len(), "one run per tick");
    let scheduled: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM runs WHERE schedule_id = '{id}'"))
        .fetch_one(&sqlx::PgPool::connect(&url).await.expect("connect"))
        .await
        .expect("count");
    assert_eq!(scheduled, handled.len() as i64, "no run without its tick");
    for replica in replicas {
        replica.stop("-TERM").await;
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

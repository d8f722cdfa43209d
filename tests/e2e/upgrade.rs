//! A rolling upgrade as docs/operations.md ("Rolling upgrades") describes it, with the previous
//! release's real binary (`RELEASES`; built from this repository's history by
//! scripts/previous-release.sh, which scripts/test.sh runs and names in
//! `PREVIOUS_RELEASE_AGENTD`): two replicas of the previous release run a mixed load, the new
//! release migrates the database under them, the old replicas keep serving it (kickoffs, reads,
//! streams, and runs the new release began), then they are stopped (SIGTERM, then `kill -9`) and
//! the new release carries their runs to the end. Every run completes once, without a repeated
//! completed call; every stream is exact; every schedule tick is handled once; nothing answers
//! 5xx.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd, BIN};
use crate::crash::wait_done;
use crate::support::WebhookSink;

/// How long each model answer takes (a two-task run takes four of them), so that runs overlap
/// the replicas' starts and stops.
const MODEL_MS: u64 = 500;

/// The previous release's `agentd`.
fn previous_release() -> String {
    let bin = std::env::var("PREVIOUS_RELEASE_AGENTD").unwrap_or_default();
    assert!(
        !bin.is_empty() && std::path::Path::new(&bin).exists(),
        "PREVIOUS_RELEASE_AGENTD ({bin:?}) names no binary: run scripts/previous-release.sh \
         and export what it prints (scripts/test.sh does)"
    );
    bin
}

/// Send a request; no answer may be a 5xx. Answers the status and the JSON body (`Null` if none).
async fn call(base: &str, method: Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new().request(method.clone(), format!("{base}{path}"));
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{method} {base}{path}: {e}"));
    let status = response.status();
    let text = response.text().await.expect("body");
    assert!(!status.is_server_error(), "{method} {base}{path} answered {status}: {text}");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn expect(base: &str, method: Method, path: &str, body: Option<&Value>, wanted: StatusCode) -> Value {
    let (status, json) = call(base, method.clone(), path, body).await;
    assert_eq!(status, wanted, "{method} {path}: {json}");
    json
}

/// A two-task crew, each task one calculator call, the second given the first's output.
fn crew() -> Value {
    json!({
        "name": "upgrade",
        "agents": [{"name": "a", "role": "Mathematician", "goal": "Compute", "backstory": "Exact.",
                    "tools": ["calculator"]}],
        "tasks": [
            {"name": "first", "description": "What is {expr}?", "expected_output": "A number", "agent": "a"},
            {"name": "second", "description": "Check {expr} once more.", "expected_output": "A number",
             "agent": "a", "context": ["first"]}
        ]
    })
}

/// One task, one calculator call: what the schedule and the thread kick off.
fn small_crew() -> Value {
    json!({
        "name": "tick",
        "agents": [{"name": "a", "role": "Mathematician", "goal": "Compute", "backstory": "Exact.",
                    "tools": ["calculator"]}],
        "tasks": [{"name": "t", "description": "What is {expr}?", "expected_output": "A number", "agent": "a"}]
    })
}

/// The replicas a client may reach, as a load balancer knows them.
#[derive(Clone, Default)]
struct Pool(Arc<Mutex<Vec<String>>>);

impl Pool {
    fn add(&self, base: &str) {
        self.0.lock().expect("lock").push(base.to_owned());
    }

    fn remove(&self, base: &str) {
        self.0.lock().expect("lock").retain(|b| b != base);
    }

    /// The `n`th live replica, round robin.
    fn pick(&self, n: usize) -> String {
        let live = self.0.lock().expect("lock");
        assert!(!live.is_empty(), "no replica left");
        live[n % live.len()].clone()
    }
}

/// Follow a run's events as an EventSource does: from the start, and after a dropped connection
/// from another live replica with `Last-Event-ID`. Answers every event's seq and type received,
/// in order, until the terminal event, and the longest wait between two of them.
async fn follow(pool: Pool, run: String) -> (Vec<(i64, String)>, Duration) {
    let mut received: Vec<(i64, String)> = Vec::new();
    let (mut last, mut longest) = (Instant::now(), Duration::ZERO);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut attempt = 0;
    loop {
        assert!(Instant::now() < deadline, "the stream of {run} never ended: {received:?}");
        let base = pool.pick(attempt);
        attempt += 1;
        let mut request = reqwest::Client::new()
            .get(format!("{base}/v1/runs/{run}/events"))
            .header("accept", "text/event-stream");
        if let Some((seq, _)) = received.last() {
            request = request.header("last-event-id", seq.to_string());
        }
        let response = match request.send().await {
            Ok(response) => response,
            // A replica stopped between the pick and the connect: reconnect elsewhere.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let status = response.status();
        assert!(!status.is_server_error(), "GET {base}/v1/runs/{run}/events answered {status}");
        if status == StatusCode::NO_CONTENT {
            return (received, longest);
        }
        assert_eq!(status, StatusCode::OK);
        let mut response = response;
        let mut buffer = String::new();
        // A dropped connection (the replica stopped) ends the loop like the stream's end does.
        while let Ok(Some(chunk)) = response.chunk().await {
            buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8 (events are ASCII-safe JSON here)"));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let event: Value = serde_json::from_str(&data).expect("JSON data");
                let (Some(seq), Some(kind)) = (event["seq"].as_i64(), event["type"].as_str()) else {
                    continue;
                };
                received.push((seq, kind.to_owned()));
                longest = longest.max(last.elapsed());
                last = Instant::now();
                if ["run.completed", "run.failed", "run.cancelled"].contains(&kind) {
                    return (received, longest);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every event of a run, from the JSON pages.
async fn stored_events(base: &str, run: &str) -> Vec<(i64, String)> {
    let mut events = Vec::new();
    loop {
        let after = events.last().map_or(0, |(seq, _): &(i64, String)| *seq);
        let page = expect(
            base,
            Method::GET,
            &format!("/v1/runs/{run}/events?after={after}&limit=1000"),
            None,
            StatusCode::OK,
        )
        .await;
        let page = page["events"].as_array().expect("events").clone();
        if page.is_empty() {
            return events;
        }
        events.extend(
            page.iter()
                .map(|e| (e["seq"].as_i64().expect("seq"), e["type"].as_str().expect("type").to_owned())),
        );
    }
}

async fn kickoff(base: &str, body: &Value) -> String {
    let run = expect(base, Method::POST, "/v1/kickoffs", Some(body), StatusCode::ACCEPTED).await;
    run["id"].as_str().expect("id").to_owned()
}

fn time_of(value: &Value) -> DateTime<Utc> {
    value.as_str().and_then(|s| DateTime::parse_from_rfc3339(s).ok()).expect("a time").with_timezone(&Utc)
}

#[sqlx::test(migrations = false)]
async fn a_rolling_upgrade_carries_every_run_stream_and_tick_across(pool: PgPool) {
    let previous = previous_release();
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    // Each task: a calculator call, then the answer once the result is in; every model call takes
    // a while, so runs are in flight when replicas stop.
    let call = FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))])
        .with_delay(Duration::from_millis(MODEL_MS));
    let answer = FakeReply::text("42").with_delay(Duration::from_millis(MODEL_MS));
    fake.set_tool_round(Some((call.clone(), answer.clone())));
    let sink = WebhookSink::start().await;
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-upgrade-test"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_SCHEDULE_POLL_MS", "100"),
        ("AGENTD_SHUTDOWN_GRACE_S", "1"),
        ("AGENTD_WEBHOOK_SECRET", "whsec_dXBncmFkZS10ZXN0LXNlY3JldC0zMmJ5dGVzISE="),
        ("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "127.0.0.1"),
        ("AGENTD_WEBHOOK_RETRY_SCHEDULE", "300ms,300ms,500ms,1s,1s,2s,2s"),
    ];
    let live = Pool::default();

    // The previous release: two replicas; the first migrates the empty database.
    let old_a = Agentd::start_program(&previous, Some(&url), &env);
    let old_b = Agentd::start_program(&previous, Some(&url), &env);
    live.add(&old_a.base);
    live.add(&old_b.base);
    let old_health = expect(&old_a.base, Method::GET, "/healthz", None, StatusCode::OK).await;

    let schedule = expect(
        &old_a.base,
        Method::POST,
        "/v1/schedules",
        Some(&json!({"cron": "* * * * * *", "overlap": "allow",
                     "kickoff": {"crew": small_crew(), "inputs": {"expr": "1+1"}}})),
        StatusCode::CREATED,
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let thread = expect(&old_b.base, Method::POST, "/v1/threads", Some(&json!({})), StatusCode::CREATED)
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let mut runs: Vec<String> = Vec::new();
    let mut followers = Vec::new();
    let kick = |base: String, n: usize| {
        let live = live.clone();
        let webhook = sink.url("/runs");
        async move {
            let mut started = Vec::new();
            for i in 0..n {
                let body = json!({"crew": crew(), "inputs": {"expr": format!("{i}*7")},
                                  "webhooks": [{"url": webhook, "events": ["run.completed"]}]});
                let id = kickoff(&base, &body).await;
                let follower = tokio::spawn(follow(live.clone(), id.clone()));
                started.push((id, follower));
            }
            started
        }
    };
    let mut thread_runs = Vec::new();
    for i in 0..2 {
        let body = json!({"crew": small_crew(), "inputs": {"expr": format!("{i}+1")}, "thread_id": thread});
        thread_runs.push(kickoff(&old_b.base, &body).await);
    }
    for (id, follower) in
        kick(old_a.base.clone(), 4).await.into_iter().chain(kick(old_b.base.clone(), 4).await)
    {
        runs.push(id);
        followers.push(follower);
    }
    tokio::time::sleep(Duration::from_millis(800)).await;

    // The new release, serving the API only, migrates under the old replicas.
    let api_only: Vec<(&str, &str)> = env.iter().copied().chain([("AGENTD_ROLE", "api")]).collect();
    let new_api = Agentd::start_program(BIN, Some(&url), &api_only);
    live.add(&new_api.base);
    let health = expect(&new_api.base, Method::GET, "/healthz", None, StatusCode::OK).await;
    assert_eq!(health["release"], agentd::release::RELEASE, "{health}");
    assert_eq!(health["schema"], agentd::store::schema_version(), "{health}");
    assert!(old_health.get("release") != Some(&health["release"]), "{old_health} vs {health}");
    let metrics =
        reqwest::get(format!("{}/metrics", new_api.base)).await.expect("GET").text().await.expect("text");
    let build = format!(
        "agentd_build_info{{release=\"{}\",schema=\"{}\"}} 1",
        agentd::release::RELEASE,
        agentd::store::schema_version()
    );
    assert!(metrics.contains(&build), "{build} missing from:\n{metrics}");

    // Within the window the old replicas keep serving the migrated database: kickoffs, reads and
    // runs the new release began (only the old replicas run workers yet).
    let migrated: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&PgPool::connect(&url).await.expect("connect"))
        .await
        .expect("migrations");
    assert_eq!(migrated.last(), Some(&agentd::store::schema_version()), "the new release migrated");
    let mut begun_by_new = Vec::new();
    for (id, follower) in
        kick(new_api.base.clone(), 4).await.into_iter().chain(kick(old_b.base.clone(), 4).await)
    {
        begun_by_new.push(id.clone());
        runs.push(id);
        followers.push(follower);
    }
    begun_by_new.truncate(4);
    expect(&old_a.base, Method::GET, &format!("/v1/runs/{}", begun_by_new[0]), None, StatusCode::OK).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut done = 0;
        for id in &begun_by_new {
            let run = expect(&old_b.base, Method::GET, &format!("/v1/runs/{id}"), None, StatusCode::OK).await;
            done += usize::from(run["status"] == "completed");
        }
        if done > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no run the new release began was completed by an old replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The new release takes over. Runs start on the old replicas (the only ones running workers
    // yet), and the model holds its answers, so they are under way when a full new replica
    // starts and the old ones stop: the first with SIGTERM (its 1 s grace runs out: it hands its
    // runs back), the second with kill -9 (its runs come back when their leases expire). Then
    // the model answers again.
    let gate = Arc::new(tokio::sync::Notify::new());
    fake.set_tool_round(Some((call.clone().after(gate.clone()), answer.clone().after(gate.clone()))));
    let mut last_batch = Vec::new();
    for (id, follower) in
        kick(old_a.base.clone(), 3).await.into_iter().chain(kick(old_b.base.clone(), 3).await)
    {
        last_batch.push(id.clone());
        runs.push(id);
        followers.push(follower);
    }
    let db = PgPool::connect(&url).await.expect("connect");
    let deadline = Instant::now() + Duration::from_secs(30);
    let in_flight = loop {
        let running: i64 =
            sqlx::query_scalar("SELECT count(*) FROM runs WHERE status = 'running' AND id::text = ANY($1)")
                .bind(&last_batch)
                .fetch_one(&db)
                .await
                .expect("running");
        if running >= 4 {
            break running;
        }
        assert!(Instant::now() < deadline, "the old replicas never took the last batch");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let new_full = Agentd::start_program(BIN, Some(&url), &env);
    live.add(&new_full.base);
    live.remove(&old_a.base);
    let (exited, _) = old_a.stop("-TERM").await;
    assert!(exited.success(), "the old replica drained: {exited:?}");
    live.remove(&old_b.base);
    assert!(!old_b.signal("-KILL").await.success());
    fake.set_tool_round(Some((call, answer)));
    gate.notify_waiters();

    let body = json!({"crew": small_crew(), "inputs": {"expr": "2+1"}, "thread_id": thread});
    thread_runs.push(kickoff(&new_full.base, &body).await);
    for (id, follower) in kick(new_full.base.clone(), 3).await {
        runs.push(id);
        followers.push(follower);
    }

    // Every run completes once, without a repeated completed call.
    let base = new_full.base.clone();
    let mut carried = 0;
    for id in runs.iter().chain(&thread_runs) {
        let run = wait_done(&base, id).await;
        assert_eq!(run["status"], "completed", "{run}");
        carried += usize::from(run["attempt"].as_i64().unwrap_or(1) > 1);
        let tasks = run["tasks"].as_array().expect("tasks").len();
        let calls =
            expect(&base, Method::GET, &format!("/v1/runs/{id}/tool-calls"), None, StatusCode::OK).await;
        let calls = calls["tool_calls"].as_array().expect("calls").clone();
        assert_eq!(calls.len(), tasks, "one calculator call per task, none repeated: {calls:?}");
        assert!(calls.iter().all(|c| c["status"] == "succeeded"), "{calls:?}");
        let messages =
            expect(&base, Method::GET, &format!("/v1/runs/{id}/messages"), None, StatusCode::OK).await;
        let assistant =
            messages["messages"].as_array().expect("messages").iter().filter(|m| m["role"] == "assistant");
        assert_eq!(assistant.count(), 2 * tasks, "two model answers per task, none repeated: {messages}");
        let events = stored_events(&base, id).await;
        let seqs: Vec<i64> = events.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, (1..=events.len() as i64).collect::<Vec<_>>(), "{id}: {events:?}");
        assert_eq!(events.iter().filter(|(_, kind)| kind == "run.completed").count(), 1, "{events:?}");
        assert_eq!(events.last().map(|(_, kind)| kind.as_str()), Some("run.completed"));
    }
    assert!(carried > 0, "no run was carried from a stopped old replica to the new release");

    // Every stream is exact: what each follower received is the run's event log.
    let mut longest_pause = Duration::ZERO;
    for (id, follower) in runs.iter().zip(followers) {
        let (received, longest) = follower.await.expect("follower");
        assert_eq!(received, stored_events(&base, id).await, "the stream of {id}");
        longest_pause = longest_pause.max(longest);
    }

    // Each run's completion reached its webhook.
    let received = sink
        .wait_until("every run's completion was delivered", |received| {
            runs.iter().all(|id| received.iter().any(|(_, body)| body["run_id"] == id.as_str()))
        })
        .await;
    assert!(received.iter().all(|(_, body)| body["type"] == "run.completed"), "{received:?}");

    // The thread's runs ran one at a time, in order.
    let mut ended = Vec::new();
    for id in &thread_runs {
        let run = wait_done(&base, id).await;
        ended.push((time_of(&run["started_at"]), time_of(&run["finished_at"])));
    }
    assert!(ended.windows(2).all(|pair| pair[0].1 <= pair[1].0), "{ended:?}");

    // Every tick of the schedule handled once, across both releases.
    let stopped = json!({"enabled": false});
    expect(&base, Method::PATCH, &format!("/v1/schedules/{schedule}"), Some(&stopped), StatusCode::OK).await;
    let page =
        expect(&base, Method::GET, &format!("/v1/schedules/{schedule}/runs?limit=200"), None, StatusCode::OK)
            .await;
    let mut ticks = page["ticks"].as_array().expect("ticks").clone();
    ticks.reverse();
    let times: Vec<DateTime<Utc>> = ticks.iter().map(|t| time_of(&t["tick"])).collect();
    assert!(times.len() >= 3, "{ticks:?}");
    for pair in times.windows(2) {
        assert_eq!(pair[1] - pair[0], chrono::Duration::seconds(1), "a tick missed or twice: {pair:?}");
    }
    let mut tick_runs: BTreeMap<&str, usize> = BTreeMap::new();
    for tick in &ticks {
        assert_eq!(tick["outcome"], "kicked", "{tick}");
        *tick_runs.entry(tick["run_id"].as_str().expect("run")).or_default() += 1;
    }
    assert!(tick_runs.values().all(|n| *n == 1), "one run per tick: {tick_runs:?}");
    for run in tick_runs.keys() {
        let run = wait_done(&base, run).await;
        assert_eq!(run["status"], "completed", "{run}");
    }
    eprintln!(
        "{} runs, {} thread runs, {} ticks; {in_flight} runs in flight when the old replicas stopped, \
         {carried} carried across; the longest pause a stream saw: {longest_pause:?}",
        runs.len(),
        thread_runs.len(),
        ticks.len()
    );
    new_full.stop("-TERM").await;
    new_api.stop("-TERM").await;
}

/// A run a later release has written to (a record format this binary does not read) waits in the
/// queue: no replica that cannot read it claims it, this release's or the previous one's, and it
/// is neither failed nor changed while it waits. Given a format they read, it runs as any other.
#[sqlx::test(migrations = false)]
async fn a_run_of_a_later_record_format_waits_for_a_replica_that_reads_it(pool: PgPool) {
    let previous = previous_release();
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done")));
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-upgrade-test"),
        ("AGENTD_LEASE_S", "2"),
    ];
    // The previous release starts on its schema (0.1.0 refuses to start on a later one): an API
    // replica, and a worker replica kept idle (its tenant may run nothing yet); this release
    // migrates and takes the kickoff.
    let api_only: Vec<(&str, &str)> = env.iter().copied().chain([("AGENTD_ROLE", "api")]).collect();
    let old_api = Agentd::start_program(&previous, Some(&url), &api_only);
    let old_env: Vec<(&str, &str)> = env.iter().copied().chain([("AGENTD_ROLE", "worker")]).collect();
    let old = Agentd::start_worker(&previous, &url, &old_env);
    let api = Agentd::start_program(BIN, Some(&url), &api_only);
    let db = PgPool::connect(&url).await.expect("connect");
    let max_running = |n: Option<i32>| {
        sqlx::query("UPDATE tenants SET max_running = $1 WHERE name = 'default'").bind(n).execute(&db)
    };
    max_running(Some(0)).await.expect("hold the runs");
    let body = json!({"crew": small_crew(), "inputs": {"expr": "1+1"}});
    let later = kickoff(&api.base, &body).await;
    let format = |run: &str| {
        sqlx::query_scalar::<_, i16>("SELECT record_format FROM runs WHERE id = $1::uuid")
            .bind(run.to_owned())
    };
    // A kickoff writes nothing of a later shape: the run is stored at the first format.
    assert_eq!(format(&later).fetch_one(&db).await.expect("format"), 1);
    sqlx::query("UPDATE runs SET record_format = $2 WHERE id = $1::uuid")
        .bind(&later)
        .bind(agentd::store::RECORD_FORMAT + 1)
        .execute(&db)
        .await
        .expect("a later format");
    max_running(None).await.expect("let them run");

    // Workers of both releases run the runs they read, and leave that one queued. The previous
    // release's workers run alone first.
    for _ in 0..2 {
        let run = kickoff(&old_api.base, &body).await;
        assert_eq!(wait_done(&old_api.base, &run).await["status"], "completed");
    }
    let new = Agentd::start_program(BIN, Some(&url), &env);
    for base in [&old_api.base, &new.base] {
        let run = kickoff(base, &body).await;
        assert_eq!(wait_done(base, &run).await["status"], "completed");
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let waiting = expect(&new.base, Method::GET, &format!("/v1/runs/{later}"), None, StatusCode::OK).await;
    assert_eq!(
        (waiting["status"].as_str(), waiting["attempt"].as_i64()),
        (Some("queued"), Some(0)),
        "{waiting}"
    );
    let events = stored_events(&new.base, &later).await;
    assert_eq!(events, vec![(1, "run.queued".to_owned())]);
    assert_eq!(format(&later).fetch_one(&db).await.expect("format"), agentd::store::RECORD_FORMAT + 1);

    // Nothing was changed while it waited: given a format these replicas read, it runs.
    sqlx::query("UPDATE runs SET record_format = $2 WHERE id = $1::uuid")
        .bind(&later)
        .bind(agentd::store::RECORD_FORMAT)
        .execute(&db)
        .await
        .expect("back");
    let done = wait_done(&new.base, &later).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(1)), "{done}");
    new.stop("-TERM").await;
    old.stop("-TERM").await;
    api.stop("-TERM").await;
    old_api.stop("-TERM").await;
}

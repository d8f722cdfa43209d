//! A provider's `rpm` is one budget for the cluster: three `agentd serve` replicas share a
//! provider limited to 120 requests a minute, which a fake Azure deployment enforces as a
//! provider does (a request earlier than its budget allows gets a 429). Many runs on all three
//! replicas: the provider refuses none; the schedule the replicas booked in the database (logged
//! by a trigger of the test's) holds one slot per call, an interval each, never more than the
//! budget in a window; and no call reached the provider before its slot. Bounds are on what was
//! booked, not on arrival gaps, which a loaded machine stretches. `/metrics` counts tokens and
//! cost by provider and model.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::fakes::azure::{self, FakeAzure};
use crate::support::{expect_json, log_rate_bookings, rate_changes};

const KEY: &str = "azure-shared-budget-key";
const RPM: u32 = 120;
const RUNS_PER_REPLICA: usize = 15;

#[sqlx::test(migrations = false)]
async fn three_replicas_share_one_provider_budget(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeAzure::start(KEY, &["gpt4o"]).await;
    // The provider's own enforcement: one request per 500 ms, 1 s of tolerance (a bucket of 3
    // requests; providers allow larger bursts). A call that comes late of its slot moves the
    // provider's schedule on and the tolerance absorbs the next, punctual, one; replicas that did
    // not share the budget (3 × 120 a minute) are refused within a few calls. The schedule the
    // replicas booked is checked exactly below, from the database.
    fake.script.enforce_rpm(RPM, Duration::from_secs(1));
    fake.script.set_default(azure::answer("Done.", 1000, 100, 400).with_delay(Duration::from_millis(20)));
    let dir = std::env::temp_dir().join(format!("agentd-shared-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("agentd.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"az/gpt4o\"\n[providers.az]\nkind = \"azure\"\nbase_url = \"{}\"\napi_key_env = \"AZ_TEST_KEY\"\nrpm = {RPM}\nprices.gpt4o = {{ input = 2.5, output = 10.0, cached_input = 1.25 }}\n",
            fake.url
        ),
    )
    .expect("write config");
    let config = config.to_str().expect("path").to_owned();
    let env = [("AGENTD_CONFIG", config.as_str()), ("AZ_TEST_KEY", KEY)];
    // The first applies the migrations; then two more.
    let replicas: Vec<Agentd> = (0..3).map(|_| Agentd::start(&url, &env)).collect();
    log_rate_bookings(&pool).await;

    let crew = json!({
        "name": "budgeted",
        "agents": [{"name": "a", "role": "Answerer", "goal": "Answer", "backstory": "Brief.", "llm": "az/gpt4o"}],
        "tasks": [{"name": "t", "description": "Answer about {topic}", "expected_output": "A word", "agent": "a"}]
    });
    let client = reqwest::Client::new();
    let mut ids: Vec<(usize, String)> = Vec::new();
    for (r, replica) in replicas.iter().enumerate() {
        let inputs: Vec<Value> =
            (0..RUNS_PER_REPLICA).map(|i| json!({"topic": format!("r{r}-{i}")})).collect();
        let response = client
            .post(format!("{}/v1/kickoffs/batch", replica.base))
            .json(&json!({"crew": crew, "inputs": inputs}))
            .send()
            .await
            .expect("POST");
        let body = expect_json(response, StatusCode::ACCEPTED).await;
        for run in body["runs"].as_array().expect("runs") {
            ids.push((r, run["id"].as_str().expect("id").to_owned()));
        }
    }
    let total = ids.len();
    let deadline = Instant::now() + Duration::from_secs(120);
    for (r, id) in &ids {
        loop {
            let run: Value = client
                .get(format!("{}/v1/runs/{id}", replicas[*r].base))
                .send()
                .await
                .expect("GET")
                .json()
                .await
                .expect("json");
            if run["status"] == "completed" {
                break;
            }
            if ["failed", "cancelled"].contains(&run["status"].as_str().unwrap_or_default()) {
                let seen = fake.script.seen();
                let t0 = seen[0].at;
                let arrivals: Vec<String> =
                    seen.iter().map(|s| format!("{}:{}", (s.at - t0).as_millis(), s.status)).collect();
                panic!("{run}\narrivals (ms:status): {}", arrivals.join(" "));
            }
            assert!(Instant::now() < deadline, "run never ended: {run}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    let seen = fake.script.seen();
    let refused = seen.iter().filter(|s| s.status == 429).count();
    let arrivals: Vec<Instant> = seen.iter().filter(|s| s.status == 200).map(|s| s.at).collect();
    // The schedule the cluster booked on the provider's request key: one booking per call, each
    // starting once the key was free and holding it for exactly one interval.
    let interval = 60.0 / f64::from(RPM);
    let bookings = rate_changes(&pool, "provider:az:rpm").await;
    let mut starts: Vec<f64> = bookings.iter().map(|b| b.start(interval)).collect();
    starts.sort_by(f64::total_cmp);
    let span = starts.last().expect("bookings") - starts[0];
    let ideal = interval * (total as f64 - 1.0);
    let per_10s = max_in_window(&starts, 10.0);
    let per_5s = max_in_window(&starts, 5.0);
    eprintln!(
        "{total} runs on 3 replicas at rpm {RPM}: {} calls answered, {refused} refused by the provider; booked span \
         {span:.2} s (the budget's pace: {ideal:.2} s, {:.1}% of it); most booked starts in any 10 s: {per_10s} \
         (budget {}), in any 5 s: {per_5s} (budget {})",
        arrivals.len(),
        100.0 * ideal / span,
        RPM / 6,
        RPM / 12,
    );
    assert_eq!(refused, 0, "the provider never had to refuse a call");
    assert_eq!(arrivals.len(), total, "one call per run");
    assert_eq!(bookings.len(), total, "one booking per call: {bookings:?}");
    for b in &bookings {
        assert!(b.after - b.before >= interval - 1e-6, "booked before the key was free: {b:?}");
        assert!(b.after <= b.before.max(b.at) + interval + 1e-6, "booked more than an interval: {b:?}");
    }
    // Within a window, at most the budget and the one slot its edge can split.
    assert!(per_10s <= (RPM / 6) as usize + 1, "{per_10s} booked in 10 s");
    assert!(per_5s <= (RPM / 12) as usize + 1, "{per_5s} booked in 5 s");
    // Every replica waited for its slot: the k-th call reached the provider no earlier than the
    // k-th booked start (the fake's monotonic instants on the database's wall clock, read a few
    // µs apart: 5 ms for that). Calls that slept from a clock read before their booking's answer
    // came up to 170 ms early here.
    let (wall_now, instant_now) = (epoch_seconds(std::time::SystemTime::now()), Instant::now());
    let mut reached: Vec<f64> =
        arrivals.iter().map(|a| wall_now - instant_now.duration_since(*a).as_secs_f64()).collect();
    reached.sort_by(f64::total_cmp);
    for (k, (reached, start)) in reached.iter().zip(&starts).enumerate() {
        assert!(
            reached + 0.005 >= *start,
            "call {k} reached the provider {:.3} s before its slot",
            start - reached
        );
    }

    // Each replica counts its own calls' tokens and cost by provider and model.
    let mut prompt_tokens = 0.0;
    let mut cost = 0.0;
    for replica in &replicas {
        let response = client.get(format!("{}/metrics", replica.base)).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "{}/metrics", replica.base);
        let metrics = response.text().await.expect("text");
        let value = |prefix: &str| -> f64 {
            metrics
                .lines()
                .find(|l| l.starts_with(prefix))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        prompt_tokens += value("agentd_llm_tokens_total{provider=\"az\",model=\"gpt4o\",kind=\"prompt\"}");
        cost += value("agentd_llm_cost_usd_total{provider=\"az\",model=\"gpt4o\"}");
        assert!(!metrics.contains(KEY), "no key in the metrics");
    }
    assert_eq!(prompt_tokens, 1000.0 * total as f64);
    // Per call: (1000 − 400) × 2.5 + 400 × 1.25 + 100 × 10 = 3,000 per million.
    assert!((cost - 0.003 * total as f64).abs() < 1e-9, "{cost}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Seconds since the epoch.
fn epoch_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// The most of the sorted `times` (seconds) in any window of `window` seconds.
fn max_in_window(times: &[f64], window: f64) -> usize {
    let mut best = 0;
    let mut from = 0;
    for to in 0..times.len() {
        while times[to] - times[from] >= window {
            from += 1;
        }
        best = best.max(to - from + 1);
    }
    best
}

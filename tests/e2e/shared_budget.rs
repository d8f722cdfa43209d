//! A provider's `rpm` is one budget for the cluster: three `agentd serve` replicas share a
//! provider limited to 120 requests a minute, which a fake Azure deployment enforces as a
//! provider does (a request earlier than its budget allows gets a 429). Many runs on all three
//! replicas: the provider refuses none, never sees more than its budget in a window, and the
//! calls keep close to the budget's pace. `/metrics` counts tokens and cost by provider and model.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::fakes::azure::{self, FakeAzure};
use crate::fakes::max_in_window;
use crate::support::expect_json;

const KEY: &str = "azure-shared-budget-key";
const RPM: u32 = 120;
const RUNS_PER_REPLICA: usize = 15;

#[sqlx::test(migrations = false)]
async fn three_replicas_share_one_provider_budget(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeAzure::start(KEY, &["gpt4o"]).await;
    // The provider's own enforcement: one request per 500 ms, 400 ms of tolerance (a bucket of 1.8
    // requests: stricter than the bursts providers allow). A call that comes late of its slot
    // moves the provider's schedule on; the tolerance absorbs the next, punctual, one (on a loaded
    // machine the first calls come up to ~100 ms late).
    fake.script.enforce_rpm(RPM, Duration::from_millis(400));
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
    let times: Vec<Instant> = seen.iter().filter(|s| s.status == 200).map(|s| s.at).collect();
    let first = *times.iter().min().expect("calls");
    let last = *times.iter().max().expect("calls");
    let span = last - first;
    let interval = Duration::from_secs(60) / RPM;
    let ideal = interval * (total as u32 - 1);
    let per_10s = max_in_window(&times, Duration::from_secs(10));
    let per_5s = max_in_window(&times, Duration::from_secs(5));
    eprintln!(
        "{total} runs on 3 replicas at rpm {RPM}: {} calls answered, {refused} refused by the provider; span {span:?} \
         (the budget's pace: {ideal:?}, {:.1}% of it); most calls in any 10 s: {per_10s} (budget {}), in any 5 s: {per_5s} (budget {})",
        times.len(),
        100.0 * ideal.as_secs_f64() / span.as_secs_f64(),
        RPM / 6,
        RPM / 12,
    );
    assert_eq!(refused, 0, "the provider never had to refuse a call");
    assert_eq!(times.len(), total, "one call per run");
    // Within a window, at most the budget, and one more only where a call came a few ms early
    // of its slot (a window's edge can split a slot's jitter).
    assert!(per_10s <= (RPM / 6) as usize + 1, "{per_10s} calls in 10 s");
    assert!(per_5s <= (RPM / 12) as usize + 1, "{per_5s} calls in 5 s");
    // Never faster than the budget's pace, but for the lateness of the first call (at most a slot).
    assert!(span >= ideal - interval, "faster than the budget: {span:?} < {ideal:?}");
    assert!(span <= ideal.mul_f64(1.15) + Duration::from_secs(1), "far slower than the budget: {span:?}");

    // Each replica counts its own calls' tokens and cost by provider and model.
    let mut prompt_tokens = 0.0;
    let mut cost = 0.0;
    for replica in &replicas {
        let metrics = client
            .get(format!("{}/metrics", replica.base))
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .expect("text");
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

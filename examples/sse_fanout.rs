//! Measures commit-to-client latency of server-sent events with many subscribers on one run.
//!
//! Starts the agentd router in-process against a fresh database (created from `DATABASE_URL`,
//! dropped afterwards), opens `SUBSCRIBERS` (default 1000) SSE connections to one run, commits
//! `EVENTS` (default 200) events one transaction at a time, and reports the latency from the start
//! of each commit (an upper bound: it includes the commit itself) to each subscriber's receipt:
//! p50, p99 and max over every delivery.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example sse_fanout`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::config::{Config, Secret};
use agentd::domain::event::{AgentThought, RunCompleted};
use agentd::domain::{EventData, RunId};
use agentd::engine::journal::{Journal, RunChange, Step};
use agentd::store::Store;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::Connection;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let admin_url = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL")?;
    let database = format!("agentd_fanout_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&admin_url).await?;
    sqlx::query(&format!("CREATE DATABASE {database}")).execute(&mut admin).await?;
    let result = measure(&admin_url, &database).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)")).execute(&mut admin).await?;
    result
}

async fn measure(admin_url: &str, database: &str) -> Result<(), BoxError> {
    let (subscribers, events) = (setting("SUBSCRIBERS", 1000), setting("EVENTS", 200));
    let url = format!("{}/{database}", admin_url.rsplit_once('/').map_or(admin_url, |(base, _)| base));
    let pool = PgPoolOptions::new().max_connections(16).connect(&url).await?;
    let store = Store::new(pool.clone());
    store.migrate().await?;
    // The API alone, composed as `agentd serve --role api` does; this harness runs the run itself.
    let config = Config { role: agentd::config::Role::Api, ..Config::new(Secret::new(url)) };
    let app = agentd::app::App::assemble(config, store.clone(), tokio_util::sync::CancellationToken::new())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(app.run(Some(listener)));

    let run_id = kickoff(&base).await?;
    let claimed = store.claim_run(run_id, "fanout", Duration::from_secs(600)).await?.ok_or("not claimed")?;
    let journal = store.journal(run_id, claimed.attempt);
    let committed: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        readers.push(tokio::spawn(read(base.clone(), run_id, committed.clone(), latencies.clone())));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for i in 0..events as i64 {
        let mut step = Step::default();
        step.event(Some("t"), Some("a"), EventData::AgentThought(AgentThought { text: i.to_string() }));
        let started = Instant::now();
        journal.commit(step).await?;
        committed.lock().map_err(|_| "poisoned")?.insert(i, started);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut end = Step::default();
    end.event(None, None, EventData::RunCompleted(RunCompleted { output: "done".into() }));
    end.run = Some(RunChange::Completed { output: agentd::domain::TaskOutput::new("done", None) });
    journal.commit(end).await?;
    for reader in readers {
        reader.await??;
    }
    report(subscribers, events, &latencies.lock().map_err(|_| "poisoned")?);
    Ok(())
}

async fn kickoff(base: &str) -> Result<RunId, BoxError> {
    let crew = json!({"name": "fanout", "agents": [{"name": "a", "role": "r", "goal": "g", "backstory": "b"}],
                      "tasks": [{"name": "t", "description": "d", "expected_output": "o", "agent": "a"}]});
    let run: Value = reqwest::Client::new()
        .post(format!("{base}/v1/kickoffs"))
        .json(&json!({"crew": crew}))
        .send()
        .await?
        .json()
        .await?;
    Ok(RunId(run["id"].as_str().ok_or("no id")?.parse()?))
}

/// Follow the run, recording when each thought arrives relative to its commit.
async fn read(
    base: String,
    run_id: RunId,
    committed: Arc<Mutex<HashMap<i64, Instant>>>,
    latencies: Arc<Mutex<Vec<Duration>>>,
) -> Result<(), BoxError> {
    let mut response = reqwest::Client::new()
        .get(format!("{base}/v1/runs/{run_id}/events"))
        .header("accept", "text/event-stream")
        .send()
        .await?;
    let mut buffer = String::new();
    let mut seen = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let arrived = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(i) = block.lines().find_map(|l| l.strip_prefix("data: ")).and_then(thought_index) {
                seen.push((i, arrived));
            }
        }
    }
    // Commit instants are recorded as commits happen, so read them once the stream ends.
    let committed = committed.lock().map_err(|_| "poisoned")?;
    let mut latencies = latencies.lock().map_err(|_| "poisoned")?;
    for (i, arrived) in seen {
        if let Some(at) = committed.get(&i) {
            latencies.push(arrived.saturating_duration_since(*at));
        }
    }
    Ok(())
}

fn thought_index(data: &str) -> Option<i64> {
    let envelope: Value = serde_json::from_str(data).ok()?;
    (envelope["type"] == "agent.thought").then(|| envelope["data"]["text"].as_str()?.parse().ok()).flatten()
}

fn report(subscribers: usize, events: usize, latencies: &[Duration]) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let at = |q: f64| {
        sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).copied()
    };
    println!("| subscribers | events | deliveries | p50 | p99 | max |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {subscribers} | {events} | {} | {:.1} ms | {:.1} ms | {:.1} ms |",
        sorted.len(),
        at(0.50).unwrap_or_default().as_secs_f64() * 1e3,
        at(0.99).unwrap_or_default().as_secs_f64() * 1e3,
        sorted.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

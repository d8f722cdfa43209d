//! The benchmark harness: agentd (API and worker pool, in this process) on a fresh database, a
//! fake OpenAI-compatible model answering a native tool call then a final answer (so each run is
//! 2 LLM calls and 1 tool call), and clients driving it over HTTP. Prints a markdown table and
//! writes `bench-results.json`.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example loadgen -- [scenario...]`
//!
//! Scenarios (all by default): `latency` (sequential kickoffs, 0 ms model: kickoff-to-completed
//! p50/p99 seen by the client), `throughput` (2,000 runs from 64 concurrent clients), `inflight`
//! (`INFLIGHT` runs, default 10,000, kicked off at once with a 2 s model: wall time against the
//! ideal 4 s, peak RSS of this process), `dbcost` (committed transactions and rows written per
//! run, from `pg_stat_database`). The fan-out scenario is `examples/sse_fanout.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::app::{build_engine, AppState};
use agentd::config::{self, Config, FileConfig, Secret};
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use agentd::worker::{WorkerPool, WorkerSettings};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgPool};
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One scenario's result.
struct Row {
    scenario: &'static str,
    metric: String,
    value: f64,
    unit: &'static str,
    target: &'static str,
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let admin_url = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL")?;
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let run = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let mut rows = Vec::new();
    for scenario in ["latency", "throughput", "inflight", "dbcost"] {
        if run(scenario) {
            let bench = Bench::start(&admin_url, scenario).await?;
            let result = bench.scenario(scenario).await;
            bench.stop(&admin_url).await?;
            rows.extend(result?);
        }
    }
    report(&rows)?;
    Ok(())
}

/// agentd, a fake model and a database of their own.
struct Bench {
    pool: PgPool,
    fake: FakeLlm,
    database: String,
    stop: CancellationToken,
    handle: Arc<Handle>,
}

impl Bench {
    async fn start(admin_url: &str, scenario: &str) -> Result<Self, BoxError> {
        let database = format!("agentd_bench_{scenario}_{}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(&format!("CREATE DATABASE {database}")).execute(&mut admin).await?;
        let url = format!("{}/{database}", admin_url.rsplit_once('/').map_or(admin_url, |(base, _)| base));
        let connections = setting("DB_CONNECTIONS", 32) as u32;
        let pool = PgPoolOptions::new().max_connections(connections).connect(&url).await?;
        let store = Store::new(pool.clone());
        store.migrate().await?;
        let fake = FakeLlm::start().await?;
        fake.set_recording(false);
        let toml = format!("[providers.openai]\nbase_url = \"{}\"\n", fake.base_url());
        let file: FileConfig = toml::from_str(&toml)?;
        let config =
            Config { providers: config::providers(&file, |_| None)?, ..Config::new(Secret::new(url)) };
        let stop = CancellationToken::new();
        let state = AppState::with_shutdown(store.clone(), config.clone(), stop.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, agentd::http::router(state)).await });
        let slots = setting("SLOTS", 10_000);
        let settings = WorkerSettings {
            poll_interval: Duration::from_millis(200),
            ..WorkerSettings::new(slots, Duration::from_secs(30))
        };
        let pool_task = WorkerPool::new(store, Arc::new(build_engine(&config)?), settings);
        tokio::spawn(pool_task.run(stop.clone()));
        let client = reqwest::Client::builder().pool_max_idle_per_host(256).tcp_nodelay(true).build()?;
        let handle = Arc::new(Handle { base, client });
        Ok(Self { pool, fake, database, stop, handle })
    }

    async fn stop(self, admin_url: &str) -> Result<(), BoxError> {
        self.stop.cancel();
        self.pool.close().await;
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.database))
            .execute(&mut admin)
            .await?;
        Ok(())
    }

    fn model(&self, latency: Duration) {
        let call =
            FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7"}))]).with_delay(latency);
        self.fake.set_tool_round(Some((call, FakeReply::text("42").with_delay(latency))));
    }

    async fn scenario(&self, name: &str) -> Result<Vec<Row>, BoxError> {
        match name {
            "latency" => self.latency().await,
            "throughput" => self.throughput().await,
            "inflight" => self.inflight().await,
            _ => self.db_cost().await,
        }
    }

    /// Kick off one run and wait for it (long-poll), returning the client-observed time.
    async fn one_run(&self) -> Result<Duration, BoxError> {
        let started = Instant::now();
        self.handle.one_run().await?;
        Ok(started.elapsed())
    }

    async fn latency(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        for _ in 0..20 {
            self.one_run().await?;
        }
        let mut times = Vec::new();
        for _ in 0..setting("LATENCY_RUNS", 200) {
            times.push(self.one_run().await?);
        }
        times.sort();
        let ms = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3;
        Ok(vec![
            Row {
                scenario: "latency", metric: "p50".into(), value: ms(0.5), unit: "ms", target: "≤ 15 ms"
            },
            Row { scenario: "latency", metric: "p99".into(), value: ms(0.99), unit: "ms", target: "" },
        ])
    }

    async fn throughput(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        let (runs, clients) = (setting("THROUGHPUT_RUNS", 2000), 64);
        let started = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (next, this) = (next.clone(), self.clone_handle());
            tasks.push(tokio::spawn(async move {
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < runs {
                    this.one_run().await?;
                }
                Ok::<(), BoxError>(())
            }));
        }
        for task in tasks {
            task.await??;
        }
        let per_second = runs as f64 / started.elapsed().as_secs_f64();
        Ok(vec![Row {
            scenario: "throughput",
            metric: format!("{runs} runs, {clients} clients"),
            value: per_second,
            unit: "runs/s",
            target: "≥ 300",
        }])
    }

    async fn inflight(&self) -> Result<Vec<Row>, BoxError> {
        let latency = Duration::from_secs(2);
        self.model(latency);
        let runs = setting("INFLIGHT", 10_000);
        let started = Instant::now();
        let mut kickoffs = Vec::new();
        for _ in 0..runs {
            let this = self.clone_handle();
            kickoffs.push(tokio::spawn(async move { this.kickoff().await }));
        }
        for kickoff in kickoffs {
            kickoff.await??;
        }
        loop {
            let done: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM runs WHERE status IN ('completed', 'failed', 'cancelled')",
            )
            .fetch_one(&self.pool)
            .await?;
            if done as usize >= runs {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let wall = started.elapsed().as_secs_f64();
        let completed: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE status = 'completed'")
            .fetch_one(&self.pool)
            .await?;
        let ideal = 2.0 * latency.as_secs_f64();
        Ok(vec![
            Row {
                scenario: "inflight",
                metric: format!("{runs} runs, wall / ideal {ideal:.0} s"),
                value: wall / ideal,
                unit: "×",
                target: "≤ 1.25",
            },
            Row {
                scenario: "inflight",
                metric: "runs completed".into(),
                value: completed as f64,
                unit: "runs",
                target: "all",
            },
            Row {
                scenario: "inflight",
                metric: "peak RSS (agentd + fake + clients)".into(),
                value: peak_rss_mib(),
                unit: "MiB",
                target: "≤ 1024",
            },
        ])
    }

    async fn db_cost(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        self.one_run().await?;
        let runs = 200;
        let before = stats(&self.pool, &self.database).await?;
        for _ in 0..runs {
            self.one_run().await?;
        }
        let after = stats(&self.pool, &self.database).await?;
        let per = |i: usize| (after[i] - before[i]) as f64 / runs as f64;
        Ok(vec![
            Row {
                scenario: "dbcost",
                metric: "committed transactions per run".into(),
                value: per(0),
                unit: "txn",
                target: "≤ 8",
            },
            Row {
                scenario: "dbcost",
                metric: "rows inserted per run".into(),
                value: per(1),
                unit: "rows",
                target: "",
            },
            Row {
                scenario: "dbcost",
                metric: "rows updated per run".into(),
                value: per(2),
                unit: "rows",
                target: "",
            },
        ])
    }

    fn clone_handle(&self) -> Arc<Handle> {
        self.handle.clone()
    }
}

/// What a client task needs.
struct Handle {
    base: String,
    client: reqwest::Client,
}

impl Handle {
    async fn kickoff(&self) -> Result<String, BoxError> {
        let body = json!({"crew": crew(), "inputs": {}});
        let run: Value =
            self.client.post(format!("{}/v1/kickoffs", self.base)).json(&body).send().await?.json().await?;
        Ok(run["id"].as_str().ok_or("no id")?.to_owned())
    }

    async fn one_run(&self) -> Result<(), BoxError> {
        let id = self.kickoff().await?;
        let run: Value = self
            .client
            .get(format!("{}/v1/runs/{id}/wait?timeout_s=120", self.base))
            .send()
            .await?
            .json()
            .await?;
        if run["status"] != "completed" {
            return Err(format!("run {id} ended {}: {}", run["status"], run["error"]).into());
        }
        Ok(())
    }
}

/// A one-agent, one-tool crew: 2 LLM calls and 1 tool call per run.
fn crew() -> Value {
    json!({"name": "bench", "agents": [{"name": "a", "role": "Calculator", "goal": "Compute", "backstory": "Exact.",
                                        "tools": ["calculator"]}],
           "tasks": [{"name": "t", "description": "What is 6*7?", "expected_output": "A number", "agent": "a"}]})
}

/// Committed transactions, rows inserted and rows updated in `database` so far (the statistics
/// collector lags a little: it is flushed first).
async fn stats(pool: &PgPool, database: &str) -> Result<[i64; 3], BoxError> {
    tokio::time::sleep(Duration::from_millis(600)).await;
    sqlx::query("SELECT pg_stat_force_next_flush()").execute(pool).await.ok();
    let row: (i64, i64, i64) = sqlx::query_as(
        "SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = $1",
    )
    .bind(database)
    .fetch_one(pool)
    .await?;
    Ok([row.0, row.1, row.2])
}

/// The peak resident set of this process, in MiB (Linux).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn report(rows: &[Row]) -> Result<(), BoxError> {
    println!("| scenario | metric | value | target |");
    println!("|---|---|---|---|");
    for row in rows {
        println!("| {} | {} | {:.1} {} | {} |", row.scenario, row.metric, row.value, row.unit, row.target);
    }
    let json: Vec<Value> = rows
        .iter()
        .map(|r| json!({"scenario": r.scenario, "metric": r.metric, "value": r.value, "unit": r.unit, "target": r.target}))
        .collect();
    std::fs::write("bench-results.json", serde_json::to_string_pretty(&json)?)?;
    Ok(())
}

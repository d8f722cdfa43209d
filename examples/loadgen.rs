//! The benchmark harness: agentd on a fresh database, in a process of its own (this program run
//! again as `agentd serve`, so it is the binary's own code path and its memory is its own), a fake
//! OpenAI-compatible model answering a native tool call then a final answer (so each run is 2 LLM
//! calls and 1 tool call), and clients driving agentd over HTTP; the fake and the clients live in
//! this process. Prints a markdown table and writes `bench-results.json`.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example loadgen -- [scenario...]`
//!
//! Scenarios (all by default): `latency` (sequential kickoffs, 0 ms model: kickoff-to-completed
//! p50/p99 seen by the client), `throughput` (2,000 runs from 64 concurrent clients), `inflight`
//! (`INFLIGHT` runs, default 10,000, kicked off at once, one `POST /v1/kickoffs` each over
//! `KICKOFF_CONNECTIONS` (1,000) connections, with a 2 s model: wall time against the ideal 4 s,
//! peak RSS of agentd), `inflight_batch` (the same through `POST /v1/kickoffs/batch`,
//! `INFLIGHT_BATCH` (1,000) runs per request), `dbcost` (committed transactions and rows written
//! per run, from `pg_stat_database`), `webhooks` (not in the default set: a registered endpoint
//! taking every event, `WEBHOOK_RUNS` (1,000) runs from 64 clients, a receiver in this process:
//! deliveries per second and commit-to-delivery p50/p99), `fairness` (not in the default set:
//! tenant A queues `FAIRNESS_BACKLOG` (2,000) runs against a 200 ms model on `FAIRNESS_SLOTS` (20)
//! slots, then tenant B kicks off 20; B's wait from kickoff to `run.started`, p50 and p99, and
//! how much of A's backlog was still queued when B's last run started), `mcp` (not in the default
//! set: `MCP_CALLS` (200) MCP `tools/call`s of a published one-call crew, interleaved one at a
//! time with as many REST kickoffs each long-polled to completion; p50/p99 of both and the
//! difference of the medians), `budget` (not in the default set: the `latency` runs with
//! agentd's `latency_budget` on, and where each run's time went by stage). `throughput` also
//! reports the CPU per run of agentd and of Postgres. The fan-out scenario is
//! `examples/sse_fanout.rs`.
//! `KEEP_DATABASE=1` keeps each scenario's database for a look afterwards. `PRUNE_BACKLOG=<runs>`
//! seeds that many finished runs 40 days old and runs agentd with `AGENTD_RETENTION_DAYS=30`,
//! so the retention pruner removes them while the scenario runs (stderr says how many it did);
//! with `PRUNE_OFF=1` the runs are seeded but not pruned (the same database, without the pruner).
//! `MAX_QUEUED=<runs>` gives the tenant the scenarios run as (the open API's `default`) that
//! `max_queued`, so every kickoff is counted against it in its transaction (set it above the
//! scenario's runs to measure the cost without refusals).
//! `INFLIGHT_TIMELINE=1` has the `inflight` scenarios print, per 250 ms from the first kickoff,
//! the model requests that reached the fake (runs' first calls, second calls) and the events
//! committed (`run.started`, `task.started`, `llm.finished`, `run.completed`): which wave of work
//! waits on which (the fake records every request for it, which costs it some CPU).
//! `OTLP_SINK=1` turns traces on: agentd exports its spans and GenAI metrics over OTLP/HTTP to a
//! sink in this process that takes every request (stderr says how many requests and bytes per
//! scenario); without it traces are off (unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set for this
//! program, which agentd inherits).

use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgPool};
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The allocator the `agentd` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// Set in the environment of the agentd this program starts.
const AGENTD_ROLE: &str = "LOADGEN_IS_AGENTD";

fn main() -> ExitCode {
    if std::env::var_os(AGENTD_ROLE).is_some() {
        // The agentd under test: exactly `agentd serve`, configured by the environment.
        return agentd::cli::main();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    match runtime.map_err(BoxError::from).and_then(|runtime| runtime.block_on(bench())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("loadgen: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn bench() -> Result<(), BoxError> {
    let admin_url = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL")?;
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let run = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let mut rows = Vec::new();
    for scenario in [
        "latency",
        "throughput",
        "inflight",
        "inflight_batch",
        "dbcost",
        "webhooks",
        "fairness",
        "mcp",
        "budget",
    ] {
        // The webhook, fairness, MCP and budget scenarios only when asked for: the others are
        // the before/after guard.
        let on_request = ["webhooks", "fairness", "mcp", "budget"].contains(&scenario);
        if (!on_request && run(scenario)) || wanted.iter().any(|w| w == scenario) {
            let bench = Bench::start(&admin_url, scenario).await?;
            let result = bench.scenario(scenario).await;
            bench.stop(&admin_url).await?;
            rows.extend(result?);
        }
    }
    report(&rows)?;
    Ok(())
}

/// Seed `runs` finished runs created 40 days ago, each with a task, 10 events, 4 messages and a
/// tool call (about the journal of a real run), for the retention pruner to remove while a
/// scenario runs (`PRUNE_BACKLOG=<runs>`; agentd then keeps 30 days).
async fn seed_prunable(pool: &PgPool, runs: usize) -> Result<(), BoxError> {
    let started = Instant::now();
    let mut tx = pool.begin().await?;
    // No notifications for history nobody follows.
    sqlx::query("SET LOCAL session_replication_role = replica").execute(&mut *tx).await?;
    // UUIDv7 ids of 40 days ago: 48 bits of milliseconds, version 7, variant 8, then md5 bits.
    sqlx::query(
        r#"CREATE TEMP TABLE old_runs ON COMMIT DROP AS
           SELECT (lpad(to_hex((extract(epoch FROM now() - interval '40 days') * 1000)::bigint + i), 12, '0')
                   || '7' || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text), 4, 15))::uuid AS id
             FROM generate_series(1, $1) AS i"#,
    )
    .bind(runs as i64)
    .execute(&mut *tx)
    .await?;
    let statements = [
        r#"INSERT INTO runs (id, status, crew_name, crew_spec, attempt, created_at, started_at, finished_at, last_seq, output)
           SELECT id, 'completed', 'old', '{}', 1, now() - interval '40 days', now() - interval '40 days',
                  now() - interval '40 days', 10, '{"raw": "done", "json": null}' FROM old_runs"#,
        r#"INSERT INTO run_tasks (run_id, position, name, agent, status, output)
           SELECT id, 0, 't', 'a', 'completed', '{"raw": "done", "json": null}' FROM old_runs"#,
        r#"INSERT INTO events (run_id, seq, type, data, at)
           SELECT id, s, 'llm.finished', '{"model": "openai/gpt-4o-mini"}', now() - interval '40 days'
             FROM old_runs, generate_series(1, 10) AS s"#,
        r#"INSERT INTO messages (run_id, seq, task, agent, role, content, attempt)
           SELECT id, s, 't', 'a', 'user', repeat('an old message ', 20), 1 FROM old_runs, generate_series(1, 4) AS s"#,
        r#"INSERT INTO tool_calls (run_id, id, task, agent, tool, arguments, status, result, attempt)
           SELECT id, 't#1/c1', 't', 'a', 'calculator', '{"expression": "6*7"}', 'succeeded', '42', 1 FROM old_runs"#,
    ];
    for statement in statements {
        sqlx::query(statement).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    eprintln!(
        "seeded {runs} runs 40 days old for the retention pruner in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// agentd, a fake model and a database of their own.
struct Bench {
    pool: PgPool,
    fake: FakeLlm,
    database: String,
    agentd: Child,
    handle: Arc<Handle>,
    /// The OTLP sink's counts (requests, bytes), with `OTLP_SINK=1`.
    otlp: Option<Arc<[std::sync::atomic::AtomicU64; 2]>>,
}

/// An OTLP/HTTP endpoint that takes every export (`OTLP_SINK=1`): its URL and its counts.
async fn otlp_sink() -> Result<(String, Arc<[std::sync::atomic::AtomicU64; 2]>), BoxError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let counted = counts.clone();
    let take = move |body: axum::body::Bytes| {
        let counted = counted.clone();
        async move {
            counted[0].fetch_add(1, Ordering::Relaxed);
            counted[1].fetch_add(body.len() as u64, Ordering::Relaxed);
            ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
        }
    };
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(take.clone()))
        .route("/v1/metrics", axum::routing::post(take));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, counts))
}

impl Bench {
    async fn start(admin_url: &str, scenario: &str) -> Result<Self, BoxError> {
        let database = format!("agentd_bench_{scenario}_{}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(&format!("CREATE DATABASE {database}")).execute(&mut admin).await?;
        let url = database_url(admin_url, &database)?;
        let pool = PgPoolOptions::new().max_connections(4).connect(&url).await?;
        Store::new(pool.clone()).migrate().await?;
        let backlog = setting("PRUNE_BACKLOG", 0);
        if backlog > 0 {
            seed_prunable(&pool, backlog).await?;
        }
        let max_queued = setting("MAX_QUEUED", 0);
        if max_queued > 0 {
            // The tenant the scenarios run as (the open API's) gets a `max_queued`: every
            // kickoff is then counted against it in its transaction.
            sqlx::query("UPDATE tenants SET max_queued = $1 WHERE name = 'default'")
                .bind(i32::try_from(max_queued)?)
                .execute(&pool)
                .await?;
        }
        // With the deep accept queue agentd's own listeners have: the inflight scenarios open
        // 10,000 connections to the model at once, and tokio's default queue (1,024) overflowed,
        // so a few hundred runs' first requests waited for a SYN retry (1 s, then 3 s) that says
        // nothing about agentd (`nstat`'s `TcpExtListenOverflows`).
        let fake = FakeLlm::serve(agentd::net::listen(([127, 0, 0, 1], 0).into())?)?;
        fake.set_recording(false);
        let bind = agentd::net::listen(([127, 0, 0, 1], 0).into())?.local_addr()?;
        let mut command = Command::new(std::env::current_exe()?);
        let otlp = match setting("OTLP_SINK", 0) {
            1 => {
                let (url, counts) = otlp_sink().await?;
                command.env("OTEL_EXPORTER_OTLP_ENDPOINT", url);
                Some(counts)
            }
            _ => None,
        };
        if scenario == "budget" {
            command.env("AGENTD_LATENCY_BUDGET", "true");
        }
        if scenario == "webhooks" {
            command
                .env("AGENTD_WEBHOOK_SECRET", "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=")
                .env("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "127.0.0.1");
        }
        let agentd = command
            .arg("serve")
            .env(AGENTD_ROLE, "1")
            .env("DATABASE_URL", &url)
            .env("AGENTD_BIND", bind.to_string())
            .env(
                "AGENTD_WORKERS",
                match scenario {
                    "fairness" => setting("FAIRNESS_SLOTS", 20),
                    _ => setting("SLOTS", 10_000),
                }
                .to_string(),
            )
            .env("AGENTD_DB_MAX_CONNECTIONS", setting("DB_CONNECTIONS", 32).to_string())
            .env("OPENAI_BASE_URL", fake.base_url())
            .env(
                "AGENTD_RETENTION_DAYS",
                if backlog > 0 && setting("PRUNE_OFF", 0) == 0 { "30" } else { "0" },
            )
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let client = reqwest::Client::builder().pool_max_idle_per_host(1024).tcp_nodelay(true).build()?;
        let kickoff_body = serde_json::to_vec(&json!({"crew": crew(), "inputs": {}}))?.into();
        let handle = Arc::new(Handle { base: format!("http://{bind}"), client, kickoff_body });
        let bench = Self { pool, fake, database, agentd, handle, otlp };
        bench.wait_until_ready().await?;
        Ok(bench)
    }

    /// Poll `/readyz` until agentd answers 200 (it migrates nothing: the schema is there).
    async fn wait_until_ready(&self) -> Result<(), BoxError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = self.handle.client.get(format!("{}/readyz", self.handle.base)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("agentd did not become ready within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// CPU seconds used so far by agentd, by this process (the fake and the clients) and by the
    /// whole machine (Linux; clock ticks of 10 ms).
    fn cpu_seconds(&self) -> [f64; 3] {
        let ticks = |path: String| -> f64 {
            let stat = std::fs::read_to_string(path).unwrap_or_default();
            // utime and stime: fields 14 and 15, counted after the parenthesised command name.
            let fields: Vec<&str> =
                stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
            fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
        };
        let agentd = self.agentd.id().map_or(0.0, |pid| ticks(format!("/proc/{pid}/stat")));
        let harness = ticks("/proc/self/stat".into());
        let machine = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let busy: f64 = machine
            .lines()
            .next()
            .map(|cpu| cpu.split_whitespace().skip(1).take(8).enumerate())
            .into_iter()
            .flatten()
            .filter(|(i, _)| *i != 3 && *i != 4) // not idle, not iowait
            .filter_map(|(_, v)| v.parse::<f64>().ok())
            .sum();
        [agentd / 100.0, harness / 100.0, busy / 100.0]
    }

    /// agentd's peak resident set so far, in MiB (Linux).
    fn agentd_peak_rss_mib(&self) -> f64 {
        let status = self.agentd.id().map(|pid| format!("/proc/{pid}/status"));
        let status = status.and_then(|path| std::fs::read_to_string(path).ok()).unwrap_or_default();
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        kib / 1024.0
    }

    /// agentd's `/metrics` counter `name` with `labels`, if it reports it.
    async fn agentd_counter(&self, name: &str, labels: &str) -> Result<Option<f64>, BoxError> {
        let text =
            self.handle.client.get(format!("{}/metrics", self.handle.base)).send().await?.text().await?;
        let series = format!("{name}{{{labels}}} ");
        Ok(text.lines().find_map(|l| l.strip_prefix(&series)).and_then(|v| v.trim().parse().ok()))
    }

    async fn stop(mut self, admin_url: &str) -> Result<(), BoxError> {
        let backlog = setting("PRUNE_BACKLOG", 0);
        if backlog > 0 && setting("PRUNE_OFF", 0) == 0 {
            let text =
                self.handle.client.get(format!("{}/metrics", self.handle.base)).send().await?.text().await?;
            let pruned =
                text.lines().find_map(|l| l.strip_prefix("agentd_pruned_runs_total ")).unwrap_or("0");
            eprintln!(
                "retention pruner: removed {} of the {backlog} old runs while the scenario ran",
                pruned.trim()
            );
        }
        self.agentd.kill().await?;
        if let Some(counts) = &self.otlp {
            use std::sync::atomic::Ordering;
            let (requests, bytes) = (counts[0].load(Ordering::Relaxed), counts[1].load(Ordering::Relaxed));
            eprintln!("OTLP sink: {requests} export requests, {:.1} MiB", bytes as f64 / 1_048_576.0);
        }
        self.pool.close().await;
        if setting("KEEP_DATABASE", 0) == 1 {
            eprintln!("kept database {} (KEEP_DATABASE=1)", self.database);
            return Ok(());
        }
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
            "budget" => self.budget().await,
            "throughput" => self.throughput().await,
            "inflight" => self.inflight(1).await,
            // The same runs kicked off by the batch endpoint, 1,000 per request.
            "inflight_batch" => self.inflight(setting("INFLIGHT_BATCH", 1000)).await,
            "webhooks" => self.webhooks().await,
            "fairness" => self.fairness().await,
            "mcp" => self.mcp().await,
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
        // Where the time goes: the median gap before each event of a run, by event.
        let gaps = event_gaps(&self.pool).await?;
        let gaps: Vec<String> = gaps.iter().map(|(event, ms, ..)| format!("{event} +{ms:.2}")).collect();
        eprintln!("latency: median ms before each event: {}", gaps.join(", "));
        let ms = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3;
        Ok(vec![
            Row {
                scenario: "latency", metric: "p50".into(), value: ms(0.5), unit: "ms", target: "≤ 15 ms"
            },
            Row { scenario: "latency", metric: "p99".into(), value: ms(0.99), unit: "ms", target: "" },
        ])
    }

    /// The latency budget: the `latency` scenario's sequential runs with agentd's
    /// `latency_budget` on, and where each run's time went by stage (agentd's
    /// `agentd_latency_budget_*` totals divided by the runs), against the time the client saw.
    /// The rest, client-observed time less the stages, is HTTP and the client: the requests on the
    /// wire, hyper, and the harness's own reading of the answers.
    async fn budget(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        for _ in 0..20 {
            self.one_run().await?;
        }
        let before = self.budget_totals().await?;
        let runs = setting("LATENCY_RUNS", 200);
        let mut times = Vec::new();
        for _ in 0..runs {
            times.push(self.one_run().await?);
        }
        let after = self.budget_totals().await?;
        let client_ms = times.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / runs as f64;
        let mut rows = Vec::new();
        let mut staged = 0.0;
        eprintln!("budget: mean ms per run by stage (marks per run), over {runs} sequential runs");
        for (stage, (seconds, marks)) in &after {
            let (seconds_before, marks_before) = before.get(stage).copied().unwrap_or_default();
            let ms = (seconds - seconds_before) * 1e3 / runs as f64;
            let per_run = (marks - marks_before) / runs as f64;
            staged += ms;
            eprintln!("budget:   {stage:<16} {ms:6.3} ms  ({per_run:.1})");
            rows.push(Row { scenario: "budget", metric: stage.clone(), value: ms, unit: "ms", target: "" });
        }
        eprintln!("budget:   {:<16} {:6.3} ms", "http and client", client_ms - staged);
        eprintln!("budget:   {:<16} {:6.3} ms", "client saw", client_ms);
        rows.push(Row {
            scenario: "budget",
            metric: "http and client".into(),
            value: client_ms - staged,
            unit: "ms",
            target: "",
        });
        rows.push(Row {
            scenario: "budget",
            metric: "client saw (mean)".into(),
            value: client_ms,
            unit: "ms",
            target: "",
        });
        Ok(rows)
    }

    /// agentd's latency budget totals so far: seconds and marks by stage, in the order shown.
    async fn budget_totals(&self) -> Result<indexmap::IndexMap<String, (f64, f64)>, BoxError> {
        let text =
            self.handle.client.get(format!("{}/metrics", self.handle.base)).send().await?.text().await?;
        let mut totals: indexmap::IndexMap<String, (f64, f64)> = indexmap::IndexMap::new();
        for line in text.lines() {
            let (family, rest) = match line.split_once("{stage=\"") {
                Some(parts) => parts,
                None => continue,
            };
            let Some((stage, value)) = rest.split_once("\"} ") else { continue };
            let value: f64 = value.trim().parse()?;
            let entry = totals.entry(stage.to_owned()).or_default();
            match family {
                "agentd_latency_budget_seconds_total" => entry.0 = value,
                "agentd_latency_budget_marks_total" => entry.1 = value,
                _ => {}
            }
        }
        if totals.is_empty() {
            return Err("agentd reported no latency budget (is `latency_budget` on?)".into());
        }
        Ok(totals)
    }

    /// What the MCP server adds to a run: `MCP_CALLS` (200) `tools/call`s of the bench crew,
    /// published as a tool (the current revision: one POST answered by an event stream that ends
    /// with the result), interleaved one at a time with as many REST kickoffs of it, each followed
    /// by a long-poll of `/wait`. Both see the run from kickoff to completion.
    async fn mcp(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        let mut published = crew();
        published["publish"] = json!({"mcp": true});
        let put = self
            .handle
            .client
            .put(format!("{}/v1/crews/bench", self.handle.base))
            .json(&published)
            .send()
            .await?;
        if !put.status().is_success() {
            return Err(format!("PUT /v1/crews/bench: {}", put.status()).into());
        }
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "bench", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
        }});
        let call = serde_json::to_vec(&call)?;
        let mcp_call = || async {
            let started = Instant::now();
            let response = self
                .handle
                .client
                .post(format!("{}/mcp", self.handle.base))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .body(call.clone())
                .send()
                .await?;
            let text = response.text().await?;
            if !text.contains("\"structuredContent\"") || text.contains("\"isError\":true") {
                return Err::<Duration, BoxError>(format!("the MCP call did not complete: {text}").into());
            }
            Ok(started.elapsed())
        };
        for _ in 0..20 {
            mcp_call().await?;
            self.one_run().await?;
        }
        let (mut mcp, mut rest) = (Vec::new(), Vec::new());
        for _ in 0..setting("MCP_CALLS", 200) {
            mcp.push(mcp_call().await?);
            rest.push(self.one_run().await?);
        }
        mcp.sort();
        rest.sort();
        let ms = |times: &[Duration], q: f64| {
            times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3
        };
        let row = |metric: &str, value: f64| Row {
            scenario: "mcp",
            metric: metric.into(),
            value,
            unit: "ms",
            target: "",
        };
        Ok(vec![
            row("tools/call p50", ms(&mcp, 0.5)),
            row("tools/call p99", ms(&mcp, 0.99)),
            row("rest kickoff+wait p50", ms(&rest, 0.5)),
            row("rest kickoff+wait p99", ms(&rest, 0.99)),
            row("overhead p50", ms(&mcp, 0.5) - ms(&rest, 0.5)),
        ])
    }

    /// Every event of `WEBHOOK_RUNS` runs to one endpoint: how fast they are delivered, and how
    /// long after its event was written each arrives (`at` in the body against the receiver's
    /// clock: one machine).
    async fn webhooks(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        let lags: Arc<std::sync::Mutex<Vec<(Instant, f64)>>> = Arc::default();
        let recorded = lags.clone();
        let receiver = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |body: axum::body::Bytes| {
                let recorded = recorded.clone();
                async move {
                    let event: Value = serde_json::from_slice(&body).unwrap_or_default();
                    let at =
                        event["at"].as_str().and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok());
                    let lag = at.map_or(f64::NAN, |at| {
                        (chrono::Utc::now() - at.with_timezone(&chrono::Utc)).num_microseconds().unwrap_or(0)
                            as f64
                            / 1e3
                    });
                    recorded.lock().map(|mut l| l.push((Instant::now(), lag))).ok();
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, receiver).await });
        let registered = self
            .handle
            .client
            .post(format!("{}/v1/webhooks", self.handle.base))
            .json(&json!({"url": format!("http://{addr}/hook"), "events": ["*"]}))
            .send()
            .await?;
        if registered.status() != reqwest::StatusCode::CREATED {
            return Err(format!("registering the endpoint answered {}", registered.status()).into());
        }
        let runs = setting("WEBHOOK_RUNS", 1000);
        let started = Instant::now();
        self.run_many(runs, 64).await?;
        let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events").fetch_one(&self.pool).await?;
        let deadline = Instant::now() + Duration::from_secs(300);
        while lags.lock().map(|l| (l.len() as i64) < events).unwrap_or(false) {
            if Instant::now() > deadline {
                return Err("not every event was delivered within 5 minutes".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let lags = lags.lock().map(|l| l.clone()).unwrap_or_default();
        let last = lags.iter().map(|(at, _)| *at).max().unwrap_or(started);
        let per_second = lags.len() as f64 / (last - started).as_secs_f64();
        let mut ms: Vec<f64> = lags.iter().map(|(_, lag)| *lag).collect();
        ms.sort_by(f64::total_cmp);
        let q = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
        eprintln!(
            "webhooks: {} deliveries of {runs} runs in {:.1} s",
            lags.len(),
            (last - started).as_secs_f64()
        );
        Ok(vec![
            Row {
                scenario: "webhooks",
                metric: format!("{} deliveries, {runs} runs", lags.len()),
                value: per_second,
                unit: "deliveries/s",
                target: "",
            },
            Row {
                scenario: "webhooks",
                metric: "commit-to-delivery p50".into(),
                value: q(0.5),
                unit: "ms",
                target: "",
            },
            Row {
                scenario: "webhooks",
                metric: "commit-to-delivery p99".into(),
                value: q(0.99),
                unit: "ms",
                target: "",
            },
        ])
    }

    /// `runs` runs, each kicked off and waited for, by `clients` clients at once.
    async fn run_many(&self, runs: usize, clients: usize) -> Result<(), BoxError> {
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
        Ok(())
    }

    async fn throughput(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        let (runs, clients) = (setting("THROUGHPUT_RUNS", 2000), 64);
        let (cpu_before, postgres_before) = (self.cpu_seconds(), postgres_cpu_seconds());
        let started = Instant::now();
        self.run_many(runs, clients).await?;
        let per_second = runs as f64 / started.elapsed().as_secs_f64();
        // CPU per run: agentd's process, and every Postgres process (the postmaster's children
        // that ended included).
        let agentd_ms = (self.cpu_seconds()[0] - cpu_before[0]) * 1e3 / runs as f64;
        let postgres_ms = (postgres_cpu_seconds() - postgres_before) * 1e3 / runs as f64;
        eprintln!("throughput: CPU ms per run: agentd {agentd_ms:.3}, Postgres {postgres_ms:.3}");
        let cpu = |metric: &str, value: f64| Row {
            scenario: "throughput",
            metric: metric.into(),
            value,
            unit: "ms",
            target: "",
        };
        Ok(vec![
            Row {
                scenario: "throughput",
                metric: format!("{runs} runs, {clients} clients"),
                value: per_second,
                unit: "runs/s",
                target: "≥ 300",
            },
            cpu("CPU per run, agentd + Postgres", agentd_ms + postgres_ms),
            cpu("CPU per run, agentd", agentd_ms),
            cpu("CPU per run, Postgres", postgres_ms),
        ])
    }

    /// Kick off `runs` at once (one per request, or `batch` per batch request) against a model
    /// that takes 2 s per call; wait until all have finished.
    async fn inflight(&self, batch: usize) -> Result<Vec<Row>, BoxError> {
        let latency = Duration::from_secs(2);
        let scenario = if batch == 1 { "inflight" } else { "inflight_batch" };
        self.model(latency);
        let runs = setting("INFLIGHT", 10_000);
        // All kicked off at once, as a client service would: over a pool of connections (one
        // connection per run would need 10,000 sockets on each side, beyond the usual file limit).
        let connections = Arc::new(Semaphore::new(setting("KICKOFF_CONNECTIONS", 1000)));
        let timeline = std::env::var_os("INFLIGHT_TIMELINE").is_some();
        self.fake.set_recording(timeline);
        let (cpu_before, postgres_before) = (self.cpu_seconds(), postgres_cpu_seconds());
        let started = Instant::now();
        let started_at = chrono::Utc::now();
        let mut kickoffs = Vec::new();
        for first in (0..runs).step_by(batch.max(1)) {
            let (this, connections) = (self.clone_handle(), connections.clone());
            let size = batch.min(runs - first);
            kickoffs.push(tokio::spawn(async move {
                let _connection = connections.acquire_owned().await?;
                if size == 1 {
                    this.kickoff().await.map(|_| ())
                } else {
                    this.kickoff_batch(size).await
                }
            }));
        }
        for kickoff in kickoffs {
            kickoff.await??;
        }
        let accepted = started.elapsed().as_secs_f64();
        loop {
            let done: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM runs WHERE status IN ('completed', 'failed', 'cancelled') AND crew_name <> 'old'",
            )
            .fetch_one(&self.pool)
            .await?;
            if done as usize >= runs {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu: Vec<f64> =
            self.cpu_seconds().iter().zip(cpu_before).map(|(after, before)| after - before).collect();
        let postgres = postgres_cpu_seconds() - postgres_before;
        eprintln!(
            "{scenario}: CPU seconds: agentd {:.1}, fake and clients {:.1}, Postgres {postgres:.1}, the rest (kernel, other processes) {:.1}, of {:.1} available",
            cpu[0],
            cpu[1],
            cpu[2] - cpu[0] - cpu[1] - postgres,
            wall * std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
        );
        let completed: i64 =
            sqlx::query_scalar("SELECT count(*) FROM runs WHERE status = 'completed' AND crew_name <> 'old'")
                .fetch_one(&self.pool)
                .await?;
        let ideal = 2.0 * latency.as_secs_f64();
        let how = if batch == 1 {
            "one kickoff each".to_owned()
        } else {
            format!("kicked off {batch} per request")
        };
        // Where the time went: the last kickoff's answer, the last claim, the slowest execution.
        let (last_claim, slowest): (f64, f64) = sqlx::query_as(
            "SELECT extract(epoch FROM max(started_at) - min(created_at))::float8,
                    extract(epoch FROM max(finished_at - started_at))::float8 FROM runs",
        )
        .fetch_one(&self.pool)
        .await?;
        eprintln!("{scenario}: all kickoffs answered after {accepted:.2} s, last claim after {last_claim:.2} s, slowest execution {slowest:.2} s, all done after {wall:.2} s");
        let gaps: Vec<String> = event_gaps(&self.pool)
            .await?
            .iter()
            .map(|(event, p50, p99, max)| format!("{event} +{p50:.0}/{p99:.0}/{max:.0}"))
            .collect();
        eprintln!("{scenario}: ms before each event, p50/p99/max: {}", gaps.join(", "));
        if timeline {
            self.print_timeline(scenario, started_at).await?;
        }
        for kind in ["kickoff", "journal", "lease"] {
            let label = format!("kind=\"{kind}\"");
            let batches =
                self.agentd_counter("agentd_group_commit_batches_total", &label).await?.unwrap_or(0.0);
            let items = self.agentd_counter("agentd_group_commit_items_total", &label).await?.unwrap_or(0.0);
            let busy =
                self.agentd_counter("agentd_group_commit_busy_seconds_total", &label).await?.unwrap_or(0.0);
            eprintln!(
                "  group commit {kind}: {batches} transactions, {:.1} items and {:.1} ms each, writers busy {busy:.2} s",
                items / batches.max(1.0),
                busy * 1e3 / batches.max(1.0),
            );
        }
        Ok(vec![
            Row {
                scenario,
                metric: format!("{runs} runs, {how}, wall / ideal {ideal:.0} s"),
                value: wall / ideal,
                unit: "×",
                target: "≤ 1.25",
            },
            Row {
                scenario,
                metric: "runs completed".into(),
                value: completed as f64,
                unit: "runs",
                target: "all",
            },
            Row {
                scenario,
                metric: "agentd peak RSS".into(),
                value: self.agentd_peak_rss_mib(),
                unit: "MiB",
                target: "≤ 1024",
            },
        ])
    }

    /// `INFLIGHT_TIMELINE=1`: per 250 ms since the first kickoff, the model requests that reached
    /// the fake (a run's first call, its second) and the events committed (by the time their
    /// transaction began), so that one can see which wave of work waits on which.
    async fn print_timeline(
        &self,
        scenario: &str,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), BoxError> {
        const BUCKET_MS: i64 = 250;
        let bucket = |at: chrono::DateTime<chrono::Utc>| {
            ((at - started_at).num_milliseconds() / BUCKET_MS).max(0) as usize
        };
        let calls: Value =
            self.handle.client.get(format!("http://{}/calls", self.fake.addr())).send().await?.json().await?;
        // Adds `n` to `column` of the row for `index`, adding rows up to it.
        fn add<const N: usize>(rows: &mut Vec<[i64; N]>, index: usize, column: usize, n: i64) {
            if rows.len() <= index {
                rows.resize(index + 1, [0; N]);
            }
            rows[index][column] += n;
        }
        let mut requests: Vec<[i64; 2]> = Vec::new();
        for call in calls["calls"].as_array().into_iter().flatten() {
            let Some(at) =
                call["at"].as_str().and_then(|at| at.parse::<chrono::DateTime<chrono::Utc>>().ok())
            else {
                continue;
            };
            let second = call["call"].as_u64().unwrap_or(1) > 1;
            add(&mut requests, bucket(at), usize::from(second), 1);
        }
        let events: Vec<(String, chrono::DateTime<chrono::Utc>, i64)> =
            sqlx::query_as("SELECT type, at, count(*) FROM events GROUP BY type, at")
                .fetch_all(&self.pool)
                .await?;
        let kinds = ["run.started", "task.started", "llm.finished", "run.completed"];
        let mut committed: Vec<[i64; 4]> = Vec::new();
        for (kind, at, count) in events {
            if let Some(k) = kinds.iter().position(|k| *k == kind) {
                add(&mut committed, bucket(at), k, count);
            }
        }
        eprintln!(
            "{scenario}: timeline, per {BUCKET_MS} ms: model requests (first call, second) | events ({})",
            kinds.join(", ")
        );
        for index in 0..requests.len().max(committed.len()) {
            let r = requests.get(index).copied().unwrap_or_default();
            let c = committed.get(index).copied().unwrap_or_default();
            eprintln!(
                "  {:>5} ms  {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6}",
                index as i64 * BUCKET_MS,
                r[0],
                r[1],
                c[0],
                c[1],
                c[2],
                c[3]
            );
        }
        Ok(())
    }

    async fn db_cost(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::ZERO);
        self.one_run().await?;
        let runs = 500;
        let before = stats(&self.pool, &self.database).await?;
        let started = Instant::now();
        for _ in 0..runs {
            self.one_run().await?;
        }
        let busy = started.elapsed();
        let after = stats(&self.pool, &self.database).await?;
        let per = |i: usize| (after[i] - before[i]) as f64 / runs as f64;
        // What an idle agentd commits in as long (its pollers: recovery, schedules, webhooks,
        // documents, the key watch), which the runs did not cause.
        tokio::time::sleep(busy).await;
        let idle = stats(&self.pool, &self.database).await?;
        let idle_per_run = (idle[0] - after[0]) as f64 / runs as f64;
        eprintln!("dbcost: an idle agentd committed {idle_per_run:.2} transactions per run's time");
        Ok(vec![
            Row {
                scenario: "dbcost",
                metric: "committed transactions per run".into(),
                value: per(0),
                unit: "txn",
                target: "≤ 4",
            },
            Row {
                scenario: "dbcost",
                metric: "committed transactions per run, less an idle agentd's".into(),
                value: per(0) - idle_per_run,
                unit: "txn",
                target: "",
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
    /// The body of every single kickoff, serialised once.
    kickoff_body: axum::body::Bytes,
}

impl Handle {
    async fn kickoff_batch(&self, size: usize) -> Result<(), BoxError> {
        let body = json!({"crew": crew(), "inputs": vec![json!({}); size]});
        let response =
            self.client.post(format!("{}/v1/kickoffs/batch", self.base)).json(&body).send().await?;
        let status = response.status();
        let answer: Value = response.json().await?;
        match answer["runs"].as_array() {
            Some(runs) if status.is_success() && runs.len() == size => Ok(()),
            _ => Err(format!("batch kickoff answered {status}: {answer}").into()),
        }
    }

    async fn kickoff(&self) -> Result<String, BoxError> {
        let response = self
            .client
            .post(format!("{}/v1/kickoffs", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.kickoff_body.clone())
            .send()
            .await?;
        let status = response.status();
        let run: Value = response.json().await?;
        match run["id"].as_str() {
            Some(id) if status.is_success() => Ok(id.to_owned()),
            _ => Err(format!("kickoff answered {status}: {run}").into()),
        }
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

/// CPU seconds used so far by every Postgres process of this machine (Linux: `/proc`), with what
/// the postmaster counted for its children that have ended (connections closed).
fn postgres_cpu_seconds() -> f64 {
    let mut ticks = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(')')) else {
            continue;
        };
        if !name.starts_with("postgres") {
            continue;
        }
        // utime, stime, cutime and cstime: fields 14 to 17, counted after the command name.
        let fields: Vec<&str> = rest.split_whitespace().collect();
        ticks += fields.get(11..15).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    }
    ticks / 100.0
}

/// The URL of `database` on the server of `admin_url`. The connection is plain TCP unless
/// `admin_url` sets `sslmode`: on loopback, TLS only adds encryption to every statement.
fn database_url(admin_url: &str, database: &str) -> Result<String, BoxError> {
    let mut url = url::Url::parse(admin_url)?;
    url.set_path(database);
    if !url.query_pairs().any(|(key, _)| key == "sslmode") {
        url.query_pairs_mut().append_pair("sslmode", "disable");
    }
    Ok(url.into())
}

/// The gap in ms before each event of a run, by event type and position: p50, p99 and max.
async fn event_gaps(pool: &PgPool) -> Result<Vec<(String, f64, f64, f64)>, BoxError> {
    Ok(sqlx::query_as(
        "SELECT type, percentile_cont(0.5) WITHIN GROUP (ORDER BY gap)::float8,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY gap)::float8, max(gap)::float8 FROM (
             SELECT e.type, extract(epoch FROM e.at - lag(e.at) OVER (PARTITION BY e.run_id ORDER BY e.seq)) * 1e3
                    AS gap, e.seq
               FROM events AS e) AS g
          WHERE gap IS NOT NULL GROUP BY type, seq ORDER BY seq",
    )
    .fetch_all(pool)
    .await?)
}

/// A one-agent, one-tool crew: 2 LLM calls and 1 tool call per run.
fn crew() -> Value {
    json!({"name": "bench", "agents": [{"name": "a", "role": "Calculator", "goal": "Compute", "backstory": "Exact.",
                                        "tools": ["calculator"]}],
           "tasks": [{"name": "t", "description": "What is 6*7?", "expected_output": "A number", "agent": "a"}]})
}

impl Bench {
    /// Tenant A queues `FAIRNESS_BACKLOG` (2,000) runs against a 200 ms model (two calls a run)
    /// on `FAIRNESS_SLOTS` (20) slots; once A's first runs are executing, tenant B kicks off 20,
    /// one request each. B's wait from kickoff to `run.started` (the run's `created_at` to its
    /// `started_at`, both the database's clock): p50, p99 and max, and how many of A's runs
    /// were still queued when B's last one started.
    async fn fairness(&self) -> Result<Vec<Row>, BoxError> {
        self.model(Duration::from_millis(200));
        let client = &self.handle.client;
        let base = &self.handle.base;
        // The API is open until a key is stored: the first key is the harness's admin key.
        for tenant in ["team-a", "team-b"] {
            client
                .post(format!("{base}/v1/tenants"))
                .json(&json!({"name": tenant}))
                .send()
                .await?
                .error_for_status()?;
        }
        let admin = self.key(None, "default", "admin").await?;
        let a = self.key(Some(&admin), "team-a", "kickoff").await?;
        let b = self.key(Some(&admin), "team-b", "kickoff").await?;
        let backlog = setting("FAIRNESS_BACKLOG", 2000);
        let mut left = backlog;
        while left > 0 {
            let size = left.min(1000);
            let body = json!({"crew": crew(), "inputs": vec![json!({}); size]});
            let url = format!("{base}/v1/kickoffs/batch");
            client.post(url).bearer_auth(&a).json(&body).send().await?.error_for_status()?;
            left -= size;
        }
        // A's runs are executing (its backlog queued behind them) before B arrives.
        while self
            .count("SELECT count(*) FROM runs WHERE tenant = 'team-a' AND started_at IS NOT NULL")
            .await?
            == 0
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let b_runs = 20;
        for _ in 0..b_runs {
            let url = format!("{base}/v1/kickoffs");
            let body = json!({"crew": crew(), "inputs": {}});
            client.post(url).bearer_auth(&b).json(&body).send().await?.error_for_status()?;
        }
        let deadline = Instant::now() + Duration::from_secs(600);
        while self
            .count("SELECT count(*) FROM runs WHERE tenant = 'team-b' AND started_at IS NOT NULL")
            .await?
            < b_runs
        {
            if Instant::now() > deadline {
                return Err("tenant B's runs did not all start within 10 minutes".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let a_queued =
            self.count("SELECT count(*) FROM runs WHERE tenant = 'team-a' AND status = 'queued'").await?;
        let waits: Vec<f64> = sqlx::query_scalar(
            "SELECT extract(epoch FROM started_at - created_at)::float8 * 1000 FROM runs
              WHERE tenant = 'team-b' ORDER BY 1",
        )
        .fetch_all(&self.pool)
        .await?;
        let at = |q: f64| waits[((waits.len() - 1) as f64 * q).round() as usize];
        eprintln!("fairness: {a_queued} of A's {backlog} runs still queued when B's last run started");
        Ok(vec![
            Row {
                scenario: "fairness",
                metric: "B's wait p50".into(),
                value: at(0.5),
                unit: "ms",
                target: "≪ 1,000 ms",
            },
            Row {
                scenario: "fairness",
                metric: "B's wait p99".into(),
                value: at(0.99),
                unit: "ms",
                target: "",
            },
            Row {
                scenario: "fairness",
                metric: "A's runs still queued".into(),
                value: a_queued as f64,
                unit: "runs",
                target: "",
            },
        ])
    }

    /// A new key of `tenant` with `scope` (made with `admin`, or on the open API).
    async fn key(&self, admin: Option<&str>, tenant: &str, scope: &str) -> Result<String, BoxError> {
        let body = json!({"tenant": tenant, "name": "loadgen", "scopes": [scope]});
        let request = self.handle.client.post(format!("{}/v1/keys", self.handle.base)).json(&body);
        let request = match admin {
            Some(admin) => request.bearer_auth(admin),
            None => request,
        };
        let created: Value = request.send().await?.error_for_status()?.json().await?;
        Ok(created["key"].as_str().ok_or("no key in the answer")?.to_owned())
    }

    async fn count(&self, sql: &str) -> Result<i64, BoxError> {
        Ok(sqlx::query_scalar(sql).fetch_one(&self.pool).await?)
    }
}

/// Committed transactions, rows inserted and rows updated in `database` so far. Each session
/// reports its counts when it has been idle a while (up to 10 s in Postgres 15), so this waits for
/// every session to have reported before reading.
async fn stats(pool: &PgPool, database: &str) -> Result<[i64; 3], BoxError> {
    tokio::time::sleep(Duration::from_secs(11)).await;
    sqlx::query("SELECT pg_stat_force_next_flush()").execute(pool).await.ok();
    let row: (i64, i64, i64) = sqlx::query_as(
        "SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = $1",
    )
    .bind(database)
    .fetch_one(pool)
    .await?;
    Ok([row.0, row.1, row.2])
}

fn report(rows: &[Row]) -> Result<(), BoxError> {
    println!("| scenario | metric | value | target |");
    println!("|---|---|---|---|");
    for row in rows {
        // Ratios near their target need the second decimal.
        let digits = if row.unit == "×" { 2 } else { 1 };
        println!(
            "| {} | {} | {:.*} {} | {} |",
            row.scenario, row.metric, digits, row.value, row.unit, row.target
        );
    }
    let json: Vec<Value> = rows
        .iter()
        .map(|r| json!({"scenario": r.scenario, "metric": r.metric, "value": r.value, "unit": r.unit, "target": r.target}))
        .collect();
    std::fs::write("bench-results.json", serde_json::to_string_pretty(&json)?)?;
    Ok(())
}

//! The `agentd` binary itself: `openapi`, `migrate`, `config`, `serve` with graceful shutdown,
//! and `fake-llm`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

pub const BIN: &str = env!("CARGO_BIN_EXE_agentd");

/// The URL of the database behind `pool` (a `#[sqlx::test]` database), built from `DATABASE_URL`.
async fn database_url(pool: &PgPool) -> String {
    let name: String = sqlx::query_scalar("SELECT current_database()").fetch_one(pool).await.expect("name");
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let mut url = url::Url::parse(&base).expect("DATABASE_URL is a URL");
    url.set_path(&name);
    url.to_string()
}

#[test]
fn openapi_command_prints_the_committed_document() {
    let output = Command::new(BIN).arg("openapi").output().expect("run agentd openapi");
    assert!(output.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let committed: serde_json::Value =
        serde_json::from_str(include_str!("../../openapi/openapi.json")).expect("JSON");
    assert!(
        printed == committed,
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn help_never_shows_secret_values() {
    let output = Command::new(BIN)
        .arg("--help")
        .env("AGENTD_API_KEYS", "very-secret-key")
        .env("DATABASE_URL", "postgres://user:hunter2@db/agentd")
        .output()
        .expect("run agentd --help");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("AGENTD_API_KEYS"), "{text}");
    assert!(!text.contains("very-secret-key") && !text.contains("hunter2"), "{text}");
}

/// `agentd config` shows the settings in effect from every layer with their sources, never a
/// secret; a bad value stops `serve` with one line naming the setting and its layer.
#[test]
fn config_shows_each_setting_with_its_source_and_a_bad_one_stops_the_start() {
    let dir = std::env::temp_dir().join(format!("agentd-config-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("agentd.toml");
    std::fs::write(&file, "workers = 9\nlease_s = 11\nretention_days = 2\n").expect("write");
    let output = Command::new(BIN)
        .args(["config", "--retention-days", "3"])
        .env("AGENTD_CONFIG", &file)
        .env("AGENTD_LEASE_S", "12")
        .env("AGENTD_SECRETS_KEY", "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=")
        .env("AGENTD_API_KEYS", "very-secret-key")
        .env("DATABASE_URL", "postgres://user:hunter2@db/agentd")
        .output()
        .expect("run agentd config");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text} {}", String::from_utf8_lossy(&output.stderr));
    for line in [
        format!("workers = 9  # the file {}", file.display()),
        "lease_s = 12  # environment AGENTD_LEASE_S".to_owned(),
        "retention_days = 3  # command line --retention-days".to_owned(),
        "db_max_connections = 16  # default".to_owned(),
        "api_keys = \"<redacted>\"  # environment AGENTD_API_KEYS".to_owned(),
        "database_url = \"<redacted>\"  # environment DATABASE_URL".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
    }
    assert!(
        !text.contains("very-secret-key") && !text.contains("hunter2") && !text.contains("a2tr"),
        "{text}"
    );

    let example =
        Command::new(BIN).args(["config", "--example"]).output().expect("run agentd config --example");
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/agentd.example.toml")).expect("file");
    assert_eq!(String::from_utf8_lossy(&example.stdout), committed);

    for (env, flag, expected) in [
        (("AGENTD_WORKERS", "lots"), None, "agentd: setting workers (from environment AGENTD_WORKERS): expected a whole number from 1 to 10000, found \"lots\""),
        (("AGENTD_ROLE", "all"), Some(["--lease-s", "0"]), "agentd: setting lease_s (from command line --lease-s): 0 is out of range: expected a whole number from 1 to 3600"),
        (("AGENTD_SECRETS_KEY", "short"), None, "agentd: setting secrets_key (from environment AGENTD_SECRETS_KEY): "),
    ] {
        let mut command = Command::new(BIN);
        command.args(["serve", "--bind", "127.0.0.1:0"]).env(env.0, env.1).env("DATABASE_URL", "postgres://127.0.0.1:1/x");
        if let Some(flag) = flag {
            command.args(flag);
        }
        let output = command.output().expect("run agentd serve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(last.starts_with(expected), "{last:?} does not start with {expected:?}");
        assert!(!stderr.contains("short"), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[sqlx::test(migrations = false)]
async fn migrate_command_applies_the_schema(pool: PgPool) {
    let url = database_url(&pool).await;
    let status =
        Command::new(BIN).arg("migrate").env("DATABASE_URL", &url).status().expect("run agentd migrate");
    assert!(status.success());
    let ready = agentd::store::Store::new(pool).check_ready().await.expect("ready check");
    assert!(ready);
}

/// `agentd keys create` bootstraps a key into the database without any other key; `serve` then
/// requires keys, holds this one to its tenant and scopes, and neither process logs it.
#[sqlx::test(migrations = false)]
async fn keys_create_bootstraps_a_scoped_key_that_no_log_shows(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let output = Command::new(BIN)
        .args(["keys", "create", "--tenant", "team-a", "--scope", "read,kickoff", "--name", "ci"])
        .env("DATABASE_URL", &url)
        .env("RUST_LOG", "info")
        .output()
        .expect("run agentd keys create");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let key = stdout.trim().to_owned();
    assert!(key.starts_with("agd_") && key.len() == 47, "{stdout}");
    assert!(stderr.contains("tenant created") && !stderr.contains(&key[12..]), "{stderr}");
    let bad = Command::new(BIN)
        .args(["keys", "create", "--tenant", "Team A", "--scope", "read"])
        .env("DATABASE_URL", &url)
        .output()
        .expect("run agentd keys create");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a tenant name"));

    let agentd = Agentd::start(&url, &[("AGENTD_FAKE_LLM", "true")]);
    let client = reqwest::Client::new();
    let get = |path: &str, key: Option<&str>| {
        let request = client.get(format!("{}{path}", agentd.base));
        match key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
        .send()
    };
    assert_eq!(get("/v1/runs", None).await.expect("GET").status(), StatusCode::UNAUTHORIZED);
    assert_eq!(get("/v1/runs", Some(&key)).await.expect("GET").status(), StatusCode::OK);
    assert_eq!(get("/v1/keys", Some(&key)).await.expect("GET").status(), StatusCode::FORBIDDEN);
    let crew = json!({"name": "c", "agents": [{"name": "a", "role": "r", "goal": "g", "backstory": "b"}],
                      "tasks": [{"name": "t", "description": "d", "expected_output": "o", "agent": "a"}]});
    let kicked = client
        .post(format!("{}/v1/kickoffs", agentd.base))
        .bearer_auth(&key)
        .json(&json!({"crew": crew}))
        .send()
        .await
        .expect("POST");
    assert_eq!(kicked.status(), StatusCode::ACCEPTED);
    let run: Value = kicked.json().await.expect("run");
    assert_eq!(run["tenant"], "team-a");
    let (status, lines) = agentd.stop("-TERM").await;
    assert!(status.success());
    let logs = lines.join("\n");
    assert!(!logs.contains(&key) && !logs.contains(&key[12..]), "a key in the log:\n{logs}");
}

/// A running `agentd serve` child process, killed when dropped.
pub struct Agentd {
    child: std::process::Child,
    pub base: String,
    /// Its log lines, as they come.
    logs: std::sync::mpsc::Receiver<String>,
    /// The lines read so far (the start's included).
    seen: std::sync::Mutex<Vec<String>>,
}

impl Agentd {
    /// Start `agentd serve` on a free port against `database_url` with extra environment.
    pub fn start(database_url: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with(Some(database_url), env)
    }

    /// Start `agentd serve`, with `DATABASE_URL` or without one.
    pub fn start_with(database_url: Option<&str>, env: &[(&str, &str)]) -> Self {
        Self::start_program(BIN, database_url, env)
    }

    /// Start `program serve` (another release's `agentd`), as [`Agentd::start_with`].
    pub fn start_program(program: &str, database_url: Option<&str>, env: &[(&str, &str)]) -> Self {
        Self::spawn(program, database_url, env, false)
    }

    /// Start `program serve` with `AGENTD_ROLE=worker` in `env`: no HTTP (`base` is empty);
    /// answers once its worker pool has started.
    pub fn start_worker(program: &str, database_url: &str, env: &[(&str, &str)]) -> Self {
        Self::spawn(program, Some(database_url), env, true)
    }

    fn spawn(program: &str, database_url: Option<&str>, env: &[(&str, &str)], worker_only: bool) -> Self {
        let mut command = Command::new(program);
        command.args(["serve", "--bind", "127.0.0.1:0"]);
        match database_url {
            Some(url) => command.env("DATABASE_URL", url),
            None => command.env_remove("DATABASE_URL"),
        };
        command
            .env("AGENTD_API_KEYS", "")
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .stderr(Stdio::piped());
        // Nothing in the environment the tests run in sends the child's traffic off the machine:
        // the default provider is on loopback (where nothing listens) unless the test names its
        // fake, and traces are exported only where the test says.
        command.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
        for name in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ] {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn agentd");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut seen = Vec::new();
        let addr = loop {
            let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|error| {
                panic!("agentd logs its address ({error}); it logged:\n{}", seen.join("\n"))
            });
            seen.push(line.clone());
            if worker_only && line.contains("worker pool started") {
                break String::new();
            }
            if let Some(at) = line.find("addr=") {
                break line[at + 5..].split_whitespace().next().expect("address").to_owned();
            }
            // A JSON log line (AGENTD_LOG_FORMAT=json).
            if let Some(at) = line.find("\"addr\":\"") {
                break line[at + 8..].split('"').next().expect("address").to_owned();
            }
        };
        let base = if addr.is_empty() { String::new() } else { format!("http://{addr}") };
        Self { child, base, logs: rx, seen: std::sync::Mutex::new(seen) }
    }

    /// Every line logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.extend(self.logs.try_iter());
        seen.clone()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Send a signal (`-KILL`, `-TERM`) and wait for the process to end.
    pub async fn signal(self, signal: &str) -> std::process::ExitStatus {
        self.stop(signal).await.0
    }

    /// Send a signal and wait for the process to end: its exit status and every line it logged.
    pub async fn stop(mut self, signal: &str) -> (std::process::ExitStatus, Vec<String>) {
        let status = Command::new("kill").args([signal, &self.pid()]).status().expect("kill");
        assert!(status.success());
        let mut child =
            std::mem::replace(&mut self.child, Command::new("true").spawn().expect("placeholder"));
        let exited = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
        let mut lines = self.log_lines();
        // The reader sends the rest, then hangs up when the pipe closes.
        while let Ok(line) = self.logs.recv_timeout(Duration::from_secs(5)) {
            lines.push(line);
        }
        (exited, lines)
    }
}

impl Drop for Agentd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The URL of a fresh database for a child process.
pub async fn child_database_url(pool: &PgPool) -> String {
    database_url(pool).await
}

#[sqlx::test(migrations = false)]
async fn serve_migrates_answers_and_drains_on_sigterm(pool: PgPool) {
    let url = database_url(&pool).await;
    let agentd = Agentd::start(&url, &[]);
    let ready = reqwest::get(format!("{}/readyz", agentd.base)).await.expect("GET");
    assert_eq!(ready.status(), reqwest::StatusCode::OK);
    let (exited, logs) = agentd.stop("-TERM").await;
    assert!(exited.success(), "{exited:?}");
    // Its log goes to a pipe here: plain text, without a terminal's colour codes.
    assert!(logs.iter().any(|l| l.contains("INFO")), "{logs:?}");
    assert!(logs.iter().all(|l| !l.contains('\u{1b}')), "escape codes in a piped log: {logs:?}");
}

/// `agentd serve --fake-llm` without `DATABASE_URL`, keeping its data in `dir` (started off the
/// test's thread: the start blocks while the cluster is initialised).
async fn start_without_database(dir: &std::path::Path) -> Agentd {
    let dir = dir.to_str().expect("UTF-8 path").to_owned();
    tokio::task::spawn_blocking(move || {
        Agentd::start_with(None, &[("AGENTD_DATA_DIR", dir.as_str()), ("AGENTD_FAKE_LLM", "true")])
    })
    .await
    .expect("start")
}

/// `--fake-llm` shows the agent loop: an agent offered the calculator calls it once, with the
/// example its schema gives, and answers with its result, saying it is a fake; a plan and a
/// guardrail pass; a ReAct agent does the same in ReAct text.
#[sqlx::test(migrations = false)]
async fn the_built_in_fake_model_uses_a_tool_passes_guardrails_and_plans(pool: sqlx::PgPool) {
    let url = child_database_url(&pool).await;
    let agentd = Agentd::start(&url, &[("AGENTD_FAKE_LLM", "true")]);
    let client = reqwest::Client::new();
    for tool_calling in ["native", "react"] {
        let crew = json!({"name": "demo", "planning": true,
            "agents": [{"name": "a", "role": "R", "goal": "G", "backstory": "B", "tools": ["calculator"],
                        "tool_calling": tool_calling}],
            "tasks": [{"name": "t", "description": "D", "expected_output": "E", "agent": "a",
                       "guardrail": "It gives a number"}]});
        let kicked = client.post(format!("{}/v1/kickoffs", agentd.base)).json(&json!({"crew": crew})).send();
        let run: Value = kicked.await.expect("POST").json().await.expect("run");
        let id = run["id"].as_str().expect("id").to_owned();
        let waited = client.get(format!("{}/v1/runs/{id}/wait?timeout_s=60", agentd.base)).send().await;
        let done: Value = waited.expect("wait").json().await.expect("run");
        assert_eq!((&done["status"], &done["fake_llm"]), (&json!("completed"), &json!(true)), "{done}");
        let raw = done["output"]["raw"].as_str().expect("raw");
        assert!(
            raw.starts_with("This answer comes from agentd's built-in FAKE model"),
            "{tool_calling}: {raw}"
        );
        assert!(raw.contains("answered: 14"), "{tool_calling}: the tool's result is in the answer: {raw}");
        let calls: Value = client
            .get(format!("{}/v1/runs/{id}/tool-calls", agentd.base))
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .expect("calls");
        let calls = calls["tool_calls"].as_array().expect("calls");
        assert_eq!(calls.len(), 1, "{tool_calling}: one tool call: {calls:?}");
        assert_eq!((&calls[0]["tool"], &calls[0]["status"]), (&json!("calculator"), &json!("succeeded")));
        assert_eq!(calls[0]["arguments"], json!({"expression": "2*(3+4)"}), "{tool_calling}");
        let events: Value = client
            .get(format!("{}/v1/runs/{id}/events?limit=1000", agentd.base))
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .expect("events");
        let types: Vec<&str> =
            events["events"].as_array().expect("events").iter().filter_map(|e| e["type"].as_str()).collect();
        for expected in ["task.planned", "tool.finished", "guardrail.passed"] {
            assert!(types.contains(&expected), "{tool_calling}: {expected} in {types:?}");
        }
        assert!(!types.contains(&"guardrail.failed"), "{tool_calling}: {types:?}");
    }
}

#[tokio::test]
async fn serve_without_database_url_runs_a_private_cluster_stops_it_and_reuses_it() {
    let dir = std::env::temp_dir().join(format!("agentd-private-pg-{}", uuid::Uuid::now_v7()));
    let agentd = start_without_database(&dir).await;
    let client = reqwest::Client::new();
    let crew = json!({"name": "demo", "agents": [{"name": "a", "role": "R", "goal": "G", "backstory": "B"}],
                      "tasks": [{"name": "t", "description": "D", "expected_output": "E", "agent": "a"}]});
    let kicked =
        client.post(format!("{}/v1/kickoffs", agentd.base)).json(&json!({"crew": crew})).send().await;
    let run: Value = kicked.expect("POST").json().await.expect("run");
    let id = run["id"].as_str().expect("id").to_owned();
    let waited = client.get(format!("{}/v1/runs/{id}/wait?timeout_s=30", agentd.base)).send().await;
    let done: Value = waited.expect("wait").json().await.expect("run");
    assert_eq!((&done["status"], &done["fake_llm"]), (&json!("completed"), &json!(true)), "{done}");
    let raw = done["output"]["raw"].as_str().expect("raw").to_owned();
    assert!(
        raw.starts_with("This answer comes from agentd's built-in FAKE model"),
        "it says it is a fake: {done}"
    );
    // A ReAct agent gets the answer in its format, and the same text as its output.
    let mut react = crew.clone();
    react["agents"][0]["tool_calling"] = json!("react");
    let kicked =
        client.post(format!("{}/v1/kickoffs", agentd.base)).json(&json!({"crew": react})).send().await;
    let run: Value = kicked.expect("POST").json().await.expect("run");
    let url = format!("{}/v1/runs/{}/wait?timeout_s=30", agentd.base, run["id"].as_str().expect("id"));
    let react_done: Value = client.get(url).send().await.expect("wait").json().await.expect("run");
    assert_eq!(react_done["output"]["raw"], raw.as_str(), "{react_done}");
    let (status, logs) = agentd.stop("-TERM").await;
    assert!(status.success(), "{status:?}");
    assert!(logs.iter().any(|l| l.contains("started a private PostgreSQL cluster")), "{logs:#?}");
    assert!(logs.iter().any(|l| l.contains("private PostgreSQL cluster stopped")), "{logs:#?}");
    assert!(!dir.join("postgres/postmaster.pid").exists(), "the cluster is stopped on exit");

    // The next start reuses the cluster, and its runs.
    let again = start_without_database(&dir).await;
    let kept: Value = client
        .get(format!("{}/v1/runs/{id}", again.base))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("run");
    assert_eq!(kept["status"], "completed");
    let (status, logs) = again.stop("-TERM").await;
    assert!(status.success(), "{status:?}");
    assert!(!logs.iter().any(|l| l.contains("initialising")), "not initialised twice: {logs:#?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn serve_without_database_url_or_postgresql_says_how_to_get_a_database_once() {
    let output = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("DATABASE_URL")
        .env("AGENTD_POSTGRES_BIN", "/nonexistent")
        .env("NO_COLOR", "1")
        .output()
        .expect("run agentd serve");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("no database:").count(), 1, "said once: {stderr}");
    for way in ["set DATABASE_URL", "install PostgreSQL", "docker compose up"] {
        assert!(stderr.contains(way), "{way} missing: {stderr}");
    }
}

/// Start `agentd fake-llm` with `args`; the child and its base URL.
pub fn start_fake_llm(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .arg("fake-llm")
        .args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentd fake-llm");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("a log line").expect("read");
        if line.contains("fake LLM listening") {
            let at = line.find("addr=").expect("addr field");
            break line[at + 5..].split_whitespace().next().expect("address").to_owned();
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (child, format!("http://{addr}/v1"))
}

#[tokio::test]
async fn fake_llm_answers_every_request_with_its_reply() {
    let (mut child, base) = start_fake_llm(&["--reply", "Final Answer: 42", "--delay-ms", "200"]);
    let client = reqwest::Client::new();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let response = client
            .post(format!("{base}/chat/completions"))
            .json(&serde_json::json!({"model": "any", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        let body: serde_json::Value = response.json().await.expect("JSON");
        assert_eq!(body["choices"][0]["message"]["content"], "Final Answer: 42");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    let status = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn fake_llm_has_a_default_reply() {
    let (mut child, base) = start_fake_llm(&[]);
    let response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&serde_json::json!({"model": "any", "messages": []}))
        .send()
        .await
        .expect("POST");
    let body: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(body["choices"][0]["message"]["content"], "Hello from the fake LLM.");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn version_names_the_release_and_the_schema() {
    let output = Command::new(BIN).arg("--version").output().expect("agentd --version");
    assert!(output.status.success());
    let wanted =
        format!("agentd {} (schema {})\n", agentd::release::RELEASE, agentd::store::schema_version());
    assert_eq!(String::from_utf8_lossy(&output.stdout), wanted);
}

/// A database a later release migrated: served while its `schema_window` admits this binary's
/// schema (a rolling upgrade's old replicas), refused with both schemas named once it does not.
#[sqlx::test(migrations = false)]
async fn a_newer_schema_is_served_within_the_window_and_refused_beyond_it(pool: PgPool) {
    let url = database_url(&pool).await;
    let migrate = || {
        let output = Command::new(BIN)
            .arg("migrate")
            .env("DATABASE_URL", &url)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .output()
            .expect("agentd migrate");
        (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (status, stderr) = migrate();
    assert!(status.success(), "{stderr}");
    let db = PgPool::connect(&url).await.expect("connect");
    let ours = agentd::store::schema_version();
    let later = 99_990_101_000_001_i64;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'a later release''s', true, '\\x00'::bytea, 0)",
    )
    .bind(later)
    .execute(&db)
    .await
    .expect("a later migration");
    sqlx::query("INSERT INTO schema_window VALUES ($1, $2, '9.9.9', 'additive: a column')")
        .bind(later)
        .bind(ours)
        .execute(&db)
        .await
        .expect("its window");

    let (status, stderr) = migrate();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("within the compatibility window"), "{stderr}");
    let agentd = Agentd::start(&url, &[]);
    let health = reqwest::get(format!("{}/healthz", agentd.base)).await.expect("GET");
    let health: Value = health.json().await.expect("JSON");
    assert_eq!(health, json!({"status": "ok", "release": agentd::release::RELEASE, "schema": ours}));
    let ready = reqwest::get(format!("{}/readyz", agentd.base)).await.expect("GET");
    assert_eq!(ready.status(), StatusCode::OK);
    agentd.stop("-TERM").await;

    // A contraction: binaries older than the later schema may no longer serve the database.
    sqlx::query("UPDATE schema_window SET oldest_schema = $1 WHERE version = $1")
        .bind(later)
        .execute(&db)
        .await
        .expect("contract");
    let (status, stderr) = migrate();
    assert!(!status.success(), "{stderr}");
    let named = format!("the database's schema ({later}) is newer than this binary's ({ours})");
    assert!(stderr.contains(&named), "{stderr}");
    assert!(stderr.contains(&format!("binaries of schema {later} or later")), "{stderr}");
    let served = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", &url)
        .env("AGENTD_API_KEYS", "")
        .output()
        .expect("agentd serve");
    assert!(!served.status.success());
    assert!(String::from_utf8_lossy(&served.stderr).contains(&named), "{served:?}");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE version = $1")
        .bind(later)
        .fetch_one(&db)
        .await
        .expect("count");
    assert_eq!(applied, 1, "the refusal changed nothing");
}

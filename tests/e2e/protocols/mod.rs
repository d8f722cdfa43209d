//! The protocols' own clients against agentd: the official MCP Python SDK (`tests/mcp`), the
//! official A2A SDK (`tests/a2a`) and the AG-UI client (`tests/ag-ui`), each installed from its
//! registry, pinned, by its `setup.sh` (which `scripts/test.sh` and CI run). Each client is a
//! small script printing JSON lines; these tests spawn it and read them.

mod a2a;
mod a2a_core;
mod ag_ui;
mod conformance;
mod mcp;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{expect_json, TestApp};

pub(crate) const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A protocol client in a child process, its JSON lines read as they come.
pub(crate) struct Client {
    child: tokio::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<Value>,
    /// Every line read so far.
    pub seen: Vec<Value>,
}

impl Client {
    /// Start `program` with `args` (a script of a client installed by a setup script: `needs`
    /// names what to run when it is missing).
    pub fn start(program: &str, args: &[String], needs: &str) -> Self {
        if program.contains('/') && !std::path::Path::new(program).exists() {
            panic!("{program} is not installed: run {needs} (scripts/test.sh does) before the tests");
        }
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let value = serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsed": line}));
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        Self { child, lines, seen: Vec::new() }
    }

    /// The next line, within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<Value> {
        let line = tokio::time::timeout(within, self.lines.recv()).await.ok()??;
        self.seen.push(line.clone());
        Some(line)
    }

    /// The first line (after any others) that has `key`; fails after `within`.
    pub async fn wait_for(&mut self, key: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(line) if line.get(key).is_some() => return line,
                Some(_) => {}
                None => panic!("the client printed no '{key}' line; it printed: {:#?}", self.seen),
            }
        }
    }

    /// Every line until the client exits.
    pub async fn finish(mut self, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(_) => {}
                None => break,
            }
        }
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(ref s)) if s.success()),
            "the client did not exit cleanly ({status:?}); it printed: {:#?}",
            self.seen
        );
        self.seen
    }
}

/// A TCP proxy that forwards each new connection to the first of its backends that accepts it:
/// a load balancer in front of replicas, so a client keeps one URL while a replica dies.
pub(crate) struct Failover {
    pub base: String,
    backends: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Failover {
    pub async fn start(backends: &[&str]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let proxy = Self { base: format!("http://{addr}"), backends: Arc::default() };
        for backend in backends {
            proxy.add(backend);
        }
        let backends = proxy.backends.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let backends = backends.lock().expect("backends").clone();
                tokio::spawn(async move {
                    for backend in backends {
                        if let Ok(mut outbound) = TcpStream::connect(backend.as_str()).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        proxy
    }

    /// Forward to `backend` too (after the others).
    pub fn add(&self, backend: &str) {
        self.backends.lock().expect("backends").push(backend.trim_start_matches("http://").to_owned());
    }

    /// Forward no longer to `backend`.
    pub fn remove(&self, backend: &str) {
        self.backends.lock().expect("backends").retain(|b| b != backend.trim_start_matches("http://"));
    }
}

/// Register `crew` (a crew spec with its name) through `app`.
pub(crate) async fn register(app: &TestApp, crew: &Value) {
    let name = crew["name"].as_str().expect("name");
    let response = app.put_json(&format!("/v1/crews/{name}"), crew).await;
    let status = response.status();
    assert!(
        status == 201 || status == 200,
        "PUT crew {name}: {status} {}",
        response.text().await.unwrap_or_default()
    );
}

/// A run of `app` by id.
pub(crate) async fn run(app: &TestApp, id: &str) -> Value {
    expect_json(app.get(&format!("/v1/runs/{id}")).await, reqwest::StatusCode::OK).await
}

/// A one-task crew answering `{question}`, published through `publish`.
pub(crate) fn published_crew(name: &str, publish: Value) -> Value {
    json!({
        "name": name,
        "description": format!("Answers a question ({name})."),
        "agents": [{"name": "a", "role": "Assistant", "goal": "Answer", "backstory": "Brief."}],
        "tasks": [{"name": "answer", "description": "Answer: {question}", "expected_output": "An answer", "agent": "a"}],
        "publish": publish,
    })
}

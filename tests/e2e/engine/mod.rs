//! The engine end to end: a crew is kicked off over HTTP, claimed, and run by the engine (as the
//! worker will) against a scripted OpenAI-compatible server on a real port; every assertion reads
//! what the run left in Postgres back through the HTTP API (`/v1/runs/{id}`, `/messages`,
//! `/tool-calls`, `/events`), or what the fake model received. The engine's behaviours themselves
//! (the loop, tools, process, plans, guardrails) are the contract suite in `src/engine/tests`, run
//! on the in-memory and the Postgres journal; here is what only the HTTP edge and the provider
//! show.

mod answers;
mod approval;
mod kinds;
mod limits;
pub(crate) mod mcp;
mod provider;
mod retention;
mod secrets;
mod spend;
mod tenancy;

use std::time::Duration;

use agentd::config::{self, Config, Secret, Settings};
use agentd::domain::{ErrorKind, RunId, TaskOutput};
use agentd::engine::EngineError;
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::{expect_json, test_config, TestApp};

pub(super) const LEASE: Duration = Duration::from_secs(60);

/// A scripted model, the service configured to use it, and the store.
pub(super) struct Harness {
    pub(super) fake: FakeLlm,
    pub(super) config: Config,
    pub(super) app: TestApp,
    pub(super) store: Store,
}

/// What one run left behind, as the API shows it.
pub(super) struct Outcome {
    pub(super) result: Result<TaskOutput, EngineError>,
    pub(super) run: Value,
    pub(super) messages: Vec<Value>,
    pub(super) tool_calls: Vec<Value>,
    pub(super) events: Vec<Value>,
}

impl Harness {
    /// The `openai` provider points at a fresh fake model; `native_tools` says whether it takes
    /// native tools. Tools may reach no private address.
    pub(super) async fn start(pool: PgPool, native_tools: bool) -> Self {
        Self::start_with(pool, native_tools, |_| {}).await
    }

    pub(super) async fn start_with(
        pool: PgPool,
        native_tools: bool,
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        let fake = FakeLlm::start().await.expect("fake LLM");
        let file: Settings = toml::from_str(&format!(
            "[providers.openai]\nbase_url = \"{}\"\nnative_tools = {native_tools}\n",
            fake.base_url()
        ))
        .expect("provider toml");
        let mut config = Config {
            providers: config::providers(&file, |_| None).expect("providers"),
            default_model: "openai/test-model".into(),
            llm_timeout: Duration::from_secs(10),
            llm_max_attempts: 3,
            ..test_config()
        };
        tweak(&mut config);
        let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
        Self { fake, config, app, store: Store::new(pool) }
    }

    /// Kick `crew` off over HTTP (with `topic = tides`), claim the run and let the engine run it
    /// to its end; then read back what it left.
    pub(super) async fn run(&self, crew: &Value) -> Outcome {
        let queued = self.app.kickoff(crew, json!({"topic": "tides"})).await;
        self.run_queued(&queued).await
    }

    /// Claim the run `queued` (a kickoff's answer) and let the engine run it to its end.
    pub(super) async fn run_queued(&self, queued: &Value) -> Outcome {
        assert_eq!(queued["status"], "queued");
        let id = RunId(Uuid::parse_str(queued["id"].as_str().expect("id")).expect("uuid"));
        let claimed = self.store.claim_run(id, "e2e-worker", LEASE).await.expect("claim").expect("queued");
        let engine = crate::support::engine_for(&self.config, &self.store);
        let journal = self.store.claimed_journal(&claimed);
        let result = engine.run(&claimed.crew, &claimed.inputs, &journal, &CancellationToken::new()).await;

        let get = |path: String| async move { expect_json(self.app.get(&path).await, StatusCode::OK).await };
        let run = get(format!("/v1/runs/{id}")).await;
        let messages = get(format!("/v1/runs/{id}/messages")).await;
        let tool_calls = get(format!("/v1/runs/{id}/tool-calls")).await;
        let events = get(format!("/v1/runs/{id}/events?limit=1000")).await;
        let list = |body: &Value, field: &str| body[field].as_array().expect(field).clone();
        let outcome = Outcome {
            result,
            run,
            messages: list(&messages, "messages"),
            tool_calls: list(&tool_calls, "tool_calls"),
            events: list(&events, "events"),
        };
        outcome.check_invariants();
        outcome
    }
}

impl Outcome {
    /// What holds for every finished run: a dense event log that starts with the claim and ends
    /// with the run's end, and no tool call left running.
    pub(super) fn check_invariants(&self) {
        let seqs: Vec<i64> = self.events.iter().map(|e| e["seq"].as_i64().expect("seq")).collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "dense event seqs");
        let types = self.event_types();
        assert_eq!(types[..2], ["run.queued", "run.started"]);
        let end = if self.result.is_ok() { "run.completed" } else { "run.failed" };
        assert_eq!(types.last().copied(), Some(end));
        for call in &self.tool_calls {
            assert_ne!(call["status"], "running", "{call}");
            assert!(call["finished_at"].is_string(), "{call}");
        }
    }

    /// The final answer (the run must have succeeded).
    pub(super) fn raw(&self) -> &str {
        &self.result.as_ref().expect("the run succeeded").raw
    }

    pub(super) fn event_types(&self) -> Vec<&str> {
        self.events.iter().map(|e| e["type"].as_str().expect("type")).collect()
    }

    /// The data of every event of this type, in order.
    pub(super) fn data(&self, event_type: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == event_type).map(|e| &e["data"]).collect()
    }

    pub(super) fn roles(&self) -> Vec<&str> {
        self.messages.iter().map(|m| m["role"].as_str().expect("role")).collect()
    }

    pub(super) fn content(&self, index: usize) -> &str {
        self.messages[index]["content"].as_str().unwrap_or_default()
    }

    /// The tool calls without their timestamps.
    pub(super) fn calls(&self) -> Vec<Value> {
        self.tool_calls
            .iter()
            .map(|c| {
                json!({"id": c["id"], "task": c["task"], "agent": c["agent"], "tool": c["tool"],
                       "arguments": c["arguments"], "status": c["status"], "result": c["result"],
                       "error": c["error"], "cached": c["cached"]})
            })
            .collect()
    }
}

/// The prefix of every single-task run up to its first model call.
pub(super) const START: [&str; 4] = ["run.queued", "run.started", "task.started", "llm.started"];
/// The end of every successful single-task run from its last model call.
pub(super) const FINISH: [&str; 5] =
    ["llm.started", "llm.finished", "agent.final_answer", "task.completed", "run.completed"];

/// `START`, then `middle`, then `FINISH`.
pub(super) fn expected_events<'a>(middle: &[&'a str]) -> Vec<&'a str> {
    START.iter().chain(middle).chain(FINISH.iter()).copied().collect()
}

/// The events of a successful run with a single model call.
pub(super) const ONE_CALL: [&str; 8] = [
    "run.queued",
    "run.started",
    "task.started",
    "llm.started",
    "llm.finished",
    "agent.final_answer",
    "task.completed",
    "run.completed",
];

/// The events of a run whose first model call failed it.
pub(super) const FAILED_CALL: [&str; 6] =
    ["run.queued", "run.started", "task.started", "llm.started", "task.failed", "run.failed"];

/// A succeeded tool call row of task `t`, agent `a`.
pub(super) fn succeeded(id: &str, tool: &str, arguments: Value, result: &str, cached: bool) -> Value {
    json!({"id": id, "task": "t", "agent": "a", "tool": tool, "arguments": arguments,
           "status": "succeeded", "result": result, "error": null, "cached": cached})
}

/// The one-agent, one-task crew of these tests (the agent's role and the task use `{topic}`),
/// with `extra` merged in.
pub(super) fn crew(tools: Value, tool_calling: &str, extra: Value) -> Value {
    let mut spec = json!({
        "name": "e2e",
        "agents": [{"name": "a", "role": "Analyst of {topic}", "goal": "Answer", "backstory": "Precise.",
                    "llm": "openai/test-model", "tools": tools, "tool_calling": tool_calling, "max_iter": 5}],
        "tasks": [{"name": "t", "description": "Study {topic}", "expected_output": "A sentence", "agent": "a"}]
    });
    merge(&mut spec, extra);
    spec
}

/// Merge `extra` into `target`: objects by key, arrays by index.
pub(super) fn merge(target: &mut Value, extra: Value) {
    match (target, extra) {
        (Value::Object(target), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (Value::Array(target), Value::Array(extra)) => {
            for (i, value) in extra.into_iter().enumerate() {
                match target.get_mut(i) {
                    Some(slot) => merge(slot, value),
                    None => target.push(value),
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// The crew's HTTP tool `lookup_order` at `url`, with `options` merged in.
pub(super) fn lookup_tool(url: &str, options: Value) -> Value {
    let mut tool = json!({"name": "lookup_order", "description": "Look up an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"url": url, "method": "POST", "timeout_ms": 5000}});
    merge(&mut tool, options);
    tool
}

/// A tool server at `/lookup` answering with a tiny PNG.
pub(super) async fn png_tool() -> String {
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(|| async {
            ([("content-type", "image/png")], vec![0x89u8, b'P', b'N', b'G', 0, 1, 2, 3])
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/lookup", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    url
}

/// [`allow_loopback`], and stored secrets sealed under the tests' key.
pub(super) fn allow_loopback_with_secrets(config: &mut Config) {
    allow_loopback(config);
    config.secrets_key = Some(crate::secrets::test_key());
}

/// Tools may reach 127.0.0.1 (where the tool servers of these tests listen), and nothing else.
pub(super) fn allow_loopback(config: &mut Config) {
    config.tool_egress = crate::support::loopback_egress();
}

/// The messages of a request the fake model received.
pub(super) fn sent(request: &Value) -> &[Value] {
    request["messages"].as_array().expect("messages")
}

/// The text of the last message of a request.
pub(super) fn last_sent(request: &Value) -> &str {
    sent(request).last().and_then(|m| m["content"].as_str()).unwrap_or_default()
}

/// The names of the tools a request offered.
pub(super) fn offered(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .map(|tools| tools.iter().map(|t| t["function"]["name"].as_str().expect("name")).collect())
        .unwrap_or_default()
}

pub(super) const REACT_STOP: &str = "\nObservation:";

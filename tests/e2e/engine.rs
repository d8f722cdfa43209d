//! The engine end to end: a crew is kicked off over HTTP, claimed, and run by the engine (as the
//! worker will) against a scripted OpenAI-compatible server on a real port; every assertion reads
//! what the run left in Postgres back through the HTTP API (`/v1/runs/{id}`, `/messages`,
//! `/tool-calls`, `/events`), or what the fake model received.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentd::app::build_engine;
use agentd::config::{self, Config, FileConfig, Secret};
use agentd::domain::{ErrorKind, RunId, TaskOutput};
use agentd::engine::EngineError;
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use agentd::tools::egress::EgressPolicy;
use axum::extract::State;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::{expect_json, test_config, TestApp};

const LEASE: Duration = Duration::from_secs(60);

/// A scripted model, the service configured to use it, and the store.
struct Harness {
    fake: FakeLlm,
    config: Config,
    app: TestApp,
    store: Store,
}

/// What one run left behind, as the API shows it.
struct Outcome {
    result: Result<TaskOutput, EngineError>,
    run: Value,
    messages: Vec<Value>,
    tool_calls: Vec<Value>,
    events: Vec<Value>,
}

impl Harness {
    /// The `openai` provider points at a fresh fake model; `native_tools` says whether it takes
    /// native tools. Tools may reach no private address.
    async fn start(pool: PgPool, native_tools: bool) -> Self {
        Self::start_with(pool, native_tools, |_| {}).await
    }

    async fn start_with(pool: PgPool, native_tools: bool, tweak: impl FnOnce(&mut Config)) -> Self {
        let fake = FakeLlm::start().await.expect("fake LLM");
        let file: FileConfig = toml::from_str(&format!(
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
    async fn run(&self, crew: &Value) -> Outcome {
        let queued = self.app.kickoff(crew, json!({"topic": "tides"})).await;
        assert_eq!(queued["status"], "queued");
        let id = RunId(Uuid::parse_str(queued["id"].as_str().expect("id")).expect("uuid"));
        let claimed = self.store.claim_run(id, "e2e-worker", LEASE).await.expect("claim").expect("queued");
        let engine = build_engine(&self.config).expect("engine");
        let journal = self.store.journal(claimed.id, claimed.attempt);
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
    fn check_invariants(&self) {
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
    fn raw(&self) -> &str {
        &self.result.as_ref().expect("the run succeeded").raw
    }

    fn event_types(&self) -> Vec<&str> {
        self.events.iter().map(|e| e["type"].as_str().expect("type")).collect()
    }

    /// The data of every event of this type, in order.
    fn data(&self, event_type: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == event_type).map(|e| &e["data"]).collect()
    }

    fn roles(&self) -> Vec<&str> {
        self.messages.iter().map(|m| m["role"].as_str().expect("role")).collect()
    }

    fn content(&self, index: usize) -> &str {
        self.messages[index]["content"].as_str().unwrap_or_default()
    }

    /// The tool calls without their timestamps.
    fn calls(&self) -> Vec<Value> {
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
const START: [&str; 4] = ["run.queued", "run.started", "task.started", "llm.started"];
/// The end of every successful single-task run from its last model call.
const FINISH: [&str; 5] =
    ["llm.started", "llm.finished", "agent.final_answer", "task.completed", "run.completed"];

/// `START`, then `middle`, then `FINISH`.
fn expected_events<'a>(middle: &[&'a str]) -> Vec<&'a str> {
    START.iter().chain(middle).chain(FINISH.iter()).copied().collect()
}

/// The events of a successful run with a single model call.
const ONE_CALL: [&str; 8] = [
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
const FAILED_CALL: [&str; 6] =
    ["run.queued", "run.started", "task.started", "llm.started", "task.failed", "run.failed"];

/// A succeeded tool call row of task `t`, agent `a`.
fn succeeded(id: &str, tool: &str, arguments: Value, result: &str, cached: bool) -> Value {
    json!({"id": id, "task": "t", "agent": "a", "tool": tool, "arguments": arguments,
           "status": "succeeded", "result": result, "error": null, "cached": cached})
}

/// The one-agent, one-task crew of these tests (the agent's role and the task use `{topic}`),
/// with `extra` merged in.
fn crew(tools: Value, tool_calling: &str, extra: Value) -> Value {
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
fn merge(target: &mut Value, extra: Value) {
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
fn lookup_tool(url: &str, options: Value) -> Value {
    let mut tool = json!({"name": "lookup_order", "description": "Look up an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"url": url, "method": "POST", "timeout_ms": 5000}});
    merge(&mut tool, options);
    tool
}

/// Tools may reach 127.0.0.1 (where the tool servers of these tests listen).
fn allow_loopback(config: &mut Config) {
    config.tool_egress = EgressPolicy::parse("127.0.0.1/32").expect("policy");
}

/// A local HTTP tool: `POST /lookup` answers `"<answer> (<order_id>)"`. With a barrier, each
/// request waits there (up to 5 s, else it fails): requests succeed only if they run together.
struct ToolServer {
    url: String,
    hits: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct ToolState {
    answer: &'static str,
    hits: Arc<AtomicUsize>,
    barrier: Option<Arc<Barrier>>,
}

impl ToolServer {
    async fn start(answer: &'static str, barrier: Option<Arc<Barrier>>) -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let state = ToolState { answer, hits: hits.clone(), barrier };
        let app = axum::Router::new().route("/lookup", axum::routing::post(lookup)).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Self { url: format!("http://{addr}/lookup"), hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn lookup(
    State(state): State<ToolState>,
    axum::Json(args): axum::Json<Value>,
) -> (axum::http::StatusCode, String) {
    state.hits.fetch_add(1, Ordering::SeqCst);
    if let Some(barrier) = &state.barrier {
        if tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await.is_err() {
            return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "ran alone".into());
        }
    }
    let order = args["order_id"].as_str().unwrap_or_default();
    (axum::http::StatusCode::OK, format!("{} ({order})", state.answer))
}

/// The messages of a request the fake model received.
fn sent(request: &Value) -> &[Value] {
    request["messages"].as_array().expect("messages")
}

/// The text of the last message of a request.
fn last_sent(request: &Value) -> &str {
    sent(request).last().and_then(|m| m["content"].as_str()).unwrap_or_default()
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .map(|tools| tools.iter().map(|t| t["function"]["name"].as_str().expect("name")).collect())
        .unwrap_or_default()
}

const REACT_STOP: &str = "\nObservation:";

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn native_tool_call_then_final_answer(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "2*(3+4)"}))]),
        FakeReply::text("The answer is 14."),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "The answer is 14.");
    assert_eq!(out.run["status"], "completed");
    assert_eq!(out.run["output"], json!({"raw": "The answer is 14.", "json": null}));
    assert_eq!((&out.run["tasks"][0]["status"], &out.run["error"]), (&json!("completed"), &Value::Null));
    assert_eq!(
        out.run["usage"],
        json!({"llm_calls": 2, "prompt_tokens": 20, "completion_tokens": 10, "tool_calls": 1})
    );
    assert_eq!(out.roles(), ["system", "user", "assistant", "tool", "user", "assistant"]);
    assert!(out.content(0).contains("You are Analyst of tides."), "{}", out.content(0));
    assert!(out.content(1).contains("Current Task: Study tides"), "{}", out.content(1));
    assert_eq!(
        out.messages[2]["tool_calls"],
        json!([{"id": "c1", "name": "calculator", "arguments": "{\"expression\":\"2*(3+4)\"}"}])
    );
    assert_eq!((out.messages[3]["tool_call_id"].as_str(), out.content(3)), (Some("c1"), "14"));
    assert!(out.content(4).starts_with("Analyze the tool result"));
    assert_eq!(out.content(5), "The answer is 14.");
    assert!(out.messages.iter().all(|m| m["task"] == "t" && m["agent"] == "a"));
    assert_eq!(
        out.calls(),
        [succeeded("t#1/c1", "calculator", json!({"expression": "2*(3+4)"}), "14", false)]
    );

    assert_eq!(out.event_types(), expected_events(&["llm.finished", "tool.started", "tool.finished"]));
    assert_eq!(out.data("task.started")[0], &json!({"task": "t", "agent": "a"}));
    assert_eq!(out.data("llm.started")[0], &json!({"model": "openai/test-model", "iteration": 1}));
    let finished = out.data("llm.finished")[1];
    assert_eq!((&finished["iteration"], &finished["usage"]["prompt_tokens"]), (&json!(2), &json!(10)));
    assert_eq!(
        out.data("tool.started")[0],
        &json!({"tool_call_id": "t#1/c1", "tool": "calculator", "arguments": {"expression": "2*(3+4)"}})
    );
    let tool = out.data("tool.finished")[0];
    assert_eq!((&tool["observation"], &tool["cached"]), (&json!("14"), &json!(false)));
    assert_eq!(out.data("agent.final_answer")[0], &json!({"output": "The answer is 14."}));
    assert_eq!(out.data("task.completed")[0], &json!({"task": "t", "output": "The answer is 14."}));
    assert_eq!(out.data("run.completed")[0], &json!({"output": "The answer is 14."}));

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(offered(&requests[0]), ["calculator"]);
    assert!(requests[0].get("stop").is_none(), "no stop words in native mode");
    let second = sent(&requests[1]);
    assert_eq!(second.len(), 5);
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[3], json!({"role": "tool", "content": "14", "tool_call_id": "c1"}));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn nul_characters_from_the_model_are_replaced_not_fatal(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7", "note": "a\u{0}b"}))]),
        FakeReply::text("42\u{0}!"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;
    assert_eq!(out.run["status"], "completed", "{}", out.run);
    assert_eq!(out.raw(), "42\u{FFFD}!");
    assert_eq!(out.calls()[0]["arguments"], json!({"expression": "6*7", "note": "a\u{FFFD}b"}));
    assert_eq!(out.calls()[0]["result"], "42");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn parallel_native_calls_run_together(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    // Each request waits for the other: both succeed only if they run concurrently.
    let server = ToolServer::start("found", Some(Arc::new(Barrier::new(2)))).await;
    h.fake.push([
        FakeReply::tool_calls(&[
            ("c1", "lookup_order", json!({"order_id": "1"})),
            ("c2", "lookup_order", json!({"order_id": "2"})),
        ]),
        FakeReply::text("Both found."),
    ]);
    let tools = json!([lookup_tool(&server.url, json!({}))]);
    let out = h.run(&crew(json!(["lookup_order"]), "native", json!({"tools": tools}))).await;

    assert_eq!(out.raw(), "Both found.");
    assert_eq!(server.hits(), 2);
    assert_eq!(
        out.calls(),
        [
            succeeded("t#1/c1", "lookup_order", json!({"order_id": "1"}), "found (1)", false),
            succeeded("t#1/c2", "lookup_order", json!({"order_id": "2"}), "found (2)", false),
        ]
    );
    assert_eq!(
        out.event_types(),
        expected_events(&["llm.finished", "tool.started", "tool.started", "tool.finished", "tool.finished"])
    );
    assert_eq!(out.roles(), ["system", "user", "assistant", "tool", "tool", "user", "assistant"]);
    let answers: Vec<(&str, &str)> = out.messages[3..5]
        .iter()
        .map(|m| (m["tool_call_id"].as_str().expect("id"), m["content"].as_str().expect("content")))
        .collect();
    assert_eq!(answers, [("c1", "found (1)"), ("c2", "found (2)")]);
    assert_eq!(out.run["usage"]["tool_calls"], 2);
    let second = sent(&h.fake.requests()[1]).to_vec();
    assert_eq!(
        (second[3]["content"].as_str(), second[4]["content"].as_str()),
        (Some("found (1)"), Some("found (2)"))
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn react_text_tool_use(pool: PgPool) {
    let h = Harness::start(pool, false).await;
    h.fake.push([
        FakeReply::text(
            "Thought: I need to add\nAction: calculator\nAction Input: {\"expression\": \"2+3\"}",
        ),
        FakeReply::text("Thought: I now know the final answer\nFinal Answer: 5"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "5");
    assert_eq!(
        out.event_types(),
        expected_events(&["llm.finished", "agent.thought", "tool.started", "tool.finished"])
    );
    assert_eq!(out.data("agent.thought")[0], &json!({"text": "I need to add"}));
    assert_eq!(out.calls(), [succeeded("t#1/react", "calculator", json!({"expression": "2+3"}), "5", false)]);
    assert_eq!(out.roles(), ["system", "user", "assistant", "user", "assistant"]);
    assert!(out.content(2).starts_with("Thought: I need to add"));
    assert_eq!(out.content(3), "Observation: 5");
    assert!(out.messages.iter().all(|m| m["tool_calls"].is_null() && m["tool_call_id"].is_null()));

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.get("tools").is_none(), "no native tools for a provider without them");
        assert_eq!(request["stop"], json!([REACT_STOP]));
    }
    let system = sent(&requests[0])[0]["content"].as_str().expect("system");
    assert!(system.contains("Tool Name: calculator") && system.contains("Action Input:"), "{system}");
    assert!(last_sent(&requests[0]).ends_with("Thought:"));
    assert_eq!(last_sent(&requests[1]), "Observation: 5");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn damaged_react_text_is_repaired(pool: PgPool) {
    let h = Harness::start(pool, false).await;
    // Markdown emphasis, the wrong case for the tool, JSON cut off and an observation the model
    // made up itself.
    h.fake.push([
        FakeReply::text(
            "**Thought:** use the tool\n**Action:** Calculator\n**Action Input:** {\"expression\": \"6*7\"\n\
             Observation: 41",
        ),
        FakeReply::text("Thought: I now know the final answer\nFinal Answer: 42"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "react", json!({}))).await;

    assert_eq!(out.raw(), "42");
    assert_eq!(
        out.event_types(),
        expected_events(&["llm.finished", "agent.thought", "tool.started", "tool.finished"])
    );
    assert_eq!(out.data("agent.thought")[0], &json!({"text": "use the tool"}));
    assert_eq!(
        out.calls(),
        [succeeded("t#1/react", "calculator", json!({"expression": "6*7"}), "42", false)]
    );
    assert_eq!(out.content(3), "Observation: 42", "the real observation, not the made-up one");
    assert_eq!(last_sent(&h.fake.requests()[1]), "Observation: 42");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn unparseable_react_text_gets_guidance_and_recovers(pool: PgPool) {
    let h = Harness::start(pool, false).await;
    h.fake.push([
        FakeReply::text("I should compute this somehow."),
        FakeReply::text("Thought: I now know the final answer\nFinal Answer: 7"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "7");
    assert_eq!(out.event_types(), expected_events(&["llm.finished", "agent.parse_error"]));
    let error = out.data("agent.parse_error")[0]["error"].as_str().expect("error");
    assert!(error.starts_with("Invalid Format: I missed the 'Action:'"), "{error}");
    assert_eq!(out.roles(), ["system", "user", "assistant", "user", "assistant"]);
    assert_eq!(out.content(2), "I should compute this somehow.");
    let guidance = out.content(3);
    assert!(guidance.starts_with(error) && guidance.contains("should be one of [calculator]"), "{guidance}");
    assert!(out.tool_calls.is_empty());
    assert_eq!(last_sent(&h.fake.requests()[1]), guidance, "the guidance was sent with the next request");
    assert_eq!(out.run["usage"]["llm_calls"], 2);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn tools_rejected_with_400_fall_back_to_react(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::error(400, "tools is not supported with this model"),
        FakeReply::text("Thought: add\nAction: calculator\nAction Input: {\"expression\": \"1+2\"}"),
        FakeReply::text("Final Answer: 3"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "3");
    assert_eq!(
        out.event_types(),
        expected_events(&[
            "agent.fallback",
            "llm.started",
            "llm.finished",
            "agent.thought",
            "tool.started",
            "tool.finished"
        ])
    );
    let fallback = out.data("agent.fallback")[0];
    assert_eq!((&fallback["from"], &fallback["to"]), (&json!("native"), &json!("react")));
    let reason = fallback["reason"].as_str().expect("reason");
    assert!(reason.contains("400") && reason.contains("tools is not supported"), "{reason}");
    assert_eq!(out.roles(), ["system", "user", "user", "assistant", "user", "assistant"]);
    assert!(out.content(2).starts_with("Native tool calling is not available."));
    assert_eq!(out.content(4), "Observation: 3");
    assert_eq!(out.calls(), [succeeded("t#1/react", "calculator", json!({"expression": "1+2"}), "3", false)]);
    assert_eq!(out.run["usage"]["llm_calls"], 2, "the rejected call is not counted");

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3, "a 400 is not retried");
    assert_eq!((offered(&requests[0]), requests[0].get("stop")), (vec!["calculator"], None));
    for request in &requests[1..] {
        assert!(request.get("tools").is_none());
        assert_eq!(request["stop"], json!([REACT_STOP]));
    }
    let notice = last_sent(&requests[1]);
    assert!(notice.starts_with("Native tool calling is not available.") && notice.contains("Action Input:"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn rate_limit_waits_for_retry_after(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::error(429, "Rate limit reached for requests").with_header("retry-after", "1"),
        FakeReply::text("After the wait."),
    ]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "After the wait.");
    assert_eq!(out.event_types(), ONE_CALL);
    let duration = out.data("llm.finished")[0]["duration_ms"].as_u64().expect("duration");
    // Backoff without the header would wait at most 500 ms.
    assert!(duration >= 1000, "waited only {duration} ms");
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1], "the same request again");
    assert_eq!(out.run["usage"]["llm_calls"], 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn server_error_is_retried(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([FakeReply::error(500, "upstream exploded"), FakeReply::text("Recovered.")]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "Recovered.");
    assert_eq!(out.event_types(), ONE_CALL);
    assert_eq!(out.roles(), ["system", "user", "assistant"]);
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1]);
    assert_eq!(
        out.run["usage"],
        json!({"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 5, "tool_calls": 0})
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn slow_answers_time_out_and_are_retried(pool: PgPool) {
    let h = Harness::start_with(pool, true, |c| c.llm_timeout = Duration::from_millis(300)).await;
    h.fake
        .push([FakeReply::text("Too late.").with_delay(Duration::from_secs(2)), FakeReply::text("In time.")]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "In time.");
    assert_eq!(out.event_types(), ONE_CALL);
    assert!(out.data("llm.finished")[0]["duration_ms"].as_u64().expect("duration") >= 300);
    assert_eq!(h.fake.requests().len(), 2);
    assert!(out.messages.iter().all(|m| m["content"] != "Too late."));
    assert_eq!(out.run["usage"]["llm_calls"], 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn timeouts_on_every_attempt_fail_the_run(pool: PgPool) {
    let h = Harness::start_with(pool, true, |c| {
        c.llm_timeout = Duration::from_millis(200);
        c.llm_max_attempts = 2;
    })
    .await;
    let slow = FakeReply::text("Too late.").with_delay(Duration::from_secs(2));
    h.fake.push([slow.clone(), slow]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert!(matches!(out.result, Err(EngineError::Failed { kind: ErrorKind::Timeout, .. })));
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "timeout");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("did not answer within the request timeout of 200ms"), "{message}");
    assert_eq!(h.fake.requests().len(), 2);
    assert_eq!(out.event_types(), FAILED_CALL);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_iter_forces_a_final_answer_without_tools(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "1+1"}))]),
        FakeReply::tool_calls(&[("c2", "calculator", json!({"expression": "2+2"}))]),
        FakeReply::text("My best answer: 4"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "native", json!({"agents": [{"max_iter": 2}]}))).await;

    assert_eq!(out.raw(), "My best answer: 4");
    let tool_round = ["llm.finished", "tool.started", "tool.finished"];
    let middle = [&tool_round[..], &["llm.started"], &tool_round[..], &["agent.max_iter"]].concat();
    assert_eq!(out.event_types(), expected_events(&middle));
    assert_eq!(out.data("agent.max_iter")[0], &json!({"max_iter": 2}));
    assert_eq!(out.data("llm.started")[2]["iteration"], 3);
    assert_eq!(
        out.roles(),
        ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user", "user", "assistant"]
    );
    assert!(out.content(8).contains("MUST give your absolute best final answer"));
    assert_eq!(out.tool_calls.len(), 2);

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(offered(&requests[1]), ["calculator"]);
    assert!(requests[2].get("tools").is_none(), "the forced answer is asked for without tools");
    assert!(last_sent(&requests[2]).contains("MUST give your absolute best final answer"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn context_overflow_is_summarised_and_retried(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        ),
        FakeReply::text("The task is to study tides."),
        FakeReply::text("Tides follow the moon."),
    ]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "Tides follow the moon.");
    assert_eq!(out.roles(), ["system", "user", "user", "assistant"]);
    assert_eq!(out.content(2), "This is a summary of our conversation so far:\nThe task is to study tides.");
    assert_eq!(out.run["usage"]["llm_calls"], 2, "the summary and the answer");

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3);
    let summarise = sent(&requests[1]);
    assert_eq!(summarise[0]["content"], "You are a helpful assistant that simply summarizes the content.");
    let asked = summarise[1]["content"].as_str().expect("text");
    assert!(asked.starts_with("Summarize the following text") && asked.contains("Study tides"), "{asked}");
    let retried = sent(&requests[2]);
    assert_eq!(retried.len(), 2, "the system prompt and the summary");
    assert_eq!(retried[0], sent(&requests[0])[0]);
    assert_eq!(retried[1]["content"], out.content(2));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn output_schema_violations_are_fed_back_until_it_fits(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::text("Seven, I think."),
        FakeReply::text("{\"answer\": \"seven\"}"),
        FakeReply::text("```json\n{\"answer\": 7}\n```"),
    ]);
    let schema =
        json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let out = h.run(&crew(json!([]), "auto", json!({"tasks": [{"output_schema": schema}]}))).await;

    assert_eq!(out.result.as_ref().expect("run").json, Some(json!({"answer": 7})));
    assert_eq!(out.run["output"], json!({"raw": "{\"answer\":7}", "json": {"answer": 7}}));
    assert_eq!(out.run["tasks"][0]["output"], out.run["output"]);
    assert_eq!(
        out.event_types(),
        expected_events(&[
            "llm.finished",
            "agent.parse_error",
            "llm.started",
            "llm.finished",
            "agent.parse_error",
        ])
    );
    assert_eq!(out.roles(), ["system", "user", "assistant", "user", "assistant", "user", "assistant"]);
    assert!(out.content(1).contains("MUST be a JSON object") && out.content(1).contains("\"integer\""));
    assert!(out.content(3).contains("the answer is not JSON"), "{}", out.content(3));
    assert!(out.content(5).contains("$.answer"), "{}", out.content(5));
    let requests = h.fake.requests();
    assert_eq!((last_sent(&requests[1]), last_sent(&requests[2])), (out.content(3), out.content(5)));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn result_as_answer_ends_the_task_with_the_tool_result(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let server = ToolServer::start("shipped", None).await;
    h.fake.push([FakeReply::tool_calls(&[
        ("c1", "lookup_order", json!({"order_id": "42"})),
        ("c2", "calculator", json!({"expression": "1+1"})),
    ])]);
    let tools = json!([lookup_tool(&server.url, json!({"result_as_answer": true}))]);
    let out = h.run(&crew(json!(["lookup_order", "calculator"]), "native", json!({"tools": tools}))).await;

    assert_eq!(out.raw(), "shipped (42)");
    assert_eq!(out.run["output"]["raw"], "shipped (42)");
    assert_eq!((server.hits(), h.fake.requests().len()), (1, 1), "no model call after the answer");
    assert_eq!(
        out.calls(),
        [succeeded("t#1/c1", "lookup_order", json!({"order_id": "42"}), "shipped (42)", false)]
    );
    assert_eq!(
        out.event_types(),
        [
            "run.queued",
            "run.started",
            "task.started",
            "llm.started",
            "llm.finished",
            "tool.started",
            "tool.finished",
            "agent.final_answer",
            "task.completed",
            "run.completed"
        ]
    );
    assert_eq!(out.roles(), ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(out.content(3), "shipped (42)");
    assert_eq!(out.messages[4]["tool_call_id"], "c2");
    assert!(out.content(4).starts_with("Not executed"), "{}", out.content(4));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn repeated_calls_are_served_from_the_cache(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let server = ToolServer::start("found", None).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "7"}))]),
        FakeReply::tool_calls(&[("c2", "lookup_order", json!({"order_id": "7"}))]),
        FakeReply::text("Order 7 found."),
    ]);
    let tools = json!([lookup_tool(&server.url, json!({}))]);
    let out = h.run(&crew(json!(["lookup_order"]), "native", json!({"tools": tools}))).await;

    assert_eq!(out.raw(), "Order 7 found.");
    assert_eq!(server.hits(), 1, "the second call did not reach the tool");
    assert_eq!(
        out.calls(),
        [
            succeeded("t#1/c1", "lookup_order", json!({"order_id": "7"}), "found (7)", false),
            succeeded("t#2/c2", "lookup_order", json!({"order_id": "7"}), "found (7)", true),
        ]
    );
    let cached: Vec<&Value> = out.data("tool.finished").iter().map(|d| &d["cached"]).collect();
    assert_eq!(cached, [&json!(false), &json!(true)]);
    let answer = sent(&h.fake.requests()[2])[6].clone();
    assert_eq!(answer, json!({"role": "tool", "content": "found (7)", "tool_call_id": "c2"}));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn usage_cap_refuses_further_calls(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let server = ToolServer::start("found", None).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]),
        FakeReply::tool_calls(&[("c2", "lookup_order", json!({"order_id": "2"}))]),
        FakeReply::text("Only order 1 found."),
    ]);
    let tools = json!([lookup_tool(&server.url, json!({"max_usage_count": 1}))]);
    let out = h.run(&crew(json!(["lookup_order"]), "native", json!({"tools": tools}))).await;

    assert_eq!(out.raw(), "Only order 1 found.");
    assert_eq!(server.hits(), 1);
    let error = "Tool 'lookup_order' has reached its usage limit of 1 and cannot be used again.";
    let refused = json!({"id": "t#2/c2", "task": "t", "agent": "a", "tool": "lookup_order",
        "arguments": {"order_id": "2"}, "status": "failed", "result": null, "error": error, "cached": false});
    assert_eq!(
        out.calls(),
        [succeeded("t#1/c1", "lookup_order", json!({"order_id": "1"}), "found (1)", false), refused]
    );
    assert_eq!(
        out.data("tool.failed"),
        [&json!({"tool_call_id": "t#2/c2", "tool": "lookup_order", "error": error})]
    );
    let rounds =
        ["llm.finished", "tool.started", "tool.finished", "llm.started", "llm.finished", "tool.started"];
    assert_eq!(out.event_types(), expected_events(&[&rounds[..], &["tool.failed"]].concat()));
    let requests = h.fake.requests();
    assert_eq!(last_sent(&requests[2]), agentd::engine::prompts::REFLECT_ON_RESULTS);
    assert_eq!(sent(&requests[2])[6]["content"], format!("Error: {error}"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn unknown_tools_become_an_error_observation(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "weather_forecast", json!({"city": "Brest"}))]),
        FakeReply::text("I cannot forecast."),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "native", json!({}))).await;

    assert_eq!(out.raw(), "I cannot forecast.");
    let error = "Tool 'weather_forecast' does not exist. Available tools: calculator.";
    assert_eq!(
        out.calls(),
        [json!({"id": "t#1/c1", "task": "t", "agent": "a", "tool": "weather_forecast",
                "arguments": {"city": "Brest"}, "status": "failed", "result": null, "error": error,
                "cached": false})]
    );
    assert_eq!(out.event_types(), expected_events(&["llm.finished", "tool.started", "tool.failed"]));
    assert_eq!(out.data("tool.failed")[0]["error"], error);
    assert_eq!(out.content(3), format!("Error: {error}"));
    assert_eq!(sent(&h.fake.requests()[1])[3]["content"], format!("Error: {error}"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn tool_requests_to_private_addresses_are_blocked(pool: PgPool) {
    // The default egress policy: no loopback.
    let h = Harness::start(pool, true).await;
    let server = ToolServer::start("secret", None).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]),
        FakeReply::text("The lookup was blocked."),
    ]);
    let tools = json!([lookup_tool(&server.url, json!({}))]);
    let out = h.run(&crew(json!(["lookup_order"]), "native", json!({"tools": tools}))).await;

    assert_eq!(out.raw(), "The lookup was blocked.");
    assert_eq!(server.hits(), 0, "the tool server got no request");
    let calls = out.calls();
    let call = &calls[0];
    assert_eq!(
        (&call["tool"], &call["status"], &call["result"]),
        (&json!("lookup_order"), &json!("failed"), &Value::Null)
    );
    let error = call["error"].as_str().expect("error");
    assert!(error.starts_with("blocked:") && error.contains("127.0.0.1"), "{error}");
    assert_eq!(out.event_types(), expected_events(&["llm.finished", "tool.started", "tool.failed"]));
    assert_eq!(out.content(3), format!("Error: {error}"));
    assert!(!out.messages.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("secret"))));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn hierarchical_manager_delegates_to_a_coworker(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[(
            "d1",
            "delegate_work_to_coworker",
            json!({"task": "Find the depth", "context": "Of the sea", "coworker": "analyst of tides"}),
        )]),
        FakeReply::text("The depth is 3 km."),
        FakeReply::text("Report: the depth is 3 km."),
    ]);
    let extra = json!({"process": "hierarchical", "manager_llm": "openai/manager-model"});
    let mut spec = crew(json!([]), "auto", extra);
    spec["tasks"][0].as_object_mut().expect("task").remove("agent");
    let out = h.run(&spec).await;

    assert_eq!(out.raw(), "Report: the depth is 3 km.");
    assert_eq!(out.run["tasks"][0]["status"], "completed");
    let agents: Vec<(&str, &str)> = out
        .events
        .iter()
        .skip(2)
        .map(|e| (e["type"].as_str().expect("type"), e["agent"].as_str().unwrap_or("-")))
        .collect();
    assert_eq!(
        agents,
        [
            ("task.started", "manager"),
            ("llm.started", "manager"),
            ("llm.finished", "manager"),
            ("tool.started", "manager"),
            ("llm.started", "a"),
            ("llm.finished", "a"),
            ("agent.final_answer", "a"),
            ("tool.finished", "manager"),
            ("llm.started", "manager"),
            ("llm.finished", "manager"),
            ("agent.final_answer", "manager"),
            ("task.completed", "manager"),
            ("run.completed", "-"),
        ]
    );
    assert!(out.events.iter().skip(2).take(12).all(|e| e["task"] == "t"));
    assert_eq!(out.data("llm.started")[0]["model"], "openai/manager-model");
    assert_eq!(out.data("llm.started")[1]["model"], "openai/test-model");
    assert_eq!(
        out.calls(),
        [json!({"id": "t#1/d1", "task": "t", "agent": "manager", "tool": "delegate_work_to_coworker",
                "arguments": {"task": "Find the depth", "context": "Of the sea", "coworker": "analyst of tides"},
                "status": "succeeded", "result": "The depth is 3 km.", "error": null, "cached": false})]
    );
    // The coworker's conversation is its own, but its messages belong to the task.
    assert!(out.messages.iter().all(|m| m["task"] == "t"), "{:?}", out.messages);
    let who: Vec<(&str, &str)> = out
        .messages
        .iter()
        .map(|m| (m["agent"].as_str().expect("agent"), m["role"].as_str().expect("role")))
        .collect();
    assert_eq!(
        who,
        [
            ("manager", "system"),
            ("manager", "user"),
            ("manager", "assistant"),
            ("a", "system"),
            ("a", "user"),
            ("a", "assistant"),
            ("manager", "tool"),
            ("manager", "user"),
            ("manager", "assistant"),
        ]
    );
    assert!(out.content(0).contains("Crew Manager"));
    assert!(out.content(3).contains("You are Analyst of tides."));
    assert!(out.content(4).contains("Find the depth") && out.content(4).contains("Of the sea"));
    assert_eq!(out.content(6), "The depth is 3 km.");

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["model"], "manager-model");
    assert_eq!(offered(&requests[0]), ["delegate_work_to_coworker", "ask_question_to_coworker"]);
    let tool_text = requests[0]["tools"][0]["function"]["description"].as_str().expect("description");
    assert!(tool_text.contains("Analyst of tides"), "{tool_text}");
    assert_eq!(requests[1]["model"], "test-model");
    assert!(requests[1].get("tools").is_none(), "the coworker has no tools and no delegation");
    assert_eq!(requests[2]["model"], "manager-model");
    assert_eq!(sent(&requests[2])[3]["content"], "The depth is 3 km.");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_later_task_sees_the_output_of_an_earlier_one(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([FakeReply::text("Tides come twice a day."), FakeReply::text("Summary: twice daily.")]);
    let extra = json!({"tasks": [{}, {"name": "t2", "description": "Summarise", "expected_output": "A line",
                                      "agent": "a"}]});
    let out = h.run(&crew(json!([]), "auto", extra)).await;

    assert_eq!(out.raw(), "Summary: twice daily.");
    assert_eq!(out.run["output"]["raw"], "Summary: twice daily.");
    let tasks: Vec<(&str, &str, &str)> = out.run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            let field =
                |name: &str| t[name].as_str().or_else(|| t["output"][name].as_str()).unwrap_or_default();
            (field("name"), field("status"), field("raw"))
        })
        .collect();
    assert_eq!(
        tasks,
        [("t", "completed", "Tides come twice a day."), ("t2", "completed", "Summary: twice daily.")]
    );
    let task_events: Vec<(&str, &str)> = out
        .events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("task.")))
        .map(|e| (e["type"].as_str().expect("type"), e["task"].as_str().expect("task")))
        .collect();
    assert_eq!(
        task_events,
        [("task.started", "t"), ("task.completed", "t"), ("task.started", "t2"), ("task.completed", "t2")]
    );
    let by_task: Vec<&str> = out.messages.iter().map(|m| m["task"].as_str().expect("task")).collect();
    assert_eq!(by_task, ["t", "t", "t", "t2", "t2", "t2"]);

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(!last_sent(&requests[0]).contains("Tides come twice a day."));
    let second = last_sent(&requests[1]);
    assert!(second.contains("Current Task: Summarise"), "{second}");
    assert!(second.contains("This is the context you're working with:\nTides come twice a day."), "{second}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn llm_authentication_failure_fails_the_run_without_leaking_the_key(pool: PgPool) {
    const KEY: &str = "sk-e2e-secret-key-0123456789";
    let h = Harness::start_with(pool, true, |c| {
        c.providers.get_mut("openai").expect("openai").api_key = Some(Secret::new(KEY));
    })
    .await;
    h.fake.push([FakeReply::error(401, &format!("Incorrect API key provided: {KEY}."))]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert!(
        matches!(out.result, Err(EngineError::Failed { kind: ErrorKind::LlmError, .. })),
        "{:?}",
        out.result
    );
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["tasks"][0]["status"], "failed");
    assert_eq!(out.run["output"], Value::Null);
    assert_eq!(out.run["error"]["kind"], "llm_error");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("401") && message.contains("[redacted]"), "{message}");
    assert_eq!(out.event_types(), FAILED_CALL);
    assert_eq!(out.data("task.failed")[0], &json!({"task": "t", "error": message}));
    assert_eq!(out.data("run.failed")[0], &json!({"error": {"kind": "llm_error", "message": message}}));
    assert_eq!(out.run["usage"]["llm_calls"], 0);

    let headers = h.fake.request_headers();
    assert_eq!(headers.len(), 1, "a 401 is not retried");
    let auth = headers[0].get("authorization").and_then(|v| v.to_str().ok());
    assert_eq!(auth, Some(format!("Bearer {KEY}").as_str()), "the key was sent to the provider");
    for stored in [&out.run, &json!(out.messages), &json!(out.tool_calls), &json!(out.events)] {
        assert!(!stored.to_string().contains(KEY), "the key leaked: {stored}");
    }
}

/// The messages of request `i` as (role, text) pairs.
fn shape(request: &Value) -> Vec<(String, String)> {
    sent(request)
        .iter()
        .map(|m| (m["role"].as_str().unwrap_or_default().to_owned(), m["content"].to_string()))
        .collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_planned_task_runs_three_steps_in_isolated_conversations(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let plan = json!({"steps": [{"description": "Find high tide"}, {"description": "Find low tide"},
                                {"description": "Compute the range"}]});
    h.fake.push([
        FakeReply::text(&plan.to_string()),
        FakeReply::text("High at 6"),
        FakeReply::text("Low at 12"),
        FakeReply::text("Range 3 m"),
        FakeReply::text("Tides: 6, 12, 3 m"),
    ]);
    let out = h.run(&crew(json!([]), "auto", json!({"planning": true}))).await;
    assert_eq!(out.raw(), "Tides: 6, 12, 3 m");
    let steps: Vec<&str> =
        out.event_types().into_iter().filter(|t| t.starts_with("step.") || *t == "task.planned").collect();
    assert_eq!(
        steps,
        [
            "task.planned",
            "step.started",
            "step.completed",
            "step.started",
            "step.completed",
            "step.started",
            "step.completed"
        ]
    );
    assert_eq!(out.data("task.planned")[0]["steps"][1]["description"], "Find low tide");
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 5);
    for (n, request) in requests[1..4].iter().enumerate() {
        let messages = shape(request);
        assert_eq!(messages.len(), 2, "step {} starts from its own system prompt and step", n + 1);
        for other in ["High at 6", "Low at 12", "Range 3 m"].iter().skip(n) {
            assert!(messages.iter().all(|(_, text)| !text.contains(other)), "step {} saw {other}", n + 1);
        }
    }
    assert!(last_sent(&requests[3]).contains("High at 6") && last_sent(&requests[3]).contains("Low at 12"));
    assert!(last_sent(&requests[4]).contains("Range 3 m"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_step_fails_on_an_unused_expected_tool_and_a_slow_step_times_out(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let plan = json!({"steps": [{"description": "Add 3 and 4", "expected_tool": "calculator"},
                                {"description": "Ask the archive"}]});
    h.fake.push([
        FakeReply::text(&plan.to_string()),
        FakeReply::text("7, I think"),
        FakeReply::text("too late").with_delay(Duration::from_secs(5)),
        FakeReply::text("Done anyway"),
    ]);
    let mut spec = crew(json!(["calculator"]), "auto", json!({"planning": true}));
    spec["tasks"][0]["step_timeout_s"] = json!(1);
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Done anyway");
    let failed = out.data("step.failed");
    assert_eq!(failed.len(), 1);
    assert!(failed[0]["reason"].as_str().is_some_and(|r| r.contains("calculator")), "{failed:?}");
    let completed = out.data("step.completed");
    assert_eq!((completed[0]["step"].as_i64(), completed[0]["timed_out"].as_bool()), (Some(2), Some(true)));
    let last = last_sent(&h.fake.requests()[3]).to_owned();
    assert!(last.contains("Step failed") && last.contains("timed out"), "{last}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn async_tasks_overlap_and_a_later_task_sees_both(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let server = ToolServer::start("found", Some(Arc::new(Barrier::new(2)))).await;
    let call = || FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]);
    h.fake.push([
        call(),
        call(),
        FakeReply::text("first answer"),
        FakeReply::text("second answer"),
        FakeReply::text("Both done"),
    ]);
    let spec = json!({
        "name": "e2e",
        "agents": [{"name": "a", "role": "Clerk", "goal": "g", "backstory": "b", "llm": "openai/test-model",
                    "tools": ["lookup_order"]}],
        "tasks": [
            {"name": "one", "description": "Look up A1", "expected_output": "x", "agent": "a", "async_execution": true},
            {"name": "two", "description": "Look up A1 again", "expected_output": "x", "agent": "a", "async_execution": true},
            {"name": "sum", "description": "Sum up", "expected_output": "x", "agent": "a"}
        ],
        "tools": [lookup_tool(&server.url, json!({"cache": false}))]
    });
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Both done");
    assert_eq!(server.hits(), 2);
    assert!(
        out.tool_calls.iter().all(|c| c["status"] == "succeeded"),
        "both passed the 2-party barrier together"
    );
    let outputs: Vec<&str> = out.run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["output"]["raw"].as_str().expect("output"))
        .collect();
    let prompt = last_sent(&h.fake.requests()[4]).to_owned();
    let (one, two) = (
        prompt.find(outputs[0]).expect("task one's output"),
        prompt.find(outputs[1]).expect("task two's output"),
    );
    assert!(one < two, "outputs in task order: {prompt}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_guardrail_fails_once_then_passes(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::text("Tides rise."),
        FakeReply::text("{\"pass\": false, \"reason\": \"no source is cited\"}"),
        FakeReply::text("Tides rise (source: NOAA)."),
        FakeReply::text("{\"pass\": true, \"reason\": \"cites NOAA\"}"),
    ]);
    let out = h
        .run(&crew(
            json!([]),
            "auto",
            json!({"tasks": [{"guardrail": "The answer cites at least one source."}]}),
        ))
        .await;
    assert_eq!(out.raw(), "Tides rise (source: NOAA).");
    assert_eq!(out.data("guardrail.failed"), [&json!({"task": "t", "reason": "no source is cited"})]);
    assert_eq!(out.data("guardrail.passed"), [&json!({"task": "t", "reason": "cites NOAA"})]);
    assert!(last_sent(&h.fake.requests()[2]).contains("no source is cited"));
    assert_eq!(out.run["usage"]["llm_calls"], 4);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_image_observation_arrives_as_a_multimodal_message(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(|| async {
            ([("content-type", "image/png")], vec![0x89u8, b'P', b'N', b'G', 0, 1, 2, 3])
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/lookup", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::text("A tiny PNG."),
    ]);
    let out = h
        .run(&crew(json!(["lookup_order"]), "native", json!({"tools": [lookup_tool(&url, json!({}))]})))
        .await;
    assert_eq!(out.raw(), "A tiny PNG.");
    let finished = out.data("tool.finished");
    assert_eq!(
        (finished[0]["media_type"].as_str(), finished[0]["bytes"].as_u64()),
        (Some("image/png"), Some(8))
    );
    let request = &h.fake.requests()[1];
    let image = sent(request).iter().find(|m| m["content"].is_array()).expect("a multimodal message");
    assert_eq!(image["role"], "user");
    assert_eq!(image["content"][1]["type"], "image_url");
    assert!(image["content"][1]["image_url"]["url"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
    assert!(!out.events.iter().any(|e| e.to_string().contains("base64")), "no image data in events");
}

//! Traces with the real binary: OpenTelemetry spans exported over OTLP/HTTP to a receiver that
//! decodes them with the official `opentelemetry-proto` package (tests/otel/receiver.py), the
//! caller's `traceparent` in, and `traceparent` out to the model, the tool server and the webhook
//! receiver; a run killed mid-call and resumed by another replica is one trace; nothing is
//! exported when traces are off.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::crash::{get, wait_done};
use crate::support::expect_json;
use crate::webhooks::{Receiver, SERVER_SECRET};
use crate::worker::wait_requests;

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const API_KEY: &str = "sk-trace-test-key-never-exported";

/// The OTLP receiver process; killed when dropped.
struct Otlp {
    child: Child,
    base: String,
}

impl Drop for Otlp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Otlp {
    fn start() -> Self {
        let root = env!("CARGO_MANIFEST_DIR");
        let python = format!("{root}/target/otel-venv/bin/python");
        assert!(
            std::path::Path::new(&python).exists(),
            "{python} is missing: run tests/otel/setup.sh (scripts/test.sh does)"
        );
        let mut child = Command::new(python)
            .arg(format!("{root}/tests/otel/receiver.py"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its port");
        let port = line.trim().strip_prefix("listening on ").expect("listening line").to_owned();
        Self { child, base: format!("http://127.0.0.1:{port}") }
    }

    async fn get(&self, path: &str) -> Value {
        let response = reqwest::get(format!("{}{path}", self.base)).await.expect("GET the receiver");
        expect_json(response, StatusCode::OK).await
    }

    async fn spans(&self) -> Vec<Value> {
        self.get("/spans").await.as_array().expect("spans").clone()
    }

    /// Wait until `done` holds of the spans received.
    async fn wait_spans(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans().await;
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "never {what}; spans:\n{spans:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Traces on, exported to `otlp` in batches every 100 ms.
fn env<'a>(fake: &'a str, otlp: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("OPENAI_BASE_URL", fake),
        ("OPENAI_API_KEY", API_KEY),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
        ("AGENTD_WEBHOOK_SECRET", SERVER_SECRET),
        ("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", "127.0.0.1"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("OTEL_SERVICE_NAME", "agentd-under-test"),
    ];
    env.extend_from_slice(extra);
    env
}

/// A tool server that answers the weather and keeps each request's `traceparent`.
async fn weather_server(delay: Duration) -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/weather",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let kept = kept.clone();
            async move {
                let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
                kept.lock().expect("lock").push(header("traceparent"));
                tokio::time::sleep(delay).await;
                // A careless service echoes the credentials it was given.
                match header("authorization") {
                    Some(credentials) => format!("sunny, 21 degrees (you sent '{credentials}')"),
                    None => "sunny, 21 degrees".to_owned(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/weather"), seen)
}

/// The model's side of one run of [`crew`]: a weather call, then an answer for each task.
fn push_forecast(fake: &FakeLlm) {
    fake.push([
        FakeReply::tool_calls(&[("call_w1", "weather", json!({"city": "Oslo"}))]),
        FakeReply::text("Sunny in Oslo."),
        FakeReply::text("Oslo: sunny, 21 degrees."),
    ]);
}

fn crew(tool_url: &str, idempotent: bool) -> Value {
    json!({
        "name": "forecast",
        "agents": [{"name": "forecaster", "role": "Forecaster", "goal": "Forecast", "backstory": "Careful.",
                    "tools": ["weather"]}],
        "tasks": [
            {"name": "look", "description": "Look up the weather in {city}.", "expected_output": "The weather",
             "agent": "forecaster"},
            {"name": "write", "description": "Write a one-line forecast.", "expected_output": "A forecast",
             "agent": "forecaster"}
        ],
        "tools": [{"name": "weather", "description": "The weather in a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                   "http": {"url": tool_url, "timeout_ms": 60000}, "idempotent": idempotent}]
    })
}

async fn kickoff(base: &str, body: &Value, traceparent: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().post(format!("{base}/v1/kickoffs")).json(body);
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent).header("tracestate", "caller=1");
    }
    expect_json(request.send().await.expect("POST"), StatusCode::ACCEPTED).await
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one '{name}' span, not {}: {spans:#?}", found.len());
    found[0]
}

/// `traceparent`'s trace id and parent id.
fn parts(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[sqlx::test(migrations = false)]
async fn a_run_is_one_trace_of_genai_spans_beneath_the_callers_span(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let fake = FakeLlm::start().await.expect("fake");
    push_forecast(&fake);
    let (tool_url, tool_seen) = weather_server(Duration::ZERO).await;
    let receiver = Receiver::start();
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &[]));
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let body = json!({"crew": crew(&tool_url, true), "inputs": {"city": "Oslo"},
                      "webhooks": [{"url": receiver.url("/hook"), "events": ["run.completed"]}]});
    let queued = kickoff(&agentd.base, &body, Some(&traceparent)).await;
    assert_eq!(queued["trace_id"], CALLER_TRACE, "the run resource names its trace: {queued}");
    let id = queued["id"].as_str().expect("id").to_owned();
    let done = wait_done(&agentd.base, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["trace_id"], CALLER_TRACE);
    let events = get(&agentd.base, &format!("/v1/runs/{id}/events")).await;
    let started = events["events"].as_array().expect("events").iter().find(|e| e["type"] == "run.started");
    assert_eq!(started.expect("run.started")["data"]["trace_id"], CALLER_TRACE);

    let spans = otlp
        .wait_spans("the run's spans", |s| {
            named(s, "invoke_workflow forecast").len() == 1
                && named(s, "chat gpt-4o-mini").len() == 3
                && s.iter().any(|s| s["name"] == "POST webhook run.completed")
        })
        .await;
    let ours: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == CALLER_TRACE).collect();
    assert!(ours.iter().all(|s| s["service"] == "agentd-under-test"), "{ours:#?}");

    // The attempt, beneath the caller's span.
    let workflow = one(&spans, "invoke_workflow forecast");
    assert_eq!(
        (workflow["trace_id"].as_str(), workflow["parent_span_id"].as_str()),
        (Some(CALLER_TRACE), Some(CALLER_SPAN))
    );
    let attributes = &workflow["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "invoke_workflow");
    assert_eq!(attributes["agentd.run.id"], id.as_str());
    assert_eq!(attributes["agentd.run.attempt"], 1);
    assert_eq!(attributes["agentd.run.status"], "completed");
    assert_eq!(attributes["agentd.tenant"], "default");

    // Each task beneath it.
    let tasks = named(&spans, "invoke_agent forecaster");
    assert_eq!(tasks.len(), 2, "{spans:#?}");
    let task_of: BTreeMap<&str, &Value> =
        tasks.iter().map(|t| (t["attributes"]["agentd.task.name"].as_str().expect("task"), *t)).collect();
    for task in task_of.values() {
        assert_eq!(task["parent_span_id"], workflow["span_id"]);
        assert_eq!(task["attributes"]["gen_ai.agent.name"], "forecaster");
        assert_eq!(task["attributes"]["gen_ai.operation.name"], "invoke_agent");
    }
    let (look, write) = (task_of["look"], task_of["write"]);
    let (look_end, write_start) =
        (look["end"].as_u64().expect("end"), write["start"].as_u64().expect("start"));
    assert!(look_end <= write_start, "the tasks run in order");

    // Model calls: beneath their task, with the GenAI attributes.
    let chats = named(&spans, "chat gpt-4o-mini");
    let under = |task: &Value| chats.iter().filter(|c| c["parent_span_id"] == task["span_id"]).count();
    assert_eq!((under(look), under(write)), (2, 1), "{chats:#?}");
    for chat in &chats {
        let a = &chat["attributes"];
        assert_eq!(chat["kind"], 3, "a client span");
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert_eq!(a["gen_ai.request.model"], "gpt-4o-mini");
        assert!(a["gen_ai.response.model"].is_string(), "{a}");
        assert!(a["gen_ai.response.id"].is_string(), "{a}");
        assert!(a["gen_ai.usage.input_tokens"].as_i64() > Some(0), "{a}");
        assert!(a["gen_ai.usage.output_tokens"].is_i64(), "{a}");
        assert!(a["gen_ai.response.finish_reasons"].is_array(), "{a}");
        assert_eq!(a["agentd.call.purpose"], "turn");
        assert!(a.get("gen_ai.input.messages").is_none(), "no content without the opt-in: {a}");
    }
    // The tool call, beneath its task, between the task's two model calls.
    let tool = one(&spans, "execute_tool weather");
    assert_eq!(tool["parent_span_id"], look["span_id"]);
    let a = &tool["attributes"];
    assert_eq!(
        (a["gen_ai.tool.name"].as_str(), a["gen_ai.tool.call.id"].as_str()),
        (Some("weather"), Some("call_w1"))
    );
    assert_eq!(
        (a["gen_ai.operation.name"].as_str(), a["agentd.tool.kind"].as_str()),
        (Some("execute_tool"), Some("http"))
    );
    assert!(a.get("gen_ai.tool.call.arguments").is_none(), "{a}");

    // The kickoff's server span, beneath the caller's too.
    let server = one(&spans, "POST /v1/kickoffs");
    assert_eq!(
        (server["trace_id"].as_str(), server["parent_span_id"].as_str()),
        (Some(CALLER_TRACE), Some(CALLER_SPAN))
    );
    assert_eq!(
        (server["kind"].as_i64(), server["attributes"]["http.response.status_code"].as_i64()),
        (Some(2), Some(202))
    );

    // Out: the model's requests carry their chat span, the tool server its tool span, the webhook
    // receiver its delivery span; all of the caller's trace.
    let chat_ids: BTreeSet<&str> = chats.iter().map(|c| c["span_id"].as_str().expect("id")).collect();
    let sent: Vec<(String, String)> = fake
        .request_headers()
        .iter()
        .map(|h| parts(h.get("traceparent").expect("a model request's traceparent").to_str().expect("text")))
        .collect();
    assert_eq!(sent.len(), 3);
    for (trace, parent) in &sent {
        assert_eq!(trace, CALLER_TRACE);
        assert!(chat_ids.contains(parent.as_str()), "{parent} is a chat span");
    }
    let tool_seen = tool_seen.lock().expect("lock").clone();
    assert_eq!(tool_seen.len(), 1);
    assert_eq!(
        parts(tool_seen[0].as_deref().expect("the tool's traceparent")),
        (CALLER_TRACE.to_owned(), tool["span_id"].as_str().expect("id").to_owned())
    );
    let hooks = receiver.wait_until("the webhook arrived", |r| !r.is_empty()).await;
    let hook = hooks[0]["traceparent"].as_str().expect("the webhook's traceparent");
    let delivery = one(&spans, "POST webhook run.completed");
    assert_eq!(parts(hook), (CALLER_TRACE.to_owned(), delivery["span_id"].as_str().expect("id").to_owned()));
    assert_eq!(delivery["attributes"]["http.response.status_code"], 204);

    // No secret in any exported attribute.
    let exported = serde_json::to_string(&spans).expect("json");
    for secret in [API_KEY, SERVER_SECRET] {
        assert!(!exported.contains(secret), "a secret was exported");
    }

    // The GenAI metrics, beside the spans.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = otlp.get("/metrics").await;
        let names = metrics["names"].as_array().expect("names").clone();
        if names.contains(&json!("gen_ai.client.token.usage"))
            && names.contains(&json!("gen_ai.client.operation.duration"))
        {
            let points = metrics["points"]["gen_ai.client.token.usage"].as_array().expect("points").clone();
            assert!(
                points
                    .iter()
                    .any(|p| p["gen_ai.token.type"] == "input" && p["gen_ai.request.model"] == "gpt-4o-mini"),
                "{points:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no GenAI metrics: {metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrations = false)]
async fn a_run_killed_mid_call_and_resumed_on_another_replica_is_one_trace(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("call_w1", "weather", json!({"city": "Oslo"}))]),
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        FakeReply::text("Sunny in Oslo."),
        FakeReply::text("Oslo: sunny."),
    ]);
    let (tool_url, tool_seen) = weather_server(Duration::ZERO).await;
    let first =
        Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &[("OTEL_SERVICE_NAME", "replica-1")]));
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let body = json!({"crew": crew(&tool_url, true), "inputs": {"city": "Oslo"}});
    let id = kickoff(&first.base, &body, Some(&traceparent)).await["id"].as_str().expect("id").to_owned();
    wait_requests(&fake, 2).await;
    // What the first replica finished is exported before it dies: its first model call and the
    // tool call.
    otlp.wait_spans("the first replica's finished calls", |s| {
        named(s, "chat gpt-4o-mini").len() == 1 && named(s, "execute_tool weather").len() == 1
    })
    .await;
    assert!(!first.signal("-KILL").await.success());
    let second =
        Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &[("OTEL_SERVICE_NAME", "replica-2")]));
    let done = wait_done(&second.base, &id).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)), "{done}");
    assert_eq!(tool_seen.lock().expect("lock").len(), 1, "the tool call was not repeated");

    let spans = otlp
        .wait_spans("both attempts' spans", |s| {
            named(s, "invoke_workflow forecast").len() == 2 && named(s, "chat gpt-4o-mini").len() == 3
        })
        .await;
    // The test's polls (GET /v1/runs/…) are server spans of traces of their own: the rest, the
    // kickoff, both attempts and everything beneath them, is one trace.
    let spans: Vec<Value> =
        spans.into_iter().filter(|s| !s["name"].as_str().is_some_and(|n| n.starts_with("GET "))).collect();
    assert!(spans.iter().all(|s| s["trace_id"] == CALLER_TRACE), "one trace: {spans:#?}");
    let services: BTreeSet<&str> = spans.iter().filter_map(|s| s["service"].as_str()).collect();
    assert_eq!(services, BTreeSet::from(["replica-1", "replica-2"]), "spans from both replicas");
    let attempts = named(&spans, "invoke_workflow forecast");
    let by_attempt: BTreeMap<i64, &Value> = attempts
        .iter()
        .map(|a| (a["attributes"]["agentd.run.attempt"].as_i64().expect("attempt"), *a))
        .collect();
    let (dead, resumed) = (by_attempt[&1], by_attempt[&2]);
    for attempt in [dead, resumed] {
        assert_eq!(attempt["parent_span_id"], CALLER_SPAN, "every attempt beneath the caller's span");
    }
    // The interruption shows: the dead attempt ended by the recoverer, as an error.
    assert_eq!(dead["attributes"]["agentd.run.status"], "interrupted", "{dead}");
    assert_eq!(
        (dead["attributes"]["error.type"].as_str(), dead["status"]["code"].as_i64()),
        (Some("interrupted"), Some(2))
    );
    assert_eq!(resumed["attributes"]["agentd.run.status"], "completed");
    let (dead_end, resumed_start) =
        (dead["end"].as_u64().expect("end"), resumed["start"].as_u64().expect("start"));
    assert!(dead_end <= resumed_start, "the attempts do not overlap");
    // Nothing is orphaned: every span's parent is exported, or is the caller's.
    let ids: BTreeSet<&str> = spans.iter().map(|s| s["span_id"].as_str().expect("id")).collect();
    for span in &spans {
        let parent = span["parent_span_id"].as_str().expect("every span has a parent here");
        assert!(parent == CALLER_SPAN || ids.contains(parent), "orphan: {span:#}");
    }
    // The dead attempt's first call and tool call are beneath its (interrupted) task span.
    let first_chat = spans
        .iter()
        .find(|s| s["name"] == "chat gpt-4o-mini" && s["service"] == "replica-1")
        .expect("first call");
    let dead_task = spans.iter().find(|s| s["span_id"] == first_chat["parent_span_id"]).expect("its task");
    assert_eq!(
        (dead_task["parent_span_id"].as_str(), dead_task["attributes"]["error.type"].as_str()),
        (dead["span_id"].as_str(), Some("interrupted"))
    );
}

/// Traces off, with the receiver's address known to agentd: it is named as the metrics endpoint,
/// which alone does not turn traces on (an endpoint of all signals or of traces does). Runs with
/// and without a caller's traceparent export nothing, not even when agentd stops (a stop flushes
/// what the exporters hold), and send no traceparent out. The same setup with the traces endpoint
/// named too exports spans and metrics to that receiver: a leak would have been seen.
#[sqlx::test(migrations = false)]
async fn nothing_is_exported_when_traces_are_off(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let fake = FakeLlm::start().await.expect("fake");
    let (tool_url, tool_seen) = weather_server(Duration::ZERO).await;
    let fake_url = fake.base_url();
    let metrics_endpoint = format!("{}/v1/metrics", otlp.base);
    let traces_endpoint = format!("{}/v1/traces", otlp.base);
    let off: Vec<(&str, &str)> = env(&fake_url, &otlp.base, &[])
        .into_iter()
        .filter(|(name, _)| *name != "OTEL_EXPORTER_OTLP_ENDPOINT")
        .chain([("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics_endpoint.as_str())])
        .collect();
    let agentd = Agentd::start(&url, &off);
    let body = json!({"crew": crew(&tool_url, true), "inputs": {"city": "Oslo"}});
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    for (traceparent, trace_id) in [(None, None), (Some(traceparent.as_str()), Some(CALLER_TRACE))] {
        push_forecast(&fake);
        let run = kickoff(&agentd.base, &body, traceparent).await;
        // Without traces, a kickoff's traceparent is still kept with the run (the run says which
        // trace it belongs to); without one, the run has none.
        assert_eq!(run.get("trace_id").and_then(Value::as_str), trace_id, "{run}");
        let done = wait_done(&agentd.base, run["id"].as_str().expect("id")).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
    let (stopped, _) = agentd.stop("-TERM").await;
    assert!(stopped.success(), "{stopped:?}");
    assert!(tool_seen.lock().expect("lock").iter().all(Option::is_none), "no traceparent out");
    assert!(
        fake.request_headers().iter().all(|h| h.get("traceparent").is_none()),
        "no traceparent to the model"
    );
    assert_eq!(otlp.get("/requests").await, json!([]), "nothing exported");

    // Traces on: the same, with the traces endpoint named too.
    let on: Vec<(&str, &str)> = off
        .iter()
        .copied()
        .chain([("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces_endpoint.as_str())])
        .collect();
    let agentd = Agentd::start(&url, &on);
    push_forecast(&fake);
    let run = kickoff(&agentd.base, &body, Some(&traceparent)).await;
    let done = wait_done(&agentd.base, run["id"].as_str().expect("id")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let (stopped, _) = agentd.stop("-TERM").await;
    assert!(stopped.success(), "{stopped:?}");
    let spans =
        otlp.wait_spans("the run's spans", |s| !named(s, "invoke_workflow forecast").is_empty()).await;
    assert!(
        named(&spans, "invoke_workflow forecast").iter().all(|s| s["trace_id"] == CALLER_TRACE),
        "{spans:#?}"
    );
    let metrics = otlp.get("/metrics").await;
    assert!(
        metrics["names"].as_array().expect("names").contains(&json!("gen_ai.client.token.usage")),
        "the metrics endpoint took the GenAI metrics: {metrics}"
    );
}

#[sqlx::test(migrations = false)]
async fn json_logs_carry_the_trace_and_span_of_the_run(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let fake = FakeLlm::start().await.expect("fake");
    // A failing first call is retried, and the retry is logged within the chat span.
    fake.push([FakeReply::error(500, "try again"), FakeReply::text("Sunny."), FakeReply::text("Sunny, 21.")]);
    let (tool_url, _) = weather_server(Duration::ZERO).await;
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &[("AGENTD_LOG_FORMAT", "json")]));
    let body = json!({"crew": crew(&tool_url, true), "inputs": {"city": "Oslo"}});
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let id = kickoff(&agentd.base, &body, Some(&traceparent)).await["id"].as_str().expect("id").to_owned();
    assert_eq!(wait_done(&agentd.base, &id).await["status"], "completed");
    let spans = otlp.wait_spans("the retried call's span", |s| named(s, "chat gpt-4o-mini").len() == 2).await;
    // The run's events say the first call was retried (the waterfall marks it), not the others.
    let events = get(&agentd.base, &format!("/v1/runs/{id}/events")).await;
    let finished: Vec<&Value> =
        events["events"].as_array().expect("events").iter().filter(|e| e["type"] == "llm.finished").collect();
    assert_eq!(finished[0]["data"]["retries"], 1, "{finished:?}");
    assert!(finished[1]["data"].get("retries").is_none(), "a first-time answer says nothing: {finished:?}");
    let (_, lines) = agentd.stop("-TERM").await;
    let parsed: Vec<Value> =
        lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let retry = parsed
        .iter()
        .find(|l| l["message"].as_str().is_some_and(|m| m.contains("retrying")))
        .unwrap_or_else(|| panic!("the retry is logged: {lines:#?}"));
    assert_eq!(retry["trace_id"], CALLER_TRACE, "{retry}");
    let retried = spans
        .iter()
        .find(|s| s["name"] == "chat gpt-4o-mini" && s["events"].as_array().is_some_and(|e| !e.is_empty()))
        .expect("the retried call's span has its retry event");
    assert_eq!(retry["span_id"], retried["span_id"], "the log line names the call's span");
    assert_eq!(retried["events"][0]["name"], "gen_ai.retry");
    assert!(parsed.iter().all(|l| l["level"].is_string() && l["timestamp"].is_string()));
}

#[tokio::test]
async fn an_unsupported_otlp_protocol_is_refused_at_start_naming_the_setting() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["config"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .output()
        .expect("run agentd config");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("otel_exporter_otlp_protocol") && stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{stderr}"
    );
    assert!(stderr.contains("http/protobuf"), "{stderr}");
}

#[sqlx::test(migrations = false)]
async fn with_content_capture_spans_hold_messages_and_tool_io_but_never_a_secret(pool: PgPool) {
    const SECRET: &str = "wk-SECRET-value-0123";
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let fake = FakeLlm::start().await.expect("fake");
    push_forecast(&fake);
    let (tool_url, _) = weather_server(Duration::ZERO).await;
    let extra = [
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental"),
        ("AGENTD_SECRETS_KEY", "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio="),
    ];
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &extra));
    let stored = reqwest::Client::new()
        .put(format!("{}/v1/secrets/weather_key", agentd.base))
        .json(&json!({"value": SECRET}))
        .send()
        .await
        .expect("PUT");
    assert_eq!(stored.status(), StatusCode::CREATED);
    let mut spec = crew(&tool_url, true);
    spec["tools"][0]["http"]["headers"] =
        json!({"Authorization": {"secret": "weather_key", "prefix": "Bearer "}});
    // Streamed: the calls that answer with text time their first chunk.
    let body = json!({"crew": spec, "inputs": {"city": "Oslo"}, "stream": true});
    let id = kickoff(&agentd.base, &body, None).await["id"].as_str().expect("id").to_owned();
    assert_eq!(wait_done(&agentd.base, &id).await["status"], "completed");
    // The attempt's span ends last: once it is exported, so is everything beneath it.
    let spans = otlp
        .wait_spans("the run's spans", |s| {
            named(s, "invoke_workflow forecast").len() == 1 && named(s, "chat gpt-4o-mini").len() == 3
        })
        .await;

    // Without a traceparent, the run is a trace of its own, beneath its kickoff's request.
    let workflow = one(&spans, "invoke_workflow forecast");
    let server = one(&spans, "POST /v1/kickoffs");
    assert_eq!(workflow["trace_id"], server["trace_id"]);
    assert!(server["parent_span_id"].is_null(), "the request is the root: {server}");
    assert_eq!(workflow["parent_span_id"], server["span_id"], "{workflow}");

    let chats = named(&spans, "chat gpt-4o-mini");
    let first = chats.iter().min_by_key(|c| c["start"].as_u64()).expect("a call");
    let input: Value =
        serde_json::from_str(first["attributes"]["gen_ai.input.messages"].as_str().expect("input"))
            .expect("JSON");
    let roles: Vec<&str> =
        input.as_array().expect("messages").iter().map(|m| m["role"].as_str().expect("role")).collect();
    assert_eq!(roles.first(), Some(&"system"), "{input}");
    assert!(input.to_string().contains("Look up the weather in Oslo."), "{input}");
    let output: Value =
        serde_json::from_str(first["attributes"]["gen_ai.output.messages"].as_str().expect("output"))
            .expect("JSON");
    assert_eq!(output[0]["parts"][0]["type"], "tool_call", "{output}");
    assert_eq!(
        (output[0]["parts"][0]["name"].as_str(), output[0]["finish_reason"].as_str()),
        (Some("weather"), Some("tool_calls"))
    );
    assert!(first["attributes"].get("gen_ai.system").is_none(), "only the latest names with the opt-in");
    let timed = chats
        .iter()
        .filter(|c| c["attributes"]["gen_ai.response.time_to_first_chunk"].as_f64().is_some_and(|s| s > 0.0));
    assert_eq!(timed.count(), 2, "the two streamed text replies time their first chunk: {chats:#?}");

    let tool = one(&spans, "execute_tool weather");
    let a = &tool["attributes"];
    assert_eq!(a["gen_ai.tool.call.arguments"], json!({"city": "Oslo"}).to_string());
    assert_eq!(a["gen_ai.tool.call.result"], "sunny, 21 degrees (you sent 'Bearer [secret:weather_key]')");
    let exported = serde_json::to_string(&spans).expect("json");
    assert!(!exported.contains(SECRET), "the secret's value was exported");
    assert!(!exported.contains(API_KEY), "the provider's key was exported");

    // A prompt over 64 KiB is cut in the span (the run itself is not).
    push_forecast(&fake);
    let long = "Oslo ".repeat(20_000);
    let body = json!({"crew": crew(&tool_url, true), "inputs": {"city": long}});
    let id = kickoff(&agentd.base, &body, None).await["id"].as_str().expect("id").to_owned();
    assert_eq!(wait_done(&agentd.base, &id).await["status"], "completed");
    let spans = otlp
        .wait_spans("the long run's spans", |s| {
            named(s, "invoke_workflow forecast").len() == 2 && named(s, "chat gpt-4o-mini").len() == 6
        })
        .await;
    let of_run: BTreeSet<&str> = spans
        .iter()
        .filter(|s| s["attributes"]["agentd.run.id"] == id.as_str())
        .map(|s| s["trace_id"].as_str().expect("trace"))
        .collect();
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| {
            s["name"] == "chat gpt-4o-mini" && of_run.contains(s["trace_id"].as_str().expect("trace"))
        })
        .collect();
    assert_eq!(calls.len(), 3);
    for call in calls {
        let input = call["attributes"]["gen_ai.input.messages"].as_str().expect("input");
        assert!(input.len() <= 64 * 1024 + 3, "{} bytes", input.len());
        // The first task's prompt holds the long city; the second's does not.
        let long_prompt = call["attributes"]["agentd.task.name"] == "look";
        assert_eq!(input.ends_with('…'), long_prompt, "{} bytes", input.len());
    }
}

#[sqlx::test(migrations = false)]
async fn an_mcp_tool_call_is_an_execute_tool_span_and_the_server_gets_its_traceparent(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let otlp = Otlp::start();
    let peer = crate::engine::mcp::Peer::scripted().await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("call_m1", "scripted__lookup", json!({"order_id": "A1"}))]),
        FakeReply::text("A1 is on its way."),
    ]);
    let agentd = Agentd::start(&url, &env(&fake.base_url(), &otlp.base, &[]));
    let crew = json!({
        "name": "orders",
        "agents": [{"name": "clerk", "role": "Clerk", "goal": "Answer", "backstory": "Exact.",
                    "tools": ["scripted__lookup"]}],
        "tasks": [{"name": "t", "description": "Where is order A1?", "expected_output": "Its status", "agent": "clerk"}],
        "mcp_servers": [{"name": "scripted", "url": peer.url()}]
    });
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let id = kickoff(&agentd.base, &json!({"crew": crew}), Some(&traceparent)).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(wait_done(&agentd.base, &id).await["status"], "completed");
    let spans = otlp
        .wait_spans("the MCP call's span", |s| named(s, "execute_tool scripted__lookup").len() == 1)
        .await;
    let tool = one(&spans, "execute_tool scripted__lookup");
    let a = &tool["attributes"];
    assert_eq!(a["agentd.tool.kind"], "mcp");
    assert_eq!(a["gen_ai.tool.type"], "extension");
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["agentd.mcp.server"], "scripted");
    assert_eq!(a["gen_ai.tool.call.id"], "call_m1");
    let calls = peer.wait_calls(1).await;
    let sent = calls[0]["traceparent"].as_str().expect("the MCP server got a traceparent");
    assert_eq!(parts(sent), (CALLER_TRACE.to_owned(), tool["span_id"].as_str().expect("id").to_owned()));
}

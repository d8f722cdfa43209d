//! The scriptable fake model: `agentd fake-llm --script` over HTTP (every reply kind, `/calls`,
//! `/reset`, streaming, the 400 for an unmatched request, a broken script), and a provider of
//! `kind = "fake"` inside `agentd serve` (a crew through tool calls, a 429, a guardrail retry and
//! the switch to ReAct, marked `fake_llm` in the API).

use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::cli::{child_database_url, start_fake_llm, Agentd};

const BIN: &str = env!("CARGO_BIN_EXE_agentd");

/// A file in a fresh temporary directory, removed with it.
pub struct TempFile {
    dir: std::path::PathBuf,
    pub path: std::path::PathBuf,
}

impl TempFile {
    pub fn new(name: &str, text: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("agentd-fake-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        Self { dir, path }
    }

    pub fn add(&self, name: &str, text: &str) -> std::path::PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    fn arg(&self) -> &str {
        self.path.to_str().expect("UTF-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `agentd fake-llm`, killed when dropped.
struct Fake {
    child: std::process::Child,
    base: String,
    client: reqwest::Client,
}

impl Fake {
    fn start(script: &TempFile) -> Self {
        let (child, base) = start_fake_llm(&["--script", script.arg()]);
        Self { child, base, client: reqwest::Client::new() }
    }

    /// The server's root (without `/v1`).
    fn root(&self) -> &str {
        self.base.trim_end_matches("/v1")
    }

    async fn ask(&self, body: Value) -> reqwest::Response {
        self.client.post(format!("{}/chat/completions", self.base)).json(&body).send().await.expect("POST")
    }

    async fn calls(&self) -> Value {
        let response = self.client.get(format!("{}/calls", self.root())).send().await.expect("GET /calls");
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.expect("JSON")
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const EVERY_KIND: &str = r#"
[[rules]]
name = "slow text"
when = { message = "slowly" }
reply = { text = "Sorry for the wait.", delay_ms = 300 }

[[rules]]
name = "busy once"
when = { message = "busy" }
times = 1
reply = { error = { status = 429, message = "Rate limit reached" }, headers = { "retry-after" = "2" } }

[[rules]]
name = "no tools here"
when = { tools = true, model = "legacy-*" }
reply = { error = { status = 400, body = { error = { message = "tools are not supported by this model" } } } }

[[rules]]
name = "calculate"
when = { tools = true, call = 1, message = { regex = 'What is (\d+) times (\d+)' } }
reply = { tool_calls = [{ name = "$first_tool", arguments = { expression = "{{1}}*{{2}}" } }], usage = { prompt_tokens = 7, completion_tokens = 3 } }

[[rules]]
name = "react"
when = { tools = false, call = 1, message = "ReAct" }
reply = { react = { thought = "I will look it up", action = "$first_tool", input = { query = "{{model}}" } } }

[[rules]]
name = "after the tool"
when = { last_role = "tool" }
reply = { text = "It is {{tool_result}} (call {{call}})." }

[[rules]]
name = "fallback"
reply = { text = "Hello, {{message}}" }
"#;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn calculator_tool() -> Value {
    json!([{"type": "function", "function": {"name": "calculator", "description": "math", "parameters": {"type": "object"}}}])
}

#[tokio::test]
async fn a_script_answers_with_every_reply_kind_and_records_what_it_was_sent() {
    let script = TempFile::new("every.toml", EVERY_KIND);
    let fake = Fake::start(&script);

    // Native tool call: $first_tool with arguments from the message's groups, and usage.
    let response = fake
        .ask(json!({"model": "gpt-4o", "tools": calculator_tool(), "messages": [user("What is 6 times 7?")]}))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("JSON");
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "calculator");
    assert_eq!(call["function"]["arguments"], r#"{"expression":"6*7"}"#);
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(body["usage"], json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}));
    assert!(body["id"].as_str().is_some_and(|id| id.starts_with("chatcmpl-fake-")), "{body}");
    assert_eq!((body["object"].as_str(), body["model"].as_str()), (Some("chat.completion"), Some("gpt-4o")));

    // Text from a template, after a tool result.
    let after_tool = json!({"model": "gpt-4o", "tools": calculator_tool(), "messages": [
        user("What is 6 times 7?"),
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "42"}]});
    let body: Value = fake.ask(after_tool).await.json().await.expect("JSON");
    assert_eq!(body["choices"][0]["message"]["content"], "It is 42 (call 2).");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    // ReAct text naming the tool listed in the prompt.
    let system =
        json!({"role": "system", "content": "You are a researcher.\nTool Name: search\nTool Arguments: {}"});
    let body: Value = fake
        .ask(json!({"model": "m1", "messages": [system, user("Answer in ReAct")]}))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Thought: I will look it up\nAction: search\nAction Input: {\"query\":\"m1\"}"
    );

    // An HTTP error with a literal body (what makes agentd fall back to ReAct).
    let response =
        fake.ask(json!({"model": "legacy-7b", "tools": calculator_tool(), "messages": [user("hi")]})).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.json::<Value>().await.expect("JSON")["error"]["message"],
        "tools are not supported by this model"
    );

    // A 429 with its headers, once; then the next rule that matches.
    let response = fake.ask(json!({"model": "m", "messages": [user("busy?")]})).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "2");
    let error: Value = response.json().await.expect("JSON");
    assert_eq!(error["error"]["message"], "Rate limit reached");
    let body: Value =
        fake.ask(json!({"model": "m", "messages": [user("busy?")]})).await.json().await.expect("JSON");
    assert_eq!(body["choices"][0]["message"]["content"], "Hello, busy?");

    // A delay.
    let started = Instant::now();
    let body: Value = fake
        .ask(json!({"model": "m", "messages": [user("answer slowly")]}))
        .await
        .json()
        .await
        .expect("JSON");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(body["choices"][0]["message"]["content"], "Sorry for the wait.");

    // What the fake was sent, and which rule answered.
    let calls = fake.calls().await;
    let rules: Vec<&str> =
        calls["calls"].as_array().expect("calls").iter().map(|c| c["rule"].as_str().unwrap_or("-")).collect();
    assert_eq!(
        rules,
        ["calculate", "after the tool", "react", "no tools here", "busy once", "fallback", "slow text"]
    );
    let first = &calls["calls"][0];
    assert_eq!(
        (first["model"].as_str(), first["stream"].as_bool(), first["status"].as_u64()),
        (Some("gpt-4o"), Some(false), Some(200))
    );
    assert_eq!(first["tools"][0]["function"]["name"], "calculator");
    assert_eq!(first["messages"], json!([user("What is 6 times 7?")]));
    assert_eq!((first["call"].as_u64(), calls["calls"][1]["call"].as_u64()), (Some(1), Some(2)));
    assert_eq!(first["conversation"], calls["calls"][1]["conversation"]);
    assert_eq!(calls["calls"][4]["status"], 429);
    assert!(first["at"].as_str().is_some_and(|at| at.contains('T')), "{first}");

    // Reset: the record is empty and `times` count again.
    let reset = fake.client.post(format!("{}/reset", fake.root())).send().await.expect("POST /reset");
    assert_eq!(reset.status(), StatusCode::NO_CONTENT);
    assert_eq!(fake.calls().await["calls"], json!([]));
    let response = fake.ask(json!({"model": "m", "messages": [user("busy?")]})).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_streaming_request_gets_the_same_answer_as_chunks() {
    let script = TempFile::new(
        "stream.json",
        r#"{"rules": [
            {"when": {"tools": true}, "reply": {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}},
            {"reply": {"text": "The quick brown fox", "chunk_delay_ms": 50}}
        ]}"#,
    );
    let fake = Fake::start(&script);
    let started = Instant::now();
    let response = fake
        .ask(json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": [user("type")]}))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.expect("body");
    let chunks: Vec<&str> = text.split("\n\n").filter(|c| !c.is_empty()).collect();
    assert_eq!(chunks.last(), Some(&"data: [DONE]"));
    let events: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| serde_json::from_str(c.strip_prefix("data: ").expect("data line")).expect("JSON chunk"))
        .collect();
    assert!(events.iter().all(|e| e["object"] == "chat.completion.chunk"));
    assert!(events
        .iter()
        .all(|e| e["id"] == events[0]["id"] && e["created"].as_u64().is_some_and(|t| t > 0)));
    let typed: String =
        events.iter().filter_map(|e| e.pointer("/choices/0/delta/content").and_then(Value::as_str)).collect();
    assert_eq!(typed, "The quick brown fox");
    assert!(events.len() >= 6, "role, 4 words, finish and usage: {events:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "the chunks were spaced: {:?}",
        started.elapsed()
    );
    assert_eq!(events.last().map(|e| e["usage"]["total_tokens"].clone()), Some(json!(15)));

    let response = fake
        .ask(json!({"model": "m", "stream": true, "tools": calculator_tool(), "messages": [user("x")]}))
        .await;
    let text = response.text().await.expect("body");
    let arguments: String = text
        .split("\n\n")
        .filter_map(|c| c.strip_prefix("data: "))
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter_map(|e| {
            e.pointer("/choices/0/delta/tool_calls/0/function/arguments")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(arguments, r#"{"expression":"2+2"}"#);
    assert!(text.contains(r#""finish_reason":"tool_calls""#), "{text}");
    assert_eq!(fake.calls().await["calls"][1]["stream"], true);
}

#[tokio::test]
async fn a_request_no_rule_matches_gets_a_400_naming_it() {
    let script = TempFile::new(
        "narrow.json",
        r#"{"rules": [{"when": {"model": "only-this"}, "reply": {"text": "ok"}}]}"#,
    );
    let fake = Fake::start(&script);
    let messages = json!([user("hello"), {"role": "assistant", "content": "hi"}, user("and now?")]);
    let response =
        fake.ask(json!({"model": "other", "tools": calculator_tool(), "messages": messages})).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        body["error"]["message"],
        "no rule of the fake LLM's script matches this request: model 'other', call 2 of its conversation, last message from 'user'"
    );
    assert_eq!(body["error"]["type"], "fake_no_matching_rule");
    assert_eq!(body["error"]["request"]["last_message"], "and now?");
    assert_eq!(body["error"]["request"]["tools"], json!(["calculator"]));
    let calls = fake.calls().await;
    assert_eq!(
        (calls["calls"][0]["rule"].clone(), calls["calls"][0]["status"].clone()),
        (Value::Null, json!(400))
    );
}

#[test]
fn every_example_script_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake-llm");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/fake-llm") {
        // Every file there is a script.
        let path = entry.expect("entry").path();
        let script = agentd::fake_llm::Script::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!script.is_empty(), "{}", path.display());
        loaded += 1;
    }
    assert!(loaded >= 2, "{loaded} scripts in {}", dir.display());
}

#[test]
fn a_broken_script_stops_the_fake_with_its_error() {
    let script =
        TempFile::new("broken.json", r#"{"rules": [{"when": {"call": 0}, "reply": {"text": "x"}}]}"#);
    let output =
        Command::new(BIN).args(["fake-llm", "--script", script.arg()]).output().expect("run agentd fake-llm");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("rules[0].when.call: must be a position"), "{stderr}");
    assert!(stderr.contains("broken.json"), "{stderr}");

    let missing =
        Command::new(BIN).args(["fake-llm", "--script", "/nonexistent/script.toml"]).output().expect("run");
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("cannot read the script /nonexistent/script.toml")
    );

    let both =
        Command::new(BIN).args(["fake-llm", "--script", script.arg(), "--reply", "x"]).output().expect("run");
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
}

/// The script of a fake provider inside `agentd serve`: a two-task crew whose first model call
/// is refused once with a 429, whose first task calls the calculator, and whose second task's
/// first answer fails its guardrail; and a crew on a model that rejects native tools, whose first
/// ReAct reply cannot be parsed.
const PROVIDER_SCRIPT: &str = r#"
[[rules]]
name = "rate limited once"
when = { message = "Compute", call = 1 }
times = 1
reply = { error = { status = 429, message = "Rate limit reached for requests" }, headers = { "retry-after" = "1" } }

[[rules]]
name = "judge: fail once"
when = { system = "strict reviewer" }
times = 1
reply = { text = '{"pass": false, "reason": "the answer does not state the number"}' }

[[rules]]
name = "judge: pass"
when = { system = "strict reviewer" }
reply = { text = '{"pass": true, "reason": "it states the number"}' }

[[rules]]
name = "no native tools"
when = { model = "legacy", tools = true }
reply = { error = { status = 400, body = { error = { message = "tools are not supported by this model", type = "invalid_request_error" } } } }

[[rules]]
name = "react: garbled once"
when = { model = "legacy", tools = false }
times = 1
reply = { text = "Let me think about which tool to use." }

[[rules]]
name = "react: answer"
when = { model = "legacy", message = { regex = '^Observation: (\S+)' } }
reply = { react = { final_answer = "The sum is {{1}}" }, usage = { prompt_tokens = 7, completion_tokens = 3 } }

[[rules]]
name = "react: use the tool"
when = { model = "legacy", message = "Invalid Format", any_message = "Native tool calling is not available" }
reply = { react = { action = "$first_tool", input = { expression = "2+3" } }, usage = { prompt_tokens = 7, completion_tokens = 3 } }

[[rules]]
name = "compute"
when = { message = { regex = 'Compute (\d+)\*(\d+)' }, tools = true, call = 1 }
reply = { tool_calls = [{ name = "$first_tool", arguments = { expression = "{{1}}*{{2}}" } }] }

[[rules]]
name = "report the result"
when = { tool_result = { regex = '.' }, call = 2 }
reply = { text = "{{tool_result}}" }

[[rules]]
name = "write: redo"
when = { message = "did not pass" }
reply = { text = "Solar sails: the number is 42." }

[[rules]]
name = "write: draft"
when = { message = "Write", call = 1 }
reply = { text = "Solar sails are light." }
"#;

fn two_task_crew(model: &str) -> Value {
    json!({
        "name": "report",
        "agents": [{"name": "analyst", "role": "Analyst", "goal": "Numbers about {topic}", "backstory": "Careful.",
                    "llm": model, "tools": ["calculator"]}],
        "tasks": [
            {"name": "compute", "description": "Compute 6*7 for {topic}", "expected_output": "A number", "agent": "analyst"},
            {"name": "write", "description": "Write one sentence about {topic} with the number", "expected_output": "One sentence",
             "agent": "analyst", "guardrail": "The answer states the number"}
        ]
    })
}

async fn wait(client: &reqwest::Client, base: &str, id: &str) -> Value {
    let response =
        client.get(format!("{base}/v1/runs/{id}/wait?timeout_s=60")).send().await.expect("GET /wait");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("JSON")
}

async fn event_types(client: &reqwest::Client, base: &str, id: &str) -> Vec<String> {
    let events: Value = client
        .get(format!("{base}/v1/runs/{id}/events?limit=1000"))
        .send()
        .await
        .expect("GET events")
        .json()
        .await
        .expect("JSON");
    let events = events["events"].as_array().or_else(|| events.as_array()).cloned().unwrap_or_default();
    events.iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
}

#[sqlx::test(migrations = false)]
async fn a_fake_provider_runs_a_crew_inside_serve_and_its_runs_say_so(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let files = TempFile::new("provider.toml", PROVIDER_SCRIPT);
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let config = files.add(
        "agentd.toml",
        &format!(
            "[providers.fake]\nkind = \"fake\"\nscript = \"provider.toml\"\nbind = \"127.0.0.1:{port}\"\n"
        ),
    );
    // The real provider is unreachable: a run on it must not leave the machine.
    let env = [
        ("AGENTD_CONFIG", config.to_str().expect("path")),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "not-a-key"),
    ];
    let agentd = Agentd::start(&url, &env);
    let client = reqwest::Client::new();
    let kickoff = |crew: Value| {
        client
            .post(format!("{}/v1/kickoffs", agentd.base))
            .json(&json!({"crew": crew, "inputs": {"topic": "solar sails"}}))
            .send()
    };

    // The two-task crew: a 429 retried, a tool call, a guardrail retry.
    let response = kickoff(two_task_crew("fake/scripted")).await.expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let run: Value = response.json().await.expect("JSON");
    assert_eq!(run["fake_llm"], true, "{run}");
    let id = run["id"].as_str().expect("id").to_owned();
    let done = wait(&client, &agentd.base, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["fake_llm"], true);
    assert_eq!(done["tasks"][0]["output"]["raw"], "42");
    assert_eq!(done["output"]["raw"], "Solar sails: the number is 42.");
    assert_eq!(done["usage"]["tool_calls"], 1);
    let types = event_types(&client, &agentd.base, &id).await;
    for expected in ["tool.started", "tool.finished", "guardrail.failed", "guardrail.passed", "run.completed"]
    {
        assert!(types.iter().any(|t| t == expected), "no {expected} in {types:?}");
    }
    let failed_at = types.iter().position(|t| t == "guardrail.failed").expect("failed");
    let passed_at = types.iter().position(|t| t == "guardrail.passed").expect("passed");
    assert!(failed_at < passed_at, "{types:?}");
    let listed: Value = client
        .get(format!("{}/v1/runs?limit=10", agentd.base))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(listed["runs"][0]["fake_llm"], true, "{listed}");
    // The logs say the provider is fake, and that the first call met the scripted 429 (retried).
    let logs = agentd.log_lines();
    assert!(
        logs.iter().any(|l| l.contains("provider is a FAKE model") && l.contains("provider=fake")),
        "{logs:#?}"
    );
    let answered = |rule: &str, status: u16| {
        let status = format!("status={status}");
        logs.iter()
            .filter(|l| l.contains("fake LLM answered") && l.contains(rule) && l.contains(&status))
            .count()
    };
    assert_eq!(answered("rule=\"rate limited once\"", 429), 1, "{logs:#?}");
    assert_eq!(answered("rule=\"compute\"", 200), 1, "{logs:#?}");
    assert_eq!(answered("rule=\"judge: fail once\"", 200), 1, "{logs:#?}");
    assert!(logs.iter().any(|l| l.contains("LLM call failed; retrying")), "{logs:#?}");
    // The fake provider listens where it was told: what the model was sent, and a reset.
    let fake = format!("http://127.0.0.1:{port}");
    let calls: Value =
        client.get(format!("{fake}/calls")).send().await.expect("GET /calls").json().await.expect("JSON");
    let first = &calls["calls"][0];
    assert_eq!(
        (first["rule"].as_str(), first["status"].as_u64(), first["model"].as_str()),
        (Some("rate limited once"), Some(429), Some("scripted"))
    );
    let reported = calls["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["rule"] == "report the result")
        .expect("reported");
    assert!(
        reported["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| m["role"] == "tool" && m["content"] == "42"),
        "{reported}"
    );
    let reset = client.post(format!("{fake}/reset")).send().await.expect("POST /reset");
    assert_eq!(reset.status(), StatusCode::NO_CONTENT);

    // A model that rejects native tools: the agent switches to ReAct, is told its first ReAct reply
    // could not be read, and then uses the tool.
    let legacy = json!({
        "name": "legacy",
        "agents": [{"name": "a", "role": "Adder", "goal": "Add", "backstory": "Old.", "llm": "fake/legacy", "tools": ["calculator"]}],
        "tasks": [{"name": "sum", "description": "Add two and three", "expected_output": "A sum", "agent": "a"}]
    });
    let run: Value = kickoff(legacy).await.expect("POST").json().await.expect("JSON");
    let done = wait(&client, &agentd.base, run["id"].as_str().expect("id")).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"]["raw"], "The sum is 5");
    // Usage: the garbled reply's default 10 + 5, the action's and the answer's scripted 7 + 3.
    assert_eq!(
        (done["usage"]["prompt_tokens"].as_i64(), done["usage"]["completion_tokens"].as_i64()),
        (Some(24), Some(11))
    );
    let types = event_types(&client, &agentd.base, run["id"].as_str().expect("id")).await;
    let fallback = types.iter().position(|t| t == "agent.fallback");
    let parse_error = types.iter().position(|t| t == "agent.parse_error");
    assert!(fallback.is_some() && parse_error > fallback, "{types:?}");
    assert!(types.iter().any(|t| t == "tool.finished"), "{types:?}");

    // A request the script has no rule for fails the run with the fake's message.
    let unscripted = json!({
        "name": "unscripted",
        "agents": [{"name": "a", "role": "R", "goal": "G", "backstory": "B", "llm": "fake/scripted"}],
        "tasks": [{"name": "t", "description": "Something else entirely", "expected_output": "x", "agent": "a"}]
    });
    let run: Value = kickoff(unscripted).await.expect("POST").json().await.expect("JSON");
    let done = wait(&client, &agentd.base, run["id"].as_str().expect("id")).await;
    assert_eq!(done["status"], "failed", "{done}");
    let message = done["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no rule of the fake LLM's script matches this request"), "{done}");

    // A crew on a real provider is not marked.
    let real = json!({
        "name": "real",
        "agents": [{"name": "a", "role": "R", "goal": "G", "backstory": "B", "llm": "openai/gpt-4o-mini"}],
        "tasks": [{"name": "t", "description": "d", "expected_output": "x", "agent": "a"}]
    });
    let run: Value = kickoff(real).await.expect("POST").json().await.expect("JSON");
    assert_eq!(run["fake_llm"], false, "{run}");
}

#[sqlx::test(migrations = false)]
async fn serve_refuses_to_start_with_a_broken_fake_script(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let files = TempFile::new("bad.json", r#"{"rules": [{"reply": {"text": "{{nope}}"}}]}"#);
    let config = files.add("agentd.toml", "[providers.fake]\nkind = \"fake\"\nscript = \"bad.json\"\n");
    let output = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", &url)
        .env("AGENTD_CONFIG", &config)
        .output()
        .expect("run agentd serve");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("providers.fake: script") && stderr.contains("unknown placeholder {{nope}}"),
        "{stderr}"
    );
}

#[sqlx::test(migrations = false)]
async fn the_example_configuration_answers_agents_without_a_model_from_the_fake(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agentd-fake.toml");
    let agentd = Agentd::start(&url, &[("AGENTD_CONFIG", config)]);
    let client = reqwest::Client::new();
    let crew = json!({
        "name": "demo",
        "agents": [{"name": "a", "role": "Helper", "goal": "Help", "backstory": "Kind.", "tools": ["calculator"]},
                   {"name": "b", "role": "Writer", "goal": "Write", "backstory": "Brief."}],
        "tasks": [{"name": "count", "description": "Count", "expected_output": "A number", "agent": "a"},
                  {"name": "greet", "description": "Greet", "expected_output": "A greeting", "agent": "b",
                   "guardrail": "It greets."}]
    });
    let response = client
        .post(format!("{}/v1/kickoffs", agentd.base))
        .json(&json!({"crew": crew}))
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let run: Value = response.json().await.expect("JSON");
    assert_eq!(run["fake_llm"], true, "{run}");
    let done = wait(&client, &agentd.base, run["id"].as_str().expect("id")).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["tasks"][0]["output"]["raw"],
        "The tool said 42. (This answer comes from agentd's fake model.)"
    );
    assert_eq!(done["output"]["raw"], "Hello from agentd's fake model.");
}

pub const SLOW_SCRIPT: &str = r#"
[[rules]]
name = "slow"
reply = { text = "Final Answer: late", delay_ms = 20000 }
"#;

/// A one-task crew on the fake provider.
pub fn slow_crew() -> Value {
    json!({
        "name": "slow",
        "agents": [{"name": "a", "role": "Analyst", "goal": "Answer", "backstory": "Slow.", "llm": "fake/slow"}],
        "tasks": [{"name": "t", "description": "Answer slowly", "expected_output": "An answer", "agent": "a"}]
    })
}

#[sqlx::test(migrations = false)]
async fn cancels_and_hand_backs_are_not_errors_in_the_log(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let files = TempFile::new("slow.toml", SLOW_SCRIPT);
    let config = files.add("agentd.toml", "[providers.fake]\nkind = \"fake\"\nscript = \"slow.toml\"\n");
    let env = [
        ("AGENTD_CONFIG", config.to_str().expect("path")),
        ("AGENTD_SHUTDOWN_GRACE_S", "1"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "not-a-key"),
    ];
    let agentd = Agentd::start(&url, &env);
    let client = reqwest::Client::new();
    let base = agentd.base.clone();
    let start = |crew: Value| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let response = client
                .post(format!("{base}/v1/kickoffs"))
                .json(&json!({"crew": crew, "inputs": {}}))
                .send()
                .await
                .expect("POST");
            assert_eq!(response.status(), StatusCode::ACCEPTED);
            let run: Value = response.json().await.expect("JSON");
            let id = run["id"].as_str().expect("id").to_owned();
            // Running: the model has been asked.
            for _ in 0..200 {
                if event_types(&client, &base, &id).await.iter().any(|t| t == "llm.started") {
                    return id;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("run {id} never asked the model");
        }
    };
    // A user cancels a running run.
    let cancelled = start(slow_crew()).await;
    let response = client.post(format!("{base}/v1/runs/{cancelled}/cancel")).send().await.expect("cancel");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert_eq!(wait(&client, &base, &cancelled).await["status"], "cancelled");
    // A shutdown hands a running run back to the queue.
    let handed_back = start(slow_crew()).await;
    let (exited, logs) = agentd.stop("-TERM").await;
    assert!(exited.success(), "{exited:?}");
    let store = agentd::store::Store::new(pool.clone());
    let id = agentd::domain::RunId(uuid::Uuid::parse_str(&handed_back).expect("uuid"));
    let run = store.get_run(id).await.expect("get").expect("run");
    assert_eq!(run.status, agentd::domain::RunStatus::Queued, "handed back");
    // Both are normal operation: logged, but not as errors an operator must look at.
    let errors: Vec<&String> = logs.iter().filter(|l| l.contains(" ERROR ")).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(logs.iter().filter(|l| l.contains("the run stopped: cancelled")).count() >= 2, "{logs:#?}");
}

/// The fake's ReAct replies are what the engine's parser reads: an action with JSON input, then a
/// final answer (the fake is its own crate; this is where both meet).
#[tokio::test]
async fn react_replies_are_what_the_engine_parses() {
    use agentd::engine::react::{self, ActionInput, ReactStep};
    let script = agentd::fake_llm::Script::from_value(json!({"rules": [
        {"when": {"call": 1}, "reply": {"react": {"action": "$first_tool", "input": {"expression": "{{model}}"}}}},
        {"when": {"call": 2}, "reply": {"react": {"thought": "done", "final_answer": "It is {{message}}"}}},
    ]}))
    .expect("a valid script");
    let fake = agentd::fake_llm::FakeLlm::start().await.expect("fake");
    fake.set_script(Some(std::sync::Arc::new(script)));
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", fake.base_url());
    let system = "You are a calculator.\nTool Name: calculator\nTool Arguments: {}\nTool Description: math";
    let (client, url) = (&client, &url);
    let reply_text = |body: Value| async move {
        let response = client.post(url).json(&body).send().await.expect("POST");
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("JSON");
        body["choices"][0]["message"]["content"].as_str().expect("content").to_owned()
    };
    let text = reply_text(json!({"model": "1+1", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "go"}]}))
    .await;
    match react::parse(&text).expect("parses") {
        ReactStep::Action { tool, input: ActionInput::Json(input), .. } => {
            assert_eq!((tool.as_str(), input), ("calculator", json!({"expression": "1+1"})));
        }
        other => panic!("not an action: {other:?} from {text}"),
    }
    let text = reply_text(json!({"model": "m", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "go"},
        {"role": "assistant", "content": text}, {"role": "user", "content": "Observation: 2"}]}))
    .await;
    assert_eq!(
        react::parse(&text).expect("parses"),
        ReactStep::Final { thought: "done".into(), output: "It is Observation: 2".into() }
    );
}

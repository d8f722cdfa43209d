//! The engine against a scripted model and an in-memory journal: no network, no database.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::journal::{
    Journal, JournalError, JournalFuture, MemoryJournal, NewMessage, RunChange, Snapshot, Step, TaskChange,
    ToolCallOutcome, ToolCallStart, UsageDelta,
};
use super::{Engine, EngineError};
use crate::domain::{CrewSpec, ErrorKind, EventType};
use crate::llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmFuture, LlmRegistry, Role,
    TokenUsage, ToolCallRequest,
};
use crate::tools::egress::EgressPolicy;
use crate::tools::http::Outbound;
use crate::tools::{Tool, ToolFuture, ToolInfo};

type Reply = Result<ChatResponse, LlmError>;

/// A model that answers from a script and remembers every request.
#[derive(Default)]
struct ScriptedLlm {
    replies: Mutex<VecDeque<Reply>>,
    /// Replies for requests to a given model, before the shared ones.
    by_model: Mutex<std::collections::HashMap<String, VecDeque<Reply>>>,
    requests: Mutex<Vec<ChatRequest>>,
    /// When each request arrived.
    arrivals: Mutex<Vec<std::time::Instant>>,
    hang: bool,
}

impl ScriptedLlm {
    fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into()), ..Self::default() })
    }

    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().expect("lock").clone()
    }

    fn arrivals(&self) -> Vec<std::time::Instant> {
        self.arrivals.lock().expect("lock").clone()
    }
}

impl LlmClient for ScriptedLlm {
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        self.requests.lock().expect("lock").push(request.clone());
        self.arrivals.lock().expect("lock").push(std::time::Instant::now());
        let own = self.by_model.lock().expect("lock").get_mut(&request.model).and_then(VecDeque::pop_front);
        let reply = own.or_else(|| self.replies.lock().expect("lock").pop_front());
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            reply.unwrap_or_else(|| Err(LlmError::new(LlmErrorKind::Other, "script exhausted")))
        })
    }
}

fn text(content: &str) -> Reply {
    Ok(ChatResponse {
        content: Some(content.to_owned()),
        tool_calls: Vec::new(),
        finish_reason: Some("stop".into()),
        usage: TokenUsage { prompt_tokens: 10, completion_tokens: 5 },
    })
}

fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    let tool_calls = calls
        .iter()
        .map(|(id, name, args)| ToolCallRequest {
            id: (*id).into(),
            name: (*name).into(),
            arguments: args.to_string(),
        })
        .collect();
    Ok(ChatResponse {
        content: None,
        tool_calls,
        finish_reason: Some("tool_calls".into()),
        usage: TokenUsage::default(),
    })
}

fn failure(kind: LlmErrorKind, message: &str) -> Reply {
    Err(LlmError::new(kind, message))
}

/// A tool that echoes its `text` argument, counts calls, and can wait at a barrier.
struct Echo {
    info: ToolInfo,
    calls: AtomicUsize,
    barrier: Option<Arc<tokio::sync::Barrier>>,
    /// How long a call takes.
    delay: Duration,
}

fn echo(name: &str, idempotent: bool) -> Arc<Echo> {
    Arc::new(Echo {
        info: ToolInfo {
            name: name.into(),
            description: format!("{name} echoes"),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            idempotent,
        },
        calls: AtomicUsize::new(0),
        barrier: None,
        delay: Duration::ZERO,
    })
}

impl Tool for Echo {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value) -> ToolFuture<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if let Some(barrier) = &self.barrier {
                tokio::time::timeout(Duration::from_secs(5), barrier.wait())
                    .await
                    .map_err(|_| "the other call never ran alongside".to_owned())?;
            }
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            Ok(format!("echo: {}", arguments["text"].as_str().unwrap_or_default()))
        })
    }
}

fn engine(llm: Arc<ScriptedLlm>, native: bool, tools: Vec<Arc<dyn Tool>>) -> Engine {
    let registry = LlmRegistry::new("openai/test-model").with_client("openai", llm, native);
    let outbound = Outbound::new(EgressPolicy::default(), Duration::from_secs(5), 10_000).expect("outbound");
    Engine::new(registry, Arc::new(outbound)).with_tools(tools)
}

fn crew(tools: Value, tool_calling: &str, extra: Value) -> CrewSpec {
    let mut spec = json!({
        "name": "c",
        "agents": [{"name": "a", "role": "Analyst of {topic}", "goal": "Answer", "backstory": "Precise.",
                    "tools": tools, "tool_calling": tool_calling, "max_iter": 5}],
        "tasks": [{"name": "t", "description": "Study {topic}", "expected_output": "A sentence", "agent": "a"}]
    });
    merge(&mut spec, extra);
    CrewSpec::from_json(spec).expect("crew")
}

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

fn inputs() -> Map<String, Value> {
    json!({"topic": "tides"}).as_object().cloned().expect("object")
}

async fn run(engine: &Engine, crew: &CrewSpec, journal: &MemoryJournal) -> Result<String, EngineError> {
    engine.run(crew, &inputs(), journal, &CancellationToken::new()).await.map(|o| o.raw)
}

fn event_types(journal: &MemoryJournal) -> Vec<&'static str> {
    journal.events().iter().map(|e| e.event_type.as_str()).collect()
}

fn roles(journal: &MemoryJournal) -> Vec<Role> {
    journal.snapshot().messages.iter().map(|m| m.message.role).collect()
}

#[tokio::test]
async fn native_tool_call_then_final_answer() {
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "calculator", json!({"expression": "2*(3+4)"}))]),
        text("The answer is 14."),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!(["calculator"]), "auto", json!({}));
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "The answer is 14.");

    assert_eq!(
        event_types(&journal),
        [
            "task.started",
            "llm.started",
            "llm.finished",
            "tool.started",
            "tool.finished",
            "llm.started",
            "llm.finished",
            "agent.final_answer",
            "task.completed",
            "run.completed"
        ]
    );
    use Role::*;
    assert_eq!(roles(&journal), [System, User, Assistant, Tool, User, Assistant]);
    let snapshot = journal.snapshot();
    assert_eq!(snapshot.messages[3].message.content.as_deref(), Some("14"));
    assert!(snapshot.messages[0].message.content.as_deref().is_some_and(|s| s.contains("Analyst of tides")));
    assert!(snapshot.messages[1].message.content.as_deref().is_some_and(|s| s.contains("Study tides")));
    assert_eq!(
        snapshot.tool_calls[0].outcome,
        Some(ToolCallOutcome::Succeeded { result: "14".into(), cached: false })
    );
    let requests = llm.requests();
    assert_eq!(requests[0].tools.len(), 1);
    assert!(requests[0].stop.is_empty());
    assert_eq!(requests[1].messages.len(), 5, "the tool result and the reflection prompt were sent");
    let usage = journal.usage();
    assert_eq!((usage.llm_calls, usage.prompt_tokens, usage.tool_calls), (2, 10, 1));
    assert!(matches!(journal.run(), Some(RunChange::Completed { .. })));
    // One commit before each LLM call and one at the end: the calculator is idempotent and quick,
    // so its start and end went with the second call's.
    assert_eq!(journal.commits(), 3);
}

/// A journal whose commits of replayable steps wait until the model has been asked (or fail).
struct GatedJournal {
    inner: MemoryJournal,
    llm: Arc<ScriptedLlm>,
    fail: bool,
}

impl Journal for GatedJournal {
    fn load(&self) -> JournalFuture<'_, Snapshot> {
        self.inner.load()
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        Box::pin(async move {
            if step.is_replayable() {
                let asked = async {
                    while self.llm.requests().is_empty() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                };
                tokio::time::timeout(Duration::from_secs(5), asked)
                    .await
                    .map_err(|_| JournalError::Storage("the model was never asked".into()))?;
                if self.fail {
                    return Err(JournalError::Fenced);
                }
            }
            self.inner.commit(step).await
        })
    }
}

#[tokio::test]
async fn a_task_start_is_committed_while_the_model_is_asked() {
    let llm = ScriptedLlm::new(vec![text("done")]);
    let gated = engine(llm.clone(), true, vec![]);
    let journal = GatedJournal { inner: MemoryJournal::new(&["t"]), llm: llm.clone(), fail: false };
    let crew = crew(json!([]), "native", json!({}));
    let output = gated.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.raw, "done");
    assert_eq!(journal.inner.commits(), 2, "the start, then the answer with the task's end");
    assert_eq!(
        event_types(&journal.inner),
        [
            "task.started",
            "llm.started",
            "llm.finished",
            "agent.final_answer",
            "task.completed",
            "run.completed"
        ]
    );

    // A start that cannot be committed (the lease is lost) stops the run, reply or not.
    let llm = ScriptedLlm::new(vec![text("done")]);
    let fenced = engine(llm.clone(), true, vec![]);
    let journal = GatedJournal { inner: MemoryJournal::new(&["t"]), llm, fail: true };
    let result = fenced.run(&crew, &inputs(), &journal, &CancellationToken::new()).await;
    assert!(matches!(result, Err(EngineError::Journal(JournalError::Fenced))), "{result:?}");
    assert_eq!(journal.inner.commits(), 0);
}

#[test]
fn only_starts_and_prompts_are_replayable() {
    let prompt = |message: ChatMessage| NewMessage {
        conversation: "t".into(),
        task: "t".into(),
        agent: "a".into(),
        message,
        compacts: false,
    };
    let start = Step {
        messages: vec![prompt(ChatMessage::system("s")), prompt(ChatMessage::user("u"))],
        tasks: vec![TaskChange::Started { task: "t".into() }],
        ..Step::default()
    };
    assert!(start.is_replayable());
    let reply = Step { messages: vec![prompt(ChatMessage::assistant("a"))], ..start.clone() };
    let summary = Step {
        messages: vec![NewMessage { compacts: true, ..prompt(ChatMessage::user("sum")) }],
        ..start.clone()
    };
    let usage = Step { usage: UsageDelta { llm_calls: 1, ..UsageDelta::default() }, ..start.clone() };
    let ended = Step { run: Some(RunChange::AwaitingInput), ..start.clone() };
    for step in [reply, summary, usage, ended] {
        assert!(!step.is_replayable(), "{step:?}");
    }
}

#[tokio::test]
async fn a_call_is_journaled_before_it_runs_unless_idempotent_and_quick() {
    for (idempotent, delay, commits) in [(true, 0, 3), (false, 0, 4), (true, 50, 4)] {
        let tool = Arc::new(Echo {
            delay: Duration::from_millis(delay),
            ..Arc::into_inner(echo("echo", idempotent)).expect("fresh")
        });
        let llm = ScriptedLlm::new(vec![calls(&[("c1", "echo", json!({"text": "a"}))]), text("done")]);
        let engine = engine(llm, true, vec![tool.clone()]);
        let journal = MemoryJournal::new(&["t"]);
        run(&engine, &crew(json!(["echo"]), "native", json!({})), &journal).await.expect("run");
        let case = format!("idempotent {idempotent}, {delay} ms");
        assert_eq!(journal.commits(), commits, "{case}");
        assert_eq!(
            journal.snapshot().tool_calls[0].outcome,
            Some(ToolCallOutcome::Succeeded { result: "echo: a".into(), cached: false }),
            "{case}"
        );
        assert_eq!(tool.calls.load(Ordering::SeqCst), 1, "{case}");
    }
}

#[tokio::test]
async fn parallel_native_calls_run_concurrently() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tool =
        Arc::new(Echo { barrier: Some(barrier), ..Arc::into_inner(echo("echo", true)).expect("fresh") });
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "echo", json!({"text": "a"})), ("c2", "echo", json!({"text": "b"}))]),
        text("done"),
    ]);
    let engine = engine(llm, true, vec![tool.clone()]);
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &crew(json!(["echo"]), "native", json!({})), &journal).await.expect("run");
    let results: Vec<_> = journal.snapshot().tool_calls.into_iter().map(|c| c.outcome).collect();
    assert_eq!(
        results,
        [
            Some(ToolCallOutcome::Succeeded { result: "echo: a".into(), cached: false }),
            Some(ToolCallOutcome::Succeeded { result: "echo: b".into(), cached: false })
        ]
    );
}

/// Serve `body` on `POST /lookup`; returns the URL and a counter of requests.
async fn lookup_server(body: &'static str) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(move |axum::Json(args): axum::Json<Value>| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                format!("{body} ({})", args["order_id"].as_str().unwrap_or_default())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/lookup"), hits)
}

fn lookup_tool(url: &str, options: Value) -> Value {
    let mut tool = json!({"name": "lookup_order", "description": "Look up an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"url": url}});
    merge(&mut tool, options);
    tool
}

fn local_engine(llm: Arc<ScriptedLlm>) -> Engine {
    let registry = LlmRegistry::new("openai/test-model").with_client("openai", llm, true);
    let policy = EgressPolicy::parse("127.0.0.1/32").expect("policy");
    let outbound = Outbound::new(policy, Duration::from_secs(5), 10_000).expect("outbound");
    Engine::new(registry, Arc::new(outbound))
}

#[tokio::test]
async fn result_as_answer_runs_alone_and_ends_the_task() {
    let (url, hits) = lookup_server("shipped").await;
    let llm = ScriptedLlm::new(vec![calls(&[
        ("c1", "lookup_order", json!({"order_id": "42"})),
        ("c2", "calculator", json!({"expression": "1+1"})),
    ])]);
    let engine = local_engine(llm.clone());
    let tools = json!([lookup_tool(&url, json!({"result_as_answer": true}))]);
    let crew = crew(json!(["lookup_order", "calculator"]), "native", json!({"tools": tools}));
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "shipped (42)");
    assert_eq!((hits.load(Ordering::SeqCst), llm.requests().len()), (1, 1), "no LLM call after the answer");
    let snapshot = journal.snapshot();
    assert_eq!(snapshot.tool_calls.len(), 1, "only the first call ran");
    let skipped = snapshot
        .messages
        .iter()
        .find(|m| m.message.tool_call_id.as_deref() == Some("c2"))
        .expect("c2 answered");
    assert!(skipped.message.content.as_deref().is_some_and(|c| c.starts_with("Not executed")));
}

#[tokio::test]
async fn usage_caps_refuse_further_calls() {
    let (url, hits) = lookup_server("found").await;
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]),
        calls(&[("c2", "lookup_order", json!({"order_id": "2"}))]),
        text("done"),
    ]);
    let engine = local_engine(llm);
    let tools = json!([lookup_tool(&url, json!({"max_usage_count": 1}))]);
    let crew = crew(json!(["lookup_order"]), "native", json!({"tools": tools}));
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &crew, &journal).await.expect("run");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let outcome = journal.snapshot().tool_calls[1].outcome.clone();
    assert!(
        matches!(outcome, Some(ToolCallOutcome::Failed { ref error }) if error.contains("usage limit of 1")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn outbound_requests_to_private_addresses_are_blocked() {
    let (url, hits) = lookup_server("secret").await;
    let llm =
        ScriptedLlm::new(vec![calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]), text("done")]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!(["lookup_order"]), "native", json!({"tools": [lookup_tool(&url, json!({}))]}));
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &crew, &journal).await.expect("run");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let outcome = journal.snapshot().tool_calls[0].outcome.clone();
    assert!(
        matches!(outcome, Some(ToolCallOutcome::Failed { ref error }) if error.contains("blocked")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn react_with_damaged_text_and_parse_error_recovery() {
    let llm = ScriptedLlm::new(vec![
        text("I should compute this."),
        text("**Thought:** use the tool\n**Action:** Calculator\n**Action Input:** {\"expression\": \"6*7\""),
        text("Thought: I now know the final answer\nFinal Answer: 42"),
    ]);
    let engine = engine(llm.clone(), false, vec![]);
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(
        run(&engine, &crew(json!(["calculator"]), "auto", json!({})), &journal).await.expect("run"),
        "42"
    );
    let types = event_types(&journal);
    assert!(types.contains(&"agent.parse_error") && types.contains(&"agent.thought"), "{types:?}");
    let requests = llm.requests();
    assert!(requests.iter().all(|r| r.tools.is_empty() && r.stop == ["\nObservation:"]));
    assert!(requests[0].messages[0].content.as_deref().is_some_and(|s| s.contains("Action Input:")));
    let last = requests[2].messages.last().and_then(|m| m.content.clone()).unwrap_or_default();
    assert_eq!(last, "Observation: 42");
    assert!(requests[1]
        .messages
        .last()
        .and_then(|m| m.content.clone())
        .is_some_and(|c| c.contains("Invalid Format")));
}

#[tokio::test]
async fn native_tools_rejected_falls_back_to_react() {
    let llm = ScriptedLlm::new(vec![
        failure(LlmErrorKind::ToolsUnsupported, "this model does not support tools"),
        text("Thought: t\nAction: calculator\nAction Input: {\"expression\": \"1+2\"}"),
        text("Final Answer: 3"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(
        run(&engine, &crew(json!(["calculator"]), "auto", json!({})), &journal).await.expect("run"),
        "3"
    );
    let fallback =
        journal.events().into_iter().find(|e| e.event_type == EventType::AgentFallback).expect("fallback");
    assert_eq!(
        (fallback.data["from"].as_str(), fallback.data["to"].as_str()),
        (Some("native"), Some("react"))
    );
    let requests = llm.requests();
    assert_eq!(requests[0].tools.len(), 1);
    assert!(requests[1].tools.is_empty() && requests[1].stop == ["\nObservation:"]);
}

#[tokio::test]
async fn max_iter_forces_a_final_answer_without_tools() {
    let call = || calls(&[("c", "calculator", json!({"expression": "1"}))]);
    let mut replies: Vec<Reply> = (0..2).map(|_| call()).collect();
    replies.push(text("Best answer: 1"));
    let llm = ScriptedLlm::new(replies);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!(["calculator"]), "native", json!({"agents": [{"max_iter": 2}]}));
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Best answer: 1");
    assert!(event_types(&journal).contains(&"agent.max_iter"));
    let last = llm.requests().pop().expect("request");
    assert!(last.tools.is_empty());
    assert!(last
        .messages
        .last()
        .and_then(|m| m.content.clone())
        .is_some_and(|c| c.contains("MUST give your absolute best")));
}

#[tokio::test]
async fn context_overflow_summarises_and_retries() {
    let llm = ScriptedLlm::new(vec![
        failure(LlmErrorKind::ContextWindowExceeded, "maximum context length"),
        text("summary of the task"),
        text("final after summary"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(
        run(&engine, &crew(json!([]), "auto", json!({})), &journal).await.expect("run"),
        "final after summary"
    );
    let requests = llm.requests();
    assert!(requests[1].messages[1].content.as_deref().is_some_and(|c| c.contains("Summarize")));
    let retried = &requests[2].messages;
    assert_eq!(retried.len(), 2);
    assert!(retried[1].content.as_deref().is_some_and(|c| c.contains("summary of the task")));
    assert!(journal.snapshot().messages.iter().any(|m| m.compacts));
    assert_eq!(journal.snapshot().conversation("t").len(), 3, "system, summary, answer");
}

#[tokio::test]
async fn output_schema_violations_are_fed_back_then_accepted() {
    let llm = ScriptedLlm::new(vec![text("just prose"), text("{\"answer\": 7}")]);
    let engine = engine(llm.clone(), true, vec![]);
    let schema =
        json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let crew = crew(json!([]), "auto", json!({"tasks": [{"output_schema": schema}]}));
    let journal = MemoryJournal::new(&["t"]);
    let output = engine.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.json, Some(json!({"answer": 7})));
    let feedback = llm.requests()[1].messages.last().and_then(|m| m.content.clone()).unwrap_or_default();
    assert!(feedback.contains("not JSON"), "{feedback}");
}

#[tokio::test]
async fn output_schema_gives_up_after_three_retries() {
    let llm = ScriptedLlm::new((0..4).map(|_| text("{\"answer\": \"x\"}")).collect());
    let engine = engine(llm, true, vec![]);
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}});
    let crew = crew(json!([]), "auto", json!({"tasks": [{"output_schema": schema}]}));
    let journal = MemoryJournal::new(&["t"]);
    let error = run(&engine, &crew, &journal).await.expect_err("fails");
    assert!(matches!(error, EngineError::Failed { kind: ErrorKind::LlmError, .. }), "{error:?}");
    assert_eq!(&event_types(&journal)[event_types(&journal).len() - 2..], ["task.failed", "run.failed"]);
}

#[tokio::test]
async fn cache_hits_unknown_tools_and_bad_arguments_become_observations() {
    let tool = echo("echo", true);
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "echo", json!({"text": "x"}))]),
        calls(&[("c2", "ECHO", json!({"text": "x"}))]),
        calls(&[("c3", "nope", json!({}))]),
        calls(&[("c4", "echo", json!({"text": 5}))]),
        text("done"),
    ]);
    let engine = engine(llm, true, vec![tool.clone()]);
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &crew(json!(["echo"]), "native", json!({})), &journal).await.expect("run");
    assert_eq!(tool.calls.load(Ordering::SeqCst), 1, "the second call was served from the cache");
    let outcomes: Vec<_> =
        journal.snapshot().tool_calls.into_iter().map(|c| c.outcome.expect("ended")).collect();
    assert_eq!(outcomes[1], ToolCallOutcome::Succeeded { result: "echo: x".into(), cached: true });
    let ToolCallOutcome::Failed { error } = &outcomes[2] else { panic!("unknown tool succeeded") };
    assert!(error.contains("does not exist") && error.contains("echo"), "{error}");
    let ToolCallOutcome::Failed { error } = &outcomes[3] else { panic!("bad arguments accepted") };
    assert!(error.contains("$.text"), "{error}");
    let finished = journal
        .events()
        .into_iter()
        .filter(|e| e.event_type == EventType::ToolFinished)
        .nth(1)
        .expect("cached");
    assert_eq!(finished.data["cached"], true);
}

#[tokio::test]
async fn resume_reruns_idempotent_and_fails_other_interrupted_calls() {
    for (idempotent, expected_runs) in [(true, 1), (false, 0)] {
        let tool = echo("echo", idempotent);
        let llm = ScriptedLlm::new(vec![text("final")]);
        let engine = engine(llm.clone(), true, vec![tool.clone()]);
        let crew = crew(json!(["echo"]), "native", json!({}));
        let journal = MemoryJournal::new(&["t"]);
        // The journal as a crash left it: the reply asking for the tool, the call started.
        let reply = ChatMessage {
            role: Role::Assistant,
            content: None,
            tool_calls: vec![ToolCallRequest {
                id: "c1".into(),
                name: "echo".into(),
                arguments: "{\"text\": \"y\"}".into(),
            }],
            tool_call_id: None,
            images: Vec::new(),
        };
        let message = |m: ChatMessage| super::journal::NewMessage {
            conversation: "t".into(),
            task: "t".into(),
            agent: "a".into(),
            message: m,
            compacts: false,
        };
        let step = Step {
            messages: vec![
                message(ChatMessage::system("s")),
                message(ChatMessage::user("u")),
                message(reply),
            ],
            tool_starts: vec![ToolCallStart {
                id: "t#1/c1".into(),
                conversation: "t".into(),
                task: "t".into(),
                agent: "a".into(),
                tool: "echo".into(),
                arguments: json!({"text": "y"}),
            }],
            tasks: vec![super::journal::TaskChange::Started { task: "t".into() }],
            ..Step::default()
        };
        super::journal::Journal::commit(&journal, step).await.expect("seed");
        assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "final");
        assert_eq!(tool.calls.load(Ordering::SeqCst), expected_runs);
        assert_eq!(llm.requests().len(), 1, "the completed LLM call was not repeated");
        let outcome = journal.snapshot().tool_calls[0].outcome.clone().expect("ended");
        match idempotent {
            true => {
                assert_eq!(outcome, ToolCallOutcome::Succeeded { result: "echo: y".into(), cached: false })
            }
            false => assert!(
                matches!(outcome, ToolCallOutcome::Failed { ref error } if error.contains("not idempotent"))
            ),
        }
        let tool_message = &llm.requests()[0].messages[3];
        assert_eq!(tool_message.tool_call_id.as_deref(), Some("c1"));
    }
}

#[tokio::test]
async fn later_tasks_see_earlier_outputs_and_finished_tasks_are_skipped() {
    let llm = ScriptedLlm::new(vec![text("first output"), text("second output")]);
    let engine = engine(llm.clone(), true, vec![]);
    let extra = json!({"tasks": [{}, {"name": "t2", "description": "Continue", "expected_output": "More", "agent": "a"}]});
    let mut spec = serde_json::to_value(crew(json!([]), "auto", json!({}))).expect("json");
    merge(&mut spec, extra);
    let crew = CrewSpec::from_json(spec).expect("crew");
    let journal = MemoryJournal::new(&["t", "t2"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "second output");
    let second = &llm.requests()[1].messages[1];
    assert!(second.content.as_deref().is_some_and(|c| c.contains("first output")), "{second:?}");
    // Running again finds both tasks done: no LLM call.
    let again = run(&engine, &crew, &journal).await.expect("rerun");
    assert_eq!((again.as_str(), llm.requests().len()), ("second output", 2));
}

#[tokio::test]
async fn cancellation_abandons_a_hanging_call() {
    let llm = Arc::new(ScriptedLlm { hang: true, ..ScriptedLlm::default() });
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!([]), "auto", json!({}));
    let journal = MemoryJournal::new(&["t"]);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let result =
        tokio::time::timeout(Duration::from_secs(5), engine.run(&crew, &inputs(), &journal, &cancel)).await;
    assert_eq!(result.expect("returned promptly"), Err(EngineError::Cancelled));
}

#[tokio::test]
async fn llm_failures_fail_the_task_and_the_run() {
    let llm = ScriptedLlm::new(vec![failure(LlmErrorKind::Authentication, "bad key")]);
    let engine = engine(llm, true, vec![]);
    let journal = MemoryJournal::new(&["t"]);
    let error = run(&engine, &crew(json!([]), "auto", json!({})), &journal).await.expect_err("fails");
    assert!(matches!(error, EngineError::Failed { kind: ErrorKind::LlmError, .. }));
    let Some(RunChange::Failed { error }) = journal.run() else { panic!("run not failed") };
    assert!(error.message.contains("bad key"));
    assert_eq!(journal.snapshot().tasks[0].status, crate::domain::TaskStatus::Failed);
}

#[tokio::test]
async fn hierarchical_manager_delegates_to_a_coworker() {
    let llm = ScriptedLlm::new(vec![
        calls(&[(
            "d0",
            "delegate_work_to_coworker",
            json!({"task": "Find the depth", "context": "Of the sea", "coworker": "Nobody"}),
        )]),
        calls(&[(
            "d1",
            "delegate_work_to_coworker",
            json!({"task": "Find the depth", "context": "Of the sea", "coworker": "analyst of tides"}),
        )]),
        text("The depth is 3 km."),
        text("Report: the depth is 3 km."),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let extra = json!({"process": "hierarchical", "manager_llm": "openai/manager-model"});
    let mut spec = serde_json::to_value(crew(json!([]), "auto", extra)).expect("json");
    spec["tasks"][0].as_object_mut().expect("task").remove("agent");
    let crew = CrewSpec::from_json(spec).expect("crew");
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report: the depth is 3 km.");

    let snapshot = journal.snapshot();
    let outcomes: Vec<_> = snapshot.tool_calls.iter().map(|c| c.outcome.clone().expect("ended")).collect();
    assert!(
        matches!(&outcomes[0], ToolCallOutcome::Failed { error } if error.contains("not found")),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes[1],
        ToolCallOutcome::Succeeded { result: "The depth is 3 km.".into(), cached: false }
    );
    let delegated = snapshot.conversation("t#2/d1");
    assert_eq!(delegated.len(), 3, "the coworker's own conversation: system, task, answer");
    assert!(delegated[1]
        .content
        .as_deref()
        .is_some_and(|c| c.contains("Find the depth") && c.contains("Of the sea")));
    let requests = llm.requests();
    assert_eq!(requests[0].model, "manager-model");
    assert!(requests[0].messages[0].content.as_deref().is_some_and(|c| c.contains("Crew Manager")));
    assert_eq!(requests[2].model, "test-model");
    let coworker_events = journal.events().into_iter().filter(|e| e.agent.as_deref() == Some("a")).count();
    assert!(coworker_events >= 3, "the coworker's steps are events of the task");
}

#[tokio::test]
async fn a_guardrail_failure_is_fed_back_then_the_revised_answer_passes() {
    let llm = ScriptedLlm::new(vec![
        text("Paris is big."),
        text("{\"pass\": false, \"reason\": \"it cites no source\"}"),
        text("Paris is big (source: the atlas)."),
        text("```json\n{\"pass\": true, \"reason\": \"it cites the atlas\"}\n```"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew =
        crew(json!([]), "auto", json!({"tasks": [{"guardrail": "The answer cites at least one source."}]}));
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Paris is big (source: the atlas).");
    let types = event_types(&journal);
    let checks: Vec<&str> = types.iter().copied().filter(|t| t.starts_with("guardrail")).collect();
    assert_eq!(checks, ["guardrail.failed", "guardrail.passed"]);
    let failed =
        journal.events().into_iter().find(|e| e.event_type == EventType::GuardrailFailed).expect("failed");
    assert_eq!(failed.data, json!({"task": "t", "reason": "it cites no source"}));
    let requests = llm.requests();
    assert!(requests[1].messages[0].content.as_deref().is_some_and(|c| c.contains("strict reviewer")));
    assert!(requests[1].messages[1]
        .content
        .as_deref()
        .is_some_and(|c| c.contains("cites at least one source") && c.contains("Paris is big.")));
    let redo = requests[2].messages.last().and_then(|m| m.content.clone()).unwrap_or_default();
    assert!(redo.contains("it cites no source"), "{redo}");
    let judged = journal.snapshot().conversation("t#1/guardrail");
    assert_eq!(judged.len(), 3, "the judge's exchange is journaled");
    assert_eq!(journal.usage().llm_calls, 4);
}

#[tokio::test]
async fn a_guardrail_that_keeps_failing_fails_the_task() {
    let verdict = || text("{\"pass\": false, \"reason\": \"too short\"}");
    let llm = ScriptedLlm::new(vec![text("a"), verdict(), text("b"), verdict()]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(
        json!([]),
        "auto",
        json!({"tasks": [{"guardrail": "At least ten words.", "guardrail_max_retries": 1}]}),
    );
    let journal = MemoryJournal::new(&["t"]);
    let error = run(&engine, &crew, &journal).await.expect_err("fails");
    assert!(
        matches!(&error, EngineError::Failed { message, .. } if message.contains("too short")),
        "{error:?}"
    );
    assert_eq!(event_types(&journal).iter().filter(|t| **t == "guardrail.failed").count(), 2);
}

#[tokio::test]
async fn async_tasks_overlap_and_the_next_task_sees_both_outputs() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tool =
        Arc::new(Echo { barrier: Some(barrier), ..Arc::into_inner(echo("echo", true)).expect("fresh") });
    let llm = ScriptedLlm::new(vec![text("Summary of both")]);
    {
        let mut by_model = llm.by_model.lock().expect("lock");
        by_model.insert(
            "model-a".into(),
            VecDeque::from([calls(&[("a1", "echo", json!({"text": "a"}))]), text("Alpha done")]),
        );
        by_model.insert(
            "model-b".into(),
            VecDeque::from([calls(&[("b1", "echo", json!({"text": "b"}))]), text("Beta done")]),
        );
    }
    let engine = engine(llm.clone(), true, vec![tool.clone()]);
    let spec = json!({
        "name": "c",
        "agents": [
            {"name": "a", "role": "A", "goal": "g", "backstory": "b", "llm": "openai/model-a", "tools": ["echo"]},
            {"name": "b", "role": "B", "goal": "g", "backstory": "b", "llm": "openai/model-b", "tools": ["echo"]},
            {"name": "s", "role": "S", "goal": "g", "backstory": "b"}
        ],
        "tasks": [
            {"name": "alpha", "description": "Do alpha", "expected_output": "x", "agent": "a", "async_execution": true},
            {"name": "beta", "description": "Do beta", "expected_output": "x", "agent": "b", "async_execution": true},
            {"name": "sum", "description": "Sum up", "expected_output": "x", "agent": "s"}
        ]
    });
    let crew = CrewSpec::from_json(spec).expect("crew");
    let journal = MemoryJournal::new(&["alpha", "beta", "sum"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Summary of both");
    let outcomes: Vec<_> = journal.snapshot().tool_calls.into_iter().map(|c| c.outcome).collect();
    assert!(
        outcomes.iter().all(|o| matches!(o, Some(ToolCallOutcome::Succeeded { .. }))),
        "both tools passed the two-party barrier, so the tasks overlapped: {outcomes:?}"
    );
    let last = llm.requests().into_iter().find(|r| r.model == "test-model").expect("the summary request");
    let prompt = last.messages[1].content.clone().unwrap_or_default();
    let (alpha, beta) =
        (prompt.find("Alpha done").expect("alpha output"), prompt.find("Beta done").expect("beta output"));
    assert!(alpha < beta, "context in task order: {prompt}");
    let completed =
        journal.snapshot().tasks.iter().filter(|t| t.status == crate::domain::TaskStatus::Completed).count();
    assert_eq!(completed, 3);
}

/// A tool that returns a fixed result.
struct Fixed {
    info: ToolInfo,
    result: String,
}

impl Tool for Fixed {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, _arguments: Value) -> ToolFuture<'_> {
        let result = self.result.clone();
        Box::pin(async move { Ok(result) })
    }
}

#[tokio::test]
async fn image_results_reach_the_model_as_multimodal_messages() {
    let png = crate::tools::image_result("image/png", &[0x89, b'P', b'N', b'G', 1, 2, 3, 4, 5]);
    let camera = Arc::new(Fixed {
        info: ToolInfo {
            name: "camera".into(),
            description: "Takes a picture".into(),
            parameters: json!({"type": "object", "properties": {}}),
            idempotent: true,
        },
        result: png.clone(),
    });
    let llm = ScriptedLlm::new(vec![calls(&[("c1", "camera", json!({}))]), text("A tiny PNG.")]);
    let engine = engine(llm.clone(), true, vec![camera]);
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(
        run(&engine, &crew(json!(["camera"]), "native", json!({})), &journal).await.expect("run"),
        "A tiny PNG."
    );
    let request = &llm.requests()[1];
    let tool_message = request.messages.iter().find(|m| m.role == Role::Tool).expect("tool message");
    assert!(
        tool_message.images.is_empty()
            && tool_message.content.as_deref().is_some_and(|c| c.contains("image/png"))
    );
    let with_image = request.messages.iter().find(|m| !m.images.is_empty()).expect("image message");
    assert_eq!(with_image.role, Role::User);
    assert_eq!(with_image.images[0].media_type, "image/png");
    assert_eq!(
        Some(with_image.images[0].data.as_str()),
        crate::tools::parse_image(&png).map(|(_, data)| data)
    );
    let finished =
        journal.events().into_iter().find(|e| e.event_type == EventType::ToolFinished).expect("finished");
    assert_eq!(
        (finished.data["media_type"].as_str(), finished.data["bytes"].as_u64()),
        (Some("image/png"), Some(9))
    );
    assert!(
        !finished.data.to_string().contains(crate::tools::parse_image(&png).map(|(_, d)| d).unwrap_or("x")),
        "no image data in events"
    );
    let Some(ToolCallOutcome::Succeeded { result, .. }) = journal.snapshot().tool_calls[0].outcome.clone()
    else {
        panic!("failed")
    };
    assert!(!result.contains("VISION_IMAGE"), "the journal keeps the description, the message the image");
}

fn planned_crew(extra: Value) -> CrewSpec {
    let mut spec = json!({
        "name": "c", "planning": true, "planning_llm": "openai/planner",
        "agents": [{"name": "a", "role": "Researcher", "goal": "g", "backstory": "b", "tools": ["calculator", "sleepy"]}],
        "tasks": [{"name": "t", "description": "Investigate tides", "expected_output": "A report", "agent": "a"}]
    });
    merge(&mut spec, extra);
    CrewSpec::from_json(spec).expect("crew")
}

fn plan_reply(steps: Value) -> Reply {
    text(&json!({"steps": steps}).to_string())
}

fn with_planner(llm: &ScriptedLlm, replies: Vec<Reply>) {
    llm.by_model.lock().expect("lock").insert("planner".into(), replies.into());
}

fn sleepy() -> Arc<dyn Tool> {
    struct Sleepy(ToolInfo);
    impl Tool for Sleepy {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call(&self, _arguments: Value) -> ToolFuture<'_> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok("woke up".to_owned())
            })
        }
    }
    Arc::new(Sleepy(ToolInfo {
        name: "sleepy".into(),
        description: "Sleeps".into(),
        parameters: json!({"type": "object", "properties": {}}),
        idempotent: true,
    }))
}

#[tokio::test]
async fn a_planned_task_runs_each_step_in_its_own_conversation() {
    let llm = ScriptedLlm::new(vec![
        text("R1: high tide at 6"),
        text("R2: low tide at 12"),
        text("R3: range 3 m"),
        text("Report: 6, 12, 3 m"),
    ]);
    with_planner(
        &llm,
        vec![plan_reply(json!([
            {"description": "Find high tide"}, {"description": "Find low tide"}, {"description": "Compute the range"}
        ]))],
    );
    let engine = engine(llm.clone(), true, vec![sleepy()]);
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &planned_crew(json!({})), &journal).await.expect("run"), "Report: 6, 12, 3 m");
    let types = event_types(&journal);
    let steps: Vec<&str> =
        types.iter().copied().filter(|t| t.starts_with("step.") || *t == "task.planned").collect();
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
    let planned =
        journal.events().into_iter().find(|e| e.event_type == EventType::TaskPlanned).expect("planned");
    assert_eq!(planned.data["steps"][2]["description"], "Compute the range");
    let snapshot = journal.snapshot();
    for (n, own) in [(1, "R1"), (2, "R2"), (3, "R3")] {
        let conversation = snapshot.conversation(&format!("t#step-{n}"));
        assert_eq!(conversation.len(), 3, "system, step, answer");
        let text: String =
            conversation.iter().filter_map(|m| m.content.clone()).collect::<Vec<_>>().join("\n");
        assert!(text.contains(own));
        for (m, other) in [(1, "R1"), (2, "R2"), (3, "R3")] {
            if m > n {
                assert!(!text.contains(other), "step {n} saw step {m}'s result");
            }
        }
    }
    let requests = llm.requests();
    assert_eq!(requests[0].model, "planner");
    assert!(
        requests[1..4].iter().all(|r| r.messages.len() == 2),
        "each step starts from its own two messages"
    );
    assert!(requests[3].messages[1].content.as_deref().is_some_and(|c| c.contains("R1") && c.contains("R2")));
    let last = requests[4].messages[1].content.clone().unwrap_or_default();
    assert!(last.contains("R3: range 3 m") && last.contains("Investigate tides"), "{last}");
}

#[tokio::test]
async fn a_step_fails_when_its_expected_tool_goes_unused_and_a_slow_step_times_out() {
    let llm = ScriptedLlm::new(vec![
        text("I guess 7"),
        calls(&[("s1", "sleepy", json!({}))]),
        text("Final anyway"),
    ]);
    with_planner(
        &llm,
        vec![plan_reply(json!([
            {"description": "Compute 3+4", "expected_tool": "calculator"}, {"description": "Wait for data", "expected_tool": "sleepy"}
        ]))],
    );
    let engine = engine(llm.clone(), true, vec![sleepy()]);
    let journal = MemoryJournal::new(&["t"]);
    let crew = planned_crew(json!({"tasks": [{"step_timeout_s": 1}]}));
    let started = std::time::Instant::now();
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Final anyway");
    assert!(started.elapsed() < Duration::from_secs(20), "the step did not hang");
    let events = journal.events();
    let failed = events.iter().find(|e| e.event_type == EventType::StepFailed).expect("step.failed");
    assert_eq!(failed.data["step"], 1);
    assert!(failed.data["reason"].as_str().is_some_and(|r| r.contains("calculator")));
    let timed_out = events
        .iter()
        .filter(|e| e.event_type == EventType::StepCompleted)
        .find(|e| e.data["step"] == 2)
        .expect("step 2");
    assert_eq!(timed_out.data["timed_out"], true);
    let final_prompt = llm.requests().last().and_then(|r| r.messages[1].content.clone()).unwrap_or_default();
    assert!(final_prompt.contains("Step failed") && final_prompt.contains("timed out"), "{final_prompt}");
}

#[tokio::test]
async fn a_resumed_planned_task_continues_at_the_step_in_flight() {
    let llm = ScriptedLlm::new(vec![text("R2"), text("Report")]);
    let engine = engine(llm.clone(), true, vec![sleepy()]);
    let journal = MemoryJournal::new(&["t"]);
    // The journal as a crash left it: planned, step 1 answered, step 2 started.
    let message = |conversation: &str, m: ChatMessage| super::journal::NewMessage {
        conversation: conversation.into(),
        task: "t".into(),
        agent: "a".into(),
        message: m,
        compacts: false,
    };
    let plan = json!({"steps": [{"description": "One"}, {"description": "Two"}]}).to_string();
    let step = Step {
        messages: vec![
            message("t#plan", ChatMessage::system("plan")),
            message("t#plan", ChatMessage::user("task")),
            message("t#plan", ChatMessage::assistant(plan)),
            message("t#step-1", ChatMessage::system("s")),
            message("t#step-1", ChatMessage::user("One")),
            message("t#step-1", ChatMessage::assistant("R1")),
            message("t#step-2", ChatMessage::system("s")),
            message("t#step-2", ChatMessage::user("Two")),
        ],
        tasks: vec![super::journal::TaskChange::Started { task: "t".into() }],
        ..Step::default()
    };
    super::journal::Journal::commit(&journal, step).await.expect("seed");
    assert_eq!(run(&engine, &planned_crew(json!({})), &journal).await.expect("run"), "Report");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "no new plan, step 1 not redone: step 2 then the answer");
    assert_eq!(requests[0].messages[1].content.as_deref(), Some("Two"));
    assert!(requests[1].messages[1].content.as_deref().is_some_and(|c| c.contains("R1") && c.contains("R2")));
}

// Every model call goes through the effects layer: the judge, the planner and the summariser are
// throttled, paused by provider holds, scrubbed of NUL, counted and announced like agent turns.

/// The data of every event of `event_type`.
fn event_data(journal: &MemoryJournal, event_type: EventType) -> Vec<Value> {
    journal.events().into_iter().filter(|e| e.event_type == event_type).map(|e| e.data).collect()
}

#[tokio::test]
async fn a_guardrail_call_is_spaced_by_max_rpm_like_the_agent_call_before_it() {
    let llm =
        ScriptedLlm::new(vec![text("Paris is big (the atlas)."), text(r#"{"pass": true, "reason": "ok"}"#)]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew =
        crew(json!([]), "auto", json!({"max_rpm": 60, "tasks": [{"guardrail": "It cites a source."}]}));
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &crew, &journal).await.expect("run");
    let arrivals = llm.arrivals();
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1] - arrivals[0];
    // 60 per minute: one call a second (a few ms of the first call's own reservation aside).
    assert!(gap >= Duration::from_millis(990), "the judge was asked {gap:?} after the agent");
    let throttled = event_data(&journal, EventType::RunThrottled);
    assert_eq!(throttled.len(), 1, "{throttled:?}");
    assert!(throttled[0]["limit"].as_str().is_some_and(|l| l.ends_with("crew (60/min)")), "{throttled:?}");
    let started = event_data(&journal, EventType::LlmStarted);
    assert_eq!(started[1], json!({"model": "openai/test-model", "purpose": "guardrail"}));
}

#[tokio::test]
async fn a_provider_hold_pauses_the_planner() {
    let llm = ScriptedLlm::new(vec![text("R1"), text("Report")]);
    with_planner(&llm, vec![plan_reply(json!([{"description": "Find it"}]))]);
    let limiter = Arc::new(crate::ratelimit::RateLimiter::default());
    let engine = engine(llm.clone(), true, vec![sleepy()]).with_rate_limiter(limiter.clone());
    let held_from = std::time::Instant::now();
    limiter.hold(&crate::llm::provider_key("openai"), limiter.now() + Duration::from_millis(1200));
    let journal = MemoryJournal::new(&["t"]);
    run(&engine, &planned_crew(json!({})), &journal).await.expect("run");
    let requests = llm.requests();
    assert_eq!(requests[0].model, "planner", "the planner is asked first");
    let waited = llm.arrivals()[0] - held_from;
    assert!(waited >= Duration::from_millis(1150), "the planner was asked after {waited:?}");
    let throttled = event_data(&journal, EventType::RunThrottled);
    assert!(
        throttled
            .first()
            .and_then(|t| t["limit"].as_str())
            .is_some_and(|l| l.contains("provider asked to wait")),
        "{throttled:?}"
    );
    let started = event_data(&journal, EventType::LlmStarted);
    assert_eq!(started[0], json!({"model": "openai/planner", "purpose": "planner"}));
}

#[tokio::test]
async fn a_guardrail_reply_with_nul_is_scrubbed_before_it_is_journaled() {
    let llm = ScriptedLlm::new(vec![text("An answer."), text("{\"pass\": true, \"reason\": \"fine\u{0}\"}")]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!([]), "auto", json!({"tasks": [{"guardrail": "It is an answer."}]}));
    let journal = NulRefusingJournal(MemoryJournal::new(&["t"]));
    let output =
        engine.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run completes");
    assert_eq!(output.raw, "An answer.");
    let verdict = journal.0.snapshot().conversation("t#1/guardrail").last().and_then(|m| m.content.clone());
    assert_eq!(verdict.as_deref(), Some("{\"pass\": true, \"reason\": \"fine\u{fffd}\"}"));
    let passed = event_data(&journal.0, EventType::GuardrailPassed);
    assert_eq!(passed[0]["reason"], "fine\u{fffd}");
}

#[tokio::test]
async fn usage_counts_planner_guardrail_and_summary_tokens() {
    let usage = |prompt, completion| TokenUsage { prompt_tokens: prompt, completion_tokens: completion };
    let with_usage = |reply: Reply, prompt, completion| {
        reply.map(|r| ChatResponse { usage: usage(prompt, completion), ..r })
    };
    let llm = ScriptedLlm::new(vec![
        with_usage(text("R1"), 100, 10),
        with_usage(text("Report"), 200, 20),
        with_usage(text(r#"{"pass": true, "reason": "ok"}"#), 30, 3),
    ]);
    with_planner(&llm, vec![with_usage(plan_reply(json!([{"description": "Find it"}])), 4000, 400)]);
    let engine = engine(llm.clone(), true, vec![sleepy()]);
    let crew = planned_crew(json!({"tasks": [{"guardrail": "It is a report."}]}));
    let journal = MemoryJournal::new(&["t"]);
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report");
    assert_eq!(llm.requests().len(), 4);
    let total = journal.usage();
    assert_eq!((total.llm_calls, total.prompt_tokens, total.completion_tokens), (4, 4330, 433));
    let finished = event_data(&journal, EventType::LlmFinished);
    let purposes: Vec<&str> = finished.iter().map(|d| d["purpose"].as_str().unwrap_or("turn")).collect();
    assert_eq!(purposes, ["planner", "turn", "turn", "guardrail"]);
    assert_eq!(finished[0]["usage"], json!({"prompt_tokens": 4000, "completion_tokens": 400}));
}

/// A journal that refuses a step holding a NUL character, as Postgres does.
struct NulRefusingJournal(MemoryJournal);

impl Journal for NulRefusingJournal {
    fn load(&self) -> JournalFuture<'_, Snapshot> {
        self.0.load()
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        let in_messages =
            step.messages.iter().any(|m| m.message.content.as_deref().is_some_and(|c| c.contains('\0')));
        let in_events = step.events.iter().any(|e| e.data.to_string().contains("\\u0000"));
        if in_messages || in_events {
            return Box::pin(async { Err(JournalError::Storage("a NUL character cannot be stored".into())) });
        }
        self.0.commit(step)
    }
}

//! The effects layer: every model call (agent turns, judge, planner, summariser) throttled, held
//! and counted alike (on both journals), and the commit rules and NUL scrubbing against journals
//! that watch the commits.

use super::journals::{on_both_journals, Backend};
use super::support::*;

/// A journal whose commits of replayable steps wait until the model has been asked (or fail).
struct GatedJournal {
    inner: Subject,
    llm: Arc<ScriptedLlm>,
    fail: bool,
}

impl Journal for GatedJournal {
    fn run_id(&self) -> crate::domain::RunId {
        self.inner.run_id()
    }

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

/// The events of a one-task run answered at once.
const ONE_ANSWER: [&str; 6] =
    ["task.started", "llm.started", "llm.finished", "agent.final_answer", "task.completed", "run.completed"];

#[tokio::test]
async fn a_task_start_is_committed_while_a_slow_model_is_asked() {
    // Slower than the fold window: the start goes out alongside the call.
    let slow = 3 * crate::engine::effects::FOLD_WINDOW;
    let llm = ScriptedLlm::slow(vec![text("done")], slow);
    let gated = engine(llm.clone(), true, vec![]);
    let journal = GatedJournal {
        inner: Subject::Memory(Box::new(MemoryJournal::new(&["t"]))),
        llm: llm.clone(),
        fail: false,
    };
    let crew = crew(json!([]), "native", json!({}));
    let output = gated.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.raw, "done");
    assert_eq!(journal.inner.commits(), 2, "the start, then the answer with the task's end");
    assert_eq!(event_types(&journal.inner).await, ONE_ANSWER);

    // A start that cannot be committed (the lease is lost) stops the run, reply or not.
    let llm = ScriptedLlm::slow(vec![text("done")], slow);
    let fenced = engine(llm.clone(), true, vec![]);
    let journal =
        GatedJournal { inner: Subject::Memory(Box::new(MemoryJournal::new(&["t"]))), llm, fail: true };
    let result = fenced.run(&crew, &inputs(), &journal, &CancellationToken::new()).await;
    assert!(matches!(result, Err(EngineError::Journal(JournalError::Fenced))), "{result:?}");
    assert_eq!(journal.inner.commits(), 0);
}

#[tokio::test]
async fn a_quick_reply_shares_its_commit_with_the_task_start() {
    let llm = ScriptedLlm::new(vec![text("done")]);
    let quick = engine(llm.clone(), true, vec![]);
    let journal = Subject::Memory(Box::new(MemoryJournal::new(&["t"])));
    let crew = crew(json!([]), "native", json!({}));
    let output = quick.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.raw, "done");
    assert_eq!(journal.commits(), 1, "the start, the reply and the run's end in one commit");
    assert_eq!(event_types(&journal).await, ONE_ANSWER);
    assert_eq!(journal.usage().await.llm_calls, 1, "the call is counted in the step it went out with");
}

/// A model that types its reply through the request's delta sink, then answers it.
struct Typing;

impl LlmClient for Typing {
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        if let Some(sink) = &request.deltas {
            for word in ["Typed ", "answer."] {
                (sink.0)(1, word);
            }
        }
        Box::pin(async { text("Typed answer.") })
    }
}

/// The order of what a streaming run did: deltas, flushes and commits (with their events).
#[derive(Default)]
struct Order(Mutex<Vec<String>>);

impl crate::engine::DeltaPublisher for Order {
    fn publish(&self, delta: crate::engine::LiveDelta) {
        self.0.lock().expect("lock").push(format!("delta {}", delta.text));
    }

    fn flushed(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        self.0.lock().expect("lock").push("flushed".into());
        Box::pin(std::future::ready(()))
    }
}

struct OrderedJournal {
    inner: MemoryJournal,
    order: Arc<Order>,
}

impl Journal for OrderedJournal {
    fn run_id(&self) -> crate::domain::RunId {
        self.inner.run_id()
    }

    fn load(&self) -> JournalFuture<'_, Snapshot> {
        self.inner.load()
    }

    fn commit(&self, step: Step) -> JournalFuture<'_, ()> {
        let types: Vec<&str> = step.events.iter().map(|e| e.event_type.as_str()).collect();
        self.order.0.lock().expect("lock").push(format!("commit {}", types.join(" ")));
        self.inner.commit(step)
    }
}

/// A streamed reply's deltas are announced before its `llm.finished` (or the run's end) is
/// committed: a stream that ends with the run has received the whole reply.
#[tokio::test]
async fn a_streamed_replys_deltas_are_flushed_before_its_end_is_committed() {
    let order = Arc::new(Order::default());
    let registry = LlmRegistry::new("openai/test-model").with_client("openai", Arc::new(Typing), true);
    let outbound = Outbound::new(EgressPolicy::default(), Duration::from_secs(5), 10_000).expect("outbound");
    let parts = crate::engine::EngineParts::standalone(registry, Arc::new(outbound));
    let engine = Engine::new(crate::engine::EngineParts { deltas: Some(order.clone()), ..parts });
    let crew = crew(json!([]), "native", json!({"stream": true}));
    let journal = OrderedJournal { inner: MemoryJournal::new(&["t"]), order: order.clone() };
    let output = engine.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.raw, "Typed answer.");
    let seen = order.0.lock().expect("lock").clone();
    let at =
        |what: &str| seen.iter().position(|s| s.contains(what)).unwrap_or_else(|| panic!("{what}: {seen:?}"));
    assert!(at("delta answer.") < at("flushed"), "{seen:?}");
    assert!(
        at("flushed") < at("llm.finished"),
        "the flush comes before the commit of llm.finished: {seen:?}"
    );
    assert!(at("flushed") < at("run.completed"), "{seen:?}");
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
    // The count of the one call the step goes out with keeps it replayable; tokens do not.
    let sent = Step { usage: UsageDelta { llm_calls: 1, ..UsageDelta::default() }, ..start.clone() };
    assert!(sent.is_replayable());
    let usage = Step {
        usage: UsageDelta { llm_calls: 1, prompt_tokens: 5, ..UsageDelta::default() },
        ..start.clone()
    };
    let two = Step { usage: UsageDelta { llm_calls: 2, ..UsageDelta::default() }, ..start.clone() };
    let ended = Step { run: Some(RunChange::AwaitingInput), ..start.clone() };
    for step in [reply, summary, usage, two, ended] {
        assert!(!step.is_replayable(), "{step:?}");
    }
}

#[tokio::test]
async fn a_guardrail_reply_with_nul_is_scrubbed_before_it_is_journaled() {
    let llm = ScriptedLlm::new(vec![text("An answer."), text("{\"pass\": true, \"reason\": \"fine\u{0}\"}")]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!([]), "auto", json!({"tasks": [{"guardrail": "It is an answer."}]}));
    let journal = NulRefusingJournal(Subject::Memory(Box::new(MemoryJournal::new(&["t"]))));
    let output =
        engine.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run completes");
    assert_eq!(output.raw, "An answer.");
    let verdict =
        journal.0.snapshot().await.conversation("t#1/guardrail").last().and_then(|m| m.content.clone());
    assert_eq!(verdict.as_deref(), Some("{\"pass\": true, \"reason\": \"fine\u{fffd}\"}"));
    let passed = event_data(&journal.0, EventType::GuardrailPassed).await;
    assert_eq!(passed[0]["reason"], "fine\u{fffd}");
}

/// A journal that refuses a step holding a NUL character, as Postgres does.
struct NulRefusingJournal(Subject);

impl Journal for NulRefusingJournal {
    fn run_id(&self) -> crate::domain::RunId {
        self.0.run_id()
    }

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

async fn a_guardrail_call_is_spaced_by_max_rpm_like_the_agent_call_before_it(backend: Backend) {
    let llm =
        ScriptedLlm::new(vec![text("Paris is big (the atlas)."), text(r#"{"pass": true, "reason": "ok"}"#)]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew =
        crew(json!([]), "auto", json!({"max_rpm": 60, "tasks": [{"guardrail": "It cites a source."}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    // The agent's call was booked after this instant, so the judge's slot is at least a second
    // after it (60 per minute), however late either call went out.
    let before = std::time::Instant::now();
    run(&engine, &crew, &journal).await.expect("run");
    let arrivals = llm.arrivals();
    assert_eq!(arrivals.len(), 2);
    let judged = arrivals[1] - before;
    assert!(judged >= Duration::from_secs(1), "the judge was asked {judged:?} after the run began");
    let throttled = event_data(&journal, EventType::RunThrottled).await;
    assert_eq!(throttled.len(), 1, "{throttled:?}");
    assert!(throttled[0]["wait_ms"].as_u64().is_some_and(|w| w > 0 && w <= 1000), "{throttled:?}");
    assert!(throttled[0]["limit"].as_str().is_some_and(|l| l.ends_with("crew (60/min)")), "{throttled:?}");
    let started = event_data(&journal, EventType::LlmStarted).await;
    assert_eq!(started[1], json!({"model": "openai/test-model", "purpose": "guardrail"}));
}

async fn a_provider_hold_pauses_the_planner(backend: Backend) {
    let llm = ScriptedLlm::new(vec![text("R1"), text("Report")]);
    with_planner(&llm, vec![plan_reply(json!([{"description": "Find it"}]))]);
    let limiter = Arc::new(crate::ratelimit::RateLimiter::default());
    let parts = crate::engine::EngineParts { limiter: limiter.clone(), ..engine_parts(llm.clone(), true) };
    let engine = Engine::new(parts).with_tools(vec![sleepy()]);
    let held_from = std::time::Instant::now();
    limiter.hold(&crate::llm::provider_key("openai"), limiter.now() + Duration::from_millis(1200));
    let crew = planned_crew(json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    run(&engine, &crew, &journal).await.expect("run");
    let requests = llm.requests();
    assert_eq!(requests[0].model, "planner", "the planner is asked first");
    let waited = llm.arrivals()[0] - held_from;
    assert!(waited >= Duration::from_millis(1200), "the planner was asked after {waited:?}");
    let throttled = event_data(&journal, EventType::RunThrottled).await;
    assert!(
        throttled
            .first()
            .and_then(|t| t["limit"].as_str())
            .is_some_and(|l| l.contains("provider asked to wait")),
        "{throttled:?}"
    );
    let started = event_data(&journal, EventType::LlmStarted).await;
    assert_eq!(started[0], json!({"model": "openai/planner", "purpose": "planner"}));
}

async fn usage_counts_planner_guardrail_and_summary_tokens(backend: Backend) {
    let usage = |prompt, completion| TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: 0,
        estimated: false,
    };
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
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report");
    assert_eq!(llm.requests().len(), 4);
    let total = journal.usage().await;
    assert_eq!((total.llm_calls, total.prompt_tokens, total.completion_tokens), (4, 4330, 433));
    let finished = event_data(&journal, EventType::LlmFinished).await;
    let purposes: Vec<&str> = finished.iter().map(|d| d["purpose"].as_str().unwrap_or("turn")).collect();
    assert_eq!(purposes, ["planner", "turn", "turn", "guardrail"]);
    assert_eq!(
        finished[0]["usage"],
        json!({"prompt_tokens": 4000, "completion_tokens": 400, "cached_tokens": 0})
    );
}

on_both_journals!(
    a_guardrail_call_is_spaced_by_max_rpm_like_the_agent_call_before_it,
    a_provider_hold_pauses_the_planner,
    usage_counts_planner_guardrail_and_summary_tokens,
);

//! What the engine's tests share: a scripted model, test tools, crews, and readers of what a
//! journal holds. The topic modules take all of it (and the usual imports) with
//! `use super::support::*`.

pub(super) use std::collections::VecDeque;
pub(super) use std::sync::atomic::{AtomicUsize, Ordering};
pub(super) use std::sync::{Arc, Mutex};
pub(super) use std::time::Duration;

pub(super) use serde_json::{json, Map, Value};
pub(super) use tokio_util::sync::CancellationToken;

pub(super) use super::journals::Subject;
pub(super) use crate::domain::{CrewSpec, ErrorKind, EventType};
pub(super) use crate::engine::journal::{
    Journal, JournalError, JournalFuture, MemoryJournal, NewMessage, RunChange, Snapshot, Step, TaskChange,
    ToolCallOutcome, ToolCallStart, UsageDelta,
};
pub(super) use crate::engine::{Engine, EngineError};
pub(super) use crate::llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmFuture, LlmRegistry, Role,
    TokenUsage, ToolCallRequest,
};
pub(super) use crate::outbound::egress::EgressPolicy;
pub(super) use crate::tools::http::Outbound;
pub(super) use crate::tools::{Tool, ToolFuture, ToolInfo};

pub(super) type Reply = Result<ChatResponse, LlmError>;

/// A model that answers from a script and remembers every request.
#[derive(Default)]
pub(super) struct ScriptedLlm {
    pub(super) replies: Mutex<VecDeque<Reply>>,
    /// Replies for requests to a given model, before the shared ones.
    pub(super) by_model: Mutex<std::collections::HashMap<String, VecDeque<Reply>>>,
    pub(super) requests: Mutex<Vec<ChatRequest>>,
    /// When each request arrived.
    pub(super) arrivals: Mutex<Vec<std::time::Instant>>,
    pub(super) hang: bool,
    /// How long each reply takes.
    pub(super) delay: Duration,
}

impl ScriptedLlm {
    pub(super) fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into()), ..Self::default() })
    }

    /// A model whose every reply takes `delay`.
    pub(super) fn slow(replies: Vec<Reply>, delay: Duration) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into()), delay, ..Self::default() })
    }

    pub(super) fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().expect("lock").clone()
    }

    pub(super) fn arrivals(&self) -> Vec<std::time::Instant> {
        self.arrivals.lock().expect("lock").clone()
    }
}

impl LlmClient for ScriptedLlm {
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        self.requests.lock().expect("lock").push(request.clone());
        self.arrivals.lock().expect("lock").push(std::time::Instant::now());
        let own = self.by_model.lock().expect("lock").get_mut(&request.model).and_then(VecDeque::pop_front);
        let reply = own.or_else(|| self.replies.lock().expect("lock").pop_front());
        let (hang, delay) = (self.hang, self.delay);
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            reply.unwrap_or_else(|| Err(LlmError::new(LlmErrorKind::Other, "script exhausted")))
        })
    }
}

pub(super) fn text(content: &str) -> Reply {
    Ok(ChatResponse {
        content: Some(content.to_owned()),
        tool_calls: Vec::new(),
        finish_reason: Some("stop".into()),
        usage: TokenUsage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: 0, estimated: false },
        response_id: None,
        response_model: None,
        retries: 0,
    })
}

pub(super) fn calls(calls: &[(&str, &str, Value)]) -> Reply {
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
        response_id: None,
        response_model: None,
        retries: 0,
    })
}

pub(super) fn failure(kind: LlmErrorKind, message: &str) -> Reply {
    Err(LlmError::new(kind, message))
}

/// A tool that echoes its `text` argument, counts calls, and can wait at a barrier.
pub(super) struct Echo {
    pub(super) info: ToolInfo,
    pub(super) calls: AtomicUsize,
    pub(super) barrier: Option<Arc<tokio::sync::Barrier>>,
    /// How long a call takes.
    pub(super) delay: Duration,
}

pub(super) fn echo(name: &str, idempotent: bool) -> Arc<Echo> {
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

    fn call(&self, arguments: Value, _call: crate::tools::CallInfo) -> ToolFuture<'_> {
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

pub(super) fn engine(llm: Arc<ScriptedLlm>, native: bool, tools: Vec<Arc<dyn Tool>>) -> Engine {
    Engine::new(engine_parts(llm, native)).with_tools(tools)
}

/// The parts of an engine over `llm` (`native`: it takes native tools).
pub(super) fn engine_parts(llm: Arc<ScriptedLlm>, native: bool) -> crate::engine::EngineParts {
    let registry = LlmRegistry::new("openai/test-model").with_client("openai", llm, native);
    let outbound = Outbound::new(EgressPolicy::default(), Duration::from_secs(5), 10_000).expect("outbound");
    crate::engine::EngineParts::standalone(registry, Arc::new(outbound))
}

pub(super) fn crew(tools: Value, tool_calling: &str, extra: Value) -> CrewSpec {
    let mut spec = json!({
        "name": "c",
        "agents": [{"name": "a", "role": "Analyst of {topic}", "goal": "Answer", "backstory": "Precise.",
                    "tools": tools, "tool_calling": tool_calling, "max_iter": 5}],
        "tasks": [{"name": "t", "description": "Study {topic}", "expected_output": "A sentence", "agent": "a"}]
    });
    merge(&mut spec, extra);
    CrewSpec::from_json(spec).expect("crew")
}

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

pub(super) fn inputs() -> Map<String, Value> {
    json!({"topic": "tides"}).as_object().cloned().expect("object")
}

pub(super) fn planned_crew(extra: Value) -> CrewSpec {
    let mut spec = json!({
        "name": "c", "planning": true, "planning_llm": "openai/planner",
        "agents": [{"name": "a", "role": "Researcher", "goal": "g", "backstory": "b", "tools": ["calculator", "sleepy"]}],
        "tasks": [{"name": "t", "description": "Investigate tides", "expected_output": "A report", "agent": "a"}]
    });
    merge(&mut spec, extra);
    CrewSpec::from_json(spec).expect("crew")
}

pub(super) fn plan_reply(steps: Value) -> Reply {
    text(&json!({"steps": steps}).to_string())
}

pub(super) fn with_planner(llm: &ScriptedLlm, replies: Vec<Reply>) {
    llm.by_model.lock().expect("lock").insert("planner".into(), replies.into());
}

pub(super) fn sleepy() -> Arc<dyn Tool> {
    struct Sleepy(ToolInfo);
    impl Tool for Sleepy {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call(&self, _arguments: Value, _call: crate::tools::CallInfo) -> ToolFuture<'_> {
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

/// Run `crew` on the tides inputs to its end; the output's raw text.
pub(super) async fn run(
    engine: &Engine,
    crew: &CrewSpec,
    journal: &dyn Journal,
) -> Result<String, EngineError> {
    engine.run(crew, &inputs(), journal, &CancellationToken::new()).await.map(|o| o.raw)
}

/// The types of the events the engine journaled, in order.
pub(super) async fn event_types(journal: &Subject) -> Vec<&'static str> {
    journal.events().await.iter().map(|e| e.event_type.as_str()).collect()
}

/// The roles of the journaled messages, in order.
pub(super) async fn roles(journal: &Subject) -> Vec<Role> {
    journal.snapshot().await.messages.iter().map(|m| m.message.role).collect()
}

/// The data of every event of `event_type`.
pub(super) async fn event_data(journal: &Subject, event_type: EventType) -> Vec<Value> {
    journal.events().await.into_iter().filter(|e| e.event_type == event_type).map(|e| e.data).collect()
}

//! Tool rounds on both journals: commit before a call (or the quick idempotent fold), parallel calls,
//! `result_as_answer`, usage caps, the egress guard, the cache, refusals, images, and resuming a
//! round a crash interrupted.

use super::journals::{on_both_journals, Backend};
use super::support::*;

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
    Engine::new(crate::engine::EngineParts::standalone(registry, Arc::new(outbound)))
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

    fn call(&self, _arguments: Value, _call: crate::tools::CallInfo) -> ToolFuture<'_> {
        let result = self.result.clone();
        Box::pin(async move { Ok(result) })
    }
}

async fn a_call_is_journaled_before_it_runs_unless_idempotent_and_quick(backend: Backend) {
    // The first reply is quick: the task's start shares its commit (or the tool call's start's).
    for (idempotent, delay, commits) in [(true, 0, 2), (false, 0, 3), (true, 50, 3)] {
        let tool = Arc::new(Echo {
            delay: Duration::from_millis(delay),
            ..Arc::into_inner(echo("echo", idempotent)).expect("fresh")
        });
        let llm = ScriptedLlm::new(vec![calls(&[("c1", "echo", json!({"text": "a"}))]), text("done")]);
        let engine = engine(llm, true, vec![tool.clone()]);
        let crew = crew(json!(["echo"]), "native", json!({}));
        let journal = backend.journal(&crew, &inputs()).await;
        run(&engine, &crew, &journal).await.expect("run");
        let case = format!("idempotent {idempotent}, {delay} ms");
        assert_eq!(journal.commits(), commits, "{case}");
        assert_eq!(
            journal.snapshot().await.tool_calls[0].outcome,
            Some(ToolCallOutcome::Succeeded { result: "echo: a".into(), cached: false }),
            "{case}"
        );
        assert_eq!(tool.calls.load(Ordering::SeqCst), 1, "{case}");
    }
}

async fn parallel_native_calls_run_concurrently(backend: Backend) {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tool =
        Arc::new(Echo { barrier: Some(barrier), ..Arc::into_inner(echo("echo", true)).expect("fresh") });
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "echo", json!({"text": "a"})), ("c2", "echo", json!({"text": "b"}))]),
        text("done"),
    ]);
    let engine = engine(llm, true, vec![tool.clone()]);
    let crew = crew(json!(["echo"]), "native", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    run(&engine, &crew, &journal).await.expect("run");
    let results: Vec<_> = journal.snapshot().await.tool_calls.into_iter().map(|c| c.outcome).collect();
    assert_eq!(
        results,
        [
            Some(ToolCallOutcome::Succeeded { result: "echo: a".into(), cached: false }),
            Some(ToolCallOutcome::Succeeded { result: "echo: b".into(), cached: false })
        ]
    );
}

async fn result_as_answer_runs_alone_and_ends_the_task(backend: Backend) {
    let (url, hits) = lookup_server("shipped").await;
    let llm = ScriptedLlm::new(vec![calls(&[
        ("c1", "lookup_order", json!({"order_id": "42"})),
        ("c2", "calculator", json!({"expression": "1+1"})),
    ])]);
    let engine = local_engine(llm.clone());
    let tools = json!([lookup_tool(&url, json!({"result_as_answer": true}))]);
    let crew = crew(json!(["lookup_order", "calculator"]), "native", json!({"tools": tools}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "shipped (42)");
    assert_eq!((hits.load(Ordering::SeqCst), llm.requests().len()), (1, 1), "no LLM call after the answer");
    let snapshot = journal.snapshot().await;
    assert_eq!(snapshot.tool_calls.len(), 1, "only the first call ran");
    let skipped = snapshot
        .messages
        .iter()
        .find(|m| m.message.tool_call_id.as_deref() == Some("c2"))
        .expect("c2 answered");
    assert!(skipped.message.content.as_deref().is_some_and(|c| c.starts_with("Not executed")));
}

async fn usage_caps_refuse_further_calls(backend: Backend) {
    let (url, hits) = lookup_server("found").await;
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]),
        calls(&[("c2", "lookup_order", json!({"order_id": "2"}))]),
        text("done"),
    ]);
    let engine = local_engine(llm);
    let tools = json!([lookup_tool(&url, json!({"max_usage_count": 1}))]);
    let crew = crew(json!(["lookup_order"]), "native", json!({"tools": tools}));
    let journal = backend.journal(&crew, &inputs()).await;
    run(&engine, &crew, &journal).await.expect("run");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let outcome = journal.snapshot().await.tool_calls[1].outcome.clone();
    assert!(
        matches!(outcome, Some(ToolCallOutcome::Failed { ref error }) if error.contains("usage limit of 1")),
        "{outcome:?}"
    );
}

async fn outbound_requests_to_private_addresses_are_blocked(backend: Backend) {
    let (url, hits) = lookup_server("secret").await;
    let llm =
        ScriptedLlm::new(vec![calls(&[("c1", "lookup_order", json!({"order_id": "1"}))]), text("done")]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!(["lookup_order"]), "native", json!({"tools": [lookup_tool(&url, json!({}))]}));
    let journal = backend.journal(&crew, &inputs()).await;
    run(&engine, &crew, &journal).await.expect("run");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let outcome = journal.snapshot().await.tool_calls[0].outcome.clone();
    assert!(
        matches!(outcome, Some(ToolCallOutcome::Failed { ref error }) if error.contains("blocked")),
        "{outcome:?}"
    );
}

async fn cache_hits_unknown_tools_and_bad_arguments_become_observations(backend: Backend) {
    let tool = echo("echo", true);
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "echo", json!({"text": "x"}))]),
        calls(&[("c2", "ECHO", json!({"text": "x"}))]),
        calls(&[("c3", "nope", json!({}))]),
        calls(&[("c4", "echo", json!({"text": 5}))]),
        text("done"),
    ]);
    let engine = engine(llm, true, vec![tool.clone()]);
    let crew = crew(json!(["echo"]), "native", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    run(&engine, &crew, &journal).await.expect("run");
    assert_eq!(tool.calls.load(Ordering::SeqCst), 1, "the second call was served from the cache");
    let outcomes: Vec<_> =
        journal.snapshot().await.tool_calls.into_iter().map(|c| c.outcome.expect("ended")).collect();
    assert_eq!(outcomes[1], ToolCallOutcome::Succeeded { result: "echo: x".into(), cached: true });
    let ToolCallOutcome::Failed { error } = &outcomes[2] else { panic!("unknown tool succeeded") };
    assert!(error.contains("does not exist") && error.contains("echo"), "{error}");
    let ToolCallOutcome::Failed { error } = &outcomes[3] else { panic!("bad arguments accepted") };
    assert!(error.contains("$.text"), "{error}");
    let finished = journal
        .events()
        .await
        .into_iter()
        .filter(|e| e.event_type == EventType::ToolFinished)
        .nth(1)
        .expect("cached");
    assert_eq!(finished.data["cached"], true);
}

async fn resume_reruns_idempotent_and_fails_other_interrupted_calls(backend: Backend) {
    for (idempotent, expected_runs) in [(true, 1), (false, 0)] {
        let tool = echo("echo", idempotent);
        let llm = ScriptedLlm::new(vec![text("final")]);
        let engine = engine(llm.clone(), true, vec![tool.clone()]);
        let crew = crew(json!(["echo"]), "native", json!({}));
        let journal = backend.journal(&crew, &inputs()).await;
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
        let message = |m: ChatMessage| crate::engine::journal::NewMessage {
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
                approval: None,
            }],
            tasks: vec![crate::engine::journal::TaskChange::Started { task: "t".into() }],
            ..Step::default()
        };
        crate::engine::journal::Journal::commit(&journal, step).await.expect("seed");
        assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "final");
        assert_eq!(tool.calls.load(Ordering::SeqCst), expected_runs);
        assert_eq!(llm.requests().len(), 1, "the completed LLM call was not repeated");
        let outcome = journal.snapshot().await.tool_calls[0].outcome.clone().expect("ended");
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

async fn image_results_reach_the_model_as_multimodal_messages(backend: Backend) {
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
    let crew = crew(json!(["camera"]), "native", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "A tiny PNG.");
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
    let finished = journal
        .events()
        .await
        .into_iter()
        .find(|e| e.event_type == EventType::ToolFinished)
        .expect("finished");
    assert_eq!(
        (finished.data["media_type"].as_str(), finished.data["bytes"].as_u64()),
        (Some("image/png"), Some(9))
    );
    assert!(
        !finished.data.to_string().contains(crate::tools::parse_image(&png).map(|(_, d)| d).unwrap_or("x")),
        "no image data in events"
    );
    let Some(ToolCallOutcome::Succeeded { result, .. }) =
        journal.snapshot().await.tool_calls[0].outcome.clone()
    else {
        panic!("failed")
    };
    assert!(!result.contains("VISION_IMAGE"), "the journal keeps the description, the message the image");
}

on_both_journals!(
    a_call_is_journaled_before_it_runs_unless_idempotent_and_quick,
    parallel_native_calls_run_concurrently,
    result_as_answer_runs_alone_and_ends_the_task,
    usage_caps_refuse_further_calls,
    outbound_requests_to_private_addresses_are_blocked,
    cache_hits_unknown_tools_and_bad_arguments_become_observations,
    resume_reruns_idempotent_and_fails_other_interrupted_calls,
    image_results_reach_the_model_as_multimodal_messages,
);

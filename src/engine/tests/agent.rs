//! The agent loop on both journals: native calls and ReAct text, the fallback between them, parse
//! errors, `max_iter`, context recovery, output schemas, failures and cancellation.

use super::journals::{on_both_journals, Backend};
use super::support::*;

async fn native_tool_call_then_final_answer(backend: Backend) {
    let llm = ScriptedLlm::new(vec![
        calls(&[("c1", "calculator", json!({"expression": "2*(3+4)"}))]),
        text("The answer is 14."),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!(["calculator"]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "The answer is 14.");

    assert_eq!(
        event_types(&journal).await,
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
    assert_eq!(roles(&journal).await, [System, User, Assistant, Tool, User, Assistant]);
    let snapshot = journal.snapshot().await;
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
    let usage = journal.usage().await;
    assert_eq!((usage.llm_calls, usage.prompt_tokens, usage.tool_calls), (2, 10, 1));
    assert!(matches!(journal.run().await, Some(RunChange::Completed { .. })));
    // One commit before the second LLM call and one at the end: the first reply was quick, so
    // the task's start went with it, and the calculator is idempotent and quick, so its start and
    // end went with the second call's.
    assert_eq!(journal.commits(), 2);
}

async fn react_with_damaged_text_and_parse_error_recovery(backend: Backend) {
    let llm = ScriptedLlm::new(vec![
        text("I should compute this."),
        text("**Thought:** use the tool\n**Action:** Calculator\n**Action Input:** {\"expression\": \"6*7\""),
        text("Thought: I now know the final answer\nFinal Answer: 42"),
    ]);
    let engine = engine(llm.clone(), false, vec![]);
    let crew = crew(json!(["calculator"]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "42");
    let types = event_types(&journal).await;
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

async fn native_tools_rejected_falls_back_to_react(backend: Backend) {
    let llm = ScriptedLlm::new(vec![
        failure(LlmErrorKind::ToolsUnsupported, "this model does not support tools"),
        text("Thought: t\nAction: calculator\nAction Input: {\"expression\": \"1+2\"}"),
        text("Final Answer: 3"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!(["calculator"]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "3");
    let fallback = journal
        .events()
        .await
        .into_iter()
        .find(|e| e.event_type == EventType::AgentFallback)
        .expect("fallback");
    assert_eq!(
        (fallback.data["from"].as_str(), fallback.data["to"].as_str()),
        (Some("native"), Some("react"))
    );
    let requests = llm.requests();
    assert_eq!(requests[0].tools.len(), 1);
    assert!(requests[1].tools.is_empty() && requests[1].stop == ["\nObservation:"]);
}

async fn max_iter_forces_a_final_answer_without_tools(backend: Backend) {
    let call = || calls(&[("c", "calculator", json!({"expression": "1"}))]);
    let mut replies: Vec<Reply> = (0..2).map(|_| call()).collect();
    replies.push(text("Best answer: 1"));
    let llm = ScriptedLlm::new(replies);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!(["calculator"]), "native", json!({"agents": [{"max_iter": 2}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Best answer: 1");
    assert!(event_types(&journal).await.contains(&"agent.max_iter"));
    let last = llm.requests().pop().expect("request");
    assert!(last.tools.is_empty());
    assert!(last
        .messages
        .last()
        .and_then(|m| m.content.clone())
        .is_some_and(|c| c.contains("MUST give your absolute best")));
}

async fn context_overflow_summarises_and_retries(backend: Backend) {
    let llm = ScriptedLlm::new(vec![
        failure(LlmErrorKind::ContextWindowExceeded, "maximum context length"),
        text("summary of the task"),
        text("final after summary"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew = crew(json!([]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "final after summary");
    let requests = llm.requests();
    assert!(requests[1].messages[1].content.as_deref().is_some_and(|c| c.contains("Summarize")));
    let retried = &requests[2].messages;
    assert_eq!(retried.len(), 2);
    assert!(retried[1].content.as_deref().is_some_and(|c| c.contains("summary of the task")));
    assert!(journal.snapshot().await.messages.iter().any(|m| m.compacts));
    assert_eq!(journal.snapshot().await.conversation("t").len(), 3, "system, summary, answer");
}

async fn output_schema_violations_are_fed_back_then_accepted(backend: Backend) {
    let llm = ScriptedLlm::new(vec![text("just prose"), text("{\"answer\": 7}")]);
    let engine = engine(llm.clone(), true, vec![]);
    let schema =
        json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let crew = crew(json!([]), "auto", json!({"tasks": [{"output_schema": schema}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    let output = engine.run(&crew, &inputs(), &journal, &CancellationToken::new()).await.expect("run");
    assert_eq!(output.json, Some(json!({"answer": 7})));
    let feedback = llm.requests()[1].messages.last().and_then(|m| m.content.clone()).unwrap_or_default();
    assert!(feedback.contains("not JSON"), "{feedback}");
}

async fn output_schema_gives_up_after_three_retries(backend: Backend) {
    let llm = ScriptedLlm::new((0..4).map(|_| text("{\"answer\": \"x\"}")).collect());
    let engine = engine(llm, true, vec![]);
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}});
    let crew = crew(json!([]), "auto", json!({"tasks": [{"output_schema": schema}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    let error = run(&engine, &crew, &journal).await.expect_err("fails");
    assert!(matches!(error, EngineError::Failed { kind: ErrorKind::LlmError, .. }), "{error:?}");
    assert_eq!(
        &event_types(&journal).await[event_types(&journal).await.len() - 2..],
        ["task.failed", "run.failed"]
    );
}

async fn llm_failures_fail_the_task_and_the_run(backend: Backend) {
    let llm = ScriptedLlm::new(vec![failure(LlmErrorKind::Authentication, "bad key")]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!([]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    let error = run(&engine, &crew, &journal).await.expect_err("fails");
    assert!(matches!(error, EngineError::Failed { kind: ErrorKind::LlmError, .. }));
    let Some(RunChange::Failed { error }) = journal.run().await else { panic!("run not failed") };
    assert!(error.message.contains("bad key"));
    assert_eq!(journal.snapshot().await.tasks[0].status, crate::domain::TaskStatus::Failed);
}

async fn cancellation_abandons_a_hanging_call(backend: Backend) {
    let llm = Arc::new(ScriptedLlm { hang: true, ..ScriptedLlm::default() });
    let engine = engine(llm, true, vec![]);
    let crew = crew(json!([]), "auto", json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
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

on_both_journals!(
    native_tool_call_then_final_answer,
    react_with_damaged_text_and_parse_error_recovery,
    native_tools_rejected_falls_back_to_react,
    max_iter_forces_a_final_answer_without_tools,
    context_overflow_summarises_and_retries,
    output_schema_violations_are_fed_back_then_accepted,
    output_schema_gives_up_after_three_retries,
    llm_failures_fail_the_task_and_the_run,
    cancellation_abandons_a_hanging_call,
);

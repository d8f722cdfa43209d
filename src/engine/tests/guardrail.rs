//! Guardrails on both journals: a failed verdict fed back, and the retry budget.

use super::journals::{on_both_journals, Backend};
use super::support::*;

async fn a_guardrail_failure_is_fed_back_then_the_revised_answer_passes(backend: Backend) {
    let llm = ScriptedLlm::new(vec![
        text("Paris is big."),
        text("{\"pass\": false, \"reason\": \"it cites no source\"}"),
        text("Paris is big (source: the atlas)."),
        text("```json\n{\"pass\": true, \"reason\": \"it cites the atlas\"}\n```"),
    ]);
    let engine = engine(llm.clone(), true, vec![]);
    let crew =
        crew(json!([]), "auto", json!({"tasks": [{"guardrail": "The answer cites at least one source."}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Paris is big (source: the atlas).");
    let types = event_types(&journal).await;
    let checks: Vec<&str> = types.iter().copied().filter(|t| t.starts_with("guardrail")).collect();
    assert_eq!(checks, ["guardrail.failed", "guardrail.passed"]);
    let failed = journal
        .events()
        .await
        .into_iter()
        .find(|e| e.event_type == EventType::GuardrailFailed)
        .expect("failed");
    assert_eq!(failed.data, json!({"task": "t", "reason": "it cites no source"}));
    let requests = llm.requests();
    assert!(requests[1].messages[0].content.as_deref().is_some_and(|c| c.contains("strict reviewer")));
    assert!(requests[1].messages[1]
        .content
        .as_deref()
        .is_some_and(|c| c.contains("cites at least one source") && c.contains("Paris is big.")));
    let redo = requests[2].messages.last().and_then(|m| m.content.clone()).unwrap_or_default();
    assert!(redo.contains("it cites no source"), "{redo}");
    let judged = journal.snapshot().await.conversation("t#1/guardrail");
    assert_eq!(judged.len(), 3, "the judge's exchange is journaled");
    assert_eq!(journal.usage().await.llm_calls, 4);
}

async fn a_guardrail_that_keeps_failing_fails_the_task(backend: Backend) {
    let verdict = || text("{\"pass\": false, \"reason\": \"too short\"}");
    let llm = ScriptedLlm::new(vec![text("a"), verdict(), text("b"), verdict()]);
    let engine = engine(llm, true, vec![]);
    let crew = crew(
        json!([]),
        "auto",
        json!({"tasks": [{"guardrail": "At least ten words.", "guardrail_max_retries": 1}]}),
    );
    let journal = backend.journal(&crew, &inputs()).await;
    let error = run(&engine, &crew, &journal).await.expect_err("fails");
    assert!(
        matches!(&error, EngineError::Failed { message, .. } if message.contains("too short")),
        "{error:?}"
    );
    assert_eq!(event_types(&journal).await.iter().filter(|t| **t == "guardrail.failed").count(), 2);
}

on_both_journals!(
    a_guardrail_failure_is_fed_back_then_the_revised_answer_passes,
    a_guardrail_that_keeps_failing_fails_the_task,
);

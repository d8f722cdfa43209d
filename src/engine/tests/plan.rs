//! Plan-and-act on both journals: steps in their own conversations, expected tools and step
//! time limits, and resuming at the step in flight.

use super::journals::{on_both_journals, Backend};
use super::support::*;

async fn a_planned_task_runs_each_step_in_its_own_conversation(backend: Backend) {
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
    let crew = planned_crew(json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report: 6, 12, 3 m");
    let types = event_types(&journal).await;
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
        journal.events().await.into_iter().find(|e| e.event_type == EventType::TaskPlanned).expect("planned");
    assert_eq!(planned.data["steps"][2]["description"], "Compute the range");
    let snapshot = journal.snapshot().await;
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

async fn a_step_fails_when_its_expected_tool_goes_unused_and_a_slow_step_times_out(backend: Backend) {
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
    let crew = planned_crew(json!({"tasks": [{"step_timeout_s": 1}]}));
    let journal = backend.journal(&crew, &inputs()).await;
    let started = std::time::Instant::now();
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Final anyway");
    assert!(started.elapsed() < Duration::from_secs(20), "the step did not hang");
    let events = journal.events().await;
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

async fn a_resumed_planned_task_continues_at_the_step_in_flight(backend: Backend) {
    let llm = ScriptedLlm::new(vec![text("R2"), text("Report")]);
    let engine = engine(llm.clone(), true, vec![sleepy()]);
    let crew = planned_crew(json!({}));
    let journal = backend.journal(&crew, &inputs()).await;
    // The journal as a crash left it: planned, step 1 answered, step 2 started.
    let message = |conversation: &str, m: ChatMessage| crate::engine::journal::NewMessage {
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
        tasks: vec![crate::engine::journal::TaskChange::Started { task: "t".into() }],
        ..Step::default()
    };
    crate::engine::journal::Journal::commit(&journal, step).await.expect("seed");
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "no new plan, step 1 not redone: step 2 then the answer");
    assert_eq!(requests[0].messages[1].content.as_deref(), Some("Two"));
    assert!(requests[1].messages[1].content.as_deref().is_some_and(|c| c.contains("R1") && c.contains("R2")));
}

on_both_journals!(
    a_planned_task_runs_each_step_in_its_own_conversation,
    a_step_fails_when_its_expected_tool_goes_unused_and_a_slow_step_times_out,
    a_resumed_planned_task_continues_at_the_step_in_flight,
);

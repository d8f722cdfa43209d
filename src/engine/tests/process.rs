//! The crew process on both journals: context from earlier tasks, finished tasks skipped on a
//! rerun, the hierarchical manager's delegation, and `async_execution` tasks.

use super::journals::{on_both_journals, Backend};
use super::support::*;

async fn later_tasks_see_earlier_outputs_and_finished_tasks_are_skipped(backend: Backend) {
    let llm = ScriptedLlm::new(vec![text("first output"), text("second output")]);
    let engine = engine(llm.clone(), true, vec![]);
    let extra = json!({"tasks": [{}, {"name": "t2", "description": "Continue", "expected_output": "More", "agent": "a"}]});
    let mut spec = serde_json::to_value(crew(json!([]), "auto", json!({}))).expect("json");
    merge(&mut spec, extra);
    let crew = CrewSpec::from_json(spec).expect("crew");
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "second output");
    let second = &llm.requests()[1].messages[1];
    assert!(second.content.as_deref().is_some_and(|c| c.contains("first output")), "{second:?}");
    assert_eq!(llm.requests().len(), 2);

    // A run resumed after its first task finished performs the second only, with the first's
    // output as context.
    let llm = ScriptedLlm::new(vec![text("second again")]);
    let engine = super::support::engine(llm.clone(), true, vec![]);
    let resumed = backend.journal(&crew, &inputs()).await;
    let first = crate::domain::TaskOutput::new("first output", None);
    let tasks = vec![
        TaskChange::Started { task: "t".into() },
        TaskChange::Completed { task: "t".into(), output: first },
    ];
    resumed.commit(Step { tasks, ..Step::default() }).await.expect("seed");
    assert_eq!(run(&engine, &crew, &resumed).await.expect("resumed run"), "second again");
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the finished task was not performed again");
    assert!(requests[0].messages[1].content.as_deref().is_some_and(|c| c.contains("first output")));
}

async fn hierarchical_manager_delegates_to_a_coworker(backend: Backend) {
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
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Report: the depth is 3 km.");

    let snapshot = journal.snapshot().await;
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
    let coworker_events =
        journal.events().await.into_iter().filter(|e| e.agent.as_deref() == Some("a")).count();
    assert!(coworker_events >= 3, "the coworker's steps are events of the task");
}

async fn async_tasks_overlap_and_the_next_task_sees_both_outputs(backend: Backend) {
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
    let journal = backend.journal(&crew, &inputs()).await;
    assert_eq!(run(&engine, &crew, &journal).await.expect("run"), "Summary of both");
    let outcomes: Vec<_> = journal.snapshot().await.tool_calls.into_iter().map(|c| c.outcome).collect();
    assert!(
        outcomes.iter().all(|o| matches!(o, Some(ToolCallOutcome::Succeeded { .. }))),
        "both tools passed the two-party barrier, so the tasks overlapped: {outcomes:?}"
    );
    let last = llm.requests().into_iter().find(|r| r.model == "test-model").expect("the summary request");
    let prompt = last.messages[1].content.clone().unwrap_or_default();
    let (alpha, beta) =
        (prompt.find("Alpha done").expect("alpha output"), prompt.find("Beta done").expect("beta output"));
    assert!(alpha < beta, "context in task order: {prompt}");
    let completed = journal
        .snapshot()
        .await
        .tasks
        .iter()
        .filter(|t| t.status == crate::domain::TaskStatus::Completed)
        .count();
    assert_eq!(completed, 3);
}

on_both_journals!(
    later_tasks_see_earlier_outputs_and_finished_tasks_are_skipped,
    hierarchical_manager_delegates_to_a_coworker,
    async_tasks_overlap_and_the_next_task_sees_both_outputs,
);

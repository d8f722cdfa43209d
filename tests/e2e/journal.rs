//! The Postgres journal: steps round-trip through `load` exactly as through the in-memory journal,
//! commits are atomic and fenced by the attempt, and a step that contradicts the journal writes
//! nothing.

use std::time::Duration;

use agentd::domain::event::{
    LlmFinished, RunCompleted, TaskCompleted, TaskStarted, TokenUsage, ToolFailed, ToolFinished,
};
use agentd::domain::{ErrorKind, EventData, EventType, RunError, RunStatus, TaskOutput, TaskStatus, Usage};
use agentd::engine::journal::{
    Journal, JournalError, MemoryJournal, NewMessage, RunChange, SideKind, Snapshot, Step, TaskChange,
    ToolCallEnd, ToolCallOutcome, ToolCallStart, UsageDelta,
};
use agentd::llm::{ChatMessage, ToolCallRequest};
use agentd::store::{ClaimedRun, RunJournal, Store};
use serde_json::json;
use sqlx::PgPool;

use crate::support::new_run;

/// A fresh run, claimed (attempt 1), with its journal.
async fn claimed_run(store: &Store) -> (ClaimedRun, RunJournal) {
    let run = new_run();
    store.create_run(&run).await.expect("create");
    let claimed =
        store.claim_run(run.id, "worker-1", Duration::from_secs(30)).await.expect("claim").expect("queued");
    let journal = store.journal(claimed.id, claimed.attempt);
    (claimed, journal)
}

fn message(conversation: &str, message: ChatMessage) -> NewMessage {
    NewMessage {
        conversation: conversation.into(),
        task: "research".into(),
        agent: "researcher".into(),
        message,
        compacts: false,
    }
}

fn start(id: &str, arguments: serde_json::Value) -> ToolCallStart {
    ToolCallStart {
        id: id.into(),
        conversation: "research".into(),
        task: "research".into(),
        agent: "researcher".into(),
        tool: "calculator".into(),
        arguments,
        approval: None,
    }
}

fn output(raw: &str) -> TaskOutput {
    TaskOutput::new(raw, None)
}

/// A step that counts one prompt token and nothing else.
fn one_token() -> Step {
    Step { usage: UsageDelta { prompt_tokens: 1, ..UsageDelta::default() }, ..Step::default() }
}

/// A step Postgres refuses after [`one_token`]: its token count takes the run's past `bigint`.
fn overflowing() -> Step {
    let step = llm_step();
    Step { usage: UsageDelta { prompt_tokens: i64::MAX, ..step.usage }, ..step }
}

/// The model asks for two tools natively; both are journaled as running.
fn llm_step() -> Step {
    let calls = vec![
        ToolCallRequest {
            id: "call_1".into(),
            name: "calculator".into(),
            arguments: r#"{"e":"2+2"}"#.into(),
        },
        ToolCallRequest { id: "call_2".into(), name: "calculator".into(), arguments: "{oops".into() },
    ];
    let asks = ChatMessage { tool_calls: calls, ..ChatMessage::assistant("") };
    let mut step = Step {
        messages: vec![
            message("research", ChatMessage::system("You are a researcher.")),
            message("research", ChatMessage::user("Research AI agents")),
            message("research", ChatMessage { content: None, ..asks }),
        ],
        tool_starts: vec![start("call_1", json!({"e": "2+2"})), start("call_2", json!("{oops"))],
        tasks: vec![TaskChange::Started { task: "research".into() }],
        usage: UsageDelta {
            llm_calls: 1,
            prompt_tokens: 120,
            completion_tokens: 30,
            ..UsageDelta::default()
        },
        ..Step::default()
    };
    let started = TaskStarted { task: "research".into(), agent: "researcher".into() };
    step.event(Some("research"), Some("researcher"), EventData::TaskStarted(started));
    let finished = LlmFinished {
        model: "openai/gpt-4o-mini".into(),
        usage: TokenUsage { prompt_tokens: 120, completion_tokens: 30, cached_tokens: 0, estimated: false },
        cost_usd: None,
        duration_ms: 150,
        iteration: Some(1),
        purpose: None,
        retries: 0,
    };
    step.event(Some("research"), Some("researcher"), EventData::LlmFinished(finished));
    step
}

/// One tool succeeds (from the cache), the other fails; their observations follow.
fn tools_step() -> Step {
    let mut step = Step {
        messages: vec![
            message("research", ChatMessage::tool("call_1", "4")),
            message("research", ChatMessage::tool("call_2", "Error: invalid arguments")),
        ],
        tool_ends: vec![
            ToolCallEnd {
                id: "call_1".into(),
                outcome: ToolCallOutcome::Succeeded { result: "4".into(), cached: true },
            },
            ToolCallEnd {
                id: "call_2".into(),
                outcome: ToolCallOutcome::Failed { error: "invalid arguments".into() },
            },
        ],
        usage: UsageDelta { tool_calls: 2, ..UsageDelta::default() },
        ..Step::default()
    };
    let finished = ToolFinished {
        tool_call_id: "call_1".into(),
        tool: "calculator".into(),
        observation: "4".into(),
        cached: true,
        duration_ms: 0,
        media_type: None,
        bytes: None,
    };
    step.event(Some("research"), Some("researcher"), EventData::ToolFinished(finished));
    let failed = ToolFailed {
        tool_call_id: "call_2".into(),
        tool: "calculator".into(),
        error: "invalid arguments".into(),
    };
    step.event(Some("research"), Some("researcher"), EventData::ToolFailed(failed));
    step
}

/// The conversation is compacted, the tasks finish (the second starts and ends in this step) and
/// so does the run.
fn final_step() -> Step {
    let summary =
        NewMessage { compacts: true, ..message("research", ChatMessage::user("Summary: 2+2 is 4.")) };
    let mut step = Step {
        messages: vec![summary, message("research", ChatMessage::assistant("Final Answer: 4"))],
        tasks: vec![
            TaskChange::Completed { task: "research".into(), output: output("4") },
            TaskChange::Started { task: "write".into() },
            TaskChange::Completed {
                task: "write".into(),
                output: TaskOutput::new(r#"{"answer":"4"}"#, Some(json!({"answer": "4"}))),
            },
        ],
        run: Some(RunChange::Completed { output: output("done") }),
        usage: UsageDelta { llm_calls: 1, prompt_tokens: 80, completion_tokens: 10, ..UsageDelta::default() },
        ..Step::default()
    };
    let completed = TaskCompleted { task: "research".into(), output: Some("4".into()) };
    step.event(Some("research"), Some("researcher"), EventData::TaskCompleted(completed));
    step.event(None, None, EventData::RunCompleted(RunCompleted { output: "done".into() }));
    step
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn commits_round_trip_through_load(pool: PgPool) {
    let store = Store::new(pool);
    let (claimed, journal) = claimed_run(&store).await;
    let memory = MemoryJournal::new(&["research", "write"]);
    assert_eq!(journal.load().await.expect("load"), memory.snapshot(), "all tasks pending at first");

    for step in [llm_step(), tools_step()] {
        journal.commit(step.clone()).await.expect("commit");
        memory.commit(step).await.expect("commit");
        assert_eq!(journal.load().await.expect("load"), memory.snapshot());
    }
    let running = journal.load().await.expect("load");
    assert_eq!(running.tasks[0].status, TaskStatus::Running);
    let call_2 = running.tool_call("call_2").expect("call_2");
    assert_eq!(call_2.outcome, Some(ToolCallOutcome::Failed { error: "invalid arguments".into() }));
    assert_eq!(running.messages[2].message.tool_calls.len(), 2, "native tool calls survive");

    journal.commit(final_step()).await.expect("commit");
    memory.commit(final_step()).await.expect("commit");
    let done = journal.load().await.expect("load");
    assert_eq!(done, memory.snapshot());
    assert_eq!(
        done.conversation("research"),
        [
            ChatMessage::system("You are a researcher."),
            ChatMessage::user("Summary: 2+2 is 4."),
            ChatMessage::assistant("Final Answer: 4")
        ]
    );

    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!((run.status, run.output, run.error), (RunStatus::Completed, Some(output("done")), None));
    assert!(run.finished_at.is_some());
    assert_eq!(
        run.usage,
        Usage { llm_calls: 2, prompt_tokens: 200, completion_tokens: 40, tool_calls: 2, ..Usage::default() }
    );
    assert!(run
        .tasks
        .iter()
        .all(|t| t.status == TaskStatus::Completed && t.started_at.is_some() && t.finished_at.is_some()));

    let messages = store.list_messages(claimed.id).await.expect("messages");
    assert_eq!(messages.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=7).collect::<Vec<i64>>());
    assert!(messages.iter().all(|m| m.task.as_deref() == Some("research")));
    let with_calls: Vec<i64> =
        messages.iter().filter(|m| !m.message.tool_calls.is_empty()).map(|m| m.seq).collect();
    assert_eq!(with_calls, [3], "only the message whose model asked for tools has tool calls");

    let events = store.list_events(claimed.id, 0, 100).await.expect("events");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=8).collect::<Vec<i64>>());
    let types: Vec<EventType> = events.iter().map(|e| e.event_type).collect();
    use EventType::*;
    assert_eq!(
        types,
        [
            RunQueued,
            RunStarted,
            TaskStarted,
            LlmFinished,
            ToolFinished,
            ToolFailed,
            TaskCompleted,
            RunCompleted
        ]
    );
    let llm_finished = json!({"model": "openai/gpt-4o-mini", "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 0},
                              "duration_ms": 150, "iteration": 1});
    assert_eq!((events[3].task.as_deref(), &events[3].data), (Some("research"), &llm_finished));
}

/// A task start's knowledge and memories, journaled as side records.
fn side_step() -> Step {
    let mut step = Step { tasks: vec![TaskChange::Started { task: "research".into() }], ..Step::default() };
    let hits =
        json!([{"base": "docs", "hits": [{"chunk_id": 7, "text": "Backups stay 35 days.", "score": 0.5}]}]);
    step.record(SideKind::Knowledge, ("research", "researcher"), json!({"bases": ["docs"]}), &hits);
    let items = json!([{"id": "0193e5a0-0000-7000-8000-000000000001", "text": "Prefers short answers."}]);
    step.record(SideKind::Recall, ("research", "researcher"), json!({"scope": "user:ada"}), &items);
    step
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn side_records_round_trip_are_written_once_and_listed_among_the_tool_calls(pool: PgPool) {
    let store = Store::new(pool.clone());
    let (claimed, journal) = claimed_run(&store).await;
    let memory = MemoryJournal::new(&["research", "write"]);
    journal.commit(side_step()).await.expect("commit");
    memory.commit(side_step()).await.expect("commit");
    let loaded = journal.load().await.expect("load");
    assert_eq!(loaded, memory.snapshot());
    let knowledge: Option<serde_json::Value> =
        loaded.recorded(SideKind::Knowledge, "research").expect("readable");
    assert_eq!(knowledge.expect("recorded")[0]["hits"][0]["chunk_id"], 7);
    assert_eq!(loaded.recorded::<serde_json::Value>(SideKind::Knowledge, "write"), Ok(None));
    assert!(loaded.tool_calls.is_empty(), "no side record is a tool call in the journal");

    // Their own typed rows, no tool-call row.
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT task, kind FROM side_records WHERE run_id = $1 ORDER BY kind")
            .bind(claimed.id.0)
            .fetch_all(&pool)
            .await
            .expect("side records");
    assert_eq!(rows, [("research".into(), "knowledge".into()), ("research".into(), "recall".into())]);
    let calls: i64 = sqlx::query_scalar("SELECT count(*) FROM tool_calls WHERE run_id = $1")
        .bind(claimed.id.0)
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(calls, 0);

    // The API lists them as it always did: succeeded calls of `knowledge` and `memory`.
    let listed = store.list_tool_calls(claimed.id).await.expect("list");
    let shown: Vec<(&str, &str, bool)> = listed
        .iter()
        .map(|c| {
            (c.id.as_str(), c.tool.as_str(), matches!(c.outcome, Some(ToolCallOutcome::Succeeded { .. })))
        })
        .collect();
    assert_eq!(shown, [("research#knowledge", "knowledge", true), ("research#recall", "memory", true)]);
    assert_eq!(listed[1].arguments, json!({"scope": "user:ada"}));

    // Written once: a step that records a task's kind again is refused and writes nothing.
    let mut again = Step::default();
    again.record(SideKind::Recall, ("research", "researcher"), json!({"scope": "other"}), &json!([]));
    again.messages.push(message("research", ChatMessage::user("not written")));
    assert!(matches!(journal.commit(again).await, Err(JournalError::Storage(_))));
    assert_eq!(journal.load().await.expect("load"), memory.snapshot());
}

/// Migration 27 moves the side records older releases journaled as tool calls into their table.
#[sqlx::test(migrations = false)]
async fn migration_27_moves_the_fake_tool_call_rows_into_side_records(pool: PgPool) {
    let before: Vec<_> =
        agentd::store::MIGRATOR.iter().filter(|m| m.version < 20261205000027).cloned().collect();
    let old = sqlx::migrate::Migrator {
        migrations: std::borrow::Cow::Owned(before),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    old.run(&pool).await.expect("migrations up to 26");
    let store = Store::new(pool.clone());
    // Created and claimed as the releases of that schema did, by SQL (today's kickoff and claim
    // write and read columns later migrations added).
    let run = new_run();
    sqlx::query(
        "INSERT INTO runs (id, crew_name, crew_spec, inputs, metadata, status, attempt, lease_owner, \
                           lease_expires_at, started_at) \
         VALUES ($1, $2, $3, $4, '{}', 'running', 1, 'worker-1', now() + interval '30 seconds', now())",
    )
    .bind(run.id.0)
    .bind(&run.crew.name)
    .bind(serde_json::to_value(&run.crew).expect("spec"))
    .bind(serde_json::Value::Object(run.inputs.clone()))
    .execute(&pool)
    .await
    .expect("create");
    for (position, task) in run.crew.tasks.iter().enumerate() {
        sqlx::query("INSERT INTO run_tasks (run_id, position, name, agent) VALUES ($1, $2, $3, $4)")
            .bind(run.id.0)
            .bind(position as i32)
            .bind(&task.name)
            .bind(&task.agent)
            .execute(&pool)
            .await
            .expect("task");
    }
    let (run_id, attempt) = (run.id, 1);
    let insert = "INSERT INTO tool_calls (run_id, id, conversation, task, agent, tool, arguments, status, result, attempt, finished_at)
                  VALUES ($1, $2, $3, $3, 'researcher', $4, $5, 'succeeded', $6, 1, now())";
    for (id, task, tool, arguments, result) in [
        (
            "research#knowledge",
            "research",
            "knowledge",
            json!({"bases": ["docs"]}),
            r#"[{"base":"docs","hits":[]}]"#,
        ),
        ("research#recall", "research", "memory", json!({"scope": "user:ada"}), "[]"),
        ("research#1/call_1", "research", "calculator", json!({"e": "2+2"}), "4"),
    ] {
        sqlx::query(insert)
            .bind(run_id.0)
            .bind(id)
            .bind(task)
            .bind(tool)
            .bind(arguments)
            .bind(result)
            .execute(&pool)
            .await
            .expect("old row");
    }
    agentd::store::MIGRATOR.run(&pool).await.expect("migration 27");
    let tools: Vec<String> = sqlx::query_scalar("SELECT tool FROM tool_calls WHERE run_id = $1")
        .bind(run_id.0)
        .fetch_all(&pool)
        .await
        .expect("calls");
    assert_eq!(tools, ["calculator"], "only the real call stays a tool call");
    let loaded = store.journal(run_id, attempt).load().await.expect("load");
    let knowledge: Option<serde_json::Value> =
        loaded.recorded(SideKind::Knowledge, "research").expect("readable");
    assert_eq!(knowledge, Some(json!([{"base": "docs", "hits": []}])));
    let recall: Option<serde_json::Value> = loaded.recorded(SideKind::Recall, "research").expect("readable");
    assert_eq!(recall, Some(json!([])));
    let listed: Vec<String> =
        store.list_tool_calls(run_id).await.expect("list").into_iter().map(|c| c.id).collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    // Removing the run removes its side records with it.
    let removed: i64 = sqlx::query_scalar("SELECT agentd_remove_runs($1)")
        .bind(vec![run_id.0])
        .fetch_one(&pool)
        .await
        .expect("remove");
    assert!(removed >= 4, "{removed}");
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM side_records").fetch_one(&pool).await.expect("count");
    assert_eq!(left, 0);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_lost_lease_fences_the_commit_and_writes_nothing(pool: PgPool) {
    let store = Store::new(pool.clone());
    let (claimed, journal) = claimed_run(&store).await;
    journal.commit(llm_step()).await.expect("commit");
    let snapshot = journal.load().await.expect("load");

    // Another worker claims the run: its attempt is newer than this journal's.
    sqlx::query("UPDATE runs SET attempt = attempt + 1 WHERE id = $1")
        .bind(claimed.id.0)
        .execute(&pool)
        .await
        .expect("bump");
    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!(journal.commit(tools_step()).await, Err(JournalError::Fenced));
    assert_eq!(journal.commit(final_step()).await, Err(JournalError::Fenced));
    assert_eq!(journal.load().await.expect("load"), snapshot);
    assert_eq!(store.get_run(claimed.id).await.expect("get"), Some(run));
    assert_eq!(store.list_events(claimed.id, 0, 100).await.expect("events").len(), 4);

    // The new attempt writes.
    let current = store.journal(claimed.id, claimed.attempt + 1);
    current.commit(tools_step()).await.expect("commit");
    assert_eq!(
        current.load().await.expect("load").tool_call("call_1").map(|c| c.outcome.is_some()),
        Some(true)
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_finished_or_requeued_run_fences_commits(pool: PgPool) {
    let store = Store::new(pool.clone());
    let (claimed, journal) = claimed_run(&store).await;
    let error = RunError { kind: ErrorKind::MaxIter, message: "gave up".into() };
    let failing = Step { run: Some(RunChange::Failed { error: error.clone() }), ..Step::default() };
    journal.commit(failing).await.expect("commit");
    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!((run.status, run.error), (RunStatus::Failed, Some(error)));
    let lease: (Option<String>, bool) =
        sqlx::query_as("SELECT lease_owner, lease_expires_at IS NULL FROM runs WHERE id = $1")
            .bind(claimed.id.0)
            .fetch_one(&pool)
            .await
            .expect("lease");
    assert_eq!(lease, (None, true), "a finished run holds no lease");
    assert_eq!(journal.commit(tools_step()).await, Err(JournalError::Fenced));
    assert_eq!(journal.commit(Step::default()).await, Err(JournalError::Fenced));

    // A run put back in the queue has no lease holder until the next claim.
    let (claimed, journal) = claimed_run(&store).await;
    sqlx::query("UPDATE runs SET status = 'queued' WHERE id = $1")
        .bind(claimed.id.0)
        .execute(&pool)
        .await
        .expect("requeue");
    assert_eq!(journal.commit(llm_step()).await, Err(JournalError::Fenced));
    assert_eq!(journal.load().await.expect("load").messages, []);
    // So is a run that does not exist, and nothing of its step is written (the journal's tables
    // have no foreign keys: the fence is what keeps them from holding orphans).
    let missing = agentd::domain::RunId::new();
    let nowhere = store.journal(missing, 1);
    assert_eq!(nowhere.commit(llm_step()).await, Err(JournalError::Fenced));
    let orphans: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM events WHERE run_id = $1) + (SELECT count(*) FROM messages WHERE run_id = $1)
              + (SELECT count(*) FROM tool_calls WHERE run_id = $1)",
    )
    .bind(missing.0)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(orphans, 0);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_empty_step_is_harmless(pool: PgPool) {
    let store = Store::new(pool);
    let (claimed, journal) = claimed_run(&store).await;
    let run = store.get_run(claimed.id).await.expect("get");
    journal.commit(Step::default()).await.expect("commit");
    assert_eq!(journal.load().await.expect("load"), MemoryJournal::new(&["research", "write"]).snapshot());
    assert_eq!(store.get_run(claimed.id).await.expect("get"), run);
    assert_eq!(store.list_events(claimed.id, 0, 100).await.expect("events").len(), 2);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_step_that_contradicts_the_journal_writes_nothing(pool: PgPool) {
    let store = Store::new(pool);
    let (_, journal) = claimed_run(&store).await;
    let storage_error = |result: Result<(), JournalError>| match result {
        Err(JournalError::Storage(message)) => message,
        other => panic!("expected a storage error, got {other:?}"),
    };
    let unknown_task = Step { tasks: vec![TaskChange::Started { task: "ghost".into() }], ..llm_step() };
    assert!(storage_error(journal.commit(unknown_task).await).contains("task"));
    let never_started =
        ToolCallEnd { id: "nope".into(), outcome: ToolCallOutcome::Failed { error: "x".into() } };
    let unknown_call = Step { tool_ends: vec![never_started], ..llm_step() };
    assert!(storage_error(journal.commit(unknown_call).await).contains("never started"));
    // A value Postgres refuses (a token count past bigint): the engine learns the class, not the SQL.
    journal.commit(one_token()).await.expect("commit");
    assert_eq!(storage_error(journal.commit(overflowing()).await), "database error");
    let one_token_spent =
        Snapshot { spent_tokens: 1, ..MemoryJournal::new(&["research", "write"]).snapshot() };
    assert_eq!(journal.load().await.expect("load"), one_token_spent);

    // A call interrupted while running may start again; a finished one may not.
    journal.commit(llm_step()).await.expect("commit");
    let again = Step { tool_starts: vec![start("call_1", json!({"e": "3+3"}))], ..Step::default() };
    journal.commit(again.clone()).await.expect("restart a running call");
    let call = journal.load().await.expect("load").tool_call("call_1").cloned().expect("call_1");
    assert_eq!((call.arguments, call.outcome), (json!({"e": "3+3"}), None));
    journal.commit(tools_step()).await.expect("commit");
    assert!(storage_error(journal.commit(again).await).contains("finished"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn concurrent_commits_keep_message_seq_dense(pool: PgPool) {
    let store = Store::new(pool);
    let (claimed, journal) = claimed_run(&store).await;
    let commits = (0..8).map(|i| {
        let journal = journal.clone();
        tokio::spawn(async move {
            let text = |n: usize| ChatMessage::user(format!("{i}.{n}"));
            let step = Step {
                messages: vec![message(&format!("c{i}"), text(1)), message(&format!("c{i}"), text(2))],
                ..Step::default()
            };
            journal.commit(step).await
        })
    });
    for commit in commits {
        commit.await.expect("join").expect("commit");
    }
    let snapshot: Snapshot = journal.load().await.expect("load");
    for i in 0..8 {
        let texts: Vec<_> = snapshot.conversation(&format!("c{i}")).into_iter().map(|m| m.content).collect();
        assert_eq!(
            texts,
            [Some(format!("{i}.1")), Some(format!("{i}.2"))],
            "a step's messages stay together"
        );
    }
    let seqs: Vec<i64> =
        store.list_messages(claimed.id).await.expect("messages").iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=16).collect::<Vec<i64>>());
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn commits_of_many_runs_share_transactions_and_fail_alone(pool: PgPool) {
    // Forty runs commit at once: their steps are written in shared transactions (group commit),
    // and the one that names an unknown task, the one Postgres refuses (a count past bigint) and the one
    // whose attempt no longer holds its run each fail alone.
    let store = Store::new(pool);
    let mut journals = Vec::new();
    for i in 0..40 {
        let (claimed, journal) = claimed_run(&store).await;
        let journal = if i == 13 { store.journal(claimed.id, claimed.attempt + 1) } else { journal };
        journals.push((claimed.id, journal));
    }
    let step = |i: usize| match i {
        5 => Step { tasks: vec![TaskChange::Started { task: "ghost".into() }], ..llm_step() },
        9 => overflowing(),
        _ => llm_step(),
    };
    journals[9].1.commit(one_token()).await.expect("commit");
    let commits: Vec<_> = journals
        .iter()
        .enumerate()
        .map(|(i, (_, journal))| {
            let (journal, step) = (journal.clone(), step(i));
            tokio::spawn(async move { journal.commit(step).await })
        })
        .collect();
    let mut results = Vec::new();
    for commit in commits {
        results.push(commit.await.expect("join"));
    }

    let committed = MemoryJournal::new(&["research", "write"]);
    committed.commit(llm_step()).await.expect("commit");
    let untouched = MemoryJournal::new(&["research", "write"]).snapshot();
    for (i, ((id, journal), result)) in journals.iter().zip(results).enumerate() {
        let (expected, events) = match i {
            5 => {
                assert!(matches!(&result, Err(JournalError::Storage(m)) if m.contains("task")), "{result:?}");
                (untouched.clone(), 2)
            }
            9 => {
                assert_eq!(result, Err(JournalError::Storage("database error".into())));
                // Only the one token committed before.
                (Snapshot { spent_tokens: 1, ..untouched.clone() }, 2)
            }
            13 => {
                assert_eq!(result, Err(JournalError::Fenced));
                (untouched.clone(), 2)
            }
            _ => {
                assert_eq!(result, Ok(()), "run {i}");
                (committed.snapshot(), 4)
            }
        };
        assert_eq!(journal.load().await.expect("load"), expected, "run {i}");
        let seqs: Vec<i64> =
            store.list_events(*id, 0, 100).await.expect("events").iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events).collect::<Vec<i64>>(), "run {i}");
        let usage = store.get_run(*id).await.expect("get").expect("run").usage;
        assert_eq!(usage.llm_calls, if events == 4 { 1 } else { 0 }, "run {i}");
    }
    let (_, journal) = store.group_stats().into_iter().find(|(kind, _)| *kind == "journal").expect("journal");
    assert!(journal.items > journal.batches, "steps shared transactions: {journal:?}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn nul_characters_anywhere_in_a_step_are_stored_as_replacements(pool: PgPool) {
    let store = Store::new(pool);
    let (claimed, journal) = claimed_run(&store).await;
    let mut step = Step {
        messages: vec![message("research", ChatMessage::assistant("a\0b"))],
        tool_starts: vec![start("call\0", json!({"expression": "1\0", "k\0": ["\0"]}))],
        tool_ends: vec![ToolCallEnd {
            id: "call\0".into(),
            outcome: ToolCallOutcome::Succeeded { result: "r\0".into(), cached: false },
        }],
        tasks: vec![
            TaskChange::Started { task: "research".into() },
            TaskChange::Completed { task: "research".into(), output: output("o\0") },
        ],
        run: Some(RunChange::Completed { output: output("done\0") }),
        ..Step::default()
    };
    step.event(Some("research"), Some("researcher"), crate::support::thought("t\0"));
    journal.commit(step).await.expect("a step with NUL characters commits");
    let snapshot = journal.load().await.expect("load");
    let r = '\u{FFFD}';
    assert_eq!(snapshot.messages[0].message.content, Some(format!("a{r}b")));
    let call = &snapshot.tool_calls[0];
    assert_eq!(call.arguments, json!({"expression": format!("1{r}"), format!("k{r}"): [r.to_string()]}));
    assert_eq!(call.outcome, Some(ToolCallOutcome::Succeeded { result: format!("r{r}"), cached: false }));
    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!(run.output.map(|o| o.raw), Some(format!("done{r}")));
    assert_eq!(run.tasks[0].output.as_ref().map(|o| o.raw.clone()), Some(format!("o{r}")));
    let events = store.list_events(claimed.id, 2, 10).await.expect("events");
    assert_eq!(events[0].data, json!({"text": format!("t{r}")}));
}

/// A group writer keeps a connection of its own, outside the pool. Postgres dropping it costs at
/// most the write that meets it: one unused for a second is tested before a write and replaced,
/// and one that failed a write is replaced for the next.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_journal_writers_dropped_connection_is_replaced(pool: PgPool) {
    let store = Store::new(pool.clone());
    let (claimed, journal) = claimed_run(&store).await;
    journal.commit(llm_step()).await.expect("commit");
    let drop_the_writers_connection = || async {
        let pids: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
              WHERE datname = current_database() AND query LIKE 'SELECT agentd_journal_write(%'",
        )
        .fetch_all(&pool)
        .await
        .expect("writers");
        assert_eq!(pids.len(), 1, "the run's writer has one connection: {pids:?}");
        sqlx::query("SELECT pg_terminate_backend(pid) FROM unnest($1::int4[]) AS pid")
            .bind(&pids)
            .execute(&pool)
            .await
            .expect("terminate");
        for _ in 0..250 {
            let alive: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)")
                .bind(&pids)
                .fetch_one(&pool)
                .await
                .expect("alive");
            if alive == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the writer's connection outlived its termination");
    };

    // Unused for more than a second: tested before the write, and replaced.
    drop_the_writers_connection().await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    journal.commit(tools_step()).await.expect("written on a new connection");

    // Just used, so not tested: the write that meets it fails and writes nothing, the next one
    // takes another connection.
    drop_the_writers_connection().await;
    let failed = journal.commit(final_step()).await;
    assert!(matches!(failed, Err(JournalError::Storage(_))), "{failed:?}");
    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!(run.status, RunStatus::Running, "nothing of the failed write");
    journal.commit(final_step()).await.expect("written on a new connection");
    let run = store.get_run(claimed.id).await.expect("get").expect("run");
    assert_eq!(run.status, RunStatus::Completed);
}

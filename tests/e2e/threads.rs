//! Threads over HTTP: a thread of runs whose later runs see the earlier ones (the fake model's
//! recorded requests show it), bounded by `history_runs`; each `multitask_strategy` against a
//! run that is still going; kickoffs into one thread through two replicas at once, which never
//! run two of its runs at a time; listing, filtering and deleting threads, another tenant's
//! thread, and the bad input each route refuses.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::memory::user_prompt;
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers, wait_for, wait_requests};

/// A one-task crew answering `{message}`.
fn chat_crew() -> Value {
    json!({
        "name": "chat",
        "agents": [{"name": "a", "role": "Assistant", "goal": "Help", "backstory": "Brief."}],
        "tasks": [{"name": "reply", "description": "The user says: {message}", "expected_output": "A reply", "agent": "a"}]
    })
}

async fn new_thread(app: &TestApp, metadata: Value) -> String {
    let response = app.post_json("/v1/threads", &json!({ "metadata": metadata })).await;
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let thread = expect_json(response, StatusCode::CREATED).await;
    let id = thread["id"].as_str().expect("id").to_owned();
    assert_eq!(location, format!("/v1/threads/{id}"));
    assert_eq!((thread["status"].as_str(), thread["runs"].clone()), (Some("idle"), json!([])), "{thread}");
    id
}

/// Kick off the chat crew in `thread` with `extra` fields; the response.
async fn kickoff_in(app: &TestApp, thread: &str, message: &str, extra: Value) -> reqwest::Response {
    let mut body = json!({"crew": chat_crew(), "inputs": {"message": message}, "thread_id": thread});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    app.post_json("/v1/kickoffs", &body).await
}

async fn kicked(app: &TestApp, thread: &str, message: &str, extra: Value) -> Value {
    expect_json(kickoff_in(app, thread, message, extra).await, StatusCode::ACCEPTED).await
}

fn id(run: &Value) -> String {
    run["id"].as_str().expect("id").to_owned()
}

fn at(run: &Value, field: &str) -> DateTime<Utc> {
    run[field].as_str().unwrap_or_else(|| panic!("{field}: {run}")).parse().expect("a time")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_thread_of_three_runs_shows_the_third_the_first_two(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("Paris is the capital of France."),
        FakeReply::text("About 2.1 million people live there."),
        FakeReply::text("Paris: capital, 2.1 million."),
        FakeReply::text("Just the last one."),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let thread = new_thread(&app, json!({"user": "ada", "topic": "travel"})).await;

    let mut runs = Vec::new();
    for message in ["What is the capital of France?", "How many people live there?", "Summarise."] {
        let run = kicked(&app, &thread, message, json!({})).await;
        assert_eq!(run["thread_id"].as_str(), Some(thread.as_str()), "{run}");
        let done = wait_for(&app, &id(&run), &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{done}");
        runs.push(id(&run));
    }
    // The first run saw no history; the third saw the first two, oldest first.
    assert!(!user_prompt(&fake, 0).contains("Conversation so far"), "{}", user_prompt(&fake, 0));
    let third = user_prompt(&fake, 2);
    let order = [
        "The user says: Summarise.",
        "Conversation so far",
        "What is the capital of France?",
        "Paris is the capital of France.",
        "How many people live there?",
        "About 2.1 million people live there.",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|text| third.find(text).unwrap_or_else(|| panic!("{text} not in {third}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{third}");

    // history_runs bounds it: the fourth run sees the third only.
    let fourth = kicked(&app, &thread, "And?", json!({"history_runs": 1})).await;
    wait_for(&app, &id(&fourth), &["completed"]).await;
    let prompt = user_prompt(&fake, 3);
    assert!(prompt.contains("Summarise.") && prompt.contains("Paris: capital, 2.1 million."), "{prompt}");
    assert!(!prompt.contains("capital of France?"), "{prompt}");

    // The thread: idle, its runs oldest first.
    let body = expect_json(app.get(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    assert_eq!(body["status"], "idle", "{body}");
    assert_eq!(body["metadata"], json!({"user": "ada", "topic": "travel"}));
    let listed: Vec<&str> =
        body["runs"].as_array().expect("runs").iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(listed, [runs[0].as_str(), runs[1].as_str(), runs[2].as_str(), id(&fourth).as_str()]);

    // Listing: newest first, by metadata containment, a page at a time.
    let other = new_thread(&app, json!({"user": "bob"})).await;
    let list = |query: &'static [(&'static str, &'static str)]| {
        let app = &app;
        async move {
            let response = app.request(Method::GET, "/v1/threads").query(query).send().await.expect("GET");
            expect_json(response, StatusCode::OK).await
        }
    };
    let ids = |page: &Value| -> Vec<String> {
        page["threads"]
            .as_array()
            .expect("threads")
            .iter()
            .map(|t| t["id"].as_str().expect("id").to_owned())
            .collect()
    };
    assert_eq!(ids(&list(&[]).await), [other.clone(), thread.clone()]);
    let adas = list(&[("metadata", "user:ada")]).await;
    assert_eq!(ids(&adas), std::slice::from_ref(&thread));
    assert_eq!(adas["threads"][0]["status"], "idle");
    assert_eq!(ids(&list(&[("metadata", "user:eve")]).await), Vec::<String>::new());
    assert_eq!(ids(&list(&[("metadata", "topic:travel")]).await), std::slice::from_ref(&thread));
    let first_page = list(&[("limit", "1")]).await;
    assert_eq!(ids(&first_page), std::slice::from_ref(&other));
    let cursor = first_page["next_cursor"].as_str().expect("a cursor").to_owned();
    let second = app.request(Method::GET, "/v1/threads").query(&[("limit", "1"), ("cursor", &cursor)]).send();
    let second = expect_json(second.await.expect("GET"), StatusCode::OK).await;
    assert_eq!((ids(&second), second["next_cursor"].clone()), (vec![thread.clone()], Value::Null));

    // Deleting the thread deletes its runs.
    let deleted = expect_json(app.delete(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    assert_eq!(deleted, json!({"id": thread, "runs_deleted": 4}));
    expect_problem(app.get(&format!("/v1/threads/{thread}")).await, StatusCode::NOT_FOUND).await;
    for run in &runs {
        expect_problem(app.get(&format!("/v1/runs/{run}")).await, StatusCode::NOT_FOUND).await;
    }
    expect_problem(kickoff_in(&app, &thread, "hi", json!({})).await, StatusCode::NOT_FOUND).await;
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn each_multitask_strategy_treats_the_running_run_as_it_says(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done")));
    let slow = || FakeReply::text("slow answer").with_delay(Duration::from_millis(1500));
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let thread = new_thread(&app, json!({})).await;
    let running = |run: String| {
        let app = &app;
        async move { wait_for(app, &run, &["running"]).await }
    };

    // reject: 409 naming the run that is going; nothing is stored.
    fake.push([slow()]);
    let first = kicked(&app, &thread, "one", json!({})).await;
    running(id(&first)).await;
    wait_requests(&fake, 1).await;
    let refused = kickoff_in(&app, &thread, "two", json!({"multitask_strategy": "reject"})).await;
    let problem = expect_problem(refused, StatusCode::CONFLICT).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains(&id(&first))), "{problem}");
    let busy = expect_json(app.get(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    assert_eq!((busy["status"].as_str(), busy["runs"].as_array().map(Vec::len)), (Some("busy"), Some(1)));

    // enqueue (the default): the new run waits, and starts when the first has ended.
    let second = kicked(&app, &thread, "two", json!({})).await;
    assert_eq!(second["status"], "waiting", "{second}");
    let first = wait_for(&app, &id(&first), &["completed"]).await;
    let second = wait_for(&app, &id(&second), &["completed"]).await;
    assert!(at(&second, "started_at") >= at(&first, "finished_at"), "{first}\n{second}");

    // interrupt: the running run is cancelled (and kept, with what it did); the new one runs.
    fake.push([slow()]);
    let before = fake.requests().len();
    let third = kicked(&app, &thread, "three", json!({})).await;
    running(id(&third)).await;
    wait_requests(&fake, before + 1).await;
    let fourth = kicked(&app, &thread, "four", json!({"multitask_strategy": "interrupt"})).await;
    let third = wait_for(&app, &id(&third), &["cancelled", "completed", "failed"]).await;
    assert_eq!(third["status"], "cancelled", "{third}");
    let fourth = wait_for(&app, &id(&fourth), &["completed", "failed"]).await;
    assert_eq!(fourth["status"], "completed", "{fourth}");
    assert!(at(&fourth, "started_at") >= at(&third, "finished_at"), "{third}\n{fourth}");

    // rollback: the running run is cancelled and deleted; the new one runs.
    fake.push([slow()]);
    let fifth = kicked(&app, &thread, "five", json!({})).await;
    running(id(&fifth)).await;
    let sixth = kicked(&app, &thread, "six", json!({"multitask_strategy": "rollback"})).await;
    let sixth = wait_for(&app, &id(&sixth), &["completed", "failed"]).await;
    assert_eq!(sixth["status"], "completed", "{sixth}");
    expect_problem(app.get(&format!("/v1/runs/{}", id(&fifth))).await, StatusCode::NOT_FOUND).await;

    // A waiting run cancelled on its own leaves the thread going: the next one still runs.
    fake.push([slow()]);
    let seventh = kicked(&app, &thread, "seven", json!({})).await;
    running(id(&seventh)).await;
    let eighth = kicked(&app, &thread, "eight", json!({})).await;
    let ninth = kicked(&app, &thread, "nine", json!({})).await;
    let cancelled = app.post_json(&format!("/v1/runs/{}/cancel", id(&eighth)), &json!({})).await;
    assert_eq!(expect_json(cancelled, StatusCode::ACCEPTED).await["status"], "cancelled");
    assert_eq!(wait_for(&app, &id(&ninth), &["completed", "failed"]).await["status"], "completed");

    // The thread holds every run but the rolled-back one, oldest first.
    let body = expect_json(app.get(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    let statuses: Vec<&str> =
        body["runs"].as_array().expect("runs").iter().filter_map(|r| r["status"].as_str()).collect();
    assert_eq!(
        statuses,
        [
            "completed",
            "completed",
            "cancelled",
            "completed",
            "completed",
            "completed",
            "cancelled",
            "completed"
        ]
    );
    assert_eq!(body["status"], "idle");
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn kickoffs_into_one_thread_on_two_replicas_at_once_never_run_two_at_a_time(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("ok").with_delay(Duration::from_millis(60))));
    let config = fake_config(&fake);
    let (one, two) = (
        TestApp::spawn_with(pool.clone(), config.clone()).await,
        TestApp::spawn_with(pool.clone(), config.clone()).await,
    );
    let workers_one = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let workers_two = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));
    let thread = new_thread(&one, json!({})).await;

    // Eight kickoffs at once, half through each replica, all enqueued: every run completes, one
    // after another. Then six more, half of them interrupting: whatever started, started alone.
    let mut total = 0;
    for (count, interrupting) in [(8, false), (6, true)] {
        let kickoffs =
            (0..count).map(|i| {
                let app = if i % 2 == 0 { &one } else { &two };
                let strategy = if interrupting && i % 2 == 1 { "interrupt" } else { "enqueue" };
                let thread = thread.clone();
                async move {
                    kicked(app, &thread, &format!("m{i}"), json!({"multitask_strategy": strategy})).await
                }
            });
        let runs: Vec<Value> = futures_util::future::join_all(kickoffs).await;
        total += runs.len();
        let mut ended = Vec::new();
        for run in &runs {
            ended.push(wait_for(&one, &id(run), &["completed", "failed", "cancelled"]).await);
        }
        if !interrupting {
            assert!(ended.iter().all(|r| r["status"] == "completed"), "{ended:?}");
        }
        let mut windows: Vec<(DateTime<Utc>, DateTime<Utc>)> = ended
            .iter()
            .filter(|r| !r["started_at"].is_null())
            .map(|r| (at(r, "started_at"), at(r, "finished_at")))
            .collect();
        assert!(windows.len() >= if interrupting { 1 } else { count }, "{ended:?}");
        windows.sort();
        for pair in windows.windows(2) {
            assert!(pair[1].0 >= pair[0].1, "two runs of the thread at once: {pair:?}");
        }
    }
    let body = expect_json(two.get(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    assert_eq!((body["status"].as_str(), body["runs"].as_array().map(Vec::len)), (Some("idle"), Some(total)));
    for workers in [workers_one, workers_two] {
        workers.stop.cancel();
        workers.done.await.expect("workers");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn threads_refuse_bad_input_and_running_deletes(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("slow").with_delay(Duration::from_millis(1500))]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let thread = new_thread(&app, json!({})).await;

    let invalid = [
        (
            json!({"crew": chat_crew(), "inputs": {"message": "m"}, "multitask_strategy": "enqueue"}),
            "multitask_strategy",
        ),
        (json!({"crew": chat_crew(), "inputs": {"message": "m"}, "history_runs": 3}), "history_runs"),
        (
            json!({"crew": chat_crew(), "inputs": {"message": "m"}, "thread_id": thread, "history_runs": 101}),
            "history_runs",
        ),
        (
            json!({"crew": chat_crew(), "inputs": {"message": "m"}, "thread_id": thread, "multitask_strategy": "later"}),
            "multitask_strategy",
        ),
        (json!({"crew": chat_crew(), "inputs": {"message": "m"}, "thread_id": "not-a-uuid"}), "thread_id"),
    ];
    for (body, field) in invalid {
        let problem =
            expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    let unknown = kickoff_in(&app, &uuid::Uuid::now_v7().to_string(), "m", json!({})).await;
    expect_problem(unknown, StatusCode::NOT_FOUND).await;
    for body in [json!({"metadata": "text"}), json!({"metadata": {}, "name": "x"})] {
        expect_problem(app.post_json("/v1/threads", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    }
    let big = json!({"metadata": {"blob": "x".repeat(20_000)}});
    let problem =
        expect_problem(app.post_json("/v1/threads", &big).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("metadata"), "{problem}");
    let get = |query: &'static [(&'static str, &'static str)]| {
        app.request(Method::GET, "/v1/threads").query(query).send()
    };
    expect_problem(get(&[("metadata", "user")]).await.expect("GET"), StatusCode::UNPROCESSABLE_ENTITY).await;
    expect_problem(get(&[("metadata", ":ada")]).await.expect("GET"), StatusCode::UNPROCESSABLE_ENTITY).await;
    expect_problem(get(&[("limit", "0")]).await.expect("GET"), StatusCode::BAD_REQUEST).await;
    expect_problem(get(&[("cursor", "x")]).await.expect("GET"), StatusCode::BAD_REQUEST).await;
    expect_problem(app.get("/v1/threads/not-a-uuid").await, StatusCode::BAD_REQUEST).await;

    // A thread with a running run is not deleted (409); once it has ended, it is.
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let run = kicked(&app, &thread, "m", json!({})).await;
    wait_for(&app, &id(&run), &["running"]).await;
    let problem =
        expect_problem(app.delete(&format!("/v1/threads/{thread}")).await, StatusCode::CONFLICT).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains(&id(&run))), "{problem}");
    wait_for(&app, &id(&run), &["completed"]).await;
    let deleted = expect_json(app.delete(&format!("/v1/threads/{thread}")).await, StatusCode::OK).await;
    assert_eq!(deleted["runs_deleted"], 1);
    expect_problem(app.delete(&format!("/v1/threads/{thread}")).await, StatusCode::NOT_FOUND).await;
    workers.stop.cancel();
    workers.done.await.expect("workers");
}

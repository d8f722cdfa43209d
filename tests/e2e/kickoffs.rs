//! `POST /v1/kickoffs`: acceptance, validation, body errors and idempotency.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, problem_fields, sample_crew, sample_inputs, TestApp};

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn kickoff_persists_a_queued_run_with_its_first_event(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = json!({"crew": sample_crew(), "inputs": sample_inputs(), "metadata": {"ticket": 7}});
    let response = app.post_json("/v1/kickoffs", &body).await;
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let run = expect_json(response, StatusCode::ACCEPTED).await;
    let id = run["id"].as_str().expect("id");
    assert_eq!(location, format!("/v1/runs/{id}"));
    assert_eq!(run["status"], "queued");
    assert_eq!(run["crew_name"], "trip-planner");
    assert_eq!(run["inputs"], sample_inputs());
    assert_eq!(run["metadata"], json!({"ticket": 7}));
    assert_eq!(run["attempt"], 0);
    assert_eq!(
        run["usage"],
        json!({"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "estimated_tokens": 0, "tool_calls": 0, "cost_usd": 0.0})
    );
    assert_eq!(run["links"]["events"], format!("/v1/runs/{id}/events"));
    let tasks: Vec<(&str, &str)> = run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| (t["name"].as_str().expect("name"), t["status"].as_str().expect("status")))
        .collect();
    assert_eq!(tasks, [("research", "pending"), ("write", "pending")]);

    let fetched = expect_json(app.get(&location).await, StatusCode::OK).await;
    assert_eq!(fetched, run);
    let events = expect_json(app.get(&format!("{location}/events")).await, StatusCode::OK).await;
    assert_eq!(events["events"].as_array().map(Vec::len), Some(1));
    assert_eq!(events["events"][0]["type"], "run.queued");
    assert_eq!(events["events"][0]["seq"], 1);
    assert_eq!(events["events"][0]["run_id"], id);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn kickoff_snapshots_the_spec_with_defaults(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let run = app.kickoff(&sample_crew(), sample_inputs()).await;
    let id = uuid::Uuid::parse_str(run["id"].as_str().expect("id")).expect("uuid");
    let spec: Value = sqlx::query_scalar("SELECT crew_spec FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("spec");
    assert_eq!(spec["process"], "sequential");
    assert_eq!(spec["agents"][0]["max_iter"], 20);
    assert_eq!(spec["agents"][0]["tool_calling"], "auto");
    assert_eq!(spec["tools"][0].get("idempotent"), None, "a POST tool is not idempotent unless it says so");
    assert_eq!(spec["tasks"][0]["description"], "Research {topic}", "placeholders are filled at run time");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn every_missing_input_is_named(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let response =
        app.post_json("/v1/kickoffs", &json!({"crew": sample_crew(), "inputs": {"other": 1}})).await;
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = problem_fields(&problem);
    assert_eq!(fields.keys().collect::<Vec<_>>(), ["inputs.audience", "inputs.topic"]);
    assert!(fields["inputs.topic"].contains("{topic}"));
    assert_runs(&pool, 0).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_nul_character_in_a_body_is_a_422_not_a_database_error(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let inputs = json!({"topic": "tides\u{0}", "audience": "kids"});
    for (path, body) in [
        ("/v1/kickoffs", json!({"crew": sample_crew(), "inputs": inputs})),
        ("/v1/kickoffs/batch", json!({"crew": sample_crew(), "inputs": [inputs]})),
        (
            "/v1/kickoffs",
            json!({"crew": sample_crew(), "inputs": {"topic": "t", "audience": "a"},
                                "metadata": {"k\u{0}": 1}}),
        ),
    ] {
        let problem =
            expect_problem(app.post_json(path, &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(problem.to_string().contains("NUL character"), "{problem}");
    }
    // The error names the string that holds it (a value or a key).
    for (body, field) in [
        (json!({"crew": sample_crew(), "inputs": inputs}), "inputs.topic"),
        (json!({"crew": sample_crew(), "inputs": [inputs]}), "inputs[0].topic"),
        (
            json!({"crew": sample_crew(), "inputs": {"topic": "t"}, "metadata": {"k\u{0}": 1}}),
            "metadata.k\u{0}",
        ),
    ] {
        let path = if body["inputs"].is_array() { "/v1/kickoffs/batch" } else { "/v1/kickoffs" };
        let problem =
            expect_problem(app.post_json(path, &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert_eq!(problem["errors"][0]["field"], field, "{problem}");
    }
    assert_runs(&pool, 0).await;
    // A backslash followed by the text u0000 is no NUL.
    let inputs = json!({"topic": "C:\\u0000", "audience": "kids"});
    let response = app.post_json("/v1/kickoffs", &json!({"crew": sample_crew(), "inputs": inputs})).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn invalid_specs_report_every_field_path(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut crew = sample_crew();
    crew["agents"][1]["name"] = json!("researcher");
    crew["agents"][0]["tools"] = json!(["calculator", "nope"]);
    crew["agents"][0]["llm"] = json!("mystery/model");
    crew["agents"][0]["max_iter"] = json!(0);
    crew["tasks"][0]["agent"] = json!("ghost");
    crew["tasks"][1]["context"] = json!(["write", "missing"]);
    crew["tasks"][1]["output_schema"] = json!({"type": "thing"});
    crew["tools"][0]["http"]["url"] = json!("ftp://x");
    crew["tools"][0]["parameters"] = json!({"type": "string"});
    let response = app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": sample_inputs()})).await;
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = problem_fields(&problem);
    let expected = [
        ("crew.agents[1].name", "duplicate agent name 'researcher'"),
        ("crew.agents[0].tools[1]", "unknown tool 'nope'"),
        ("crew.agents[0].llm", "unknown provider 'mystery'"),
        ("crew.agents[0].max_iter", "between 1 and"),
        ("crew.tasks[0].agent", "unknown agent 'ghost'"),
        ("crew.tasks[1].agent", "unknown agent 'writer'"),
        ("crew.tasks[1].context[0]", "does not come before"),
        ("crew.tasks[1].context[1]", "unknown task 'missing'"),
        ("crew.tasks[1].output_schema.type", "must be one of"),
        ("crew.tools[0].http.url", "http or https"),
        ("crew.tools[0].parameters.type", "\"object\""),
    ];
    for (field, message) in expected {
        let got = fields.get(field).unwrap_or_else(|| panic!("no error for {field}: {fields:?}"));
        assert!(got.contains(message), "{field}: {got}");
    }
    assert_eq!(fields.len(), expected.len(), "{fields:?}");
    assert_runs(&pool, 0).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn structural_errors_and_duplicates_are_422(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cases = [
        (json!({"crew": {"name": "c", "agents": [], "tasks": []}}), "crew.agents"),
        (
            json!({"crew": {"name": "c", "agents": [{"name": "a", "role": "r", "goal": "g"}], "tasks": []}}),
            "crew.agents[0]",
        ),
        (json!({"crew": {"name": "c", "agnets": []}}), "crew.agnets"),
        (json!({"crew": 5}), "crew"),
        (json!({"crew": "bad name!"}), "crew"),
        (json!({"inputs": {}}), ""),
        (json!({"crew": "c", "inputs": []}), "inputs"),
        (json!({"crew": "c", "extra": true}), "extra"),
    ];
    for (body, field) in cases {
        let problem =
            expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        let fields = problem_fields(&problem);
        assert!(fields.contains_key(field), "{body} → {fields:?}");
    }
    let mut crew = sample_crew();
    crew["tasks"][1]["name"] = json!("research");
    crew["tools"][0]["name"] = json!("calculator");
    let problem = expect_problem(
        app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": sample_inputs()})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = problem_fields(&problem);
    assert!(fields["crew.tasks[1].name"].contains("duplicate task name"), "{fields:?}");
    assert!(fields["crew.tools[0].name"].contains("built-in"), "{fields:?}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn hierarchical_crews_need_a_manager(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut crew = sample_crew();
    crew["process"] = json!("hierarchical");
    crew["tasks"][0].as_object_mut().expect("task").remove("agent");
    let body = json!({"crew": crew, "inputs": sample_inputs()});
    let problem =
        expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(problem_fields(&problem).keys().collect::<Vec<_>>(), ["crew.manager_llm"]);
    crew["manager_llm"] = json!("openai/gpt-4o");
    app.kickoff(&crew, sample_inputs()).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn malformed_bodies_are_problems(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let send = |body: Vec<u8>, content_type: Option<&'static str>| {
        let mut request = app.request(Method::POST, "/v1/kickoffs").body(body);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        request.send()
    };
    let bad_json = send(b"{\"crew\": ".to_vec(), Some("application/json")).await.expect("send");
    expect_problem(bad_json, StatusCode::BAD_REQUEST).await;
    let trailing = send(b"{} {}".to_vec(), Some("application/json")).await.expect("send");
    expect_problem(trailing, StatusCode::BAD_REQUEST).await;
    let not_json = send(b"crew=x".to_vec(), Some("application/x-www-form-urlencoded")).await.expect("send");
    expect_problem(not_json, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let no_type = send(b"{}".to_vec(), None).await.expect("send");
    expect_problem(no_type, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let mut huge = b"{\"crew\": \"c\", \"metadata\": {\"pad\": \"".to_vec();
    huge.resize(huge.len() + 3 * 1024 * 1024, b'x');
    huge.extend_from_slice(b"\"}}");
    let too_large = send(huge, Some("application/json")).await.expect("send");
    expect_problem(too_large, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert_runs(&pool, 0).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn kickoff_of_a_registered_crew(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    expect_json(app.put_json("/v1/crews/trip-planner", &sample_crew()).await, StatusCode::CREATED).await;
    let run = app.kickoff(&json!("trip-planner"), sample_inputs()).await;
    assert_eq!(run["crew_name"], "trip-planner");
    let missing = app.post_json("/v1/kickoffs", &json!({"crew": "trip-planner"})).await;
    let problem = expect_problem(missing, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(problem_fields(&problem).len(), 2);
    let unknown = app.post_json("/v1/kickoffs", &json!({"crew": "nobody", "inputs": {}})).await;
    expect_problem(unknown, StatusCode::NOT_FOUND).await;
}

async fn post_with_key(app: &TestApp, key: &str, body: &Value) -> reqwest::Response {
    app.request(Method::POST, "/v1/kickoffs")
        .header("idempotency-key", key)
        .json(body)
        .send()
        .await
        .expect("POST")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn idempotency_key_replays_and_rejects_other_bodies(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let body = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    let first = post_with_key(&app, "order-42", &body).await;
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = expect_json(first, StatusCode::ACCEPTED).await;

    // The same body with keys in another order is the same request.
    let reordered = json!({"inputs": {"audience": "engineers", "topic": "AI agents"}, "crew": sample_crew()});
    let again = post_with_key(&app, "order-42", &reordered).await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(
        again.headers()["location"].to_str().expect("location"),
        format!("/v1/runs/{}", first["id"].as_str().expect("id"))
    );
    let again = expect_json(again, StatusCode::OK).await;
    assert_eq!(again["id"], first["id"]);

    let other = json!({"crew": sample_crew(), "inputs": {"topic": "ships", "audience": "sailors"}});
    let problem =
        expect_problem(post_with_key(&app, "order-42", &other).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("Idempotency-Key"), "{problem}");

    let long_key = "k".repeat(256);
    expect_problem(post_with_key(&app, &long_key, &body).await, StatusCode::BAD_REQUEST).await;
    for invisible in ["a b", "tab\there"] {
        let problem =
            expect_problem(post_with_key(&app, invisible, &body).await, StatusCode::BAD_REQUEST).await;
        assert!(
            problem["detail"].as_str().is_some_and(|d| d.contains("visible ASCII")),
            "{invisible:?}: {problem}"
        );
    }
    // Another key makes another run.
    expect_json(post_with_key(&app, "order-43", &body).await, StatusCode::ACCEPTED).await;
    assert_runs(&pool, 2).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_expired_key_makes_a_new_run(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let body = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    let first = expect_json(post_with_key(&app, "old", &body).await, StatusCode::ACCEPTED).await;
    sqlx::query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
        .execute(&pool)
        .await
        .expect("age the key");
    let second = expect_json(post_with_key(&app, "old", &body).await, StatusCode::ACCEPTED).await;
    assert_ne!(first["id"], second["id"]);
    let replay = expect_json(post_with_key(&app, "old", &body).await, StatusCode::OK).await;
    assert_eq!(replay["id"], second["id"]);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn twenty_concurrent_requests_with_one_key_make_one_run(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let body = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    let requests = (0..20).map(|_| async {
        let response = post_with_key(&app, "burst", &body).await;
        let status = response.status();
        let run: Value = response.json().await.expect("json");
        (status, run["id"].as_str().map(str::to_owned))
    });
    let results = futures_util::future::join_all(requests).await;
    let created = results.iter().filter(|(s, _)| *s == StatusCode::ACCEPTED).count();
    let replayed = results.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    assert_eq!((created, replayed), (1, 19), "{results:?}");
    let ids: std::collections::BTreeSet<_> = results.iter().map(|(_, id)| id.clone()).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_runs(&pool, 1).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn concurrent_kickoffs_share_commits_and_each_is_stored_whole(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let requests = (0..50).map(|i| {
        let inputs = json!({"topic": format!("topic {i}"), "audience": "engineers"});
        let app = &app;
        async move { (i, app.kickoff(&sample_crew(), inputs).await) }
    });
    let runs = futures_util::future::join_all(requests).await;
    let ids: std::collections::BTreeSet<_> = runs.iter().map(|(_, run)| run["id"].to_string()).collect();
    assert_eq!(ids.len(), 50);
    for (i, run) in &runs {
        let stored = expect_json(
            app.get(&format!("/v1/runs/{}", run["id"].as_str().expect("id"))).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(stored["inputs"]["topic"], format!("topic {i}"));
        assert_eq!(stored["tasks"].as_array().map(Vec::len), sample_crew()["tasks"].as_array().map(Vec::len));
    }
    assert_runs(&pool, 50).await;
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'run.queued' AND seq = 1")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(queued, 50, "each run's first event");
    let metrics = app.get("/metrics").await.text().await.expect("metrics");
    let counter = |name: &str| -> f64 {
        let series = format!("{name}{{kind=\"kickoff\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&series)).and_then(|v| v.parse().ok()).expect(name)
    };
    let (batches, items) =
        (counter("agentd_group_commit_batches_total"), counter("agentd_group_commit_items_total"));
    assert_eq!(items, 50.0);
    assert!(batches < items, "kickoffs shared transactions: {batches} for {items}");
}

pub async fn assert_runs(pool: &PgPool, expected: i64) {
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM runs").fetch_one(pool).await.expect("count");
    assert_eq!(count, expected);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_batch_makes_one_run_per_input_set_all_or_none(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let inputs = json!([{"topic": "tides", "audience": "kids"}, {"topic": "moons", "audience": "adults"},
                        {"topic": "comets", "audience": "pilots"}]);
    let body = json!({"crew": sample_crew(), "inputs": inputs, "metadata": {"batch": 1}});
    let response = app
        .request(Method::POST, "/v1/kickoffs/batch")
        .header("idempotency-key", "b-1")
        .json(&body)
        .send()
        .await
        .expect("POST");
    let batch = expect_json(response, StatusCode::ACCEPTED).await;
    let runs = batch["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3);
    let topics: Vec<&str> = runs.iter().map(|r| r["inputs"]["topic"].as_str().expect("topic")).collect();
    assert_eq!(topics, ["tides", "moons", "comets"], "runs come back in input order");
    for run in runs {
        assert_eq!((run["status"].as_str(), run["metadata"]["batch"].as_i64()), (Some("queued"), Some(1)));
        let events = expect_json(
            app.get(&format!("/v1/runs/{}/events", run["id"].as_str().expect("id"))).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(events["events"][0]["type"], "run.queued");
    }
    assert_runs(&pool, 3).await;

    let replay = app
        .request(Method::POST, "/v1/kickoffs/batch")
        .header("idempotency-key", "b-1")
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(expect_json(replay, StatusCode::OK).await, batch);
    let single = app
        .request(Method::POST, "/v1/kickoffs")
        .header("idempotency-key", "b-1")
        .json(&json!({"crew": sample_crew(), "inputs": sample_inputs()}))
        .send()
        .await
        .expect("POST");
    expect_problem(single, StatusCode::UNPROCESSABLE_ENTITY).await;

    let bad = json!({"crew": sample_crew(), "inputs": [sample_inputs(), {"topic": "x"}, {}]});
    let problem =
        expect_problem(app.post_json("/v1/kickoffs/batch", &bad).await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    let fields = problem_fields(&problem);
    assert_eq!(
        fields.keys().map(String::as_str).collect::<Vec<_>>(),
        ["inputs[1].audience", "inputs[2].audience", "inputs[2].topic"]
    );
    expect_problem(
        app.post_json("/v1/kickoffs/batch", &json!({"crew": sample_crew(), "inputs": []})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let too_many: Vec<Value> = (0..1001).map(|_| sample_inputs()).collect();
    expect_problem(
        app.post_json("/v1/kickoffs/batch", &json!({"crew": sample_crew(), "inputs": too_many})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_runs(&pool, 3).await;
}

/// Send `head` on a raw connection and read until the response's head has arrived.
async fn raw_response_head(base: &str, head: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !received.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.expect("read");
        assert!(read > 0, "the connection closed without an answer");
        received.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_declared_length_over_the_limit_is_refused_before_the_body_is_read(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    for expect in ["", "Expect: 100-continue\r\n"] {
        let head = format!(
            "POST /v1/kickoffs HTTP/1.1\r\nHost: agentd\r\nContent-Type: application/json\r\n\
             Content-Length: 107374182400\r\n{expect}\r\n{{"
        );
        let answer =
            tokio::time::timeout(std::time::Duration::from_secs(5), raw_response_head(&app.base, &head))
                .await
                .expect("answered at once, without the body");
        assert!(answer.starts_with("HTTP/1.1 413"), "{expect:?}: {answer}");
        assert!(!answer.contains("100 Continue"), "the body was never asked for: {answer}");
        assert!(answer.contains("application/problem+json"), "{answer}");
    }
    assert_runs(&pool, 0).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_bad_model_reference_says_what_is_expected_not_serde_internals(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    for (llm, expected) in [
        (json!(42), "expected a model (\"provider/model\" or \"model\") or an object"),
        (json!({"model": "gpt-4o", "bogus": 1}), "unknown field `bogus`"),
        (json!({"temperature": 1}), "missing field `model`"),
    ] {
        let mut crew = sample_crew();
        crew["agents"][0]["llm"] = llm;
        let body = json!({"crew": crew, "inputs": sample_inputs()});
        let problem =
            expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        let message = problem["errors"][0]["message"].as_str().expect("message");
        assert!(
            problem["errors"][0]["field"].as_str().expect("field").starts_with("crew.agents[0].llm"),
            "{problem}"
        );
        assert!(message.contains(expected) && !message.contains("untagged"), "{message}");
    }
    assert_runs(&pool, 0).await;
}

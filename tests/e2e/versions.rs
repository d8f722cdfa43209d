//! Crew versions and aliases over HTTP: immutable numbered versions (the same content makes
//! none), kickoffs by `name`, `name@version`, `name@latest` and `name@alias` that record the
//! version they ran, an alias moved under concurrent kickoffs (each run sees the version before
//! or after, in order), and a schedule, a thread and a published crew following an alias.

use std::sync::Arc;
use std::time::Duration;

use agentd::domain::schedule::{ManualClock, SystemClock};
use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{fake_config, wait_for};

/// The crew `digest` whose agent's goal and description say `which` version it is.
fn digest(which: &str) -> Value {
    json!({
        "name": "digest",
        "description": format!("The {which} digest"),
        "publish": {"a2a": true},
        "agents": [{"name": "a", "role": "Editor", "goal": format!("Summarise, {which}"), "backstory": "Brief."}],
        "tasks": [{"name": "digest", "description": "Write the {edition} digest.", "expected_output": "A digest", "agent": "a"}]
    })
}

async fn kickoff(app: &TestApp, crew: &str) -> Value {
    let body = json!({"crew": crew, "inputs": {"edition": "daily"}});
    expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await
}

async fn put_alias(app: &TestApp, alias: &str, body: Value, status: StatusCode) -> Value {
    expect_json(app.put_json(&format!("/v1/crews/digest/aliases/{alias}"), &body).await, status).await
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn stores_make_immutable_versions_and_kickoffs_name_one_by_number_alias_or_name(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("ok")));
    let app = TestApp::spawn_full(pool.clone(), fake_config(&fake), Arc::new(SystemClock)).await;

    let first =
        expect_json(app.put_json("/v1/crews/digest", &digest("first")).await, StatusCode::CREATED).await;
    assert_eq!((first["version"].as_i64(), first["aliases"].clone()), (Some(1), json!({})));
    // The same content again makes no version, and changes nothing.
    let again = expect_json(app.put_json("/v1/crews/digest", &digest("first")).await, StatusCode::OK).await;
    assert_eq!((again["version"].as_i64(), &again["content_hash"]), (Some(1), &first["content_hash"]));
    assert_eq!(again["updated_at"], first["updated_at"]);
    let second = expect_json(app.put_json("/v1/crews/digest", &digest("second")).await, StatusCode::OK).await;
    assert_eq!(second["version"], 2);
    assert_ne!(second["content_hash"], first["content_hash"]);
    assert_eq!(second["spec"]["description"], "The second digest");

    let versions = expect_json(app.get("/v1/crews/digest/versions").await, StatusCode::OK).await;
    let listed: Vec<(i64, &str)> = versions["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| (v["version"].as_i64().expect("n"), v["stored_by"].as_str().expect("stored_by")))
        .collect();
    assert_eq!(listed, [(2, "operator"), (1, "operator")]);
    assert!(versions["versions"][0].get("spec").is_none(), "the list leaves specs out");
    let one = expect_json(app.get("/v1/crews/digest/versions/1").await, StatusCode::OK).await;
    assert_eq!(
        (one["version"].as_i64(), one["content_hash"].clone()),
        (Some(1), first["content_hash"].clone())
    );
    assert_eq!(one["spec"]["agents"][0]["goal"], "Summarise, first");
    let missing = expect_problem(app.get("/v1/crews/digest/versions/3").await, StatusCode::NOT_FOUND).await;
    assert!(missing["detail"].as_str().is_some_and(|d| d.contains("no version 3")), "{missing}");
    expect_problem(app.get("/v1/crews/digest/versions/first").await, StatusCode::BAD_REQUEST).await;
    expect_problem(app.get("/v1/crews/nothing/versions").await, StatusCode::NOT_FOUND).await;

    // No `production` alias: the crew's name alone runs its newest version.
    assert_eq!(kickoff(&app, "digest").await["crew_version"], 2);
    let made = put_alias(&app, "production", json!({"version": 1}), StatusCode::CREATED).await;
    assert_eq!((made["alias"].as_str(), made["version"].as_i64()), (Some("production"), Some(1)));
    assert!(made.get("previous_version").is_none(), "{made}");
    put_alias(&app, "staging", json!({"version": 2}), StatusCode::CREATED).await;

    let cases = [
        ("digest", 1),
        ("digest@production", 1),
        ("digest@staging", 2),
        ("digest@latest", 2),
        ("digest@1", 1),
    ];
    let mut runs = Vec::new();
    for (reference, version) in cases {
        let run = kickoff(&app, reference).await;
        assert_eq!(run["crew_version"], version, "{reference}: {run}");
        assert_eq!(run["crew_name"], "digest");
        runs.push((run["id"].as_str().expect("id").to_owned(), version));
    }
    for (id, version) in &runs {
        let done = wait_for(&app, id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{done}");
        let stored = expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
        assert_eq!(stored["crew_version"], *version);
    }
    let stored: Vec<(Option<i32>, bool)> = sqlx::query_as(
        "SELECT r.crew_version, r.crew_spec = v.spec FROM runs AS r
           JOIN crew_versions AS v ON v.crew = r.crew_name AND v.version = r.crew_version AND v.tenant = r.tenant
          ORDER BY r.created_at",
    )
    .fetch_all(&pool)
    .await
    .expect("runs");
    assert_eq!(stored.len(), 6, "every run recorded its version: {stored:?}");
    // Each run ran its version: its snapshot is that version's spec.
    assert!(stored.iter().all(|(_, same)| *same), "{stored:?}");

    for (reference, says) in [
        ("digest@canary", "no alias 'canary'"),
        ("digest@9", "no version 9"),
        ("nothing@production", "no registered crew named 'nothing'"),
    ] {
        let body = json!({"crew": reference, "inputs": {"edition": "daily"}});
        let problem = expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::NOT_FOUND).await;
        assert!(problem["detail"].as_str().is_some_and(|d| d.contains(says)), "{reference}: {problem}");
    }
    for reference in ["digest@0", "digest@", "digest@a b", "@production"] {
        let body = json!({"crew": reference, "inputs": {"edition": "daily"}});
        let problem =
            expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key("crew"), "{reference}: {problem}");
    }

    // Moving: from the version it names (else 409, nothing moved), to a version that exists.
    let moved =
        put_alias(&app, "production", json!({"version": 2, "expected_version": 1}), StatusCode::OK).await;
    assert_eq!((moved["version"].as_i64(), moved["previous_version"].as_i64()), (Some(2), Some(1)));
    assert_eq!(moved["updated_by"], "operator");
    let stale = expect_problem(
        app.put_json("/v1/crews/digest/aliases/production", &json!({"version": 1, "expected_version": 1}))
            .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert!(stale["detail"].as_str().is_some_and(|d| d.contains("names version 2")), "{stale}");
    for (alias, body, field) in [
        ("production", json!({"version": 7}), "version"),
        ("production", json!({"version": 0}), "version"),
        ("42", json!({"version": 1}), "alias"),
        ("latest", json!({"version": 1}), "alias"),
    ] {
        let problem = expect_problem(
            app.put_json(&format!("/v1/crews/digest/aliases/{alias}"), &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(problem_fields(&problem).contains_key(field), "{alias} {body}: {problem}");
    }
    expect_problem(
        app.put_json("/v1/crews/digest/aliases/p", &json!({"version": "2"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        app.put_json("/v1/crews/nothing/aliases/production", &json!({"version": 1})).await,
        StatusCode::NOT_FOUND,
    )
    .await;

    let crew = expect_json(app.get("/v1/crews/digest").await, StatusCode::OK).await;
    assert_eq!(crew["aliases"], json!({"production": 2, "staging": 2}));
    let aliases = expect_json(app.get("/v1/crews/digest/aliases").await, StatusCode::OK).await;
    let names: Vec<&str> =
        aliases["aliases"].as_array().expect("aliases").iter().filter_map(|a| a["alias"].as_str()).collect();
    assert_eq!(names, ["production", "staging"]);
    let versions = expect_json(app.get("/v1/crews/digest/versions").await, StatusCode::OK).await;
    assert_eq!(versions["versions"][0]["aliases"], json!(["production", "staging"]));

    // Rolling back is moving the alias back; deleting it leaves the name alone on the newest.
    put_alias(&app, "production", json!({"version": 1}), StatusCode::OK).await;
    assert_eq!(kickoff(&app, "digest").await["crew_version"], 1);
    assert_eq!(app.delete("/v1/crews/digest/aliases/production").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.delete("/v1/crews/digest/aliases/production").await, StatusCode::NOT_FOUND).await;
    assert_eq!(kickoff(&app, "digest").await["crew_version"], 2);

    // Every change is in the audit log.
    let audit = expect_json(app.get("/v1/audit?limit=100").await, StatusCode::OK).await;
    let actions: Vec<&str> =
        audit["entries"].as_array().expect("entries").iter().filter_map(|r| r["action"].as_str()).collect();
    for action in ["crew.put", "alias.put", "alias.delete"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }

    // Deleting the crew takes its versions and aliases; runs keep their snapshot and number.
    assert_eq!(app.delete("/v1/crews/digest").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get("/v1/crews/digest/versions").await, StatusCode::NOT_FOUND).await;
    let (id, _) = &runs[0];
    assert_eq!(
        expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await["crew_version"],
        1
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_alias_moves_atomically_under_concurrent_kickoffs(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("ok")));
    let app = TestApp::spawn_full(pool.clone(), fake_config(&fake), Arc::new(SystemClock)).await;
    expect_json(app.put_json("/v1/crews/digest", &digest("first")).await, StatusCode::CREATED).await;
    expect_json(app.put_json("/v1/crews/digest", &digest("second")).await, StatusCode::OK).await;
    put_alias(&app, "production", json!({"version": 1}), StatusCode::CREATED).await;

    // Four clients kick `digest` off one after another while the alias moves from 1 to 2: the
    // move waits for 20 kickoffs, and each client goes on until it has seen 5 of the new version.
    let kicked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (app, kicked) = (app.as_key(app.key()), kicked.clone());
        clients.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while seen.iter().filter(|v| **v == 2).count() < 5 && seen.len() < 2_000 {
                let run = kickoff(&app, "digest").await;
                seen.push(run["crew_version"].as_i64().expect("version"));
                kicked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            seen
        }));
    }
    while kicked.load(std::sync::atomic::Ordering::SeqCst) < 20 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    put_alias(&app, "production", json!({"version": 2, "expected_version": 1}), StatusCode::OK).await;
    let after = kickoff(&app, "digest").await;
    assert_eq!(after["crew_version"], 2, "a kickoff after the move runs the new version");
    let mut both = (0, 0);
    for client in clients {
        let seen = client.await.expect("client");
        // Each client sees the old version, then the new, never the old again.
        let switch = seen.iter().position(|v| *v == 2).unwrap_or(seen.len());
        assert!(seen[..switch].iter().all(|v| *v == 1) && seen[switch..].iter().all(|v| *v == 2), "{seen:?}");
        assert!(seen.len() - switch >= 5, "{seen:?}");
        both.0 += switch;
        both.1 += seen.len() - switch;
    }
    assert!(both.0 >= 20, "{both:?}");
    eprintln!("runs of version 1: {}, of version 2: {}", both.0, both.1);
    // Every run holds exactly the spec of the version it records.
    let mismatched: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM runs AS r LEFT JOIN crew_versions AS v
             ON v.tenant = r.tenant AND v.crew = r.crew_name AND v.version = r.crew_version
          WHERE v.spec IS DISTINCT FROM r.crew_spec",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(mismatched, 0);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_schedule_a_thread_and_a_published_crew_follow_the_alias(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("ok")));
    let clock = Arc::new(ManualClock::at("2026-06-01T12:00:00Z".parse().expect("time")));
    let mut config = fake_config(&fake);
    config.scheduler.poll = Duration::from_millis(20);
    let app = TestApp::spawn_full(pool, config, clock.clone()).await;
    expect_json(app.put_json("/v1/crews/digest", &digest("first")).await, StatusCode::CREATED).await;
    expect_json(app.put_json("/v1/crews/digest", &digest("second")).await, StatusCode::OK).await;
    put_alias(&app, "production", json!({"version": 1}), StatusCode::CREATED).await;

    let kick = json!({"crew": "digest@production", "inputs": {"edition": "hourly"}});
    let schedule = expect_json(
        app.post_json("/v1/schedules", &json!({"cron": "0 * * * *", "kickoff": kick})).await,
        StatusCode::CREATED,
    )
    .await;
    let id = schedule["id"].as_str().expect("id").to_owned();
    let thread = expect_json(app.post_json("/v1/threads", &json!({})).await, StatusCode::CREATED).await;
    let thread = thread["id"].as_str().expect("id").to_owned();
    let card_path = "/a2a/digest/.well-known/agent-card.json";

    let mut versions = Vec::new();
    for (hour, version) in [(13, 1), (14, 2)] {
        if version == 2 {
            put_alias(&app, "production", json!({"version": 2}), StatusCode::OK).await;
        }
        // The schedule's tick.
        clock.set(format!("2026-06-01T{hour}:00:00Z").parse().expect("time"));
        let ticks = loop {
            let page = expect_json(app.get(&format!("/v1/schedules/{id}/runs")).await, StatusCode::OK).await;
            let ticks = page["ticks"].as_array().expect("ticks").clone();
            if ticks.len() == version {
                break ticks;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let run = ticks[0]["run_id"].as_str().expect("a tick's run").to_owned();
        let ticked = wait_for(&app, &run, &["completed", "failed"]).await;
        // The thread's next run.
        let body = json!({"crew": "digest", "inputs": {"edition": "threaded"}, "thread_id": thread});
        let in_thread = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
        let in_thread = wait_for(&app, in_thread["id"].as_str().expect("id"), &["completed", "failed"]).await;
        // The published crew: A2A's card describes the version the name serves.
        let card = expect_json(app.get(card_path).await, StatusCode::OK).await;
        versions.push((
            ticked["crew_version"].clone(),
            in_thread["crew_version"].clone(),
            card["description"].clone(),
        ));
    }
    assert_eq!(
        versions,
        [(json!(1), json!(1), json!("The first digest")), (json!(2), json!(2), json!("The second digest"))]
    );
}

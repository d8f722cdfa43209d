//! Service routes, authentication, the OpenAPI document and the router's own errors.

use std::time::Duration;

use agentd::store::{PoolSettings, Store};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, sample_crew, sample_inputs, test_config, TestApp};

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn health_and_readiness(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (release, schema) = (agentd::release::RELEASE, agentd::store::schema_version());
    assert_eq!(
        expect_json(app.get("/healthz").await, StatusCode::OK).await,
        json!({"status": "ok", "release": release, "schema": schema})
    );
    assert_eq!(
        expect_json(app.get("/readyz").await, StatusCode::OK).await,
        json!({"status": "ready", "release": release, "schema": schema})
    );
}

#[tokio::test]
async fn readiness_is_503_when_the_database_is_unreachable() {
    // Nothing listens on port 1: every connection attempt is refused.
    let options = "postgres://postgres@127.0.0.1:1/none".parse().expect("url");
    let store = Store::connect_lazy(
        options,
        &PoolSettings { max_connections: 1, acquire_timeout: Duration::from_millis(500) },
    );
    let base = TestApp::spawn_on(store, test_config()).await.base;
    let ready = reqwest::get(format!("{base}/readyz")).await.expect("GET");
    let problem = expect_problem(ready, StatusCode::SERVICE_UNAVAILABLE).await;
    let detail = problem["detail"].as_str().expect("detail");
    assert!(!detail.contains("127.0.0.1") && !detail.contains("postgres"), "internals leaked: {detail}");
    let health = reqwest::get(format!("{base}/healthz")).await.expect("GET");
    assert_eq!(health.status(), StatusCode::OK);
    // Every use case that needs the database answers 503 (retry later), without internals.
    let client = reqwest::Client::new();
    let kickoff = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    let requests = [
        client.get(format!("{base}/v1/runs")),
        client.get(format!("{base}/v1/runs/{}", uuid::Uuid::now_v7())),
        client.get(format!("{base}/v1/runs/{}/messages", uuid::Uuid::now_v7())),
        client.post(format!("{base}/v1/runs/{}/cancel", uuid::Uuid::now_v7())),
        client.get(format!("{base}/v1/crews")),
        client.get(format!("{base}/v1/crews/research")),
        client.post(format!("{base}/v1/kickoffs")).json(&kickoff),
        client.post(format!("{base}/v1/kickoffs")).header("Idempotency-Key", "k1").json(&kickoff),
        client.post(format!("{base}/v1/kickoffs")).json(&json!({"crew": "research"})),
    ];
    for request in requests {
        let response = request.send().await.expect("send");
        let url = response.url().clone();
        assert_eq!(response.headers()["retry-after"], "2", "{url}");
        let problem = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE).await;
        assert_eq!(problem["type"], "/problems/unavailable", "{url}");
        assert_eq!(problem["detail"], "the database is unavailable; retry later", "{url}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn readiness_is_503_while_migrations_are_pending(pool: PgPool) {
    sqlx::query("DELETE FROM _sqlx_migrations").execute(&pool).await.expect("forget migrations");
    let app = TestApp::spawn(pool).await;
    let problem = expect_problem(app.get("/readyz").await, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(problem["detail"].as_str().expect("detail").contains("migrations"), "{problem}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn api_keys_guard_v1_only(pool: PgPool) {
    let app = TestApp::spawn_with_keys(pool, "key-one,key-two").await;
    let url = |path: &str| format!("{}{path}", app.base);
    let anonymous = reqwest::Client::new();
    for path in ["/v1/runs", "/v1/tools", "/v1/crews", "/v1/nothing-here"] {
        let response = anonymous.get(url(path)).send().await.expect("GET");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        expect_problem(response, StatusCode::UNAUTHORIZED).await;
    }
    let wrong = anonymous.get(url("/v1/runs")).bearer_auth("key-three").send().await.expect("GET");
    expect_problem(wrong, StatusCode::UNAUTHORIZED).await;
    let basic = anonymous.get(url("/v1/runs")).basic_auth("key-one", None::<&str>).send().await.expect("GET");
    expect_problem(basic, StatusCode::UNAUTHORIZED).await;
    let kickoff =
        anonymous.post(url("/v1/kickoffs")).json(&json!({"crew": sample_crew(), "inputs": sample_inputs()}));
    expect_problem(kickoff.send().await.expect("POST"), StatusCode::UNAUTHORIZED).await;

    let second = anonymous.get(url("/v1/runs")).bearer_auth("key-two").send().await.expect("GET");
    assert_eq!(second.status(), StatusCode::OK);
    app.kickoff(&sample_crew(), sample_inputs()).await;
    for path in ["/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"] {
        let response = anonymous.get(url(path)).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_dashboard_is_a_self_contained_page_behind_a_strict_policy(pool: PgPool) {
    let app = TestApp::spawn_with_keys(pool, "dash-key").await;
    let response = reqwest::get(format!("{}/", app.base)).await.expect("GET /");
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert!(headers["content-type"].to_str().expect("type").starts_with("text/html"));
    let csp = headers["content-security-policy"].to_str().expect("csp");
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'sha256-"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let page = response.text().await.expect("body");
    for testid in ["api-key", "kickoff-body", "kickoff-submit", "timeline", "runs"] {
        assert!(page.contains(&format!("data-testid=\"{testid}\"")), "missing data-testid {testid}");
    }
    assert!(!page.contains("<script src") && !page.contains("<link rel=\"stylesheet\""));
    // The page is public; the API behind it is not.
    let runs = reqwest::get(format!("{}/v1/runs", app.base)).await.expect("GET");
    assert_eq!(runs.status(), StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn tools_are_listed_with_schemas(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tools = expect_json(app.get("/v1/tools").await, StatusCode::OK).await;
    let names: Vec<&str> =
        tools["tools"].as_array().expect("tools").iter().map(|t| t["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["calculator", "current_time", "http_request", "search_knowledge"]);
    assert_eq!(tools["tools"][0]["parameters"]["required"], json!(["expression"]));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn unknown_routes_and_methods_are_problems(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    expect_problem(app.get("/nowhere").await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get("/v1/nowhere").await, StatusCode::NOT_FOUND).await;
    let response = app.request(Method::DELETE, "/v1/runs").send().await.expect("DELETE");
    expect_problem(response, StatusCode::METHOD_NOT_ALLOWED).await;
    let response = app.request(Method::GET, "/v1/kickoffs").send().await.expect("GET");
    expect_problem(response, StatusCode::METHOD_NOT_ALLOWED).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn served_openapi_matches_the_committed_file(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let served = expect_json(app.get("/openapi.json").await, StatusCode::OK).await;
    let committed: Value =
        serde_json::from_str(include_str!("../../openapi/openapi.json")).expect("committed JSON");
    assert!(
        served == committed,
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
    let paths = served["paths"].as_object().expect("paths");
    for path in [
        "/v1/kickoffs",
        "/v1/runs",
        "/v1/runs/{id}",
        "/v1/runs/{id}/messages",
        "/v1/runs/{id}/tool-calls",
        "/v1/runs/{id}/events",
        "/v1/crews",
        "/v1/crews/{name}",
        "/v1/crews/{name}/inputs",
        "/v1/tools",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/docs",
        "/metrics",
        "/v1/events",
        "/v1/runs/{id}/wait",
        "/v1/runs/{id}/cancel",
        "/v1/runs/{id}/resume",
        "/v1/ag-ui/crews/{name}",
        "/mcp",
        "/a2a/{name}",
        "/.well-known/agent-card.json",
    ] {
        assert!(paths.contains_key(path), "{path} missing from the OpenAPI document");
    }
    // What the layers around the handlers answer is declared on every operation it can reach.
    for (path, item) in paths {
        for (method, operation) in item.as_object().expect("path item") {
            let responses = operation["responses"].as_object().expect("responses");
            let has = |status: &str| responses.contains_key(status);
            // Behind the key: `/v1`, the MCP server and the A2A agents (not the open cards).
            let card = path.ends_with("/.well-known/agent-card.json");
            let keyed = path.starts_with("/v1/") || path == "/mcp" || (path.starts_with("/a2a") && !card);
            assert_eq!(has("401"), keyed, "{method} {path}: 401");
            if operation.get("requestBody").is_some() {
                for status in ["400", "408", "413", "415"] {
                    assert!(has(status), "{method} {path}: {status}");
                }
            }
            // Only the liveness route always answers (spare connections serve it past the cap).
            assert_eq!(has("503"), path != "/healthz", "{method} {path}: 503");
        }
    }
    let stream = &paths["/v1/runs/{id}/events"]["get"]["responses"]["200"]["content"];
    assert!(
        stream.get("text/event-stream").is_some() && stream.get("application/json").is_some(),
        "{stream}"
    );
    let docs = app.get("/docs").await;
    assert!(docs.headers()["content-type"].to_str().expect("type").starts_with("text/html"));
    assert!(docs.text().await.expect("html").contains("/openapi.json"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn metrics_show_runs_by_status_and_the_queue(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    app.kickoff(&sample_crew(), sample_inputs()).await;
    app.kickoff(&sample_crew(), sample_inputs()).await;
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/plain"));
    let text = response.text().await.expect("text");
    for line in [
        "agentd_runs{status=\"queued\"} 2",
        "agentd_queue_depth 2",
        "# TYPE agentd_llm_call_duration_seconds histogram",
        "agentd_sse_subscribers 0",
        "agentd_claim_latency_seconds_count 0",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
}

#[test]
fn the_openapi_document_describes_the_data_of_every_event_type() {
    let document: Value = serde_json::from_str(include_str!("../../openapi/openapi.json")).expect("JSON");
    let schemas = &document["components"]["schemas"];
    let names = |values: &Value| -> Vec<String> {
        values.as_array().expect("enum").iter().map(|v| v.as_str().expect("name").to_owned()).collect()
    };
    let mut types: Vec<String> =
        agentd::domain::EventType::ALL.iter().map(|t| t.as_str().to_owned()).collect();
    let variants = schemas["EventData"]["oneOf"].as_array().expect("EventData is a oneOf");
    let mut described: Vec<String> = variants
        .iter()
        .map(|variant| {
            assert_eq!(variant["required"], json!(["data", "type"]), "{variant}");
            let data = &variant["properties"]["data"]["$ref"];
            let target = data.as_str().and_then(|r| r.strip_prefix("#/components/schemas/")).expect("a $ref");
            assert!(schemas[target].is_object(), "{target} is described");
            let [name] = names(&variant["properties"]["type"]["enum"]).try_into().expect("one type");
            name
        })
        .collect();
    types.sort();
    described.sort();
    assert_eq!(types.len(), 36);
    assert_eq!(described, types, "one EventData variant per event type");
    // The envelope pairs them with its own fields.
    let event = &schemas["Event"]["allOf"];
    assert_eq!(event[0]["$ref"], "#/components/schemas/EventData");
    assert_eq!(event[1]["required"], json!(["seq", "run_id", "at", "task", "agent"]));
}

#[test]
fn every_crew_name_in_the_document_has_the_pattern_the_server_checks() {
    use agentd::domain::crew::CREW_NAME_PATTERN;
    use agentd::domain::validate::check_crew_name;
    let document: Value = serde_json::from_str(include_str!("../../openapi/openapi.json")).expect("JSON");
    // The attribute literals (utoipa takes no constants) all say the same as the constant.
    let mut patterns = vec![&document["components"]["schemas"]["CrewSpec"]["properties"]["name"]["pattern"]];
    for (path, item) in document["paths"].as_object().expect("paths") {
        if !path.starts_with("/v1/crews/{name}") {
            continue;
        }
        for operation in item.as_object().expect("item").values() {
            let parameters = operation["parameters"].as_array().expect("parameters");
            let name = parameters.iter().find(|p| p["name"] == "name").expect("name parameter");
            patterns.push(&name["schema"]["pattern"]);
        }
    }
    assert!(patterns.len() >= 6, "{patterns:?}");
    for pattern in patterns {
        assert_eq!(pattern, CREW_NAME_PATTERN);
    }
    // And the pattern (with the length bounds) accepts exactly what the server accepts.
    let regex = regex::Regex::new(CREW_NAME_PATTERN).expect("regex");
    for name in ["research", "a.b", "_", "-x-", ".hidden", "v1.2", ".", "..", "...", "", "a b", "é", "a/b"] {
        let documented = (1..=100).contains(&name.len()) && regex.is_match(name);
        assert_eq!(documented, check_crew_name(name).is_ok(), "{name:?}");
    }
    // A kickoff's reference to a registered crew: a name, then `@` and a version, `latest` or
    // an alias. The document's pattern accepts every reference the server reads (and the server
    // refuses, with a 422 naming why, the two kinds the pattern lets through: version 0, and
    // versions beyond i32).
    let reference = &document["components"]["schemas"]["CrewRef"]["oneOf"][0]["pattern"];
    assert_eq!(reference, agentd::domain::crew::CREW_REFERENCE_PATTERN);
    let regex = regex::Regex::new(agentd::domain::crew::CREW_REFERENCE_PATTERN).expect("regex");
    for reference in [
        "research",
        "research@3",
        "research@latest",
        "research@staging",
        "a.b@v1.2",
        "research@",
        "@x",
        "a@b@c",
        "a b@1",
        "research@a b",
    ] {
        let read = agentd::domain::crew::CrewSelector::parse(reference).is_ok();
        if read {
            assert!(regex.is_match(reference), "{reference:?} is read but not documented");
        } else {
            assert!(!regex.is_match(reference), "{reference:?} is documented but refused");
        }
    }
    for refused in ["research@0", "research@99999999999"] {
        assert!(regex.is_match(refused) && agentd::domain::crew::CrewSelector::parse(refused).is_err());
    }
}

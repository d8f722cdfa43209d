//! An authenticated HTTP tool end to end: its header and query secrets reach the tool server,
//! read when each request is sent (a rotation mid-run applies to the next call); every request
//! carries a stable Idempotency-Key; and the values appear nowhere the run leaves a trace.

use std::sync::{Arc, Mutex};

use agentd::fake_llm::FakeReply;
use agentd::tools::CallInfo;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use super::{allow_loopback_with_secrets, crew, expect_json, lookup_tool, Harness};
use crate::support::database_text;

const FIRST: &str = "v1-SECRET-aaaa";
const SECOND: &str = "v2-SECRET-bbbb";

/// What the tool server saw of each request: Authorization, X-Plain, the `key` query parameter
/// and the Idempotency-Key.
type Seen = Arc<Mutex<Vec<[String; 4]>>>;

#[derive(Clone)]
struct ToolServer {
    seen: Seen,
    /// Where to rotate the secret after the first request.
    agentd: String,
}

async fn orders(
    State(server): State<ToolServer>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let seen = [
        header("authorization"),
        header("x-plain"),
        query.get("key").cloned().unwrap_or_default(),
        header("idempotency-key"),
    ];
    let first = {
        let mut all = server.seen.lock().expect("seen");
        all.push(seen.clone());
        all.len() == 1
    };
    if first {
        let rotated = reqwest::Client::new()
            .put(format!("{}/v1/secrets/orders_key", server.agentd))
            .json(&json!({"value": SECOND}))
            .send()
            .await
            .expect("rotate");
        assert_eq!(rotated.status(), StatusCode::OK);
    }
    // A careless service echoes the credentials it was given.
    format!("order A1 shipped (you sent '{}' and key={})", seen[0], seen[2])
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_authenticated_http_tool_sends_fresh_secrets_and_the_run_never_holds_them(pool: PgPool) {
    let h = Harness::start_with(pool.clone(), true, allow_loopback_with_secrets).await;
    expect_json(
        h.app.put_json("/v1/secrets/orders_key", &json!({"value": FIRST})).await,
        StatusCode::CREATED,
    )
    .await;
    let seen = Seen::default();
    let server = ToolServer { seen: seen.clone(), agentd: h.app.base.clone() };
    let app = axum::Router::new().route("/orders", axum::routing::post(orders)).with_state(server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });

    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::tool_calls(&[("c2", "lookup_order", json!({"order_id": "A2"}))]),
        FakeReply::text("Both shipped."),
    ]);
    let tool = lookup_tool(
        &url,
        json!({"http": {"headers": {"Authorization": {"secret": "orders_key", "prefix": "Bearer "}, "X-Plain": "yes"},
                        "query": {"key": {"secret": "orders_key"}}}}),
    );
    let out = h.run(&crew(json!(["lookup_order"]), "native", json!({"tools": [tool]}))).await;
    assert_eq!(out.raw(), "Both shipped.");

    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0][..3], [format!("Bearer {FIRST}"), "yes".into(), FIRST.into()]);
    assert_eq!(
        seen[1][..3],
        [format!("Bearer {SECOND}"), "yes".into(), SECOND.into()],
        "rotation applies to the next call"
    );
    // Each call's key is derived from the run and the call: the same on a retry or after a crash.
    let run_id = Uuid::parse_str(out.run["id"].as_str().expect("id")).expect("uuid");
    assert_eq!(seen[0][3], CallInfo::for_call(agentd::domain::RunId(run_id), "t#1/c1").idempotency_key);
    assert_eq!(seen[1][3], CallInfo::for_call(agentd::domain::RunId(run_id), "t#2/c2").idempotency_key);
    assert_ne!(seen[0][3], seen[1][3]);

    // The echo was redacted before the model or the journal saw it.
    let results: Vec<&str> = out.tool_calls.iter().map(|c| c["result"].as_str().expect("result")).collect();
    assert_eq!(
        results[0],
        "order A1 shipped (you sent 'Bearer [secret:orders_key]' and key=[secret:orders_key])"
    );
    let everything = [
        serde_json::to_string(&out.run).expect("json"),
        Value::from(out.messages.clone()).to_string(),
        Value::from(out.tool_calls.clone()).to_string(),
        Value::from(out.events.clone()).to_string(),
        Value::from(h.fake.requests()).to_string(),
        database_text(&pool).await,
    ];
    for (i, text) in everything.iter().enumerate() {
        assert!(!text.contains(FIRST) && !text.contains(SECOND), "a secret value in trace {i}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_secret_deleted_mid_run_is_a_tool_error_not_a_crash(pool: PgPool) {
    let h = Harness::start_with(pool.clone(), true, allow_loopback_with_secrets).await;
    expect_json(
        h.app.put_json("/v1/secrets/orders_key", &json!({"value": FIRST})).await,
        StatusCode::CREATED,
    )
    .await;
    let tool = lookup_tool(
        "http://127.0.0.1:9/never",
        json!({"http": {"headers": {"Authorization": {"secret": "orders_key"}}}}),
    );
    let spec = crew(json!(["lookup_order"]), "native", json!({"tools": [tool]}));
    let queued = h.app.kickoff(&spec, json!({"topic": "tides"})).await;
    assert_eq!(h.app.delete("/v1/secrets/orders_key").await.status(), StatusCode::NO_CONTENT);
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::text("Could not look it up."),
    ]);
    let out = h.run_queued(&queued).await;
    assert_eq!(out.raw(), "Could not look it up.");
    assert_eq!(out.tool_calls[0]["status"], "failed");
    assert_eq!(out.tool_calls[0]["error"], "no secret named 'orders_key'");
}

//! The exfiltration a shared deployment must prevent: tenant B's crew names tenant A's secret in
//! an HTTP tool header, to a server of B's choosing. The kickoff is refused (the same 422 as for a
//! missing secret) and nothing is sent; once B stores a secret of that name, B's runs send B's
//! value and A's runs A's: a run's tools read their own tenant's secrets only.

use std::sync::{Arc, Mutex};

use agentd::config::ApiKeys;
use agentd::fake_llm::FakeReply;
use axum::extract::State;
use axum::http::HeaderMap;
use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::{allow_loopback_with_secrets, crew, expect_json, lookup_tool, Harness};
use crate::support::{expect_problem, TestApp};

const ROOT: &str = "operator-root-key";
const A_VALUE: &str = "A-PAYMENTS-SECRET-1111";
const B_VALUE: &str = "B-PAYMENTS-SECRET-2222";

async fn tenant_key(root: &TestApp, tenant: &str) -> TestApp {
    expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
    let body = json!({"tenant": tenant, "name": "service", "scopes": ["read", "kickoff", "manage"]});
    let created = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
    root.as_key(created["key"].as_str())
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenants_secret_cannot_be_sent_and_each_run_reads_its_own(pool: PgPool) {
    let mut h = Harness::start_with(pool, true, |config| {
        allow_loopback_with_secrets(config);
        config.api_keys = ApiKeys::parse(ROOT);
    })
    .await;
    // The harness reads runs back as the operator, who sees every tenant's.
    h.app = h.app.as_key(Some(ROOT));
    let a = tenant_key(&h.app, "team-a").await;
    let b = tenant_key(&h.app, "team-b").await;
    expect_json(
        a.put_json("/v1/secrets/payments_token", &json!({"value": A_VALUE})).await,
        StatusCode::CREATED,
    )
    .await;

    // B's server records every Authorization header it is sent.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = |State(seen): State<Arc<Mutex<Vec<String>>>>, headers: HeaderMap| async move {
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        seen.lock().expect("seen").push(auth);
        "order A1 shipped"
    };
    let app = axum::Router::new().route("/orders", axum::routing::post(record)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    let tool = lookup_tool(
        &url,
        json!({"http": {"headers": {"Authorization": {"secret": "payments_token", "prefix": "Bearer "}}}}),
    );
    let spec = crew(json!(["lookup_order"]), "native", json!({"tools": [tool]}));
    let kickoff = json!({"crew": spec, "inputs": {"topic": "tides"}});

    // B names A's secret: refused, exactly as a missing one, and nothing leaves.
    let problem =
        expect_problem(b.post_json("/v1/kickoffs", &kickoff).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    let errors: Vec<(&str, &str)> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| (e["field"].as_str().unwrap_or_default(), e["message"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(errors, [("crew.tools[0].http.headers.Authorization", "no secret named 'payments_token'")]);
    assert!(!problem.to_string().contains(A_VALUE));
    assert!(seen.lock().expect("seen").is_empty());

    // With a secret of its own by that name, B's run sends B's value; A's run sends A's.
    expect_json(
        b.put_json("/v1/secrets/payments_token", &json!({"value": B_VALUE})).await,
        StatusCode::CREATED,
    )
    .await;
    for (client, expected) in [(&b, B_VALUE), (&a, A_VALUE)] {
        h.fake.push([
            FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
            FakeReply::text("Shipped."),
        ]);
        let queued =
            expect_json(client.post_json("/v1/kickoffs", &kickoff).await, StatusCode::ACCEPTED).await;
        let out = h.run_queued(&queued).await;
        assert_eq!(out.raw(), "Shipped.");
        let last = seen.lock().expect("seen").last().cloned();
        assert_eq!(last.as_deref(), Some(format!("Bearer {expected}").as_str()));
    }
    let all: Vec<String> = seen.lock().expect("seen").clone();
    assert_eq!(all, [format!("Bearer {B_VALUE}"), format!("Bearer {A_VALUE}")]);
    // Neither tenant can read the other's runs.
    let runs = expect_json(b.get("/v1/runs").await, StatusCode::OK).await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
}

//! The audit log over HTTP: changes made through the API are recorded with the key, tenant,
//! action, resource and outcome (refusals too); a `manage` key reads its own tenant's records, an
//! admin every tenant's; filters and the cursor page through them.

use std::collections::BTreeSet;

use agentd::config::ApiKeys;
use agentd::webhooks::SigningKey;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{
    expect_json, expect_problem, loopback_egress, sample_crew, sample_inputs, test_config, TestApp,
    WebhookSink,
};

const ROOT: &str = "root-key-of-the-operator";
const WEBHOOK_SECRET: &str = "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

/// A key of `tenant` with `scopes`: (a client using it, its id).
async fn key(root: &TestApp, tenant: &str, scopes: &[&str]) -> (TestApp, String) {
    let body = json!({"tenant": tenant, "name": format!("{scopes:?}"), "scopes": scopes});
    let created = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
    (root.as_key(Some(created["key"].as_str().expect("key"))), created["id"].as_str().expect("id").to_owned())
}

async fn entries(app: &TestApp, query: &str) -> Vec<Value> {
    let page = expect_json(app.get(&format!("/v1/audit{query}")).await, StatusCode::OK).await;
    page["entries"].as_array().expect("entries").clone()
}

/// (action, outcome, resource) of each entry, oldest first.
fn summary(entries: &[Value]) -> Vec<(String, String, String)> {
    let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_owned();
    entries.iter().rev().map(|e| (text(e, "action"), text(e, "outcome"), text(e, "resource"))).collect()
}

fn has(entries: &[(String, String, String)], action: &str, outcome: &str, resource: &str) -> bool {
    entries.iter().any(|(a, o, r)| a == action && o == outcome && r == resource)
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn changes_and_refusals_are_audited_and_each_tenant_reads_its_own(pool: PgPool) {
    let mut config = test_config();
    config.api_keys = ApiKeys::parse(ROOT);
    config.secrets_key = Some(crate::secrets::test_key());
    config.webhooks.key = Some(SigningKey::parse(WEBHOOK_SECRET).expect("signing key"));
    // The webhook below is delivered to (its deliverer runs): to a receiver of the test's own.
    config.webhooks.egress = loopback_egress();
    let sink = WebhookSink::start().await;
    let root = TestApp::spawn_with(pool, config).await.as_key(Some(ROOT));
    for name in ["team-a", "team-b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": name})).await, StatusCode::CREATED).await;
    }
    let (a, a_id) = key(&root, "team-a", &["read", "kickoff", "manage"]).await;
    let (a_reader, a_reader_id) = key(&root, "team-a", &["read"]).await;
    let (b, b_id) = key(&root, "team-b", &["read", "kickoff", "manage"]).await;

    // A's changes, and the ones refused.
    expect_json(a.put_json("/v1/secrets/token", &json!({"value": "v-1"})).await, StatusCode::CREATED).await;
    expect_problem(
        a_reader.put_json("/v1/secrets/token", &json!({"value": "v-2"})).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    assert_eq!(a.delete("/v1/secrets/token").await.status(), StatusCode::NO_CONTENT);
    expect_problem(a.delete("/v1/secrets/token").await, StatusCode::NOT_FOUND).await;
    let mut crew = sample_crew();
    crew["name"] = json!("writer");
    expect_json(a.put_json("/v1/crews/writer", &crew).await, StatusCode::CREATED).await;
    let run = a.kickoff(&sample_crew(), sample_inputs()).await;
    let run_path = format!("/v1/runs/{}", run["id"].as_str().expect("id"));
    expect_json(a.post_json(&format!("{run_path}/cancel"), &json!({})).await, StatusCode::ACCEPTED).await;
    expect_problem(a.post_json(&format!("{run_path}/cancel"), &json!({})).await, StatusCode::CONFLICT).await;
    assert_eq!(a.delete(&run_path).await.status(), StatusCode::NO_CONTENT);
    let hook = json!({"url": sink.url("/hook"), "events": ["*"]});
    let webhook = expect_json(a.post_json("/v1/webhooks", &hook).await, StatusCode::CREATED).await;
    let webhook_path = format!("/v1/webhooks/{}", webhook["id"].as_str().expect("id"));
    // B tries A's crew: to B it does not exist, and the record is B's.
    expect_problem(b.delete("/v1/crews/writer").await, StatusCode::NOT_FOUND).await;

    let mine = entries(&a, "").await;
    assert!(mine.iter().all(|e| e["tenant"] == "team-a"), "{mine:?}");
    let seen = summary(&mine);
    assert!(has(&seen, "secret.put", "succeeded", "/v1/secrets/token"), "{seen:?}");
    assert!(has(&seen, "secret.put", "denied", "/v1/secrets/token"), "{seen:?}");
    assert!(has(&seen, "secret.delete", "succeeded", "/v1/secrets/token"), "{seen:?}");
    assert!(has(&seen, "secret.delete", "not_found", "/v1/secrets/token"), "{seen:?}");
    assert!(has(&seen, "crew.put", "succeeded", "/v1/crews/writer"), "{seen:?}");
    assert!(has(&seen, "run.cancel", "succeeded", &format!("{run_path}/cancel")), "{seen:?}");
    assert!(has(&seen, "run.cancel", "conflict", &format!("{run_path}/cancel")), "{seen:?}");
    assert!(has(&seen, "run.delete", "succeeded", &run_path), "{seen:?}");
    assert!(has(&seen, "webhook.create", "succeeded", &webhook_path), "{seen:?}");
    // Each change is recorded once, by its own transaction; kickoffs are not audited (a run is
    // its own record).
    assert_eq!(seen.iter().filter(|(a, o, _)| a == "secret.put" && o == "succeeded").count(), 1, "{seen:?}");
    assert!(!seen.iter().any(|(a, _, _)| a.starts_with("kickoff")), "{seen:?}");
    // Who did what: the denied write was the reader's key.
    let denied = mine.iter().find(|e| e["outcome"] == "denied").expect("denied");
    assert_eq!(denied["key_id"], json!(a_reader_id));
    // The rest were A's key's, but for the tenant and its keys, which the operator made.
    let operators = |e: &&Value| e["action"] == "tenant.create" || e["action"] == "key.create";
    assert_eq!(mine.iter().filter(operators).filter(|e| e["key_id"].is_null()).count(), 3, "{mine:?}");
    let by_a = mine.iter().filter(|e| e["outcome"] != "denied" && !operators(e));
    assert!(by_a.clone().count() == 8 && by_a.into_iter().all(|e| e["key_id"] == json!(a_id)), "{mine:?}");

    // B sees its own refusal and nothing of A's.
    let theirs = entries(&b, "").await;
    let theirs_seen = summary(&theirs);
    assert_eq!(theirs_seen.len(), 3, "B's creation, B's key and B's refusal: {theirs_seen:?}");
    assert!(has(&theirs_seen, "tenant.create", "succeeded", "/v1/tenants/team-b"), "{theirs_seen:?}");
    assert_eq!(theirs_seen[2], ("crew.delete".into(), "not_found".into(), "/v1/crews/writer".into()));
    assert!(theirs.iter().all(|e| e["tenant"] == "team-b"), "{theirs:?}");
    assert_eq!(theirs[0]["key_id"], json!(b_id));
    assert!(entries(&b, "?tenant=team-a").await.is_empty(), "a filter cannot widen a tenant's view");
    // Reading the audit log takes `manage`.
    expect_problem(a_reader.get("/v1/audit").await, StatusCode::FORBIDDEN).await;

    // The operator sees every tenant's, its own changes (made with no stored key) included.
    let all = entries(&root, "?limit=1000").await;
    let all_seen = summary(&all);
    assert!(has(&all_seen, "tenant.create", "succeeded", "/v1/tenants/team-a"), "{all_seen:?}");
    assert!(has(&all_seen, "crew.delete", "not_found", "/v1/crews/writer"), "{all_seen:?}");
    let keys_made: Vec<&Value> = all.iter().filter(|e| e["action"] == "key.create").collect();
    assert_eq!(keys_made.len(), 3, "{keys_made:?}");
    for made in keys_made {
        assert_eq!(made["key_id"], Value::Null, "made with a key of AGENTD_API_KEYS: {made}");
        assert!(made["resource"].as_str().is_some_and(|r| r.starts_with("/v1/keys/")), "{made}");
    }
    // Filters.
    let only_b = entries(&root, "?tenant=team-b").await;
    assert_eq!(only_b.len(), 3, "B's creation, B's key and B's refusal: {only_b:?}");
    let denials = entries(&root, "?outcome=denied").await;
    assert_eq!(denials.len(), 1, "{denials:?}");
    assert_eq!(entries(&root, "?action=secret.delete&outcome=not_found").await.len(), 1);
    assert_eq!(entries(&root, &format!("?key_id={b_id}")).await.len(), 1);
    assert_eq!(entries(&root, "?resource=/v1/secrets/").await.len(), 4);
    expect_problem(root.get("/v1/audit?outcome=maybe").await, StatusCode::BAD_REQUEST).await;
    expect_problem(root.get("/v1/audit?cursor=nope").await, StatusCode::BAD_REQUEST).await;

    // The cursor pages through all of it, newest first, each record once.
    let mut paged = Vec::new();
    let mut query = "?limit=3".to_owned();
    loop {
        let page = expect_json(root.get(&format!("/v1/audit{query}")).await, StatusCode::OK).await;
        paged.extend(page["entries"].as_array().expect("entries").iter().map(|e| e["id"].clone()));
        match page["next_cursor"].as_str() {
            Some(cursor) => query = format!("?limit=3&cursor={cursor}"),
            None => break,
        }
    }
    let ids: Vec<Value> = all.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(paged, ids);
    assert_eq!(ids.iter().map(Value::to_string).collect::<BTreeSet<_>>().len(), ids.len());
}

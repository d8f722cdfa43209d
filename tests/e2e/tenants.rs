//! Tenants and scoped keys over HTTP: a matrix generated from the OpenAPI document (every `/v1`
//! operation: no key → 401, a key without the operation's scope → 403, another tenant's key → 404
//! on a path naming a resource and nothing of it in a list), the firehose, revocation seen by a
//! second replica, and keys kept only as digests.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agentd::config::ApiKeys;
use agentd::webhooks::SigningKey;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{
    database_text, expect_json, expect_problem, loopback_egress, sample_crew, sample_inputs, test_config,
    TestApp, WebhookSink,
};

const ROOT: &str = "root-key-of-the-operator";
const WEBHOOK_SECRET: &str = "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";
/// The crew A registers (B's runs use the sample crew, under another name).
const A_CREW: &str = "a-private-crew";
/// The knowledge base A makes (with one document).
const A_BASE: &str = "a-private-kb";
/// The memory scope A keeps a note in.
const A_SCOPE: &str = "a-private-scope";
const NON_ADMIN: [&str; 4] = ["read", "kickoff", "approve", "manage"];

/// A server with an operator key, secrets and webhooks (sent to loopback receivers the tests
/// own, [`WebhookSink`], and nowhere else), answering for `root`.
pub(crate) async fn server(pool: PgPool) -> TestApp {
    let mut config = test_config();
    config.api_keys = ApiKeys::parse(ROOT);
    config.secrets_key = Some(crate::secrets::test_key());
    config.webhooks.key = Some(SigningKey::parse(WEBHOOK_SECRET).expect("signing key"));
    config.webhooks.egress = loopback_egress();
    TestApp::spawn_with(pool, config).await.as_key(Some(ROOT))
}

/// Create tenant `name` (as the operator).
pub(crate) async fn tenant(root: &TestApp, name: &str) {
    expect_json(root.post_json("/v1/tenants", &json!({"name": name})).await, StatusCode::CREATED).await;
}

/// A new key of `tenant` with `scopes`: (its text, its id).
pub(crate) async fn key(root: &TestApp, tenant: &str, scopes: &[&str]) -> (String, String) {
    let body = json!({"tenant": tenant, "name": format!("{tenant} {scopes:?}"), "scopes": scopes});
    let created = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
    let text = created["key"].as_str().expect("key").to_owned();
    assert!(text.starts_with("agd_") && text.len() >= 4 + 43, "{created}");
    assert_eq!(created["prefix"].as_str(), Some(&text[..12]));
    (text, created["id"].as_str().expect("id").to_owned())
}

/// What tenant A owns, to be named in paths.
struct Owned {
    run: String,
    webhook: String,
    key_id: String,
    document: String,
    memory: String,
    thread: String,
    schedule: String,
    dataset: String,
    evaluation: String,
}

/// A body each operation accepts (what the server checks before or after the tenant is a
/// separate question: these pass validation); a webhook's is `hook_url`.
fn body_of(method: &Method, path: &str, hook_url: &str) -> Option<Value> {
    let kickoff = json!({"crew": sample_crew(), "inputs": sample_inputs()});
    Some(match (method.as_str(), path) {
        ("POST", "/v1/kickoffs") => kickoff,
        ("POST", "/v1/kickoffs/batch") => json!({"crew": sample_crew(), "inputs": [sample_inputs()]}),
        ("PUT", "/v1/crews/{name}") => sample_crew(),
        ("PUT", "/v1/crews/{name}/aliases/{alias}") => json!({"version": 1}),
        ("POST", "/v1/datasets") => json!({"name": "B's cases", "cases": [{"inputs": sample_inputs()}]}),
        ("POST", "/v1/evaluations") => {
            json!({"crew": "research", "runs": [uuid::Uuid::now_v7()], "mode": "live"})
        }
        ("PUT", "/v1/secrets/{name}") => json!({"value": "s3cret"}),
        ("POST", "/v1/webhooks") => json!({"url": hook_url, "events": ["*"]}),
        ("PATCH", "/v1/webhooks/{id}") => json!({"enabled": true}),
        ("POST", "/v1/runs/{id}/resume") | ("POST", "/v1/runs/{id}/tool-calls/{tool_call_id}/approval") => {
            json!({"approve": true})
        }
        ("POST", "/v1/tenants") => json!({"name": "team-z"}),
        ("PATCH", "/v1/tenants") => json!({"name": "team-a", "max_queued": 100}),
        ("POST", "/v1/keys") => json!({"tenant": "team-a", "name": "k", "scopes": ["read"]}),
        ("POST", "/v1/knowledge") => json!({"name": "kb-z"}),
        ("POST", "/v1/knowledge/{name}/documents") => json!({"text": "B's words"}),
        ("POST", "/v1/memories") => json!({"scope": "b-scope", "text": "B's note"}),
        ("POST", "/v1/threads") => json!({"metadata": {"owner": "b"}}),
        ("POST", "/v1/runs/{id}/fork") => json!({"at": {"task": "research"}}),
        ("POST", "/v1/schedules") => {
            json!({"cron": "0 9 * * *", "kickoff": {"crew": sample_crew(), "inputs": sample_inputs()}})
        }
        ("PATCH", "/v1/schedules/{id}") => json!({"enabled": false}),
        ("POST", "/v1/ag-ui/crews/{name}") => {
            json!({"threadId": "t", "runId": "r", "messages": [], "forwardedProps": {"inputs": sample_inputs()}})
        }
        _ => return None,
    })
}

/// `path` with A's resources in its parameters.
fn concrete(path: &str, owned: &Owned) -> String {
    let crew = A_CREW.to_owned();
    let id = if path.starts_with("/v1/webhooks") {
        owned.webhook.clone()
    } else if path.starts_with("/v1/knowledge") {
        owned.document.clone()
    } else if path.starts_with("/v1/memories") {
        owned.memory.clone()
    } else if path.starts_with("/v1/keys") {
        owned.key_id.clone()
    } else if path.starts_with("/v1/threads") {
        owned.thread.clone()
    } else if path.starts_with("/v1/schedules") {
        owned.schedule.clone()
    } else if path.starts_with("/v1/datasets") {
        owned.dataset.clone()
    } else if path.starts_with("/v1/evaluations") {
        owned.evaluation.clone()
    } else {
        owned.run.clone()
    };
    let name = match path {
        p if p.starts_with("/v1/crews") || p.starts_with("/v1/ag-ui/crews") => crew,
        p if p.starts_with("/v1/secrets") => "a_secret".to_owned(),
        p if p.starts_with("/v1/tenants") => "team-a".to_owned(),
        p if p.starts_with("/v1/knowledge") => A_BASE.to_owned(),
        _ => "research".to_owned(),
    };
    let query = match path {
        p if p.ends_with("/search") => "?q=tides".to_owned(),
        "/v1/memories" => format!("?scope={A_SCOPE}"),
        _ => String::new(),
    };
    let path = format!("{path}{query}");
    path.replace("{id}", &id)
        .replace("{name}", &name)
        .replace("{tool_call_id}", "call-1")
        .replace("{alias}", "production")
        .replace("{version}", "1")
        .replace("{delivery_id}", "1")
}

async fn send(app: &TestApp, method: &Method, path: &str, body: Option<&Value>) -> reqwest::Response {
    let request = app.request(method.clone(), path);
    let request = match body {
        Some(body) => request.json(body),
        None => request,
    };
    request.send().await.expect("request")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_openapi_matrix_keeps_tenants_apart_and_holds_keys_to_their_scopes(pool: PgPool) {
    let root = server(pool).await;
    let sink = WebhookSink::start().await;
    tenant(&root, "team-a").await;
    tenant(&root, "team-b").await;
    let (a_key, a_key_id) = key(&root, "team-a", &NON_ADMIN).await;
    let (b_key, _) = key(&root, "team-b", &NON_ADMIN).await;
    let a = root.as_key(Some(&a_key));
    let b = root.as_key(Some(&b_key));
    // A key of A lacking each scope in turn (and `admin`, which A's full key lacks too).
    let mut lacking: BTreeMap<&str, TestApp> = BTreeMap::new();
    for scope in NON_ADMIN {
        let others: Vec<&str> = NON_ADMIN.into_iter().filter(|s| *s != scope).collect();
        lacking.insert(scope, root.as_key(Some(&key(&root, "team-a", &others).await.0)));
    }
    lacking.insert("admin", root.as_key(Some(&a_key)));

    // What A owns: a run, a crew, a secret, a webhook. B has a run of its own.
    let run = a.kickoff(&sample_crew(), sample_inputs()).await;
    b.kickoff(&sample_crew(), sample_inputs()).await;
    let crew_name = A_CREW.to_owned();
    let mut a_crew = sample_crew();
    a_crew["name"] = json!(A_CREW);
    a_crew["publish"] = json!({"ag_ui": true});
    expect_json(a.put_json(&format!("/v1/crews/{crew_name}"), &a_crew).await, StatusCode::CREATED).await;
    let alias = format!("/v1/crews/{crew_name}/aliases/production");
    expect_json(a.put_json(&alias, &json!({"version": 1})).await, StatusCode::CREATED).await;
    expect_json(a.put_json("/v1/secrets/a_secret", &json!({"value": "A-ONLY"})).await, StatusCode::CREATED)
        .await;
    let hook = json!({"url": sink.url("/hook"), "events": ["*"]});
    let webhook = expect_json(a.post_json("/v1/webhooks", &hook).await, StatusCode::CREATED).await;
    expect_json(a.post_json("/v1/knowledge", &json!({"name": A_BASE})).await, StatusCode::CREATED).await;
    let text = json!({"text": "# Tides\n\nHigh tide comes at six."});
    let document = expect_json(
        a.post_json(&format!("/v1/knowledge/{A_BASE}/documents"), &text).await,
        StatusCode::ACCEPTED,
    )
    .await;
    let note = json!({"scope": A_SCOPE, "text": "The tide table is in the shed."});
    let memory = expect_json(a.post_json("/v1/memories", &note).await, StatusCode::CREATED).await;
    let thread = expect_json(a.post_json("/v1/threads", &json!({})).await, StatusCode::CREATED).await;
    let every_morning =
        json!({"cron": "0 9 * * *", "kickoff": {"crew": sample_crew(), "inputs": sample_inputs()}});
    let schedule = expect_json(a.post_json("/v1/schedules", &every_morning).await, StatusCode::CREATED).await;
    let cases = json!({"name": "A's cases", "cases": [{"inputs": sample_inputs()}]});
    let dataset = expect_json(a.post_json("/v1/datasets", &cases).await, StatusCode::CREATED).await;
    let evaluate = json!({"crew": A_CREW, "dataset": dataset["id"], "mode": "live"});
    let evaluation = expect_json(a.post_json("/v1/evaluations", &evaluate).await, StatusCode::ACCEPTED).await;
    let owned = Owned {
        dataset: dataset["id"].as_str().expect("id").to_owned(),
        evaluation: evaluation["id"].as_str().expect("id").to_owned(),
        schedule: schedule["id"].as_str().expect("id").to_owned(),
        thread: thread["id"].as_str().expect("id").to_owned(),
        memory: memory["id"].as_str().expect("id").to_owned(),
        run: run["id"].as_str().expect("id").to_owned(),
        webhook: webhook["id"].as_str().expect("id").to_owned(),
        key_id: a_key_id,
        document: document["id"].as_str().expect("id").to_owned(),
    };
    let mine = [
        owned.run.as_str(),
        owned.webhook.as_str(),
        crew_name.as_str(),
        "a_secret",
        A_BASE,
        A_SCOPE,
        owned.thread.as_str(),
        owned.schedule.as_str(),
        owned.dataset.as_str(),
        owned.evaluation.as_str(),
    ];

    let document = expect_json(root.get("/openapi.json").await, StatusCode::OK).await;
    let mut cases = BTreeMap::<&str, usize>::new();
    let mut operations = 0;
    for (path, item) in document["paths"].as_object().expect("paths") {
        if !path.starts_with("/v1/") {
            continue;
        }
        for (method, operation) in item.as_object().expect("item") {
            let Ok(method) = method.to_uppercase().parse::<Method>() else { continue };
            operations += 1;
            let scope =
                operation["x-required-scope"].as_str().unwrap_or_else(|| panic!("{method} {path}: no scope"));
            assert!(operation["responses"]["403"].is_object(), "{method} {path}: no 403 declared");
            let url = concrete(path, &owned);
            let body = body_of(&method, path, &sink.url("/hook"));
            let what = format!("{method} {url}");

            // No key: 401.
            let response = send(&root.as_key(None), &method, &url, body.as_ref()).await;
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what} without a key");
            *cases.entry("401 without a key").or_default() += 1;

            // A key without the scope: 403 naming it.
            let response = send(&lacking[scope], &method, &url, body.as_ref()).await;
            let problem = expect_problem(response, StatusCode::FORBIDDEN).await;
            assert_eq!(problem["type"], "/problems/forbidden", "{what}");
            assert!(problem["detail"].as_str().is_some_and(|d| d.contains(scope)), "{what}: {problem}");
            *cases.entry("403 without the scope").or_default() += 1;

            if scope == "admin" || path == "/v1/events" {
                continue; // Admin sees every tenant; the firehose is a stream (below).
            }
            let names_a_resource = path.contains('{') && path != "/v1/tools";
            if names_a_resource && method != Method::PUT {
                // Another tenant's resource is one that does not exist.
                let response = send(&b, &method, &url, body.as_ref()).await;
                expect_problem(response, StatusCode::NOT_FOUND).await;
                *cases.entry("404 for another tenant's resource").or_default() += 1;
            } else if method == Method::GET {
                // A list shows none of another tenant's (answered 200: an error shows nothing
                // either).
                let text = expect_json(send(&b, &method, &url, None).await, StatusCode::OK).await.to_string();
                for owned in mine {
                    assert!(!text.contains(owned), "{what} shows A's {owned} to B: {text}");
                }
                let own = expect_json(send(&a, &method, &url, None).await, StatusCode::OK).await.to_string();
                assert!(
                    mine.iter().any(|m| own.contains(m)) || path == "/v1/tools" || path == "/v1/whoami",
                    "{what}: A sees its own: {own}"
                );
                *cases.entry("lists without another tenant's").or_default() += 1;
            }
        }
    }
    assert!(operations >= 45, "{operations} operations");
    eprintln!("matrix: {operations} operations, cases {cases:?}");

    // A run B may not see has, to B, no webhooks (as a run that does not exist).
    let hooks = expect_json(b.get(&format!("/v1/webhooks?run_id={}", owned.run)).await, StatusCode::OK).await;
    assert_eq!(hooks["webhooks"], json!([]), "{hooks}");

    // B cannot point A's aliases anywhere, nor kick A's crew off by any of its references: to
    // B, A's crew does not exist.
    expect_problem(b.put_json(&alias, &json!({"version": 1})).await, StatusCode::NOT_FOUND).await;
    for reference in
        [format!("{crew_name}@production"), format!("{crew_name}@1"), format!("{crew_name}@latest")]
    {
        let body = json!({"crew": reference, "inputs": sample_inputs()});
        expect_problem(b.post_json("/v1/kickoffs", &body).await, StatusCode::NOT_FOUND).await;
    }

    // Nothing B did reached A's: everything is still there.
    let crew = expect_json(a.get(&format!("/v1/crews/{crew_name}")).await, StatusCode::OK).await;
    assert_eq!(crew["spec"]["name"], crew_name);
    assert_eq!((crew["version"].as_i64(), crew["aliases"].clone()), (Some(1), json!({"production": 1})));
    let secrets = expect_json(a.get("/v1/secrets").await, StatusCode::OK).await;
    assert_eq!(secrets["secrets"].as_array().map(Vec::len), Some(1), "{secrets}");
    let still = expect_json(a.get(&format!("/v1/runs/{}", owned.run)).await, StatusCode::OK).await;
    assert_eq!((still["status"].as_str(), still["tenant"].as_str()), (Some("queued"), Some("team-a")));
    expect_json(a.get(&format!("/v1/webhooks/{}", owned.webhook)).await, StatusCode::OK).await;
    expect_json(a.get(&format!("/v1/memories/{}", owned.memory)).await, StatusCode::OK).await;
    expect_json(a.get(&format!("/v1/threads/{}", owned.thread)).await, StatusCode::OK).await;
    let still = expect_json(a.get(&format!("/v1/schedules/{}", owned.schedule)).await, StatusCode::OK).await;
    assert_eq!(still["enabled"], true, "B's PATCH did not reach A's schedule");
    // The operator sees both tenants' runs.
    let all = expect_json(root.get("/v1/runs").await, StatusCode::OK).await;
    let tenants: Vec<&str> =
        all["runs"].as_array().expect("runs").iter().filter_map(|r| r["tenant"].as_str()).collect();
    assert!(tenants.contains(&"team-a") && tenants.contains(&"team-b"), "{tenants:?}");
}

/// B's firehose carries B's runs' events and none of A's.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_firehose_shows_a_tenant_its_own_runs_only(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    tenant(&root, "team-b").await;
    let a = root.as_key(Some(&key(&root, "team-a", &["read", "kickoff"]).await.0));
    let b = root.as_key(Some(&key(&root, "team-b", &["read", "kickoff"]).await.0));
    let a_run = a.kickoff(&sample_crew(), sample_inputs()).await["id"].as_str().expect("id").to_owned();
    let b_run = b.kickoff(&sample_crew(), sample_inputs()).await["id"].as_str().expect("id").to_owned();
    let a_later = a.kickoff(&sample_crew(), sample_inputs()).await["id"].as_str().expect("id").to_owned();

    let stream = |app: &TestApp| {
        app.request(Method::GET, "/v1/events?after=0").header("accept", "text/event-stream").send()
    };
    let mut response = stream(&b).await.expect("stream");
    assert_eq!(response.status(), StatusCode::OK);
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !text.contains(&b_run) {
        let chunk =
            tokio::time::timeout_at(deadline.into(), response.chunk()).await.expect("B's run in time");
        text.push_str(&String::from_utf8_lossy(&chunk.expect("chunk").expect("open")));
    }
    assert!(!text.contains(&a_run) && !text.contains(&a_later), "{text}");
    // The operator's firehose has both.
    let mut response = stream(&root).await.expect("stream");
    let mut all = String::new();
    while !(all.contains(&a_run) && all.contains(&b_run)) {
        let chunk = tokio::time::timeout_at(deadline.into(), response.chunk()).await.expect("both in time");
        all.push_str(&String::from_utf8_lossy(&chunk.expect("chunk").expect("open")));
    }
}

/// A revoked key is refused by the replica that revoked it at once and by another replica within
/// about a second (each trusts what it read of a key for a second).
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_revoked_key_is_refused_on_every_replica_within_about_a_second(pool: PgPool) {
    let first = server(pool.clone()).await;
    let second = server(pool).await;
    tenant(&first, "team-a").await;
    let (text, id) = key(&first, "team-a", &["read"]).await;
    let on_second = second.as_key(Some(&text));
    assert_eq!(on_second.get("/v1/runs").await.status(), StatusCode::OK);
    assert_eq!(first.as_key(Some(&text)).get("/v1/runs").await.status(), StatusCode::OK);
    let keys = expect_json(first.get("/v1/keys").await, StatusCode::OK).await;
    assert!(
        keys["keys"].as_array().expect("keys").iter().any(|k| k["id"] == id && k.get("key").is_none()),
        "{keys}"
    );

    assert_eq!(first.delete(&format!("/v1/keys/{id}")).await.status(), StatusCode::NO_CONTENT);
    let revoked = Instant::now();
    assert_eq!(first.as_key(Some(&text)).get("/v1/runs").await.status(), StatusCode::UNAUTHORIZED);
    // The second replica trusted what it read of the key (before the revocation) for at most a
    // second: a request sent later than that is refused, however slowly it is served.
    loop {
        let sent = revoked.elapsed();
        let status = on_second.get("/v1/runs").await.status();
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            sent < Duration::from_millis(1200),
            "a request sent {sent:?} after the revocation was served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("revocation seen by the second replica after {:?}", revoked.elapsed());
    expect_problem(first.delete(&format!("/v1/keys/{id}")).await, StatusCode::NOT_FOUND).await;
}

/// Keys are stored as digests only; bad key requests are clear errors.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn keys_are_stored_as_digests_and_bad_requests_are_clear(pool: PgPool) {
    let root = server(pool.clone()).await;
    tenant(&root, "team-a").await;
    let (text, _) = key(&root, "team-a", &["read", "manage"]).await;
    let stored = database_text(&pool).await;
    assert!(!stored.contains(&text) && !stored.contains(&text[12..]), "a key is in the database");
    assert!(!stored.contains(ROOT));

    let problem = expect_problem(
        root.post_json("/v1/keys", &json!({"tenant": "team-x", "name": "", "scopes": ["root"]})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields: Vec<&str> =
        problem["errors"].as_array().expect("errors").iter().filter_map(|e| e["field"].as_str()).collect();
    assert_eq!(fields, ["scopes[0]", "name", "tenant"], "{problem}");
    expect_problem(
        root.post_json("/v1/tenants", &json!({"name": "Team A"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(root.post_json("/v1/tenants", &json!({"name": "team-a"})).await, StatusCode::CONFLICT)
        .await;
    let tenants = expect_json(root.get("/v1/tenants").await, StatusCode::OK).await;
    let names: Vec<&str> =
        tenants["tenants"].as_array().expect("tenants").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["default", "team-a"]);
    expect_problem(root.get("/v1/tenants/team-q").await, StatusCode::NOT_FOUND).await;
    // A made-up key of the right shape is a 401 like any other.
    let fake = format!("agd_{}", "A".repeat(43));
    assert_eq!(root.as_key(Some(&fake)).get("/v1/runs").await.status(), StatusCode::UNAUTHORIZED);
}

/// Names and keys are per tenant: the same crew name, secret name and Idempotency-Key in two
/// tenants are two things; a registered endpoint gets deliveries of its own tenant's runs only.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn names_idempotency_keys_and_webhook_deliveries_are_per_tenant(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    tenant(&root, "team-b").await;
    let a = root.as_key(Some(&key(&root, "team-a", &NON_ADMIN).await.0));
    let b = root.as_key(Some(&key(&root, "team-b", &NON_ADMIN).await.0));
    let sink = WebhookSink::start().await;
    let hook = json!({"url": sink.url("/hook"), "events": ["run.queued"]});
    let endpoint = expect_json(a.post_json("/v1/webhooks", &hook).await, StatusCode::CREATED).await;
    let endpoint = endpoint["id"].as_str().expect("id").to_owned();

    let mut runs = Vec::new();
    for (client, topic) in [(&a, "tides"), (&b, "orbits")] {
        // The same crew name: a crew of each tenant.
        let mut crew = sample_crew();
        crew["name"] = json!("research");
        expect_json(client.put_json("/v1/crews/research", &crew).await, StatusCode::CREATED).await;
        expect_json(
            client.put_json("/v1/secrets/token", &json!({"value": topic})).await,
            StatusCode::CREATED,
        )
        .await;
        // The same Idempotency-Key with different bodies: no conflict across tenants.
        let body = json!({"crew": "research", "inputs": {"topic": topic, "audience": "engineers"}});
        let response = client
            .request(Method::POST, "/v1/kickoffs")
            .header("Idempotency-Key", "same-key")
            .json(&body)
            .send()
            .await
            .expect("kickoff");
        let run = expect_json(response, StatusCode::ACCEPTED).await;
        runs.push(run["id"].as_str().expect("id").to_owned());
        let again = client
            .request(Method::POST, "/v1/kickoffs")
            .header("Idempotency-Key", "same-key")
            .json(&body)
            .send()
            .await
            .expect("replay");
        assert_eq!(expect_json(again, StatusCode::OK).await["id"], run["id"], "replayed within the tenant");
    }
    let (a_run, b_run) = (&runs[0], &runs[1]);
    let crews = expect_json(a.get("/v1/crews").await, StatusCode::OK).await;
    assert_eq!(crews["crews"].as_array().map(Vec::len), Some(1), "{crews}");

    // A's endpoint took A's run.queued and not B's: in its deliveries, and at the receiver.
    let deliveries =
        expect_json(a.get(&format!("/v1/webhooks/{endpoint}/deliveries")).await, StatusCode::OK).await;
    let text = deliveries.to_string();
    assert!(text.contains(a_run.as_str()) && !text.contains(b_run.as_str()), "{deliveries}");
    let received =
        sink.wait_until("A's run.queued", |r| r.iter().any(|(_, e)| e["run_id"] == a_run.as_str())).await;
    let delivered = |run: &str| received.iter().filter(|(_, e)| e["run_id"] == run).count();
    assert_eq!((delivered(a_run), delivered(b_run)), (1, 0), "{received:#?}");
}

/// `GET /v1/whoami` names the key's tenant, scopes and id (the operator's key has no id).
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn whoami_names_the_keys_tenant_and_scopes(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    let (text, id) = key(&root, "team-a", &["read", "approve"]).await;
    let me = expect_json(root.as_key(Some(&text)).get("/v1/whoami").await, StatusCode::OK).await;
    assert_eq!(me, json!({"tenant": "team-a", "scopes": ["read", "approve"], "key_id": id}));
    let operator = expect_json(root.get("/v1/whoami").await, StatusCode::OK).await;
    assert_eq!(operator["tenant"], "default");
    assert_eq!(operator["key_id"], Value::Null);
    assert_eq!(operator["scopes"].as_array().map(Vec::len), Some(5), "{operator}");
    let (kickoff_only, _) = key(&root, "team-a", &["kickoff"]).await;
    expect_problem(root.as_key(Some(&kickoff_only)).get("/v1/whoami").await, StatusCode::FORBIDDEN).await;
}

/// Names and descriptions a client stores and the server shows again refuse control characters
/// (a terminal's escapes among them: ESC, CSI, DEL) with a 422 naming the field; a description
/// keeps its line feeds and tabs, a name does not.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn names_and_descriptions_refuse_control_characters(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    let a = root.as_key(Some(&key(&root, "team-a", &NON_ADMIN).await.0));
    let escapes = ["red\u{1b}[31m", "clear\u{9b}2J", "del\u{7f}", "bell\u{7}", "over\rwrite"];
    async fn refused(response: reqwest::Response, field: &str) {
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let message = crate::support::problem_fields(&problem).get(field).cloned().unwrap_or_default();
        assert!(message.contains("control characters"), "{field}: {problem}");
    }

    // A key's name: one line, no control character.
    for name in escapes.iter().copied().chain(["two\nlines", "tab\there"]) {
        let body = json!({"tenant": "team-a", "name": name, "scopes": ["read"]});
        refused(root.post_json("/v1/keys", &body).await, "name").await;
    }
    let keys = expect_json(root.get("/v1/keys").await, StatusCode::OK).await;
    assert!(!keys.to_string().contains("\\u001b"), "a refused key was stored: {keys}");

    // A webhook's description: lines and tabs, nothing else.
    let sink = WebhookSink::start().await;
    let hook = |description: &str| json!({"url": sink.url("/hook"), "description": description});
    for description in escapes {
        refused(a.post_json("/v1/webhooks", &hook(description)).await, "description").await;
    }
    let multi_line = "Billing events\n\tfor the ledger";
    let created =
        expect_json(a.post_json("/v1/webhooks", &hook(multi_line)).await, StatusCode::CREATED).await;
    assert_eq!(created["description"], multi_line, "{created}");
    let path = format!("/v1/webhooks/{}", created["id"].as_str().expect("id"));
    let patch = a.request(Method::PATCH, &path).json(&json!({"description": "now \u{1b}]0;pwned\u{7}"}));
    refused(patch.send().await.expect("patch"), "description").await;
    assert_eq!(expect_json(a.get(&path).await, StatusCode::OK).await["description"], multi_line);

    // The same rule elsewhere: a schedule's name, a knowledge base's description, a document's
    // title, a crew's description, an agent's name and role.
    let every_morning = json!({"name": "daily\u{1b}[2J", "cron": "0 9 * * *",
        "kickoff": {"crew": sample_crew(), "inputs": sample_inputs()}});
    refused(a.post_json("/v1/schedules", &every_morning).await, "name").await;
    let base = json!({"name": "kb", "description": "facts\u{9b}"});
    refused(a.post_json("/v1/knowledge", &base).await, "description").await;
    expect_json(a.post_json("/v1/knowledge", &json!({"name": "kb"})).await, StatusCode::CREATED).await;
    let document = json!({"title": "Tides\u{1b}", "text": "High tide at six."});
    refused(a.post_json("/v1/knowledge/kb/documents", &document).await, "title").await;
    for (field, value) in [
        ("description", json!("Plans trips\u{1b}[5m")),
        ("agents[0].name", json!("research\u{85}er")),
        ("agents[0].role", json!("Senior\u{1b}[8m researcher")),
    ] {
        let mut crew = sample_crew();
        match field.split_once('.') {
            Some((_, key)) => crew["agents"][0][key] = value,
            None => crew[field] = value,
        }
        refused(a.put_json("/v1/crews/trip-planner", &crew).await, field).await;
        let kickoff = json!({"crew": crew, "inputs": sample_inputs()});
        refused(a.post_json("/v1/kickoffs", &kickoff).await, &format!("crew.{field}")).await;
    }
}

/// What `response` answered, with `id` in its text written `<id>` (the only part that may differ
/// between two ids that name no thread of the caller's).
async fn answer_naming(response: reqwest::Response, id: &str) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("body").replace(id, "<id>");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Another tenant's thread is, to a tenant, a thread that does not exist: a kickoff into it (with
/// each `multitask_strategy`), a schedule whose kickoff names it (created or changed), reading and
/// deleting it answer exactly as for a made-up id; and the other tenant's thread is untouched.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenants_thread_is_answered_as_a_made_up_thread_id(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    tenant(&root, "team-b").await;
    let a = root.as_key(Some(&key(&root, "team-a", &NON_ADMIN).await.0));
    let b = root.as_key(Some(&key(&root, "team-b", &NON_ADMIN).await.0));
    let thread = expect_json(a.post_json("/v1/threads", &json!({})).await, StatusCode::CREATED).await;
    let theirs = thread["id"].as_str().expect("id").to_owned();
    let kickoff = json!({"crew": sample_crew(), "inputs": sample_inputs(), "thread_id": theirs});
    expect_json(a.post_json("/v1/kickoffs", &kickoff).await, StatusCode::ACCEPTED).await;
    let every_morning =
        json!({"cron": "0 9 * * *", "kickoff": {"crew": sample_crew(), "inputs": sample_inputs()}});
    let schedule = expect_json(b.post_json("/v1/schedules", &every_morning).await, StatusCode::CREATED).await;
    let schedule = format!("/v1/schedules/{}", schedule["id"].as_str().expect("id"));

    let answers = |id: String| {
        let (b, schedule) = (&b, &schedule);
        async move {
            let mut seen = Vec::new();
            for strategy in [None, Some("reject"), Some("enqueue"), Some("interrupt"), Some("rollback")] {
                let mut body = json!({"crew": sample_crew(), "inputs": sample_inputs(), "thread_id": id});
                if let Some(strategy) = strategy {
                    body["multitask_strategy"] = json!(strategy);
                }
                seen.push(answer_naming(b.post_json("/v1/kickoffs", &body).await, &id).await);
            }
            let kickoff = json!({"crew": sample_crew(), "inputs": sample_inputs(), "thread_id": id});
            let created = json!({"cron": "0 9 * * *", "kickoff": kickoff});
            seen.push(answer_naming(b.post_json("/v1/schedules", &created).await, &id).await);
            let changed = b.request(Method::PATCH, schedule).json(&json!({"kickoff": kickoff}));
            seen.push(answer_naming(changed.send().await.expect("patch"), &id).await);
            seen.push(answer_naming(b.get(&format!("/v1/threads/{id}")).await, &id).await);
            seen.push(answer_naming(b.delete(&format!("/v1/threads/{id}")).await, &id).await);
            seen
        }
    };
    let for_theirs = answers(theirs.clone()).await;
    let for_made_up = answers(uuid::Uuid::now_v7().to_string()).await;
    assert_eq!(for_theirs, for_made_up);
    let statuses: Vec<u16> = for_theirs.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, [404, 404, 404, 404, 404, 422, 422, 404, 404], "{for_theirs:?}");

    // A's thread is as A left it: one run, A's.
    let thread = expect_json(a.get(&format!("/v1/threads/{theirs}")).await, StatusCode::OK).await;
    assert_eq!(thread["runs"].as_array().map(Vec::len), Some(1), "{thread}");
}

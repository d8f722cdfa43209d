//! Stored secrets over HTTP: `PUT/GET/DELETE /v1/secrets`, the answers without a key configured,
//! and kickoffs and crews that reference secrets.

use std::sync::Arc;

use agentd::secrets::SecretsKey;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{database_text, expect_json, expect_problem, test_config, TestApp};

pub const TEST_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// The key of these tests.
pub fn test_key() -> Arc<SecretsKey> {
    Arc::new(SecretsKey::parse(TEST_KEY).expect("key"))
}

/// The fields a validation problem names, in order.
fn fields(problem: &Value) -> Vec<&str> {
    problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().expect("field"))
        .collect()
}

/// The app with secrets sealed under [`TEST_KEY`].
async fn app_with_secrets(pool: PgPool) -> TestApp {
    let mut config = test_config();
    config.secrets_key = Some(test_key());
    TestApp::spawn_with(pool, config).await
}

/// A crew whose HTTP tool sends the secret `name` as its bearer token.
fn crew_with_secret(name: &str) -> Value {
    json!({
        "name": "secretive",
        "agents": [{"name": "a", "role": "r", "goal": "g", "backstory": "b", "tools": ["orders"]}],
        "tasks": [{"name": "t", "description": "d", "expected_output": "e", "agent": "a"}],
        "tools": [{"name": "orders", "description": "Orders", "parameters": {"type": "object"},
                   "http": {"url": "http://127.0.0.1:9/api",
                            "headers": {"Authorization": {"secret": name, "prefix": "Bearer "},
                                        "X-Plain": "yes"},
                            "query": {"key": {"secret": name}}}}]
    })
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn secrets_are_stored_listed_replaced_and_deleted_without_their_values(pool: PgPool) {
    let app = app_with_secrets(pool.clone()).await;
    let created = expect_json(
        app.put_json("/v1/secrets/api_token", &json!({"value": "tok-1-very-secret"})).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(created["name"], "api_token");
    assert!(created["created_at"].is_string() && created["updated_at"].is_string());
    assert!(created.get("value").is_none(), "{created}");
    let replaced = expect_json(
        app.put_json("/v1/secrets/api_token", &json!({"value": "tok-2-very-secret"})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(replaced["created_at"], created["created_at"]);
    assert_ne!(replaced["updated_at"], created["updated_at"]);
    expect_json(app.put_json("/v1/secrets/other", &json!({"value": "x"})).await, StatusCode::CREATED).await;

    let list = expect_json(app.get("/v1/secrets").await, StatusCode::OK).await;
    let names: Vec<&str> =
        list["secrets"].as_array().expect("list").iter().map(|s| s["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["api_token", "other"]);
    assert!(!list.to_string().contains("very-secret"), "{list}");
    // At rest the value is sealed: no table holds it in the clear (bytea dumped as its bytes),
    // the stored bytes do not contain it, and they open with this server's key only.
    let dump = database_text(&pool).await;
    assert!(dump.contains("api_token"), "the dump sees the secrets table");
    assert!(!dump.contains("tok-2-very-secret") && !dump.contains("tok-1-very-secret"));
    let (key_id, nonce, ciphertext): (String, Vec<u8>, Vec<u8>) =
        sqlx::query_as("SELECT key_id, nonce, ciphertext FROM secrets WHERE name = 'api_token'")
            .fetch_one(&pool)
            .await
            .expect("the stored row");
    let clear = b"tok-2-very-secret";
    assert!(!ciphertext.windows(clear.len()).any(|w| w == clear), "the stored bytes hold the value");
    let sealed = agentd::store::SealedSecret { key_id, nonce, ciphertext };
    assert_eq!(test_key().open("api_token", &sealed).expect("opens with the key"), "tok-2-very-secret");
    assert!(test_key().open("other", &sealed).is_err(), "the name is bound to the value");
    let other = SecretsKey::parse(&"ab".repeat(32)).expect("another key");
    assert!(other.open("api_token", &sealed).is_err(), "another key is recognised");
    // Under another key's id, decryption itself fails.
    let forged = agentd::store::SealedSecret { key_id: other.seal("x", "y").expect("seal").key_id, ..sealed };
    assert!(other.open("api_token", &forged).is_err(), "another key does not open it");

    assert_eq!(app.delete("/v1/secrets/other").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.delete("/v1/secrets/other").await, StatusCode::NOT_FOUND).await;
    let list = expect_json(app.get("/v1/secrets").await, StatusCode::OK).await;
    assert_eq!(list["secrets"].as_array().map(Vec::len), Some(1));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn bad_secret_requests_get_clear_problems(pool: PgPool) {
    let app = app_with_secrets(pool).await;
    let problem = expect_problem(
        app.put_json("/v1/secrets/bad!name", &json!({"value": "v"})).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("invalid secret name")), "{problem}");
    expect_problem(app.put_json("/v1/secrets/a%20b", &json!({"value": "v"})).await, StatusCode::BAD_REQUEST)
        .await;
    let empty = expect_problem(
        app.put_json("/v1/secrets/s", &json!({"value": ""})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(empty["errors"][0]["field"], "value");
    let long = "x".repeat(16 * 1024 + 1);
    let too_long = expect_problem(
        app.put_json("/v1/secrets/s", &json!({"value": long})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(too_long["detail"].as_str().is_some_and(|d| d.contains("16384")), "{too_long}");
    expect_problem(
        app.put_json("/v1/secrets/s", &json!({"value": "v", "extra": 1})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        app.put_json("/v1/secrets/s", &json!({"value": 7})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn without_a_key_the_routes_say_so_and_crews_with_secrets_are_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for response in [
        app.put_json("/v1/secrets/s", &json!({"value": "v"})).await,
        app.get("/v1/secrets").await,
        app.delete("/v1/secrets/s").await,
    ] {
        let problem = expect_problem(response, StatusCode::NOT_IMPLEMENTED).await;
        assert_eq!(problem["type"], "/problems/not-configured");
        assert!(problem["detail"].as_str().is_some_and(|d| d.contains("AGENTD_SECRETS_KEY")), "{problem}");
    }
    let kickoff = app.post_json("/v1/kickoffs", &json!({"crew": crew_with_secret("s")})).await;
    let problem = expect_problem(kickoff, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = fields(&problem);
    assert_eq!(fields, ["crew.tools[0].http.headers.Authorization", "crew.tools[0].http.query.key"]);
    assert!(problem.to_string().contains("AGENTD_SECRETS_KEY"), "{problem}");
    let mut spec = crew_with_secret("s");
    spec.as_object_mut().expect("object").remove("name");
    expect_problem(app.put_json("/v1/crews/secretive", &spec).await, StatusCode::UNPROCESSABLE_ENTITY).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_kickoff_naming_a_missing_secret_is_refused_and_one_naming_a_stored_secret_queued(pool: PgPool) {
    let app = app_with_secrets(pool.clone()).await;
    let kickoff = app.post_json("/v1/kickoffs", &json!({"crew": crew_with_secret("orders_key")})).await;
    let problem = expect_problem(kickoff, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(problem["errors"][0]["field"], "crew.tools[0].http.headers.Authorization");
    assert_eq!(problem["errors"][0]["message"], "no secret named 'orders_key'");
    let batch = app
        .post_json("/v1/kickoffs/batch", &json!({"crew": crew_with_secret("orders_key"), "inputs": [{}]}))
        .await;
    expect_problem(batch, StatusCode::UNPROCESSABLE_ENTITY).await;
    // A registered crew may name a secret that does not exist yet; its kickoff may not.
    let mut spec = crew_with_secret("orders_key");
    spec.as_object_mut().expect("object").remove("name");
    expect_json(app.put_json("/v1/crews/secretive", &spec).await, StatusCode::CREATED).await;
    expect_problem(
        app.post_json("/v1/kickoffs", &json!({"crew": "secretive"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;

    expect_json(
        app.put_json("/v1/secrets/orders_key", &json!({"value": "k-123456"})).await,
        StatusCode::CREATED,
    )
    .await;
    let run =
        expect_json(app.post_json("/v1/kickoffs", &json!({"crew": "secretive"})).await, StatusCode::ACCEPTED)
            .await;
    assert_eq!(run["status"], "queued");
    // The run's stored spec keeps the reference, not the value.
    let stored: Value =
        sqlx::query_scalar("SELECT crew_spec FROM runs").fetch_one(&pool).await.expect("spec");
    let reference = &stored["tools"][0]["http"]["headers"]["Authorization"];
    assert_eq!(*reference, json!({"secret": "orders_key", "prefix": "Bearer "}));
    assert!(!database_text(&pool).await.contains("k-123456"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn header_and_query_values_are_checked_at_kickoff(pool: PgPool) {
    let app = app_with_secrets(pool).await;
    let mut spec = crew_with_secret("s");
    spec["tools"][0]["http"]["headers"] = json!({
        "Idempotency-Key": "mine", "Host": "x", "Bad Name": "v", "X-Line": "a\nb",
        "X-Ref": {"secret": "..", "prefix": "p"}, "X-Other": {"secret": "s", "unknown": 1}
    });
    let problem = expect_problem(
        app.post_json("/v1/kickoffs", &json!({"crew": spec})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("unknown field"), "{problem}");
    spec["tools"][0]["http"]["headers"].as_object_mut().expect("headers").remove("X-Other");
    let problem = expect_problem(
        app.post_json("/v1/kickoffs", &json!({"crew": spec})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = fields(&problem);
    for field in ["Idempotency-Key", "Host", "Bad Name", "X-Line", "X-Ref.secret"] {
        assert!(
            fields.contains(&format!("crew.tools[0].http.headers.{field}").as_str()),
            "{field}: {problem}"
        );
    }
}

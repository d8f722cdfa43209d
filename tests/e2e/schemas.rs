//! JSON schemas in crews (tool parameters, task output schemas) are compiled when a crew is
//! submitted: a schema that cannot be compiled, a remote `$ref` included, is a 422 naming its
//! field, and nothing is fetched.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::{expect_problem, problem_fields, sample_crew, sample_inputs, TestApp};

async fn runs(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM runs").fetch_one(pool).await.expect("count")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_remote_ref_is_refused_at_kickoff(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut crew = sample_crew();
    crew["tools"][0]["parameters"]["properties"]["order_id"] = json!({"$ref": "http://127.0.0.1:9/s.json"});
    crew["tasks"][1]["output_schema"]["properties"]["answer"] =
        json!({"$ref": "http://127.0.0.1:9/s.json#/x"});
    let body = json!({"crew": crew, "inputs": sample_inputs()});
    let problem =
        expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = problem_fields(&problem);
    for field in [
        "crew.tools[0].parameters.properties.order_id.$ref",
        "crew.tasks[1].output_schema.properties.answer.$ref",
    ] {
        let message = fields.get(field).unwrap_or_else(|| panic!("no error for {field}: {fields:?}"));
        assert!(
            message.contains("'http://127.0.0.1:9/s.json") && message.contains("not fetched"),
            "{message}"
        );
    }
    assert_eq!(fields.len(), 2, "{fields:?}");
    assert_eq!(runs(&pool).await, 0);

    // The same for a registered crew.
    let problem = expect_problem(
        app.put_json("/v1/crews/trip-planner", &body["crew"]).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        problem_fields(&problem).contains_key("tools[0].parameters.properties.order_id.$ref"),
        "{problem}"
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn schemas_that_do_not_compile_are_422_with_their_field(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut crew = sample_crew();
    crew["tools"][0]["parameters"]["properties"]["order_id"] = json!({"type": "string", "pattern": "(["});
    crew["tasks"][1]["output_schema"]["properties"]["answer"] =
        json!({"type": "number", "exclusiveMinimum": true});
    let body = json!({"crew": crew, "inputs": sample_inputs()});
    let problem =
        expect_problem(app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = problem_fields(&problem);
    assert_eq!(
        fields["crew.tools[0].parameters.properties.order_id.pattern"],
        r#"must be a valid regex; got "([""#
    );
    assert_eq!(
        fields["crew.tasks[1].output_schema.properties.answer.exclusiveMinimum"],
        "expected number, got boolean"
    );
    assert_eq!(runs(&pool).await, 0);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn local_refs_patterns_and_formats_are_accepted(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut crew = sample_crew();
    crew["tools"][0]["parameters"] = json!({"type": "object", "$defs": {"id": {"type": "string",
        "pattern": "^[A-Z]-[0-9]+$"}}, "properties": {"order_id": {"$ref": "#/$defs/id"}}, "required": ["order_id"]});
    crew["tasks"][1]["output_schema"] = json!({"type": "object", "definitions": {"when": {"type": "string",
        "format": "date-time"}}, "properties": {"answer": {"type": "string", "format": "email"},
        "at": {"$ref": "#/definitions/when"}}, "required": ["answer"]});
    app.kickoff(&crew, sample_inputs()).await;
    assert_eq!(runs(&pool).await, 1);
}

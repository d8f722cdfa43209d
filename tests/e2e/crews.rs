//! Registered crews: create, replace, read, list, delete and inputs.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, problem_fields, sample_crew, TestApp};

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn crews_are_created_replaced_listed_and_deleted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let created =
        expect_json(app.put_json("/v1/crews/trip-planner", &sample_crew()).await, StatusCode::CREATED).await;
    assert_eq!(created["name"], "trip-planner");
    assert_eq!(created["spec"]["agents"][0]["max_iter"], 20);

    // The name may be left out of the body; a PUT of an existing name replaces it.
    let mut replacement = sample_crew();
    replacement.as_object_mut().expect("crew").remove("name");
    replacement["agents"][0]["goal"] = json!("Find {topic} facts in {year}");
    let replaced =
        expect_json(app.put_json("/v1/crews/trip-planner", &replacement).await, StatusCode::OK).await;
    assert_eq!(replaced["created_at"], created["created_at"]);
    assert_eq!(replaced["spec"]["name"], "trip-planner");

    let mut other = sample_crew();
    other["name"] = json!("another");
    expect_json(app.put_json("/v1/crews/another", &other).await, StatusCode::CREATED).await;
    let list = expect_json(app.get("/v1/crews").await, StatusCode::OK).await;
    let names: Vec<&str> =
        list["crews"].as_array().expect("crews").iter().map(|c| c["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["another", "trip-planner"]);

    let one = expect_json(app.get("/v1/crews/trip-planner").await, StatusCode::OK).await;
    assert_eq!(one["spec"]["agents"][0]["goal"], "Find {topic} facts in {year}");
    let inputs = expect_json(app.get("/v1/crews/trip-planner/inputs").await, StatusCode::OK).await;
    assert_eq!(inputs, json!({"inputs": ["audience", "topic", "year"]}));

    assert_eq!(app.delete("/v1/crews/trip-planner").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get("/v1/crews/trip-planner").await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get("/v1/crews/trip-planner/inputs").await, StatusCode::NOT_FOUND).await;
    expect_problem(app.delete("/v1/crews/trip-planner").await, StatusCode::NOT_FOUND).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn invalid_crews_are_rejected(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let problem = expect_problem(
        app.put_json("/v1/crews/other-name", &sample_crew()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem).contains_key("name"), "{problem}");

    let mut crew = sample_crew();
    crew["tasks"][0]["agent"] = json!("ghost");
    let problem =
        expect_problem(app.put_json("/v1/crews/trip-planner", &crew).await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    assert!(problem_fields(&problem)["tasks[0].agent"].contains("unknown agent"), "{problem}");

    let problem = expect_problem(
        app.put_json("/v1/crews/trip-planner", &json!([1])).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem["detail"].as_str().expect("detail").contains("object"), "{problem}");
    let problem = expect_problem(
        app.put_json("/v1/crews/trip-planner", &json!({"agents": "x"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem).contains_key("agents"), "{problem}");

    expect_problem(app.put_json("/v1/crews/bad%20name", &sample_crew()).await, StatusCode::BAD_REQUEST).await;
    // Names of dots only would be normalised away from the URL that names them.
    let dots =
        expect_problem(app.put_json("/v1/crews/...", &sample_crew()).await, StatusCode::BAD_REQUEST).await;
    assert!(dots["detail"].as_str().is_some_and(|d| d.contains("dots only")), "{dots}");
    let mut dotted = sample_crew();
    dotted["name"] = json!("..");
    let kickoff = app.post_json("/v1/kickoffs", &json!({"crew": dotted, "inputs": {}})).await;
    let problem = expect_problem(kickoff, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem)["crew.name"].contains("dots only"), "{problem}");
    let by_name = app.post_json("/v1/kickoffs", &json!({"crew": ".", "inputs": {}})).await;
    let problem = expect_problem(by_name, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem)["crew"].contains("dots only"), "{problem}");
    expect_problem(app.get("/v1/crews/nothing").await, StatusCode::NOT_FOUND).await;
    assert_eq!(expect_json(app.get("/v1/crews").await, StatusCode::OK).await, json!({"crews": []}));
}

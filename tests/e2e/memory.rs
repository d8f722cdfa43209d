//! Memory over HTTP: a scope's items posted, listed, searched, deleted and forgotten (and the bad
//! input each route refuses); crews that remember across kickoffs in one scope and not in
//! another, with extracted facts and entities; another tenant that sees nothing; and `kill -9`
//! of the real binary between a task's answer and the next task, after which each task's memory
//! is there exactly once.

use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::worker::{event_types, fake_config, fast_settings, start_workers, wait_for};

async fn list(app: &TestApp, scope: &str, q: Option<&str>) -> Vec<Value> {
    let mut query = vec![("scope", scope)];
    query.extend(q.map(|q| ("q", q)));
    let response = app.request(Method::GET, "/v1/memories").query(&query).send().await.expect("GET");
    let body = expect_json(response, StatusCode::OK).await;
    body["memories"].as_array().expect("memories").clone()
}

async fn note(app: &TestApp, scope: &str, text: &str) -> Value {
    let response = app.post_json("/v1/memories", &json!({"scope": scope, "text": text})).await;
    expect_json(response, StatusCode::CREATED).await
}

fn texts(items: &[Value]) -> Vec<&str> {
    items.iter().map(|m| m["text"].as_str().expect("text")).collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn memories_are_posted_listed_searched_deleted_and_forgotten_and_bad_input_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response =
        app.post_json("/v1/memories", &json!({"scope": "user:ada", "text": "Ada drinks green tea."})).await;
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let tea = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(location, format!("/v1/memories/{}", tea["id"].as_str().expect("id")));
    assert_eq!(
        (tea["kind"].as_str(), tea["scope"].as_str(), tea["run_id"].clone()),
        (Some("note"), Some("user:ada"), Value::Null)
    );
    note(&app, "user:ada", "Ada's invoices go to the Lisbon office.").await;
    note(&app, "user:bob", "Bob drinks coffee.").await;

    // Newest first; a query finds the matching items only, scored.
    assert_eq!(
        texts(&list(&app, "user:ada", None).await),
        ["Ada's invoices go to the Lisbon office.", "Ada drinks green tea."]
    );
    let found = list(&app, "user:ada", Some("what tea does she drink")).await;
    assert_eq!(texts(&found), ["Ada drinks green tea."]);
    assert!(found[0]["score"].as_f64().is_some_and(|s| s > 0.0), "{found:?}");
    assert_eq!(list(&app, "user:ada", Some("coffee")).await, Vec::<Value>::new(), "Bob's scope is not Ada's");
    let one = expect_json(app.get(&location).await, StatusCode::OK).await;
    assert_eq!(one["text"], "Ada drinks green tea.");

    // Delete one, then forget a whole scope; the other scope keeps its items.
    assert_eq!(app.delete(&location).await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get(&location).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.delete(&location).await, StatusCode::NOT_FOUND).await;
    let forgotten = app
        .request(Method::DELETE, "/v1/memories")
        .query(&[("scope", "user:ada")])
        .send()
        .await
        .expect("DELETE");
    assert_eq!(expect_json(forgotten, StatusCode::OK).await, json!({"scope": "user:ada", "deleted": 1}));
    assert_eq!(list(&app, "user:ada", None).await, Vec::<Value>::new());
    assert_eq!(texts(&list(&app, "user:bob", None).await), ["Bob drinks coffee."]);
    let audit = expect_json(app.get("/v1/audit").await, StatusCode::OK).await;
    let actions: Vec<(&str, &str)> = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["action"].as_str().expect("action"), e["outcome"].as_str().expect("outcome")))
        .collect();
    let count = |action: &str, outcome: &str| actions.iter().filter(|a| **a == (action, outcome)).count();
    assert_eq!(count("memory.create", "succeeded"), 3, "{actions:?}");
    assert_eq!(count("memory.delete", "succeeded"), 2, "{actions:?}: one item, one scope");
    assert_eq!(count("memory.delete", "not_found"), 1, "{actions:?}: the item already deleted");

    // Bad input: each a clear problem.
    let invalid = [
        (json!({"scope": "user:ada", "text": "  "}), "text"),
        (json!({"scope": "user:ada", "text": "x".repeat(4097)}), "text"),
        (json!({"scope": "", "text": "t"}), "scope"),
        (json!({"scope": "a\nb", "text": "t"}), "scope"),
        (json!({"scope": "s".repeat(257), "text": "t"}), "scope"),
        (json!({"scope": "s", "text": "t", "kind": "fact"}), "kind"),
    ];
    for (body, field) in invalid {
        let problem =
            expect_problem(app.post_json("/v1/memories", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    let missing = app.post_json("/v1/memories", &json!({"text": "t"})).await;
    let problem = expect_problem(missing, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("`scope`")), "{problem}");
    let get = |query: &'static [(&'static str, &'static str)]| {
        app.request(Method::GET, "/v1/memories").query(query).send()
    };
    expect_problem(get(&[]).await.expect("GET"), StatusCode::BAD_REQUEST).await;
    expect_problem(
        get(&[("scope", "s"), ("limit", "0")]).await.expect("GET"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        get(&[("scope", "s"), ("limit", "201")]).await.expect("GET"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(get(&[("scope", "s"), ("q", " ")]).await.expect("GET"), StatusCode::UNPROCESSABLE_ENTITY)
        .await;
    expect_problem(get(&[("scope", " ")]).await.expect("GET"), StatusCode::UNPROCESSABLE_ENTITY).await;
    expect_problem(app.get("/v1/memories/not-a-uuid").await, StatusCode::BAD_REQUEST).await;
    let forget_nothing = app.request(Method::DELETE, "/v1/memories").send().await.expect("DELETE");
    expect_problem(forget_nothing, StatusCode::BAD_REQUEST).await;
}

/// A crew that remembers in the scope of its `user` input.
pub fn memory_crew(extract: bool) -> Value {
    json!({
        "name": "assistant",
        "memory": {"scope": "user:{user}", "k": 3, "extract": extract},
        "agents": [{"name": "a", "role": "Assistant", "goal": "Help", "backstory": "Remembers people."}],
        "tasks": [{"name": "answer", "description": "The user says: {message}", "expected_output": "A reply", "agent": "a"}]
    })
}

/// The user message of the fake's `n`th request.
pub fn user_prompt(fake: &FakeLlm, n: usize) -> String {
    let request = &fake.requests()[n];
    let messages = request["messages"].as_array().expect("messages");
    let user = messages.iter().find(|m| m["role"] == "user").expect("a user message");
    user["content"].as_str().expect("text").to_owned()
}

pub async fn events(app: &TestApp, run: &str) -> Value {
    expect_json(app.get(&format!("/v1/runs/{run}/events?limit=1000")).await, StatusCode::OK).await
}

pub fn event<'a>(events: &'a Value, kind: &str) -> &'a Value {
    events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind}: {events}"))
}

pub async fn run_to_end(app: &TestApp, crew: &Value, inputs: Value) -> String {
    let run = app.kickoff(crew, inputs).await;
    let id = run["id"].as_str().expect("id").to_owned();
    let done = wait_for(app, &id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    id
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_crew_remembers_across_kickoffs_in_its_scope_and_not_in_another(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("Noted: your favourite colour is teal."),
        FakeReply::text("Teal, as you told me."),
        FakeReply::text("I don't know your colour yet."),
        FakeReply::text("I don't know anything about you."),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let crew = memory_crew(false);

    // A kickoff whose scope would be empty, or lacks its input, is refused.
    let bad = app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": {"message": "hi"}})).await;
    let problem = expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("inputs.user"), "{problem}");
    let mut no_k = crew.clone();
    no_k["memory"]["k"] = json!(0);
    let bad = app
        .post_json("/v1/kickoffs", &json!({"crew": no_k, "inputs": {"user": "ada", "message": "hi"}}))
        .await;
    assert!(problem_fields(&expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await)
        .contains_key("crew.memory.k"));
    let bad = app
        .post_json(
            "/v1/kickoffs",
            &json!({"crew": crew, "inputs": {"user": "ada", "message": "hi"}, "memory_scope": "a\u{7}b"}),
        )
        .await;
    assert!(problem_fields(&expect_problem(bad, StatusCode::UNPROCESSABLE_ENTITY).await)
        .contains_key("memory_scope"));

    // Ada's first kickoff: nothing to recall; its answer is saved with the task's completion.
    let first =
        run_to_end(&app, &crew, json!({"user": "ada", "message": "My favourite colour is teal."})).await;
    assert!(!user_prompt(&fake, 0).contains("Relevant memories"), "{}", user_prompt(&fake, 0));
    let first_events = events(&app, &first).await;
    let types = event_types(&first_events);
    let at = |t: &str| types.iter().position(|x| x == t).unwrap_or_else(|| panic!("no {t} in {types:?}"));
    assert!(
        at("task.started") < at("memory.retrieved") && at("memory.retrieved") < at("llm.started"),
        "{types:?}"
    );
    assert!(at("memory.saved") < at("task.completed"), "{types:?}");
    assert_eq!(
        event(&first_events, "memory.retrieved")["data"],
        json!({"task": "answer", "scope": "user:ada", "memories": []})
    );
    let saved = &event(&first_events, "memory.saved")["data"];
    assert_eq!(
        (saved["scope"].as_str(), saved["memories"][0]["kind"].as_str()),
        (Some("user:ada"), Some("task"))
    );
    let items = list(&app, "user:ada", None).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], saved["memories"][0]["id"]);
    assert_eq!(
        items[0]["text"],
        "Task: The user says: My favourite colour is teal.\nAnswer: Noted: your favourite colour is teal."
    );
    assert_eq!(
        (items[0]["run_id"].as_str(), items[0]["task"].as_str(), items[0]["agent"].as_str()),
        (Some(first.as_str()), Some("answer"), Some("a"))
    );

    // Ada's second kickoff recalls it; Bob's does not.
    let second = run_to_end(&app, &crew, json!({"user": "ada", "message": "Which colour do I like?"})).await;
    let prompt = user_prompt(&fake, 1);
    let (_, memories) =
        prompt.split_once("\n\n# Relevant memories from earlier runs:\n").expect("the memory section");
    assert!(memories.contains("- Task: The user says: My favourite colour is teal.\n  Answer: Noted: your favourite colour is teal."), "{memories}");
    let recalled = event(&events(&app, &second).await, "memory.retrieved")["data"].clone();
    assert_eq!(recalled["memories"][0]["id"], items[0]["id"], "{recalled}");
    run_to_end(&app, &crew, json!({"user": "bob", "message": "Which colour do I like?"})).await;
    assert!(!user_prompt(&fake, 2).contains("teal"), "{}", user_prompt(&fake, 2));
    assert_eq!(list(&app, "user:ada", None).await.len(), 2, "each of Ada's runs saved one item");

    // Forgotten, Ada's scope gives the next kickoff nothing; `memory_scope` names a scope too.
    let forget = app
        .request(Method::DELETE, "/v1/memories")
        .query(&[("scope", "user:ada")])
        .send()
        .await
        .expect("DELETE");
    assert_eq!(expect_json(forget, StatusCode::OK).await["deleted"], 2);
    let body = json!({"crew": crew, "inputs": {"user": "ada", "message": "Anything about me?"}, "memory_scope": "team:ops"});
    let run = expect_json(app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
    let id = run["id"].as_str().expect("id");
    assert_eq!(wait_for(&app, id, &["completed", "failed"]).await["status"], "completed");
    let recalled = event(&events(&app, id).await, "memory.retrieved")["data"].clone();
    assert_eq!(recalled["scope"], "team:ops", "{recalled}");
    assert!(!user_prompt(&fake, 3).contains("Relevant memories"));
    assert_eq!(list(&app, "team:ops", None).await.len(), 1);
    assert_eq!(list(&app, "user:ada", None).await.len(), 0);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn extraction_saves_facts_and_entities_through_a_journaled_side_call(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("Booked: Ada flies to Lisbon on Friday."),
        FakeReply::text(r#"{"facts": ["Ada flies to Lisbon on Friday"], "entities": [{"name": "Ada", "type": "person", "description": "a traveller"}]}"#),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let run =
        run_to_end(&app, &memory_crew(true), json!({"user": "ada", "message": "Book my Lisbon flight."}))
            .await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "the answer, then the extraction");
    assert!(requests[1]["messages"].to_string().contains("Booked: Ada flies to Lisbon on Friday."));
    let mut kinds: Vec<(String, String)> = list(&app, "user:ada", None)
        .await
        .iter()
        .map(|m| (m["kind"].as_str().expect("kind").to_owned(), m["text"].as_str().expect("text").to_owned()))
        .collect();
    kinds.sort();
    assert_eq!(kinds[0], ("entity".to_owned(), "Ada (person): a traveller".to_owned()));
    assert_eq!(kinds[1], ("fact".to_owned(), "Ada flies to Lisbon on Friday".to_owned()));
    assert_eq!(kinds[2].0, "task");
    let all = events(&app, &run).await;
    let purposes: Vec<Value> = all["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "llm.started")
        .map(|e| e["data"]["purpose"].clone())
        .collect();
    assert_eq!(purposes, [Value::Null, json!("memory")]);
    assert_eq!(event(&all, "memory.saved")["data"]["memories"].as_array().map(Vec::len), Some(3));
    // The extraction is journaled and counted like any call.
    let messages =
        expect_json(app.get(&format!("/v1/runs/{run}/messages?limit=1000")).await, StatusCode::OK).await;
    let extraction: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .skip(3)
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    assert_eq!(extraction, ["system", "user", "assistant"], "{messages}");
    assert!(
        messages["messages"][5]["content"].as_str().is_some_and(|c| c.contains("\"facts\"")),
        "{messages}"
    );
    let done = expect_json(app.get(&format!("/v1/runs/{run}")).await, StatusCode::OK).await;
    assert_eq!(done["usage"]["llm_calls"], 2, "{done}");
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenant_sees_and_recalls_nothing_of_a_scope(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("Hello.")]);
    let mut config = fake_config(&fake);
    config.api_keys = agentd::config::ApiKeys::parse("root-key-for-memory-tests");
    let root =
        TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some("root-key-for-memory-tests"));
    let mut keys = Vec::new();
    for tenant in ["team-a", "team-b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
        let body = json!({"tenant": tenant, "name": "k", "scopes": ["read", "kickoff", "manage"]});
        let key = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
        keys.push(key["key"].as_str().expect("key").to_owned());
    }
    let (a, b) = (root.as_key(Some(&keys[0])), root.as_key(Some(&keys[1])));
    let secret = note(&a, "user:ada", "Ada's door code is 4711.").await;
    let id = secret["id"].as_str().expect("id");
    // B, using the same scope name: nothing to list, read, delete or forget.
    assert_eq!(list(&b, "user:ada", None).await, Vec::<Value>::new());
    assert_eq!(list(&b, "user:ada", Some("door code")).await, Vec::<Value>::new());
    expect_problem(b.get(&format!("/v1/memories/{id}")).await, StatusCode::NOT_FOUND).await;
    expect_problem(b.delete(&format!("/v1/memories/{id}")).await, StatusCode::NOT_FOUND).await;
    let forget = b
        .request(Method::DELETE, "/v1/memories")
        .query(&[("scope", "user:ada")])
        .send()
        .await
        .expect("DELETE");
    assert_eq!(expect_json(forget, StatusCode::OK).await["deleted"], 0);
    // B's crew with that scope recalls nothing of A's.
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    run_to_end(&b, &memory_crew(false), json!({"user": "ada", "message": "What is my door code?"})).await;
    assert!(!user_prompt(&fake, 0).contains("4711"), "{}", user_prompt(&fake, 0));
    // A still has its item; B has its run's.
    assert_eq!(texts(&list(&a, "user:ada", None).await), ["Ada's door code is 4711."]);
    assert_eq!(list(&b, "user:ada", None).await.len(), 1);
    workers.shutdown().await;
}

/// `kill -9` of the real binary while the second task of a crew with memory waits for its model:
/// the first task's item was saved with its completion, and the resumed run saves the second
/// task's once (and the first's not again).
#[sqlx::test(migrations = false)]
async fn kill_9_between_tasks_saves_each_tasks_memory_exactly_once(pool: PgPool) {
    use crate::cli::{child_database_url, Agentd};
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("Ada's order is #12."),
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        FakeReply::text("Order #12 ships on Monday."),
    ]);
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-memory-crash"),
        ("AGENTD_LEASE_S", "2"),
    ];
    let first = Agentd::start(&url, &env);
    let api = TestApp::at(&first.base);
    let crew = json!({
        "name": "orders",
        "memory": {"scope": "user:{user}"},
        "agents": [{"name": "a", "role": "Clerk", "goal": "Help", "backstory": "Knows orders."}],
        "tasks": [
            {"name": "find", "description": "Find the order of {user}", "expected_output": "The order", "agent": "a"},
            {"name": "ship", "description": "Say when it ships", "expected_output": "A date", "agent": "a"}
        ]
    });
    let run = api.kickoff(&crew, json!({"user": "ada"})).await;
    let id = run["id"].as_str().expect("id").to_owned();
    crate::worker::wait_requests(&fake, 2).await;
    first.signal("-KILL").await;
    let saved: Vec<String> = sqlx::query_scalar("SELECT task FROM memories ORDER BY created_at")
        .fetch_all(&pool)
        .await
        .expect("memories");
    assert_eq!(saved, ["find"], "the first task's item was committed with it");

    let second = Agentd::start(&url, &env);
    let api = TestApp::at(&second.base);
    let done = wait_for(&api, &id, &["completed", "failed"]).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)), "{done}");
    let items = list(&api, "user:ada", None).await;
    let tasks: Vec<&str> = items.iter().map(|m| m["task"].as_str().expect("task")).collect();
    assert_eq!(tasks, ["ship", "find"], "one item per task: {items:?}");
    assert_eq!(fake.requests().len(), 3, "the first task was not asked again");
    let all = events(&api, &id).await;
    assert_eq!(event_types(&all).iter().filter(|t| *t == "memory.saved").count(), 2);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_batch_saves_each_input_sets_memory_in_its_own_scope(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("One."), FakeReply::text("Two.")]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let body = json!({"crew": memory_crew(false), "inputs": [{"user": "ada", "message": "a"}, {"user": "bob", "message": "b"}]});
    let runs = expect_json(app.post_json("/v1/kickoffs/batch", &body).await, StatusCode::ACCEPTED).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    for run in runs["runs"].as_array().expect("runs") {
        let done = wait_for(&app, run["id"].as_str().expect("id"), &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
    assert_eq!(list(&app, "user:ada", None).await.len(), 1);
    assert_eq!(list(&app, "user:bob", None).await.len(), 1);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_memory_embedding_needs_a_database_with_pgvector_and_a_known_provider(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let app = TestApp::spawn_with(pool, fake_config(&fake)).await;
    let mut crew = memory_crew(false);
    crew["memory"]["embedding"] = json!("openai/fake-embed");
    let inputs = json!({"user": "ada", "message": "hi"});
    let refused = app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": inputs})).await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    let message = problem_fields(&problem).get("crew.memory.embedding").cloned().unwrap_or_default();
    assert!(message.contains("cannot keep vectors"), "{problem}");
    crew["memory"]["embedding"] = json!("no-provider");
    let refused = app.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": inputs})).await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("crew.memory.embedding"), "{problem}");
    let note = json!({"scope": "user:ada", "text": "t", "embedding": "openai/fake-embed"});
    let refused = app.post_json("/v1/memories", &note).await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("embedding"), "{problem}");
    assert_eq!(fake.embedding_requests(), 0, "nothing was embedded");
}

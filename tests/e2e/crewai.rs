//! CrewAI projects imported as they are: `POST /v1/crews:import` and `agentd crews import crewai`
//! with projects written in the shape `crewai create crew` makes (agents.yaml and tasks.yaml keyed
//! by name, folded blocks, `{placeholders}`, tools that are Python functions of crew.py).

use std::process::Command;
use std::time::Duration;

use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::cli::{child_database_url, Agentd};
use crate::support::{expect_json, expect_problem, problem_fields, TestApp};
use crate::tenants::{key, server, tenant};
use crate::worker::{event_types, fake_config, fast_settings, start_workers, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_agentd");

/// Three agents; four tasks with context between them, one async and one reviewed by a person.
const AGENTS: &str = r#"# Agents of the market-research crew.
researcher:
  role: >
    {topic} Senior Data Researcher
  goal: >
    Uncover cutting-edge developments in {topic}
  backstory: >
    You're a seasoned researcher with a knack for uncovering the latest
    developments in {topic}. Known for your ability to find the most relevant
    information and present it in a clear and concise manner.
  llm: openai/gpt-4o
  tools:
    - calculator
    - serper_dev_tool
  verbose: true

market_analyst:
  role: >
    {topic} Market Analyst
  goal: >
    Size the market for {topic} in {year}
  backstory: >
    You read markets for a living.
  max_iter: 5
  memory: true

reporting_analyst:
  role: >
    {topic} Reporting Analyst
  goal: >
    Create detailed reports based on {topic} data analysis and research findings
  backstory: >
    You're a meticulous analyst with a keen eye for detail.
  allow_delegation: false
"#;

const TASKS: &str = r#"research_task:
  description: >
    Conduct a thorough research about {topic}.
    Make sure you find any interesting and relevant information given
    the current year is {year}.
  expected_output: >
    A list with 10 bullet points of the most relevant information about {topic}
  agent: researcher

market_task:
  description: >
    Estimate the market size of {topic}.
  expected_output: >
    A market size with its assumptions
  agent: market_analyst
  async_execution: true

analysis_task:
  description: >
    Combine the research and the market estimate into findings.
  expected_output: >
    Five findings
  agent: market_analyst
  context:
    - research_task
    - market_task

reporting_task:
  description: >
    Review the context you got and expand each topic into a full section for a report.
  expected_output: >
    A fully fledged report with the main topics, each with a full section of information.
    Formatted as markdown without '```'
  agent: reporting_analyst
  context: [analysis_task]
  human_input: true
  output_file: report.md
  markdown: true
"#;

/// The warnings the project gets, by field: every field agentd does not honour.
const NOT_HONOURED: [&str; 5] = [
    "agents_yaml.researcher.tools[1]",
    "agents_yaml.researcher.verbose",
    "agents_yaml.market_analyst.memory",
    "tasks_yaml.reporting_task.output_file",
    "tasks_yaml.reporting_task.markdown",
];

fn project(name: &str) -> Value {
    json!({"name": name, "agents_yaml": AGENTS, "tasks_yaml": TASKS})
}

fn warned(answer: &Value) -> Vec<&str> {
    answer["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w["field"].as_str().expect("field"))
        .collect()
}

async fn post(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.request(Method::POST, path).json(body).send().await.expect("POST")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_crewai_project_imports_and_runs_to_completion(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    // The first task runs alone: a calculator call, then its answer. Every later call answers.
    fake.push([
        FakeReply::tool_calls(&[("call_1", "calculator", json!({"expression": "2*21"}))]),
        FakeReply::text("Ten bullets about solar sails"),
    ]);
    fake.set_default(Some(FakeReply::text("Done, as asked")));
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(4, Duration::from_secs(5)));

    let imported =
        expect_json(post(&app, "/v1/crews:import", &project("market-research")).await, StatusCode::CREATED)
            .await;
    assert_eq!(warned(&imported), NOT_HONOURED, "{imported:#}");
    let serper = &imported["warnings"][0]["message"];
    assert!(
        serper.as_str().is_some_and(|m| m.contains("'serper_dev_tool' is not an agentd tool")),
        "{serper}"
    );
    let spec = &imported["crew"]["spec"];
    assert_eq!(spec["agents"][0]["tools"], json!(["calculator"]));
    assert_eq!(spec["agents"][0]["role"], "{topic} Senior Data Researcher");
    assert_eq!(spec["tasks"][1]["async_execution"], true);
    assert_eq!(spec["tasks"][2]["context"], json!(["research_task", "market_task"]));
    assert_eq!(spec["tasks"][3]["human_input"], true);
    assert_eq!(spec["inputs_schema"]["required"], json!(["topic", "year"]));
    let inputs = expect_json(app.get("/v1/crews/market-research/inputs").await, StatusCode::OK).await;
    assert_eq!(inputs, json!({"inputs": ["topic", "year"]}));

    // The inputs schema holds kickoffs to the placeholders.
    let missing =
        post(&app, "/v1/kickoffs", &json!({"crew": "market-research", "inputs": {"topic": "x"}})).await;
    let problem = expect_problem(missing, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem.to_string().contains("year"), "{problem}");

    let kickoff = json!({"crew": "market-research", "inputs": {"topic": "solar sails", "year": "2026"}});
    let run = expect_json(post(&app, "/v1/kickoffs", &kickoff).await, StatusCode::ACCEPTED).await;
    let id = run["id"].as_str().expect("id").to_owned();
    let paused = wait_for(&app, &id, &["awaiting_input", "failed"]).await;
    assert_eq!(paused["status"], "awaiting_input", "the reporting task's answer awaits review: {paused}");
    let resumed = post(&app, &format!("/v1/runs/{id}/resume"), &json!({"approve": true})).await;
    expect_json(resumed, StatusCode::ACCEPTED).await;
    let done = wait_for(&app, &id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    let tasks: Vec<(&str, &str)> = done["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| (t["name"].as_str().expect("name"), t["status"].as_str().expect("status")))
        .collect();
    assert_eq!(
        tasks,
        [
            ("research_task", "completed"),
            ("market_task", "completed"),
            ("analysis_task", "completed"),
            ("reporting_task", "completed")
        ]
    );
    assert_eq!(done["tasks"][0]["output"]["raw"], "Ten bullets about solar sails");
    let calls = expect_json(app.get(&format!("/v1/runs/{id}/tool-calls")).await, StatusCode::OK).await;
    assert_eq!(calls["tool_calls"][0]["tool"], "calculator", "{calls}");
    let events = expect_json(app.get(&format!("/v1/runs/{id}/events")).await, StatusCode::OK).await;
    let types = event_types(&events);
    assert_eq!(types.iter().filter(|t| *t == "task.completed").count(), 4, "{types:?}");
    // The prompts are the project's, interpolated.
    let first = fake.requests()[0]["messages"].to_string();
    assert!(first.contains("solar sails Senior Data Researcher") && first.contains("2026"), "{first}");

    // Importing again replaces it (200), with the same warnings.
    let again =
        expect_json(post(&app, "/v1/crews:import", &project("market-research")).await, StatusCode::OK).await;
    assert_eq!(warned(&again), NOT_HONOURED);
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_mapping_gives_what_crew_py_says(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut body = project("managed");
    body["mapping"] = json!({
        "process": "hierarchical",
        "manager_llm": "openai/gpt-4o",
        "tool_names": {"serper_dev_tool": "http_request"},
        "models": {"*": "openai/gpt-4o-mini"},
        "agents": {"reporting_analyst": {"tool_calling": "react"}},
        "tasks": {"reporting_task": {"guardrail": "The report has a section per finding"}},
        "max_rpm": 30,
    });
    let imported = expect_json(post(&app, "/v1/crews:import", &body).await, StatusCode::CREATED).await;
    let spec = &imported["crew"]["spec"];
    assert_eq!(spec["process"], "hierarchical");
    assert_eq!(spec["manager_llm"], "openai/gpt-4o");
    assert_eq!(spec["max_rpm"], 30);
    assert_eq!(spec["agents"][0]["tools"], json!(["calculator", "http_request"]));
    assert!(
        spec["agents"].as_array().expect("agents").iter().all(|a| a["llm"] == "openai/gpt-4o-mini"),
        "{spec}"
    );
    assert_eq!(spec["agents"][2]["tool_calling"], "react");
    assert_eq!(spec["tasks"][3]["guardrail"], "The report has a section per finding");
    assert!(!warned(&imported).contains(&"agents_yaml.researcher.tools[1]"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_broken_project_is_a_problem_naming_its_yaml(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let import =
        |agents: &str, tasks: &str| json!({"name": "broken", "agents_yaml": agents, "tasks_yaml": tasks});
    let agents = "researcher:\n  role: R\n  goal: G\n  backstory: B\n  llm: nowhere/model\n";
    let tasks = "t1:\n  description: D\n  expected_output: E\n  agent: ghost\n";
    let problem = expect_problem(
        post(&app, "/v1/crews:import", &import(agents, tasks)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = problem_fields(&problem);
    assert!(fields.contains_key("agents_yaml.researcher.llm"), "{problem}");
    assert!(fields["tasks_yaml.t1.agent"].contains("unknown agent 'ghost'"), "{problem}");

    let problem = expect_problem(
        post(&app, "/v1/crews:import", &import("researcher: [", tasks)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem)["agents_yaml"].contains("not valid YAML"), "{problem}");

    // Hostile YAML costs an error, not the server: 100,000 nested lists (under the body limit;
    // libyaml alone would take minutes), and aliases that would expand to a billion strings.
    let deep = format!("researcher: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let problem = expect_problem(
        post(&app, "/v1/crews:import", &import(&deep, tasks)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem).contains_key("agents_yaml"), "{problem}");
    let mut laughs = String::from("a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i", "j"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    {
        laughs.push_str(&format!("{name}: &{name} [{}]\n", vec![format!("*{previous}"); 10].join(",")));
    }
    let problem = expect_problem(
        post(&app, "/v1/crews:import", &import(&laughs, tasks)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem_fields(&problem).contains_key("agents_yaml"), "{problem}");

    // The request itself: an unknown field, a missing file, not JSON.
    let mut body = project("x");
    body["agent_yaml"] = json!("typo");
    let problem =
        expect_problem(post(&app, "/v1/crews:import", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem["errors"].to_string().contains("agent_yaml"), "{problem}");
    let problem = expect_problem(
        post(&app, "/v1/crews:import", &json!({"name": "x", "agents_yaml": AGENTS})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem["errors"].to_string().contains("tasks_yaml"), "{problem}");
    let mut body = project("x");
    body["mapping"] = json!({"planing": true});
    let problem =
        expect_problem(post(&app, "/v1/crews:import", &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&problem).contains_key("mapping.planing"), "{problem}");
    let not_json = app
        .request(Method::POST, "/v1/crews:import")
        .header("content-type", "text/yaml")
        .body(AGENTS)
        .send()
        .await
        .expect("POST");
    expect_problem(not_json, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let mut bad_name = project("no/slash");
    bad_name["name"] = json!("no/slash");
    expect_problem(post(&app, "/v1/crews:import", &bad_name).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    // Nothing was stored, and the server still answers.
    let crews = expect_json(app.get("/v1/crews").await, StatusCode::OK).await;
    assert_eq!(crews["crews"], json!([]));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_import_is_the_tenants_own_needs_manage_and_is_audited(pool: PgPool) {
    let root = server(pool).await;
    tenant(&root, "team-a").await;
    tenant(&root, "team-b").await;
    let a = root.as_key(Some(&key(&root, "team-a", &["read", "kickoff", "approve", "manage"]).await.0));
    let b = root.as_key(Some(&key(&root, "team-b", &["read", "kickoff", "approve", "manage"]).await.0));
    let reader = root.as_key(Some(&key(&root, "team-a", &["read", "kickoff"]).await.0));

    let refused =
        expect_problem(post(&reader, "/v1/crews:import", &project("research")).await, StatusCode::FORBIDDEN)
            .await;
    assert!(refused["detail"].as_str().is_some_and(|d| d.contains("manage")), "{refused}");
    expect_problem(
        post(&root.as_key(None), "/v1/crews:import", &project("research")).await,
        StatusCode::UNAUTHORIZED,
    )
    .await;

    expect_json(post(&a, "/v1/crews:import", &project("research")).await, StatusCode::CREATED).await;
    // B's crew of the same name is B's own: created, not A's replaced.
    expect_json(post(&b, "/v1/crews:import", &project("research")).await, StatusCode::CREATED).await;
    let mut changed = project("research");
    changed["mapping"] = json!({"max_rpm": 7});
    expect_json(post(&b, "/v1/crews:import", &changed).await, StatusCode::OK).await;
    let a_crew = expect_json(a.get("/v1/crews/research").await, StatusCode::OK).await;
    assert!(a_crew["spec"].get("max_rpm").is_none(), "B's import reached A's crew: {a_crew}");

    // A's audit log has A's import and the reader's refusal, none of B's.
    let audit = expect_json(a.get("/v1/audit?action=crew.import").await, StatusCode::OK).await;
    let outcomes: Vec<(&str, &str)> = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["outcome"].as_str().expect("outcome"), e["tenant"].as_str().expect("tenant")))
        .collect();
    assert_eq!(outcomes, [("succeeded", "team-a"), ("denied", "team-a")], "{audit:#}");
}

/// A project directory as `crewai create crew` lays it out.
fn project_dir(name: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("agentd-crewai-{}", uuid::Uuid::now_v7())).join(name);
    let config = root.join("src").join(name.replace('-', "_")).join("config");
    std::fs::create_dir_all(&config).expect("dirs");
    std::fs::write(config.join("agents.yaml"), AGENTS).expect("agents");
    std::fs::write(config.join("tasks.yaml"), TASKS).expect("tasks");
    std::fs::write(
        root.join("agentd.yaml"),
        "process: sequential\nplanning: true\ntool_names:\n  serper_dev_tool: null\n",
    )
    .expect("mapping");
    root
}

#[sqlx::test(migrations = false)]
async fn the_cli_imports_a_project_directory(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let server = Agentd::start(&url, &[]);
    let dir = project_dir("latest-ai-development");
    let mapping = dir.join("agentd.yaml");

    // --dry-run converts here and prints the spec; nothing is stored.
    let dry = Command::new(BIN)
        .args(["crews", "import", "crewai"])
        .arg(&dir)
        .args(["--dry-run", "--mapping"])
        .arg(&mapping)
        .env("DATABASE_URL", &url)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "{stderr}");
    let spec: Value = serde_json::from_slice(&dry.stdout).expect("a crew spec on stdout");
    assert_eq!(
        (spec["name"].as_str(), spec["planning"].as_bool()),
        (Some("latest-ai-development"), Some(true))
    );
    assert!(
        stderr.contains("warning: agents_yaml.researcher.tools[1]: 'serper_dev_tool' dropped"),
        "{stderr}"
    );
    let app = TestApp::at(&server.base);
    expect_problem(app.get("/v1/crews/latest-ai-development").await, StatusCode::NOT_FOUND).await;

    let sent = Command::new(BIN)
        .args(["crews", "import", "crewai"])
        .arg(&dir)
        .args(["--name", "imported", "--model", "openai/gpt-4o-mini", "--url", &server.base])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&sent.stderr);
    assert!(sent.status.success(), "{stderr}");
    assert!(
        stderr.contains("crew 'imported' created")
            && stderr.contains("warning: tasks_yaml.reporting_task.output_file"),
        "{stderr}"
    );
    let stored = expect_json(app.get("/v1/crews/imported").await, StatusCode::OK).await;
    assert_eq!(stored["spec"]["agents"][0]["llm"], "openai/gpt-4o-mini");

    // A refusal is the server's problem, field by field, and a failure exit.
    std::fs::write(
        dir.join("src/latest_ai_development/config/tasks.yaml"),
        "t:\n  description: D\n  expected_output: E\n  agent: ghost\n",
    )
    .expect("write");
    let refused = Command::new(BIN)
        .args(["crews", "import", "crewai"])
        .arg(&dir)
        .args(["--url", &server.base])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("error: tasks_yaml.t.agent: unknown agent 'ghost'"), "{stderr}");
    let missing = Command::new(BIN)
        .args(["crews", "import", "crewai", "/nonexistent-agentd-project"])
        .output()
        .expect("run");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no agents.yaml and tasks.yaml"));
    let _ = std::fs::remove_dir_all(dir.parent().expect("parent"));
}

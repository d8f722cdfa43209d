use serde_json::json;

use super::*;
use crate::domain::limits::CrewLimits;

fn ctx() -> ValidationContext {
    ValidationContext {
        builtin_tools: vec!["calculator".into(), "current_time".into(), "http_request".into()],
        providers: vec!["openai".into()],
        fake_providers: vec![],
        default_model: "openai/gpt-4o-mini".into(),
        limits: CrewLimits::default(),
    }
}

/// A project in the shape `crewai create crew` writes: folded blocks, `{topic}`, a tool of crew.py.
const AGENTS: &str = r#"
researcher:
  role: >
    {topic} Senior Data Researcher
  goal: >
    Uncover cutting-edge developments in {topic}
  backstory: >
    You're a seasoned researcher with a knack for uncovering the latest
    developments in {topic}.
  llm: openai/gpt-4o
  tools:
    - calculator
    - serper_dev_tool
  verbose: true

reporting_analyst:
  role: >
    {topic} Reporting Analyst
  goal: >
    Create detailed reports based on {topic} data analysis and research findings
  backstory: >
    You're a meticulous analyst with a keen eye for detail.
  max_iter: 5
  allow_delegation: false
"#;

const TASKS: &str = r#"
research_task:
  description: >
    Conduct a thorough research about {topic}
    Make sure you find any interesting and relevant information given
    the current year is {current_year}.
  expected_output: >
    A list with 10 bullet points of the most relevant information about {topic}
  agent: researcher

reporting_task:
  description: >
    Review the context you got and expand each topic into a full section for a report.
  expected_output: >
    A fully fledged report with the main topics, each with a full section of information.
  agent: reporting_analyst
  context: [research_task]
  output_file: report.md
  markdown: true
"#;

fn import(mapping: Option<Value>) -> CrewImport {
    CrewImport {
        format: ImportFormat::Crewai,
        name: "latest-ai".into(),
        agents_yaml: AGENTS.into(),
        tasks_yaml: TASKS.into(),
        mapping,
    }
}

fn fields(warnings: &[ImportWarning]) -> Vec<&str> {
    warnings.iter().map(|w| w.field.as_str()).collect()
}

#[test]
fn a_generated_project_becomes_a_crew_and_every_field_not_honoured_is_a_warning() {
    let imported = import_crewai(&import(None), &ctx()).expect("imported");
    let spec = &imported.spec;
    assert_eq!(spec.name, "latest-ai");
    let agents: Vec<&str> = spec.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(agents, ["researcher", "reporting_analyst"]);
    let researcher = &spec.agents[0];
    assert_eq!(researcher.role, "{topic} Senior Data Researcher", "folded text is trimmed");
    assert_eq!(
        researcher.backstory,
        "You're a seasoned researcher with a knack for uncovering the latest developments in {topic}."
    );
    assert_eq!(researcher.llm.as_ref().map(|l| l.model()), Some("openai/gpt-4o"));
    assert_eq!(researcher.tools, ["calculator"]);
    assert_eq!(spec.agents[1].max_iter, 5);
    let tasks: Vec<&str> = spec.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tasks, ["research_task", "reporting_task"], "in the YAML's order");
    assert_eq!(spec.tasks[1].context.as_deref(), Some(&["research_task".to_owned()][..]));
    assert_eq!(
        fields(&imported.warnings),
        [
            "agents_yaml.researcher.tools[1]",
            "agents_yaml.researcher.verbose",
            "tasks_yaml.reporting_task.output_file",
            "tasks_yaml.reporting_task.markdown",
        ]
    );
    assert!(
        imported.warnings[0].message.contains("'serper_dev_tool' is not an agentd tool"),
        "{:?}",
        imported.warnings
    );
    let schema = spec.inputs_schema.as_ref().expect("inputs schema");
    assert_eq!(schema["required"], json!(["current_year", "topic"]));
    assert_eq!(schema["properties"]["topic"]["type"], "string");
}

#[test]
fn the_mapping_says_what_crew_py_says() {
    let mapping = json!({
        "process": "hierarchical",
        "manager_llm": "openai/gpt-4o",
        "planning": false,
        "tool_names": {"serper_dev_tool": "http_request"},
        "models": {"openai/gpt-4o": "openai/gpt-4o-mini"},
        "agents": {"reporting_analyst": {"tool_calling": "react"}},
        "tasks": {"reporting_task": {"output_schema": {"type": "object"}}},
    });
    let imported = import_crewai(&import(Some(mapping)), &ctx()).expect("imported");
    let spec = &imported.spec;
    assert_eq!(spec.process, crate::domain::crew::Process::Hierarchical);
    assert_eq!(spec.agents[0].tools, ["calculator", "http_request"]);
    assert_eq!(spec.agents[0].llm.as_ref().map(|l| l.model()), Some("openai/gpt-4o-mini"));
    assert_eq!(spec.agents[1].tool_calling, crate::domain::crew::ToolCalling::React);
    assert!(spec.tasks[1].output_schema.is_some());
    assert!(!fields(&imported.warnings).contains(&"agents_yaml.researcher.tools[1]"));
}

#[test]
fn a_star_model_gives_every_agent_one_model() {
    let mapping = json!({"models": {"*": "openai/fake-1"}});
    let imported = import_crewai(&import(Some(mapping)), &ctx()).expect("imported");
    let models: Vec<_> =
        imported.spec.agents.iter().map(|a| a.llm.as_ref().map(|l| l.model().to_owned())).collect();
    assert_eq!(models, [Some("openai/fake-1".to_owned()), Some("openai/fake-1".to_owned())]);
}

#[test]
fn errors_name_the_yaml_entry_and_field() {
    let agents = "researcher:\n  role: R\n  goal: G\n  backstory: B\n  llm: nowhere/model\n";
    let tasks = "t1:\n  description: D\n  expected_output: E\n  agent: ghost\n";
    let request = CrewImport { agents_yaml: agents.into(), tasks_yaml: tasks.into(), ..import(None) };
    let errors = import_crewai(&request, &ctx()).expect_err("invalid");
    let named: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(named.contains(&"agents_yaml.researcher.llm"), "{errors:?}");
    assert!(named.contains(&"tasks_yaml.t1.agent"), "{errors:?}");
}

#[test]
fn a_missing_required_field_is_named() {
    let agents = "researcher:\n  goal: G\n  backstory: B\n";
    let request = CrewImport { agents_yaml: agents.into(), ..import(None) };
    let errors = import_crewai(&request, &ctx()).expect_err("invalid");
    assert_eq!(errors[0].field, "agents_yaml.researcher", "{errors:?}");
    assert!(errors[0].message.contains("role"), "{errors:?}");
}

#[test]
fn broken_yaml_and_wrong_shapes_are_errors_of_their_file() {
    for (agents, says) in [
        ("researcher: [unclosed", "is not valid YAML"),
        ("", "is empty"),
        ("- a list\n- of agents\n", "must map names to entries"),
        ("researcher: just text\n", "must be a mapping of fields"),
        ("researcher:\n  role: [not, text]\n  goal: G\n  backstory: B\n", "must be text"),
    ] {
        let request = CrewImport { agents_yaml: agents.into(), ..import(None) };
        let errors = import_crewai(&request, &ctx()).expect_err(agents);
        assert!(
            errors.iter().any(|e| e.field.starts_with("agents_yaml") && e.message.contains(says)),
            "{agents}: {errors:?}"
        );
    }
}

#[test]
fn hostile_yaml_is_refused_not_expanded() {
    // 10,000 nested lists: past libyaml's recursion limit.
    let deep = format!("researcher: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    // Aliases that would expand to 10^9 strings.
    let mut laughs = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (name, previous) in
        ["b", "c", "d", "e", "f", "g", "h", "i"].iter().zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        let refs = vec![format!("*{previous}"); 10].join(",");
        laughs.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    // 4,000 nested lists: under the opener limit, past the recursion limit.
    let nested = format!("researcher: {}{}\n", "[".repeat(4000), "]".repeat(4000));
    for (agents, says) in
        [(deep, "at most 4096 are read"), (laughs, "repetition limit"), (nested, "recursion limit")]
    {
        let request = CrewImport { agents_yaml: agents, ..import(None) };
        let errors = import_crewai(&request, &ctx()).expect_err("refused");
        assert!(
            errors.iter().any(|e| e.field == "agents_yaml" && e.message.contains(says)),
            "{says}: {errors:?}"
        );
    }
}

#[test]
fn the_mapping_is_checked_field_by_field() {
    let mapping = json!({
        "planing": true,
        "name": "other",
        "tool_names": ["not", "a", "map"],
        "tasks": {"no_such_task": {"guardrail": "x"}},
    });
    let errors = import_crewai(&import(Some(mapping)), &ctx()).expect_err("invalid");
    let named: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(named.contains(&"mapping.planing"), "{errors:?}");
    assert!(named.contains(&"mapping.name"), "{errors:?}");
    assert!(named.iter().any(|f| f.starts_with("mapping.tool_names")), "{errors:?}");
    let mapping = json!({"tasks": {"no_such_task": {"guardrail": "x"}}, "planning": "yes"});
    let errors = import_crewai(&import(Some(mapping)), &ctx()).expect_err("invalid");
    let named: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(named.contains(&"mapping.tasks.no_such_task"), "{errors:?}");
}

#[test]
fn a_wrong_crew_field_in_the_mapping_is_named_there() {
    let errors = import_crewai(&import(Some(json!({"planning": "yes"}))), &ctx()).expect_err("invalid");
    assert_eq!(errors[0].field, "mapping.planning", "{errors:?}");
}

#[test]
fn a_given_inputs_schema_is_kept() {
    let schema = json!({"type": "object", "properties": {"topic": {"type": "string", "minLength": 3}, "current_year": {"type": "string"}}, "required": ["topic", "current_year"]});
    let imported =
        import_crewai(&import(Some(json!({"inputs_schema": schema.clone()}))), &ctx()).expect("imported");
    assert_eq!(imported.spec.inputs_schema, Some(schema));
}

#[test]
fn values_agentd_always_has_are_honoured_others_warned() {
    let agents = "a:\n  role: R\n  goal: G\n  backstory: B\n  cache: true\n  respect_context_window: false\n  mystery: 1\n";
    let tasks = "t:\n  description: D\n  expected_output: E\n  agent: a\n  max_retries: 2\n  name: t\n";
    let request = CrewImport { agents_yaml: agents.into(), tasks_yaml: tasks.into(), ..import(None) };
    let imported = import_crewai(&request, &ctx()).expect("imported");
    assert_eq!(fields(&imported.warnings), ["agents_yaml.a.respect_context_window", "agents_yaml.a.mystery"]);
    assert_eq!(imported.spec.tasks[0].guardrail_max_retries, Some(2));
}

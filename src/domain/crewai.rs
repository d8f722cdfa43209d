//! CrewAI projects as agentd crews. A project made by `crewai create crew` keeps its agents and
//! tasks in `config/agents.yaml` and `config/tasks.yaml`, keyed by name, with CrewAI's field
//! names; what only its `crew.py` says (the process, the manager's model, planning, memory,
//! knowledge, which Python tool a name stands for) comes from a small mapping. [`import_crewai`]
//! turns the three into a crew spec, validated as a registered crew is, and names every field it
//! could not honour in a warning: nothing is dropped silently.
//!
//! The YAML is read by libyaml (through `serde_norway`), whose recursion limit (128 levels) and
//! alias-expansion limit bound what a hostile document can cost (both are errors, not crashes),
//! once [`MAX_FLOW_OPENERS`] has bounded the time its scanner takes.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use serde_norway::Value as Yaml;
use utoipa::ToSchema;

use super::field::{parse_json, FieldError};
use super::interpolate::required_inputs;
use super::validate::{validate_crew, ValidationContext};
use super::CrewSpec;

/// The formats a crew can be imported from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportFormat {
    /// A CrewAI project: `config/agents.yaml` and `config/tasks.yaml`.
    #[default]
    Crewai,
}

/// A CrewAI project to store as a crew (`POST /v1/crews:import`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CrewImport {
    #[serde(default)]
    pub format: ImportFormat,
    /// The stored crew's name (letters, digits, `-`, `_`, `.`; at most 100 characters).
    #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")]
    pub name: String,
    /// The text of the project's `config/agents.yaml`: agents by name, with CrewAI's fields
    /// (`role`, `goal`, `backstory`, `llm`, `tools`, `max_iter`, `max_rpm`, `allow_delegation`…).
    #[schema(min_length = 1)]
    pub agents_yaml: String,
    /// The text of the project's `config/tasks.yaml`: tasks by name, in the order they run, with
    /// CrewAI's fields (`description`, `expected_output`, `agent`, `context`, `tools`,
    /// `async_execution`, `human_input`, `guardrail`…).
    #[schema(min_length = 1)]
    pub tasks_yaml: String,
    /// What the project's `crew.py` says, which the YAML cannot: any crew-level field of a crew
    /// spec (`process`, `manager_llm`, `planning`, `planning_llm`, `memory`, `knowledge`,
    /// `tools`, `mcp_servers`, `requires_approval`, `max_rpm`, `inputs_schema`, `publish`…), and
    /// `tool_names` (a CrewAI tool's name → an agentd tool's name, or null to drop it), `models`
    /// (a CrewAI `llm` → an agentd model; `"*"` for every agent), `agents` and `tasks` (fields of
    /// an agent or a task of the crew spec, by name, set over what the YAML says).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub mapping: Option<Value>,
}

/// Something of the project that the crew does not do as CrewAI would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportWarning {
    /// Where it is: `agents_yaml.<agent>.<field>`, `tasks_yaml.<task>.<field>` or
    /// `mapping.<field>`.
    pub field: String,
    /// What agentd does instead.
    pub message: String,
}

/// A project turned into a crew spec (valid for the server it was checked against).
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub spec: CrewSpec,
    pub warnings: Vec<ImportWarning>,
}

/// What `mapping` may hold besides a crew's own fields.
const MAPPING_KEYS: [&str; 4] = ["tool_names", "models", "agents", "tasks"];

/// Crew fields the YAML files give, which the mapping may not.
const FROM_YAML: [&str; 3] = ["name", "agents", "tasks"];

/// Turn a CrewAI project into a crew spec, checked with `ctx` as a registered crew is. Errors
/// name the YAML (`agents_yaml.researcher.role`) or the mapping field they are about.
pub fn import_crewai(import: &CrewImport, ctx: &ValidationContext) -> Result<Imported, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mapping = Mapping::parse(import.mapping.as_ref(), &mut errors);
    let agents = parse_yaml("agents_yaml", &import.agents_yaml, &mut errors);
    let tasks = parse_yaml("tasks_yaml", &import.tasks_yaml, &mut errors);
    let (Some(mapping), Some(agents), Some(tasks)) = (mapping, agents, tasks) else {
        return Err(errors);
    };
    let mut project =
        Project { mapping, ctx, errors, warnings: Vec::new(), agents: Vec::new(), tasks: Vec::new() };
    project.convert(&agents, &tasks);
    let Project { errors, warnings, agents, tasks, mapping, .. } = project;
    if !errors.is_empty() {
        return Err(errors);
    }
    let located = Locations { agents, tasks };
    let mut crew = mapping.crew;
    crew.insert("name".into(), Value::String(import.name.clone()));
    crew.insert(
        "agents".into(),
        Value::Array(located.agents.iter().map(|(_, a)| Value::Object(a.clone())).collect()),
    );
    crew.insert(
        "tasks".into(),
        Value::Array(located.tasks.iter().map(|(_, t)| Value::Object(t.clone())).collect()),
    );
    let mut spec: CrewSpec = parse_json(Value::Object(crew)).map_err(|e| located.locate_all(e))?;
    if spec.inputs_schema.is_none() {
        spec.inputs_schema = Some(inputs_schema(&spec));
    }
    validate_crew(&spec, ctx).map_err(|e| located.locate_all(e))?;
    Ok(Imported { spec, warnings })
}

/// The inputs schema of a crew's `{placeholders}`: each a required string.
fn inputs_schema(spec: &CrewSpec) -> Value {
    let names = required_inputs(spec);
    let properties: Map<String, Value> = names
        .iter()
        .map(|name| {
            let described = format!("The project's {{{name}}}");
            (name.clone(), json!({"type": "string", "description": described}))
        })
        .collect();
    json!({"type": "object", "properties": properties, "required": names})
}

/// The mapping, read.
struct Mapping {
    /// Crew-level fields of the crew spec.
    crew: Map<String, Value>,
    tool_names: BTreeMap<String, Option<String>>,
    models: BTreeMap<String, String>,
    agents: BTreeMap<String, Map<String, Value>>,
    tasks: BTreeMap<String, Map<String, Value>>,
}

impl Mapping {
    fn parse(mapping: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<Self> {
        let mut fields = match mapping {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(fields)) => fields.clone(),
            Some(_) => {
                errors.push(FieldError::new("mapping", "must be an object"));
                return None;
            }
        };
        let crew_fields = crew_fields();
        let before = errors.len();
        for key in fields.keys() {
            if FROM_YAML.contains(&key.as_str()) && !MAPPING_KEYS.contains(&key.as_str()) {
                let message = format!("the {key} comes from the import, not the mapping");
                errors.push(FieldError::new(format!("mapping.{key}"), message));
            } else if !crew_fields.contains(key.as_str()) && !MAPPING_KEYS.contains(&key.as_str()) {
                let known = crew_fields.iter().copied().chain(MAPPING_KEYS).collect::<BTreeSet<_>>();
                let known = known.into_iter().collect::<Vec<_>>().join(", ");
                errors.push(FieldError::new(
                    format!("mapping.{key}"),
                    format!("unknown field (known: {known})"),
                ));
            }
        }
        let mut take = |key: &str| fields.remove(key).unwrap_or(Value::Null);
        let tool_names = typed(take("tool_names"), "mapping.tool_names", errors);
        let models = typed(take("models"), "mapping.models", errors);
        let agents = typed(take("agents"), "mapping.agents", errors);
        let tasks = typed(take("tasks"), "mapping.tasks", errors);
        if errors.len() > before {
            return None;
        }
        Some(Self { crew: fields, tool_names, models, agents, tasks })
    }
}

/// `value` as a `T` (null: its default), or an error at `field`.
fn typed<T: serde::de::DeserializeOwned + Default>(
    value: Value,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> T {
    if value.is_null() {
        return T::default();
    }
    parse_json(value).unwrap_or_else(|e| {
        errors.extend(e.into_iter().map(|e| e.under(field)));
        T::default()
    })
}

/// The top-level fields of a crew spec, as its schema lists them.
fn crew_fields() -> BTreeSet<&'static str> {
    use utoipa::openapi::schema::Schema;
    use utoipa::openapi::RefOr;
    static FIELDS: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    let fields = FIELDS.get_or_init(|| match <CrewSpec as utoipa::PartialSchema>::schema() {
        RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
        _ => BTreeSet::new(),
    });
    fields.iter().map(String::as_str).filter(|f| !FROM_YAML.contains(f)).collect()
}

/// The most `[` and `{` a file may hold. libyaml's scanner costs time quadratic in the depth of
/// nested flow collections (100,000 levels: seconds, before its recursion limit is checked), and
/// the depth cannot exceed the number of openers, whatever the quoting: so this bounds a file's
/// parse to milliseconds. Real agents.yaml and tasks.yaml files hold a few dozen.
pub const MAX_FLOW_OPENERS: usize = 4096;

/// A YAML file's top-level mapping (names to fields), or an error at `file`.
fn parse_yaml(file: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<serde_norway::Mapping> {
    let openers = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if openers > MAX_FLOW_OPENERS {
        let message = format!("holds {openers} `[` and `{{`: at most {MAX_FLOW_OPENERS} are read");
        errors.push(FieldError::new(file, message));
        return None;
    }
    match serde_norway::from_str::<Yaml>(text) {
        Ok(Yaml::Mapping(entries)) if !entries.is_empty() => Some(entries),
        Ok(Yaml::Mapping(_)) | Ok(Yaml::Null) => {
            errors.push(FieldError::new(file, "is empty: it must map names to entries"));
            None
        }
        Ok(_) => {
            errors.push(FieldError::new(file, "must map names to entries (`researcher:` then its fields)"));
            None
        }
        Err(error) => {
            errors.push(FieldError::new(file, format!("is not valid YAML: {error}")));
            None
        }
    }
}

/// A project being converted: its agents and tasks as crew-spec JSON, with their names.
struct Project<'a> {
    mapping: Mapping,
    ctx: &'a ValidationContext,
    errors: Vec<FieldError>,
    warnings: Vec<ImportWarning>,
    agents: Vec<(String, Map<String, Value>)>,
    tasks: Vec<(String, Map<String, Value>)>,
}

/// How an agent's or a task's CrewAI field is taken.
enum Take {
    /// As the crew spec's field of the same name, when it is the same thing.
    Same,
    /// As this crew-spec field.
    As(&'static str),
    /// Text, trimmed (YAML's `>` and `|` blocks end in a newline).
    Text,
    /// A model, through the mapping's `models`.
    Model,
    /// Tool names, through the mapping's `tool_names`.
    Tools,
    /// Honoured when the value is this one (what agentd always does); otherwise a warning.
    Only(Yaml, &'static str),
    /// Not honoured: a warning saying what agentd does instead.
    Ignored(&'static str),
}

fn agent_field(field: &str) -> Option<Take> {
    let take = match field {
        "role" | "goal" | "backstory" => Take::Text,
        "llm" => Take::Model,
        "tools" => Take::Tools,
        "max_iter" | "max_rpm" | "allow_delegation" => Take::Same,
        "respect_context_window" => Take::Only(
            Yaml::Bool(true),
            "agentd always keeps a conversation within the model's context window (older turns are summarised)",
        ),
        "cache" => Take::Only(Yaml::Bool(true), "agentd always reuses a tool's result for a repeated call within a run"),
        "verbose" => Take::Ignored(
            "agentd records every step as the run's events (GET /v1/runs/{id}/events) instead of printing them",
        ),
        "function_calling_llm" => Take::Ignored(
            "agentd asks the agent's own model for tool calls (set `tool_calling` in the mapping's `agents` to choose native or ReAct)",
        ),
        "memory" => Take::Ignored(
            "memory is the crew's in agentd: give `memory` ({\"scope\": ...}) in the mapping",
        ),
        "knowledge_sources" | "knowledge" | "knowledge_config" | "embedder" => Take::Ignored(
            "agentd's knowledge is stored knowledge bases (POST /v1/knowledge): name them in the mapping's `knowledge` or `agents.<name>.knowledge`",
        ),
        "max_execution_time" => Take::Ignored("agentd has no per-agent time limit (`max_iter` bounds an agent's turns)"),
        "max_retry_limit" => Take::Ignored("agentd retries failed model calls by its provider settings, not per agent"),
        "allow_code_execution" | "code_execution_mode" => Take::Ignored("agentd does not run code for agents"),
        "multimodal" => Take::Ignored(
            "agentd gives every agent image results of tools as images when its model accepts them; there is no switch",
        ),
        "reasoning" | "max_reasoning_attempts" => Take::Ignored(
            "agentd has no reasoning pass per agent (the crew's `planning` plans each task)",
        ),
        "inject_date" | "date_format" => Take::Ignored("agentd does not add the date to prompts (the `current_time` tool tells it)"),
        "system_template" | "prompt_template" | "response_template" | "use_system_prompt" => {
            Take::Ignored("agentd builds its prompts from role, goal and backstory as CrewAI's defaults do; templates are not supported")
        }
        "step_callback" | "callbacks" => Take::Ignored("Python callbacks cannot run in agentd: follow the run's events or a webhook instead"),
        "guardrail" | "guardrail_max_retries" => Take::Ignored(
            "agentd's guardrails are a task's (`guardrail` in tasks.yaml)",
        ),
        _ => return None,
    };
    Some(take)
}

fn task_field(field: &str) -> Option<Take> {
    let take = match field {
        "description" | "expected_output" => Take::Text,
        "agent" | "context" | "async_execution" | "human_input" | "guardrail_max_retries" => Take::Same,
        "guardrail" => Take::Text,
        "max_retries" => Take::As("guardrail_max_retries"),
        "tools" => Take::Tools,
        "output_file" | "create_directory" => Take::Ignored(
            "agentd writes no files: the output is kept with the run (GET /v1/runs/{id}/tasks/{name})",
        ),
        "output_json" | "output_pydantic" => Take::Ignored(
            "this names a Python class; give its JSON Schema as `output_schema` in the mapping's `tasks`",
        ),
        "converter_cls" => Take::Ignored("agentd checks structured output against `output_schema` itself"),
        "markdown" => {
            Take::Ignored("agentd does not ask for Markdown: say so in the description if it matters")
        }
        "callback" => Take::Ignored(
            "Python callbacks cannot run in agentd: follow the run's events or a webhook instead",
        ),
        "guardrails" => {
            Take::Ignored("agentd takes one guardrail per task (`guardrail`, a sentence the model checks)")
        }
        "config" => Take::Ignored("nested `config` is not read: give its fields directly"),
        _ => return None,
    };
    Some(take)
}

impl Project<'_> {
    fn convert(&mut self, agents: &serde_norway::Mapping, tasks: &serde_norway::Mapping) {
        for (key, fields) in agents {
            if let Some((key, fields)) = self.entry("agents_yaml", key, fields) {
                let agent = self.item("agents_yaml", &key, fields, agent_field);
                self.agents.push((key, agent));
            }
        }
        for (key, fields) in tasks {
            if let Some((key, fields)) = self.entry("tasks_yaml", key, fields) {
                let task = self.item("tasks_yaml", &key, fields, task_field);
                self.tasks.push((key, task));
            }
        }
        self.apply_overrides();
    }

    /// A top-level entry: its name and its fields.
    fn entry<'y>(
        &mut self,
        file: &str,
        key: &Yaml,
        fields: &'y Yaml,
    ) -> Option<(String, &'y serde_norway::Mapping)> {
        let Some(key) = key.as_str() else {
            self.errors
                .push(FieldError::new(file, format!("the names must be text, not {}", yaml_kind(key))));
            return None;
        };
        match fields {
            Yaml::Mapping(fields) => Some((key.to_owned(), fields)),
            other => {
                let message = format!("must be a mapping of fields, not {}", yaml_kind(other));
                self.errors.push(FieldError::new(format!("{file}.{key}"), message));
                None
            }
        }
    }

    /// An agent's or a task's fields, taken one by one.
    fn item(
        &mut self,
        file: &str,
        name: &str,
        fields: &serde_norway::Mapping,
        field_of: fn(&str) -> Option<Take>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("name".into(), Value::String(name.to_owned()));
        for (field, value) in fields {
            let Some(field) = field.as_str() else {
                let message = format!("field names must be text, not {}", yaml_kind(field));
                self.errors.push(FieldError::new(format!("{file}.{name}"), message));
                continue;
            };
            let at = format!("{file}.{name}.{field}");
            if field == "name" {
                // CrewAI's optional `name` of a task: agentd names it by its key.
                if value.as_str() != Some(name) {
                    self.warn(&at, format!("agentd names the task by its key, '{name}'"));
                }
                continue;
            }
            let Some(take) = field_of(field) else {
                self.warn(&at, "not a CrewAI field agentd knows: ignored".to_owned());
                continue;
            };
            match take {
                Take::Same => self.put(&mut out, field, value, &at),
                Take::As(to) => self.put(&mut out, to, value, &at),
                Take::Text => match value {
                    Yaml::String(text) => {
                        out.insert(field.into(), Value::String(text.trim().to_owned()));
                    }
                    other => self
                        .errors
                        .push(FieldError::new(at, format!("must be text, not {}", yaml_kind(other)))),
                },
                Take::Model => match value {
                    Yaml::String(model) => {
                        let model = model.trim();
                        let mapped = self.mapping.models.get(model).or_else(|| self.mapping.models.get("*"));
                        out.insert(
                            "llm".into(),
                            Value::String(mapped.map_or(model, String::as_str).to_owned()),
                        );
                    }
                    other => self.errors.push(FieldError::new(
                        at,
                        format!("must be a model name (\"provider/model\"), not {}", yaml_kind(other)),
                    )),
                },
                Take::Tools => {
                    if let Some(tools) = self.tools(value, &at) {
                        out.insert(
                            "tools".into(),
                            Value::Array(tools.into_iter().map(Value::String).collect()),
                        );
                    }
                }
                Take::Only(honoured, instead) => {
                    if *value != honoured {
                        self.warn(&at, format!("ignored: {instead}"));
                    }
                }
                Take::Ignored(instead) => self.warn(&at, format!("ignored: {instead}")),
            }
        }
        if file == "agents_yaml" && !out.contains_key("llm") {
            if let Some(model) = self.mapping.models.get("*") {
                out.insert("llm".into(), Value::String(model.clone()));
            }
        }
        out
    }

    /// A value as JSON into `out[to]` (the crew spec's rules check it afterwards).
    fn put(&mut self, out: &mut Map<String, Value>, to: &str, value: &Yaml, at: &str) {
        match serde_json::to_value(value) {
            Ok(json) => {
                out.insert(to.to_owned(), json);
            }
            Err(error) => self.errors.push(FieldError::new(at, format!("cannot be read: {error}"))),
        }
    }

    /// Tool names, each through the mapping's `tool_names`; a name agentd does not know (and the
    /// mapping does not map) is dropped with a warning.
    fn tools(&mut self, value: &Yaml, at: &str) -> Option<Vec<String>> {
        let Yaml::Sequence(names) = value else {
            self.errors
                .push(FieldError::new(at, format!("must be a list of tool names, not {}", yaml_kind(value))));
            return None;
        };
        let declared: BTreeSet<&str> = self
            .mapping
            .crew
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .collect();
        let mut tools = Vec::new();
        let mut warnings = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let Some(name) = name.as_str() else {
                self.errors.push(FieldError::new(
                    format!("{at}[{i}]"),
                    format!("must be a tool name, not {}", yaml_kind(name)),
                ));
                continue;
            };
            match self.mapping.tool_names.get(name) {
                Some(Some(to)) => tools.push(to.clone()),
                Some(None) => warnings.push((
                    format!("{at}[{i}]"),
                    format!("'{name}' dropped, as the mapping's tool_names says"),
                )),
                None if self.ctx.builtin_tools.iter().any(|b| b == name)
                    || declared.contains(name)
                    || name.contains("__") =>
                {
                    tools.push(name.to_owned())
                }
                None => {
                    let builtins = self.ctx.builtin_tools.join(", ");
                    let message = format!(
                        "'{name}' is not an agentd tool: dropped (map it to one with the mapping's tool_names, e.g. {{\"{name}\": \"http_request\"}}, or declare an HTTP tool in its `tools`; built-in: {builtins})"
                    );
                    warnings.push((format!("{at}[{i}]"), message));
                }
            }
        }
        for (field, message) in warnings {
            self.warn(&field, message);
        }
        Some(tools)
    }

    /// The mapping's `agents` and `tasks`: crew-spec fields set over the YAML's.
    fn apply_overrides(&mut self) {
        let overrides = [
            ("agents", std::mem::take(&mut self.mapping.agents), &mut self.agents),
            ("tasks", std::mem::take(&mut self.mapping.tasks), &mut self.tasks),
        ];
        for (kind, overrides, items) in overrides {
            for (name, fields) in overrides {
                match items.iter_mut().find(|(key, _)| *key == name) {
                    Some((_, item)) => {
                        for (field, value) in fields {
                            if field == "name" {
                                let message = "an entry's name is its key in the YAML";
                                self.errors
                                    .push(FieldError::new(format!("mapping.{kind}.{name}.name"), message));
                                continue;
                            }
                            item.insert(field, value);
                        }
                    }
                    None => {
                        let file = format!("{kind}.yaml");
                        let message = format!("{file} has no entry named '{name}'");
                        self.errors.push(FieldError::new(format!("mapping.{kind}.{name}"), message));
                    }
                }
            }
        }
    }

    fn warn(&mut self, field: &str, message: String) {
        self.warnings.push(ImportWarning { field: field.to_owned(), message });
    }
}

/// Where the crew spec's agents and tasks came from, to name errors by the YAML.
struct Locations {
    agents: Vec<(String, Map<String, Value>)>,
    tasks: Vec<(String, Map<String, Value>)>,
}

impl Locations {
    fn locate_all(&self, errors: Vec<FieldError>) -> Vec<FieldError> {
        errors.into_iter().map(|e| self.locate(e)).collect()
    }

    /// `agents[0].llm` → `agents_yaml.researcher.llm`; `tasks[2]` → `tasks_yaml.report`; a crew
    /// field → `mapping.<field>`.
    fn locate(&self, mut error: FieldError) -> FieldError {
        let field = error.field.trim_start_matches('.');
        let located = [("agents[", "agents_yaml", &self.agents), ("tasks[", "tasks_yaml", &self.tasks)]
            .into_iter()
            .find_map(|(prefix, file, items)| {
                let rest = field.strip_prefix(prefix)?;
                let (index, rest) = rest.split_once(']')?;
                let (name, _) = items.get(index.parse::<usize>().ok()?)?;
                Some(format!("{file}.{name}{rest}"))
            });
        error.field = match located {
            Some(located) => located,
            None if field.is_empty() || field == "agents" || field == "tasks" => {
                if field == "tasks" {
                    "tasks_yaml".to_owned()
                } else if field == "agents" {
                    "agents_yaml".to_owned()
                } else {
                    "mapping".to_owned()
                }
            }
            None => format!("mapping.{field}"),
        };
        error
    }
}

fn yaml_kind(value: &Yaml) -> &'static str {
    match value {
        Yaml::Null => "nothing",
        Yaml::Bool(_) => "a boolean",
        Yaml::Number(_) => "a number",
        Yaml::String(_) => "text",
        Yaml::Sequence(_) => "a list",
        Yaml::Mapping(_) => "a mapping",
        Yaml::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests;

//! The rules a crew spec and its inputs must follow before a run is accepted. Every violation is
//! reported, each with the JSON path of the offending field, so a client fixes them in one go.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::crew::{
    AgentSpec, CrewSpec, LlmSpec, McpServerSpec, McpToolRef, Process, TaskSpec, ToolSpec, ValueSource,
    MCP_SEPARATOR,
};
pub use super::field::{check_crew_name, check_text, parse_json, FieldError, TextKind, MAX_NAME_LEN};
use super::interpolate::required_inputs;
use super::limits::CrewLimits;
use super::schema::{check_schema, schema_type};

/// What the server knows that a spec may refer to.
#[derive(Debug, Clone)]
pub struct ValidationContext {
    /// Names of the built-in tools.
    pub builtin_tools: Vec<String>,
    /// Names of the configured LLM providers.
    pub providers: Vec<String>,
    /// Those of them that are fake (`kind = "fake"`: scripted replies).
    pub fake_providers: Vec<String>,
    /// The model of agents that name none.
    pub default_model: String,
    /// How big a crew may be.
    pub limits: CrewLimits,
}

impl ValidationContext {
    /// Does any model `crew` may call go to a fake provider? (Agents without a model use the
    /// default model, and so does a hierarchical crew's manager without one.)
    pub fn uses_fake_provider(&self, crew: &CrewSpec) -> bool {
        if self.fake_providers.is_empty() {
            return false;
        }
        let default = self.default_model.as_str();
        let agents = crew.agents.iter().map(|a| a.llm.as_ref().map_or(default, LlmSpec::model));
        let manager = match (&crew.manager_llm, crew.process) {
            (Some(llm), _) => Some(llm.model()),
            (None, Process::Hierarchical) => Some(default),
            (None, Process::Sequential) => None,
        };
        let planner = crew.planning_llm.as_ref().map(LlmSpec::model);
        agents.chain(manager).chain(planner).any(|model| self.is_fake(model))
    }

    /// Is `model` (`provider/model` or bare, as the registry resolves it) served by a fake?
    fn is_fake(&self, model: &str) -> bool {
        let provider = match model.split_once('/') {
            Some((provider, _)) if self.providers.iter().any(|p| p == provider) => provider,
            _ => super::crew::DEFAULT_PROVIDER,
        };
        self.fake_providers.iter().any(|fake| fake == provider)
    }
}

const MAX_ITER_LIMIT: u32 = 1_000;
const MAX_TOOL_TIMEOUT_MS: u64 = 300_000;
/// The largest `max_rpm`, `max_tokens` and `max_usage_count`.
const MAX_COUNT: u32 = 1_000_000;
/// The largest run token budget (`max_tokens` of a crew or kickoff).
const MAX_RUN_TOKENS: u64 = 1_000_000_000_000;
/// The largest run cost budget (`max_cost_usd`).
const MAX_RUN_COST_USD: f64 = 1_000_000.0;

/// Knowledge bases one crew or agent may name.
pub const MAX_KNOWLEDGE_REFS: usize = 20;

/// Check a whole crew spec; `Ok` or every violation found.
pub fn validate_crew(crew: &CrewSpec, ctx: &ValidationContext) -> Result<(), Vec<FieldError>> {
    let mut v = Validator { ctx, errors: Vec::new(), mcp: Vec::new() };
    v.crew(crew);
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// The problems of a run budget (`max_tokens`, `max_cost_usd` of a crew or a kickoff).
pub fn budget_errors(max_tokens: Option<u64>, max_cost_usd: Option<f64>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match max_tokens {
        Some(0) => errors.push(FieldError::new("max_tokens", "must be at least 1")),
        Some(n) if n > MAX_RUN_TOKENS => {
            errors.push(FieldError::new("max_tokens", format!("must be at most {MAX_RUN_TOKENS}")))
        }
        _ => {}
    }
    match max_cost_usd {
        Some(cost) if !cost.is_finite() || cost <= 0.0 => {
            errors.push(FieldError::new("max_cost_usd", "must be more than 0"))
        }
        Some(cost) if cost > MAX_RUN_COST_USD => {
            errors.push(FieldError::new("max_cost_usd", format!("must be at most {MAX_RUN_COST_USD}")))
        }
        _ => {}
    }
    errors
}

/// The most characters of a crew's `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;

/// Check that `inputs` fills every placeholder of the crew (one error per missing name) and
/// satisfies the crew's `inputs_schema`.
pub fn validate_inputs(crew: &CrewSpec, inputs: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let mut errors: Vec<FieldError> = required_inputs(crew)
        .into_iter()
        .filter(|name| !inputs.contains_key(name))
        .map(|name| {
            let message = format!("missing input '{name}' used as {{{name}}} in the crew");
            FieldError::new(format!("inputs.{name}"), message)
        })
        .collect();
    errors.extend(
        inputs
            .iter()
            .filter(|(_, value)| value.is_null())
            .map(|(name, _)| FieldError::new(format!("inputs.{name}"), "must not be null")),
    );
    if let (true, Some(schema)) = (errors.is_empty(), &crew.inputs_schema) {
        match super::schema::CompiledSchema::compile(schema) {
            Ok(compiled) => errors.extend(
                compiled.violations(&Value::Object(inputs.clone())).into_iter().map(|(path, message)| {
                    FieldError::new(format!("inputs{}", path.trim_start_matches('$')), message)
                }),
            ),
            Err(error) => {
                errors.push(FieldError::new(format!("crew.inputs_schema{}", error.field), error.message))
            }
        }
    }
    if let (true, Some(memory)) = (errors.is_empty(), &crew.memory) {
        let scope = super::interpolate::interpolate(&memory.scope, inputs);
        if let Err(message) = super::memory::check_scope(&scope) {
            errors.push(FieldError::new("crew.memory.scope", format!("interpolated, it {message}")));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

struct Validator<'a> {
    ctx: &'a ValidationContext,
    errors: Vec<FieldError>,
    /// The crew's MCP servers, which agents' and tasks' tool names may refer to.
    mcp: Vec<McpServerSpec>,
}

impl Validator<'_> {
    fn error(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, message));
    }

    /// The crew's and agents' knowledge references: well formed, at most
    /// [`MAX_KNOWLEDGE_REFS`] per list, no base twice in one list.
    fn knowledge(&mut self, crew: &CrewSpec) {
        let lists = std::iter::once(("knowledge".to_owned(), &crew.knowledge)).chain(
            crew.agents.iter().enumerate().map(|(i, a)| (format!("agents[{i}].knowledge"), &a.knowledge)),
        );
        for (path, list) in lists {
            if list.len() > MAX_KNOWLEDGE_REFS {
                self.error(path.clone(), format!("at most {MAX_KNOWLEDGE_REFS} knowledge bases"));
                continue;
            }
            for (i, reference) in list.iter().enumerate() {
                if let Err((field, message)) = reference.resolved().check() {
                    let field = match reference {
                        crate::domain::knowledge::KnowledgeRef::Name(_) => format!("{path}[{i}]"),
                        crate::domain::knowledge::KnowledgeRef::Detailed(_) => format!("{path}[{i}].{field}"),
                    };
                    self.error(field, message);
                } else if list[..i].iter().any(|earlier| earlier.name() == reference.name()) {
                    self.error(
                        format!("{path}[{i}]"),
                        format!("knowledge base '{}' is named twice", reference.name()),
                    );
                }
            }
        }
    }

    /// What the protocols publish: the description, and an inputs schema that is an object
    /// schema declaring every placeholder as a required property.
    fn published(&mut self, crew: &CrewSpec) {
        if let Some(description) = &crew.description {
            if description.trim().is_empty() {
                self.error("description", "must not be blank");
            } else if description.chars().count() > MAX_DESCRIPTION_CHARS {
                self.error("description", format!("must be at most {MAX_DESCRIPTION_CHARS} characters"));
            } else if let Err(error) = check_text("description", description, TextKind::Lines) {
                self.errors.push(error);
            }
        }
        let Some(schema) = &crew.inputs_schema else { return };
        let before = self.errors.len();
        check_schema(schema, "inputs_schema", &mut self.errors);
        if self.errors.len() > before {
            return;
        }
        if schema_type(schema) != Some("object") {
            self.error("inputs_schema.type", "must be \"object\" (the inputs are an object)");
            return;
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for name in required_inputs(crew) {
            if !properties.is_some_and(|properties| properties.contains_key(&name)) {
                let message = format!("must declare '{name}' (used as {{{name}}} in the crew)");
                self.error("inputs_schema.properties", message);
            } else if !required.contains(name.as_str()) {
                let message =
                    format!("must list '{name}' (used as {{{name}}} in the crew, so every kickoff needs it)");
                self.error("inputs_schema.required", message);
            }
        }
    }

    /// The crew's memory: its scope (as written: a placeholder counts as it stands; the kickoff
    /// checks it interpolated) and `k`.
    fn memory(&mut self, crew: &CrewSpec) {
        use crate::domain::memory::{check_scope, MAX_MEMORY_K};
        let Some(memory) = &crew.memory else { return };
        if let Err(message) = check_scope(&memory.scope) {
            self.error("memory.scope", message);
        }
        if !(1..=MAX_MEMORY_K).contains(&memory.k) {
            self.error("memory.k", format!("must be between 1 and {MAX_MEMORY_K}"));
        }
        if let Some(Err(message)) = memory.embedding.as_deref().map(crate::domain::memory::check_embedding) {
            self.error("memory.embedding", message);
        }
    }

    fn crew(&mut self, crew: &CrewSpec) {
        if let Err(message) = check_crew_name(&crew.name) {
            self.error("name", message);
        }
        if !self.within_limits(crew) {
            // Checking every item of an oversized crew would only make a longer answer.
            return;
        }
        if crew.agents.is_empty() {
            self.error("agents", "a crew needs at least one agent");
        }
        if crew.tasks.is_empty() {
            self.error("tasks", "a crew needs at least one task");
        }
        self.positive(crew.max_rpm, "max_rpm");
        self.errors.extend(budget_errors(crew.max_tokens, crew.max_cost_usd));
        self.knowledge(crew);
        self.memory(crew);
        self.published(crew);
        if let Some(llm) = &crew.planning_llm {
            self.llm(llm, "planning_llm");
        }
        if crew.planning && crew.process == Process::Hierarchical {
            self.error("planning", "planning works with the sequential process only");
        }
        match (&crew.process, &crew.manager_llm) {
            (Process::Hierarchical, None) => {
                self.error("manager_llm", "the hierarchical process needs a manager_llm")
            }
            (_, Some(llm)) => self.llm(llm, "manager_llm"),
            (Process::Sequential, None) => {}
        }
        let declared = self.tools(&crew.tools);
        self.mcp_servers(&crew.mcp_servers, &declared);
        for (i, name) in crew.requires_approval.iter().enumerate() {
            if !self.ctx.builtin_tools.contains(name) {
                let message = format!(
                    "'{name}' is not a built-in tool (crew tools say `requires_approval` themselves, MCP servers list theirs)"
                );
                self.error(format!("requires_approval[{i}]"), message);
            }
        }
        self.mcp = crew.mcp_servers.clone();
        let mut known: Vec<&str> = self.ctx.builtin_tools.iter().map(String::as_str).collect();
        known.extend(declared.iter().map(String::as_str));
        self.unique(crew.agents.iter().map(|a| a.name.as_str()), "agents", "agent");
        for (i, agent) in crew.agents.iter().enumerate() {
            self.agent(agent, &format!("agents[{i}]"), &known);
        }
        self.unique(crew.tasks.iter().map(|t| t.name.as_str()), "tasks", "task");
        for (i, task) in crew.tasks.iter().enumerate() {
            self.task(crew, i, task, &known);
        }
    }

    /// The crew's size against the server's limits (a 422 names the limit it is over).
    fn within_limits(&mut self, crew: &CrewSpec) -> bool {
        let limits = self.ctx.limits;
        let counts = [
            ("agents", crew.agents.len(), limits.max_agents, "max_agents"),
            ("tasks", crew.tasks.len(), limits.max_tasks, "max_tasks"),
            ("tools", crew.tools.len(), limits.max_tools, "max_tools"),
        ];
        let before = self.errors.len();
        for (field, count, max, limit) in counts {
            if count > max {
                self.error(
                    field,
                    format!("{count} {field}: at most {max} per crew (the server's {limit} limit)"),
                );
            }
        }
        self.errors.len() == before
    }

    fn unique<'s>(&mut self, names: impl Iterator<Item = &'s str>, list: &str, what: &str) {
        let mut seen = HashMap::new();
        for (i, name) in names.enumerate() {
            if let Some(first) = seen.insert(name, i) {
                self.error(
                    format!("{list}[{i}].name"),
                    format!("duplicate {what} name '{name}' (first at {list}[{first}])"),
                );
            }
        }
    }

    /// An agent's or a task's name: one line, not blank.
    fn name(&mut self, name: &str, path: &str) {
        if name.trim().is_empty() {
            self.error(path, "must not be empty");
        } else if name.len() > MAX_NAME_LEN {
            self.error(path, format!("must be at most {MAX_NAME_LEN} characters"));
        } else if let Err(error) = check_text(path, name, TextKind::Line) {
            self.errors.push(error);
        }
    }

    /// A prompt's text or a description: lines, not blank.
    fn text(&mut self, text: &str, path: &str) {
        if text.trim().is_empty() {
            self.error(path, "must not be empty");
        } else if let Err(error) = check_text(path, text, TextKind::Lines) {
            self.errors.push(error);
        }
    }

    /// A count or a rate: 1 to [`MAX_COUNT`].
    fn positive(&mut self, value: Option<u32>, path: &str) {
        match value {
            Some(0) => self.error(path, "must be at least 1"),
            Some(n) if n > MAX_COUNT => self.error(path, format!("must be at most {MAX_COUNT}")),
            _ => {}
        }
    }

    fn agent(&mut self, agent: &AgentSpec, path: &str, known_tools: &[&str]) {
        self.name(&agent.name, &format!("{path}.name"));
        self.text(&agent.role, &format!("{path}.role"));
        self.text(&agent.goal, &format!("{path}.goal"));
        self.text(&agent.backstory, &format!("{path}.backstory"));
        if let Some(llm) = &agent.llm {
            self.llm(llm, &format!("{path}.llm"));
        }
        self.tool_refs(&agent.tools, &format!("{path}.tools"), known_tools);
        if !(1..=MAX_ITER_LIMIT).contains(&agent.max_iter) {
            self.error(format!("{path}.max_iter"), format!("must be between 1 and {MAX_ITER_LIMIT}"));
        }
        self.positive(agent.max_rpm, &format!("{path}.max_rpm"));
    }

    fn llm(&mut self, llm: &LlmSpec, path: &str) {
        let (model_path, model) = match llm {
            LlmSpec::Model(model) => (path.to_owned(), model.as_str()),
            LlmSpec::Detailed(options) => {
                if let Some(t) = options.temperature {
                    if !(0.0..=2.0).contains(&t) {
                        self.error(format!("{path}.temperature"), "must be between 0 and 2");
                    }
                }
                self.positive(options.max_tokens, &format!("{path}.max_tokens"));
                (format!("{path}.model"), options.model.as_str())
            }
        };
        let bare = match model.split_once('/') {
            Some((provider, rest)) => {
                if !self.ctx.providers.iter().any(|p| p == provider) {
                    let configured = self.ctx.providers.join(", ");
                    let message = format!("unknown provider '{provider}' (configured: {configured})");
                    self.error(model_path.clone(), message);
                }
                rest
            }
            None => model,
        };
        if bare.trim().is_empty() {
            self.error(model_path, "must name a model, as \"provider/model\" or \"model\"");
        }
    }

    fn tool_refs(&mut self, tools: &[String], path: &str, known: &[&str]) {
        let max = self.ctx.limits.max_tools;
        if tools.len() > max {
            let message = format!("{} tools: at most {max} (the server's max_tools limit)", tools.len());
            return self.error(path, message);
        }
        for (i, tool) in tools.iter().enumerate() {
            if known.contains(&tool.as_str()) {
                continue;
            }
            let field = format!("{path}[{i}]");
            let reference = McpToolRef::parse(tool);
            let server = reference.and_then(|r| self.mcp.iter().find(|s| s.name == r.server()));
            match (reference, server) {
                (Some(McpToolRef::One { tool: name, .. }), Some(server)) => {
                    if let Some(allowed) = server.tools.as_ref().filter(|a| !a.iter().any(|t| t == name)) {
                        let message = format!(
                            "MCP server '{}' allows only these tools: {}",
                            server.name,
                            allowed.join(", ")
                        );
                        self.error(field, message);
                    } else if let Err(message) = check_tool_name(tool) {
                        self.error(field, message);
                    }
                }
                (Some(McpToolRef::All { .. }), Some(_)) => {}
                _ => {
                    let mut available = known.join(", ");
                    for server in &self.mcp {
                        available.push_str(&format!(", {}__*", server.name));
                    }
                    self.error(field, format!("unknown tool '{tool}' (available: {available})"));
                }
            }
        }
    }

    /// The crew's MCP servers: names, URLs, headers, allow-lists.
    fn mcp_servers(&mut self, servers: &[McpServerSpec], declared: &BTreeSet<String>) {
        if servers.len() > MAX_MCP_SERVERS {
            let message = format!("{} MCP servers: at most {MAX_MCP_SERVERS} per crew", servers.len());
            return self.error("mcp_servers", message);
        }
        self.unique(servers.iter().map(|s| s.name.as_str()), "mcp_servers", "MCP server");
        for (i, server) in servers.iter().enumerate() {
            let path = format!("mcp_servers[{i}]");
            let name_ok = !server.name.is_empty()
                && server.name.len() <= 32
                && !server.name.contains(MCP_SEPARATOR)
                && !server.name.starts_with('_')
                && !server.name.ends_with('_')
                && server.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !name_ok {
                self.error(
                    format!("{path}.name"),
                    "must be 1 to 32 characters of letters, digits, '-' and '_' (not '__', not at either end)",
                );
            }
            if let Some(tool) =
                declared.iter().find(|t| t.starts_with(&format!("{}{MCP_SEPARATOR}", server.name)))
            {
                self.error(
                    format!("{path}.name"),
                    format!("the crew tool '{tool}' would read as one of this server's"),
                );
            }
            self.http_url(&server.url, &format!("{path}.url"));
            if !(1..=MAX_TOOL_TIMEOUT_MS).contains(&server.timeout_ms) {
                self.error(
                    format!("{path}.timeout_ms"),
                    format!("must be between 1 and {MAX_TOOL_TIMEOUT_MS}"),
                );
            }
            for (name, value) in &server.headers {
                let field = format!("{path}.headers.{name}");
                if let Err(message) = check_header_name(name) {
                    self.error(&field, message);
                } else if MCP_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                    self.error(&field, format!("'{name}' is set by agentd, not by the crew"));
                }
                self.value_source(value, &field, true);
            }
            let tools = server.tools.iter().flatten().map(|t| (t, "tools"));
            let idempotent = server.idempotent.keys().map(|t| (t, "idempotent"));
            let approval = server.requires_approval.iter().map(|t| (t, "requires_approval"));
            for (j, (tool, list)) in tools.chain(idempotent).chain(approval).enumerate() {
                let field = match list {
                    "tools" => format!("{path}.tools[{j}]"),
                    "requires_approval" => format!("{path}.requires_approval.{tool}"),
                    _ => format!("{path}.idempotent.{tool}"),
                };
                if let Err(message) = check_tool_name(&format!("{}{MCP_SEPARATOR}{tool}", server.name)) {
                    self.error(field, message);
                }
            }
        }
    }

    /// An `http` or `https` URL with a host and no credentials.
    fn http_url(&mut self, url: &str, field: &str) {
        match url::Url::parse(url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                if !url.username().is_empty() || url.password().is_some() {
                    self.error(field, "must not carry credentials");
                }
            }
            Ok(_) => self.error(field, "must be an http or https URL with a host"),
            Err(e) => self.error(field, format!("not a valid URL: {e}")),
        }
    }

    fn task(&mut self, crew: &CrewSpec, index: usize, task: &TaskSpec, known_tools: &[&str]) {
        let path = format!("tasks[{index}]");
        self.name(&task.name, &format!("{path}.name"));
        self.text(&task.description, &format!("{path}.description"));
        self.text(&task.expected_output, &format!("{path}.expected_output"));
        match &task.agent {
            Some(agent) if crew.agent(agent).is_none() => {
                let agents: Vec<&str> = crew.agents.iter().map(|a| a.name.as_str()).collect();
                let message = format!("unknown agent '{agent}' (the crew's agents: {})", agents.join(", "));
                self.error(format!("{path}.agent"), message)
            }
            None if crew.process == Process::Sequential => {
                self.error(format!("{path}.agent"), "required in the sequential process")
            }
            _ => {}
        }
        for (i, name) in task.context.iter().flatten().enumerate() {
            let field = format!("{path}.context[{i}]");
            match crew.tasks.iter().position(|t| &t.name == name) {
                None => self.error(field, format!("unknown task '{name}'")),
                Some(at) if at >= index => self.error(
                    field,
                    format!("'{name}' does not come before this task; context names earlier tasks"),
                ),
                Some(_) => {}
            }
        }
        if let Some(tools) = &task.tools {
            self.tool_refs(tools, &format!("{path}.tools"), known_tools);
        }
        if task.max_step_iterations.is_some_and(|n| !(1..=100).contains(&n)) {
            self.error(format!("{path}.max_step_iterations"), "must be between 1 and 100");
        }
        if task.step_timeout_s.is_some_and(|n| !(1..=3600).contains(&n)) {
            self.error(format!("{path}.step_timeout_s"), "must be between 1 and 3600");
        }
        if task.async_execution && task.human_input {
            self.error(format!("{path}.human_input"), "an async task cannot wait for human input");
        }
        if let Some(guardrail) = &task.guardrail {
            self.text(guardrail, &format!("{path}.guardrail"));
        }
        if task.guardrail_max_retries.is_some_and(|n| n > 10) {
            self.error(format!("{path}.guardrail_max_retries"), "must be at most 10");
        }
        if let Some(schema) = &task.output_schema {
            check_schema(schema, &format!("{path}.output_schema"), &mut self.errors);
        }
    }

    /// Check the declared tools; returns their names.
    fn tools(&mut self, tools: &[ToolSpec]) -> BTreeSet<String> {
        self.unique(tools.iter().map(|t| t.name.as_str()), "tools", "tool");
        for (i, tool) in tools.iter().enumerate() {
            let path = format!("tools[{i}]");
            self.tool(tool, &path);
        }
        tools.iter().map(|t| t.name.clone()).collect()
    }

    fn tool(&mut self, tool: &ToolSpec, path: &str) {
        let name_ok = !tool.name.is_empty()
            && tool.name.len() <= 64
            && tool.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            self.error(format!("{path}.name"), "must be 1 to 64 characters of letters, digits, '_' or '-'");
        } else if self.ctx.builtin_tools.contains(&tool.name) {
            self.error(format!("{path}.name"), format!("'{}' is a built-in tool", tool.name));
        }
        self.text(&tool.description, &format!("{path}.description"));
        let params_path = format!("{path}.parameters");
        check_schema(&tool.parameters, &params_path, &mut self.errors);
        if tool.parameters.is_object() && schema_type(&tool.parameters) != Some("object") {
            self.error(format!("{params_path}.type"), "tool parameters must be of type \"object\"");
        }
        self.http_url(&tool.http.url, &format!("{path}.http.url"));
        if !(1..=MAX_TOOL_TIMEOUT_MS).contains(&tool.http.timeout_ms) {
            self.error(
                format!("{path}.http.timeout_ms"),
                format!("must be between 1 and {MAX_TOOL_TIMEOUT_MS}"),
            );
        }
        self.positive(tool.max_usage_count, &format!("{path}.max_usage_count"));
        for (name, value) in &tool.http.headers {
            let field = format!("{path}.http.headers.{name}");
            if let Err(message) = check_header_name(name) {
                self.error(&field, message);
            }
            self.value_source(value, &field, true);
        }
        for (name, value) in &tool.http.query {
            let field = format!("{path}.http.query.{name}");
            if name.is_empty() {
                self.error(&field, "a query parameter needs a name");
            }
            self.value_source(value, &field, false);
        }
    }

    /// A header or query value: a plain one that can be sent as it is, or a well-named secret.
    fn value_source(&mut self, value: &ValueSource, field: &str, header: bool) {
        match value {
            ValueSource::Plain(text) if header && !is_header_value(text) => {
                self.error(field, "must be visible characters, spaces and tabs (no line breaks)")
            }
            ValueSource::Plain(_) => {}
            ValueSource::Secret(reference) => {
                if let Err(message) = check_crew_name(&reference.secret) {
                    self.error(format!("{field}.secret"), message);
                }
                if header && !is_header_value(&reference.prefix) {
                    self.error(format!("{field}.prefix"), "must be visible characters, spaces and tabs");
                }
            }
        }
    }
}

/// The most MCP servers a crew may declare.
pub const MAX_MCP_SERVERS: usize = 20;

/// Headers of the MCP transport, which agentd sets.
const MCP_HEADERS: [&str; 4] = ["mcp-session-id", "mcp-protocol-version", "accept", "content-type"];

/// A tool name as providers take it: 1 to 64 letters, digits, `_` and `-`.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match ok {
        true => Ok(()),
        false => {
            Err(format!("'{name}' is not a tool name providers take (1 to 64 letters, digits, '_' or '-')"))
        }
    }
}

/// Headers agentd sets itself or that frame the request: a crew may not set them.
const RESERVED_HEADERS: [&str; 7] =
    ["host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "idempotency-key"];

/// A header name: an RFC 9110 token that agentd leaves to the crew.
pub fn check_header_name(name: &str) -> Result<(), String> {
    let token = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err("not a valid header name (letters, digits and !#$%&'*+-.^_`|~)".to_owned());
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!("'{name}' is set by agentd, not by the crew"));
    }
    Ok(())
}

/// Can `text` be sent as a header value (visible characters, spaces and tabs)?
pub fn is_header_value(text: &str) -> bool {
    text.chars().all(|c| c == '\t' || c == ' ' || !c.is_control())
}

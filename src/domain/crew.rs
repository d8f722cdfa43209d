//! The crew spec: CrewAI's agents, tasks and tools as JSON. These types are what a client sends
//! and what a run snapshots; their rules live in [`super::validate`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use serde_json::Value;

use chrono::{DateTime, Utc};

use super::knowledge::KnowledgeRef;
use utoipa::ToSchema;

/// Default `max_iter` of an agent, as in CrewAI.
pub const DEFAULT_MAX_ITER: u32 = 20;

/// The provider a bare model name (`"gpt-4o-mini"`, no `provider/`) belongs to.
pub const DEFAULT_PROVIDER: &str = "openai";

/// A crew: agents, the tasks they perform and the tools they may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CrewSpec {
    /// The crew's name (letters, digits, `-`, `_`, `.`; at most 100 characters; not dots only).
    #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")]
    pub name: String,
    /// What the crew does, in a sentence or two (at most 2,000 characters): the description the
    /// protocols publish it with (the MCP tool's, the A2A agent card's). Absent: one made from
    /// its tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 2000,
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub description: Option<String>,
    #[serde(default)]
    pub process: Process,
    /// At least one (at most the server's `max_agents`, default 50).
    #[schema(min_items = 1)]
    pub agents: Vec<AgentSpec>,
    /// At least one (at most the server's `max_tasks`, default 100).
    #[schema(min_items = 1)]
    pub tasks: Vec<TaskSpec>,
    /// Tools declared by the crew (HTTP tools), usable beside the built-ins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// MCP servers (Streamable HTTP) whose tools agents and tasks name as `<server>__<tool>`, or
    /// all of a server's as `<server>__*` (at most 20 servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerSpec>,
    /// Crew-wide requests-per-minute limit; overrides the agents' `max_rpm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_rpm: Option<u32>,
    /// Built-in tools whose calls wait for a person's approval (crew tools and MCP tools say so
    /// themselves).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_approval: Vec<String>,
    /// The manager's model for the hierarchical process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_llm: Option<LlmSpec>,
    /// Plan each task into steps before performing it (sequential process).
    #[serde(default)]
    pub planning: bool,
    /// The planner's model (the agent's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_llm: Option<LlmSpec>,
    /// Stream the agents' replies: each turn's text is published as `llm.delta` events to the
    /// run's SSE streams as it arrives (live only, never journaled; the whole reply is journaled
    /// as always).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The run's token budget: prompt and completion tokens of all its model calls together. A
    /// run that would go over it (on an estimate before a call, or on the usage reported after
    /// it) stops with `error.kind = "budget"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000000000u64)]
    pub max_tokens: Option<u64>,
    /// The run's cost budget in US dollars, at the prices configured for its models (calls to
    /// unpriced models cost nothing here). Over it, the run stops with `error.kind = "budget"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0, maximum = 1000000)]
    pub max_cost_usd: Option<f64>,
    /// Knowledge bases of the tenant (`POST /v1/knowledge`) whose hits every task's prompt
    /// receives: the prompt is the query, the hits are appended as "Relevant Knowledge". By name
    /// or `{"name", "k", "min_score"}` (at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<KnowledgeRef>,
    /// What the crew remembers across kickoffs: each completed task saves an item in `scope`,
    /// and each task's prompt recalls the scope's most relevant items from earlier runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<super::memory::MemorySpec>,
    /// A JSON Schema of the kickoff's `inputs` (an object schema declaring every `{placeholder}`
    /// as a required property). Kickoffs are checked against it, and the protocols publish it
    /// (the MCP tool's `inputSchema`). Absent: each placeholder is a required string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub inputs_schema: Option<Value>,
    /// The protocols a registered crew is reachable through besides the REST API (all off by
    /// default): the MCP server at `/mcp`, A2A at `/a2a/{name}`, AG-UI at
    /// `/v1/ag-ui/crews/{name}`. Only the tenant's own keys see it there.
    #[serde(default, skip_serializing_if = "Publish::is_none")]
    pub publish: Publish,
}

/// Which protocols publish a registered crew.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    /// A tool of the MCP server (`/mcp`).
    #[serde(default)]
    pub mcp: bool,
    /// An A2A agent (`/a2a/{name}`, card at `/a2a/{name}/.well-known/agent-card.json`).
    #[serde(default)]
    pub a2a: bool,
    /// An AG-UI agent (`POST /v1/ag-ui/crews/{name}`).
    #[serde(default)]
    pub ag_ui: bool,
}

/// A protocol a crew can be published through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Mcp,
    A2a,
    AgUi,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Mcp => "mcp",
            Protocol::A2a => "a2a",
            Protocol::AgUi => "ag_ui",
        }
    }
}

impl Publish {
    pub fn is_none(&self) -> bool {
        !(self.mcp || self.a2a || self.ag_ui)
    }

    pub fn includes(&self, protocol: Protocol) -> bool {
        match protocol {
            Protocol::Mcp => self.mcp,
            Protocol::A2a => self.a2a,
            Protocol::AgUi => self.ag_ui,
        }
    }
}

/// How tasks are executed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Process {
    /// Tasks run in order, each by its agent.
    #[default]
    Sequential,
    /// A manager agent delegates tasks to the crew's agents.
    Hierarchical,
}

/// An agent: a role with a goal, a backstory, a model and tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub name: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub role: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub goal: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub backstory: String,
    /// The model; the server's default model when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Model calls the agent may make for one task before it must answer (1 to 1,000).
    #[serde(default = "default_max_iter")]
    #[schema(minimum = 1, maximum = 1000)]
    pub max_iter: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_rpm: Option<u32>,
    #[serde(default)]
    pub tool_calling: ToolCalling,
    #[serde(default)]
    pub allow_delegation: bool,
    /// Knowledge bases whose hits this agent's task prompts receive (besides the crew's), by
    /// name or `{"name", "k", "min_score"}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<KnowledgeRef>,
}

fn default_max_iter() -> u32 {
    DEFAULT_MAX_ITER
}

/// A model reference: `"provider/model"`, a bare model of the default provider, or an object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum LlmSpec {
    Model(String),
    Detailed(LlmOptions),
}

/// By hand rather than `untagged`, so that a wrong value is told what is expected (and an
/// object's own errors, such as an unknown field, reach the client) instead of serde's
/// "data did not match any variant".
impl<'de> Deserialize<'de> for LlmSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> serde::de::Visitor<'de> for Spec {
            type Value = LlmSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a model (\"provider/model\" or \"model\") or an object with model, temperature and max_tokens")
            }

            fn visit_str<E: serde::de::Error>(self, model: &str) -> Result<LlmSpec, E> {
                Ok(LlmSpec::Model(model.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, model: String) -> Result<LlmSpec, E> {
                Ok(LlmSpec::Model(model))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<LlmSpec, A::Error> {
                LlmOptions::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(LlmSpec::Detailed)
            }
        }
        deserializer.deserialize_any(Spec)
    }
}

/// What a model string must look like: something after the last `/` (the provider before it
/// must be a configured one).
pub const MODEL_PATTERN: &str = "[^/\\s]\\s*$";

/// A crew name's pattern: letters, digits, `-`, `_`, `.`, not dots only (with length 1 to 100).
pub const CREW_NAME_PATTERN: &str = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$";

/// The pattern of a reference to a registered crew: its name, then optionally `@` and a version
/// number, `latest` or an alias ([`CrewSelector`]).
pub const CREW_REFERENCE_PATTERN: &str =
    "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*(@[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*)?$";

/// A string schema with `pattern` (and a length of 1 to `max_length`, when given).
pub fn string_schema(pattern: &str, max_length: Option<usize>) -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .min_length(max_length.map(|_| 1))
        .max_length(max_length)
        .build()
}

impl utoipa::PartialSchema for LlmSpec {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{OneOfBuilder, Ref};
        OneOfBuilder::new()
            .item(string_schema(MODEL_PATTERN, None))
            .item(Ref::from_schema_name("LlmOptions"))
            .description(Some(
                "A model reference: `\"provider/model\"`, a bare model of the default provider, or an object.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for LlmSpec {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push(("LlmOptions".into(), LlmOptions::schema()));
        <LlmOptions as ToSchema>::schemas(schemas);
    }
}

/// A model with sampling options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmOptions {
    /// `"provider/model"` (a configured provider) or a bare model of the default provider.
    #[schema(pattern = "[^/\\s]\\s*$")]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2)]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_tokens: Option<u32>,
}

impl LlmSpec {
    /// The model string, `provider/model` or bare.
    pub fn model(&self) -> &str {
        match self {
            LlmSpec::Model(model) => model,
            LlmSpec::Detailed(options) => &options.model,
        }
    }

    /// The provider part of the model string, if it names one.
    pub fn provider(&self) -> Option<&str> {
        self.model().split_once('/').map(|(provider, _)| provider)
    }
}

/// How an agent asks for tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolCalling {
    /// Native function calling when the provider supports it, ReAct text otherwise.
    #[default]
    Auto,
    Native,
    React,
}

/// A task: what to do, what to deliver, and who does it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub name: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub description: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub expected_output: String,
    /// The agent's name; optional only in the hierarchical process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Names of earlier tasks whose outputs this task sees; absent means all earlier outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<String>>,
    /// Tools for this task, replacing the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// A JSON schema the final answer must satisfy (2020-12 unless `$schema` says otherwise;
    /// `$ref`s resolve inside it only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub human_input: bool,
    /// Start the task and move on; the next task without it waits for it.
    #[serde(default)]
    pub async_execution: bool,
    /// With planning: the bound of each step's loop (default 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_step_iterations: Option<u32>,
    /// With planning: seconds a step may take; past it the step returns what it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 3600)]
    pub step_timeout_s: Option<u32>,
    /// A sentence the answer must satisfy, checked by the model (JSON shape: `output_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub guardrail: Option<String>,
    /// Redos a failed guardrail allows (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10)]
    pub guardrail_max_retries: Option<u32>,
}

/// A tool declared by the crew: an HTTP endpoint the agents may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Letters, digits, `_` and `-`, at most 64 (the providers' function-name rule); not a
    /// built-in tool's name.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub name: String,
    #[schema(
        pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$"
    )]
    pub description: String,
    /// JSON schema of the arguments (`"type": "object"`; 2020-12 unless `$schema` says
    /// otherwise; `$ref`s resolve inside it only).
    #[schema(schema_with = tool_parameters_schema)]
    pub parameters: Value,
    pub http: HttpToolSpec,
    /// The tool's result becomes the task's final answer.
    #[serde(default)]
    pub result_as_answer: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_usage_count: Option<u32>,
    /// Cache results per run, keyed by arguments.
    #[serde(default = "default_true")]
    pub cache: bool,
    /// Safe to call again after a crash interrupted a call (default: true for GET, false for
    /// POST).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Each call waits for a person's approval before it runs (the run is `awaiting_input`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
}

impl ToolSpec {
    /// Whether an interrupted call may be repeated: as declared, else only for GET.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent.unwrap_or(self.http.method == HttpMethod::Get)
    }
}

/// A tool's `parameters` in the OpenAPI document: a JSON schema of `"type": "object"`.
fn tool_parameters_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("type", ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["object"])))
        .required("type")
        .description(Some(
            "JSON schema of the arguments (`\"type\": \"object\"`; 2020-12 unless `$schema` says otherwise; `$ref`s resolve inside it only).",
        ))
        .build()
}

fn default_true() -> bool {
    true
}

/// Where an HTTP tool sends its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpToolSpec {
    /// An `http` or `https` URL with a host and no credentials.
    #[schema(
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9][A-Za-z0-9.-]*(:[1-9][0-9]{0,3})?([/?#][!-~]*)?$"
    )]
    pub url: String,
    #[serde(default)]
    pub method: HttpMethod,
    /// Milliseconds a call may take (default 10,000).
    #[serde(default = "default_timeout_ms")]
    #[schema(minimum = 1, maximum = 300000)]
    pub timeout_ms: u64,
    /// Headers sent with every call: plain strings or secret references. Not `Host`,
    /// `Content-Length`, `Transfer-Encoding`, `Connection` or `Idempotency-Key` (agentd sets it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = HashMap<String, ValueSource>)]
    pub headers: BTreeMap<String, ValueSource>,
    /// Query parameters added to every call's URL (beside a GET call's arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = HashMap<String, ValueSource>)]
    pub query: BTreeMap<String, ValueSource>,
}

/// An MCP server a crew's agents may use (the Streamable HTTP transport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// Letters, digits, `-` and `_` (not `__`), at most 32: the prefix of its tools' names.
    #[schema(pattern = "^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$", max_length = 32)]
    pub name: String,
    /// The server's MCP endpoint, an `http` or `https` URL (reached through the egress guard).
    #[schema(
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9][A-Za-z0-9.-]*(:[1-9][0-9]{0,3})?([/?#][!-~]*)?$"
    )]
    pub url: String,
    /// Headers sent with every request: plain strings or secret references.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = HashMap<String, ValueSource>)]
    pub headers: BTreeMap<String, ValueSource>,
    /// The server's tools agents may use; absent: all it offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Milliseconds one request may take (default 30,000).
    #[serde(default = "default_mcp_timeout_ms")]
    #[schema(minimum = 1, maximum = 300000)]
    pub timeout_ms: u64,
    /// Per tool: safe to call again after a crash interrupted a call? Overrides the tool's
    /// annotations (`readOnlyHint` or `idempotentHint`: yes; otherwise no).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idempotent: BTreeMap<String, bool>,
    /// The server's tools (by their own names) whose calls wait for a person's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_approval: Vec<String>,
}

fn default_mcp_timeout_ms() -> u64 {
    30_000
}

/// What joins an MCP server's name and its tool's in the name agents use (`files__search`).
pub const MCP_SEPARATOR: &str = "__";

/// How a tool name an agent or task lists refers to MCP tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpToolRef<'a> {
    /// `<server>__<tool>`.
    One { server: &'a str, tool: &'a str },
    /// `<server>__*`.
    All { server: &'a str },
}

impl<'a> McpToolRef<'a> {
    /// The MCP reference `name` makes, if it is one (the server is before the first `__`).
    pub fn parse(name: &'a str) -> Option<Self> {
        let (server, tool) = name.split_once(MCP_SEPARATOR)?;
        match tool {
            "" => None,
            "*" => Some(McpToolRef::All { server }),
            tool => Some(McpToolRef::One { server, tool }),
        }
    }

    pub fn server(self) -> &'a str {
        match self {
            McpToolRef::One { server, .. } | McpToolRef::All { server } => server,
        }
    }
}

/// A header or query value: a plain string, or a stored secret's value (read when each request is
/// sent) after an optional prefix, e.g. `{"secret": "api_token", "prefix": "Bearer "}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ValueSource {
    Plain(String),
    Secret(SecretRef),
}

/// A reference to a stored secret (`PUT /v1/secrets/{name}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    /// The secret's name.
    #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")]
    pub secret: String,
    /// Text sent before the value (`"Bearer "`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// By hand rather than `untagged`, so that a wrong value is told what is expected.
impl<'de> Deserialize<'de> for ValueSource {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Source;
        impl<'de> serde::de::Visitor<'de> for Source {
            type Value = ValueSource;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a secret reference ({\"secret\": \"name\", \"prefix\": \"...\"})")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ValueSource, E> {
                Ok(ValueSource::Plain(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<ValueSource, E> {
                Ok(ValueSource::Plain(text))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ValueSource, A::Error> {
                SecretRef::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ValueSource::Secret)
            }
        }
        deserializer.deserialize_any(Source)
    }
}

impl utoipa::PartialSchema for ValueSource {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Ref, Type};
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(Ref::from_schema_name("SecretRef"))
            .description(Some("A plain string, or a stored secret's value after an optional prefix."))
            .into()
    }
}

impl utoipa::ToSchema for ValueSource {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push(("SecretRef".into(), SecretRef::schema()));
    }
}

impl CrewSpec {
    /// Every secret the crew references, with where (`tools[0].http.headers.Authorization`).
    pub fn secret_refs(&self) -> Vec<(String, &SecretRef)> {
        let mut refs = Vec::new();
        for (i, server) in self.mcp_servers.iter().enumerate() {
            for (name, value) in &server.headers {
                if let ValueSource::Secret(reference) = value {
                    refs.push((format!("mcp_servers[{i}].headers.{name}"), reference));
                }
            }
        }
        for (i, tool) in self.tools.iter().enumerate() {
            for (part, values) in [("headers", &tool.http.headers), ("query", &tool.http.query)] {
                for (name, value) in values {
                    if let ValueSource::Secret(reference) = value {
                        refs.push((format!("tools[{i}].http.{part}.{name}"), reference));
                    }
                }
            }
        }
        refs
    }
}

fn default_timeout_ms() -> u64 {
    10_000
}

/// The HTTP method of a tool call: arguments go in the query for GET, as a JSON body for POST.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    #[default]
    Post,
}

impl CrewSpec {
    /// What the crew does: its `description`, or a sentence made from its tasks.
    pub fn summary(&self) -> String {
        if let Some(description) = &self.description {
            return description.clone();
        }
        let tasks: Vec<&str> = self.tasks.iter().map(|task| task.name.as_str()).collect();
        let whole = self.tasks.first().map(|task| task.description.trim()).unwrap_or_default();
        let mut first: String = whole.chars().take(500).collect();
        if first.len() < whole.len() {
            first.push('…');
        }
        format!("Runs the crew '{}' (tasks: {}). First task: {first}", self.name, tasks.join(", "))
    }

    /// The agent with this name.
    /// Every knowledge base the crew and its agents name, with the path of each reference.
    pub fn knowledge_refs(&self) -> Vec<(String, &KnowledgeRef)> {
        let crew = self.knowledge.iter().enumerate().map(|(i, r)| (format!("knowledge[{i}]"), r));
        let agents = self.agents.iter().enumerate().flat_map(|(a, agent)| {
            agent.knowledge.iter().enumerate().map(move |(i, r)| (format!("agents[{a}].knowledge[{i}]"), r))
        });
        crew.chain(agents).collect()
    }

    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|agent| agent.name == name)
    }
}

/// A registered crew: its newest version, and where its aliases point.
#[derive(Debug, Clone, PartialEq)]
pub struct CrewRecord {
    pub name: String,
    pub spec: CrewSpec,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The number of its newest version (the one `spec` is).
    pub version: i32,
    /// sha256 of the newest version's canonical JSON, hex.
    pub content_hash: String,
    /// Its aliases, by name, and the versions they name.
    pub aliases: std::collections::BTreeMap<String, i32>,
}

/// One immutable version of a registered crew.
#[derive(Debug, Clone, PartialEq)]
pub struct CrewVersion {
    pub name: String,
    pub version: i32,
    pub spec: CrewSpec,
    pub content_hash: String,
    /// The id of the key that stored it, `operator`, or `None` (stored by a release before
    /// versions).
    pub stored_by: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The aliases that name it, sorted.
    pub aliases: Vec<String>,
}

/// An alias of a crew: a name for one of its versions, moved by the tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct CrewAlias {
    pub alias: String,
    pub version: i32,
    pub updated_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The alias a crew's bare name follows when the crew has it (else its newest version).
pub const SERVING_ALIAS: &str = "production";

/// Which version of a registered crew a reference means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionPick {
    /// `name`: the `production` alias's version when there is one, else the newest.
    Serving,
    /// `name@latest`: the newest version.
    Latest,
    /// `name@3`.
    Number(i32),
    /// `name@staging`.
    Alias(String),
}

/// A reference to a registered crew: `name`, `name@<version>`, `name@latest` or `name@<alias>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrewSelector {
    pub name: String,
    pub pick: VersionPick,
}

impl CrewSelector {
    /// Read a reference; the error says what is wrong with it.
    pub fn parse(reference: &str) -> Result<Self, String> {
        let (name, pick) = match reference.split_once('@') {
            None => (reference, VersionPick::Serving),
            Some((name, "latest")) => (name, VersionPick::Latest),
            Some((name, after)) if !after.is_empty() && after.bytes().all(|b| b.is_ascii_digit()) => {
                let number =
                    after.parse::<i32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        format!("version '{after}' must be a number from 1 to {}", i32::MAX)
                    })?;
                (name, VersionPick::Number(number))
            }
            Some((name, alias)) => {
                check_alias_name(alias).map_err(|message| format!("alias '{alias}': {message}"))?;
                (name, VersionPick::Alias(alias.to_owned()))
            }
        };
        super::field::check_crew_name(name)?;
        Ok(Self { name: name.to_owned(), pick })
    }
}

impl std::fmt::Display for CrewSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.pick {
            VersionPick::Serving => write!(f, "{}", self.name),
            VersionPick::Latest => write!(f, "{}@latest", self.name),
            VersionPick::Number(n) => write!(f, "{}@{n}", self.name),
            VersionPick::Alias(alias) => write!(f, "{}@{alias}", self.name),
        }
    }
}

/// Is `alias` a valid alias name? A crew name's characters, not all digits (that is a version
/// number) and not `latest` (the newest version's built-in name).
pub fn check_alias_name(alias: &str) -> Result<(), String> {
    super::field::check_crew_name(alias)?;
    if alias.bytes().all(|b| b.is_ascii_digit()) {
        return Err("must not be all digits (that names a version)".to_owned());
    }
    if alias == "latest" {
        return Err("'latest' always names the newest version and cannot be set".to_owned());
    }
    Ok(())
}

/// Whether a `PUT` made a new crew or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpsertOutcome {
    Created,
    Replaced,
}

#[cfg(test)]
mod selector_tests {
    use super::{check_alias_name, CrewSelector, VersionPick};

    fn pick(reference: &str) -> Result<VersionPick, String> {
        CrewSelector::parse(reference).map(|selector| selector.pick)
    }

    #[test]
    fn references_name_the_serving_latest_numbered_or_aliased_version() {
        assert_eq!(pick("research"), Ok(VersionPick::Serving));
        assert_eq!(pick("research@latest"), Ok(VersionPick::Latest));
        assert_eq!(pick("research@12"), Ok(VersionPick::Number(12)));
        assert_eq!(pick("research@staging"), Ok(VersionPick::Alias("staging".into())));
        assert_eq!(pick("re.search@v2"), Ok(VersionPick::Alias("v2".into())));
        let selector = CrewSelector::parse("research@staging").expect("selector");
        assert_eq!(selector.name, "research");
        assert_eq!(selector.to_string(), "research@staging");
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        for (reference, says) in [
            ("research@0", "from 1"),
            ("research@99999999999", "from 1"),
            ("research@", "1 to 100"),
            ("@staging", "1 to 100"),
            ("research@a@b", "letters"),
            ("research@sta ging", "letters"),
            ("bad name@1", "letters"),
        ] {
            let error = CrewSelector::parse(reference).expect_err(reference);
            assert!(error.contains(says), "{reference}: {error}");
        }
    }

    #[test]
    fn aliases_are_names_that_are_not_versions() {
        assert!(check_alias_name("production").is_ok());
        assert!(check_alias_name("canary-2").is_ok());
        assert!(check_alias_name("42").is_err());
        assert!(check_alias_name("latest").is_err());
        assert!(check_alias_name("..").is_err());
    }
}

//! The crew spec: CrewAI's agents, tasks and tools as JSON. These types are what a client sends
//! and what a run snapshots; their rules live in [`super::validate`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Default `max_iter` of an agent, as in CrewAI.
pub const DEFAULT_MAX_ITER: u32 = 20;

/// The provider a bare model name (`"gpt-4o-mini"`, no `provider/`) belongs to.
pub const DEFAULT_PROVIDER: &str = "openai";

/// A crew: agents, the tasks they perform and the tools they may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CrewSpec {
    /// The crew's name (letters, digits, `-`, `_`, `.`; at most 100 characters).
    pub name: String,
    #[serde(default)]
    pub process: Process,
    pub agents: Vec<AgentSpec>,
    pub tasks: Vec<TaskSpec>,
    /// Tools declared by the crew (HTTP tools), usable beside the built-ins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Crew-wide requests-per-minute limit; overrides the agents' `max_rpm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub max_rpm: Option<u32>,
    /// The manager's model for the hierarchical process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_llm: Option<LlmSpec>,
    /// Plan each task into steps before performing it (sequential process).
    #[serde(default)]
    pub planning: bool,
    /// The planner's model (the agent's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_llm: Option<LlmSpec>,
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
    pub name: String,
    pub role: String,
    pub goal: String,
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
    #[schema(minimum = 1)]
    pub max_rpm: Option<u32>,
    #[serde(default)]
    pub tool_calling: ToolCalling,
    #[serde(default)]
    pub allow_delegation: bool,
}

fn default_max_iter() -> u32 {
    DEFAULT_MAX_ITER
}

/// A model reference: `"provider/model"`, a bare model of the default provider, or an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum LlmSpec {
    Model(String),
    Detailed(LlmOptions),
}

/// A model with sampling options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmOptions {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    pub name: String,
    pub description: String,
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
    pub max_step_iterations: Option<u32>,
    /// With planning: seconds a step may take; past it the step returns what it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_timeout_s: Option<u32>,
    /// A sentence the answer must satisfy, checked by the model (JSON shape: `output_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<String>,
    /// Redos a failed guardrail allows (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail_max_retries: Option<u32>,
}

/// A tool declared by the crew: an HTTP endpoint the agents may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments (`"type": "object"`; 2020-12 unless `$schema` says
    /// otherwise; `$ref`s resolve inside it only).
    #[schema(value_type = Object)]
    pub parameters: Value,
    pub http: HttpToolSpec,
    /// The tool's result becomes the task's final answer.
    #[serde(default)]
    pub result_as_answer: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_usage_count: Option<u32>,
    /// Cache results per run, keyed by arguments.
    #[serde(default = "default_true")]
    pub cache: bool,
    /// Safe to call again after a crash interrupted a call (default: true for GET, false for
    /// POST).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
}

impl ToolSpec {
    /// Whether an interrupted call may be repeated: as declared, else only for GET.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent.unwrap_or(self.http.method == HttpMethod::Get)
    }
}

fn default_true() -> bool {
    true
}

/// Where an HTTP tool sends its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpToolSpec {
    pub url: String,
    #[serde(default)]
    pub method: HttpMethod,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
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
    /// The agent with this name.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|agent| agent.name == name)
    }
}

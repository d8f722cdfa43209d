//! Assembling the agents of a run: the [`AgentTurn`] of a task's agent (its model, tools,
//! delegation tools, rate limits, prompts with the task's context, guardrail and plan options) or
//! of the hierarchical process's manager, from the crew spec, the kickoff's inputs and the
//! engine's models and tools.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::knowledge::{self, KnowledgeSource, SearchKnowledge};
use super::mcp::McpRun;
use super::memory::MemorySource;
use super::prompts;
use super::schemas::RunSchemas;
use super::toolbox::{DelegateMode, Runner, ToolEntry, Toolbox};
use super::turn::{
    AgentTurn, Guardrail, PlanOptions, Style, DEFAULT_GUARDRAIL_RETRIES, DEFAULT_MAX_STEP_ITERATIONS,
};
use super::EngineError;
use crate::domain::crew::{AgentSpec, CrewSpec, LlmSpec, Process, TaskSpec, ToolCalling};
use crate::domain::interpolate::interpolate;
use crate::domain::TenantId;
use crate::domain::{ErrorKind, TaskOutput};
use crate::llm::{provider_key, LlmRegistry, ResolvedModel};
use crate::ratelimit::Limit;
use crate::tools::http::{HttpTool, Outbound};
use crate::tools::secrets::SecretSource;
use crate::tools::{Tool, SEARCH_KNOWLEDGE};

/// The name the manager of the hierarchical process goes by in events and the journal.
pub(super) const MANAGER: &str = "manager";

/// What a run's turns are made from: the engine's models and tools, the crew and the inputs.
pub(super) struct Assembler<'a> {
    pub llms: &'a LlmRegistry,
    pub builtins: &'a [Arc<dyn Tool>],
    pub outbound: &'a Arc<Outbound>,
    pub secrets: &'a Arc<dyn SecretSource>,
    /// The crew's MCP servers and the tools they offer.
    pub mcp: &'a McpRun,
    pub crew: &'a CrewSpec,
    pub inputs: &'a Map<String, Value>,
    /// The prefix of this execution's rate-limit keys.
    pub rate_key: &'a str,
    /// The run's schemas, compiled once.
    pub schemas: &'a RunSchemas,
    /// Where the run's knowledge bases are searched (none: the server has no knowledge).
    pub knowledge: Option<&'a Arc<dyn KnowledgeSource>>,
    /// Where the run's memories are recalled (none: the server has no memory).
    pub memory: Option<&'a Arc<dyn MemorySource>>,
    /// The run's tenant, whose knowledge bases it searches.
    pub tenant: &'a TenantId,
    /// Its thread's history, which the crew's first task sees before any other context.
    pub history: Option<&'a str>,
}

impl Assembler<'_> {
    /// `text` with the run's inputs in its placeholders.
    pub fn fill(&self, text: &str) -> String {
        interpolate(text, self.inputs)
    }

    /// What `task` is given as its context: the outputs of its `context` tasks (among those
    /// `finished`), after its thread's history when it is the crew's first task.
    fn context(&self, task: &TaskSpec, finished: &[(String, TaskOutput)]) -> Option<String> {
        let outputs = context_of(task, finished);
        let first = self.crew.tasks.first().is_some_and(|t| t.name == task.name);
        match (self.history.filter(|_| first), outputs) {
            (Some(history), Some(outputs)) => Some(format!("{history}\n\n{outputs}")),
            (Some(history), None) => Some(history.to_owned()),
            (None, outputs) => outputs,
        }
    }

    /// The run's memory scope: the crew's, interpolated.
    pub fn memory_scope(&self, memory: &crate::domain::memory::MemorySpec) -> String {
        self.fill(&memory.scope)
    }

    /// The turn that performs `task`, seeing the `finished` tasks' outputs: its agent's
    /// (sequential) or the manager's (hierarchical).
    pub fn performer(
        &self,
        task: &TaskSpec,
        finished: &[(String, TaskOutput)],
    ) -> Result<AgentTurn, EngineError> {
        if self.crew.process == Process::Hierarchical {
            return self.manager_turn(task, finished);
        }
        let agent_name = task.agent.as_deref().unwrap_or_default();
        let agent = self.crew.agent(agent_name).ok_or_else(|| {
            EngineError::failed(ErrorKind::Internal, format!("task '{}' names no known agent", task.name))
        })?;
        self.turn(task, agent, finished)
    }

    /// The turn of `agent` on `task`, with its model, tools and prompts.
    pub fn turn(
        &self,
        task: &TaskSpec,
        agent: &AgentSpec,
        finished: &[(String, TaskOutput)],
    ) -> Result<AgentTurn, EngineError> {
        let fill = |text: &str| interpolate(text, self.inputs);
        let model = self.resolve(agent.llm.as_ref())?;
        let mut entries = self.tool_entries(task, task.tools.as_ref().unwrap_or(&agent.tools))?;
        if agent.allow_delegation {
            entries.extend(delegation_tools(
                self.crew.agents.iter().filter(|a| a.name != agent.name),
                self.inputs,
                self.schemas,
            )?);
        }
        let toolbox = Toolbox::new(entries);
        let style = match agent.tool_calling {
            ToolCalling::Native => Style::Native,
            ToolCalling::React => Style::React,
            ToolCalling::Auto if model.native_tools => Style::Native,
            ToolCalling::Auto => Style::React,
        };
        let (temperature, max_tokens) = llm_options(agent.llm.as_ref());
        let limits = self.rate_limits(Some(agent), &model);
        let plan = self.plan_options(task, &model)?;
        let context = self.context(task, finished);
        let task_prompt = prompts::task_prompt(
            &fill(&task.description),
            &fill(&task.expected_output),
            context.as_deref(),
            false,
        );
        Ok(AgentTurn {
            conversation: super::keys::task(&task.name),
            task: task.name.clone(),
            agent: agent.name.clone(),
            model,
            temperature,
            max_tokens,
            toolbox,
            style,
            max_iter: agent.max_iter,
            limits,
            output_schema: self.schemas.output(task)?,
            guardrail: guardrail_of(task),
            plan,
            identity: prompts::role_playing(&fill(&agent.role), &fill(&agent.goal), &fill(&agent.backstory)),
            task_prompt,
        })
    }

    /// The manager of the hierarchical process on `task`: it delegates to the crew's agents.
    fn manager_turn(
        &self,
        task: &TaskSpec,
        finished: &[(String, TaskOutput)],
    ) -> Result<AgentTurn, EngineError> {
        let model = self.resolve(self.crew.manager_llm.as_ref())?;
        let style = if model.native_tools { Style::Native } else { Style::React };
        let (temperature, max_tokens) = llm_options(self.crew.manager_llm.as_ref());
        let limits = self.rate_limits(None, &model);
        let fill = |text: &str| interpolate(text, self.inputs);
        let context = self.context(task, finished);
        Ok(AgentTurn {
            conversation: super::keys::task(&task.name),
            task: task.name.clone(),
            agent: MANAGER.to_owned(),
            model,
            temperature,
            max_tokens,
            toolbox: Toolbox::new(delegation_tools(self.crew.agents.iter(), self.inputs, self.schemas)?),
            style,
            max_iter: crate::domain::crew::DEFAULT_MAX_ITER,
            limits,
            output_schema: self.schemas.output(task)?,
            guardrail: guardrail_of(task),
            plan: None,
            identity: prompts::role_playing(
                prompts::MANAGER_ROLE,
                prompts::MANAGER_GOAL,
                prompts::MANAGER_BACKSTORY,
            ),
            task_prompt: prompts::task_prompt(
                &fill(&task.description),
                &fill(&task.expected_output),
                context.as_deref(),
                false,
            ),
        })
    }

    /// The model a reference names (the default model when there is none).
    fn resolve(&self, llm: Option<&LlmSpec>) -> Result<ResolvedModel, EngineError> {
        self.llms
            .resolve(llm.map(LlmSpec::model))
            .map_err(|e| EngineError::failed(ErrorKind::LlmError, e.message))
    }

    /// How `task` is planned, when the crew plans: the planner (`planning_llm`, else the agent's
    /// model) and the step limits.
    fn plan_options(
        &self,
        task: &TaskSpec,
        agent_model: &ResolvedModel,
    ) -> Result<Option<PlanOptions>, EngineError> {
        if !self.crew.planning {
            return Ok(None);
        }
        let planner = match &self.crew.planning_llm {
            Some(llm) => self.resolve(Some(llm))?,
            None => agent_model.clone(),
        };
        Ok(Some(PlanOptions {
            planner,
            max_step_iterations: task.max_step_iterations.unwrap_or(DEFAULT_MAX_STEP_ITERATIONS),
            step_timeout: task.step_timeout_s.map(|s| std::time::Duration::from_secs(u64::from(s))),
        }))
    }

    /// The named tools: built-ins, the crew's HTTP tools (with the crew's options) and MCP tools.
    fn tool_entries(&self, task: &TaskSpec, names: &[String]) -> Result<Vec<ToolEntry>, EngineError> {
        let mut entries = Vec::new();
        for name in names {
            if name == SEARCH_KNOWLEDGE {
                if let Some(source) = self.knowledge {
                    let bases = knowledge::bases_of(self.crew, task);
                    let tool: Arc<dyn Tool> =
                        Arc::new(SearchKnowledge::new(source.clone(), self.tenant, bases));
                    entries.push(ToolEntry {
                        requires_approval: self.crew.requires_approval.contains(name),
                        ..ToolEntry::plain(tool, SearchKnowledge::schema())
                    });
                }
            } else if let Some(mcp) = self.mcp.entries(name) {
                entries.extend(mcp);
            } else if let Some(spec) = self.crew.tools.iter().find(|t| &t.name == name) {
                let tool: Arc<dyn Tool> =
                    Arc::new(HttpTool::new(spec, self.outbound.clone(), self.secrets.clone()));
                entries.push(ToolEntry {
                    result_as_answer: spec.result_as_answer,
                    max_usage_count: spec.max_usage_count,
                    cache: spec.cache,
                    requires_approval: spec.requires_approval,
                    ..ToolEntry::plain(tool, self.schemas.tool(name)?)
                });
            } else if let Some(tool) = self.builtins.iter().find(|t| &t.info().name == name) {
                entries.push(ToolEntry {
                    requires_approval: self.crew.requires_approval.contains(name),
                    ..ToolEntry::plain(tool.clone(), self.schemas.tool(name)?)
                });
            }
        }
        Ok(entries)
    }

    /// The gates an agent's LLM calls pass: the crew's `max_rpm` (which overrides the agents', as
    /// in CrewAI) or the agent's, and the provider's 429 holds (its budget is booked apart, on the
    /// schedule shared by the cluster).
    fn rate_limits(&self, agent: Option<&AgentSpec>, model: &ResolvedModel) -> Vec<Limit> {
        let mut limits = Vec::new();
        match (self.crew.max_rpm, agent.and_then(|a| a.max_rpm.map(|rpm| (a, rpm)))) {
            (Some(rpm), _) => limits.push(Limit::new(format!("{}crew", self.rate_key), rpm)),
            (None, Some((agent, rpm))) => {
                limits.push(Limit::new(format!("{}agent:{}", self.rate_key, agent.name), rpm))
            }
            (None, None) => {}
        }
        limits.push(Limit::holds_only(provider_key(&model.provider)));
        limits
    }
}

/// A task's guardrail, with its retry budget.
fn guardrail_of(task: &TaskSpec) -> Option<Guardrail> {
    let max_retries = task.guardrail_max_retries.unwrap_or(DEFAULT_GUARDRAIL_RETRIES);
    task.guardrail.as_ref().map(|rule| Guardrail { rule: rule.clone(), max_retries })
}

/// Temperature and token limit of a model reference.
fn llm_options(llm: Option<&LlmSpec>) -> (Option<f64>, Option<u32>) {
    match llm {
        Some(LlmSpec::Detailed(options)) => (options.temperature, options.max_tokens),
        _ => (None, None),
    }
}

/// The two delegation tools over `coworkers`.
fn delegation_tools<'a>(
    coworkers: impl Iterator<Item = &'a AgentSpec>,
    inputs: &Map<String, Value>,
    schemas: &RunSchemas,
) -> Result<Vec<ToolEntry>, EngineError> {
    let roles: Vec<String> = coworkers.map(|a| interpolate(&a.role, inputs)).collect();
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    let list = roles.join(", ");
    [DelegateMode::Work, DelegateMode::Question]
        .into_iter()
        .map(|mode| {
            Ok(ToolEntry {
                info: prompts::delegation_tool(mode, &list),
                arguments: schemas.delegation(mode)?,
                runner: Runner::Delegate(mode),
                result_as_answer: false,
                max_usage_count: None,
                cache: false,
                requires_approval: false,
            })
        })
        .collect()
}

/// The outputs a task sees: those of its `context` tasks, else of every earlier task.
fn context_of(task: &TaskSpec, outputs: &[(String, TaskOutput)]) -> Option<String> {
    let chosen: Vec<(&str, &str)> = outputs
        .iter()
        .filter(|(name, _)| task.context.as_ref().is_none_or(|names| names.contains(name)))
        .map(|(name, output)| (name.as_str(), output.raw.as_str()))
        .collect();
    (!chosen.is_empty()).then(|| prompts::context_block(&chosen))
}

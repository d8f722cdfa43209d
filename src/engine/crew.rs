//! The crew process: which agent performs which task with which context, in order, and how the
//! run ends. Sequential: each task by its agent, seeing the outputs of its `context` tasks (all
//! earlier ones by default). Hierarchical: a manager agent performs every task by delegating to
//! the crew's agents.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::agent::{AgentTurn, Style};
use super::journal::{Journal, RunChange, Step, TaskChange};
use super::prompts;
use super::toolbox::{RunTools, ToolEntry, Toolbox};
use super::{Context, EngineError};
use crate::domain::crew::{AgentSpec, CrewSpec, LlmSpec, Process, TaskSpec, ToolCalling};
use crate::domain::interpolate::interpolate;
use crate::domain::{ErrorKind, EventType, RunError, TaskOutput, TaskStatus};
use crate::llm::LlmRegistry;
use crate::tools::http::{HttpTool, Outbound};
use crate::tools::{builtin, Tool};

/// Executes runs. One per process, shared by every worker.
pub struct Engine {
    llms: LlmRegistry,
    builtins: Vec<Arc<dyn Tool>>,
    outbound: Arc<Outbound>,
}

/// The kickoff's inputs and the outputs of finished tasks, by task name.
struct RunData<'a> {
    crew: &'a CrewSpec,
    inputs: &'a Map<String, Value>,
    outputs: Vec<(String, TaskOutput)>,
}

impl Engine {
    pub fn new(llms: LlmRegistry, outbound: Arc<Outbound>) -> Self {
        let builtins = builtin::instantiate(outbound.clone());
        Self { llms, builtins, outbound }
    }

    /// Add in-process tools, usable by name like the built-ins (for embedding and tests).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.builtins.extend(tools);
        self
    }

    /// Execute (or continue) a run to its end. On success or task failure the run's end is
    /// journaled here; on cancellation or a lost lease the caller decides.
    #[tracing::instrument(skip_all, fields(crew = %crew.name), err)]
    pub async fn run(
        &self,
        crew: &CrewSpec,
        inputs: &Map<String, Value>,
        journal: &dyn Journal,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let snapshot = journal.load().await?;
        let tools = RunTools::from_snapshot(&snapshot);
        let ctx = Context { journal, snapshot: &snapshot, tools: &tools, cancel };
        let mut pending = Step::default();
        let mut data = RunData { crew, inputs, outputs: Vec::new() };
        let result = match crew.process {
            Process::Sequential | Process::Hierarchical => {
                self.sequential(&mut data, &ctx, &mut pending).await
            }
        };
        match &result {
            Ok(output) => {
                pending.event(EventType::RunCompleted, None, None, json!({"output": output.raw}));
                pending.run = Some(RunChange::Completed { output: output.clone() });
            }
            Err(EngineError::Failed { kind, message }) => {
                let error = RunError { kind: *kind, message: message.clone() };
                pending.event(EventType::RunFailed, None, None, json!({"error": error}));
                pending.run = Some(RunChange::Failed { error });
            }
            Err(_) => return result,
        }
        ctx.commit(&mut pending).await?;
        result
    }

    async fn sequential(
        &self,
        data: &mut RunData<'_>,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<TaskOutput, EngineError> {
        let mut last = None;
        for task in &data.crew.tasks {
            let record = ctx.snapshot.tasks.iter().find(|t| t.name == task.name);
            if let Some(output) =
                record.filter(|t| t.status == TaskStatus::Completed).and_then(|t| t.output.clone())
            {
                data.outputs.push((task.name.clone(), output.clone()));
                last = Some(output);
                continue;
            }
            let agent_name = task.agent.as_deref().unwrap_or_default();
            let agent = data.crew.agent(agent_name).ok_or_else(|| {
                EngineError::failed(ErrorKind::Internal, format!("task '{}' names no known agent", task.name))
            })?;
            if record.is_none_or(|t| t.status == TaskStatus::Pending) {
                pending.tasks.push(TaskChange::Started { task: task.name.clone() });
                let event = json!({"task": task.name, "agent": agent.name});
                pending.event(EventType::TaskStarted, Some(&task.name), Some(&agent.name), event);
            }
            let output = self.perform(data, task, agent, ctx, pending).await?;
            data.outputs.push((task.name.clone(), output.clone()));
            last = Some(output);
        }
        last.ok_or_else(|| EngineError::failed(ErrorKind::Internal, "the crew has no tasks"))
    }

    /// One task by one agent, journaling its end.
    async fn perform(
        &self,
        data: &RunData<'_>,
        task: &TaskSpec,
        agent: &AgentSpec,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<TaskOutput, EngineError> {
        let result = match self.turn(data, task, agent) {
            Ok(turn) => turn.execute(ctx, pending).await,
            Err(error) => Err(error),
        };
        match result {
            Ok(output) => {
                let event = json!({"task": task.name, "output": output.raw});
                pending.event(EventType::TaskCompleted, Some(&task.name), Some(&agent.name), event);
                pending.tasks.push(TaskChange::Completed { task: task.name.clone(), output: output.clone() });
                Ok(output)
            }
            Err(EngineError::Failed { kind, message }) => {
                let event = json!({"task": task.name, "error": message});
                pending.event(EventType::TaskFailed, Some(&task.name), Some(&agent.name), event);
                pending.tasks.push(TaskChange::Failed { task: task.name.clone(), error: message.clone() });
                Err(EngineError::Failed { kind, message })
            }
            Err(other) => Err(other),
        }
    }

    /// The agent loop of `agent` on `task`, with its model, tools and prompts.
    fn turn(&self, data: &RunData<'_>, task: &TaskSpec, agent: &AgentSpec) -> Result<AgentTurn, EngineError> {
        let fill = |text: &str| interpolate(text, data.inputs);
        let model = self
            .llms
            .resolve(agent.llm.as_ref().map(LlmSpec::model))
            .map_err(|e| EngineError::failed(ErrorKind::LlmError, e.message))?;
        let toolbox = self.toolbox(data.crew, task.tools.as_ref().unwrap_or(&agent.tools));
        let style = match agent.tool_calling {
            ToolCalling::Native => Style::Native,
            ToolCalling::React => Style::React,
            ToolCalling::Auto if model.native_tools => Style::Native,
            ToolCalling::Auto => Style::React,
        };
        let (temperature, max_tokens) = match &agent.llm {
            Some(LlmSpec::Detailed(options)) => (options.temperature, options.max_tokens),
            _ => (None, None),
        };
        let context = context_of(task, &data.outputs);
        let task_prompt = prompts::task_prompt(
            &fill(&task.description),
            &fill(&task.expected_output),
            context.as_deref(),
            false,
        );
        Ok(AgentTurn {
            conversation: task.name.clone(),
            task: task.name.clone(),
            agent: agent.name.clone(),
            model,
            temperature,
            max_tokens,
            toolbox,
            style,
            max_iter: agent.max_iter,
            output_schema: task.output_schema.clone(),
            identity: prompts::role_playing(&fill(&agent.role), &fill(&agent.goal), &fill(&agent.backstory)),
            task_prompt,
        })
    }

    /// The named tools: built-ins and the crew's HTTP tools, with the crew's options.
    fn toolbox(&self, crew: &CrewSpec, names: &[String]) -> Toolbox {
        let entries = names
            .iter()
            .filter_map(|name| {
                if let Some(spec) = crew.tools.iter().find(|t| &t.name == name) {
                    let tool: Arc<dyn Tool> = Arc::new(HttpTool::new(spec, self.outbound.clone()));
                    return Some(ToolEntry {
                        tool,
                        result_as_answer: spec.result_as_answer,
                        max_usage_count: spec.max_usage_count,
                        cache: spec.cache,
                    });
                }
                self.builtins.iter().find(|t| &t.info().name == name).cloned().map(ToolEntry::plain)
            })
            .collect();
        Toolbox::new(entries)
    }
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

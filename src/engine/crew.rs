//! The crew process: which agent performs which task with which context, in order, and how the
//! run ends. Sequential: each task by its agent, seeing the outputs of its `context` tasks (all
//! earlier ones by default). Hierarchical: a manager agent performs every task by delegating to
//! the crew's agents.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::agent::{AgentTurn, Style};
use super::guardrail::{Guardrail, DEFAULT_GUARDRAIL_RETRIES};
use super::journal::{Journal, RunChange, Snapshot, Step, TaskChange, TaskRecord};
use super::plan::{PlanOptions, DEFAULT_MAX_STEP_ITERATIONS};
use super::prompts;
use super::toolbox::{DelegateMode, RunTools, Runner, ToolEntry, Toolbox};
use super::{Context, Coworkers, DelegationFuture, EngineError};
use crate::domain::crew::{AgentSpec, CrewSpec, LlmSpec, Process, TaskSpec, ToolCalling};
use crate::domain::interpolate::interpolate;
use crate::domain::{ErrorKind, EventType, RunError, TaskOutput, TaskStatus};
use crate::llm::{provider_key, LlmRegistry, ResolvedModel};
use crate::metrics::Metrics;
use crate::ratelimit::{Limit, RateLimiter};
use crate::tools::http::{HttpTool, Outbound};
use crate::tools::{builtin, Tool};

/// Executes runs. One per process, shared by every worker.
pub struct Engine {
    llms: LlmRegistry,
    builtins: Vec<Arc<dyn Tool>>,
    outbound: Arc<Outbound>,
    limiter: Arc<RateLimiter>,
    metrics: Arc<Metrics>,
}

/// The kickoff's inputs and the outputs of finished tasks, by task name.
struct RunData<'a> {
    crew: &'a CrewSpec,
    inputs: &'a Map<String, Value>,
    outputs: Vec<(String, TaskOutput)>,
    /// The prefix of this execution's rate-limit keys.
    rate_key: &'a str,
}

impl Engine {
    pub fn new(llms: LlmRegistry, outbound: Arc<Outbound>) -> Self {
        let builtins = builtin::instantiate(outbound.clone());
        let (limiter, metrics) = (Arc::new(RateLimiter::default()), Arc::new(Metrics::default()));
        Self { llms, builtins, outbound, limiter, metrics }
    }

    /// Record LLM and tool latencies in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Where the engine records its metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Share `limiter` (the one the LLM clients report 429s to).
    pub fn with_rate_limiter(mut self, limiter: Arc<RateLimiter>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Add in-process tools, usable by name like the built-ins (for embedding and tests).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.builtins.extend(tools);
        self
    }

    /// Execute (or continue) a run to its end. On success or task failure the run's end is
    /// journaled here; on cancellation or a lost lease the caller decides.
    pub async fn run(
        &self,
        crew: &CrewSpec,
        inputs: &Map<String, Value>,
        journal: &dyn Journal,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let snapshot = journal.load().await?;
        self.run_from(crew, inputs, journal, snapshot, cancel).await
    }

    /// [`Engine::run`] for a run's first attempt: nothing can be journaled yet, so the journal is
    /// not read (its tasks are all pending).
    pub async fn run_first_attempt(
        &self,
        crew: &CrewSpec,
        inputs: &Map<String, Value>,
        journal: &dyn Journal,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let tasks = crew
            .tasks
            .iter()
            .map(|task| TaskRecord { name: task.name.clone(), status: TaskStatus::Pending, output: None })
            .collect();
        self.run_from(crew, inputs, journal, Snapshot { tasks, ..Snapshot::default() }, cancel).await
    }

    #[tracing::instrument(skip_all, fields(crew = %crew.name), err)]
    async fn run_from(
        &self,
        crew: &CrewSpec,
        inputs: &Map<String, Value>,
        journal: &dyn Journal,
        snapshot: Snapshot,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let tools = RunTools::from_snapshot(&snapshot);
        let rate_key = format!("run-{}:", uuid::Uuid::now_v7().simple());
        let team = Team { engine: self, crew, inputs, rate_key: &rate_key };
        let (limiter, metrics) = (self.limiter.as_ref(), self.metrics.as_ref());
        let coworkers = Some(&team as &dyn Coworkers);
        let ctx =
            Context { journal, snapshot: &snapshot, tools: &tools, cancel, coworkers, limiter, metrics };
        let mut pending = Step::default();
        let mut data = RunData { crew, inputs, outputs: Vec::new(), rate_key: &rate_key };
        let result = self.perform_tasks(&mut data, &ctx, &mut pending).await;
        self.limiter.forget(&rate_key);
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
            Err(EngineError::AwaitingInput) => {}
            Err(_) => return result,
        }
        ctx.commit(&mut pending).await?;
        result
    }

    /// Every task in order, skipping those the journal shows finished. Consecutive
    /// `async_execution` tasks run together; the next task without it first waits for them (their
    /// outputs become context in task order).
    async fn perform_tasks(
        &self,
        data: &mut RunData<'_>,
        ctx: &Context<'_>,
        pending: &mut Step,
    ) -> Result<TaskOutput, EngineError> {
        let crew = data.crew;
        let mut outputs: Vec<Option<TaskOutput>> = vec![None; crew.tasks.len()];
        let mut running: Vec<(usize, TaskFuture<'_>)> = Vec::new();
        for (index, task) in crew.tasks.iter().enumerate() {
            let record = ctx.snapshot.tasks.iter().find(|t| t.name == task.name);
            if let Some(output) =
                record.filter(|t| t.status == TaskStatus::Completed).and_then(|t| t.output.clone())
            {
                outputs[index] = Some(output);
                data.outputs = ordered_outputs(crew, &outputs);
                continue;
            }
            if !task.async_execution {
                settle(&mut running, &mut outputs, ctx, pending).await?;
                data.outputs = ordered_outputs(crew, &outputs);
            }
            let performer = self.performer(data, task);
            let agent = match (&performer, &task.agent) {
                (Ok(turn), _) => turn.agent.clone(),
                (Err(_), Some(agent)) => agent.clone(),
                (Err(_), None) => MANAGER.to_owned(),
            };
            let fresh = record.is_none_or(|t| t.status == TaskStatus::Pending);
            if task.async_execution {
                running.push((index, Box::pin(perform_alone(performer, task, agent, fresh, ctx))));
                continue;
            }
            if fresh {
                start(task, &agent, pending);
            }
            outputs[index] = Some(perform(performer, task, &agent, ctx, pending).await?);
            data.outputs = ordered_outputs(crew, &outputs);
        }
        settle(&mut running, &mut outputs, ctx, pending).await?;
        outputs
            .into_iter()
            .next_back()
            .flatten()
            .ok_or_else(|| EngineError::failed(ErrorKind::Internal, "the crew has no tasks"))
    }

    /// The loop that performs `task`: its agent's (sequential) or the manager's (hierarchical).
    fn performer(&self, data: &RunData<'_>, task: &TaskSpec) -> Result<AgentTurn, EngineError> {
        if data.crew.process == Process::Hierarchical {
            return self.manager_turn(data, task);
        }
        let agent_name = task.agent.as_deref().unwrap_or_default();
        let agent = data.crew.agent(agent_name).ok_or_else(|| {
            EngineError::failed(ErrorKind::Internal, format!("task '{}' names no known agent", task.name))
        })?;
        self.turn(data, task, agent)
    }

    /// The agent loop of `agent` on `task`, with its model, tools and prompts.
    fn turn(&self, data: &RunData<'_>, task: &TaskSpec, agent: &AgentSpec) -> Result<AgentTurn, EngineError> {
        let fill = |text: &str| interpolate(text, data.inputs);
        let model = self
            .llms
            .resolve(agent.llm.as_ref().map(LlmSpec::model))
            .map_err(|e| EngineError::failed(ErrorKind::LlmError, e.message))?;
        let mut entries = self.tool_entries(data.crew, task.tools.as_ref().unwrap_or(&agent.tools));
        if agent.allow_delegation {
            entries.extend(delegation_tools(
                data.crew.agents.iter().filter(|a| a.name != agent.name),
                data.inputs,
            ));
        }
        let toolbox = Toolbox::new(entries);
        let style = match agent.tool_calling {
            ToolCalling::Native => Style::Native,
            ToolCalling::React => Style::React,
            ToolCalling::Auto if model.native_tools => Style::Native,
            ToolCalling::Auto => Style::React,
        };
        let (temperature, max_tokens) = llm_options(agent.llm.as_ref());
        let limits = rate_limits(data, Some(agent), &model);
        let model_for_plan = model.clone();
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
            limits,
            output_schema: task.output_schema.clone(),
            guardrail: guardrail_of(task),
            plan: self.plan_options(data, task, &model_for_plan)?,
            identity: prompts::role_playing(&fill(&agent.role), &fill(&agent.goal), &fill(&agent.backstory)),
            task_prompt,
        })
    }

    /// How `task` is planned, when the crew plans: the planner (`planning_llm`, else the agent's
    /// model) and the step limits.
    fn plan_options(
        &self,
        data: &RunData<'_>,
        task: &TaskSpec,
        agent_model: &ResolvedModel,
    ) -> Result<Option<PlanOptions>, EngineError> {
        if !data.crew.planning {
            return Ok(None);
        }
        let planner = match &data.crew.planning_llm {
            Some(llm) => self
                .llms
                .resolve(Some(llm.model()))
                .map_err(|e| EngineError::failed(ErrorKind::LlmError, e.message))?,
            None => agent_model.clone(),
        };
        Ok(Some(PlanOptions {
            planner,
            max_step_iterations: task.max_step_iterations.unwrap_or(DEFAULT_MAX_STEP_ITERATIONS),
            step_timeout: task.step_timeout_s.map(|s| std::time::Duration::from_secs(u64::from(s))),
        }))
    }

    /// The manager of the hierarchical process on `task`: it delegates to the crew's agents.
    fn manager_turn(&self, data: &RunData<'_>, task: &TaskSpec) -> Result<AgentTurn, EngineError> {
        let model = self
            .llms
            .resolve(data.crew.manager_llm.as_ref().map(LlmSpec::model))
            .map_err(|e| EngineError::failed(ErrorKind::LlmError, e.message))?;
        let style = if model.native_tools { Style::Native } else { Style::React };
        let (temperature, max_tokens) = llm_options(data.crew.manager_llm.as_ref());
        let limits = rate_limits(data, None, &model);
        let fill = |text: &str| interpolate(text, data.inputs);
        let context = context_of(task, &data.outputs);
        Ok(AgentTurn {
            conversation: task.name.clone(),
            task: task.name.clone(),
            agent: MANAGER.to_owned(),
            model,
            temperature,
            max_tokens,
            toolbox: Toolbox::new(delegation_tools(data.crew.agents.iter(), data.inputs)),
            style,
            max_iter: crate::domain::crew::DEFAULT_MAX_ITER,
            limits,
            output_schema: task.output_schema.clone(),
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

    /// The named tools: built-ins and the crew's HTTP tools, with the crew's options.
    fn tool_entries(&self, crew: &CrewSpec, names: &[String]) -> Vec<ToolEntry> {
        names
            .iter()
            .filter_map(|name| {
                if let Some(spec) = crew.tools.iter().find(|t| &t.name == name) {
                    let tool: Arc<dyn Tool> = Arc::new(HttpTool::new(spec, self.outbound.clone()));
                    return Some(ToolEntry {
                        result_as_answer: spec.result_as_answer,
                        max_usage_count: spec.max_usage_count,
                        cache: spec.cache,
                        ..ToolEntry::plain(tool)
                    });
                }
                self.builtins.iter().find(|t| &t.info().name == name).cloned().map(ToolEntry::plain)
            })
            .collect()
    }
}

/// A task running on its own (`async_execution`).
type TaskFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<TaskOutput, EngineError>> + Send + 'a>>;

/// Journal a task's start.
fn start(task: &TaskSpec, agent: &str, pending: &mut Step) {
    pending.tasks.push(TaskChange::Started { task: task.name.clone() });
    let event = json!({"task": task.name, "agent": agent});
    pending.event(EventType::TaskStarted, Some(&task.name), Some(agent), event);
}

/// Perform an async task with its own journal steps, committing its end itself.
async fn perform_alone(
    performer: Result<AgentTurn, EngineError>,
    task: &TaskSpec,
    agent: String,
    fresh: bool,
    ctx: &Context<'_>,
) -> Result<TaskOutput, EngineError> {
    let mut pending = Step::default();
    if fresh {
        start(task, &agent, &mut pending);
    }
    let result = perform(performer, task, &agent, ctx, &mut pending).await;
    ctx.commit(&mut pending).await?;
    result
}

/// Wait for the running async tasks (after committing what is pending: they call out).
async fn settle(
    running: &mut Vec<(usize, TaskFuture<'_>)>,
    outputs: &mut [Option<TaskOutput>],
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(), EngineError> {
    if running.is_empty() {
        return Ok(());
    }
    ctx.commit(pending).await?;
    let (indices, futures): (Vec<usize>, Vec<TaskFuture<'_>>) = running.drain(..).unzip();
    let results = futures_util::future::join_all(futures).await;
    for (index, result) in indices.into_iter().zip(results) {
        outputs[index] = Some(result?);
    }
    Ok(())
}

/// The finished tasks' outputs in task order.
fn ordered_outputs(crew: &CrewSpec, outputs: &[Option<TaskOutput>]) -> Vec<(String, TaskOutput)> {
    crew.tasks
        .iter()
        .zip(outputs)
        .filter_map(|(task, output)| output.clone().map(|output| (task.name.clone(), output)))
        .collect()
}

/// The name the manager of the hierarchical process goes by in events and the journal.
const MANAGER: &str = "manager";

/// One task by its performer, journaling its end.
async fn perform(
    performer: Result<AgentTurn, EngineError>,
    task: &TaskSpec,
    agent: &str,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    let result = match performer {
        Ok(turn) => turn.execute(ctx, pending).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(output) if task.human_input => {
            let event = json!({"task": task.name, "output": output.raw});
            pending.event(EventType::RunAwaitingInput, Some(&task.name), Some(agent), event);
            pending.tasks.push(TaskChange::AwaitingReview { task: task.name.clone(), output });
            pending.run = Some(RunChange::AwaitingInput);
            Err(EngineError::AwaitingInput)
        }
        Ok(output) => {
            let event = json!({"task": task.name, "output": output.raw});
            pending.event(EventType::TaskCompleted, Some(&task.name), Some(agent), event);
            pending.tasks.push(TaskChange::Completed { task: task.name.clone(), output: output.clone() });
            Ok(output)
        }
        Err(EngineError::Failed { kind, message }) => {
            let event = json!({"task": task.name, "error": message});
            pending.event(EventType::TaskFailed, Some(&task.name), Some(agent), event);
            pending.tasks.push(TaskChange::Failed { task: task.name.clone(), error: message.clone() });
            Err(EngineError::Failed { kind, message })
        }
        Err(other) => Err(other),
    }
}

/// The gates an agent's LLM calls pass: the crew's `max_rpm` (which overrides the agents', as in
/// CrewAI) or the agent's, and the provider's budget (and its 429 holds).
fn rate_limits(data: &RunData<'_>, agent: Option<&AgentSpec>, model: &ResolvedModel) -> Vec<Limit> {
    let mut limits = Vec::new();
    match (data.crew.max_rpm, agent.and_then(|a| a.max_rpm.map(|rpm| (a, rpm)))) {
        (Some(rpm), _) => limits.push(Limit::new(format!("{}crew", data.rate_key), rpm)),
        (None, Some((agent, rpm))) => {
            limits.push(Limit::new(format!("{}agent:{}", data.rate_key, agent.name), rpm))
        }
        (None, None) => {}
    }
    let key = provider_key(&model.provider);
    limits.push(match model.rpm {
        Some(rpm) => Limit::new(key, rpm),
        None => Limit::holds_only(key),
    });
    limits
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
) -> Vec<ToolEntry> {
    let roles: Vec<String> = coworkers.map(|a| interpolate(&a.role, inputs)).collect();
    if roles.is_empty() {
        return Vec::new();
    }
    let list = roles.join(", ");
    [DelegateMode::Work, DelegateMode::Question]
        .into_iter()
        .map(|mode| ToolEntry {
            info: prompts::delegation_tool(mode, &list),
            runner: Runner::Delegate(mode),
            result_as_answer: false,
            max_usage_count: None,
            cache: false,
        })
        .collect()
}

/// The crew's agents as coworkers.
struct Team<'a> {
    engine: &'a Engine,
    crew: &'a CrewSpec,
    inputs: &'a Map<String, Value>,
    rate_key: &'a str,
}

impl Coworkers for Team<'_> {
    fn delegate<'b>(
        &'b self,
        ctx: &'b Context<'b>,
        task: &'b str,
        conversation: String,
        mode: DelegateMode,
        arguments: &'b Value,
    ) -> DelegationFuture<'b> {
        Box::pin(async move {
            let field =
                |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            let wanted = field("coworker");
            let Some(agent) = find_coworker(self.crew, self.inputs, &wanted) else {
                let roles: Vec<String> =
                    self.crew.agents.iter().map(|a| interpolate(&a.role, self.inputs)).collect();
                return Ok(Err(format!(
                    "Coworker '{wanted}' not found. Choose one of: {}.",
                    roles.join(", ")
                )));
            };
            let request = field(if mode == DelegateMode::Work { "task" } else { "question" });
            let data = RunData {
                crew: self.crew,
                inputs: self.inputs,
                outputs: Vec::new(),
                rate_key: self.rate_key,
            };
            let spec = TaskSpec {
                name: task.to_owned(),
                description: request,
                expected_output: prompts::COWORKER_EXPECTED_OUTPUT.to_owned(),
                agent: Some(agent.name.clone()),
                context: Some(Vec::new()),
                tools: None,
                output_schema: None,
                human_input: false,
                async_execution: false,
                max_step_iterations: None,
                step_timeout_s: None,
                guardrail: None,
                guardrail_max_retries: None,
            };
            let mut turn = match self.engine.turn(&data, &spec, agent) {
                Ok(turn) => turn,
                Err(error) => return Ok(Err(error.to_string())),
            };
            turn.conversation = conversation;
            turn.plan = None;
            turn.toolbox = std::mem::take(&mut turn.toolbox).without_delegation();
            let shared = field("context");
            turn.task_prompt =
                prompts::task_prompt(&spec.description, &spec.expected_output, Some(&shared), false);
            let mut pending = Step::default();
            let result = Box::pin(turn.execute(ctx, &mut pending)).await;
            ctx.commit(&mut pending).await?;
            match result {
                Ok(output) => Ok(Ok(output.raw)),
                Err(EngineError::Failed { message, .. }) => {
                    Ok(Err(format!("the coworker could not finish: {message}")))
                }
                Err(other) => Err(other),
            }
        })
    }
}

/// The agent a manager means: by role or name, forgiving case and spacing.
fn find_coworker<'c>(crew: &'c CrewSpec, inputs: &Map<String, Value>, wanted: &str) -> Option<&'c AgentSpec> {
    let loose = |s: &str| s.trim().to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted = loose(wanted.trim_matches('"'));
    crew.agents.iter().find(|a| loose(&interpolate(&a.role, inputs)) == wanted || loose(&a.name) == wanted)
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

//! The crew process: which task runs when, who performs it with which context, and how each task
//! ends. Sequential: each task by its agent, seeing the outputs of its `context` tasks (all
//! earlier ones by default). Hierarchical: a manager agent performs every task by delegating to
//! the crew's agents (see [`super::delegation`]). Consecutive `async_execution` tasks run
//! together. A task planned first (`planning: true`) goes through [`super::plan`], any other
//! straight to the agent loop.

use super::assemble::{Assembler, MANAGER};
use super::journal::{RunChange, Step, TaskChange};
use super::mcp::McpRun;
use super::turn::AgentTurn;
use super::{agent, knowledge, memory, plan, Context, EngineError};
use crate::domain::crew::{CrewSpec, TaskSpec};
use crate::domain::event::{TaskAnswered, TaskCompleted, TaskFailed, TaskStarted};
use crate::domain::knowledge::KnowledgeUse;
use crate::domain::{ErrorKind, EventData, TaskOutput, TaskStatus};

/// A task running on its own (`async_execution`).
type TaskFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<TaskOutput, EngineError>> + Send + 'a>>;

/// Every task in order, skipping those the journal shows finished. Consecutive
/// `async_execution` tasks run together; the next task without it first waits for them (their
/// outputs become context in task order).
pub(super) async fn perform_tasks(
    assembler: &Assembler<'_>,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    let crew = assembler.crew;
    let mut outputs: Vec<Option<TaskOutput>> = vec![None; crew.tasks.len()];
    let mut finished = Vec::new();
    let mut running: Vec<(usize, TaskFuture<'_>)> = Vec::new();
    for (index, task) in crew.tasks.iter().enumerate() {
        let record = ctx.snapshot.tasks.iter().find(|t| t.name == task.name);
        if let Some(output) =
            record.filter(|t| t.status == TaskStatus::Completed).and_then(|t| t.output.clone())
        {
            outputs[index] = Some(output);
            finished = ordered_outputs(crew, &outputs);
            continue;
        }
        if !task.async_execution {
            settle(&mut running, &mut outputs, ctx, pending).await?;
            finished = ordered_outputs(crew, &outputs);
        }
        if !assembler.mcp.is_empty() {
            // Boxed: the discovery's future (an HTTP exchange) is large, and inline it would make
            // every run's future larger, MCP or not.
            Box::pin(discover_servers(assembler, task, ctx, pending)).await?;
        }
        let performer = assembler.performer(task, &finished);
        let agent = match (&performer, &task.agent) {
            (Ok(turn), _) => turn.agent.clone(),
            (Err(_), Some(agent)) => agent.clone(),
            (Err(_), None) => MANAGER.to_owned(),
        };
        let fresh = record.is_none_or(|t| t.status == TaskStatus::Pending);
        if task.async_execution {
            running.push((index, Box::pin(perform_alone(assembler, performer, task, agent, fresh, ctx))));
            continue;
        }
        if fresh {
            start(task, &agent, pending);
        }
        outputs[index] = Some(perform(assembler, performer, task, &agent, ctx, pending).await?);
        finished = ordered_outputs(crew, &outputs);
    }
    settle(&mut running, &mut outputs, ctx, pending).await?;
    outputs
        .into_iter()
        .next_back()
        .flatten()
        .ok_or_else(|| EngineError::failed(ErrorKind::Internal, "the crew has no tasks"))
}

/// List the tools of the MCP servers `task` may use that are not known yet.
async fn discover_servers(
    assembler: &Assembler<'_>,
    task: &TaskSpec,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(), EngineError> {
    let agent = task.agent.as_deref().unwrap_or(MANAGER);
    for server in McpRun::servers_for(assembler.crew, task) {
        assembler.mcp.ensure(ctx, server, &task.name, agent, pending).await?;
    }
    Ok(())
}

/// `turn` with what the crew remembers (its memory's scope's items from earlier runs) and the
/// "Relevant Knowledge" of `bases` appended to its prompt (nothing found: as it is). Both are
/// looked up with the task's own prompt.
async fn add_context(
    assembler: &Assembler<'_>,
    turn: &mut AgentTurn,
    bases: &[KnowledgeUse],
    task: &TaskSpec,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(), EngineError> {
    let (agent, query) = (turn.agent.clone(), turn.task_prompt.clone());
    let start = super::TaskStart { task: &task.name, agent: &agent, query: &query };
    if let Some(spec) = &assembler.crew.memory {
        let scope = assembler.memory_scope(spec);
        let source = assembler.memory;
        let section = memory::recall(source, spec, &scope, &start, ctx, pending).await?;
        if let Some(section) = section {
            turn.task_prompt = memory::with_memories(&turn.task_prompt, &section);
        }
    }
    let source = assembler.knowledge;
    let section = knowledge::recall(source, bases, &start, ctx, pending).await?;
    if let Some(section) = section {
        turn.task_prompt = knowledge::with_knowledge(&turn.task_prompt, &section);
    }
    Ok(())
}

/// Journal a task's start.
fn start(task: &TaskSpec, agent: &str, pending: &mut Step) {
    pending.tasks.push(TaskChange::Started { task: task.name.clone() });
    let event = TaskStarted { task: task.name.clone(), agent: agent.to_owned() };
    pending.event(Some(&task.name), Some(agent), EventData::TaskStarted(event));
}

/// Perform an async task with its own journal steps, committing its end itself.
async fn perform_alone(
    assembler: &Assembler<'_>,
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
    let result = perform(assembler, performer, task, &agent, ctx, &mut pending).await;
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

/// One task as [`perform_task`] does it, beneath its `invoke_agent` span when traces are on.
async fn perform(
    assembler: &Assembler<'_>,
    performer: Result<AgentTurn, EngineError>,
    task: &TaskSpec,
    agent: &str,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    let Some(span) = crate::telemetry::task(ctx.journal.run_id(), ctx.journal.attempt(), &task.name, agent)
    else {
        return perform_task(assembler, performer, task, agent, ctx, pending).await;
    };
    // Boxed: a run without traces keeps the future it had.
    let result =
        Box::pin(span.instrument(perform_task(assembler, performer, task, agent, ctx, pending))).await;
    match &result {
        Ok(_) => span.set("agentd.task.status", "completed"),
        Err(EngineError::AwaitingInput) => span.set("agentd.task.status", "awaiting_input"),
        Err(EngineError::Failed { kind, message }) => span.fail(kind.as_str(), message),
        Err(error) => span.fail("stopped", &error.to_string()),
    }
    span.end();
    result
}

/// One task by its performer (by plan, or straight through the agent loop), its prompt given
/// what its knowledge bases hold, journaling its end.
async fn perform_task(
    assembler: &Assembler<'_>,
    mut performer: Result<AgentTurn, EngineError>,
    task: &TaskSpec,
    agent: &str,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    // In place, boxed, and only for a task with memory or knowledge: a second turn (or the
    // search's state) kept in this future would make every run's future larger.
    let memory = assembler.crew.memory.as_ref();
    let bases = knowledge::bases_of(assembler.crew, task);
    let failed = match &mut performer {
        Ok(turn) if memory.is_some() || !bases.is_empty() => {
            Box::pin(add_context(assembler, turn, &bases, task, ctx, pending)).await.err()
        }
        _ => None,
    };
    if let Some(error) = failed {
        performer = Err(error);
    }
    let (result, turn) = match performer {
        Ok(turn) => {
            let result = match &turn.plan {
                Some(options) => Box::pin(plan::execute(&turn, options, ctx, pending)).await,
                None => agent::execute(&turn, ctx, pending).await,
            };
            (result, Some(turn))
        }
        Err(error) => (Err(error), None),
    };
    let mut result = result.and_then(|output| {
        ctx.budget.check_task_output(&task.name, output.raw.len())?;
        Ok(output)
    });
    if let (Ok(output), Some(memory), Some(turn), false) = (&result, memory, &turn, task.human_input) {
        let (scope, description) = (assembler.memory_scope(memory), assembler.fill(&task.description));
        let remembered =
            memory::remember(assembler.memory, memory, &scope, &description, turn, output, ctx, pending);
        if let Err(error) = Box::pin(remembered).await {
            result = Err(error);
        }
    }
    match result {
        Ok(output) if task.human_input => {
            let event = TaskAnswered { task: task.name.clone(), output: output.raw.clone() };
            pending.event(Some(&task.name), Some(agent), EventData::RunAwaitingInput(event));
            pending.tasks.push(TaskChange::AwaitingReview { task: task.name.clone(), output });
            pending.run = Some(RunChange::AwaitingInput);
            Err(EngineError::AwaitingInput)
        }
        Ok(output) => {
            let event = TaskCompleted { task: task.name.clone(), output: Some(output.raw.clone()) };
            pending.event(Some(&task.name), Some(agent), EventData::TaskCompleted(event));
            pending.tasks.push(TaskChange::Completed { task: task.name.clone(), output: output.clone() });
            Ok(output)
        }
        Err(EngineError::Failed { kind, message }) => {
            let event = TaskFailed { task: task.name.clone(), error: message.clone() };
            pending.event(Some(&task.name), Some(agent), EventData::TaskFailed(event));
            pending.tasks.push(TaskChange::Failed { task: task.name.clone(), error: message.clone() });
            Err(EngineError::Failed { kind, message })
        }
        Err(other) => Err(other),
    }
}

//! Plan-and-act (`planning: true`): before a task runs, a planner call turns it into ordered
//! steps; each step is executed in its own isolated conversation by a bounded loop (with an
//! optional time limit), and the task's final answer is produced from the step results. Plans and
//! steps are journaled as conversations (`<task>#plan`, `<task>#step-<n>`), so a crash resumes at
//! the step that was in flight.

use serde::Deserialize;

use super::agent;
use super::effects::Purpose;
use super::journal::Step;
use super::keys;
use super::prompts;
use super::react::{self, ReactStep};
use super::repair::parse_lenient;
use super::turn::{AgentTurn, PlanOptions};
use super::{Context, EngineError};
pub use crate::domain::event::PlanStep;
use crate::domain::event::{StepCompleted, StepFailed, StepStarted, TaskPlanned};
use crate::domain::{EventData, TaskOutput};
use crate::llm::{ChatMessage, Role};

#[derive(Deserialize)]
struct PlanReply {
    steps: Vec<PlanStep>,
}

/// Perform `turn`'s task by plan.
pub(super) async fn execute(
    turn: &AgentTurn,
    options: &PlanOptions,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<TaskOutput, EngineError> {
    let steps = plan(turn, options, ctx, pending).await?;
    let mut results: Vec<String> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let result = run_step(turn, options, index + 1, step, &results, ctx, pending).await?;
        results.push(result);
    }
    let summary: Vec<String> = steps
        .iter()
        .zip(&results)
        .enumerate()
        .map(|(i, (s, r))| format!("Step {}: {}\nResult: {r}", i + 1, s.description))
        .collect();
    let final_turn = AgentTurn {
        task_prompt: prompts::plan_final_prompt(&turn.task_prompt, &summary.join("\n\n")),
        toolbox: Default::default(),
        plan: None,
        ..turn.clone()
    };
    agent::execute(&final_turn, ctx, pending).await
}

/// The task's steps: the journaled plan, or a new planner call.
async fn plan(
    turn: &AgentTurn,
    options: &PlanOptions,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<Vec<PlanStep>, EngineError> {
    let conversation = keys::plan(&turn.conversation);
    let recorded = ctx.snapshot.conversation(&conversation);
    if let Some(reply) = recorded.iter().rev().find(|m| m.role == Role::Assistant) {
        return Ok(read_plan(reply.content.as_deref().unwrap_or_default(), turn));
    }
    let tools: Vec<String> =
        turn.toolbox.definitions().iter().map(|t| format!("{}: {}", t.name, t.description)).collect();
    let messages = vec![
        ChatMessage::system(prompts::PLANNER_SYSTEM),
        ChatMessage::user(prompts::planner_prompt(&turn.task_prompt, &tools)),
    ];
    let text =
        turn.side_call(&options.planner, &conversation, messages, Purpose::Planner, ctx, pending).await?;
    let steps = read_plan(&text, turn);
    let data = TaskPlanned { task: turn.task.clone(), steps: steps.clone() };
    turn.event(pending, EventData::TaskPlanned(data));
    Ok(steps)
}

/// The steps of a planner's reply; one step, the whole task, if it cannot be read.
fn read_plan(text: &str, turn: &AgentTurn) -> Vec<PlanStep> {
    let steps = parse_lenient(text)
        .and_then(|value| serde_json::from_value::<PlanReply>(value).ok())
        .map(|reply| reply.steps)
        .unwrap_or_default();
    let steps: Vec<PlanStep> = steps.into_iter().filter(|s| !s.description.trim().is_empty()).collect();
    if steps.is_empty() {
        return vec![PlanStep { description: turn.task_prompt.clone(), expected_tool: None }];
    }
    steps
}

/// Run step `number` in its own conversation; its result (or why it failed) as text.
async fn run_step(
    turn: &AgentTurn,
    options: &PlanOptions,
    number: usize,
    step: &PlanStep,
    earlier: &[String],
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<String, EngineError> {
    let conversation = keys::step(&turn.conversation, number);
    let fresh = ctx.snapshot.conversation(&conversation).is_empty();
    if fresh {
        let data =
            StepStarted { task: turn.task.clone(), step: number, description: step.description.clone() };
        turn.event(pending, EventData::StepStarted(data));
    }
    let step_turn = AgentTurn {
        conversation: conversation.clone(),
        identity: format!("{}\n{}", prompts::STEP_SYSTEM, turn.identity),
        task_prompt: prompts::step_prompt(&step.description, earlier, step.expected_tool.as_deref()),
        max_iter: options.max_step_iterations,
        output_schema: None,
        guardrail: None,
        plan: None,
        ..turn.clone()
    };
    let execution = Box::pin(agent::execute_with_transcript(&step_turn, ctx, pending));
    let outcome = match options.step_timeout {
        Some(limit) => tokio::time::timeout(limit, execution).await.ok(),
        None => Some(execution.await),
    };
    let (output, transcript) = match outcome {
        Some(result) => result?,
        None => return Ok(time_out(turn, &step_turn, number, options, pending)),
    };
    if let Some(tool) = step.expected_tool.as_deref() {
        let available = turn.toolbox.find(tool).is_some();
        if available && !called(&transcript, tool, turn) {
            let reason = format!("the step expected the tool '{tool}' to be used, and it was not");
            let data = StepFailed { task: turn.task.clone(), step: number, reason: reason.clone() };
            turn.event(pending, EventData::StepFailed(data));
            return Ok(format!("Step failed: {reason}. Its answer was: {}", output.raw));
        }
    }
    let data =
        StepCompleted { task: turn.task.clone(), step: number, output: output.raw.clone(), timed_out: None };
    turn.event(pending, EventData::StepCompleted(data));
    Ok(output.raw)
}

/// A step over its time limit: its last tool result, or a timeout message, journaled as the step's
/// answer (so a resume finds the step finished).
fn time_out(
    turn: &AgentTurn,
    step: &AgentTurn,
    number: usize,
    options: &PlanOptions,
    pending: &mut Step,
) -> String {
    let last_result = pending
        .messages
        .iter()
        .rev()
        .filter(|m| m.conversation == step.conversation)
        .find(|m| {
            m.message.role == Role::Tool
                || m.message.content.as_deref().is_some_and(|c| c.starts_with("Observation:"))
        })
        .and_then(|m| m.message.content.clone());
    let limit = options.step_timeout.map_or(0, |d| d.as_secs());
    let result = match last_result {
        Some(result) => format!("The step timed out after {limit} s; its last tool result was: {result}"),
        None => format!("The step timed out after {limit} s without a result."),
    };
    pending.messages.push(step.message(ChatMessage::assistant(format!("Final Answer: {result}"))));
    let data = StepCompleted {
        task: turn.task.clone(),
        step: number,
        output: result.clone(),
        timed_out: Some(true),
    };
    turn.event(pending, EventData::StepCompleted(data));
    result
}

/// Did the step's conversation call `tool`?
fn called(transcript: &[ChatMessage], tool: &str, turn: &AgentTurn) -> bool {
    let same = |name: &str| {
        turn.toolbox
            .find(name)
            .is_some_and(|entry| Some(entry.name()) == turn.toolbox.find(tool).map(|t| t.name()))
    };
    transcript.iter().filter(|m| m.role == Role::Assistant).any(|m| {
        m.tool_calls.iter().any(|c| same(&c.name))
            || matches!(react::parse(m.content.as_deref().unwrap_or_default()), Ok(ReactStep::Action { tool, .. }) if same(&tool))
    })
}

//! Delegation: the crew's agents as coworkers of an agent that may delegate (and of the
//! hierarchical manager). A delegation tool call names a coworker by role or name; the coworker
//! performs the request in a conversation of its own, keyed by the call, without delegating
//! further and without a plan, and its answer (or why it could not answer) is the observation.

use serde_json::Value;

use super::assemble::Assembler;
use super::journal::Step;
use super::prompts;
use super::toolbox::DelegateMode;
use super::{agent, Context, Coworkers, Delegation, DelegationFuture, EngineError};
use crate::domain::crew::{AgentSpec, CrewSpec, TaskSpec};
use crate::domain::interpolate::interpolate;

/// The crew's agents as coworkers.
pub(super) struct Team<'a> {
    pub assembler: &'a Assembler<'a>,
}

impl Coworkers for Team<'_> {
    fn delegate<'b>(&'b self, ctx: &'b Context<'b>, request: Delegation<'b>) -> DelegationFuture<'b> {
        let Delegation { task, conversation, mode, arguments } = request;
        Box::pin(async move {
            let (crew, inputs) = (self.assembler.crew, self.assembler.inputs);
            let field =
                |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            let wanted = field("coworker");
            let Some(agent) = find_coworker(crew, inputs, &wanted) else {
                let roles: Vec<String> = crew.agents.iter().map(|a| interpolate(&a.role, inputs)).collect();
                return Ok(Err(format!(
                    "Coworker '{wanted}' not found. Choose one of: {}.",
                    roles.join(", ")
                )));
            };
            let request = field(if mode == DelegateMode::Work { "task" } else { "question" });
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
            let mut turn = match self.assembler.turn(&spec, agent, &[]) {
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
            let result = Box::pin(agent::execute(&turn, ctx, &mut pending)).await;
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
fn find_coworker<'c>(
    crew: &'c CrewSpec,
    inputs: &serde_json::Map<String, Value>,
    wanted: &str,
) -> Option<&'c AgentSpec> {
    let loose = |s: &str| s.trim().to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted = loose(wanted.trim_matches('"'));
    crew.agents.iter().find(|a| loose(&interpolate(&a.role, inputs)) == wanted || loose(&a.name) == wanted)
}

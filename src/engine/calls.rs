//! One round of tool calls asked for by one reply: check each call, journal the starts, have the
//! effects layer run them (concurrently when CrewAI's rule allows), journal the ends, and give the
//! agent loop the observations to append. The round reads the turn and never the loop's state. On
//! resume, a call the crash interrupted is run again only if its tool is idempotent.

use serde_json::Value;

use super::effects::{Outcomes, ToolEffect};
use super::journal::{
    Approval, RunChange, Step, ToolCallEnd, ToolCallOutcome, ToolCallRecord, ToolCallStart,
};
use super::keys;
use super::prompts;
use super::react::ActionInput;
use super::toolbox::{Prepared, ToolEntry};
use super::turn::{AgentTurn, Style};
use super::{Context, EngineError};
use crate::domain::event::{ToolFailed, ToolFinished, ToolStarted};
use crate::domain::EventData;
use crate::llm::{ChatMessage, Image, ToolCallRequest};
use crate::tools::{parse_captioned_image, MAX_IMAGE_BYTES};

/// A tool call as the model asked for it.
pub struct PlannedCall {
    /// The journal's id of the call, unique in the run (providers may reuse their ids).
    pub key: keys::JournalKey,
    /// The provider's id, echoed in the answering `tool` message.
    pub id: String,
    pub name: String,
    pub input: ActionInput,
}

impl PlannedCall {
    /// A native call of the reply at `iteration` of `conversation`.
    pub fn native(call: &ToolCallRequest, conversation: &str, iteration: u32) -> Self {
        Self {
            key: keys::native_call(conversation, iteration, &call.id),
            id: call.id.clone(),
            name: call.name.clone(),
            input: ActionInput::from_native(&call.arguments),
        }
    }

    /// The ReAct action of the reply at `iteration` of `conversation`.
    pub fn react(conversation: &str, iteration: u32, name: String, input: ActionInput) -> Self {
        let key = keys::react_call(conversation, iteration);
        Self { id: key.as_str().to_owned(), key, name, input }
    }
}

/// What to do with one call.
enum Action {
    /// Journaled and answered already (seen on resume).
    Done,
    /// Run the tool (`fresh`: journal its start first).
    Execute { entry: ToolEntry, arguments: Value, fresh: bool },
    /// Answer without running anything.
    Answer { arguments: Value, outcome: ToolCallOutcome, fresh: bool },
    /// Wait for a reviewer's decision (`fresh`: journal the call and ask for it).
    Await { arguments: Value, fresh: bool },
    /// Not run: another call of the batch must run alone.
    Skip,
}

struct Call {
    planned: PlannedCall,
    tool: String,
    action: Action,
}

/// One round of calls of an agent loop: it reads the turn and journals into the pending step, and
/// hands the messages the conversation gains back to the loop.
pub(super) struct ToolRound<'a> {
    pub turn: &'a AgentTurn,
    pub ctx: &'a Context<'a>,
    /// How the loop asks for tools now (it may have fallen back to ReAct).
    pub style: Style,
    /// The calls are those of the last journaled reply, seen again after a crash.
    pub resumed: bool,
}

/// What a round gives the agent loop.
pub(super) struct Round {
    /// The observations (and images) the conversation gains, in order, for the loop to append and
    /// journal.
    pub messages: Vec<ChatMessage>,
    /// The result of a successful `result_as_answer` call, which ends the task.
    pub answer: Option<String>,
}

impl ToolRound<'_> {
    /// Run the round.
    pub async fn run(self, planned: Vec<PlannedCall>, pending: &mut Step) -> Result<Round, EngineError> {
        let mut calls: Vec<Call> = planned.into_iter().map(|p| self.plan(p)).collect();
        restrict_batch(&mut calls);
        if calls.iter().any(|c| matches!(c.action, Action::Await { .. })) {
            return Err(self.await_approval(&calls, pending));
        }
        self.journal_starts(&calls, pending);
        // Calls that run nothing (refused, cached) end in the same step as their start, so a crash
        // during the others never leaves them looking interrupted. Their messages follow in order.
        for call in &calls {
            if let Action::Answer { outcome, .. } = &call.action {
                pending
                    .tool_ends
                    .push(ToolCallEnd { id: call.planned.key.clone(), outcome: outcome.clone() });
            }
        }
        let outcomes = self.start_and_execute(&calls, pending).await?;
        let mut round = Round { messages: Vec::new(), answer: None };
        for (call, outcome) in calls.iter().zip(outcomes) {
            if let Some(result) = self.conclude(call, outcome, &mut round.messages, pending) {
                round.answer = round.answer.or(Some(result));
            }
        }
        if round.answer.is_none() && self.style == Style::Native {
            round.messages.push(ChatMessage::user(prompts::REFLECT_ON_RESULTS));
        }
        Ok(round)
    }

    fn plan(&self, planned: PlannedCall) -> Call {
        let ctx = self.ctx;
        let toolbox = &self.turn.toolbox;
        let recorded = self.resumed.then(|| ctx.snapshot.tool_call(&planned.key)).flatten();
        let (tool, action) = match recorded {
            Some(record) if record.outcome.is_some() => (record.tool.clone(), Action::Done),
            Some(record) => (record.tool.clone(), decided(record, toolbox.find(&record.tool))),
            None => match toolbox.prepare(&planned.name, planned.input.clone(), ctx.tools) {
                Prepared::Run { entry, arguments } if entry.requires_approval => {
                    (entry.name().to_owned(), Action::Await { arguments, fresh: true })
                }
                Prepared::Run { entry, arguments } => {
                    (entry.name().to_owned(), Action::Execute { entry, arguments, fresh: true })
                }
                Prepared::Cached { entry, arguments, result } => {
                    let outcome = ToolCallOutcome::Succeeded { result, cached: true };
                    (entry.name().to_owned(), Action::Answer { arguments, outcome, fresh: true })
                }
                Prepared::Refused { arguments, error } => {
                    let outcome = ToolCallOutcome::Failed { error };
                    (planned.name.clone(), Action::Answer { arguments, outcome, fresh: true })
                }
            },
        };
        Call { planned, tool, action }
    }

    /// A round with calls that need a reviewer's decision: journal each of them as pending (and
    /// the round's other calls that would run as deferred: they run with them once all are
    /// decided), announce `tool.approval_requested`, and stop the run in `awaiting_input`. Calls
    /// that run nothing (refused, cached) are not journaled: the resumed round answers them again.
    fn await_approval(&self, calls: &[Call], pending: &mut Step) -> EngineError {
        let turn = self.turn;
        for call in calls {
            let (arguments, approval) = match &call.action {
                Action::Await { arguments, fresh: true } => (arguments, Approval::Pending),
                Action::Execute { arguments, fresh: true, .. } => (arguments, Approval::Deferred),
                _ => continue,
            };
            pending.tool_starts.push(self.start_of(call, arguments, Some(approval.clone())));
            pending.usage.tool_calls += 1;
            if approval == Approval::Pending {
                let data = ToolStarted {
                    tool_call_id: call.planned.key.as_str().to_owned(),
                    tool: call.tool.clone(),
                    arguments: arguments.clone(),
                };
                turn.event(pending, EventData::ToolApprovalRequested(data));
            }
        }
        pending.run = Some(RunChange::AwaitingInput);
        EngineError::AwaitingInput
    }

    /// The journaled start of `call` in this turn.
    fn start_of(&self, call: &Call, arguments: &Value, approval: Option<Approval>) -> ToolCallStart {
        let turn = self.turn;
        ToolCallStart {
            id: call.planned.key.clone(),
            conversation: turn.conversation.clone(),
            task: turn.task.clone(),
            agent: turn.agent.clone(),
            tool: call.tool.clone(),
            arguments: arguments.clone(),
            approval,
        }
    }

    fn journal_starts(&self, calls: &[Call], pending: &mut Step) {
        let turn = self.turn;
        for call in calls {
            let arguments = match &call.action {
                Action::Execute { arguments, fresh: true, .. }
                | Action::Answer { arguments, fresh: true, .. } => arguments,
                _ => continue,
            };
            pending.tool_starts.push(self.start_of(call, arguments, None));
            pending.usage.tool_calls += 1;
            let data = ToolStarted {
                tool_call_id: call.planned.key.as_str().to_owned(),
                tool: call.tool.clone(),
                arguments: arguments.clone(),
            };
            turn.event(pending, EventData::ToolStarted(data));
        }
    }

    /// Have the effects layer run the calls that need running (it commits their starts as the
    /// durability contract requires).
    async fn start_and_execute(&self, calls: &[Call], pending: &mut Step) -> Result<Outcomes, EngineError> {
        let effects: Vec<Option<ToolEffect<'_>>> = calls
            .iter()
            .map(|call| match &call.action {
                Action::Execute { entry, arguments, .. } => {
                    Some(ToolEffect { entry, arguments, key: &call.planned.key, id: &call.planned.id })
                }
                Action::Done | Action::Answer { .. } | Action::Await { .. } | Action::Skip => None,
            })
            .collect();
        self.ctx.run_tools(&self.turn.task, &effects, pending).await
    }

    /// Journal how a call ended, and say what the model is told (into `messages`). Returns the result
    /// of a successful `result_as_answer` call.
    fn conclude(
        &self,
        call: &Call,
        executed: Option<(ToolCallOutcome, u64)>,
        messages: &mut Vec<ChatMessage>,
        pending: &mut Step,
    ) -> Option<String> {
        let (outcome, duration_ms, arguments, entry) = match (&call.action, executed) {
            (Action::Done | Action::Await { .. }, _) => return None,
            (Action::Skip, _) => {
                let note =
                    "Not executed: this tool must run alone. Call it again on its own if it is still needed.";
                self.observe(call, note, messages);
                return None;
            }
            (Action::Execute { entry, arguments, .. }, Some((outcome, ms))) => {
                (outcome, ms, arguments, Some(entry))
            }
            (Action::Answer { arguments, outcome, .. }, _) => (outcome.clone(), 0, arguments, None),
            (Action::Execute { .. }, None) => return None,
        };
        let (outcome, image) = take_image(outcome);
        let turn = self.turn;
        let id = &call.planned.key;
        let (observation, answer) = match &outcome {
            ToolCallOutcome::Succeeded { result, cached } => {
                if !cached && image.is_none() {
                    self.ctx.tools.record(&call.tool, arguments, result);
                }
                let data = ToolFinished {
                    tool_call_id: id.as_str().to_owned(),
                    tool: call.tool.clone(),
                    observation: result.clone(),
                    cached: *cached,
                    duration_ms,
                    media_type: image.as_ref().map(|(image, _)| image.media_type.clone()),
                    bytes: image.as_ref().map(|(_, bytes)| *bytes),
                };
                turn.event(pending, EventData::ToolFinished(data));
                let answer = entry.is_some_and(|e| e.result_as_answer).then(|| result.clone());
                (result.clone(), answer)
            }
            ToolCallOutcome::Failed { error } => {
                let data = ToolFailed {
                    tool_call_id: id.as_str().to_owned(),
                    tool: call.tool.clone(),
                    error: error.clone(),
                };
                turn.event(pending, EventData::ToolFailed(data));
                (format!("Error: {error}"), None)
            }
        };
        if !matches!(call.action, Action::Answer { .. }) {
            pending.tool_ends.push(ToolCallEnd { id: id.clone(), outcome });
        }
        self.observe(call, &observation, messages);
        if let Some((image, _)) = image {
            // Tool messages carry text only: the image follows as a user message.
            let message = format!("The image returned by '{}':", call.tool);
            messages.push(ChatMessage { images: vec![image], ..ChatMessage::user(message) });
        }
        answer
    }

    /// The message that tells the model what a call gave.
    fn observe(&self, call: &Call, observation: &str, messages: &mut Vec<ChatMessage>) {
        messages.push(match self.style {
            Style::Native => ChatMessage::tool(call.planned.id.clone(), observation),
            Style::React => ChatMessage::user(prompts::observation(observation)),
        });
    }
}

/// Split an image result into the text the journal and events keep and the image the model sees
/// (with its size); an image over the size cap becomes a failure.
fn take_image(outcome: ToolCallOutcome) -> (ToolCallOutcome, Option<(Image, usize)>) {
    let ToolCallOutcome::Succeeded { result, cached } = &outcome else { return (outcome, None) };
    let Some((media_type, data, caption)) = parse_captioned_image(result) else { return (outcome, None) };
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    let bytes = (data.len() / 4 * 3).saturating_sub(padding);
    if bytes > MAX_IMAGE_BYTES {
        let error =
            format!("the tool returned an image of {bytes} bytes, over the limit of {MAX_IMAGE_BYTES}");
        return (ToolCallOutcome::Failed { error }, None);
    }
    let attached = format!("The tool returned an image ({media_type}, {bytes} bytes); it is attached.");
    let text = match caption {
        "" => attached,
        caption => format!("{caption}\n{attached}"),
    };
    let image = Image { media_type: media_type.to_owned(), data: data.to_owned() };
    (ToolCallOutcome::Succeeded { result: text, cached: *cached }, Some((image, bytes)))
}

/// A journaled call without an end, seen again on resume: as its reviewer decided (run with the
/// decided arguments, or answered with the rejection), run with its round (deferred), still
/// waiting, or interrupted by a crash.
fn decided(record: &ToolCallRecord, entry: Option<&ToolEntry>) -> Action {
    let arguments = record.arguments.clone();
    match (&record.approval, entry) {
        (Some(Approval::Pending), _) => Action::Await { arguments, fresh: false },
        (Some(Approval::Approved { arguments: edited }), Some(entry)) => {
            let arguments = edited.clone().unwrap_or(arguments);
            Action::Execute { entry: entry.clone(), arguments, fresh: false }
        }
        (Some(Approval::Deferred), Some(entry)) => {
            Action::Execute { entry: entry.clone(), arguments, fresh: false }
        }
        (Some(Approval::Rejected { reason }), _) => {
            let error = match reason {
                Some(reason) => format!("A reviewer rejected this call: {reason}"),
                None => "A reviewer rejected this call.".to_owned(),
            };
            Action::Answer { arguments, outcome: ToolCallOutcome::Failed { error }, fresh: false }
        }
        (Some(Approval::Approved { .. } | Approval::Deferred), None) | (None, _) => {
            interrupted(entry, &record.tool, &record.arguments)
        }
    }
}

/// A call the crash left running: run it again if that is safe, else fail it.
fn interrupted(entry: Option<&ToolEntry>, tool: &str, arguments: &Value) -> Action {
    match entry {
        Some(entry) if entry.info.idempotent => {
            Action::Execute { entry: entry.clone(), arguments: arguments.clone(), fresh: false }
        }
        _ => {
            let error = format!(
                "The call to '{tool}' was interrupted by a service restart and was not repeated because the tool \
                 is not idempotent; whether it took effect is unknown."
            );
            Action::Answer {
                arguments: arguments.clone(),
                outcome: ToolCallOutcome::Failed { error },
                fresh: false,
            }
        }
    }
}

/// CrewAI's rule: several calls run together only if none of them must run alone; otherwise only
/// the first runs.
fn restrict_batch(calls: &mut [Call]) {
    let alone =
        calls.iter().any(|c| matches!(&c.action, Action::Execute { entry, .. } if entry.runs_alone()));
    if calls.len() > 1 && alone {
        for call in calls.iter_mut().skip(1) {
            if !matches!(call.action, Action::Done) {
                call.action = Action::Skip;
            }
        }
    }
}

//! An evaluation's judge: when an evaluation case has a rubric, the run's final answer is put to a
//! model (the evaluation's `judge_model`, else the default model) in a conversation of its own
//! (`#judge`) before the run completes. Its reply, `{"pass", "score", "reason"}`, is announced as
//! `evaluation.judged`. The exchange is journaled and costed like any model call of the run, so a
//! resumed run does not ask again. A judge that cannot be called, or whose reply cannot be read,
//! gives a failed verdict saying why; the run completes all the same (its answer is the crew's).

use serde_json::{Map, Value};

use super::effects::{gates_for, CallError, ModelCall, Purpose};
use super::guardrail::{read_verdict, Verdict};
use super::journal::{NewMessage, Step};
use super::{keys, prompts, Context, EngineError};
use crate::domain::evaluation::Judge;
use crate::domain::event::EvaluationJudged;
use crate::domain::{EventData, TaskOutput};
use crate::llm::{ChatMessage, ChatRequest, LlmRegistry, Role};

/// The agent the judge's messages, events and usage are recorded under (not a name an agent of a
/// crew can have).
pub const JUDGE_AGENT: &str = "#judge";

/// What the judge is given and where its call is recorded.
pub(super) struct Case<'a> {
    pub judge: &'a Judge,
    /// The crew's last task: the judge's events and usage are recorded under it.
    pub task: &'a str,
    pub inputs: &'a Map<String, Value>,
    pub output: &'a TaskOutput,
}

/// Judge the run's final answer, once: `evaluation.judged` goes into `pending` with the judge's
/// reply (a resumed run whose journal has the reply has announced it already).
pub(super) async fn judge(
    case: Case<'_>,
    llms: &LlmRegistry,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(), EngineError> {
    let conversation = keys::judge();
    let recorded = ctx.snapshot.conversation(&conversation);
    if recorded.iter().any(|m| m.role == Role::Assistant) {
        return Ok(());
    }
    let label = case.judge.model.clone().unwrap_or_else(|| "the default model".to_owned());
    let model = match llms.resolve(case.judge.model.as_deref()) {
        Ok(model) => model,
        Err(error) => {
            let reason = format!("the judge could not be called: {}", error.message);
            announce(pending, case.task, Verdict { pass: false, score: None, reason }, label);
            return Ok(());
        }
    };
    let label = format!("{}/{}", model.provider, model.model);
    let record = |message: ChatMessage| NewMessage {
        conversation: conversation.clone(),
        task: case.task.to_owned(),
        agent: JUDGE_AGENT.to_owned(),
        message,
        compacts: false,
    };
    let inputs = serde_json::to_string_pretty(case.inputs).unwrap_or_default();
    let question = prompts::judge_question(&inputs, &case.judge.rubric, &case.output.raw);
    let messages = vec![ChatMessage::system(prompts::JUDGE_SYSTEM), ChatMessage::user(question)];
    // Asked before (the attempt ended before the reply was journaled): asked again, not restated.
    if recorded.is_empty() {
        pending.messages.extend(messages.iter().cloned().map(record));
    }
    let request = ChatRequest { model: model.model.clone(), messages, ..ChatRequest::default() };
    let limits = gates_for(&[], &model);
    let call = ModelCall {
        model: &model,
        request,
        limits: &limits,
        purpose: Purpose::Judge,
        task: case.task,
        agent: JUDGE_AGENT,
    };
    let verdict = match ctx.call_model(call, pending).await {
        Ok(response) => {
            let text = response.content.unwrap_or_default();
            pending.messages.push(record(ChatMessage::assistant(text.clone())));
            read_verdict(&text)
        }
        Err(CallError::Stop(error)) => return Err(error),
        Err(CallError::Llm(error)) => {
            Verdict { pass: false, score: None, reason: format!("the judge call failed: {}", error.message) }
        }
    };
    announce(pending, case.task, verdict, label);
    Ok(())
}

fn announce(pending: &mut Step, task: &str, verdict: Verdict, model: String) {
    let Verdict { pass, score, reason } = verdict;
    let data = EvaluationJudged { passed: pass, score, reason, model };
    pending.event(Some(task), Some(JUDGE_AGENT), EventData::EvaluationJudged(data));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_leniently_and_scores_clamped() {
        let verdict =
            read_verdict("```json\n{\"pass\": true, \"score\": 0.8, \"reason\": \"cites the tide\"}\n```");
        assert_eq!(verdict, Verdict { pass: true, score: Some(0.8), reason: "cites the tide".into() });
        assert_eq!(read_verdict("{\"pass\": false, \"score\": 7}").score, Some(1.0));
        let unreadable = read_verdict("It looks fine to me.");
        assert!(!unreadable.pass && unreadable.reason.contains("could not be read"), "{unreadable:?}");
    }
}

//! The effects layer: the one way a run's calls reach the world, so that every call keeps the
//! durability contract and the run's accounting, whatever makes it. Callers decide *what* to
//! call and journal *what* it meant; this module decides *when* the journal must be durable.
//!
//! Model calls ([`Context::call_model`]), whatever asks (an agent's turn, the manager's, a
//! coworker's, the guardrail judge, the planner, the context summariser):
//!
//! 1. check the run's spend caps (`max_tokens`, `max_cost_usd`) on an estimate of the call, then
//!    wait for a slot under their rate limits (crew or agent `max_rpm` and the provider's 429
//!    holds on this replica; the provider's `rpm` and `tpm`, booked on the schedule the cluster
//!    shares), announcing a wait as `run.throttled`;
//! 2. announce `llm.started` and commit the pending journal step before the model is asked,
//!    except a step a resumed run would write again the same way ([`Step::is_replayable`]: a
//!    task's start and prompts), which is committed while the call goes out; a failed commit
//!    stops the call. The call is counted in the run's usage in that step, so a call lost to a
//!    crash (or one that fails) is still counted: spend is never under-reported;
//! 3. after the reply: the provider's token schedule is corrected by the tokens it reported, NUL
//!    characters are scrubbed (Postgres cannot store them), latency, tokens and cost go to the
//!    metrics and the run's usage (and its split by task, agent and model), `llm.finished` is
//!    announced, and the spend caps are checked again on what the call used.
//!
//! Tool calls ([`Context::run_tools`]: built-in, HTTP and crew tools, and delegations to
//! coworkers) run after the pending step, which holds their journaled starts, is committed;
//! except when every call of the round is idempotent and runs a tool: then they start at once,
//! and if they are done within [`FOLD_WINDOW`] their starts and ends share one commit (a crash
//! meanwhile repeats at most the model's reply), otherwise the starts are committed while they
//! go on (a failed commit, such as a lost lease, stops them). Results are scrubbed of NUL and
//! timed in the metrics. A cancelled run abandons its calls.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::Value;

use super::journal::{DayCaps, JournalError, Step, ToolCallOutcome};
use super::toolbox::{Runner, ToolEntry};
use super::{Context, Delegation, EngineError, LiveDelta, RunDeltas};
use crate::domain::evaluation::ReplayAnswer;
use crate::domain::event::{CallPurpose, LlmFinished, LlmStarted, RunThrottled, TokenUsage};
use crate::domain::ErrorKind;
use crate::domain::EventData;
use crate::llm::TokenUsage as CallUsage;
use crate::llm::{
    provider_key, ChatRequest, ChatResponse, DeltaSink, LlmError, ProviderBudget, ResolvedModel,
};
use crate::ratelimit::Limit;
use crate::tools::CallInfo;

/// How long idempotent tool calls may take and still be journaled in one commit with their starts,
/// and a model call its replayable step (a task's start, `llm.started`) in one commit with its reply.
pub const FOLD_WINDOW: Duration = Duration::from_millis(10);

/// Why a model is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A turn of an agent's conversation (also the manager's and a coworker's): its iteration,
    /// counted from 1.
    Turn(u32),
    /// The guardrail judge's verdict on an answer.
    Guardrail,
    /// The planner's steps for a task.
    Planner,
    /// A summary of an overflowing conversation.
    Summarizer,
    /// The facts and entities of an answer, for memory.
    Memory,
    /// An evaluation's judge of a case's output.
    Judge,
}

impl Purpose {
    /// What `llm.started` and `llm.finished` say of the call, beside the model: the agent's
    /// iteration, or the side call's purpose.
    fn describe(self) -> (Option<u32>, Option<CallPurpose>) {
        match self {
            Purpose::Turn(iteration) => (Some(iteration), None),
            Purpose::Guardrail => (None, Some(CallPurpose::Guardrail)),
            Purpose::Planner => (None, Some(CallPurpose::Planner)),
            Purpose::Summarizer => (None, Some(CallPurpose::Summarizer)),
            Purpose::Memory => (None, Some(CallPurpose::Memory)),
            Purpose::Judge => (None, Some(CallPurpose::Judge)),
        }
    }

    /// Its name in a trace (`agentd.call.purpose`).
    fn name(self) -> &'static str {
        match self {
            Purpose::Turn(_) => "turn",
            Purpose::Guardrail => "guardrail",
            Purpose::Planner => "planner",
            Purpose::Summarizer => "summarizer",
            Purpose::Memory => "memory",
            Purpose::Judge => "judge",
        }
    }

    /// How a failed call of this purpose begins its error message ("planning failed: …").
    pub fn failing(self) -> &'static str {
        match self {
            Purpose::Turn(_) => "LLM call",
            Purpose::Guardrail => "the guardrail check",
            Purpose::Planner => "planning",
            Purpose::Summarizer => "summarising",
            Purpose::Memory => "extracting memories",
            Purpose::Judge => "judging",
        }
    }
}

/// One model call of a run.
pub struct ModelCall<'a> {
    pub model: &'a ResolvedModel,
    pub request: ChatRequest,
    /// The gates the call passes (see [`gates_for`]).
    pub limits: &'a [Limit],
    pub purpose: Purpose,
    /// The task and agent its events name.
    pub task: &'a str,
    pub agent: &'a str,
}

/// Why a model call produced no response.
pub enum CallError {
    /// The model failed: the caller may recover.
    Llm(LlmError),
    /// The run must stop (cancelled, lease lost, journal down).
    Stop(EngineError),
}

impl From<EngineError> for CallError {
    fn from(error: EngineError) -> Self {
        CallError::Stop(error)
    }
}

/// A sink handing an agent turn's streamed text to the run's publisher.
fn stream_to(deltas: RunDeltas, task: &str, agent: &str, iteration: u32) -> DeltaSink {
    let (task, agent) = (task.to_owned(), agent.to_owned());
    DeltaSink(std::sync::Arc::new(move |attempt, text: &str| {
        deltas.publisher.publish(LiveDelta {
            run_id: deltas.run_id,
            task: task.clone(),
            agent: agent.clone(),
            iteration,
            attempt,
            text: text.to_owned(),
        })
    }))
}

impl Context<'_> {
    /// Commit what is pending, if anything: before an effect (below), and where the process ends
    /// a task, a delegation or the run.
    pub async fn commit(&self, pending: &mut Step) -> Result<(), EngineError> {
        if pending.is_empty() {
            return Ok(());
        }
        self.budget.charge(pending.text_bytes())?;
        self.commit_unmetered(pending).await
    }

    /// Commit what is pending without counting it against the run's journal limit: the step
    /// that ends the run (so that a run over the limit can still record that it failed).
    pub async fn commit_unmetered(&self, pending: &mut Step) -> Result<(), EngineError> {
        if pending.is_empty() {
            return Ok(());
        }
        let step = std::mem::take(pending);
        self.journal.commit(step).await.map_err(EngineError::Journal)
    }

    /// Commit what is pending while `work` goes on, and return what `work` gives; a failed commit
    /// (a lost lease, say) drops the work.
    pub async fn commit_alongside<F: Future>(
        &self,
        pending: &mut Step,
        work: F,
    ) -> Result<F::Output, EngineError> {
        let commit = self.commit(pending);
        tokio::pin!(commit, work);
        tokio::select! {
            committed = &mut commit => {
                committed?;
                Ok(work.await)
            }
            output = &mut work => {
                commit.await?;
                Ok(output)
            }
        }
    }

    /// Work that may share the next commit with `pending` (a model call whose pending step is
    /// replayable, [`Step::is_replayable`]; a round of foldable tool calls): done within
    /// [`FOLD_WINDOW`], the step stays pending, to be committed with what the work gave; slower
    /// work has the step committed while it goes on ([`Context::commit_alongside`]).
    async fn fold_or_commit_alongside<F: Future>(
        &self,
        pending: &mut Step,
        work: F,
    ) -> Result<F::Output, EngineError> {
        tokio::pin!(work);
        let quick = tokio::select! {
            biased;
            output = &mut work => Some(output),
            () = tokio::time::sleep(FOLD_WINDOW) => None,
        };
        match quick {
            Some(output) => Ok(output),
            None => self.commit_alongside(pending, work).await,
        }
    }

    /// Await `future` unless the run is cancelled first (`None`).
    pub async fn guarded<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            output = future => Some(output),
        }
    }
}

impl Context<'_> {
    /// Ask the model, keeping the rules above; `pending` is committed (or being committed) when
    /// the request goes out, and holds the reply's usage and `llm.finished` on return.
    pub async fn call_model(
        &self,
        call: ModelCall<'_>,
        pending: &mut Step,
    ) -> Result<ChatResponse, CallError> {
        let ModelCall { model, mut request, limits, purpose, task, agent } = call;
        if let (Some(deltas), Purpose::Turn(iteration)) = (&self.deltas, purpose) {
            request.deltas = Some(stream_to(deltas.clone(), task, agent, iteration));
        }
        let label = model.label();
        let capped = self.budget.is_capped();
        let tpm = model.budget.as_ref().filter(|b| b.tpm.is_some());
        // Estimated only where a budget needs it (a cap, a provider's tokens per minute, the
        // tenant's daily cap).
        let estimate = if capped || tpm.is_some() || self.journal.day_caps().is_some() {
            request.estimated_prompt_tokens()
        } else {
            0
        };
        if capped {
            self.budget.check_spend(estimate, prompt_cost(model, estimate))?;
        }
        // The tenant's daily caps: what it has spent today (committed), what this run has not
        // committed yet, and this call. Boxed: the future of a call for a tenant without caps
        // stays as small as it was.
        let day_spent = match self.journal.day_caps() {
            Some(caps) => Some(Box::pin(self.spent_today(caps, &pending.usage, model, estimate)).await?),
            None => None,
        };
        self.throttle(limits, model, estimate, task, agent, pending).await?;
        // Boxed, and only when traces are on: a run without them keeps the future it had.
        let traced = crate::telemetry::is_on()
            .then(|| Box::new(traced_call(model, purpose, task, agent, &mut request)));
        let (iteration, why) = purpose.describe();
        let data = LlmStarted { model: label.clone(), iteration, purpose: why };
        pending.event(Some(task), Some(agent), EventData::LlmStarted(data));
        let alongside = pending.is_replayable();
        // Counted as sent, in the step committed before (or while) it goes out: a call lost to a
        // crash, or one that fails, is still counted (its tokens are not known).
        pending.usage.llm_calls += 1;
        pending.spend_on(task, agent, &label).llm_calls += 1;
        if !alongside {
            self.commit(pending).await?;
        }
        let started = Instant::now();
        let run = self.journal.run_id().0;
        crate::probe::mark(run, "engine.work");
        let span = traced.as_ref().and_then(|t| t.1.as_ref());
        let chat = self.guarded(crate::telemetry::within(span, model.client.chat(&request)));
        let response =
            if alongside { self.fold_or_commit_alongside(pending, chat).await? } else { chat.await };
        crate::probe::mark(run, "llm.request");
        let response = response.ok_or(EngineError::Cancelled)?;
        if let Some(traced) = traced {
            end_traced_call(*traced, &request, &response, started.elapsed());
        }
        if let (Some(deltas), Some(_)) = (&self.deltas, &request.deltas) {
            // The reply's last deltas go out before anything committed after it (its
            // `llm.finished`, the run's end), which may close the streams that follow the run.
            deltas.publisher.flushed().await;
        }
        if let Some(budget) = tpm {
            // Correct the booked estimate by what the call used (nothing, if it failed).
            let used = response.as_ref().map_or(0, |r| r.usage.prompt_tokens + r.usage.completion_tokens);
            let seconds = (used as f64 - estimate as f64) * budget.token_seconds();
            let key = budget.token_key();
            // Boxed: the future of a call to an unbudgeted provider stays as small as it was.
            Box::pin(budget.shared.adjust(&key, seconds)).await.map_err(shared_budget_failed)?;
        }
        let mut response = response.map_err(CallError::Llm)?;
        scrub_reply(&mut response);
        let usage = response.usage;
        let elapsed = started.elapsed();
        let cost = model.price.as_ref().map(|price| price.cost(&usage));
        self.metrics.observe_llm(&model.provider, &model.model, elapsed, &usage, cost);
        pending.usage.prompt_tokens += usage.prompt_tokens as i64;
        pending.usage.completion_tokens += usage.completion_tokens as i64;
        pending.usage.cached_tokens += usage.cached_tokens as i64;
        if usage.estimated {
            pending.usage.estimated_tokens += (usage.prompt_tokens + usage.completion_tokens) as i64;
        }
        pending.usage.cost_usd += cost.unwrap_or(0.0);
        let line = pending.spend_on(task, agent, &label);
        line.prompt_tokens += usage.prompt_tokens as i64;
        line.completion_tokens += usage.completion_tokens as i64;
        line.cached_tokens += usage.cached_tokens as i64;
        line.cost_usd += cost.unwrap_or(0.0);
        let data = LlmFinished {
            model: label,
            usage: TokenUsage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cached_tokens: usage.cached_tokens,
                estimated: usage.estimated,
            },
            cost_usd: cost,
            duration_ms: elapsed.as_millis() as u64,
            iteration,
            purpose: why,
            retries: response.retries,
        };
        pending.event(Some(task), Some(agent), EventData::LlmFinished(data));
        self.budget.spend(usage.prompt_tokens + usage.completion_tokens, cost.unwrap_or(0.0))?;
        if let Some(spent) = day_spent {
            let used = usage.prompt_tokens + usage.completion_tokens;
            let after = (spent.tokens + used, spent.cost_usd + cost.unwrap_or(0.0));
            spent
                .caps
                .check(after.0, after.1, "a model call took")
                .map_err(|message| EngineError::failed(ErrorKind::Budget, message))?;
        }
        self.budget.check_reply(reply_bytes(&response))?;
        Ok(response)
    }

    /// What the run's tenant has spent today before a call (committed, and `unsaved` by this
    /// run), checked with the call's `estimate` of prompt tokens against its daily caps.
    async fn spent_today(
        &self,
        caps: DayCaps,
        unsaved: &super::journal::UsageDelta,
        model: &ResolvedModel,
        estimate: u64,
    ) -> Result<Box<DaySpent>, EngineError> {
        let unsaved_tokens = u64::try_from(unsaved.prompt_tokens + unsaved.completion_tokens).unwrap_or(0);
        let unsaved_cost = unsaved.cost_usd;
        let (tokens, cost_usd) = self.journal.spent_today().await.map_err(EngineError::Journal)?;
        let spent = DaySpent { caps, tokens: tokens + unsaved_tokens, cost_usd: cost_usd + unsaved_cost };
        let next = (spent.tokens + estimate, spent.cost_usd + prompt_cost(model, estimate));
        caps.check(next.0, next.1, "the next model call would take")
            .map_err(|message| EngineError::failed(ErrorKind::Budget, message))?;
        Ok(Box::new(spent))
    }

    /// Wait for a slot under every limit (this replica's gates, then the provider's budget shared
    /// by the cluster, booked for a call of about `estimate` tokens), announcing the wait
    /// (`run.throttled`) first.
    async fn throttle(
        &self,
        limits: &[Limit],
        model: &ResolvedModel,
        estimate: u64,
        task: &str,
        agent: &str,
        pending: &mut Step,
    ) -> Result<(), EngineError> {
        let limiter = self.limiter;
        let now = limiter.now();
        let (mut start, mut binding) = (now, None);
        if !limits.is_empty() {
            binding = limits.iter().max_by_key(|l| limiter.earliest(&l.key)).map(Limit::describe);
            start = limiter.reserve(limits, now);
        }
        if let Some(budget) = &model.budget {
            // Boxed: the future of a call to an unbudgeted provider stays as small as it was.
            let booked = Box::pin(book_shared(budget, estimate, start.saturating_duration_since(now)));
            // The wait counts from the booking's answer (a booking may queue behind others'):
            // never early, late by the answer's trip at most.
            // (The clock is read after the answer: `limiter.now() + booked.await?` would read it
            // first, and a booking queued behind others would start early by its queueing.)
            let wait = booked.await?;
            let booked = limiter.now() + wait;
            if booked > start {
                (start, binding) = (booked, Some(budget.describe()));
            }
        }
        let wait = start.saturating_duration_since(limiter.now());
        if wait.is_zero() {
            return Ok(());
        }
        crate::telemetry::note("agentd.throttled", || {
            vec![
                opentelemetry::KeyValue::new("agentd.wait_ms", wait.as_millis() as i64),
                opentelemetry::KeyValue::new("agentd.limit", binding.clone().unwrap_or_default()),
            ]
        });
        let data = RunThrottled { wait_ms: wait.as_millis() as u64, limit: binding };
        pending.event(Some(task), Some(agent), EventData::RunThrottled(data));
        self.commit(pending).await?;
        self.guarded(tokio::time::sleep_until(start)).await.ok_or(EngineError::Cancelled)
    }
}

/// What `tokens` of prompt cost on `model` (nothing for an unpriced model).
fn prompt_cost(model: &ResolvedModel, tokens: u64) -> f64 {
    model.price.as_ref().map_or(0.0, |p| p.cost(&CallUsage { prompt_tokens: tokens, ..CallUsage::default() }))
}

/// A tenant's daily caps and what it had spent before a call.
struct DaySpent {
    caps: DayCaps,
    tokens: u64,
    cost_usd: f64,
}

/// Book a call of about `estimate` tokens on the provider's shared schedules, not before `after`
/// from now; the wait until its start.
async fn book_shared(
    budget: &ProviderBudget,
    estimate: u64,
    after: Duration,
) -> Result<Duration, EngineError> {
    let reservations = budget.reservations(estimate);
    budget.shared.reserve(&reservations, after).await.map_err(shared_budget_failed)
}

/// The shared budget could not be read or booked (the database is down): the run stops as when
/// its journal fails, and is resumed once it is back.
fn shared_budget_failed(error: String) -> EngineError {
    EngineError::Journal(JournalError::Storage(format!("the provider's shared budget: {error}")))
}

/// One tool call to perform.
pub struct ToolEffect<'a> {
    pub entry: &'a ToolEntry,
    pub arguments: &'a Value,
    /// The call's journal key; a delegation's conversation is named after it.
    pub key: &'a str,
    /// The model's id of the call (`gen_ai.tool.call.id`).
    pub id: &'a str,
}

impl ToolEffect<'_> {
    /// May the call start before its start is durable? Yes if it runs an idempotent tool (a
    /// delegation does not: the coworker's work is journaled as it goes).
    fn foldable(&self) -> bool {
        self.entry.info.idempotent && matches!(self.entry.runner, Runner::Tool(_))
    }
}

/// Each call's outcome and duration in ms, where a call ran.
pub type Outcomes = Vec<Option<(ToolCallOutcome, u64)>>;

impl Context<'_> {
    /// Run the tool calls of one round of `task` concurrently (`None`: nothing to run in that
    /// place), keeping the rules above; `pending` holds their journaled starts.
    pub async fn run_tools(
        &self,
        task: &str,
        calls: &[Option<ToolEffect<'_>>],
        pending: &mut Step,
    ) -> Result<Outcomes, EngineError> {
        let run = self.journal.run_id().0;
        if !calls.iter().flatten().all(ToolEffect::foldable) {
            self.commit(pending).await?;
            crate::probe::mark(run, "engine.work");
            let outcomes = self.execute_tools(task, calls).await;
            crate::probe::mark(run, "tool.call");
            return outcomes;
        }
        crate::probe::mark(run, "engine.work");
        let outcomes = self.fold_or_commit_alongside(pending, self.execute_tools(task, calls)).await?;
        crate::probe::mark(run, "tool.call");
        outcomes
    }

    async fn execute_tools(
        &self,
        task: &str,
        calls: &[Option<ToolEffect<'_>>],
    ) -> Result<Outcomes, EngineError> {
        let runs = calls.iter().map(|call| async move {
            let Some(ToolEffect { entry, arguments, key, id }) = call else { return Ok(None) };
            let started = Instant::now();
            let span = crate::telemetry::is_on().then(|| tool_span(entry, id, arguments)).flatten();
            let result = crate::telemetry::within(span.as_ref(), async {
                Ok::<_, EngineError>(match &entry.runner {
                    Runner::Tool(tool) => {
                        match self.replay.map(|replay| replay.answer(entry.name(), arguments)) {
                            // A replay: the recorded run's outcome, or a divergence, without the tool.
                            Some(ReplayAnswer::Recorded(outcome)) => outcome.clone(),
                            Some(ReplayAnswer::Diverged(refusal)) => Err(refusal),
                            Some(ReplayAnswer::Run) | None => {
                                let call = CallInfo::for_call(self.journal.run_id(), key);
                                tool.call((*arguments).clone(), call).await
                            }
                        }
                    }
                    Runner::Delegate(mode) => match self.coworkers {
                        Some(coworkers) => {
                            let request =
                                Delegation { task, conversation: (*key).into(), mode: *mode, arguments };
                            coworkers.delegate(self, request).await?
                        }
                        None => Err("this agent has no coworkers to delegate to".to_owned()),
                    },
                })
            })
            .await;
            if let Some(span) = span {
                end_tool_span(span, &result);
            }
            let result = result?;
            let elapsed = started.elapsed();
            self.metrics.observe_tool(entry.name(), elapsed);
            let outcome = match result {
                Ok(mut result) => {
                    crate::text::scrub(&mut result);
                    ToolCallOutcome::Succeeded { result, cached: false }
                }
                Err(mut error) => {
                    crate::text::scrub(&mut error);
                    ToolCallOutcome::Failed { error }
                }
            };
            Ok(Some((outcome, elapsed.as_millis() as u64)))
        });
        let results = self.guarded(join_all(runs)).await.ok_or(EngineError::Cancelled)?;
        results.into_iter().collect()
    }
}

/// A model call's span and what it says (traces on): started beneath the current span, the
/// request's stream timed to its first chunk, the prompt captured if the operator opted in.
fn traced_call(
    model: &ResolvedModel,
    purpose: Purpose,
    task: &str,
    agent: &str,
    request: &mut ChatRequest,
) -> (TracedCall, Option<crate::telemetry::Scope>) {
    let call = TracedCall {
        provider: model.client.system(),
        model: model.model.clone(),
        purpose: purpose.name(),
        task: task.to_owned(),
        agent: agent.to_owned(),
    };
    let span = crate::telemetry::model_call(&call.describe(request));
    if let Some(span) = &span {
        crate::telemetry::capture(span, "gen_ai.input.messages", || input_messages(&request.messages));
        if let Some(sink) = request.deltas.take() {
            let (span, started) = (span.clone(), Instant::now());
            let first = std::sync::Once::new();
            request.deltas = Some(DeltaSink(std::sync::Arc::new(move |attempt, text: &str| {
                first.call_once(|| {
                    span.set("gen_ai.response.time_to_first_chunk", started.elapsed().as_secs_f64())
                });
                (sink.0)(attempt, text)
            })));
        }
    }
    (call, span)
}

/// What a traced model call's span says of it.
struct TracedCall {
    provider: &'static str,
    model: String,
    purpose: &'static str,
    task: String,
    agent: String,
}

impl TracedCall {
    fn describe<'a>(&'a self, request: &ChatRequest) -> crate::telemetry::ModelCall<'a> {
        crate::telemetry::ModelCall {
            operation: "chat",
            provider: self.provider,
            model: &self.model,
            purpose: self.purpose,
            task: Some(&self.task),
            agent: Some(&self.agent),
            temperature: request.temperature,
            max_tokens: request.max_tokens,
        }
    }
}

/// End a traced model call's span with its reply or error.
fn end_traced_call(
    (call, span): (TracedCall, Option<crate::telemetry::Scope>),
    request: &ChatRequest,
    response: &Result<ChatResponse, LlmError>,
    elapsed: Duration,
) {
    let Some(span) = span else { return };
    let described = call.describe(request);
    match response {
        Ok(reply) => {
            crate::telemetry::capture(&span, "gen_ai.output.messages", || output_messages(reply));
            let usage = &reply.usage;
            let answer = crate::telemetry::ModelReply {
                response_model: reply.response_model.as_deref(),
                response_id: reply.response_id.as_deref(),
                finish_reason: reply.finish_reason.as_deref(),
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cached_tokens: usage.cached_tokens,
            };
            if usage.estimated {
                span.set("agentd.usage.estimated", true);
            }
            crate::telemetry::end_model_call(span, &described, Ok(&answer), elapsed);
        }
        Err(error) => crate::telemetry::end_model_call(
            span,
            &described,
            Err((error.kind.as_str(), &error.message)),
            elapsed,
        ),
    }
}

/// A request's messages in the GenAI conventions' shape (`gen_ai.input.messages`).
fn input_messages(messages: &[crate::llm::ChatMessage]) -> String {
    let shaped: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut parts = Vec::new();
            if let Some(text) = &m.content {
                match &m.tool_call_id {
                    Some(id) => parts
                        .push(serde_json::json!({"type": "tool_call_response", "id": id, "response": text})),
                    None => parts.push(serde_json::json!({"type": "text", "content": text})),
                }
            }
            for call in &m.tool_calls {
                parts.push(tool_call_part(call));
            }
            serde_json::json!({"role": m.role.as_str(), "parts": parts})
        })
        .collect();
    Value::Array(shaped).to_string()
}

/// A reply in the GenAI conventions' shape (`gen_ai.output.messages`).
fn output_messages(reply: &ChatResponse) -> String {
    let mut parts = Vec::new();
    if let Some(text) = &reply.content {
        parts.push(serde_json::json!({"type": "text", "content": text}));
    }
    parts.extend(reply.tool_calls.iter().map(tool_call_part));
    let reason = reply.finish_reason.as_deref().unwrap_or("stop");
    serde_json::json!([{"role": "assistant", "parts": parts, "finish_reason": reason}]).to_string()
}

fn tool_call_part(call: &crate::llm::ToolCallRequest) -> Value {
    let arguments =
        serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::String(call.arguments.clone()));
    serde_json::json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
}

/// A tool call's span (traces on), its arguments captured if the operator opted in.
fn tool_span(entry: &ToolEntry, call_id: &str, arguments: &Value) -> Option<crate::telemetry::Scope> {
    let (kind, server) = match &entry.runner {
        Runner::Tool(tool) => {
            let (kind, server) = tool.kind();
            (kind, server.map(|server| (server, tool.mcp_method())))
        }
        Runner::Delegate(_) => ("delegation", None),
    };
    let call = crate::telemetry::ToolCall {
        name: entry.name(),
        call_id,
        description: &entry.info.description,
        kind,
        mcp_server: server,
    };
    let span = crate::telemetry::tool_call(&call)?;
    crate::telemetry::capture(&span, "gen_ai.tool.call.arguments", || arguments.to_string());
    Some(span)
}

/// End a tool call's span with its result (captured if the operator opted in) or error.
fn end_tool_span(span: crate::telemetry::Scope, result: &Result<Result<String, String>, EngineError>) {
    match result {
        Ok(Ok(text)) => crate::telemetry::capture(&span, "gen_ai.tool.call.result", || text.clone()),
        Ok(Err(error)) => span.fail("tool_error", &crate::domain::memory::cut(error, 1024)),
        Err(error) => span.fail("stopped", &error.to_string()),
    }
    span.end();
}

/// The gates of a call to `model` made for an agent whose own calls pass `limits`: the same run
/// gates (crew or agent `max_rpm`), with `model`'s provider gate in place of the agent's (a
/// planner or judge may use another provider).
pub fn gates_for(limits: &[Limit], model: &ResolvedModel) -> Vec<Limit> {
    let mut gates: Vec<Limit> = limits.iter().filter(|l| !is_provider_gate(l)).cloned().collect();
    gates.push(Limit::holds_only(provider_key(&model.provider)));
    gates
}

fn is_provider_gate(limit: &Limit) -> bool {
    limit.key.starts_with(&provider_key(""))
}

/// Replace the NUL characters of a model's reply, which Postgres cannot store.
/// The bytes of a reply: its text and tool calls.
fn reply_bytes(response: &ChatResponse) -> usize {
    let calls: usize =
        response.tool_calls.iter().map(|c| c.id.len() + c.name.len() + c.arguments.len()).sum();
    response.content.as_ref().map_or(0, String::len) + calls
}

fn scrub_reply(response: &mut ChatResponse) {
    if let Some(content) = &mut response.content {
        crate::text::scrub(content);
    }
    for call in &mut response.tool_calls {
        crate::text::scrub(&mut call.id);
        crate::text::scrub(&mut call.name);
        crate::text::scrub(&mut call.arguments);
    }
}

//! The engine as a service sees it: one [`Engine`] per process, built with its models, tools, rate
//! limiter and metrics, and asked to execute (or continue) a run against its journal. It sets up
//! what the run's calls share (the [`Context`]), has the process perform the tasks, and journals
//! how the run ended.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::assemble::Assembler;
use super::delegation::Team;
use super::journal::{Journal, JournalError, RunChange, Snapshot, Step, TaskRecord};
use super::knowledge::KnowledgeSource;
use super::mcp::McpRun;
use super::memory::MemorySource;
use super::schemas::{RunSchemas, SharedSchemas};
use super::toolbox::RunTools;
use super::{judge, process};
use super::{Context, Coworkers, DeltaPublisher, EngineError, RunBudget, RunDeltas, Spend};
use crate::domain::crew::CrewSpec;
use crate::domain::evaluation::{Judge, Replay};
use crate::domain::event::{RunCompleted, RunFailed};
use crate::domain::{EventData, RunError, RunLimits, TaskOutput, TaskStatus};
use crate::llm::LlmRegistry;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::tools::http::Outbound;
use crate::tools::secrets::{NoSecrets, SecretStore};
use crate::tools::{builtin, Tool};

/// Executes runs. One per process, shared by every worker.
pub struct Engine {
    llms: LlmRegistry,
    builtins: Vec<Arc<dyn Tool>>,
    /// The built-in and delegation tools' schemas, compiled once for every run.
    schemas: Arc<SharedSchemas>,
    outbound: Arc<Outbound>,
    limiter: Arc<RateLimiter>,
    metrics: Arc<Metrics>,
    /// What one run may produce.
    limits: RunLimits,
    /// Where tools read the secrets a crew references (its run's tenant's).
    secrets: Arc<dyn SecretStore>,
    /// Where streaming runs' replies go as they arrive (none: runs do not stream).
    deltas: Option<Arc<dyn DeltaPublisher>>,
    /// Where runs search their tenant's knowledge bases (none: crews cannot use knowledge).
    knowledge: Option<Arc<dyn KnowledgeSource>>,
    /// Where runs recall their tenant's memories (none: crews cannot use memory).
    memory: Option<Arc<dyn MemorySource>>,
}

/// What an engine is built from: the shared handles the composition root ([`crate::app`]) hands
/// it. Nothing in the engine makes its own.
pub struct EngineParts {
    pub llms: LlmRegistry,
    /// The guarded HTTP client of the tools.
    pub outbound: Arc<Outbound>,
    /// The process's rate limiter: the one the LLM clients report 429 holds to.
    pub limiter: Arc<RateLimiter>,
    /// Where LLM and tool latencies go (what `/metrics` shows).
    pub metrics: Arc<Metrics>,
    /// What one run may produce.
    pub limits: RunLimits,
    /// Where tools read the secrets a crew references (each run its own tenant's).
    pub secrets: Arc<dyn SecretStore>,
    /// Where streaming runs' replies go as they arrive (none: runs do not stream).
    pub deltas: Option<Arc<dyn DeltaPublisher>>,
    /// Where runs search their tenant's knowledge bases (none: crews cannot use knowledge).
    pub knowledge: Option<Arc<dyn KnowledgeSource>>,
    /// Where runs recall their tenant's memories (none: crews cannot use memory).
    pub memory: Option<Arc<dyn MemorySource>>,
}

impl EngineParts {
    /// Parts for an engine of its own (tests, embedding): a limiter and metrics nobody else
    /// shares, no secrets, no streaming, the default limits.
    pub fn standalone(llms: LlmRegistry, outbound: Arc<Outbound>) -> Self {
        Self {
            llms,
            outbound,
            limiter: Arc::new(RateLimiter::default()),
            metrics: Arc::new(Metrics::default()),
            limits: RunLimits::default(),
            secrets: Arc::new(NoSecrets),
            deltas: None,
            knowledge: None,
            memory: None,
        }
    }
}

/// A run for the engine to execute: its crew and inputs, and what else its first task sees.
#[derive(Debug, Clone, Copy)]
pub struct RunJob<'a> {
    pub crew: &'a CrewSpec,
    pub inputs: &'a Map<String, Value>,
    /// Its thread's history ("Conversation so far"), put in its first task's context.
    pub history: Option<&'a str>,
    /// The run's first attempt: nothing can be journaled yet, so the journal is not read.
    pub first_attempt: bool,
    /// A replay's recorded calls: its tools' calls are answered from them.
    pub replay: Option<&'a Replay>,
    /// An evaluation case's rubric: the final answer is judged before the run completes.
    pub judge: Option<&'a Judge>,
}

impl Engine {
    pub fn new(parts: EngineParts) -> Self {
        let EngineParts { llms, outbound, limiter, metrics, limits, secrets, deltas, knowledge, memory } =
            parts;
        let builtins = builtin::instantiate(outbound.clone());
        let schemas = Arc::new(SharedSchemas::compile(&builtins));
        Self {
            llms,
            builtins,
            schemas,
            outbound,
            limiter,
            metrics,
            limits,
            secrets,
            deltas,
            knowledge,
            memory,
        }
    }

    /// Where the engine records its metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Add in-process tools, usable by name like the built-ins (for embedding and tests).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.builtins.extend(tools);
        self.schemas = Arc::new(SharedSchemas::compile(&self.builtins));
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
        self.execute(
            &RunJob { crew, inputs, history: None, first_attempt: false, replay: None, judge: None },
            journal,
            cancel,
        )
        .await
    }

    /// Execute (or continue) `job` to its end, as [`Engine::run`].
    pub async fn execute(
        &self,
        job: &RunJob<'_>,
        journal: &dyn Journal,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let snapshot = match job.first_attempt {
            false => journal.load().await?,
            true => {
                let pending = |task: &crate::domain::TaskSpec| TaskRecord {
                    name: task.name.clone(),
                    status: TaskStatus::Pending,
                    output: None,
                };
                Snapshot { tasks: job.crew.tasks.iter().map(pending).collect(), ..Snapshot::default() }
            }
        };
        self.run_from(job, journal, snapshot, cancel).await
    }

    #[tracing::instrument(skip_all, fields(crew = %job.crew.name))]
    async fn run_from(
        &self,
        job: &RunJob<'_>,
        journal: &dyn Journal,
        snapshot: Snapshot,
        cancel: &CancellationToken,
    ) -> Result<TaskOutput, EngineError> {
        let (crew, inputs) = (job.crew, job.inputs);
        let tools = RunTools::from_snapshot(&snapshot);
        let rate_key = format!("run-{}:", uuid::Uuid::now_v7().simple());
        let schemas = RunSchemas::compile(crew, self.schemas.clone());
        // The run's tools read its own tenant's secrets, and no one else's.
        let secrets = self.secrets.for_tenant(journal.tenant());
        let mcp = McpRun::new(crew, &self.outbound, &secrets, self.metrics.clone(), &snapshot);
        let assembler = Assembler {
            llms: &self.llms,
            builtins: &self.builtins,
            outbound: &self.outbound,
            secrets: &secrets,
            mcp: &mcp,
            crew,
            inputs,
            rate_key: &rate_key,
            schemas: &schemas,
            knowledge: self.knowledge.as_ref(),
            memory: self.memory.as_ref(),
            tenant: journal.tenant(),
            history: job.history,
        };
        let team = Team { assembler: &assembler };
        let (limiter, metrics) = (self.limiter.as_ref(), self.metrics.as_ref());
        let coworkers = Some(&team as &dyn Coworkers);
        let budget = RunBudget::new(self.limits, snapshot.text_bytes()).with_spend(Spend {
            max_tokens: crew.max_tokens,
            max_cost_usd: crew.max_cost_usd,
            tokens: snapshot.spent_tokens,
            cost_usd: snapshot.spent_cost_usd,
        });
        let budget = &budget;
        let ctx = Context {
            journal,
            snapshot: &snapshot,
            tools: &tools,
            cancel,
            coworkers,
            limiter,
            metrics,
            budget,
            replay: job.replay,
            deltas: self
                .deltas
                .clone()
                .filter(|_| crew.stream)
                .map(|publisher| RunDeltas { publisher, run_id: journal.run_id() }),
        };
        let mut pending = Step::default();
        let mut result = process::perform_tasks(&assembler, &ctx, &mut pending).await;
        if let (Ok(output), Some(judge), Some(last)) = (&result, job.judge, crew.tasks.last()) {
            let case = judge::Case { judge, task: &last.name, inputs, output };
            if let Err(error) = judge::judge(case, &self.llms, &ctx, &mut pending).await {
                result = Err(error);
            }
        }
        self.limiter.forget(&rate_key);
        log_end(&result);
        match &result {
            Ok(output) => {
                pending.event(
                    None,
                    None,
                    EventData::RunCompleted(RunCompleted { output: output.raw.clone() }),
                );
                pending.run = Some(RunChange::Completed { output: output.clone() });
            }
            Err(EngineError::Failed { kind, message }) => {
                let error = RunError { kind: *kind, message: message.clone() };
                pending.event(None, None, EventData::RunFailed(RunFailed { error: error.clone() }));
                pending.run = Some(RunChange::Failed { error });
            }
            Err(EngineError::AwaitingInput) => {}
            Err(_) => return result,
        }
        ctx.commit_unmetered(&mut pending).await?;
        result
    }
}

/// Log how a run's execution ended, at the level it deserves: cancellations, hand-backs, reviews
/// and a lost lease are normal operation; a failed run is the crew's, not the service's; only a
/// journal that fails is for an operator to look at.
fn log_end(result: &Result<TaskOutput, EngineError>) {
    match result {
        Ok(_) => {}
        Err(EngineError::Cancelled) => tracing::info!("the run stopped: cancelled, timed out or handed back"),
        Err(EngineError::AwaitingInput) => tracing::info!("the run awaits human input"),
        Err(EngineError::Failed { kind, message }) => tracing::warn!(?kind, %message, "the run failed"),
        Err(EngineError::Journal(JournalError::Fenced)) => {
            tracing::warn!("the journal refused a write: another attempt owns the run")
        }
        Err(EngineError::Journal(error)) => tracing::error!(%error, "the run stopped: its journal failed"),
    }
}

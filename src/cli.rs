//! The command line: `agentd [serve]`, `agentd migrate`, `agentd openapi`, `agentd fake-llm`, with
//! flags that fall back to environment variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, ApiKeys, Config, ConfigError, ConnectionLimits, FileConfig, Role, Secret};
use crate::domain::{CrewLimits, RunLimits};
use crate::local_postgres::{LocalPostgres, LocalSettings};
use crate::outbound::egress::EgressPolicy;

#[derive(Debug, Parser)]
#[command(name = "agentd", version, about = "Runs CrewAI-style crews of LLM agents, durably, on Postgres")]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Settings of `serve`, the default command.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API (the default). Applies pending migrations first.
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseArgs),
    /// Print the OpenAPI document.
    Openapi,
    /// Serve a fake OpenAI-compatible LLM (for demos and curl-driven integration tests; point a
    /// provider's base_url or OPENAI_BASE_URL at it): scripted with --script, or one text reply.
    FakeLlm(FakeLlmArgs),
}

#[derive(Debug, Clone, Args)]
struct FakeLlmArgs {
    /// Address to listen on (port 0: a free one; the log says which).
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
    /// A script of rules that answer requests (JSON, or TOML when the name ends in .toml; the
    /// format is in docs/fake-llm.md). Requests no rule matches get a 400 naming the request.
    #[arg(long, conflicts_with_all = ["reply", "delay_ms"])]
    script: Option<PathBuf>,
    /// The assistant message every request gets, without a script (ReAct agents need a
    /// "Final Answer: ..." reply).
    #[arg(long, default_value = "Hello from the fake LLM.")]
    reply: String,
    /// Milliseconds to wait before each reply, without a script.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=600_000))]
    delay_ms: u64,
    /// Requests kept for GET /calls (the oldest are dropped first; 0 keeps none).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    max_calls: u64,
}

#[derive(Debug, Clone, Args)]
struct DatabaseArgs {
    /// Postgres connection URL.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
}

#[derive(Debug, Clone, Args)]
struct ServeArgs {
    #[command(flatten)]
    database: DatabaseArgs,
    /// Where agentd keeps a private PostgreSQL cluster when DATABASE_URL is not set (default:
    /// ~/.local/share/agentd, or /var/lib/agentd as root).
    #[arg(long, env = "AGENTD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The directory of PostgreSQL's initdb and pg_ctl, for the private cluster (default: on
    /// PATH, else the newest /usr/lib/postgresql/*/bin).
    #[arg(long, env = "AGENTD_POSTGRES_BIN")]
    postgres_bin: Option<PathBuf>,
    /// Serve the default provider (`openai`) from agentd's built-in FAKE model: canned answers,
    /// no key, nothing leaves the machine. For trying agentd out; never a real LLM.
    #[arg(long, env = "AGENTD_FAKE_LLM")]
    fake_llm: bool,
    /// Address to listen on.
    #[arg(long, env = "AGENTD_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Connections served at once (besides a few spares that answer only the health routes);
    /// default: the open-file limit less what the database pool and outbound calls need.
    #[arg(long, env = "AGENTD_MAX_CONNECTIONS", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_connections: Option<u64>,
    /// Seconds a request's headers may take to arrive, from their first byte.
    #[arg(long, env = "AGENTD_HEADER_TIMEOUT_S", default_value_t = ConnectionLimits::default().header_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout_s: u64,
    /// Seconds a kept-alive connection may wait for its next request.
    #[arg(long, env = "AGENTD_IDLE_TIMEOUT_S", default_value_t = ConnectionLimits::default().idle_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    idle_timeout_s: u64,
    /// Seconds a request body may take to arrive (a slower sender gets 408).
    #[arg(long, env = "AGENTD_BODY_TIMEOUT_S", default_value_t = ConnectionLimits::default().body_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_timeout_s: u64,
    /// The key stored secrets are sealed with (AES-256-GCM): 32 bytes as base64 or 64 hex digits,
    /// e.g. `openssl rand -base64 32`. Without it the secrets routes answer 501 and crews that
    /// reference secrets are refused.
    #[arg(long, env = "AGENTD_SECRETS_KEY", hide_env_values = true)]
    secrets_key: Option<String>,
    /// The webhook signing secret, `whsec_` + base64 of 24 to 64 bytes (e.g.
    /// `whsec_$(openssl rand -base64 32)`): signs a kickoff's webhooks, and registered endpoints'
    /// secrets are derived from it. Every replica needs the same. Without it the webhook routes
    /// answer 501 and kickoffs with `webhooks` are refused.
    #[arg(long, env = "AGENTD_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// Comma-separated hosts or CIDRs webhooks may be sent to despite the private-address guard.
    #[arg(long, env = "AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS", default_value = "")]
    allow_private_webhook_hosts: String,
    /// Delays between a webhook delivery's attempts (`ms`, `s`, `m`, `h`); when they are used up
    /// the delivery has failed and its endpoint is disabled.
    #[arg(long, env = "AGENTD_WEBHOOK_RETRY_SCHEDULE", default_value = "5s,5m,30m,2h,5h,10h,10h")]
    webhook_retry_schedule: String,
    /// Seconds a rotated-out webhook secret keeps signing alongside the new one.
    #[arg(long, env = "AGENTD_WEBHOOK_ROTATION_GRACE_S", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(0..=2_592_000))]
    webhook_rotation_grace_s: u64,
    /// Comma-separated API keys; with none, the API is open.
    #[arg(long, env = "AGENTD_API_KEYS", hide_env_values = true)]
    api_keys: Option<String>,
    /// TOML file with LLM providers and limits.
    #[arg(long, env = "AGENTD_CONFIG")]
    config: Option<PathBuf>,
    /// Largest number of database connections of this replica.
    #[arg(long, env = "AGENTD_DB_MAX_CONNECTIONS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    db_max_connections: u32,
    /// Seconds in-flight requests get to finish after SIGTERM.
    #[arg(long, env = "AGENTD_SHUTDOWN_GRACE_S", default_value_t = 30)]
    shutdown_grace_s: u64,
    /// Comma-separated hosts or CIDRs that tools may reach despite the private-address guard.
    #[arg(long, env = "AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", default_value = "")]
    allow_private_tool_hosts: String,
    /// Seconds one outbound tool request may take.
    #[arg(long, env = "AGENTD_TOOL_TIMEOUT_S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    tool_timeout_s: u64,
    /// Longest tool response handed to a model, in bytes.
    #[arg(long, env = "AGENTD_TOOL_MAX_RESPONSE_BYTES", default_value_t = 65536, value_parser = clap::value_parser!(u64).range(256..=16_777_216))]
    tool_max_response_bytes: u64,
    /// Seconds one LLM request may take.
    #[arg(long, env = "AGENTD_LLM_TIMEOUT_S", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    llm_timeout_s: u64,
    /// What this replica does: api, worker or all.
    #[arg(long, env = "AGENTD_ROLE", default_value = "all")]
    role: Role,
    /// Runs in flight at once on this replica.
    #[arg(long, env = "AGENTD_WORKERS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    workers: u32,
    /// Seconds a worker's claim lasts without a heartbeat (a crashed replica's runs resume after this).
    #[arg(long, env = "AGENTD_LEASE_S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    lease_s: u64,
    /// Default time limit of a run in seconds (0: none); a kickoff's timeout_s overrides it.
    #[arg(long, env = "AGENTD_RUN_TIMEOUT_S", default_value_t = 3600)]
    run_timeout_s: u64,
    /// Agents a crew may have (more: 422 at kickoff).
    #[arg(long, env = "AGENTD_MAX_AGENTS", default_value_t = CrewLimits::default().max_agents as u32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_agents: u32,
    /// Tasks a crew may have (more: 422 at kickoff).
    #[arg(long, env = "AGENTD_MAX_TASKS", default_value_t = CrewLimits::default().max_tasks as u32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_tasks: u32,
    /// Tools a crew may declare, and an agent or a task may name (more: 422 at kickoff).
    #[arg(long, env = "AGENTD_MAX_TOOLS", default_value_t = CrewLimits::default().max_tools as u32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_tools: u32,
    /// Bytes of one model reply (more: the run fails with error.kind "limit").
    #[arg(long, env = "AGENTD_MAX_REPLY_BYTES", default_value_t = RunLimits::default().max_reply_bytes as u64, value_parser = clap::value_parser!(u64).range(1024..=1_073_741_824))]
    max_reply_bytes: u64,
    /// Bytes of one task's output, handed on as context (more: the run fails with error.kind "limit").
    #[arg(long, env = "AGENTD_MAX_TASK_OUTPUT_BYTES", default_value_t = RunLimits::default().max_task_output_bytes as u64, value_parser = clap::value_parser!(u64).range(1024..=1_073_741_824))]
    max_task_output_bytes: u64,
    /// Bytes of text one run may journal in all (more: the run fails with error.kind "limit").
    #[arg(long, env = "AGENTD_MAX_RUN_JOURNAL_BYTES", default_value_t = RunLimits::default().max_journal_bytes, value_parser = clap::value_parser!(u64).range(65_536..=1_099_511_627_776))]
    max_run_journal_bytes: u64,
    /// Days finished runs are kept before the retention pruner removes them with their journals
    /// (0: kept for ever).
    #[arg(long, env = "AGENTD_RETENTION_DAYS", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=36_500))]
    retention_days: u32,
    /// Attempts per LLM call; transient failures (connection, timeout, 408, 409, 429, 5xx) are retried.
    #[arg(long, env = "AGENTD_LLM_MAX_ATTEMPTS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=20))]
    llm_max_attempts: u32,
}

impl DatabaseArgs {
    /// The URL (`migrate` needs one; `serve` can do without).
    fn url(&self) -> Result<Secret, ConfigError> {
        self.database_url
            .clone()
            .map(Secret::new)
            .ok_or_else(|| ConfigError::Invalid("DATABASE_URL (or --database-url) is required".into()))
    }
}

impl ServeArgs {
    fn into_config(self) -> Result<Config, ConfigError> {
        let file = match &self.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        let mut providers = config::providers(&file, |name| std::env::var(name).ok())?;
        if self.fake_llm {
            let rules = fake_llm_rules();
            let demo = crate::fake_llm::Script::from_value(rules)
                .map_err(|e| ConfigError::Invalid(format!("the built-in fake model's script: {e}")))?;
            let openai = config::ProviderConfig {
                name: config::DEFAULT_PROVIDER.into(),
                kind: config::ProviderKind::Fake { script: std::sync::Arc::new(demo), bind: None },
                base_url: String::new(),
                api_key: None,
                rpm: None,
                tpm: None,
                native_tools: true,
                structured_outputs: true,
                prices: Default::default(),
            };
            providers.insert(openai.name.clone(), openai);
        }
        Ok(Config {
            bind: self.bind,
            connections: ConnectionLimits {
                max_connections: self.max_connections.map(|n| n as usize),
                header_timeout: Duration::from_secs(self.header_timeout_s),
                idle_timeout: Duration::from_secs(self.idle_timeout_s),
                body_timeout: Duration::from_secs(self.body_timeout_s),
            },
            // Filled in by `serve` with the private cluster's when there is none.
            database_url: self
                .database
                .database_url
                .clone()
                .map(Secret::new)
                .unwrap_or_else(|| Secret::new("")),
            db_max_connections: self.db_max_connections,
            api_keys: ApiKeys::parse(self.api_keys.as_deref().unwrap_or_default()),
            providers,
            default_model: file.default_model.unwrap_or_else(|| "openai/gpt-4o-mini".into()),
            shutdown_grace: Duration::from_secs(self.shutdown_grace_s),
            tool_egress: EgressPolicy::parse(&self.allow_private_tool_hosts)
                .map_err(|e| ConfigError::Invalid(format!("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS: {e}")))?,
            tool_timeout: Duration::from_secs(self.tool_timeout_s),
            tool_max_response_bytes: self.tool_max_response_bytes as usize,
            llm_timeout: Duration::from_secs(self.llm_timeout_s),
            llm_max_attempts: self.llm_max_attempts,
            role: self.role,
            workers: self.workers as usize,
            lease: Duration::from_secs(self.lease_s),
            run_timeout: (self.run_timeout_s > 0).then(|| Duration::from_secs(self.run_timeout_s)),
            crew_limits: CrewLimits {
                max_agents: self.max_agents as usize,
                max_tasks: self.max_tasks as usize,
                max_tools: self.max_tools as usize,
            },
            secrets_key: match self.secrets_key.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(text) => Some(std::sync::Arc::new(
                    crate::secrets::SecretsKey::parse(text)
                        .map_err(|e| ConfigError::Invalid(format!("AGENTD_SECRETS_KEY: {e}")))?,
                )),
            },
            webhooks: crate::webhooks::WebhookSettings {
                key: match self.webhook_secret.as_deref().map(str::trim) {
                    None | Some("") => None,
                    Some(text) => Some(
                        crate::webhooks::SigningKey::parse(text)
                            .map_err(|e| ConfigError::Invalid(format!("AGENTD_WEBHOOK_SECRET: {e}")))?,
                    ),
                },
                egress: EgressPolicy::parse(&self.allow_private_webhook_hosts)
                    .map_err(|e| ConfigError::Invalid(format!("AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS: {e}")))?,
                schedule: crate::webhooks::RetrySchedule::parse(&self.webhook_retry_schedule)
                    .map_err(|e| ConfigError::Invalid(format!("AGENTD_WEBHOOK_RETRY_SCHEDULE: {e}")))?,
                rotation_grace: Duration::from_secs(self.webhook_rotation_grace_s),
            },
            retention: (self.retention_days > 0)
                .then(|| Duration::from_secs(u64::from(self.retention_days) * 86_400)),
            run_limits: RunLimits {
                max_reply_bytes: self.max_reply_bytes as usize,
                max_task_output_bytes: self.max_task_output_bytes as usize,
                max_journal_bytes: self.max_run_journal_bytes,
            },
        })
    }
}

/// Parse the command line and run the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Openapi) => print_openapi(),
        Some(Command::Migrate(args)) => run_async(migrate(args)),
        Some(Command::Serve(args)) => run_async(serve(*args)),
        Some(Command::FakeLlm(args)) => run_async(fake_llm(args)),
        None => run_async(serve(cli.serve)),
    }
}

fn print_openapi() -> ExitCode {
    match crate::http::openapi().to_pretty_json() {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("agentd: cannot render the OpenAPI document: {error}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn run_async(task: impl std::future::Future<Output = Result<(), BoxError>>) -> ExitCode {
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agentd: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(task) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Once, on stderr (where the log goes too).
            eprintln!("agentd: {error}");
            ExitCode::FAILURE
        }
    }
}

/// What the built-in fake model (`--fake-llm`) answers to every prompt.
const FAKE_LLM_ANSWER: &str =
    "This answer comes from agentd's built-in FAKE model (--fake-llm), not a real LLM. \
     Configure a provider (OPENAI_API_KEY, or AGENTD_CONFIG) to get real answers.";

/// The built-in fake model's script, which shows the agent loop at work: an agent offered tools
/// calls the first one once (arguments from its schema's examples) and answers with its result;
/// a planner gets a one-step plan (the task's answer then quotes the step's), a guardrail judge
/// passes every answer. ReAct agents (their
/// system prompt asks for "Final Answer:") get the same in ReAct text. Every answer says it is
/// a fake's.
fn fake_llm_rules() -> serde_json::Value {
    let after_tool = format!("{FAKE_LLM_ANSWER} The {{{{first_tool}}}} tool answered: {{{{tool_result}}}}");
    let after_observation = format!("{FAKE_LLM_ANSWER} The tool answered: {{{{1}}}}");
    let observation = serde_json::json!({"regex": "(?s)Observation:\\s*(.*)"});
    let plan = r#"{"steps": [{"description": "Do the task as asked (a plan from the FAKE model)", "expected_tool": null}]}"#;
    let verdict = r#"{"pass": true, "reason": "the FAKE model passes every guardrail"}"#;
    // The last turn of a planned task is asked for its answer from its steps' results.
    let results = serde_json::json!({"regex": "(?s)Their results:\n(.*)\n\nGive the final answer"});
    let from_steps = format!("{FAKE_LLM_ANSWER} From the plan's steps: {{{{1}}}}");
    serde_json::json!({"rules": [
        {"name": "planner", "when": {"system": "You plan how to perform a task"}, "reply": {"text": plan}},
        {"name": "guardrail", "when": {"system": "strict reviewer"}, "reply": {"text": verdict}},
        {"name": "react answer from the plan", "when": {"system": "Final Answer:", "message": results},
         "reply": {"react": {"final_answer": from_steps}, "delay_ms": 100}},
        {"name": "answer from the plan", "when": {"message": results}, "reply": {"text": from_steps, "delay_ms": 100}},
        {"name": "native tool call", "when": {"tools": true, "call": 1},
         "reply": {"tool_calls": [{"name": "$first_tool", "arguments": "$example"}], "delay_ms": 100}},
        {"name": "native answer after the tool", "when": {"tools": true, "tool_result": {"regex": "(?s).*"}},
         "reply": {"text": after_tool, "delay_ms": 100}},
        {"name": "react tool call", "when": {"system": "Tool Name:", "call": 1},
         "reply": {"react": {"action": "$first_tool", "input": "$example"}, "delay_ms": 100}},
        {"name": "react answer after the tool", "when": {"system": "Tool Name:", "message": observation},
         "reply": {"react": {"final_answer": after_observation}, "delay_ms": 100}},
        {"name": "react", "when": {"system": "Final Answer:"},
         "reply": {"text": format!("Final Answer: {FAKE_LLM_ANSWER}"), "delay_ms": 200}},
        {"name": "native", "reply": {"text": FAKE_LLM_ANSWER, "delay_ms": 200}},
    ]})
}

async fn serve(args: ServeArgs) -> Result<(), BoxError> {
    let local = LocalSettings { data_dir: args.data_dir.clone(), bin_dir: args.postgres_bin.clone() };
    let use_local = args.database.database_url.is_none();
    let mut config = args.into_config()?;
    let cluster = match use_local {
        true => Some(LocalPostgres::start(&local).await?),
        false => None,
    };
    if let Some(cluster) = &cluster {
        config.database_url = cluster.url();
    }
    let served = crate::app::serve(config).await;
    if let Some(cluster) = cluster {
        cluster.stop().await;
    }
    Ok(served?)
}

async fn fake_llm(args: FakeLlmArgs) -> Result<(), BoxError> {
    use crate::fake_llm::{FakeLlm, Script};
    let script = match &args.script {
        Some(path) => Script::load(path)?,
        None => Script::single_reply(&args.reply, args.delay_ms)?,
    };
    let fake = FakeLlm::start_on(args.bind).await?;
    fake.set_recording(args.max_calls > 0);
    fake.set_max_recorded(args.max_calls);
    let rules = script.len();
    fake.set_script(Some(std::sync::Arc::new(script)));
    tracing::info!(addr = %fake.addr(), base_url = %fake.base_url(), rules, "fake LLM listening");
    let shutdown = tokio_util::sync::CancellationToken::new();
    crate::app::watch_signals(shutdown).await;
    Ok(())
}

async fn migrate(args: DatabaseArgs) -> Result<(), BoxError> {
    let url = args.url()?;
    let store = crate::app::connect(&url, 2)?;
    crate::app::migrate_when_up(&store, Duration::from_secs(60)).await?;
    tracing::info!("migrations applied");
    Ok(())
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_http=info"));
    // Colours only on a terminal: a log written to a file or a pipe carries no escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();
}

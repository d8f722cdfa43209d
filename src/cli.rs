//! The command line: `agentd [serve]`, `agentd migrate`, `agentd openapi`, `agentd fake-llm`, `agentd crews import`, with
//! flags that fall back to environment variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Arg, ArgAction, Args, Parser, Subcommand};

mod import;

use crate::config::{Config, ConfigError, Secret};
use crate::local_postgres::{LocalPostgres, LocalSettings};
use crate::settings::{Loaded, LogFormat, Settings, SettingsError, Sources, SETTINGS};

/// What `agentd --version` says: the release and the schema this binary knows.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{} (schema {})", crate::release::RELEASE, crate::store::schema_version())
});

#[derive(Debug, Parser)]
#[command(name = "agentd", version = VERSION.as_str(), about = "Runs CrewAI-style crews of LLM agents, durably, on Postgres")]
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
    Serve(ServeArgs),
    /// Apply pending database migrations and exit (the database from the same settings as serve).
    Migrate(ServeArgs),
    /// Print the settings in effect (default < file < environment < flags) as TOML, with the
    /// source of each value; secrets are redacted.
    Config(ConfigArgs),
    /// Manage API keys in the database (for bootstrapping: no key is needed).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Work with crews: import a CrewAI project (`agentd crews import crewai PATH`).
    #[command(subcommand)]
    Crews(import::CrewsCommand),
    /// Print the OpenAPI document.
    Openapi,
    /// Serve a fake OpenAI-compatible LLM (for demos and curl-driven integration tests; point a
    /// provider's base_url or OPENAI_BASE_URL at it): scripted with --script, or one text reply.
    FakeLlm(FakeLlmArgs),
    /// Read a document from stdin and write its text as JSON (what `serve` runs, as a child
    /// process, for every document it ingests: see `knowledge::extractor`).
    #[command(hide = true)]
    Extract(ExtractArgs),
}

#[derive(Debug, Clone, Args)]
struct ExtractArgs {
    /// The document's media type (text/plain, application/pdf, ...).
    #[arg(long)]
    media_type: String,
    /// The address space this process may use, in bytes.
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    max_memory_bytes: u64,
    /// The CPU time this process may use, in seconds.
    #[arg(long, default_value_t = 60)]
    cpu_seconds: u64,
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create a key (and its tenant, if it does not exist) and print it: the only time it is shown.
    Create(KeysCreateArgs),
}

#[derive(Debug, Clone, Args)]
struct KeysCreateArgs {
    /// The tenant the key acts for.
    #[arg(long, default_value = crate::domain::DEFAULT_TENANT)]
    tenant: String,
    /// What the key may do: read, kickoff, approve, manage, admin (repeat or comma-separate).
    #[arg(long = "scope", required = true, value_delimiter = ',')]
    scopes: Vec<crate::domain::Scope>,
    /// What the key is for.
    #[arg(long, default_value = "created with agentd keys create")]
    name: String,
    /// When the key stops working (RFC 3339); default: never.
    #[arg(long)]
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Clone, Args)]
struct ConfigArgs {
    /// Print every setting at its default with what it means (agentd.example.toml) instead.
    #[arg(long)]
    example: bool,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Clone, Args)]
struct FakeLlmArgs {
    /// Address to listen on (port 0: a free one; the log says which).
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
    /// A script of rules that answer requests (JSON, or TOML when the name ends in .toml; the
    /// format is in docs/guides/testing-with-the-fake-model.md). Requests no rule matches get a
    /// 400 naming the request.
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

/// The settings given on the command line: the settings file, and a flag per setting of
/// [`SETTINGS`] (their values are checked with the other layers', see [`crate::settings`]).
#[derive(Debug, Clone, Default)]
struct ServeArgs {
    config: Option<PathBuf>,
    flags: Vec<(String, String)>,
}

const CONFIG_FLAG: &str = "config";

impl clap::FromArgMatches for ServeArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let config = matches.get_one::<PathBuf>(CONFIG_FLAG).cloned();
        let flags = SETTINGS
            .iter()
            .filter(|s| matches.value_source(s.key) == Some(clap::parser::ValueSource::CommandLine))
            .filter_map(|s| match s.switch {
                true => Some((s.key.to_owned(), "true".to_owned())),
                false => matches.get_one::<String>(s.key).map(|v| (s.key.to_owned(), v.clone())),
            })
            .collect();
        Ok(Self { config, flags })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for ServeArgs {
    fn augment_args(command: clap::Command) -> clap::Command {
        let defaults = crate::settings::reference::defaults_shown();
        let config = Arg::new(CONFIG_FLAG)
            .long(CONFIG_FLAG)
            .env("AGENTD_CONFIG")
            .value_name("FILE")
            .value_parser(clap::value_parser!(PathBuf))
            .help("TOML file of settings: any setting below by its key (max_agents = 20), and [providers.<name>]");
        SETTINGS.iter().fold(command.arg(config), |command, setting| {
            let default = defaults.get(setting.key).cloned().unwrap_or_else(|| setting.unset.to_owned());
            let help = format!("{} [env: {}] [default: {default}]", setting.help, setting.env());
            let arg = Arg::new(setting.key).long(setting.flag()).help(help);
            let arg = match setting.switch {
                true => arg.action(ArgAction::SetTrue),
                false => arg.action(ArgAction::Set).value_name(setting.key.to_ascii_uppercase()),
            };
            command.arg(arg)
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

impl ServeArgs {
    /// The settings from every layer, with the process's environment.
    fn load(&self) -> Result<Loaded, SettingsError> {
        let env = |name: &str| std::env::var(name).ok();
        let sources = Sources { file: self.config.as_deref(), env: &env, flags: self.flags.clone() };
        Settings::load(&sources)
    }
}

/// The configuration the settings describe; a value the parts cannot use names its setting's source.
fn resolve(loaded: &Loaded) -> Result<Config, SettingsError> {
    Config::from_settings(&loaded.settings, |name| std::env::var(name).ok()).map_err(|error| match error {
        ConfigError::Setting { key, message } => loaded.invalid(key, message),
        ConfigError::Invalid(message) => SettingsError::Invalid(message),
    })
}

/// Parse the command line and run the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Openapi) => print_openapi(),
        Some(Command::Migrate(args)) => run_async(migrate(args)),
        Some(Command::Config(args)) => print_config(&args),
        Some(Command::Keys(KeysCommand::Create(args))) => run_async(create_key(args)),
        Some(Command::Serve(args)) => run_serve(args),
        Some(Command::FakeLlm(args)) => run_async(fake_llm(args)),
        Some(Command::Crews(command)) => start_runtime(import::run(command)),
        Some(Command::Extract(args)) => {
            crate::knowledge::extractor::child_main(&args.media_type, args.max_memory_bytes, args.cpu_seconds)
        }
        None => run_serve(cli.serve),
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

/// `agentd serve`: its log lines as its settings say (a setting that cannot be read is reported
/// by `serve`, in text).
fn run_serve(args: ServeArgs) -> ExitCode {
    let format = args.load().map(|loaded| loaded.settings.log_format).unwrap_or_default();
    init_tracing(format);
    start_runtime(serve(args))
}

fn run_async(task: impl std::future::Future<Output = Result<(), BoxError>>) -> ExitCode {
    init_tracing(LogFormat::Text);
    start_runtime(task)
}

fn start_runtime(task: impl std::future::Future<Output = Result<(), BoxError>>) -> ExitCode {
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

async fn serve(args: ServeArgs) -> Result<(), BoxError> {
    let loaded = args.load()?;
    for name in crate::settings::unknown_variables(std::env::vars().map(|(name, _)| name)) {
        tracing::warn!(variable = %name, "this AGENTD_ variable names no setting and is ignored (see agentd config --example)");
    }
    let mut config = resolve(&loaded)?;
    let settings = &loaded.settings;
    let local = LocalSettings { data_dir: settings.data_dir.clone(), bin_dir: settings.postgres_bin.clone() };
    let cluster = match settings.database_url.is_none() {
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

/// `agentd config`: the settings in effect, or (`--example`) every setting at its default.
fn print_config(args: &ConfigArgs) -> ExitCode {
    if args.example {
        print!("{}", crate::settings::reference::example_toml());
        return ExitCode::SUCCESS;
    }
    let checked = args.serve.load().and_then(|loaded| resolve(&loaded).map(|_| loaded));
    match checked {
        Ok(loaded) => {
            print!("{}", crate::settings::reference::effective(&loaded));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("agentd: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn fake_llm(args: FakeLlmArgs) -> Result<(), BoxError> {
    use crate::fake_llm::{FakeLlm, Script};
    let script = match &args.script {
        Some(path) => Script::load(path)?,
        None => Script::single_reply(&args.reply, args.delay_ms)?,
    };
    let fake = FakeLlm::serve(crate::net::listen(args.bind)?)?;
    fake.set_recording(args.max_calls > 0);
    fake.set_max_recorded(args.max_calls);
    let rules = script.len();
    fake.set_script(Some(std::sync::Arc::new(script)));
    tracing::info!(addr = %fake.addr(), base_url = %fake.base_url(), rules, "fake LLM listening");
    let shutdown = tokio_util::sync::CancellationToken::new();
    crate::app::watch_signals(shutdown).await;
    Ok(())
}

async fn migrate(args: ServeArgs) -> Result<(), BoxError> {
    let loaded = args.load()?;
    let Some(url) = loaded.settings.database_url.clone() else {
        return Err(
            "DATABASE_URL (or --database-url, or database_url in the settings file) is required".into()
        );
    };
    let store = crate::app::connect(&Secret::new(url), 2)?;
    crate::app::migrate_when_up(&store, Duration::from_secs(60)).await?;
    tracing::info!("migrations applied");
    Ok(())
}

/// `agentd keys create`: a key straight into the database, printed once on stdout.
async fn create_key(args: KeysCreateArgs) -> Result<(), BoxError> {
    crate::domain::tenant::check_tenant_name(&args.tenant)?;
    let tenant = crate::domain::TenantId::new(args.tenant.as_str());
    crate::domain::field::check_text("--name", &args.name, crate::domain::field::TextKind::Line)
        .map_err(|error| format!("{} {}", error.field, error.message))?;
    let loaded = args.serve.load()?;
    let Some(url) = loaded.settings.database_url.clone() else {
        return Err(
            "DATABASE_URL (or --database-url, or database_url in the settings file) is required".into()
        );
    };
    let store = crate::app::connect(&Secret::new(url), 2)?;
    crate::app::migrate_when_up(&store, Duration::from_secs(60)).await?;
    // Recorded as made by no key, like a change through a key of AGENTD_API_KEYS.
    let audit =
        crate::store::Audit::new(None, &tenant, "tenant.create", &format!("/v1/tenants/{}", args.tenant));
    if store.create_tenant(&tenant, &crate::domain::Quotas::default(), &audit).await?.is_some() {
        tracing::info!(tenant = %args.tenant, "tenant created");
    }
    let audit = crate::store::Audit::new(None, &tenant, "key.create", "/v1/keys");
    let created =
        crate::service::issue_key(&store, &tenant, &args.name, &args.scopes, args.expires_at, &audit)
            .await
            .map_err(|e| e.to_string())?;
    tracing::info!(key = %created.record.id, tenant = %args.tenant, prefix = %created.record.prefix, "key created");
    println!("{}", created.key);
    Ok(())
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_http=info"));
    // Colours only on a terminal: a log written to a file or a pipe carries no escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => fmt.with_ansi(ansi).init(),
        LogFormat::Json => fmt.with_ansi(false).event_format(crate::telemetry::log::JsonLines).init(),
    }
}

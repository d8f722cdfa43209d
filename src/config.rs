//! The service's configuration, resolved from [`Settings`]: what the settings say, turned into
//! the parts' own types (durations, egress policies, keys, providers, limits) once, at start.
//! A value the parts cannot use is an error naming its setting. Secrets are wrapped in
//! [`Secret`], whose `Debug` never shows them.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::{CrewLimits, RunLimits};
use crate::outbound::egress::EgressPolicy;
pub use crate::settings::{ProviderKindSetting, ProviderSettings, Settings};

/// The provider used for a bare model name and configured from `OPENAI_*`.
pub use crate::domain::crew::DEFAULT_PROVIDER;
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The API keys clients must present; stored as SHA-256 digests and compared in constant time.
#[derive(Clone, Default)]
pub struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeys({} configured)", self.digests.len())
    }
}

impl ApiKeys {
    /// Keys from a comma-separated list; blanks are ignored.
    pub fn parse(list: &str) -> Self {
        let digests = list
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| Sha256::digest(k.as_bytes()).into())
            .collect();
        Self { digests }
    }

    /// No keys configured (the API is open unless keys are stored).
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// How many keys are configured.
    pub fn len(&self) -> usize {
        self.digests.len()
    }

    /// Is `candidate` one of the keys? Compares against every key, in constant time per key,
    /// whatever matches, so timing says nothing about the keys.
    pub fn accepts(&self, candidate: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(candidate.as_bytes()).into();
        self.digests.iter().fold(subtle::Choice::from(0), |found, key| found | key.ct_eq(&digest)).into()
    }
}

pub use crate::llm::{ProviderConfig, ProviderKind};
pub use crate::outbound::Secret;

pub use crate::settings::Role;

/// How the API serves connections (see [`crate::http::server`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once, besides a few spares for the health routes; `None`: derived
    /// from the process's open-file limit.
    pub max_connections: Option<usize>,
    /// Time for a request's headers to arrive, from their first byte.
    pub header_timeout: std::time::Duration,
    /// Time a kept-alive connection may wait for its next request.
    pub idle_timeout: std::time::Duration,
    /// Time for a request body to arrive.
    pub body_timeout: std::time::Duration,
}

impl ConnectionLimits {
    /// The limits `s` sets.
    pub fn from_settings(s: &Settings) -> Self {
        let secs = std::time::Duration::from_secs;
        Self {
            max_connections: s.max_connections.map(|n| n as usize),
            header_timeout: secs(s.header_timeout_s),
            idle_timeout: secs(s.idle_timeout_s),
            body_timeout: secs(s.body_timeout_s),
        }
    }
}

impl Default for ConnectionLimits {
    /// The settings' defaults.
    fn default() -> Self {
        Self::from_settings(&Settings::default())
    }
}

/// Everything `agentd serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    /// The browser origins the agent protocols' endpoints accept.
    pub allowed_origins: crate::net::OriginPolicy,
    /// Connection cap and timeouts of the API.
    pub connections: ConnectionLimits,
    pub database_url: Secret,
    pub db_max_connections: u32,
    pub api_keys: ApiKeys,
    /// Configured providers by name; always holds [`DEFAULT_PROVIDER`].
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The model of agents that name none.
    pub default_model: String,
    /// How long in-flight requests may take to finish after SIGTERM.
    pub shutdown_grace: std::time::Duration,
    /// Private hosts and networks tools may reach despite the egress guard.
    pub tool_egress: EgressPolicy,
    /// Time allowed for one outbound tool request (crew HTTP tools set their own).
    pub tool_timeout: std::time::Duration,
    /// Longest tool response handed to a model, in bytes.
    pub tool_max_response_bytes: usize,
    /// Largest document uploaded to a knowledge base.
    pub max_document_bytes: usize,
    /// How documents' text is extracted: in a child process, within limits.
    pub extraction: crate::knowledge::Extraction,
    /// Deaths of the replicas working on a run or document after which it is quarantined.
    pub quarantine_after_deaths: u32,
    /// Measure the latency budget (`crate::probe`).
    pub latency_budget: bool,
    /// Time allowed for one LLM request.
    pub llm_timeout: std::time::Duration,
    /// Attempts per LLM call (transient failures are retried).
    pub llm_max_attempts: u32,
    pub role: Role,
    /// Runs in flight at once on this replica.
    pub workers: usize,
    /// How long a worker's claim on a run lasts without a heartbeat.
    pub lease: std::time::Duration,
    /// The time limit of runs that set none.
    pub run_timeout: Option<std::time::Duration>,
    /// Bytes of a thread's history a run of the thread sees.
    pub thread_history_bytes: usize,
    /// How the scheduler runs.
    pub scheduler: crate::domain::schedule::SchedulerSettings,
    /// How big a crew may be (checked at kickoff).
    pub crew_limits: CrewLimits,
    /// What one run may produce (checked as it goes).
    pub run_limits: RunLimits,
    /// How long finished runs are kept; `None`: for ever.
    pub retention: Option<std::time::Duration>,
    /// The key stored secrets are sealed with; without one, secrets cannot be used.
    pub secrets_key: Option<std::sync::Arc<crate::secrets::SecretsKey>>,
    /// Webhook signing, egress and retries.
    pub webhooks: crate::webhooks::WebhookSettings,
    /// Trace export (OpenTelemetry); checked.
    pub traces: crate::telemetry::TraceSettings,
}

/// The `otel_*` setting a trace settings message names (it begins with the key).
fn otel_key(message: &str) -> &'static str {
    crate::settings::SETTINGS
        .iter()
        .filter(|s| s.key.starts_with("otel_") && message.starts_with(s.key))
        .max_by_key(|s| s.key.len())
        .map_or("otel_exporter_otlp_endpoint", |s| s.key)
}

impl Config {
    /// The defaults of every setting but the database, for tests and embedding.
    pub fn new(database_url: Secret) -> Self {
        let mut config = match Config::from_settings(&Settings::default(), |_| None) {
            Ok(config) => config,
            // The defaults are checked by a test; this cannot happen.
            Err(error) => unreachable!("the default settings are invalid: {error}"),
        };
        config.database_url = database_url;
        config
    }

    /// Resolve `settings`; `env` reads an environment variable (for `OPENAI_*` and the providers'
    /// `api_key_env`).
    pub fn from_settings(
        settings: &Settings,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let s = settings;
        let mut providers = providers(s, env)?;
        if s.fake_llm {
            let demo = crate::fake_llm::demo::script().map_err(|e| ConfigError::Setting {
                key: "fake_llm",
                message: format!("the built-in script: {e}"),
            })?;
            let kind = ProviderKind::Fake { script: Arc::new(demo), bind: None };
            providers.insert(DEFAULT_PROVIDER.into(), default_provider(kind, String::new(), None));
        }
        let setting = |key: &'static str| move |e: String| ConfigError::Setting { key, message: e };
        let secs = std::time::Duration::from_secs;
        Ok(Config {
            bind: s.bind,
            allowed_origins: crate::net::OriginPolicy::parse(&s.allowed_origins)
                .map_err(setting("allowed_origins"))?,
            connections: ConnectionLimits::from_settings(s),
            // `serve` fills in its private cluster's when there is none.
            database_url: Secret::new(s.database_url.clone().unwrap_or_default()),
            db_max_connections: s.db_max_connections,
            api_keys: ApiKeys::parse(s.api_keys.as_deref().unwrap_or_default()),
            providers,
            default_model: s.default_model.clone(),
            shutdown_grace: secs(s.shutdown_grace_s),
            tool_egress: EgressPolicy::parse(&s.allow_private_tool_hosts)
                .map_err(setting("allow_private_tool_hosts"))?,
            tool_timeout: secs(s.tool_timeout_s),
            tool_max_response_bytes: s.tool_max_response_bytes as usize,
            max_document_bytes: s.max_document_bytes as usize,
            extraction: crate::knowledge::Extraction {
                program: None,
                max_memory_bytes: s.extract_max_memory_mib * 1024 * 1024,
                timeout: secs(s.extract_timeout_s),
            },
            quarantine_after_deaths: s.quarantine_after_deaths,
            latency_budget: s.latency_budget,
            llm_timeout: secs(s.llm_timeout_s),
            llm_max_attempts: s.llm_max_attempts,
            role: s.role,
            workers: s.workers as usize,
            lease: secs(s.lease_s),
            run_timeout: s.run_timeout(),
            thread_history_bytes: s.thread_history_bytes as usize,
            scheduler: crate::domain::schedule::SchedulerSettings {
                poll: std::time::Duration::from_millis(s.schedule_poll_ms),
                misfire_grace: secs(s.schedule_misfire_grace_s),
            },
            crew_limits: CrewLimits {
                max_agents: s.max_agents as usize,
                max_tasks: s.max_tasks as usize,
                max_tools: s.max_tools as usize,
            },
            run_limits: RunLimits {
                max_reply_bytes: s.max_reply_bytes as usize,
                max_task_output_bytes: s.max_task_output_bytes as usize,
                max_journal_bytes: s.max_run_journal_bytes,
            },
            retention: (s.retention_days > 0).then(|| secs(u64::from(s.retention_days) * 86_400)),
            secrets_key: match s.secrets_key.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(text) => Some(Arc::new(
                    crate::secrets::SecretsKey::parse(text)
                        .map_err(|e| setting("secrets_key")(e.to_string()))?,
                )),
            },
            webhooks: crate::webhooks::WebhookSettings {
                key: match s.webhook_secret.as_deref().map(str::trim) {
                    None | Some("") => None,
                    Some(text) => Some(
                        crate::webhooks::SigningKey::parse(text)
                            .map_err(|e| setting("webhook_secret")(e.to_string()))?,
                    ),
                },
                egress: EgressPolicy::parse(&s.allow_private_webhook_hosts)
                    .map_err(setting("allow_private_webhook_hosts"))?,
                schedule: crate::webhooks::RetrySchedule::parse(&s.webhook_retry_schedule)
                    .map_err(|e| setting("webhook_retry_schedule")(e.to_string()))?,
                rotation_grace: secs(s.webhook_rotation_grace_s),
            },
            traces: {
                let traces = s.traces();
                traces
                    .check()
                    .map_err(|message| ConfigError::Setting { key: otel_key(&message), message })?;
                traces
            },
        })
    }
}

/// The Azure OpenAI API version of providers that name none.
pub const AZURE_API_VERSION: &str = "2024-10-21";
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The value of `key` is not what its part needs.
    #[error("setting {key}: {message}")]
    Setting { key: &'static str, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// Build the provider table: `openai` from `OPENAI_BASE_URL` / `OPENAI_API_KEY`, then the
/// settings' providers (which may redefine `openai`). `env` reads an environment variable.
pub fn providers(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, ProviderConfig>, ConfigError> {
    let mut providers = BTreeMap::new();
    let base_url = env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.into());
    let openai = default_provider(ProviderKind::OpenAi, base_url, env("OPENAI_API_KEY").map(Secret::new));
    providers.insert(openai.name.clone(), openai);
    for (name, p) in &settings.providers {
        if name.is_empty() || name.contains('/') {
            return Err(ConfigError::Invalid(format!(
                "provider name '{name}' must be non-empty and contain no '/'"
            )));
        }
        if p.rpm == Some(0) || p.tpm == Some(0) {
            return Err(ConfigError::Invalid(format!("providers.{name}: rpm and tpm must be at least 1")));
        }
        if let Some((model, _)) = p.prices.iter().find(|(_, price)| !price.is_valid()) {
            return Err(ConfigError::Invalid(format!(
                "providers.{name}.prices.\"{model}\": prices must be finite and not negative"
            )));
        }
        let (kind, base_url) = provider_kind(name, p, settings.dir.as_deref())?;
        let provider = ProviderConfig {
            name: name.clone(),
            kind,
            base_url,
            api_key: p.api_key_env.as_deref().and_then(&env).map(Secret::new),
            rpm: p.rpm,
            tpm: p.tpm,
            native_tools: p.native_tools,
            structured_outputs: p.structured_outputs,
            prices: p.prices.clone(),
        };
        providers.insert(name.clone(), provider);
    }
    Ok(providers)
}

/// The default provider (`openai`) served by `kind`: no budgets or prices, native tools and
/// structured outputs on.
fn default_provider(kind: ProviderKind, base_url: String, api_key: Option<Secret>) -> ProviderConfig {
    ProviderConfig {
        name: DEFAULT_PROVIDER.into(),
        kind,
        base_url,
        api_key,
        rpm: None,
        tpm: None,
        native_tools: true,
        structured_outputs: true,
        prices: BTreeMap::new(),
    }
}

/// A provider's kind and base URL: an `openai` one needs a URL; a `fake` one a script,
/// loaded and checked now so that a broken script stops the start.
fn provider_kind(
    name: &str,
    p: &ProviderSettings,
    dir: Option<&Path>,
) -> Result<(ProviderKind, String), ConfigError> {
    let invalid = |message: String| Err(ConfigError::Invalid(format!("providers.{name}: {message}")));
    if p.kind != ProviderKindSetting::Fake && (p.script.is_some() || p.bind.is_some()) {
        return invalid("script and bind belong to kind = \"fake\" providers".into());
    }
    if p.kind != ProviderKindSetting::Local && p.models_dir.is_some() {
        return invalid("models_dir belongs to kind = \"local\" providers".into());
    }
    if p.kind != ProviderKindSetting::Azure && p.api_version.is_some() {
        return invalid("api_version belongs to kind = \"azure\" providers".into());
    }
    if p.kind != ProviderKindSetting::Anthropic && (p.max_tokens.is_some() || p.prompt_caching) {
        return invalid("max_tokens and prompt_caching belong to kind = \"anthropic\" providers".into());
    }
    let url = |default: Option<&str>| -> Result<String, ConfigError> {
        let Some(base_url) = p.base_url.as_deref().or(default) else {
            return Err(ConfigError::Invalid(format!("providers.{name}: base_url is required")));
        };
        url::Url::parse(base_url)
            .map_err(|e| ConfigError::Invalid(format!("providers.{name}.base_url: {e}")))?;
        Ok(base_url.to_owned())
    };
    match p.kind {
        ProviderKindSetting::OpenAi => Ok((ProviderKind::OpenAi, url(None)?)),
        ProviderKindSetting::Azure => {
            let api_version = p.api_version.clone().unwrap_or_else(|| AZURE_API_VERSION.to_owned());
            if api_version.trim().is_empty() {
                return invalid("api_version must not be empty".into());
            }
            Ok((ProviderKind::Azure { api_version }, url(None)?))
        }
        ProviderKindSetting::Anthropic => {
            let max_tokens = p.max_tokens.unwrap_or(crate::llm::DEFAULT_MAX_TOKENS);
            if max_tokens == 0 {
                return invalid("max_tokens must be at least 1".into());
            }
            let options = crate::llm::AnthropicOptions { max_tokens, prompt_caching: p.prompt_caching };
            Ok((ProviderKind::Anthropic(options), url(Some(ANTHROPIC_BASE_URL))?))
        }
        ProviderKindSetting::Local => {
            if p.base_url.is_some() || p.api_key_env.is_some() {
                return invalid(
                    "a local provider runs its models inside agentd: it takes models_dir, not base_url or api_key_env"
                        .into(),
                );
            }
            let Some(models_dir) = &p.models_dir else {
                return invalid("kind = \"local\" needs models_dir (the folder of its models)".into());
            };
            let models_dir = match dir {
                Some(dir) if models_dir.is_relative() => dir.join(models_dir),
                _ => models_dir.clone(),
            };
            if !models_dir.is_dir() {
                return invalid(format!("models_dir {} is not a folder", models_dir.display()));
            }
            Ok((ProviderKind::Local { models_dir }, String::new()))
        }
        ProviderKindSetting::Fake => {
            if p.base_url.is_some() || p.api_key_env.is_some() {
                return invalid(
                    "a fake provider is served inside agentd: it takes a script, not base_url or api_key_env"
                        .into(),
                );
            }
            let Some(script) = &p.script else { return invalid("kind = \"fake\" needs a script".into()) };
            let path = match dir {
                Some(dir) if script.is_relative() => dir.join(script),
                _ => script.clone(),
            };
            let script = crate::fake_llm::Script::load(&path)
                .map_err(|e| ConfigError::Invalid(format!("providers.{name}: {e}")))?;
            Ok((ProviderKind::Fake { script: Arc::new(script), bind: p.bind }, String::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings of a file, alone.
    fn load(path: &Path) -> Settings {
        let none = |_: &str| None;
        let sources = crate::settings::Sources { file: Some(path), env: &none, flags: Vec::new() };
        Settings::load(&sources).expect("the settings file").settings
    }

    #[test]
    fn the_defaults_resolve() {
        let config = Config::from_settings(&Settings::default(), |_| None).expect("defaults");
        assert_eq!((config.workers, config.lease.as_secs(), config.db_max_connections), (64, 30, 16));
    }

    #[test]
    fn api_keys_accept_only_configured_keys() {
        let keys = ApiKeys::parse(" alpha, ,beta ");
        assert!(keys.accepts("alpha"));
        assert!(keys.accepts("beta"));
        assert!(!keys.accepts("gamma"));
        assert!(!keys.accepts(""));
        assert!(ApiKeys::parse(" , ").is_empty());
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        let shown = format!("{:?} {:?}", Secret::new("sk-123"), ApiKeys::parse("sk-456"));
        assert!(!shown.contains("sk-"), "{shown}");
    }

    #[test]
    fn file_providers_read_their_key_from_the_named_variable() {
        let file: Settings = toml::from_str(
            r#"[providers.groq]
               base_url = "https://api.groq.com/openai/v1"
               api_key_env = "GROQ_API_KEY"
               rpm = 30
               native_tools = false"#,
        )
        .expect("valid toml");
        let env = |name: &str| (name == "GROQ_API_KEY").then(|| "gsk".to_owned());
        let providers = providers(&file, env).expect("valid providers");
        let groq = &providers["groq"];
        assert_eq!(groq.api_key.as_ref().map(Secret::expose), Some("gsk"));
        assert_eq!((groq.rpm, groq.native_tools), (Some(30), false));
        assert_eq!(providers["openai"].base_url, OPENAI_BASE_URL);
    }

    #[test]
    fn anthropic_and_azure_providers_take_their_own_settings() {
        let file: Settings = toml::from_str(
            r#"[providers.claude]
               kind = "anthropic"
               api_key_env = "ANTHROPIC_API_KEY"
               prompt_caching = true
               tpm = 40000
               prices."claude-sonnet-4-5" = { input = 3.0, output = 15.0, cached_input = 0.3 }
               [providers.az]
               kind = "azure"
               base_url = "https://res.openai.azure.com"
               api_key_env = "AZURE_OPENAI_API_KEY""#,
        )
        .expect("valid toml");
        let providers = providers(&file, |_| None).expect("valid providers");
        let claude = &providers["claude"];
        assert_eq!(claude.base_url, ANTHROPIC_BASE_URL);
        assert_eq!(
            format!("{:?}", claude.kind),
            "Anthropic(AnthropicOptions { max_tokens: 4096, prompt_caching: true })"
        );
        assert_eq!(claude.prices["claude-sonnet-4-5"].cached_input, Some(0.3));
        assert_eq!(claude.tpm, Some(40000));
        assert_eq!(format!("{:?}", providers["az"].kind), format!("Azure({AZURE_API_VERSION})"));
    }

    #[test]
    fn the_example_provider_config_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agentd-providers.toml");
        let file = load(&path);
        let loaded = providers(&file, |_| None).expect("its providers");
        assert_eq!(format!("{:?}", loaded["azure"].kind), "Azure(2024-10-21)");
        assert!(matches!(loaded["claude"].kind, ProviderKind::Anthropic(o) if o.prompt_caching));
        assert_eq!((loaded["openai"].rpm, loaded["openai"].tpm), (Some(500), Some(200000)));
    }

    #[test]
    fn bad_provider_settings_are_rejected() {
        let file: Settings = toml::from_str("[providers.x]\nbase_url = \"not a url\"").expect("toml");
        assert!(providers(&file, |_| None).is_err());
        assert!(toml::from_str::<Settings>("[providers.x]\nbase_url = \"http://a\"\nkey = \"k\"").is_err());
        let file: Settings = toml::from_str("[providers.x]\nkind = \"openai\"").expect("toml");
        let error = providers(&file, |_| None).expect_err("no base_url").to_string();
        assert_eq!(error, "providers.x: base_url is required");
        assert!(toml::from_str::<Settings>("[providers.x]\nkind = \"gemini\"").is_err());
        let azure: Settings =
            toml::from_str("[providers.x]\nkind = \"azure\"\nmax_tokens = 5\nbase_url = \"https://r\"")
                .expect("toml");
        let error = providers(&azure, |_| None).expect_err("max_tokens on azure").to_string();
        assert_eq!(
            error,
            "providers.x: max_tokens and prompt_caching belong to kind = \"anthropic\" providers"
        );
        let priced: Settings = toml::from_str(
            "[providers.x]\nbase_url = \"http://a\"\nprices.m = { input = -1.0, output = 2.0 }",
        )
        .expect("toml");
        let error = providers(&priced, |_| None).expect_err("negative price").to_string();
        assert_eq!(error, "providers.x.prices.\"m\": prices must be finite and not negative");
    }

    #[test]
    fn fake_providers_load_their_script_from_the_config_files_directory() {
        let dir = std::env::temp_dir().join(format!("agentd-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("demo.toml"), "[[rules]]\nreply = { text = \"Final Answer: hi\" }\n")
            .expect("write");
        let config = dir.join("agentd.toml");
        std::fs::write(&config, "[providers.demo]\nkind = \"fake\"\nscript = \"demo.toml\"\n")
            .expect("write");
        let file = load(&config);
        let loaded = providers(&file, |_| None).expect("providers");
        assert!(loaded["demo"].is_fake() && !loaded["openai"].is_fake());
        assert_eq!(format!("{:?}", loaded["demo"].kind), "Fake(1 rules)");

        let with_url: Settings =
            toml::from_str("[providers.f]\nkind = \"fake\"\nscript = \"s.json\"\nbase_url = \"http://a\"")
                .expect("toml");
        let error = providers(&with_url, |_| None).expect_err("fake with base_url").to_string();
        assert!(error.starts_with("providers.f: a fake provider is served inside agentd"), "{error}");
        let no_script: Settings = toml::from_str("[providers.f]\nkind = \"fake\"").expect("toml");
        assert_eq!(
            providers(&no_script, |_| None).expect_err("no script").to_string(),
            "providers.f: kind = \"fake\" needs a script"
        );
        std::fs::write(dir.join("bad.json"), r#"{"rules": [{"reply": {}}]}"#).expect("write");
        let bad = Settings {
            dir: Some(dir.clone()),
            ..toml::from_str("[providers.f]\nkind = \"fake\"\nscript = \"bad.json\"").expect("toml")
        };
        let error = providers(&bad, |_| None).expect_err("bad script").to_string();
        assert!(
            error.starts_with("providers.f: script ")
                && error.contains("rules[0].reply: give exactly one of"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

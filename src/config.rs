//! Typed settings: where to listen, the database, API keys and LLM providers. Built from the
//! command line (with environment fallbacks) and the optional `AGENTD_CONFIG` TOML file.
//! Secrets are wrapped in [`Secret`], whose `Debug` never shows them.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::{CrewLimits, RunLimits};
use crate::outbound::egress::EgressPolicy;

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

    /// No keys: the API is open.
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
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

/// What a replica does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Only the HTTP API.
    Api,
    /// Only the worker pool.
    Worker,
    /// Both.
    #[default]
    All,
}

impl Role {
    pub fn serves_api(self) -> bool {
        matches!(self, Role::Api | Role::All)
    }

    pub fn runs_workers(self) -> bool {
        matches!(self, Role::Worker | Role::All)
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "api" => Ok(Role::Api),
            "worker" => Ok(Role::Worker),
            "all" => Ok(Role::All),
            other => Err(format!("unknown role '{other}': use api, worker or all")),
        }
    }
}

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

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: None,
            header_timeout: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(75),
            body_timeout: std::time::Duration::from_secs(30),
        }
    }
}

/// Everything `agentd serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
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
}

impl Config {
    /// Defaults for everything but the database, for tests and embedding.
    pub fn new(database_url: Secret) -> Self {
        let providers = providers(&FileConfig::default(), |_| None).unwrap_or_default();
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            connections: ConnectionLimits::default(),
            database_url,
            db_max_connections: 16,
            api_keys: ApiKeys::default(),
            providers,
            default_model: "openai/gpt-4o-mini".into(),
            shutdown_grace: std::time::Duration::from_secs(30),
            tool_egress: EgressPolicy::default(),
            tool_timeout: std::time::Duration::from_secs(30),
            tool_max_response_bytes: 64 * 1024,
            llm_timeout: std::time::Duration::from_secs(120),
            llm_max_attempts: 4,
            role: Role::All,
            workers: 64,
            lease: std::time::Duration::from_secs(30),
            run_timeout: Some(std::time::Duration::from_secs(3600)),
            crew_limits: CrewLimits::default(),
            run_limits: RunLimits::default(),
            retention: None,
            secrets_key: None,
            webhooks: crate::webhooks::WebhookSettings::default(),
        }
    }
}

/// The `AGENTD_CONFIG` file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub default_model: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, FileProvider>,
    /// The file's directory: relative paths in it (a fake provider's script) start there.
    #[serde(skip)]
    pub dir: Option<PathBuf>,
}

/// A provider in the `AGENTD_CONFIG` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProvider {
    /// `openai` (the default), `azure`, `anthropic` or `fake`.
    #[serde(default)]
    pub kind: FileProviderKind,
    /// The API's base URL (`openai`: required; `azure`: the resource's endpoint, required;
    /// `anthropic`: default `https://api.anthropic.com`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The `api-version` of an `azure` provider (default [`AZURE_API_VERSION`]).
    #[serde(default)]
    pub api_version: Option<String>,
    /// The `max_tokens` of an `anthropic` provider's calls that set none (default 4096).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Mark an `anthropic` provider's system prompts and tools cacheable.
    #[serde(default)]
    pub prompt_caching: bool,
    /// Ask the provider to enforce output schemas (default true).
    #[serde(default = "default_native_tools")]
    pub structured_outputs: bool,
    /// Prices by model: `[providers.<name>.prices."<model>"]` with `input`, `output` and
    /// optionally `cached_input`, in US dollars per million tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, crate::llm::Price>,
    /// The script a `fake` provider answers from (relative to the config file's directory).
    #[serde(default)]
    pub script: Option<PathBuf>,
    /// Where a `fake` provider listens (default: a free loopback port).
    #[serde(default)]
    pub bind: Option<SocketAddr>,
    /// The environment variable that holds the key (the key itself never goes in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub rpm: Option<u32>,
    #[serde(default)]
    pub tpm: Option<u32>,
    #[serde(default = "default_native_tools")]
    pub native_tools: bool,
}

fn default_native_tools() -> bool {
    true
}

/// A provider's `kind` in the file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileProviderKind {
    #[default]
    OpenAi,
    Azure,
    Anthropic,
    Fake,
}

/// The Azure OpenAI API version of providers that name none.
pub const AZURE_API_VERSION: &str = "2024-10-21";
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        let mut file: Self =
            toml::from_str(&text).map_err(|e| ConfigError::Parse { path: shown, message: e.to_string() })?;
        file.dir = path.parent().map(Path::to_path_buf);
        Ok(file)
    }
}

/// Build the provider table: `openai` from `OPENAI_BASE_URL` / `OPENAI_API_KEY`, then the file's
/// providers (which may redefine `openai`). `env` reads an environment variable.
pub fn providers(
    file: &FileConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, ProviderConfig>, ConfigError> {
    let mut providers = BTreeMap::new();
    let openai = ProviderConfig {
        name: DEFAULT_PROVIDER.into(),
        kind: ProviderKind::OpenAi,
        base_url: env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.into()),
        api_key: env("OPENAI_API_KEY").map(Secret::new),
        rpm: None,
        tpm: None,
        native_tools: true,
        structured_outputs: true,
        prices: BTreeMap::new(),
    };
    providers.insert(openai.name.clone(), openai);
    for (name, p) in &file.providers {
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
        let (kind, base_url) = provider_kind(name, p, file.dir.as_deref())?;
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

/// A file provider's kind and base URL: an `openai` one needs a URL; a `fake` one a script,
/// loaded and checked now so that a broken script stops the start.
fn provider_kind(
    name: &str,
    p: &FileProvider,
    dir: Option<&Path>,
) -> Result<(ProviderKind, String), ConfigError> {
    let invalid = |message: String| Err(ConfigError::Invalid(format!("providers.{name}: {message}")));
    if p.kind != FileProviderKind::Fake && (p.script.is_some() || p.bind.is_some()) {
        return invalid("script and bind belong to kind = \"fake\" providers".into());
    }
    if p.kind != FileProviderKind::Azure && p.api_version.is_some() {
        return invalid("api_version belongs to kind = \"azure\" providers".into());
    }
    if p.kind != FileProviderKind::Anthropic && (p.max_tokens.is_some() || p.prompt_caching) {
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
        FileProviderKind::OpenAi => Ok((ProviderKind::OpenAi, url(None)?)),
        FileProviderKind::Azure => {
            let api_version = p.api_version.clone().unwrap_or_else(|| AZURE_API_VERSION.to_owned());
            if api_version.trim().is_empty() {
                return invalid("api_version must not be empty".into());
            }
            Ok((ProviderKind::Azure { api_version }, url(None)?))
        }
        FileProviderKind::Anthropic => {
            let max_tokens = p.max_tokens.unwrap_or(crate::llm::DEFAULT_MAX_TOKENS);
            if max_tokens == 0 {
                return invalid("max_tokens must be at least 1".into());
            }
            let options = crate::llm::AnthropicOptions { max_tokens, prompt_caching: p.prompt_caching };
            Ok((ProviderKind::Anthropic(options), url(Some(ANTHROPIC_BASE_URL))?))
        }
        FileProviderKind::Fake => {
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
        let file: FileConfig = toml::from_str(
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
        let file: FileConfig = toml::from_str(
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
        let file = FileConfig::load(&path).expect("the example config");
        let loaded = providers(&file, |_| None).expect("its providers");
        assert_eq!(format!("{:?}", loaded["azure"].kind), "Azure(2024-10-21)");
        assert!(matches!(loaded["claude"].kind, ProviderKind::Anthropic(o) if o.prompt_caching));
        assert_eq!((loaded["openai"].rpm, loaded["openai"].tpm), (Some(500), Some(200000)));
    }

    #[test]
    fn bad_provider_settings_are_rejected() {
        let file: FileConfig = toml::from_str("[providers.x]\nbase_url = \"not a url\"").expect("toml");
        assert!(providers(&file, |_| None).is_err());
        assert!(toml::from_str::<FileConfig>("[providers.x]\nbase_url = \"http://a\"\nkey = \"k\"").is_err());
        let file: FileConfig = toml::from_str("[providers.x]\nkind = \"openai\"").expect("toml");
        let error = providers(&file, |_| None).expect_err("no base_url").to_string();
        assert_eq!(error, "providers.x: base_url is required");
        assert!(toml::from_str::<FileConfig>("[providers.x]\nkind = \"gemini\"").is_err());
        let azure: FileConfig =
            toml::from_str("[providers.x]\nkind = \"azure\"\nmax_tokens = 5\nbase_url = \"https://r\"")
                .expect("toml");
        let error = providers(&azure, |_| None).expect_err("max_tokens on azure").to_string();
        assert_eq!(
            error,
            "providers.x: max_tokens and prompt_caching belong to kind = \"anthropic\" providers"
        );
        let priced: FileConfig = toml::from_str(
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
        let file = FileConfig::load(&config).expect("config");
        let loaded = providers(&file, |_| None).expect("providers");
        assert!(loaded["demo"].is_fake() && !loaded["openai"].is_fake());
        assert_eq!(format!("{:?}", loaded["demo"].kind), "Fake(1 rules)");

        let with_url: FileConfig =
            toml::from_str("[providers.f]\nkind = \"fake\"\nscript = \"s.json\"\nbase_url = \"http://a\"")
                .expect("toml");
        let error = providers(&with_url, |_| None).expect_err("fake with base_url").to_string();
        assert!(error.starts_with("providers.f: a fake provider is served inside agentd"), "{error}");
        let no_script: FileConfig = toml::from_str("[providers.f]\nkind = \"fake\"").expect("toml");
        assert_eq!(
            providers(&no_script, |_| None).expect_err("no script").to_string(),
            "providers.f: kind = \"fake\" needs a script"
        );
        std::fs::write(dir.join("bad.json"), r#"{"rules": [{"reply": {}}]}"#).expect("write");
        let bad = FileConfig {
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

//! A provider's settings, as the configuration gives them: what serves it, where, with which key,
//! its budgets and prices. The registry builds each provider's client from these alone.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::outbound::Secret;

/// An LLM provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub name: String,
    /// What serves it.
    pub kind: ProviderKind,
    /// Where its API is (a fake's is known once it listens; an Azure resource's endpoint).
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Requests per minute all replicas together may send.
    pub rpm: Option<u32>,
    /// Tokens (prompt and completion) per minute all replicas together may use.
    pub tpm: Option<u32>,
    /// Whether the provider accepts native `tools`.
    pub native_tools: bool,
    /// Whether tasks with an output schema ask the provider to enforce it (`response_format`, a
    /// forced tool); a provider that refuses switches to the prompt at run time anyway.
    pub structured_outputs: bool,
    /// Prices by model name (as the provider knows it), for the runs' cost.
    pub prices: BTreeMap<String, super::Price>,
}

impl ProviderConfig {
    /// Is it a fake model (scripted replies)?
    pub fn is_fake(&self) -> bool {
        matches!(self.kind, ProviderKind::Fake { .. })
    }
}

/// What serves a provider.
#[derive(Clone)]
pub enum ProviderKind {
    /// An OpenAI-compatible chat-completions API (OpenAI, vLLM, Ollama, LiteLLM, ...).
    OpenAi,
    /// Azure OpenAI: `base_url` is the resource's endpoint, a model names a deployment.
    Azure { api_version: String },
    /// Anthropic's Messages API.
    Anthropic(super::AnthropicOptions),
    /// The built-in fake model answering from a script, inside this process: for demos and for
    /// the CI of services that call agentd. Never a real model. It listens on `bind` (default: a
    /// free loopback port), where `GET /calls` and `POST /reset` serve as for `agentd fake-llm`.
    Fake { script: Arc<crate::fake_llm::Script>, bind: Option<SocketAddr> },
    /// Embedding models run on this machine's CPU, each a folder of `models_dir`
    /// ([`super::local`]).
    Local { models_dir: PathBuf },
}

impl fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderKind::OpenAi => f.write_str("OpenAi"),
            ProviderKind::Azure { api_version } => write!(f, "Azure({api_version})"),
            ProviderKind::Anthropic(options) => write!(f, "Anthropic({options:?})"),
            ProviderKind::Fake { script, .. } => write!(f, "Fake({} rules)", script.len()),
            ProviderKind::Local { models_dir } => write!(f, "Local({})", models_dir.display()),
        }
    }
}

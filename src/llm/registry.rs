//! Which client serves a model string: `provider/model` names a configured provider, a bare
//! model goes to the default one.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::retry::{Backoff, RetryPolicy};
use super::types::{LlmError, LlmErrorKind};
use super::{LlmClient, OpenAiClient};
use crate::config::{Config, DEFAULT_PROVIDER};
use crate::ratelimit::RateLimiter;

/// A provider's client and what it can do.
#[derive(Clone)]
struct Provider {
    client: Arc<dyn LlmClient>,
    native_tools: bool,
    rpm: Option<u32>,
}

/// A model string resolved to the client that serves it.
#[derive(Clone)]
pub struct ResolvedModel {
    pub provider: String,
    /// The model name the provider knows (without the `provider/` prefix).
    pub model: String,
    pub client: Arc<dyn LlmClient>,
    /// Does the provider accept native `tools`?
    pub native_tools: bool,
    /// The provider's requests-per-minute budget on this replica.
    pub rpm: Option<u32>,
}

/// The configured providers.
#[derive(Clone, Default)]
pub struct LlmRegistry {
    providers: BTreeMap<String, Provider>,
    default_model: String,
}

impl LlmRegistry {
    /// A registry with no providers, whose agents default to `default_model`.
    pub fn new(default_model: impl Into<String>) -> Self {
        Self { providers: BTreeMap::new(), default_model: default_model.into() }
    }

    /// One OpenAI-compatible client per configured provider, sharing `http`; a provider's 429s
    /// hold its key (`provider:<name>`) in `limiter`, pausing every caller of that provider.
    pub fn from_config(
        config: &Config,
        http: reqwest::Client,
        policy: RetryPolicy,
        limiter: Arc<RateLimiter>,
    ) -> Self {
        let mut registry = Self::new(config.default_model.clone());
        for (name, provider) in &config.providers {
            let backoff = Backoff::new(policy.clone());
            let key = provider_key(name);
            let gate = limiter.clone();
            let hook = Arc::new(move |wait: std::time::Duration| gate.hold(&key, gate.now() + wait));
            let client =
                OpenAiClient::new(http.clone(), &provider.base_url, provider.api_key.clone(), backoff)
                    .on_rate_limit(hook);
            registry = registry.with_client(name, Arc::new(client), provider.native_tools);
            if let Some(rpm) = provider.rpm {
                registry = registry.with_rpm(name, rpm);
            }
        }
        registry
    }

    /// Add (or replace) a provider.
    pub fn with_client(mut self, name: &str, client: Arc<dyn LlmClient>, native_tools: bool) -> Self {
        self.providers.insert(name.to_owned(), Provider { client, native_tools, rpm: None });
        self
    }

    /// Give a provider a requests-per-minute budget.
    pub fn with_rpm(mut self, name: &str, rpm: u32) -> Self {
        if let Some(entry) = self.providers.get_mut(name) {
            entry.rpm = Some(rpm);
        }
        self
    }

    /// The client for `model` (`provider/model`, a bare model, or `None` for the default model).
    pub fn resolve(&self, model: Option<&str>) -> Result<ResolvedModel, LlmError> {
        let model = model.unwrap_or(&self.default_model);
        let (provider, name) = match model.split_once('/') {
            Some((provider, name)) if self.providers.contains_key(provider) => (provider, name),
            Some((provider, _)) => {
                let message = format!("unknown LLM provider '{provider}'");
                return Err(LlmError::new(LlmErrorKind::Other, message));
            }
            None => (DEFAULT_PROVIDER, model),
        };
        let entry = self.providers.get(provider).ok_or_else(|| {
            LlmError::new(LlmErrorKind::Other, format!("LLM provider '{provider}' is not configured"))
        })?;
        Ok(ResolvedModel {
            provider: provider.to_owned(),
            model: name.to_owned(),
            client: entry.client.clone(),
            native_tools: entry.native_tools,
            rpm: entry.rpm,
        })
    }
}

/// The rate-limit key of a provider.
pub fn provider_key(name: &str) -> String {
    format!("provider:{name}")
}

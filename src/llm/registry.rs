//! Which client serves a model string: `provider/model` names a configured provider, a bare
//! model goes to the default one. Each provider's client speaks its kind's wire format; its
//! `rpm` / `tpm` budget is kept on a [`SharedBudget`] every replica books on.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::retry::{Backoff, RetryPolicy};
use super::settings::{ProviderConfig, ProviderKind};
use super::types::{LlmError, LlmErrorKind};
use super::{AnthropicClient, LlmClient, OpenAiClient, Price, RateLimitHook, RetryGate};
use crate::domain::crew::DEFAULT_PROVIDER;
use crate::ratelimit::{LocalBudget, RateLimiter, Reservation, SharedBudget};

/// A provider's client and what it can do.
#[derive(Clone)]
struct Provider {
    client: Arc<dyn LlmClient>,
    native_tools: bool,
    structured_outputs: bool,
    rpm: Option<u32>,
    tpm: Option<u32>,
    prices: BTreeMap<String, Price>,
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
    /// Does the provider enforce output schemas (`response_format`, a forced tool)?
    pub structured_outputs: bool,
    /// The provider's requests and tokens per minute, shared by the cluster (behind a pointer, as
    /// the price: every agent turn holds a model, and most have neither).
    pub budget: Option<Arc<ProviderBudget>>,
    /// The model's prices, when configured.
    pub price: Option<Arc<Price>>,
}

impl ResolvedModel {
    /// `provider/model`, as events and metrics name it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// A provider's `rpm` and `tpm`, booked on a shared schedule.
#[derive(Clone)]
pub struct ProviderBudget {
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    pub shared: Arc<dyn SharedBudget>,
    provider: String,
}

impl ProviderBudget {
    /// The schedule key of the provider's requests.
    pub fn request_key(&self) -> String {
        format!("{}:rpm", provider_key(&self.provider))
    }

    /// The schedule key of the provider's tokens.
    pub fn token_key(&self) -> String {
        format!("{}:tpm", provider_key(&self.provider))
    }

    /// What a call estimated at `tokens` books: a request, and its tokens.
    pub fn reservations(&self, tokens: u64) -> Vec<Reservation> {
        let mut out = Vec::with_capacity(2);
        if let Some(rpm) = self.rpm {
            out.push(Reservation { key: self.request_key(), cost: Duration::from_secs(60) / rpm.max(1) });
        }
        if self.tpm.is_some() {
            let seconds = (tokens as f64 * self.token_seconds()).min(86_400.0);
            out.push(Reservation { key: self.token_key(), cost: Duration::from_secs_f64(seconds) });
        }
        out
    }

    /// The time one token costs on the token schedule (0 without a `tpm`).
    pub fn token_seconds(&self) -> f64 {
        self.tpm.map_or(0.0, |tpm| 60.0 / f64::from(tpm.max(1)))
    }

    /// How the budget reads in a `run.throttled` event.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            [self.rpm.map(|n| format!("{n} requests/min")), self.tpm.map(|n| format!("{n} tokens/min"))]
                .into_iter()
                .flatten()
                .collect();
        format!("{} ({}, shared by all replicas)", provider_key(&self.provider), parts.join(", "))
    }
}

/// The configured providers.
#[derive(Clone)]
pub struct LlmRegistry {
    providers: BTreeMap<String, Provider>,
    default_model: String,
    shared: Arc<dyn SharedBudget>,
}

impl Default for LlmRegistry {
    fn default() -> Self {
        Self::new(String::new())
    }
}

impl LlmRegistry {
    /// A registry with no providers, whose agents default to `default_model`; provider budgets
    /// are kept in this process.
    pub fn new(default_model: impl Into<String>) -> Self {
        Self {
            providers: BTreeMap::new(),
            default_model: default_model.into(),
            shared: Arc::new(LocalBudget::default()),
        }
    }

    /// Keep the providers' budgets on `shared` (the database, for a cluster).
    pub fn with_shared_budget(mut self, shared: Arc<dyn SharedBudget>) -> Self {
        self.shared = shared;
        self
    }

    /// One client per configured provider, of its kind, sharing `http`. A provider's 429s hold
    /// its key (`provider:<name>`) in `limiter`, pausing every caller of that provider on this
    /// replica, and, when it has a budget, on its shared schedule for every replica.
    pub fn from_settings(
        default_model: &str,
        providers: &BTreeMap<String, ProviderConfig>,
        http: reqwest::Client,
        policy: RetryPolicy,
        limiter: Arc<RateLimiter>,
        shared: Arc<dyn SharedBudget>,
    ) -> Self {
        let mut registry = Self::new(default_model).with_shared_budget(shared.clone());
        for (name, provider) in providers {
            let backoff = Backoff::new(policy.clone());
            let key = provider_key(name);
            let gate = limiter.clone();
            let budgeted = (provider.rpm.is_some() || provider.tpm.is_some()).then(|| shared.clone());
            let request_key = format!("{key}:rpm");
            let hook: RateLimitHook = Arc::new(move |wait: Duration| {
                gate.hold(&key, gate.now() + wait);
                if let Some(shared) = budgeted.clone() {
                    let key = request_key.clone();
                    tokio::spawn(async move {
                        if let Err(error) = shared.hold(&key, wait).await {
                            tracing::warn!(%error, key, "could not share a provider's rate-limit hold");
                        }
                    });
                }
            });
            let gate = provider.rpm.map(|rpm| retry_gate(shared.clone(), provider_key(name), rpm));
            let (url, api_key) = (&provider.base_url, provider.api_key.clone());
            let client: Arc<dyn LlmClient> = match &provider.kind {
                ProviderKind::Anthropic(options) => Arc::new(
                    AnthropicClient::new(http.clone(), url, api_key, backoff, *options)
                        .on_rate_limit(hook)
                        .before_retry(gate),
                ),
                ProviderKind::Azure { api_version } => Arc::new(
                    OpenAiClient::azure(http.clone(), url, api_version, api_key, backoff)
                        .on_rate_limit(hook)
                        .before_retry(gate),
                ),
                ProviderKind::Local { models_dir } => Arc::new(super::LocalClient::new(models_dir.clone())),
                ProviderKind::OpenAi | ProviderKind::Fake { .. } => Arc::new(
                    OpenAiClient::new(http.clone(), url, api_key, backoff)
                        .on_rate_limit(hook)
                        .before_retry(gate),
                ),
            };
            registry = registry.with_client(name, client, provider.native_tools);
            if let Some(entry) = registry.providers.get_mut(name) {
                entry.structured_outputs = provider.structured_outputs;
                entry.rpm = provider.rpm;
                entry.tpm = provider.tpm;
                entry.prices = provider.prices.clone();
            }
        }
        registry
    }

    /// Add (or replace) a provider.
    pub fn with_client(mut self, name: &str, client: Arc<dyn LlmClient>, native_tools: bool) -> Self {
        let provider = Provider {
            client,
            native_tools,
            structured_outputs: true,
            rpm: None,
            tpm: None,
            prices: BTreeMap::new(),
        };
        self.providers.insert(name.to_owned(), provider);
        self
    }

    /// Give a provider a requests-per-minute budget.
    pub fn with_rpm(mut self, name: &str, rpm: u32) -> Self {
        if let Some(entry) = self.providers.get_mut(name) {
            entry.rpm = Some(rpm);
        }
        self
    }

    /// Give a provider a tokens-per-minute budget.
    pub fn with_tpm(mut self, name: &str, tpm: u32) -> Self {
        if let Some(entry) = self.providers.get_mut(name) {
            entry.tpm = Some(tpm);
        }
        self
    }

    /// Price a provider's model.
    pub fn with_price(mut self, name: &str, model: &str, price: Price) -> Self {
        if let Some(entry) = self.providers.get_mut(name) {
            entry.prices.insert(model.to_owned(), price);
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
        let budget = (entry.rpm.is_some() || entry.tpm.is_some()).then(|| {
            Arc::new(ProviderBudget {
                rpm: entry.rpm,
                tpm: entry.tpm,
                shared: self.shared.clone(),
                provider: provider.to_owned(),
            })
        });
        Ok(ResolvedModel {
            provider: provider.to_owned(),
            model: name.to_owned(),
            client: entry.client.clone(),
            native_tools: entry.native_tools,
            structured_outputs: entry.structured_outputs,
            budget,
            price: entry.prices.get(name).copied().map(Arc::new),
        })
    }
}

/// A retry of a call to a provider with an `rpm` books its request slot on the shared schedule,
/// not before the client's own wait (a 429's `Retry-After`, a backoff): a retry never takes a
/// slot another replica booked. A booking that fails leaves the client's wait as it was.
fn retry_gate(shared: Arc<dyn SharedBudget>, provider: String, rpm: u32) -> RetryGate {
    let key = format!("{provider}:rpm");
    let cost = Duration::from_secs(60) / rpm.max(1);
    Arc::new(move |wait: Duration| {
        let (shared, key) = (shared.clone(), key.clone());
        Box::pin(async move {
            let booking = [Reservation { key, cost }];
            match shared.reserve(&booking, wait).await {
                Ok(booked) => booked,
                Err(error) => {
                    tracing::warn!(%error, "could not book a retry on the provider's shared budget");
                    wait
                }
            }
        })
    })
}

/// The rate-limit key of a provider.
pub fn provider_key(name: &str) -> String {
    format!("provider:{name}")
}

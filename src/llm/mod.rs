//! Talking to language models: the [`LlmClient`] trait the engine calls, the chat types it
//! speaks, an OpenAI-compatible client with retries, and the registry that maps `provider/model`
//! strings to configured providers.

mod anthropic;
mod cost;
pub mod estimate;
pub mod local;
mod openai;
mod registry;
mod retry;
mod settings;
mod transport;
mod types;

pub use anthropic::{AnthropicClient, AnthropicOptions, ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS};
pub use cost::Price;
pub use local::LocalClient;
pub use openai::OpenAiClient;
pub use registry::{provider_key, LlmRegistry, ProviderBudget, ResolvedModel};
pub use retry::{Backoff, RetryPolicy};
pub use settings::{ProviderConfig, ProviderKind};
pub use transport::{RateLimitHook, RetryGate};
pub use types::{
    ChatMessage, ChatRequest, ChatResponse, DeltaSink, Image, LlmError, LlmErrorKind, ResponseSchema, Role,
    TokenUsage, ToolCallRequest, ToolDefinition,
};

use std::future::Future;
use std::pin::Pin;

/// A boxed future, so clients can be used as `dyn LlmClient`.
pub type LlmFuture<'a> = Pin<Box<dyn Future<Output = Result<ChatResponse, LlmError>> + Send + 'a>>;

/// Something that completes chats: a real provider, or a scripted fake in tests.
pub trait LlmClient: Send + Sync {
    /// One chat completion. Retries of transient failures happen inside; an error returned here
    /// is final for this call and classified by [`LlmErrorKind`].
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a>;

    /// The provider in the OpenTelemetry GenAI conventions' words (`gen_ai.provider.name`).
    fn system(&self) -> &'static str {
        "openai"
    }

    /// The embeddings of `inputs` by `model`, in order (retried like a chat). A provider without
    /// embedding models answers an error.
    fn embed<'a>(&'a self, model: &'a str, inputs: &'a [String]) -> EmbedFuture<'a> {
        let _ = inputs;
        Box::pin(async move {
            let message = format!("the provider of '{model}' has no embedding models");
            Err(LlmError::new(LlmErrorKind::Other, message))
        })
    }
}

/// What an embedding call answers.
pub type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Embeddings, LlmError>> + Send + 'a>>;

/// The vectors of a batch of texts, in the order of the texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens: the provider's count, else agentd's (`estimated`).
    pub tokens: u64,
    pub estimated: bool,
}

#[cfg(test)]
mod tests;

//! agentd runs CrewAI-style crews of LLM agents for other services: an HTTP API that accepts
//! kickoffs and stores them as runs in Postgres. See `docs/architecture.md` for the modules, their
//! layering and the durability contract, and `docs/api.md` for the API.

pub mod app;
pub mod cli;
pub mod config;
pub mod domain;
pub mod engine;
pub mod events;
/// The fake model (the `agentd-fake-llm` crate).
pub use agentd_fake_llm as fake_llm;
pub mod http;
pub mod knowledge;
pub mod llm;
pub mod local_postgres;
pub mod metrics;
pub mod net;
pub mod outbound;
pub mod probe;
pub mod ratelimit;
pub mod release;
pub mod retention;
pub mod scheduler;
pub mod secrets;
pub mod service;
pub mod settings;
pub mod sse;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod tools;
pub mod webhooks;
pub mod worker;

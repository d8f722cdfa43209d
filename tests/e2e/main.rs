//! End-to-end tests: the real router on a real port against a fresh database per test
//! (`#[sqlx::test]`), driven over HTTP as a client would. One test binary, many modules.

mod audit;
mod claim;
mod cli;
mod connections;
mod crash;
mod crews;
mod engine;
mod events;
mod fake_llm;
mod fakes;
mod forks;
mod journal;
mod key_ends;
mod kickoffs;
mod knowledge;
mod local_embeddings;
mod memory;
mod protocols;
mod quotas;
mod real_model;
mod runs;
mod schedules;
mod schemas;
mod secrets;
mod service;
mod shared_budget;
mod store;
mod streaming;
mod support;
mod tenants;
mod threads;
mod traces;
mod vectors;
mod webhooks;
mod worker;

//! The engine against a scripted model: no network. The contract suite runs each scenario on the
//! in-memory journal and on the Postgres journal (see [`journals`]); tests of the commit rules use
//! journals of their own that watch the commits.

mod agent;
mod effects;
mod guardrail;
mod journals;
mod plan;
mod process;
mod support;
mod tools;

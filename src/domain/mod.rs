//! The domain: crew specs, runs, tasks, messages, tool calls and events, with the validation and
//! `{input}` interpolation rules of the API contract. Plain data and pure functions: nothing here
//! knows about HTTP or SQL, so the engine, the store and the API share one vocabulary.

pub mod body;
pub mod crew;
pub mod event;
pub mod field;
pub mod fork;
pub mod ids;
pub mod interpolate;
pub mod journal;
pub mod kickoff;
pub mod knowledge;
pub mod limits;
pub mod memory;
pub mod run;
pub mod schedule;
pub mod schema;
pub mod tenant;
pub mod thread;
pub mod validate;

pub use crew::{AgentSpec, CrewSpec, HttpToolSpec, LlmSpec, Process, TaskSpec, ToolCalling, ToolSpec};
pub use event::{Event, EventData, EventType};
pub use ids::RunId;
pub use limits::{CrewLimits, RunLimits};
pub use run::{
    ErrorKind, Run, RunError, RunStatus, RunTrace, TaskOutput, TaskRun, TaskStatus, Usage, UsageLine,
};
pub use tenant::{Caller, KeyEnd, QueueFull, QuotaPatch, Quotas, Scope, Scopes, DEFAULT_TENANT};
pub use validate::{FieldError, ValidationContext};

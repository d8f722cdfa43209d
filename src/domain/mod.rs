//! The domain: crew specs, runs, tasks, messages, tool calls and events, with the validation and
//! `{input}` interpolation rules of the API contract. Plain data and pure functions: nothing here
//! knows about HTTP or SQL, so the engine, the store and the API share one vocabulary.

/// An enum the API, the database and the logs name in `snake_case`: its serde names, its
/// OpenAPI schema and its strum forms (`<&str>::from`, `parse`, `Display`) are the same words.
/// Give it its `#[strum(serialize_all = "snake_case", ...)]` (with a parse error of its own,
/// where it has one).
macro_rules! snake_case_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($body:tt)* }) => {
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            serde::Serialize,
            serde::Deserialize,
            utoipa::ToSchema,
            strum::EnumString,
            strum::IntoStaticStr,
            strum::Display,
        )]
        #[serde(rename_all = "snake_case")]
        $(#[$meta])*
        pub enum $name { $($body)* }
    };
}

pub mod audit;
pub mod body;
pub mod chat;
pub mod crew;
pub mod crewai;
pub mod evaluation;
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
pub mod secret;
pub mod tenant;
pub mod thread;
pub mod validate;
pub mod webhook;

pub use crew::{AgentSpec, CrewSpec, HttpToolSpec, LlmSpec, Process, TaskSpec, ToolCalling, ToolSpec};
pub use event::{Event, EventData, EventType};
pub use ids::{BaseId, DocumentId, KeyId, MemoryId, RunId, ScheduleId, TenantId, ThreadId, WebhookId};
pub use limits::{CrewLimits, RunLimits};
pub use run::{
    ErrorKind, Run, RunError, RunStatus, RunTrace, TaskOutput, TaskRun, TaskStatus, Usage, UsageLine,
};
pub use tenant::{
    Caller, KeyEnd, QueueFull, QuotaPatch, Quotas, Scope, Scopes, DEFAULT_TENANT, DEFAULT_TENANT_ID,
};
pub use validate::{FieldError, ValidationContext};

//! Memory: what a crew remembers across kickoffs. A crew's `memory` names the scope its runs save
//! to and recall from (`"user:{user_id}"`, interpolated from the inputs); each completed task saves
//! an item (the task, the agent, the answer within a size bound), and with `extract` the facts and
//! entities a model finds in the answer; each task's prompt recalls the scope's most relevant
//! items from earlier runs. Plain data; the store keeps items, the engine saves and recalls them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::field::{is_refused_char, TextKind};
use crate::domain::TenantId;

/// Memories a task's prompt receives when the crew does not say, and at most.
pub const DEFAULT_MEMORY_K: u32 = 5;
pub const MAX_MEMORY_K: u32 = 50;
/// Longest scope, in bytes (after interpolation).
pub const MAX_SCOPE_CHARS: usize = 256;
/// [`check_scope`]'s rule as a JSON Schema `pattern`: no control character, one at least that
/// is not white space.
pub const SCOPE_PATTERN: &str = super::field::LINE_NOT_BLANK_PATTERN;
/// Longest memory item, in bytes: a task's answer is cut to fit.
pub const MAX_MEMORY_BYTES: usize = 4096;
/// Facts and entities one extraction saves at most.
pub const MAX_EXTRACTED: usize = 20;
/// The newest items of a scope a recall or a search ranks at most.
pub const RECALL_CANDIDATES: i64 = 1_000;

/// A crew's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// The scope the crew's runs save to and recall from, interpolated from the inputs like the
    /// crew's texts (`"user:{user_id}"`): at most 256 characters once interpolated, not blank, no control characters. A
    /// kickoff's `memory_scope` replaces it.
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub scope: String,
    /// Items a task's prompt receives (the most relevant to it, from earlier runs).
    #[serde(default = "default_k")]
    #[schema(minimum = 1, maximum = 50, default = 5)]
    pub k: u32,
    /// Also ask the task's model for the facts and entities of each answer, saved as items of
    /// their own (a side call, journaled and counted in the run's spend).
    #[serde(default)]
    pub extract: bool,
    /// `<provider>/<model>` of an embedding model: items are saved with their vectors and
    /// recalled by meaning fused with their words (the database needs pgvector). Without one,
    /// recall is by words and recency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 3, max_length = 200)]
    pub embedding: Option<String>,
}

fn default_k() -> u32 {
    DEFAULT_MEMORY_K
}

impl MemorySpec {
    /// A spec of `scope` with the defaults.
    pub fn scoped(scope: String) -> Self {
        Self { scope, k: DEFAULT_MEMORY_K, extract: false, embedding: None }
    }
}

/// An embedding model's name is `<provider>/<model>`, at most 200 bytes.
pub fn check_embedding(embedding: &str) -> Result<(), String> {
    let parts = embedding.split_once('/').filter(|(p, m)| !p.is_empty() && !m.trim().is_empty());
    let controls = embedding.chars().any(|c| is_refused_char(c, TextKind::Line));
    if parts.is_none() || embedding.len() > 200 || controls {
        return Err("must be '<provider>/<model>' (at most 200 bytes)".to_owned());
    }
    Ok(())
}

/// A scope is well formed: not blank, at most [`MAX_SCOPE_CHARS`] characters, no control
/// characters (what [`SCOPE_PATTERN`] says in the API's schema).
pub fn check_scope(scope: &str) -> Result<(), String> {
    if scope.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if scope.chars().count() > MAX_SCOPE_CHARS {
        return Err(format!("must be at most {MAX_SCOPE_CHARS} characters"));
    }
    if scope.chars().any(|c| is_refused_char(c, TextKind::Line)) {
        return Err("must not contain control characters".to_owned());
    }
    Ok(())
}

snake_case_enum! {
    /// What an item is.
    #[strum(serialize_all = "snake_case")]
    pub enum MemoryKind {
        /// A task's answer.
        Task,
        /// A fact extracted from an answer.
        Fact,
        /// An entity (a person, a product, a place...) and what the answer says of it.
        Entity,
        /// Posted through `POST /v1/memories`.
        Note,
    }
}

/// An item to save.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub id: super::MemoryId,
    pub tenant: TenantId,
    pub scope: String,
    pub kind: MemoryKind,
    pub text: String,
    pub run_id: Option<super::RunId>,
    pub task: Option<String>,
    pub agent: Option<String>,
    /// Its vector, when its crew (or its poster) names an embedding model.
    pub vector: Option<MemoryVector>,
}

/// An item's vector and the model that made it (items are compared with a query's vector of
/// the same model only).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryVector {
    pub model: String,
    pub values: Vec<f32>,
}

/// An item as recalled or listed: its `score` is the relevance to the query (0 when listed
/// without one, or recalled for being recent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryItem {
    pub id: uuid::Uuid,
    pub scope: String,
    pub kind: MemoryKind,
    pub text: String,
    pub run_id: Option<uuid::Uuid>,
    pub task: Option<String>,
    pub agent: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub score: f64,
}

/// The item a completed task saves: its description and its answer, cut to fit
/// [`MAX_MEMORY_BYTES`] (the answer keeps the larger share).
pub fn task_memory(description: &str, answer: &str) -> String {
    let task = cut(description.trim(), 1024);
    let room = MAX_MEMORY_BYTES.saturating_sub(task.len() + 16);
    format!("Task: {task}\nAnswer: {}", cut(answer.trim(), room))
}

/// `text` within `max` bytes, cut at a character boundary with an ellipsis.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_checked() {
        assert!(check_scope("user:42").is_ok());
        assert!(check_scope("  ").is_err());
        assert!(check_scope("a\nb").is_err());
        assert!(check_scope(&"x".repeat(MAX_SCOPE_CHARS + 1)).is_err());
        assert!(check_scope(&"é".repeat(MAX_SCOPE_CHARS)).is_ok(), "characters, not bytes");
        // The schema's pattern says what check_scope does (its length apart).
        let pattern = regex::Regex::new(SCOPE_PATTERN).expect("pattern");
        for scope in [
            "user:42", " a ", "é", "\u{a0}x", "", " ", "\u{a0}", "a\nb", "a\tb", "\u{85}x", "\u{7f}",
            "x\u{9f}",
        ] {
            assert_eq!(pattern.is_match(scope), check_scope(scope).is_ok(), "{scope:?}");
        }
        assert!(check_scope(&"x".repeat(MAX_SCOPE_CHARS)).is_ok());
    }

    #[test]
    fn a_task_memory_fits_its_bound_and_keeps_both_parts() {
        let memory = task_memory("Summarise the report", &"é".repeat(10_000));
        assert!(memory.len() <= MAX_MEMORY_BYTES, "{}", memory.len());
        assert!(memory.starts_with("Task: Summarise the report\nAnswer: éé"));
        assert!(memory.ends_with('…'));
        assert_eq!(task_memory("t", "short"), "Task: t\nAnswer: short");
    }

    #[test]
    fn the_spec_has_defaults_and_refuses_unknown_fields() {
        let spec: MemorySpec = serde_json::from_str(r#"{"scope": "user:{id}"}"#).expect("spec");
        assert_eq!(spec, MemorySpec::scoped("user:{id}".into()));
        assert!(serde_json::from_str::<MemorySpec>(r#"{"scope": "s", "size": 1}"#).is_err());
    }
}

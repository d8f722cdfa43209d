//! Errors that name the field of a request they are about ([`FieldError`], with its JSON path),
//! and reading a request's JSON into a type with such errors.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One problem with one field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// JSON path of the field, e.g. `crew.tasks[0].agent`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// The same error under a parent path (`crew` + `agents[0]` → `crew.agents[0]`).
    pub fn under(mut self, parent: &str) -> Self {
        self.field = join_path(parent, &self.field);
        self
    }
}

/// Deserialize a request's JSON into `T`; a mismatch is one error naming the field's path.
pub fn parse_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Vec<FieldError>> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        vec![FieldError::new(field, e.into_inner().to_string())]
    })
}

/// Join a parent path and a child path the way JSON paths read.
pub fn join_path(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty() || child == ".") {
        (true, _) => child.to_owned(),
        (false, true) => parent.to_owned(),
        (false, false) if child.starts_with('[') => format!("{parent}{child}"),
        (false, false) => format!("{parent}.{child}"),
    }
}

//! What may be said of a stored secret.

use chrono::{DateTime, Utc};

/// What may be said of a secret: its name and times, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

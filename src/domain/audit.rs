//! The audit log's records: who changed what, and how it ended.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::ids::TenantId;

/// A change made (or attempted) through the API.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = AuditEntry)]
pub struct AuditRecord {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    /// The tenant whose resource it is (the caller's, for a refused request).
    #[schema(value_type = String)]
    pub tenant: TenantId,
    /// The key that made it; `null` for the keys of `AGENTD_API_KEYS`, an open API and the
    /// command line.
    pub key_id: Option<Uuid>,
    /// What was done: the resource kind and the operation (`secret.put`, `run.cancel`...).
    pub action: String,
    /// The path of what it was done to.
    pub resource: String,
    /// `succeeded`, `denied`, `not_found`, `conflict`, `invalid`, `refused` or `failed`.
    pub outcome: String,
}

snake_case_enum! {
    /// How an audited request ended.
    #[strum(serialize_all = "snake_case")]
    #[schema(as = AuditOutcome)]
    pub enum Outcome {
        /// The change was made (recorded in its own transaction).
        Succeeded,
        /// The key lacked the operation's scope (403).
        Denied,
        /// No such resource, or another tenant's (404).
        NotFound,
        /// The resource's state refused it (409).
        Conflict,
        /// The request was malformed or broke the rules (400, 422).
        Invalid,
        /// A quota or limit refused it (413, 429...).
        Refused,
        /// The server failed (5xx).
        Failed,
    }
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The outcome an HTTP status stands for.
    pub fn of_status(status: u16) -> Self {
        match status {
            200..=399 => Outcome::Succeeded,
            401 | 403 => Outcome::Denied,
            404 | 410 => Outcome::NotFound,
            409 | 412 => Outcome::Conflict,
            400 | 422 => Outcome::Invalid,
            500..=599 => Outcome::Failed,
            _ => Outcome::Refused,
        }
    }
}

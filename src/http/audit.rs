//! `GET /v1/audit`: the record of changes made through the API (an admin sees every tenant's,
//! a `manage` key its own tenant's), newest first, filtered, a page at a time.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Authed;
use super::error::{ApiError, ApiResult, Problem};
use super::extract::ApiQuery;
use super::runs::bounded;
use super::AppState;
use crate::domain::TenantId;
use crate::store::AuditFilter;

const DEFAULT_PAGE: i64 = 100;
const MAX_PAGE: i64 = 1000;

/// Query of `GET /v1/audit`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this tenant's records (an admin's filter; other keys see their own tenant's only).
    #[param(nullable = false)]
    pub tenant: Option<String>,
    /// Only this action (`secret.put`, `run.cancel`, `key.revoke`...).
    #[param(nullable = false)]
    pub action: Option<String>,
    /// Only this outcome.
    #[param(nullable = false)]
    pub outcome: Option<AuditOutcome>,
    /// Only changes made with this key.
    #[param(nullable = false)]
    pub key_id: Option<Uuid>,
    /// Only resources whose path starts with this (`/v1/secrets/`).
    #[param(nullable = false)]
    pub resource: Option<String>,
    /// Only records at or after this time.
    #[param(nullable = false)]
    pub since: Option<DateTime<Utc>>,
    /// Only records before this time.
    #[param(nullable = false)]
    pub until: Option<DateTime<Utc>>,
    /// Page size, 1 to 1000 (default 100).
    #[param(nullable = false, minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(nullable = false, value_type = Option<Uuid>)]
    pub cursor: Option<String>,
}

pub use crate::domain::audit::AuditRecord as AuditEntry;
pub use crate::domain::audit::Outcome as AuditOutcome;

/// A page of audit records, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    pub entries: Vec<AuditEntry>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// The audit log: changes made through the API (keys, tenants, secrets, webhooks, crews, run
/// cancellations, deletions, approvals and resumptions), refused ones included.
#[utoipa::path(
    get, path = "/audit", tag = "access",
    params(AuditQuery),
    responses(
        (status = 200, body = AuditList),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_audit(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<AuditList>> {
    let limit = bounded(query.limit, DEFAULT_PAGE, MAX_PAGE, "limit")?;
    let before = query
        .cursor
        .map(|c| Uuid::parse_str(&c).map_err(|_| ApiError::BadRequest(format!("invalid cursor '{c}'"))))
        .transpose()?;
    let filter = AuditFilter {
        tenant: query.tenant.map(TenantId::from),
        action: query.action,
        outcome: query.outcome.map(|o| o.as_str().to_owned()),
        key_id: query.key_id,
        resource: query.resource,
        since: query.since,
        until: query.until,
        before,
        // One more than the page, to know whether another follows.
        limit: limit + 1,
    };
    let mut records = state.services.audit(&caller, filter).await?;
    let more = records.len() as i64 > limit;
    records.truncate(limit as usize);
    let next_cursor = more.then(|| records.last().map(|r| r.id.to_string())).flatten();
    Ok(Json(AuditList { entries: records, next_cursor }))
}

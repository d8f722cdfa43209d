//! Tenants and API keys (`admin`): `POST/GET /v1/tenants`, `GET/PATCH /v1/tenants/{name}`,
//! `POST/GET /v1/keys`, `DELETE /v1/keys/{id}`. A key's text is answered once, when it is made.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::domain::tenant::{KeyRecord, TenantRecord};
use crate::domain::KeyId;
use crate::domain::{Quotas, Scope, TenantId};

/// A tenant: the owner of runs, crews, secrets and webhooks, and its quotas.
#[derive(Debug, Serialize, ToSchema)]
pub struct Tenant {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub quotas: Quotas,
    /// What it has running and queued now, and has spent today (only in `GET /v1/tenants/{name}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<TenantUsage>,
}

/// A tenant's runs in flight and its spend of the UTC day.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantUsage {
    /// Runs executing now (`running`, `cancelling`), counted against `max_running`.
    pub running: i64,
    /// Runs queued now, counted against `max_queued`.
    pub queued: i64,
    /// Tokens spent today (UTC), counted while the tenant has a daily cap.
    pub tokens_today: i64,
    /// US dollars spent today (UTC), counted while the tenant has a daily cap.
    pub cost_usd_today: f64,
}

impl From<TenantRecord> for Tenant {
    fn from(record: TenantRecord) -> Self {
        Self { name: record.name, created_at: record.created_at, quotas: record.quotas, usage: None }
    }
}

/// Every tenant, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantList {
    pub tenants: Vec<Tenant>,
}

/// The body of `POST /v1/tenants` (a new tenant, with quotas if any; omitted: no limit) and of
/// `PATCH /v1/tenants` (the tenant to change, with the quotas to change).
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NamedQuotas {
    /// 1 to 63 lowercase letters, digits, `-` and `_`, starting with a letter or digit.
    #[schema(min_length = 1, max_length = 63, pattern = "^[a-z0-9][a-z0-9_-]*$", example = "team-a")]
    name: String,
    #[serde(flatten)]
    quotas: Quotas,
}

/// An API key, without its text.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKey {
    pub id: Uuid,
    pub tenant: String,
    pub name: String,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    pub scopes: Vec<Scope>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<KeyRecord> for ApiKey {
    fn from(record: KeyRecord) -> Self {
        Self {
            id: record.id.0,
            tenant: record.tenant.into_string(),
            name: record.name,
            prefix: record.prefix,
            scopes: record.scopes.iter().filter_map(|s| s.parse().ok()).collect(),
            created_at: record.created_at,
            last_used_at: record.last_used_at,
            expires_at: record.expires_at,
        }
    }
}

/// A new key: its record and, this once, the key itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub record: ApiKey,
    /// The key (`agd_…`): shown only in this answer, stored only as a digest.
    pub key: String,
}

/// Live keys, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyList {
    pub keys: Vec<ApiKey>,
}

/// The body of `POST /v1/keys`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewApiKey {
    /// The tenant the key acts for.
    #[schema(example = "default")]
    tenant: String,
    /// What the key is for (shown in lists): one line, no control characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$",
        example = "billing service"
    )]
    name: String,
    /// What the key may do.
    #[schema(min_items = 1)]
    scopes: Vec<Scope>,
    /// When the key stops working (default: never).
    expires_at: Option<DateTime<Utc>>,
}

/// Create a tenant.
#[utoipa::path(
    post, path = "/tenants", tag = "access",
    request_body = NamedQuotas,
    responses(
        (status = 201, description = "Created", body = Tenant),
        (status = 409, description = "A tenant of that name exists", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid name", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_tenant(
    State(state): State<AppState>,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<Tenant>)> {
    Ok((StatusCode::CREATED, Json(state.services.create_tenant(body, &audit).await?.into())))
}

/// Change the quotas of the tenant the body names (as `PATCH /v1/tenants/{name}`).
#[utoipa::path(
    patch, path = "/tenants", tag = "access",
    request_body = NamedQuotas,
    responses(
        (status = 200, description = "The tenant with its new quotas", body = Tenant),
        (status = 404, description = "No such tenant", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No name, or invalid quotas", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn update_named_tenant(
    State(state): State<AppState>,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Tenant>> {
    Ok(Json(state.services.update_named_tenant(body, &audit).await?.into()))
}

/// Change a tenant's quotas.
#[utoipa::path(
    patch, path = "/tenants/{name}", tag = "access",
    params(("name" = String, Path, description = "Tenant name")),
    request_body(content = Quotas, description = "The quotas to change: an omitted one stays as it is, `null` lifts it"),
    responses(
        (status = 200, description = "The tenant with its new quotas", body = Tenant),
        (status = 404, description = "No such tenant", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid quotas", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn update_tenant(
    State(state): State<AppState>,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Tenant>> {
    Ok(Json(state.services.update_tenant(&TenantId::from(name), body, &audit).await?.into()))
}

/// Every tenant.
#[utoipa::path(get, path = "/tenants", tag = "access", responses((status = 200, body = TenantList)))]
pub async fn list_tenants(State(state): State<AppState>) -> ApiResult<Json<TenantList>> {
    let tenants = state.services.tenants().await?.into_iter().map(Tenant::from).collect();
    Ok(Json(TenantList { tenants }))
}

/// A tenant.
#[utoipa::path(
    get, path = "/tenants/{name}", tag = "access",
    params(("name" = String, Path, description = "Tenant name")),
    responses(
        (status = 200, body = Tenant),
        (status = 404, description = "No such tenant", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_tenant(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Tenant>> {
    let (record, load) = state.services.tenant(&TenantId::from(name)).await?;
    let usage = TenantUsage {
        running: load.running,
        queued: load.queued,
        tokens_today: load.tokens_today,
        cost_usd_today: load.cost_usd_today,
    };
    Ok(Json(Tenant { usage: Some(usage), ..record.into() }))
}

/// Create an API key for a tenant; the answer holds the key, once.
#[utoipa::path(
    post, path = "/keys", tag = "access",
    request_body = NewApiKey,
    responses(
        (status = 201, description = "Created: the only answer that holds the key", body = CreatedApiKey),
        (status = 422, description = "Invalid tenant, name, scopes or expiry", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_key(
    State(state): State<AppState>,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<CreatedApiKey>)> {
    let created = state.services.create_key(body, &audit).await?;
    Ok((StatusCode::CREATED, Json(CreatedApiKey { record: created.record.into(), key: created.key })))
}

/// Live API keys (never their text).
#[utoipa::path(get, path = "/keys", tag = "access", responses((status = 200, body = ApiKeyList)))]
pub async fn list_keys(State(state): State<AppState>, Authed(caller): Authed) -> ApiResult<Json<ApiKeyList>> {
    let keys = state.services.keys(&caller).await?.into_iter().map(ApiKey::from).collect();
    Ok(Json(ApiKeyList { keys }))
}

/// Revoke an API key: every replica refuses it within about a second.
#[utoipa::path(
    delete, path = "/keys/{id}", tag = "access",
    params(("id" = Uuid, Path, description = "Key id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such live key", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn revoke_key(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    state.services.revoke_key(&caller, KeyId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who the caller is: its tenant, its key's scopes and id.
#[derive(Debug, Serialize, ToSchema)]
pub struct WhoAmI {
    /// The tenant the key acts for.
    pub tenant: String,
    /// What the key may do (`admin` covers everything, over every tenant).
    pub scopes: Vec<Scope>,
    /// The key's id; `null` for a key of `AGENTD_API_KEYS` or an open API.
    pub key_id: Option<Uuid>,
}

/// The caller's tenant and scopes (for a client such as the dashboard to offer what the key may
/// do).
#[utoipa::path(get, path = "/whoami", tag = "access", responses((status = 200, body = WhoAmI)))]
pub async fn whoami(Authed(caller): Authed) -> Json<WhoAmI> {
    Json(WhoAmI {
        tenant: caller.tenant.into_string(),
        scopes: caller.scopes.iter().collect(),
        key_id: caller.key_id.map(uuid::Uuid::from),
    })
}

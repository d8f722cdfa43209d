//! Stored secrets: `PUT/DELETE /v1/secrets/{name}` and the list. Values go in and never come
//! out: every answer holds names and times only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::domain::crew::UpsertOutcome;
use crate::domain::secret::SecretInfo;
use crate::service::check_secret_name;

/// A stored secret, without its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretRecord {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<SecretInfo> for SecretRecord {
    fn from(info: SecretInfo) -> Self {
        Self { name: info.name, created_at: info.created_at, updated_at: info.updated_at }
    }
}

/// Every stored secret, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretList {
    pub secrets: Vec<SecretRecord>,
}

/// The body of `PUT /v1/secrets/{name}`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct SecretValue {
    /// The value (1 byte to 16 KiB), sealed at rest and never returned.
    #[schema(min_length = 1, max_length = 16384)]
    value: String,
}

/// Create or replace a secret.
///
/// The value is encrypted at rest (AES-256-GCM under the server's `AGENTD_SECRETS_KEY`) and
/// never returned by any route. Crews reference it as `{"secret": "<name>"}`; it is read when
/// each request that sends it goes out, so a replacement applies to the next call.
#[utoipa::path(
    put, path = "/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "Secret name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$", example = "api_token")),
    request_body = SecretValue,
    responses(
        (status = 201, description = "Created", body = SecretRecord),
        (status = 200, description = "Replaced", body = SecretRecord),
        (status = 400, description = "Malformed JSON or name", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid value", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Secrets are not configured on this server (no AGENTD_SECRETS_KEY)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_secret(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<SecretRecord>)> {
    check_name(&name)?;
    let (info, outcome) = state.services.put_secret(&caller, &name, body, &audit).await?;
    let status = match outcome {
        UpsertOutcome::Created => StatusCode::CREATED,
        UpsertOutcome::Replaced => StatusCode::OK,
    };
    Ok((status, Json(info.into())))
}

/// List stored secrets (names and times, never values).
#[utoipa::path(get, path = "/secrets", tag = "secrets", responses(
        (status = 200, body = SecretList),
        (status = 501, description = "Secrets are not configured on this server (no AGENTD_SECRETS_KEY)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_secrets(
    State(state): State<AppState>,
    Authed(caller): Authed,
) -> ApiResult<Json<SecretList>> {
    let secrets = state.services.secrets(&caller).await?;
    Ok(Json(SecretList { secrets: secrets.into_iter().map(SecretRecord::from).collect() }))
}

/// Delete a secret. Runs whose crews reference it get a tool error at their next call.
#[utoipa::path(
    delete, path = "/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "Secret name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such secret", body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "Secrets are not configured on this server (no AGENTD_SECRETS_KEY)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_secret(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    check_name(&name)?;
    state.services.delete_secret(&caller, &name, &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn check_name(name: &str) -> ApiResult<()> {
    check_secret_name(name).map_err(|message| ApiError::BadRequest(format!("invalid secret name: {message}")))
}

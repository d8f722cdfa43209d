//! The one error type of the HTTP edge, rendered as `application/problem+json` (RFC 9457).
//! Internal failures are logged with their cause and answered without it.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::FieldError;
use crate::service::ServiceError;

/// An RFC 9457 problem document.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// `about:blank` or `/problems/<slug>`.
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The fields at fault, for validation errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// Every error a handler can answer with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or invalid API key")]
    Unauthorized,
    /// The key may not do this (the message names the scope it lacks).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0}")]
    Conflict(String),
    #[error("the request body did not arrive within {seconds} s")]
    RequestTimeout { seconds: u64 },
    #[error("request body larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{detail}")]
    Validation { detail: String, errors: Vec<FieldError> },
    #[error("{0}")]
    Unavailable(String),
    /// A tenant's quota refuses the request until `retry_after_s` has passed.
    #[error("{message}")]
    Quota { message: String, retry_after_s: u64 },
    #[error("{0}")]
    NotImplemented(String),
    /// A service agentd relies on (a provider's model) failed.
    #[error("{0}")]
    BadGateway(String),
    #[error("internal error")]
    /// The cause is logged, never answered.
    Internal(String),
}

/// The one mapping of the use cases' errors to the API's.
impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::NotFound(message) => ApiError::NotFound(message),
            ServiceError::Conflict(message) => ApiError::Conflict(message),
            ServiceError::NotConfigured(message) => ApiError::NotImplemented(message),
            ServiceError::Upstream(message) => ApiError::BadGateway(message),
            ServiceError::Invalid(errors) => ApiError::validation(errors),
            ServiceError::Quota { message, retry_after } => {
                ApiError::Quota { message, retry_after_s: retry_after.as_secs().max(1) }
            }
            ServiceError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "request failed: the database is unavailable");
                ApiError::Unavailable("the database is unavailable; retry later".into())
            }
            ServiceError::Internal(cause) => ApiError::Internal(cause.to_string()),
        }
    }
}

impl ApiError {
    /// A 422 listing the fields at fault.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let detail = match errors.as_slice() {
            [one] if one.field.is_empty() => one.message.clone(),
            [one] => format!("{}: {}", one.field, one.message),
            many => format!("{} fields are invalid", many.len()),
        };
        ApiError::Validation { detail, errors }
    }

    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Quota { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn slug(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad-request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not-found",
            ApiError::MethodNotAllowed => "method-not-allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::RequestTimeout { .. } => "request-timeout",
            ApiError::PayloadTooLarge { .. } => "payload-too-large",
            ApiError::UnsupportedMediaType(_) => "unsupported-media-type",
            ApiError::Validation { .. } => "validation",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Quota { .. } => "quota",
            ApiError::NotImplemented(_) => "not-configured",
            ApiError::BadGateway(_) => "upstream",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let ApiError::Internal(cause) = &self {
            tracing::error!(error = %cause, "request failed");
        }
        let title = status.canonical_reason().unwrap_or("Error").to_owned();
        let detail = self.to_string();
        let retry_after = match &self {
            ApiError::Quota { retry_after_s, .. } => Some(*retry_after_s),
            _ => None,
        };
        let type_ = format!("/problems/{}", self.slug());
        let errors = match self {
            ApiError::Validation { errors, .. } => errors,
            _ => Vec::new(),
        };
        let mut response =
            problem_response(Problem { type_, title, status: status.as_u16(), detail, errors });
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// Render a problem document with its status and content type.
pub fn problem_response(problem: Problem) -> Response {
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(&problem)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if status == StatusCode::REQUEST_TIMEOUT {
        // The rest of the body may still be on its way: don't read it.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    }
    response
}

pub type ApiResult<T> = Result<T, ApiError>;

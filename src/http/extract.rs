//! Extractors whose rejections are [`ApiError`]s, so a bad body, path or query is answered with
//! problem+json like every other error.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use super::error::ApiError;
use super::server::BodyTimeout;
use crate::config::ConnectionLimits;
use crate::domain::FieldError;

/// The trace a kickoff joins, read from its request's headers (`traceparent`, `tracestate`):
/// every surface that starts runs (REST, the protocols) reads it here.
pub use crate::telemetry::kickoff_trace;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// A JSON body. Not JSON → 415, too large → 413, malformed → 400, wrong shape → 422 naming the
/// field.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "expected a JSON body with Content-Type: application/json".into(),
            ));
        }
        let timeout = req
            .extensions()
            .get::<BodyTimeout>()
            .map_or_else(|| ConnectionLimits::default().body_timeout, |t| t.0);
        let read = tokio::time::timeout(timeout, Bytes::from_request(req, state))
            .await
            .map_err(|_| ApiError::RequestTimeout { seconds: timeout.as_secs() })?;
        let bytes = read.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge { limit: MAX_BODY_BYTES }
            } else {
                ApiError::BadRequest(format!("cannot read the request body: {}", rejection.body_text()))
            }
        })?;
        parse_json(&bytes).map(ApiJson)
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Parse a JSON document into `T`, classifying the failure. A string holding a NUL character
/// (`\u0000`) is refused: Postgres cannot store it.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if crate::text::has_nul_escape(bytes) {
        let message = "strings must not contain the NUL character (\\u0000)";
        let field = serde_json::from_slice::<serde_json::Value>(bytes).ok().and_then(|v| nul_path(&v, ""));
        return Err(ApiError::validation(vec![FieldError::new(field.unwrap_or_default(), message)]));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            Category::Data => {
                let field = if path == "." { String::new() } else { path };
                ApiError::validation(vec![FieldError::new(field, inner.to_string())])
            }
            Category::Syntax | Category::Eof | Category::Io => {
                ApiError::BadRequest(format!("malformed JSON: {inner}"))
            }
        }
    })?;
    de.end().map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
    Ok(value)
}

/// The path of the first string (or key) in `value` holding a NUL character.
fn nul_path(value: &serde_json::Value, path: &str) -> Option<String> {
    use crate::domain::field::join_path;
    match value {
        serde_json::Value::String(s) if s.contains('\0') => Some(path.to_owned()),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| nul_path(item, &format!("{path}[{i}]")))
        }
        serde_json::Value::Object(map) => map.iter().find_map(|(key, item)| {
            let here = join_path(path, key);
            if key.contains('\0') {
                return Some(here);
            }
            nul_path(item, &here)
        }),
        _ => None,
    }
}

/// Deserialize an already parsed JSON value into `T`; a mismatch is a 422 naming the field.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    crate::domain::validate::parse_json(value).map_err(ApiError::validation)
}

/// Path parameters; a malformed one (a bad UUID, say) is a 400.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(|rejection| ApiError::BadRequest(format!("invalid path: {}", rejection.body_text())))
    }
}

/// Query parameters; malformed ones are a 400.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| ApiQuery(value))
            .map_err(|rejection| ApiError::BadRequest(format!("invalid query: {}", rejection.body_text())))
    }
}

/// Answer 413 at once to a request whose declared `Content-Length` is over the body limit, before
/// any of the body is read (and so before an `Expect: 100-continue` client sends it).
pub async fn refuse_declared_oversize(
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) && !is_document_upload(&request) {
        return ApiError::PayloadTooLarge { limit: MAX_BODY_BYTES }.into_response();
    }
    next.run(request).await
}

/// `POST /v1/knowledge/{name}/documents`: its handler reads the body itself, within the larger
/// `max_document_bytes`.
fn is_document_upload(request: &Request) -> bool {
    let path = request.uri().path();
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    request.method() == axum::http::Method::POST
        && matches!(segments.as_slice(), ["", "v1", "knowledge", _, "documents"])
}

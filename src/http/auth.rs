//! Bearer-token authentication of `/v1/*`.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::AppState;

/// The prefix of every route that needs a key (including unknown ones, which must not reveal
/// whether they exist).
const PROTECTED_PREFIX: &str = "/v1/";

/// Let a request through when it is outside `/v1/`, when the server has no API keys, or when it
/// carries `Authorization: Bearer <key>` with a configured key; 401 otherwise.
pub async fn require_api_key(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let keys = &state.config.api_keys;
    if keys.is_empty() || !request.uri().path().starts_with(PROTECTED_PREFIX) {
        return Ok(next.run(request).await);
    }
    let header = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    let token = header.and_then(bearer_token).map(str::to_owned).or_else(|| query_token(&request));
    match token {
        Some(token) if keys.accepts(&token) => Ok(next.run(request).await),
        _ => Err(ApiError::Unauthorized),
    }
}

/// The `access_token` query parameter, accepted only on the event-stream routes: browsers'
/// EventSource cannot set headers. (Elsewhere a key in a URL would end up in logs and histories.)
fn query_token(request: &Request) -> Option<String> {
    let path = request.uri().path();
    let streams = path == "/v1/events" || (path.starts_with("/v1/runs/") && path.ends_with("/events"));
    if !streams {
        return None;
    }
    let query = request.uri().query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "access_token")
        .map(|(_, v)| v.into_owned())
}

/// The token of a `Bearer` authorization value (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn reads_bearer_tokens_only() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
    }
}

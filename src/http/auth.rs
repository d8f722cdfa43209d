//! Bearer-token authentication of `/v1/*`: who the caller is (its tenant and scopes) and whether
//! its key may do what it asks.

use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::AppState;
use crate::domain::{Caller, Scope};
use crate::store::{Audit, Outcome};

/// Does `path` need a key? Every route under `/v1/` (including unknown ones, which must not
/// reveal whether they exist), the MCP server and the A2A agents: the protocols act for the key's
/// tenant with its scopes (each method checks its own).
fn is_protected(path: &str) -> bool {
    // A crew's agent card is open: without a key it is the public card (it shows more to a key).
    let card = path.starts_with("/a2a/") && path.ends_with("/.well-known/agent-card.json");
    path.starts_with("/v1/") || path == "/mcp" || path == "/a2a" || (path.starts_with("/a2a/") && !card)
}

/// Who is calling, for the handlers of `/v1/*` (resolved by [`require_api_key`]).
#[derive(Debug, Clone)]
pub struct Authed(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().map(Authed).ok_or(ApiError::Unauthorized)
    }
}

/// The change an audited request makes (see [`audited_action`]), resolved by
/// [`require_api_key`]: the handler hands it to its use case, whose store write records it in
/// the change's own transaction.
#[derive(Debug, Clone)]
pub struct Audited(pub Arc<Audit>);

impl<S: Send + Sync> FromRequestParts<S> for Audited {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Arc<Audit>>() {
            Some(audit) => Ok(Audited(audit.clone())),
            None => Err(ApiError::Internal(format!(
                "{} {} is not an audited route",
                parts.method,
                parts.uri.path()
            ))),
        }
    }
}

/// The audit record of a change `caller` makes through the API: `action` (`run.cancel`,
/// `webhook.create`, …) on `resource` (the request's path; a protocol's endpoint, `/mcp`, for a
/// change a protocol request makes).
pub fn audit(caller: &Caller, action: &str, resource: &str) -> Arc<Audit> {
    Arc::new(Audit::new(caller.key_id, &caller.tenant, action, resource))
}

/// Resolve the caller of a `/v1/` request and check its key's scope for the operation; other
/// paths pass. Without any key (none configured, none stored) the API is open and everyone is
/// an admin of `default`; a key of `AGENTD_API_KEYS` is one too; a stored key acts for its tenant
/// with its scopes. No key or an unknown one: 401. A key without the operation's scope: 403.
pub async fn require_api_key(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if let Some(refused) = crate::http::origin::refusal(&state.origins, &request) {
        return Ok(refused);
    }
    if !is_protected(request.uri().path()) {
        return Ok(next.run(request).await);
    }
    let header = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    let token = header.and_then(bearer_token).map(str::to_owned).or_else(|| query_token(&request));
    let caller = resolve_caller(&state, token.as_deref()).await?.ok_or(ApiError::Unauthorized)?;
    let operation = request.extensions().get::<MatchedPath>().map(|path| path.as_str().to_owned());
    let audit = operation
        .as_deref()
        .and_then(|path| audited_action(request.method(), path))
        .map(|action| audit(&caller, &action, request.uri().path()));
    if let Some(scope) = operation.and_then(|path| required_scope(request.method(), &path)) {
        if !caller.may(scope) {
            if let Some(audit) = &audit {
                Box::pin(record_refusal(&state, audit, Outcome::Denied)).await;
            }
            return Err(ApiError::Forbidden(format!(
                "this key lacks the '{scope}' scope this operation needs"
            )));
        }
    }
    request.extensions_mut().insert(caller);
    if let Some(audit) = &audit {
        request.extensions_mut().insert(audit.clone());
    }
    let response = next.run(request).await;
    if let Some(audit) = audit {
        // Boxed: a request that is not audited (every read, every kickoff, the long polls)
        // carries nothing of the audit while it is served.
        Box::pin(audit_outcome(&state, &audit, response.status().as_u16())).await;
    }
    Ok(response)
}

/// Who presents `token`: an admin of `default` when the API is open (no key configured, none
/// stored) or for a key of `AGENTD_API_KEYS`, a stored key's tenant and scopes; `None` for no
/// token or an unknown one.
async fn resolve_caller(state: &AppState, token: Option<&str>) -> Result<Option<Caller>, ApiError> {
    let keys = &state.config.api_keys;
    if keys.is_empty() && !state.services.keys_exist().await? {
        return Ok(Some(Caller::operator()));
    }
    Ok(match token {
        Some(token) if keys.accepts(token) => Some(Caller::operator()),
        Some(token) => state.services.authenticate(token).await?,
        None => None,
    })
}

/// The caller of a route open to anyone that shows more to a key (the A2A discovery card): who
/// the request's bearer key is, if it has a valid one.
pub async fn optional_caller(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<Option<Caller>, ApiError> {
    let header = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    resolve_caller(state, header.and_then(bearer_token)).await
}

/// Record how an audited request ended, unless its use case recorded the change it made.
async fn audit_outcome(state: &AppState, audit: &Audit, status: u16) {
    match Outcome::of_status(status) {
        Outcome::Succeeded if audit.is_recorded() => {}
        Outcome::Succeeded => {
            // A use case that changed something without recording it: a bug, made visible.
            tracing::error!(action = %audit.action, "a change was not audited by its use case; recorded after it");
            record_refusal(state, audit, Outcome::Succeeded).await;
        }
        outcome => record_refusal(state, audit, outcome).await,
    }
}

/// Record an audited request that changed nothing (or was not recorded with its change); a
/// failure to record is logged, not answered (the request's own answer stands).
async fn record_refusal(state: &AppState, audit: &Audit, outcome: Outcome) {
    if let Err(error) = state.services.record_refusal(audit, outcome).await {
        tracing::warn!(%error, action = %audit.action, "could not record an audited request");
    }
}

/// The audit action of an operation that changes something (`secret.put`, `run.cancel`,
/// `key.revoke`...): the resource kind, then the operation's own last path segment or what its
/// method does. Reads are not audited, nor kickoffs (a run is its own record).
pub fn audited_action(method: &Method, path: &str) -> Option<String> {
    if [Method::GET, Method::HEAD, Method::OPTIONS].contains(method) {
        return None;
    }
    let path = path.strip_prefix("/v1/")?;
    // A kickoff is its own record, through AG-UI too.
    if path.starts_with("kickoffs") || path.starts_with("ag-ui/") {
        return None;
    }
    let mut segments: Vec<&str> = path.split('/').collect();
    if matches!(segments.get(2), Some(&"documents" | &"aliases")) {
        // A knowledge base's documents and a crew's aliases are their own kinds
        // (`document.create`, `alias.put`, `alias.delete`).
        segments.drain(..2);
    }
    // A custom method (`crews:import`): the resource kind, then the method's name.
    if let [custom] = segments[..] {
        if let Some((kind, verb)) = custom.split_once(':') {
            return Some(format!("{}.{verb}", kind.trim_end_matches('s')));
        }
    }
    let kind = match *segments.first()? {
        "memories" => "memory",
        "aliases" => "alias",
        other => other.trim_end_matches('s'),
    };
    let verb = match segments.last() {
        Some(last) if segments.len() > 1 && !last.starts_with('{') => (*last).to_owned(),
        // A key is never deleted: DELETE revokes it (its row stays, for the audit).
        _ if kind == "key" && *method == Method::DELETE => "revoke".to_owned(),
        _ => match *method {
            Method::POST => "create".to_owned(),
            Method::PUT => "put".to_owned(),
            Method::PATCH => "update".to_owned(),
            Method::DELETE => "delete".to_owned(),
            _ => method.as_str().to_ascii_lowercase(),
        },
    };
    Some(format!("{kind}.{verb}"))
}

/// The scope an operation (method and route, as the OpenAPI document names it) needs: `read` for
/// reading runs, events, crews and secret names; `kickoff` to start, cancel and delete runs (and
/// threads);
/// `approve` to decide tool calls and resume runs; `manage` to change crews and secrets and for
/// everything about webhooks; `admin` for tenants and keys.
pub fn required_scope(method: &Method, path: &str) -> Option<Scope> {
    let path = path.strip_prefix("/v1")?;
    let reads = method == Method::GET || method == Method::HEAD;
    let scope = match path {
        "/kickoffs" | "/kickoffs/batch" | "/runs/{id}/cancel" | "/runs/{id}/fork" | "/runs/{id}/retry" => {
            Scope::Kickoff
        }
        // An evaluation kicks a run off per case.
        "/evaluations" if !reads => Scope::Kickoff,
        p if p.starts_with("/threads") && !reads => Scope::Kickoff,
        "/runs/{id}" if method == Method::DELETE => Scope::Kickoff,
        "/runs/{id}/resume" | "/runs/{id}/tool-calls/{tool_call_id}/approval" => Scope::Approve,
        // An AG-UI run kicks a crew off (resuming an interrupt needs `approve` too).
        p if p.starts_with("/ag-ui/") => Scope::Kickoff,
        "/audit" => Scope::Manage,
        p if p.starts_with("/keys") || p.starts_with("/tenants") => Scope::Admin,
        p if p.starts_with("/webhooks") => Scope::Manage,
        p if p.starts_with("/schedules") && !reads => Scope::Manage,
        p if (p.starts_with("/crews")
            || p.starts_with("/datasets")
            || p.starts_with("/secrets")
            || p.starts_with("/knowledge")
            || p.starts_with("/memories"))
            && !reads =>
        {
            Scope::Manage
        }
        _ if reads => Scope::Read,
        _ => return None,
    };
    Some(scope)
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
    use super::{bearer_token, required_scope};
    use crate::domain::Scope;
    use axum::http::Method;

    #[test]
    fn operations_need_their_scopes() {
        let scope = |method: Method, path: &str| required_scope(&method, path);
        assert_eq!(scope(Method::GET, "/v1/runs/{id}"), Some(Scope::Read));
        assert_eq!(scope(Method::DELETE, "/v1/runs/{id}"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::POST, "/v1/kickoffs"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::POST, "/v1/crews:import"), Some(Scope::Manage));
        assert_eq!(scope(Method::POST, "/v1/datasets"), Some(Scope::Manage));
        assert_eq!(scope(Method::DELETE, "/v1/datasets/{id}"), Some(Scope::Manage));
        assert_eq!(scope(Method::POST, "/v1/evaluations"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::GET, "/v1/evaluations/{id}"), Some(Scope::Read));
        assert_eq!(scope(Method::POST, "/v1/runs/{id}/resume"), Some(Scope::Approve));
        assert_eq!(scope(Method::GET, "/v1/secrets"), Some(Scope::Read));
        assert_eq!(scope(Method::PUT, "/v1/secrets/{name}"), Some(Scope::Manage));
        assert_eq!(scope(Method::GET, "/v1/webhooks"), Some(Scope::Manage));
        assert_eq!(scope(Method::POST, "/v1/keys"), Some(Scope::Admin));
        assert_eq!(scope(Method::GET, "/v1/tenants"), Some(Scope::Admin));
        assert_eq!(scope(Method::GET, "/healthz"), None);
        assert_eq!(scope(Method::GET, "/v1/knowledge/{name}/search"), Some(Scope::Read));
        assert_eq!(scope(Method::POST, "/v1/knowledge/{name}/documents"), Some(Scope::Manage));
        assert_eq!(scope(Method::DELETE, "/v1/knowledge/{name}"), Some(Scope::Manage));
        assert_eq!(scope(Method::GET, "/v1/memories"), Some(Scope::Read));
        assert_eq!(scope(Method::POST, "/v1/memories"), Some(Scope::Manage));
        assert_eq!(scope(Method::DELETE, "/v1/memories/{id}"), Some(Scope::Manage));
        assert_eq!(scope(Method::GET, "/v1/threads/{id}"), Some(Scope::Read));
        assert_eq!(scope(Method::POST, "/v1/runs/{id}/fork"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::PATCH, "/v1/schedules/{id}"), Some(Scope::Manage));
        assert_eq!(scope(Method::GET, "/v1/schedules/{id}/runs"), Some(Scope::Read));
        assert_eq!(scope(Method::POST, "/v1/runs/{id}/retry"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::POST, "/v1/threads"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::DELETE, "/v1/threads/{id}"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::POST, "/v1/ag-ui/crews/{name}"), Some(Scope::Kickoff));
        assert_eq!(scope(Method::POST, "/mcp"), None, "each MCP method checks its own scope");
    }

    #[test]
    fn changes_are_audited_by_kind_and_verb() {
        use super::audited_action;
        let action = |method: Method, path: &str| audited_action(&method, path);
        assert_eq!(action(Method::PUT, "/v1/secrets/{name}").as_deref(), Some("secret.put"));
        assert_eq!(action(Method::POST, "/v1/knowledge").as_deref(), Some("knowledge.create"));
        assert_eq!(action(Method::POST, "/v1/memories").as_deref(), Some("memory.create"));
        assert_eq!(action(Method::DELETE, "/v1/memories").as_deref(), Some("memory.delete"));
        assert_eq!(action(Method::DELETE, "/v1/memories/{id}").as_deref(), Some("memory.delete"));
        assert_eq!(action(Method::DELETE, "/v1/knowledge/{name}").as_deref(), Some("knowledge.delete"));
        assert_eq!(
            action(Method::POST, "/v1/knowledge/{name}/documents").as_deref(),
            Some("document.create")
        );
        assert_eq!(
            action(Method::DELETE, "/v1/knowledge/{name}/documents/{id}").as_deref(),
            Some("document.delete")
        );
        assert_eq!(action(Method::DELETE, "/v1/keys/{id}").as_deref(), Some("key.revoke"));
        assert_eq!(action(Method::PATCH, "/v1/tenants/{name}").as_deref(), Some("tenant.update"));
        assert_eq!(action(Method::POST, "/v1/runs/{id}/cancel").as_deref(), Some("run.cancel"));
        assert_eq!(
            action(Method::POST, "/v1/runs/{id}/tool-calls/{tool_call_id}/approval").as_deref(),
            Some("run.approval")
        );
        assert_eq!(action(Method::POST, "/v1/webhooks").as_deref(), Some("webhook.create"));
        assert_eq!(action(Method::POST, "/v1/crews:import").as_deref(), Some("crew.import"));
        assert_eq!(action(Method::POST, "/v1/datasets").as_deref(), Some("dataset.create"));
        assert_eq!(action(Method::POST, "/v1/evaluations").as_deref(), Some("evaluation.create"));
        assert_eq!(action(Method::PUT, "/v1/crews/{name}/aliases/{alias}").as_deref(), Some("alias.put"));
        assert_eq!(
            action(Method::DELETE, "/v1/crews/{name}/aliases/{alias}").as_deref(),
            Some("alias.delete")
        );
        assert_eq!(action(Method::POST, "/v1/kickoffs"), None);
        assert_eq!(action(Method::POST, "/v1/ag-ui/crews/{name}"), None);
        assert_eq!(action(Method::GET, "/v1/secrets"), None);
        assert_eq!(action(Method::GET, "/v1/audit"), None);
    }

    #[test]
    fn reads_bearer_tokens_only() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
    }
}

//! The HTTP edge: handlers that parse a request, call one use case of [`crate::service`] and
//! render its answer; extractors, problem+json errors (the one mapping of `ServiceError`),
//! authentication, the wire types, and the OpenAPI document, built once with the one axum router.

pub mod access;
pub mod audit;
pub mod auth;
pub mod crews;
pub mod error;
pub mod evaluations;
pub mod events;
mod examples;
pub mod extract;
pub mod forks;
pub mod kickoffs;
pub mod knowledge;
pub mod memory;
pub mod origin;
pub mod protocols;
pub mod runs;
pub mod schedules;
pub mod secrets;
pub mod server;
pub mod service;
mod state;
pub mod threads;
pub mod tools;
pub mod webhooks;
pub mod wire;

use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::Router;
use axum::{middleware, Extension};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::OpenApi as OpenApiDoc;
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use error::{ApiError, Problem};
use extract::MAX_BODY_BYTES;
use protocols::{a2a, ag_ui, mcp};
pub use state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentd",
        description = "Runs CrewAI-style crews of LLM agents, durably, on Postgres.\n\nIn request bodies, strings must not contain the NUL character (`\\u0000`: PostgreSQL cannot store it) and integers are written without a fraction (`1`, not `1.0`)."
    ),
    modifiers(&BearerAuth),
    // Not in any operation's schema: the data of an event stream's `stream.closed` message.
    // Referenced only from a query parameter (utoipa does not collect those): the audit outcome.
    components(schemas(events::StreamClosed, audit::AuditOutcome)),
    security(("bearer" = [])),
    tags(
        (name = "runs", description = "Kickoffs and runs"),
        (name = "events", description = "Run event logs"),
        (name = "crews", description = "Registered crews, their versions and aliases"),
        (name = "evaluations", description = "Datasets, and evaluations of a crew's version on them (replayed against recorded runs, or live)"),
        (name = "tools", description = "Built-in tools"),
        (name = "knowledge", description = "Knowledge bases: documents crews retrieve from"),
        (name = "memory", description = "Memories: what crews remember across kickoffs, by scope"),
        (name = "threads", description = "Threads: conversations of runs, one run at a time"),
        (name = "schedules", description = "Schedules: crews kicked off at the ticks of a cron expression"),
        (name = "secrets", description = "Stored secrets crews reference in tool headers and queries"),
        (name = "webhooks", description = "Endpoints that receive run events, signed (Standard Webhooks), and their deliveries"),
        (name = "access", description = "Tenants and API keys (admin)"),
        (name = "protocols", description = "Published crews through the agent protocols: AG-UI here; the MCP server at `/mcp` and A2A agents at `/a2a/{name}` speak JSON-RPC (see docs/guides/protocols.md)"),
        (name = "service", description = "Health, readiness and documentation"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApiDoc) {
        let scheme = SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build());
        openapi.components.get_or_insert_with(Default::default).add_security_scheme("bearer", scheme);
    }
}

/// The `/v1` routes: everything behind the API key.
fn v1_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(kickoffs::create_kickoff))
        .routes(routes!(kickoffs::create_batch))
        .routes(routes!(runs::list_runs))
        .routes(routes!(runs::get_run, runs::delete_run))
        .routes(routes!(runs::get_task))
        .routes(routes!(runs::list_messages))
        .routes(routes!(runs::list_tool_calls))
        .routes(routes!(events::run_events))
        .routes(routes!(events::wait_run))
        .routes(routes!(events::all_events))
        .routes(routes!(runs::cancel_run))
        .routes(routes!(forks::fork_run))
        .routes(routes!(forks::retry_run))
        .routes(routes!(runs::resume_run))
        .routes(routes!(runs::approve_tool_call))
        .routes(routes!(crews::list_crews))
        .routes(routes!(crews::import_crew))
        .routes(routes!(crews::put_crew, crews::get_crew, crews::delete_crew))
        .routes(routes!(crews::crew_inputs))
        .routes(routes!(crews::list_crew_versions))
        .routes(routes!(crews::get_crew_version))
        .routes(routes!(crews::list_aliases))
        .routes(routes!(crews::put_alias, crews::delete_alias))
        .routes(routes!(evaluations::create_dataset, evaluations::list_datasets))
        .routes(routes!(evaluations::get_dataset, evaluations::delete_dataset))
        .routes(routes!(evaluations::create_evaluation, evaluations::list_evaluations))
        .routes(routes!(evaluations::get_evaluation))
        .routes(routes!(tools::list_tools))
        .routes(routes!(knowledge::create_knowledge_base, knowledge::list_knowledge_bases))
        .routes(routes!(knowledge::get_knowledge_base, knowledge::delete_knowledge_base))
        .routes(routes!(knowledge::post_document, knowledge::list_documents))
        .routes(routes!(knowledge::get_document, knowledge::delete_document))
        .routes(routes!(knowledge::search))
        .routes(routes!(memory::list_memories, memory::create_memory, memory::forget_memories))
        .routes(routes!(memory::get_memory, memory::delete_memory))
        .routes(routes!(threads::create_thread, threads::list_threads))
        .routes(routes!(threads::get_thread, threads::delete_thread))
        .routes(routes!(schedules::create_schedule, schedules::list_schedules))
        .routes(routes!(schedules::get_schedule, schedules::update_schedule, schedules::delete_schedule))
        .routes(routes!(schedules::schedule_runs))
        .routes(routes!(secrets::list_secrets))
        .routes(routes!(secrets::put_secret, secrets::delete_secret))
        .routes(routes!(webhooks::create_webhook, webhooks::list_webhooks))
        .routes(routes!(webhooks::get_webhook, webhooks::update_webhook, webhooks::delete_webhook))
        .routes(routes!(webhooks::rotate_webhook_secret))
        .routes(routes!(webhooks::list_deliveries))
        .routes(routes!(webhooks::retry_delivery))
        .routes(routes!(access::create_tenant, access::list_tenants, access::update_named_tenant))
        .routes(routes!(access::get_tenant, access::update_tenant))
        .routes(routes!(audit::list_audit))
        .routes(routes!(access::create_key, access::list_keys))
        .routes(routes!(access::revoke_key))
        .routes(routes!(access::whoami))
        .routes(routes!(ag_ui::run_agent))
}

/// Routes open to anyone: health, readiness, documentation, the dashboard page.
fn service_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(service::dashboard))
        .routes(routes!(service::healthz))
        .routes(routes!(service::readyz))
        .routes(routes!(service::metrics))
        .routes(routes!(service::openapi_json))
        .routes(routes!(service::docs))
}

/// The agent protocols' endpoints outside `/v1`: the MCP server and the A2A agents (JSON-RPC,
/// behind the API key), and agentd's A2A card (open).
fn protocol_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mcp::post_mcp, mcp::get_mcp, mcp::delete_mcp))
        .routes(routes!(a2a::discovery_card))
        .routes(routes!(a2a::agentd_rpc))
        .routes(routes!(a2a::crew_rpc))
        .routes(routes!(a2a::crew_card))
}

/// The routes and the OpenAPI document that describes them, made together.
fn routes_and_document() -> (Router<AppState>, OpenApiDoc) {
    let (router, mut document) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/v1", v1_routes())
        .merge(service_routes())
        .merge(protocol_routes())
        .split_for_parts();
    let router = with_trailing_slashes(router, &mut document);
    add_edge_responses(&mut document);
    examples::add(&mut document);
    (router, document)
}

/// The A2A endpoints answer at their URL with a trailing slash too (an HTTP client with the
/// interface URL as its base posts to `url/`): the same handlers, and in the document the same
/// operations under their own ids.
fn with_trailing_slashes(router: Router<AppState>, document: &mut OpenApiDoc) -> Router<AppState> {
    for path in ["/a2a", "/a2a/{name}"] {
        let Some(mut item) = document.paths.paths.get(path).cloned() else { continue };
        if let Some(operation) = item.post.as_mut() {
            operation.operation_id = operation.operation_id.as_ref().map(|id| format!("{id}_slash"));
            operation.summary = Some(format!("As `POST {path}` (the URL with a trailing slash)"));
        }
        document.paths.paths.insert(format!("{path}/"), item);
    }
    router
        .route("/a2a/", axum::routing::post(a2a::agentd_rpc))
        .route("/a2a/{name}/", axum::routing::post(a2a::crew_rpc))
}

/// Declare on every operation the answers the layers around the handlers give: 401 from the API
/// key check and 403 from its scope check (`/v1`, whose operations name their scope in
/// `x-required-scope` and their description), 400/408/413/415 from reading a JSON body, and 503
/// when the database is out of reach or the connection cap is reached (only the health routes are
/// served then).
fn add_edge_responses(document: &mut OpenApiDoc) {
    use axum::http::Method;
    use utoipa::openapi::extensions::ExtensionsBuilder;
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let problem = |description: &str| {
        let content = ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build();
        ResponseBuilder::new().description(description).content("application/problem+json", content).build()
    };
    for (path, item) in document.paths.paths.iter_mut() {
        let operations = [
            (Method::GET, &mut item.get),
            (Method::PUT, &mut item.put),
            (Method::POST, &mut item.post),
            (Method::DELETE, &mut item.delete),
            (Method::PATCH, &mut item.patch),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            if let Some(scope) = auth::required_scope(&method, path) {
                let extension = ExtensionsBuilder::new().add("x-required-scope", scope.as_str()).build();
                operation.extensions.get_or_insert_with(Default::default).merge(extension);
                let note = format!("Needs a key with the `{scope}` scope (or `admin`).");
                operation.description = Some(match operation.description.take() {
                    Some(text) if !text.is_empty() => format!("{text}\n\n{note}"),
                    _ => note,
                });
                operation
                    .responses
                    .responses
                    .entry("403".to_owned())
                    .or_insert_with(|| problem("The key lacks the scope this operation needs").into());
            }
            let responses = &mut operation.responses.responses;
            if origin::guarded(path) {
                const ORIGIN: &str = "the request's `Origin` is not allowed (the `allowed_origins` setting)";
                match responses.get_mut("403") {
                    Some(utoipa::openapi::RefOr::T(response)) if !response.description.contains("Origin") => {
                        response.description = format!("{}; or {ORIGIN}", response.description);
                    }
                    Some(_) => {}
                    None => {
                        let refused =
                            problem("The request's `Origin` is not allowed (the `allowed_origins` setting)");
                        responses.insert("403".to_owned(), refused.into());
                    }
                }
            }
            let mut add = |status: &str, description: &str| {
                responses.entry(status.to_owned()).or_insert_with(|| problem(description).into());
            };
            let card = path.ends_with("/.well-known/agent-card.json");
            let keyed = path.starts_with("/v1/") || path == "/mcp" || (path.starts_with("/a2a") && !card);
            if keyed {
                add("401", "Missing or invalid API key (when the server has API keys)");
            }
            if operation.request_body.is_some() {
                add("400", "Malformed JSON");
                add("408", "The body did not arrive within the body timeout");
                add("413", "Body larger than 2 MiB");
                add("415", "Not a JSON body (`Content-Type: application/json`)");
            }
            if !matches!(path.as_str(), "/healthz" | "/readyz") {
                add(
                    "503",
                    "The database is unavailable, or the server is at its connection cap (retry later)",
                );
            }
        }
    }
}

/// The OpenAPI document, as `agentd openapi` prints it and `/openapi.json` serves it.
pub fn openapi() -> OpenApiDoc {
    routes_and_document().1
}

/// The OpenAPI document as `/openapi.json` serves it, rendered once when the router is built.
#[derive(Clone)]
pub struct OpenApiJson(pub Bytes);

/// The whole HTTP application, served on `local` (the protocols' default allowed origins are
/// its own).
pub fn router(mut state: AppState, local: std::net::SocketAddr) -> Router {
    let (router, document) = routes_and_document();
    let body_timeout = server::BodyTimeout(state.config.connections.body_timeout);
    state.origins =
        std::sync::Arc::new(origin::Origins { policy: state.config.allowed_origins.clone(), local });
    let json = document.to_pretty_json().unwrap_or_else(|e| {
        tracing::error!(error = %e, "the OpenAPI document does not serialize");
        "{}".to_owned()
    });
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), auth::require_api_key))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(extract::refuse_declared_oversize))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn(traced_request))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(Extension(OpenApiJson(Bytes::from(json))))
        .layer(Extension(body_timeout))
        .with_state(state)
}

/// The span of a request: method and path, never the query (stream routes accept a key there).
fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    tracing::info_span!("request", method = %request.method(), path = %request.uri().path())
}

/// A request's OpenTelemetry server span (traces on), beneath the caller's `traceparent`: named
/// by its route, with its status; a kickoff's run joins its trace.
async fn traced_request(request: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    if !crate::telemetry::is_on() {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let span = crate::telemetry::server_request(
        request.method().as_str(),
        &route,
        request.uri().path(),
        request.headers(),
    );
    let Some(span) = span else { return next.run(request).await };
    let response = span.instrument(next.run(request)).await;
    let status = response.status();
    span.set("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.fail(status.as_str(), status.canonical_reason().unwrap_or("server error"));
    }
    span.end();
    response
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such resource".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    tracing::error!("a request handler panicked");
    error::problem_response(Problem {
        type_: "/problems/internal".into(),
        title: "Internal Server Error".into(),
        status: 500,
        detail: "internal error".into(),
        errors: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::domain::field::{
        LINES_NOT_BLANK_PATTERN, LINES_PATTERN, LINE_NOT_BLANK_PATTERN, LINE_PATTERN,
    };
    use serde_json::Value;

    /// Every `pattern` in `value` (a part of the document), with its JSON path.
    fn patterns(value: &Value, path: &str, found: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    match (key.as_str(), child) {
                        ("pattern", Value::String(pattern)) => found.push((path.to_owned(), pattern.clone())),
                        _ => patterns(child, &format!("{path}/{key}"), found),
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    patterns(child, &format!("{path}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    /// What the document says of control characters is what the server checks: every pattern
    /// about them is one of the rule's (`crate::domain::field`), and the fields the rule guards
    /// say so.
    #[test]
    fn the_documents_control_character_patterns_are_the_rules() {
        let document = serde_json::to_value(super::openapi()).expect("the document as JSON");
        let mut found = Vec::new();
        patterns(&document, "", &mut found);
        let rules = [LINE_PATTERN, LINE_NOT_BLANK_PATTERN, LINES_PATTERN, LINES_NOT_BLANK_PATTERN];
        for (path, pattern) in &found {
            if pattern.contains(r"\x1F") {
                assert!(rules.contains(&pattern.as_str()), "{path}: {pattern} is not one of the rule's");
            }
        }
        let schemas = &document["components"]["schemas"];
        let pattern = |schema: &str, field: &str| schemas[schema]["properties"][field]["pattern"].clone();
        assert_eq!(pattern("NewApiKey", "name"), LINE_NOT_BLANK_PATTERN);
        assert_eq!(pattern("WebhookCreate", "description"), LINES_PATTERN);
        assert_eq!(pattern("WebhookPatch", "description"), LINES_PATTERN);
        assert_eq!(pattern("AgentSpec", "role"), LINES_NOT_BLANK_PATTERN);
        assert_eq!(pattern("TaskSpec", "name"), LINE_NOT_BLANK_PATTERN);
        assert!(found.len() > 20, "{found:?}");
    }
}

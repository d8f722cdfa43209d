//! Following runs: a run's event log (JSON pages, or server-sent events with exact resume), the
//! firehose of every run's events, and waiting for a run to settle.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Authed;
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{ApiPath, ApiQuery};
use super::runs::bounded;
use super::wire::RunBody;
use super::AppState;
use crate::domain::{Event, KeyEnd, RunId};
use crate::events::deltas::LLM_DELTA;
use crate::events::stream::{firehose, run_stream, FirehoseFilter, FrameStream};
use crate::events::wait_for_run;
use crate::service::WatchedKey;

const DEFAULT_EVENTS: i64 = 100;
const MAX_EVENTS: i64 = 1_000;
/// Comments sent on idle streams so proxies keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The `retry:` sent when a stream ends at shutdown.
const RECONNECT_AFTER_SHUTDOWN: Duration = Duration::from_millis(500);
const DEFAULT_WAIT_S: u64 = 30;
const MAX_WAIT_S: u64 = 300;

/// Query of `GET /v1/runs/{id}/events`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only events with a greater `seq` (default 0: from the start); `Last-Event-ID` wins for SSE.
    #[param(nullable = false, minimum = 0)]
    pub after: Option<i64>,
    /// JSON form only: at most this many, 1 to 1000 (default 100).
    #[param(nullable = false, minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// SSE only: the API key, for clients that cannot set headers (EventSource).
    #[param(nullable = false)]
    pub access_token: Option<String>,
}

/// A slice of a run's event log.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    #[schema(value_type = Vec<crate::domain::event::EventSchema>)]
    pub events: Vec<Event>,
    /// The `seq` to pass as `after` for the next slice.
    pub next_after: i64,
}

/// A run's events in `seq` order: a JSON page, or with `Accept: text/event-stream` a live stream.
///
/// The stream replays the events after `Last-Event-ID` (or `?after=`), then follows the run live,
/// and ends after its terminal event; `id:` is the `seq`, `event:` the type, `data:` the envelope.
/// When the stored key it was opened with is revoked, expires or loses its tenant, it ends within
/// about a second with `event: stream.closed` (`data:` a `StreamClosed`) and nothing after it.
/// A streaming run (`"stream": true`) also sends `event: llm.delta` messages live, without an
/// `id:` (never journaled): `data:` is `{"run_id", "type": "llm.delta", "at", "task", "agent",
/// "data": {"iteration", "attempt", "text"}}`.
#[utoipa::path(
    get, path = "/runs/{id}/events", tag = "events",
    params(("id" = Uuid, Path, description = "Run id"), EventsQuery,
           ("Last-Event-ID" = Option<i64>, Header, description = "SSE: resume after this seq", minimum = 0, nullable = false)),
    responses(
        (status = 200, description = "The events (JSON), or with `Accept: text/event-stream` their stream",
         content((EventList = "application/json"), (SseMessage = "text/event-stream"))),
        (status = 204, description = "Stream only: the run has ended and `Last-Event-ID` (or `after`) is at or past its last event; an EventSource stops reconnecting"),
        (status = 400, description = "Malformed id or query", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn run_events(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> ApiResult<Response> {
    let id = RunId(id);
    let after = resume_point(&headers, query.after)?;
    if wants_event_stream(&headers) {
        if !state.services.stream_has_more(&caller, id, after).await? {
            // The run has ended and the client has its last event: 204 tells an EventSource to
            // stop reconnecting.
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let frames = run_stream(state.store.clone(), &state.bus, id, after);
        let key = state.services.watch_key(&caller);
        return Ok(sse(frames, key, state.shutdown.clone()).into_response());
    }
    let limit = bounded(query.limit, DEFAULT_EVENTS, MAX_EVENTS, "limit")?;
    let events = state.services.events(&caller, id, after, limit).await?;
    let next_after = events.last().map_or(after, |e| e.seq);
    Ok(Json(EventList { events, next_after }).into_response())
}

/// One message of an event stream, as an SSE client parses it: `id` (the resume position),
/// `event` (the event type), `data` (the event envelope as JSON), or, when the server shuts
/// down, `retry` (milliseconds before reconnecting) alone.
pub struct SseMessage;

impl utoipa::PartialSchema for SseMessage {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let field = |kind: Type, description: &str| {
            ObjectBuilder::new().schema_type(kind).description(Some(description.to_owned()))
        };
        ObjectBuilder::new()
            .property(
                "id",
                field(Type::String, "The run's `seq` (a run's stream) or the global event id (the firehose)"),
            )
            .property(
                "event",
                field(
                    Type::String,
                    "The event type, e.g. `run.completed`; `llm.delta` for live reply text; `stream.closed` (data: `StreamClosed`) for the last message of a stream whose key ended",
                ),
            )
            .property("data", field(Type::String, "The event envelope (`Event`) as JSON"))
            .property(
                "retry",
                field(Type::Integer, "Milliseconds to wait before reconnecting (sent at shutdown)"),
            )
            .description(Some("One server-sent event."))
            .into()
    }
}

impl ToSchema for SseMessage {}

/// The SSE `event:` of the message that ends a stream whose key ended.
pub const STREAM_CLOSED: &str = "stream.closed";

/// The `data:` of a `stream.closed` message: the last message of an event stream whose key was
/// revoked, expired or lost its tenant (sent without an `id:`, so `Last-Event-ID` keeps naming the
/// last event delivered). A reconnect with the same key is refused (401).
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamClosed {
    /// `stream.closed`.
    #[serde(rename = "type")]
    #[schema(example = "stream.closed")]
    pub kind: &'static str,
    pub reason: KeyEnd,
    /// What happened, in a sentence.
    pub detail: &'static str,
}

/// The message that ends a stream whose key ended.
fn stream_closed(why: KeyEnd) -> SseEvent {
    let data = StreamClosed { kind: STREAM_CLOSED, reason: why, detail: why.detail() };
    let json = serde_json::to_string(&data).unwrap_or_else(|_| format!(r#"{{"reason":"{}"}}"#, why.as_str()));
    SseEvent::default().event(STREAM_CLOSED).data(json)
}

/// Query of `GET /v1/events`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FirehoseQuery {
    /// Only events with a greater global id; `Last-Event-ID` wins.
    #[param(nullable = false, minimum = 0)]
    pub after: Option<i64>,
    /// `true`: skip the stored log and start at its end. The first message is then a bare `id:`
    /// (the position, so a reconnecting EventSource resumes from there); events committed later
    /// follow. Ignored when `Last-Event-ID` or `after` is given.
    #[param(nullable = false)]
    pub from_now: Option<bool>,
    /// Only events of runs of this crew.
    #[param(nullable = false)]
    pub crew: Option<String>,
    /// The API key, for clients that cannot set headers (EventSource).
    #[param(nullable = false)]
    pub access_token: Option<String>,
}

/// Every run's events, live (server-sent events); `id:` is the global event id.
///
/// Replays from after `Last-Event-ID` (or `?after=`; by default from the start of the log, or with
/// `from_now=true` from its end), then follows every run live. Ends with `event: stream.closed`
/// when its key ends, as a run's stream does.
#[utoipa::path(
    get, path = "/events", tag = "events",
    params(FirehoseQuery, ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this global id", minimum = 0, nullable = false)),
    responses(
        (status = 200, description = "The stream", body = SseMessage, content_type = "text/event-stream"),
        (status = 400, description = "Malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn all_events(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<FirehoseQuery>,
) -> ApiResult<Response> {
    let after = resume_point(&headers, query.after)?;
    let resuming = query.after.is_some() || last_event_id(&headers).is_some();
    let from_end = query.from_now == Some(true) && !resuming;
    // A tenant's key sees its own runs' events; an admin's, every tenant's.
    let filter = FirehoseFilter { crew: query.crew, tenant: caller.visible_tenant().cloned() };
    let key = state.services.watch_key(&caller);
    let frames = firehose(state.store.clone(), &state.bus, (!from_end).then_some(after), filter);
    Ok(sse(frames, key, state.shutdown.clone()).into_response())
}

/// Query of `GET /v1/runs/{id}/wait`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Seconds to wait at most, 0 to 300 (default 30).
    #[param(nullable = false, minimum = 0, maximum = 300)]
    pub timeout_s: Option<u64>,
}

/// The run once it is terminal or awaiting input, or as it stands when the timeout passes.
///
/// A key that is revoked, expires or loses its tenant while it waits is answered 401 within about
/// a second.
#[utoipa::path(
    get, path = "/runs/{id}/wait", tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), WaitQuery),
    responses(
        (status = 200, body = RunBody),
        (status = 400, description = "Malformed id or timeout", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is unavailable (retry later)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn wait_run(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<WaitQuery>,
) -> ApiResult<Json<RunBody>> {
    let timeout_s = query.timeout_s.unwrap_or(DEFAULT_WAIT_S);
    if timeout_s > MAX_WAIT_S {
        return Err(ApiError::BadRequest(format!("timeout_s must be between 0 and {MAX_WAIT_S}")));
    }
    let id = RunId(id);
    state.services.visible_run(&caller, id).await?;
    // A key that ends while it waits is answered as a key that had ended before (401).
    let mut key = state.services.watch_key(&caller);
    let run = tokio::select! {
        biased;
        _ = key.ended() => return Err(ApiError::Unauthorized),
        run = wait_for_run(&state.store, &state.bus, id, Duration::from_secs(timeout_s)) => run,
    }
    .map_err(crate::service::ServiceError::from)?;
    run.map(|run| Json(run.into())).ok_or_else(|| crate::service::no_run(id).into())
}

/// Where to resume: `Last-Event-ID`, else `?after=`, else the start (each must be 0 or more,
/// whichever is used).
fn resume_point(headers: &HeaderMap, after: Option<i64>) -> ApiResult<i64> {
    if after.is_some_and(|after| after < 0) {
        return Err(ApiError::BadRequest("after must be 0 or more".into()));
    }
    let after = match last_event_id(headers) {
        Some(value) => value
            .parse::<i64>()
            .map_err(|_| ApiError::BadRequest(format!("Last-Event-ID must be an integer, not '{value}'")))?,
        None => after.unwrap_or(0),
    };
    if after < 0 {
        return Err(ApiError::BadRequest("after must be 0 or more".into()));
    }
    Ok(after)
}

/// The `Last-Event-ID` header (an empty one is kept, and refused as not an integer: EventSource
/// never sends one).
fn last_event_id(headers: &HeaderMap) -> Option<&str> {
    headers.get("last-event-id").map(|v| v.to_str().map(str::trim).unwrap_or("(not ASCII)"))
}

/// Does the client ask for SSE (and not for JSON)?
fn wants_event_stream(headers: &HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    accept.contains("text/event-stream") && !accept.contains("application/json")
}

/// A frame stream as server-sent events, with keep-alive comments. At shutdown the stream ends at
/// once with a `retry:` hint, so an EventSource reconnects (to another replica) soon, resuming
/// from its `Last-Event-ID`. When the key it was opened with ends (revoked, expired, its tenant
/// deleted) it ends with a `stream.closed` message saying why, and sends nothing after it.
fn sse(
    frames: FrameStream,
    key: WatchedKey,
    shutdown: CancellationToken,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let events = stream::unfold(Some((frames, key, shutdown)), |state| async move {
        let (mut stream, mut key, shutdown) = state?;
        let frame = tokio::select! {
            // The key first: a frame waiting is not sent once the key has ended.
            biased;
            why = key.ended() => return Some((Ok(stream_closed(why)), None)),
            () = shutdown.cancelled() => {
                let goodbye = SseEvent::default().retry(RECONNECT_AFTER_SHUTDOWN).comment("server shutting down; reconnect");
                return Some((Ok(goodbye), None));
            }
            frame = stream.frames.recv() => frame?,
        };
        if let Some(delta) = &frame.delta {
            let message = SseEvent::default().event(LLM_DELTA).data(delta.as_ref());
            return Some((Ok(message), Some((stream, key, shutdown))));
        }
        let message = SseEvent::default().id(frame.id.to_string());
        let message = match &frame.event {
            Some(envelope) => message.event(envelope.event.event_type.as_str()).data(envelope.json.as_str()),
            // A bare position: EventSource keeps the id and dispatches nothing.
            None => message,
        };
        Some((Ok(message), Some((stream, key, shutdown))))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

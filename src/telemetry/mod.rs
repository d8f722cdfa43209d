//! Traces: OpenTelemetry spans that follow the GenAI semantic conventions, W3C trace context in
//! and out, and the GenAI client metrics, exported over OTLP (HTTP/protobuf) when an endpoint is
//! configured (`OTEL_EXPORTER_OTLP_ENDPOINT`, see [`TraceSettings`]); off otherwise, at the cost
//! of one atomic load per would-be span.
//!
//! Where spans come from:
//! - the worker: a run attempt is `invoke_workflow {crew}`, a child of the context stored with
//!   the run ([`RunTrace`]: the caller's `traceparent`, or a trace of its own), so every attempt
//!   of a run, on any replica, joins one trace. Its span id is derived from the run and the
//!   attempt ([`attempt_span_id`]), as is each task's ([`task_span_id`]): when a replica dies the
//!   recoverer ends the dead attempt's spans in its place ([`interrupted`]), so the spans that
//!   attempt exported keep their parents and the interruption shows;
//! - the engine's process: each task is `invoke_agent {agent}` beneath it;
//! - the effects layer (`engine::effects`, `knowledge::Knowledge::embed_priced`): every model
//!   call is `chat {model}` / `embeddings {model}`, every tool call `execute_tool {tool}`;
//! - the HTTP server's requests and the webhook deliveries.
//!
//! The current span travels with the future that does the work ([`Scope::instrument`]), so an
//! outbound request ([`inject`]) carries its `traceparent` and a log line its ids.

pub mod log;
mod settings;

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use axum::http;
use futures_util::future::Either;
use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{
    FutureExt as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _, WithContext,
};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use sha2::{Digest, Sha256};

use crate::domain::RunId;
pub use crate::domain::RunTrace;
use crate::domain::TenantId;
pub use settings::{Sampler, TraceSettings};

/// The installed tracing, if export is on.
static TRACING: OnceLock<Tracing> = OnceLock::new();

/// What export needs, installed once by the composition root ([`install`]).
pub struct Tracing {
    tracer: SdkTracer,
    provider: SdkTracerProvider,
    meters: SdkMeterProvider,
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    /// Message contents, tool arguments and results go into spans.
    pub capture_content: bool,
    /// Only the latest GenAI conventions (no `gen_ai.system` beside `gen_ai.provider.name`).
    pub latest_only: bool,
}

/// The installed tracing, or `None` when traces are off.
#[inline]
pub fn tracing() -> Option<&'static Tracing> {
    TRACING.get()
}

/// Are traces exported?
#[inline]
pub fn is_on() -> bool {
    TRACING.get().is_some()
}

/// Start exporting as `settings` say (nothing when they name no endpoint). Returns whether
/// export is on. Call once, from the composition root; a second call changes nothing.
pub fn install(settings: &TraceSettings) -> Result<bool, String> {
    let Some(endpoints) = settings.endpoints()? else { return Ok(false) };
    if TRACING.get().is_some() {
        return Ok(true);
    }
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    let headers = settings.headers()?;
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(settings.service_name()).build();
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoints.traces)
        .with_headers(headers.clone())
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("the OTLP span exporter: {e}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_sampler(settings.sampler()?.into_sdk())
        .with_resource(resource.clone())
        .build();
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoints.metrics)
        .with_headers(headers)
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("the OTLP metric exporter: {e}"))?;
    let meters = SdkMeterProvider::builder().with_periodic_exporter(metrics).with_resource(resource).build();
    let meter = meters.meter("agentd");
    let token_usage = meter
        .u64_histogram("gen_ai.client.token.usage")
        .with_unit("{token}")
        .with_description("Number of input and output tokens used")
        .with_boundaries(vec![
            1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
            16777216.0, 67108864.0,
        ])
        .build();
    let duration = meter
        .f64_histogram("gen_ai.client.operation.duration")
        .with_unit("s")
        .with_description("GenAI operation duration")
        .with_boundaries(vec![
            0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
        ])
        .build();
    let tracing = Tracing {
        tracer: provider.tracer("agentd"),
        provider,
        meters,
        token_usage,
        duration,
        capture_content: settings.otel_instrumentation_genai_capture_message_content,
        latest_only: settings.latest_only(),
    };
    Ok(TRACING.set(tracing).is_ok() || TRACING.get().is_some())
}

/// Export what is buffered and stop (at shutdown).
pub fn shutdown() {
    if let Some(tracing) = TRACING.get() {
        if let Err(error) = tracing.provider.shutdown() {
            ::tracing::warn!(%error, "flushing the last spans failed");
        }
        if let Err(error) = tracing.meters.shutdown() {
            ::tracing::warn!(%error, "flushing the last metrics failed");
        }
    }
}

/// A span in progress, as the context it makes current.
#[derive(Clone)]
pub struct Scope {
    cx: Context,
}

impl Scope {
    /// Start `builder` beneath `parent`.
    fn start(tracing: &Tracing, builder: opentelemetry::trace::SpanBuilder, parent: &Context) -> Self {
        let span = tracing.tracer.build_with_context(builder, parent);
        Scope { cx: parent.with_span(span) }
    }

    /// Run `future` with this span current.
    pub fn instrument<F: Future>(&self, future: F) -> WithContext<F> {
        future.with_context(self.cx.clone())
    }

    /// The span's trace id, as hex.
    pub fn trace_id(&self) -> String {
        self.cx.span().span_context().trace_id().to_string()
    }

    pub fn set(&self, key: &'static str, value: impl Into<Value>) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// An event on the span (a retry, a wait).
    pub fn event(&self, name: &'static str, attributes: Vec<KeyValue>) {
        self.cx.span().add_event(name, attributes);
    }

    /// The span failed: `error.type` and an error status with `message`.
    pub fn fail(&self, error_type: &str, message: &str) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
        span.set_status(Status::error(message.to_owned()));
    }

    pub fn end(self) {
        self.cx.span().end();
    }

    pub fn end_at(self, at: SystemTime) {
        self.cx.span().end_with_timestamp(at);
    }
}

/// Run `future` within `scope` when there is one.
pub fn within<F: Future>(scope: Option<&Scope>, future: F) -> Either<WithContext<F>, F> {
    match scope {
        Some(scope) => Either::Left(scope.instrument(future)),
        None => Either::Right(future),
    }
}

/// The trace of a kickoff: beneath the caller's span (its `traceparent`, `tracestate` headers),
/// else beneath the current span (the kickoff request's server span) when traces are on, else
/// none.
pub fn kickoff_trace(headers: &http::HeaderMap) -> Option<RunTrace> {
    let remote = TraceContextPropagator::new().extract_with_context(&Context::new(), &Headers(headers));
    let remote = remote.span().span_context().clone();
    if remote.is_valid() {
        let tracestate = Some(remote.trace_state().header()).filter(|s| !s.is_empty() && s.len() <= 512);
        return Some(RunTrace {
            trace_id: remote.trace_id().to_string(),
            parent_span_id: Some(remote.span_id().to_string()),
            sampled: remote.is_sampled(),
            tracestate,
        });
    }
    let current = Context::current();
    let current = current.span().span_context().clone();
    (is_on() && current.is_valid()).then(|| RunTrace {
        trace_id: current.trace_id().to_string(),
        parent_span_id: Some(current.span_id().to_string()),
        sampled: current.is_sampled(),
        tracestate: None,
    })
}

/// The context a run's span starts in, and the trace id a root span takes.
fn parent_of(trace: &RunTrace) -> (Context, Option<TraceId>) {
    let trace_id = TraceId::from_hex(&trace.trace_id).ok().filter(|id| *id != TraceId::INVALID);
    let parent = trace.parent_span_id.as_deref().and_then(|id| SpanId::from_hex(id).ok());
    match (trace_id, parent) {
        (Some(trace_id), Some(span_id)) if span_id != SpanId::INVALID => {
            let flags = if trace.sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
            let state =
                trace.tracestate.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
            let remote = SpanContext::new(trace_id, span_id, flags, true, state);
            (Context::new().with_remote_span_context(remote), None)
        }
        (trace_id, _) => (Context::new(), trace_id),
    }
}

/// A run attempt, for its span.
pub struct Attempt<'a> {
    pub run_id: uuid::Uuid,
    pub attempt: i32,
    pub crew: &'a str,
    pub tenant: &'a TenantId,
    pub trace: Option<&'a RunTrace>,
}

/// The span id of a run's attempt: derived, so the recoverer can end it for a dead replica.
pub fn attempt_span_id(run_id: RunId, attempt: i32) -> SpanId {
    derived_span_id(&[run_id.0.as_bytes(), b"attempt", &attempt.to_be_bytes()])
}

/// The span id of a task in a run's attempt.
pub fn task_span_id(run_id: RunId, attempt: i32, task: &str) -> SpanId {
    derived_span_id(&[run_id.0.as_bytes(), b"task", &attempt.to_be_bytes(), task.as_bytes()])
}

fn derived_span_id(parts: &[&[u8]]) -> SpanId {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    if bytes == [0; 8] {
        bytes[7] = 1;
    }
    SpanId::from_bytes(bytes)
}

fn attempt_builder(tracing: &Tracing, attempt: &Attempt<'_>) -> (opentelemetry::trace::SpanBuilder, Context) {
    let (parent, trace_id) = attempt.trace.map(parent_of).unwrap_or_else(|| (Context::new(), None));
    let mut builder = tracing
        .tracer
        .span_builder(format!("invoke_workflow {}", attempt.crew))
        .with_kind(SpanKind::Internal)
        .with_span_id(attempt_span_id(RunId(attempt.run_id), attempt.attempt))
        .with_attributes(vec![
            KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
            KeyValue::new("gen_ai.workflow.name", attempt.crew.to_owned()),
            KeyValue::new("agentd.run.id", attempt.run_id.to_string()),
            KeyValue::new("agentd.run.attempt", i64::from(attempt.attempt)),
            KeyValue::new("agentd.tenant", attempt.tenant.to_string()),
        ]);
    if let Some(trace_id) = trace_id {
        builder = builder.with_trace_id(trace_id);
    }
    (builder, parent)
}

/// Start a run attempt's span; `None` when traces are off.
pub fn attempt(attempt: &Attempt<'_>) -> Option<Scope> {
    let tracing = tracing()?;
    let (builder, parent) = attempt_builder(tracing, attempt);
    Some(Scope::start(tracing, builder, &parent))
}

/// A task being done by `agent`, beneath the current attempt.
pub fn task(run_id: RunId, attempt: i32, task: &str, agent: &str) -> Option<Scope> {
    let tracing = tracing()?;
    Some(Scope::start(tracing, task_builder(tracing, run_id.0, attempt, task, agent), &Context::current()))
}

fn task_builder(
    tracing: &Tracing,
    run_id: uuid::Uuid,
    attempt: i32,
    task: &str,
    agent: &str,
) -> opentelemetry::trace::SpanBuilder {
    tracing
        .tracer
        .span_builder(format!("invoke_agent {agent}"))
        .with_kind(SpanKind::Internal)
        .with_span_id(task_span_id(RunId(run_id), attempt, task))
        .with_attributes(vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_owned()),
            KeyValue::new("agentd.task.name", task.to_owned()),
        ])
}

/// The spans a dead replica left open: the attempt (started `started`) and the task it was
/// doing (its name, agent and start), ended as interrupted at `ended` (when the recovery began:
/// before the run was requeued, so before the next attempt starts).
pub struct Interrupted<'a> {
    pub attempt: Attempt<'a>,
    pub started: SystemTime,
    pub task: Option<(&'a str, &'a str, SystemTime)>,
    pub ended: SystemTime,
}

/// End the spans of `dead` in its place (the recoverer, on any replica).
pub fn interrupted(dead: &Interrupted<'_>) {
    let Some(tracing) = tracing() else { return };
    let (builder, parent) = attempt_builder(tracing, &dead.attempt);
    let scope = Scope::start(tracing, builder.with_start_time(dead.started), &parent);
    let message = "the replica running this attempt stopped (its lease expired)";
    if let Some((task, agent, started)) = dead.task {
        let builder = task_builder(tracing, dead.attempt.run_id, dead.attempt.attempt, task, agent)
            .with_start_time(started);
        let task = Scope::start(tracing, builder, &scope.cx);
        task.fail("interrupted", message);
        task.end_at(dead.ended);
    }
    scope.set("agentd.run.status", "interrupted");
    scope.fail("interrupted", message);
    scope.end_at(dead.ended);
}

/// What a model call's span says before the call.
pub struct ModelCall<'a> {
    /// `chat` or `embeddings`.
    pub operation: &'static str,
    /// The provider's kind in the conventions' words (`openai`, `anthropic`, `azure.ai.openai`).
    pub provider: &'a str,
    pub model: &'a str,
    /// Why agentd asks (`turn`, `guardrail`, `planner`, `summarizer`, `memory`, `embedding`).
    pub purpose: &'a str,
    pub task: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// Start a model call's span beneath the current one.
pub fn model_call(call: &ModelCall<'_>) -> Option<Scope> {
    let tracing = tracing()?;
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", call.operation),
        KeyValue::new("gen_ai.provider.name", call.provider.to_owned()),
        KeyValue::new("gen_ai.request.model", call.model.to_owned()),
        KeyValue::new("agentd.call.purpose", call.purpose.to_owned()),
    ];
    if !tracing.latest_only {
        attributes.push(KeyValue::new("gen_ai.system", call.provider.to_owned()));
    }
    if let Some(agent) = call.agent {
        attributes.push(KeyValue::new("gen_ai.agent.name", agent.to_owned()));
    }
    if let Some(task) = call.task {
        attributes.push(KeyValue::new("agentd.task.name", task.to_owned()));
    }
    if let Some(temperature) = call.temperature {
        attributes.push(KeyValue::new("gen_ai.request.temperature", temperature));
    }
    if let Some(max_tokens) = call.max_tokens {
        attributes.push(KeyValue::new("gen_ai.request.max_tokens", i64::from(max_tokens)));
    }
    let builder = tracing
        .tracer
        .span_builder(format!("{} {}", call.operation, call.model))
        .with_kind(SpanKind::Client)
        .with_attributes(attributes);
    Some(Scope::start(tracing, builder, &Context::current()))
}

/// What a model call answered, for its span and the GenAI metrics.
pub struct ModelReply<'a> {
    pub response_model: Option<&'a str>,
    pub response_id: Option<&'a str>,
    pub finish_reason: Option<&'a str>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
}

/// End a model call's span with its reply (or its error: `error` is `(type, message)`), and
/// record the GenAI metrics.
pub fn end_model_call(
    scope: Scope,
    call: &ModelCall<'_>,
    reply: Result<&ModelReply<'_>, (&str, &str)>,
    elapsed: Duration,
) {
    let Some(tracing) = tracing() else { return };
    let mut metric = vec![
        KeyValue::new("gen_ai.operation.name", call.operation),
        KeyValue::new("gen_ai.provider.name", call.provider.to_owned()),
        KeyValue::new("gen_ai.request.model", call.model.to_owned()),
    ];
    match reply {
        Ok(reply) => {
            if let Some(model) = reply.response_model {
                scope.set("gen_ai.response.model", model.to_owned());
                metric.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
            }
            if let Some(id) = reply.response_id {
                scope.set("gen_ai.response.id", id.to_owned());
            }
            if let Some(reason) = reply.finish_reason {
                let reasons = Value::Array(opentelemetry::Array::String(vec![reason.to_owned().into()]));
                scope.set("gen_ai.response.finish_reasons", reasons);
            }
            scope.set("gen_ai.usage.input_tokens", reply.input_tokens as i64);
            scope.set("gen_ai.usage.output_tokens", reply.output_tokens as i64);
            if reply.cached_tokens > 0 {
                scope.set("gen_ai.usage.cache_read.input_tokens", reply.cached_tokens as i64);
            }
            let mut input = metric.clone();
            input.push(KeyValue::new("gen_ai.token.type", "input"));
            tracing.token_usage.record(reply.input_tokens, &input);
            if call.operation == "chat" {
                let mut output = metric.clone();
                output.push(KeyValue::new("gen_ai.token.type", "output"));
                tracing.token_usage.record(reply.output_tokens, &output);
            }
        }
        Err((error_type, message)) => {
            scope.fail(error_type, message);
            metric.push(KeyValue::new("error.type", error_type.to_owned()));
        }
    }
    tracing.duration.record(elapsed.as_secs_f64(), &metric);
    scope.end();
}

/// What a tool call's span says.
pub struct ToolCall<'a> {
    pub name: &'a str,
    pub call_id: &'a str,
    pub description: &'a str,
    /// `builtin`, `http`, `mcp` or `delegation`.
    pub kind: &'a str,
    /// The MCP server, for an MCP tool, and the method the call sends (`tools/call`,
    /// `tools/list`).
    pub mcp_server: Option<(&'a str, &'a str)>,
}

/// Start a tool call's span beneath the current one.
pub fn tool_call(call: &ToolCall<'_>) -> Option<Scope> {
    let tracing = tracing()?;
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", call.name.to_owned()),
        KeyValue::new("gen_ai.tool.call.id", call.call_id.to_owned()),
        KeyValue::new("gen_ai.tool.type", if call.kind == "mcp" { "extension" } else { "function" }),
        KeyValue::new("agentd.tool.kind", call.kind.to_owned()),
    ];
    if !call.description.is_empty() {
        attributes.push(KeyValue::new("gen_ai.tool.description", call.description.to_owned()));
    }
    if let Some((server, method)) = call.mcp_server {
        // The MCP conventions' client span attributes.
        attributes.push(KeyValue::new("mcp.method.name", method.to_owned()));
        attributes.push(KeyValue::new("agentd.mcp.server", server.to_owned()));
    }
    let builder = tracing
        .tracer
        .span_builder(format!("execute_tool {}", call.name))
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes);
    Some(Scope::start(tracing, builder, &Context::current()))
}

/// An event on the current span (a retry, a wait), when traces are on.
pub fn note(name: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) {
    if is_on() {
        Context::current().span().add_event(name, attributes());
    }
}

/// The longest content attribute, in bytes: a long conversation's messages are cut here (with
/// `…`), so that a span stays well under what collectors take in one export request.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Content (a message list, arguments, a result) for an attribute, when the operator opted in;
/// cut to [`MAX_CONTENT_BYTES`].
pub fn capture(scope: &Scope, key: &'static str, content: impl FnOnce() -> String) {
    if tracing().is_some_and(|t| t.capture_content) {
        scope.set(key, crate::domain::memory::cut(&content(), MAX_CONTENT_BYTES));
    }
}

/// An HTTP request the server received, as a server span beneath the caller's context.
pub fn server_request(method: &str, route: &str, path: &str, headers: &http::HeaderMap) -> Option<Scope> {
    let tracing = tracing()?;
    let parent = TraceContextPropagator::new().extract_with_context(&Context::new(), &Headers(headers));
    let builder =
        tracing.tracer.span_builder(format!("{method} {route}")).with_kind(SpanKind::Server).with_attributes(
            vec![
                KeyValue::new("http.request.method", method.to_owned()),
                KeyValue::new("http.route", route.to_owned()),
                KeyValue::new("url.path", path.to_owned()),
            ],
        );
    Some(Scope::start(tracing, builder, &parent))
}

/// A webhook delivery attempt, beneath the run's trace (when it is of a run).
pub fn webhook_delivery(trace: Option<&RunTrace>, event: &str, url: &url::Url) -> Option<Scope> {
    let tracing = tracing()?;
    let (parent, trace_id) = trace.map(parent_of).unwrap_or_else(|| (Context::new(), None));
    let mut builder = tracing
        .tracer
        .span_builder(format!("POST webhook {event}"))
        .with_kind(SpanKind::Client)
        .with_attributes(vec![
            KeyValue::new("http.request.method", "POST"),
            KeyValue::new("server.address", url.host_str().unwrap_or_default().to_owned()),
            KeyValue::new("agentd.webhook.event", event.to_owned()),
        ]);
    if let Some(trace_id) = trace_id {
        builder = builder.with_trace_id(trace_id);
    }
    Some(Scope::start(tracing, builder, &parent))
}

/// The current span's `traceparent` (and `tracestate`) on an outbound request.
pub fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    if !is_on() {
        return request;
    }
    let mut headers = http::HeaderMap::new();
    TraceContextPropagator::new().inject_context(&Context::current(), &mut HeadersMut(&mut headers));
    if headers.is_empty() {
        request
    } else {
        request.headers(headers)
    }
}

/// The current span's trace and span ids (hex), for a log line.
pub fn current_ids() -> Option<(String, String)> {
    if !is_on() {
        return None;
    }
    let cx = Context::current();
    let span = cx.span();
    let context = span.span_context();
    context.is_valid().then(|| (context.trace_id().to_string(), context.span_id().to_string()))
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut http::HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(key.as_bytes()), http::HeaderValue::from_str(&value))
        {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_span_ids_differ_by_attempt_and_task_and_are_stable() {
        let run = uuid::Uuid::from_u128(7);
        assert_eq!(attempt_span_id(RunId(run), 1), attempt_span_id(RunId(run), 1));
        assert_ne!(attempt_span_id(RunId(run), 1), attempt_span_id(RunId(run), 2));
        assert_ne!(task_span_id(RunId(run), 1, "a"), task_span_id(RunId(run), 1, "b"));
        assert_ne!(task_span_id(RunId(run), 1, "a"), task_span_id(RunId(run), 2, "a"));
        assert_ne!(attempt_span_id(RunId(run), 1), SpanId::INVALID);
    }

    #[test]
    fn a_kickoff_traceparent_is_kept_and_a_bad_one_ignored() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap(),
        );
        headers.insert("tracestate", "vendor=abc".parse().unwrap());
        let trace = kickoff_trace(&headers).expect("a trace");
        assert_eq!(trace.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
        assert!(trace.sampled);
        assert_eq!(trace.tracestate.as_deref(), Some("vendor=abc"));
        let (cx, root) = parent_of(&trace);
        assert!(root.is_none());
        assert_eq!(cx.span().span_context().span_id().to_string(), "00f067aa0ba902b7");
        let mut bad = http::HeaderMap::new();
        bad.insert("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01".parse().unwrap());
        assert_eq!(kickoff_trace(&bad), None, "traces are off in unit tests and the header is invalid");
    }
}

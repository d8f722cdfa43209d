//! The settings model: every setting of `agentd serve`, its default, and how the layers combine.
//!
//! Settings are loaded in layers, each over the one before: the defaults written here
//! ([`Settings::default`]) → the TOML file named by `--config` / `AGENTD_CONFIG` (any setting, and
//! `[providers.*]`) → the environment (`AGENTD_<KEY>`, and `DATABASE_URL`) → command-line flags
//! (`--<key>`). The layering is [figment]'s: it keeps where every value came from, which a bad
//! value's message and `agentd config` report. figment rather than the `config` crate because its
//! values carry that provenance through serde extraction, and a provider for our own flags is a
//! dozen lines.
//!
//! [`SETTINGS`] names every setting once: its key (the file's key, `--key-with-dashes`,
//! `AGENTD_KEY`), what it means, its bounds and whether it is secret. The flags and `--help`, the
//! reference table in docs/configuration.md and `agentd.example.toml` are generated from that
//! table and the defaults; a test fails when the committed ones are stale ([`reference`]).
//!
//! Plain data: the parts' own settings types (keys, egress policies, providers, limits) are built
//! from these by [`crate::config`].

pub mod reference;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::{Deserialize, Serialize};

use crate::domain::{CrewLimits, RunLimits};
use crate::llm::Price;

/// The model agents use when they name none.
pub const DEFAULT_MODEL: &str = "openai/gpt-4o-mini";
/// The delays between a webhook delivery's attempts.
pub const WEBHOOK_RETRY_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,10h";

/// Every setting of `agentd serve`, as the layers give them. See [`SETTINGS`] for what each means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub database_url: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub postgres_bin: Option<PathBuf>,
    pub fake_llm: bool,
    pub bind: SocketAddr,
    pub allowed_origins: String,
    pub api_keys: Option<String>,
    pub default_model: String,
    pub max_connections: Option<u64>,
    pub header_timeout_s: u64,
    pub idle_timeout_s: u64,
    pub body_timeout_s: u64,
    pub db_max_connections: u32,
    pub shutdown_grace_s: u64,
    pub role: Role,
    pub workers: u32,
    pub lease_s: u64,
    pub quarantine_after_deaths: u32,
    pub latency_budget: bool,
    pub run_timeout_s: u64,
    pub llm_timeout_s: u64,
    pub llm_max_attempts: u32,
    pub allow_private_tool_hosts: String,
    pub tool_timeout_s: u64,
    pub tool_max_response_bytes: u64,
    pub max_document_bytes: u64,
    pub extract_max_memory_mib: u64,
    pub extract_timeout_s: u64,
    pub max_agents: u32,
    pub max_tasks: u32,
    pub max_tools: u32,
    pub max_reply_bytes: u64,
    pub max_task_output_bytes: u64,
    pub max_run_journal_bytes: u64,
    pub thread_history_bytes: u64,
    pub schedule_poll_ms: u64,
    pub schedule_misfire_grace_s: u64,
    pub retention_days: u32,
    pub secrets_key: Option<String>,
    pub webhook_secret: Option<String>,
    pub allow_private_webhook_hosts: String,
    pub webhook_retry_schedule: String,
    pub webhook_rotation_grace_s: u64,
    pub log_format: LogFormat,
    pub otel_exporter_otlp_endpoint: Option<String>,
    pub otel_exporter_otlp_traces_endpoint: Option<String>,
    pub otel_exporter_otlp_metrics_endpoint: Option<String>,
    pub otel_exporter_otlp_protocol: String,
    pub otel_exporter_otlp_headers: Option<String>,
    pub otel_service_name: String,
    pub otel_traces_sampler: String,
    pub otel_traces_sampler_arg: Option<String>,
    pub otel_instrumentation_genai_capture_message_content: bool,
    pub otel_semconv_stability_opt_in: String,
    /// LLM providers by name (the file only).
    pub providers: BTreeMap<String, ProviderSettings>,
    /// The settings file's directory: a fake provider's relative script path starts there.
    #[serde(skip)]
    pub dir: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        let (crew, run) = (CrewLimits::default(), RunLimits::default());
        Self {
            database_url: None,
            data_dir: None,
            postgres_bin: None,
            fake_llm: false,
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            allowed_origins: String::new(),
            api_keys: None,
            default_model: DEFAULT_MODEL.into(),
            max_connections: None,
            header_timeout_s: 10,
            idle_timeout_s: 75,
            body_timeout_s: 30,
            db_max_connections: 16,
            shutdown_grace_s: 30,
            role: Role::All,
            workers: 64,
            lease_s: 30,
            quarantine_after_deaths: 2,
            latency_budget: false,
            run_timeout_s: 3600,
            llm_timeout_s: 120,
            llm_max_attempts: 4,
            allow_private_tool_hosts: String::new(),
            tool_timeout_s: 30,
            tool_max_response_bytes: 64 * 1024,
            max_document_bytes: 10 * 1024 * 1024,
            extract_max_memory_mib: 1024,
            extract_timeout_s: 60,
            max_agents: crew.max_agents as u32,
            max_tasks: crew.max_tasks as u32,
            max_tools: crew.max_tools as u32,
            max_reply_bytes: run.max_reply_bytes as u64,
            max_task_output_bytes: run.max_task_output_bytes as u64,
            max_run_journal_bytes: run.max_journal_bytes,
            thread_history_bytes: 32 * 1024,
            schedule_poll_ms: 1000,
            schedule_misfire_grace_s: 60,
            retention_days: 0,
            secrets_key: None,
            webhook_secret: None,
            allow_private_webhook_hosts: String::new(),
            webhook_retry_schedule: WEBHOOK_RETRY_SCHEDULE.into(),
            webhook_rotation_grace_s: 86_400,
            log_format: LogFormat::Text,
            otel_exporter_otlp_endpoint: None,
            otel_exporter_otlp_traces_endpoint: None,
            otel_exporter_otlp_metrics_endpoint: None,
            otel_exporter_otlp_protocol: "http/protobuf".into(),
            otel_exporter_otlp_headers: None,
            otel_service_name: "agentd".into(),
            otel_traces_sampler: "parentbased_always_on".into(),
            otel_traces_sampler_arg: None,
            otel_instrumentation_genai_capture_message_content: false,
            otel_semconv_stability_opt_in: String::new(),
            providers: BTreeMap::new(),
            dir: None,
        }
    }
}

/// How log lines are written (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, with `trace_id` and `span_id` when traces are on.
    Json,
}

impl Settings {
    /// The time limit of runs that set none (`run_timeout_s`; 0: none).
    pub fn run_timeout(&self) -> Option<std::time::Duration> {
        (self.run_timeout_s > 0).then(|| std::time::Duration::from_secs(self.run_timeout_s))
    }

    /// The trace settings (`otel_*`).
    pub fn traces(&self) -> crate::telemetry::TraceSettings {
        crate::telemetry::TraceSettings {
            otel_exporter_otlp_endpoint: self.otel_exporter_otlp_endpoint.clone(),
            otel_exporter_otlp_traces_endpoint: self.otel_exporter_otlp_traces_endpoint.clone(),
            otel_exporter_otlp_metrics_endpoint: self.otel_exporter_otlp_metrics_endpoint.clone(),
            otel_exporter_otlp_protocol: self.otel_exporter_otlp_protocol.clone(),
            otel_exporter_otlp_headers: self.otel_exporter_otlp_headers.clone(),
            otel_service_name: self.otel_service_name.clone(),
            otel_traces_sampler: self.otel_traces_sampler.clone(),
            otel_traces_sampler_arg: self.otel_traces_sampler_arg.clone(),
            otel_instrumentation_genai_capture_message_content: self
                .otel_instrumentation_genai_capture_message_content,
            otel_semconv_stability_opt_in: self.otel_semconv_stability_opt_in.clone(),
        }
    }
}

/// What a replica does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Only the HTTP API.
    Api,
    /// Only the worker pool.
    Worker,
    /// Both.
    #[default]
    All,
}

impl Role {
    pub fn serves_api(self) -> bool {
        matches!(self, Role::Api | Role::All)
    }

    pub fn runs_workers(self) -> bool {
        matches!(self, Role::Worker | Role::All)
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "api" => Ok(Role::Api),
            "worker" => Ok(Role::Worker),
            "all" => Ok(Role::All),
            other => Err(format!("unknown role '{other}': use api, worker or all")),
        }
    }
}

/// A provider in the settings file (`[providers.<name>]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai` (the default), `azure`, `anthropic`, `fake` or `local`.
    #[serde(default)]
    pub kind: ProviderKindSetting,
    /// The API's base URL (`openai`: required; `azure`: the resource's endpoint, required;
    /// `anthropic`: default `https://api.anthropic.com`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The `api-version` of an `azure` provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The `max_tokens` of an `anthropic` provider's calls that set none (default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Mark an `anthropic` provider's system prompts and tools cacheable.
    #[serde(default)]
    pub prompt_caching: bool,
    /// Ask the provider to enforce output schemas (default true).
    #[serde(default = "yes")]
    pub structured_outputs: bool,
    /// Prices by model: `[providers.<name>.prices."<model>"]` with `input`, `output` and
    /// optionally `cached_input`, in US dollars per million tokens.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
    /// The script a `fake` provider answers from (relative to the settings file's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    /// Where a `fake` provider listens (default: a free loopback port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<SocketAddr>,
    /// The folder of a `local` provider's embedding models, one folder each (relative to the
    /// settings file's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models_dir: Option<PathBuf>,
    /// The environment variable that holds the key (the key itself never goes in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u32>,
    #[serde(default = "yes")]
    pub native_tools: bool,
}

fn yes() -> bool {
    true
}

/// A provider's `kind`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKindSetting {
    #[default]
    OpenAi,
    Azure,
    Anthropic,
    Fake,
    Local,
}

/// One setting: its key and what it means. The flag and the environment variable follow from the
/// key (see [`Setting::flag`], [`Setting::env`]).
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The key in the settings file and in [`Settings`].
    pub key: &'static str,
    /// What it does, for `--help` and the reference.
    pub help: &'static str,
    /// Bounds of a number, inclusive.
    pub range: Option<(u64, u64)>,
    /// Its value is never shown (`agentd config` redacts it).
    pub secret: bool,
    /// A switch: the flag takes no value.
    pub switch: bool,
    /// What it means when it is not set (for settings without a default value).
    pub unset: &'static str,
}

impl Setting {
    const fn new(key: &'static str, help: &'static str) -> Self {
        Self { key, help, range: None, secret: false, switch: false, unset: "" }
    }

    const fn range(self, min: u64, max: u64) -> Self {
        Self { range: Some((min, max)), ..self }
    }

    const fn secret(self) -> Self {
        Self { secret: true, ..self }
    }

    const fn switch(self) -> Self {
        Self { switch: true, ..self }
    }

    const fn unset(self, meaning: &'static str) -> Self {
        Self { unset: meaning, ..self }
    }

    /// Its environment variable: `AGENTD_<KEY>` (`DATABASE_URL` for the database, and the
    /// OpenTelemetry's standard `OTEL_*` for the `otel_*` keys).
    pub fn env(&self) -> String {
        match self.key {
            "database_url" => "DATABASE_URL".to_owned(),
            key if key.starts_with("otel_") => key.to_ascii_uppercase(),
            key => format!("AGENTD_{}", key.to_ascii_uppercase()),
        }
    }

    /// Its command-line flag, without the dashes in front: the key with `-` for `_`.
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }

    /// The setting of this key.
    pub fn find(key: &str) -> Option<&'static Setting> {
        SETTINGS.iter().find(|s| s.key == key)
    }
}

/// Every setting, in the order `--help` and the reference show them.
pub const SETTINGS: &[Setting] = &[
    Setting::new("database_url", "PostgreSQL connection URL")
        .secret()
        .unset("a private PostgreSQL cluster under data_dir"),
    Setting::new("data_dir", "Where agentd keeps its private PostgreSQL cluster when database_url is not set")
        .unset("~/.local/share/agentd (as root: /var/lib/agentd)"),
    Setting::new("postgres_bin", "The directory of PostgreSQL's initdb and pg_ctl, for the private cluster")
        .unset("on PATH, else the newest /usr/lib/postgresql/*/bin"),
    Setting::new(
        "fake_llm",
        "Serve the default provider (`openai`) from agentd's built-in FAKE model: it calls an offered tool once, \
         passes plans and guardrails, and answers with text that says it is a fake; no key, nothing leaves the \
         machine. For trying agentd out; never a real LLM",
    )
    .switch(),
    Setting::new("bind", "Address the API listens on"),
    Setting::new(
        "allowed_origins",
        "Comma-separated origins (scheme://host[:port]) browsers may call /mcp, /a2a and the AG-UI endpoint \
         from, or `*` for any; a request whose Origin header is another gets 403 (DNS-rebinding defence). \
         Requests without Origin (clients that are not browsers) are not affected",
    )
    .unset("the bind's own: http(s)://localhost, 127.0.0.1 and [::1] at its port (on loopback or 0.0.0.0), or its address"),
    Setting::new(
        "api_keys",
        "Comma-separated bearer keys for /v1/*, each an admin key of the default tenant; with none (and no key \
         stored with agentd keys create or POST /v1/keys) the API is open (the log says so)",
    )
    .secret()
    .unset("none: the API is open unless keys are stored"),
    Setting::new("default_model", "The model (`<provider>/<model>`) of agents that name none"),
    Setting::new(
        "max_connections",
        "HTTP connections served at once; past it a few spares answer only /healthz and /readyz (anything else: \
         503), further ones are closed",
    )
    .range(1, 10_000_000)
    .unset("the open-file limit less 288 and the database pool"),
    Setting::new("header_timeout_s", "Seconds a request's headers may take to arrive, from their first byte")
        .range(1, 3600),
    Setting::new("idle_timeout_s", "Seconds a kept-alive connection may wait for its next request").range(1, 3600),
    Setting::new("body_timeout_s", "Seconds a request body may take to arrive (a slower sender gets 408)")
        .range(1, 3600),
    Setting::new(
        "db_max_connections",
        "Database connections of this replica; a request waits at most 2 s for one, then gets 503",
    )
    .range(1, 1000),
    Setting::new("shutdown_grace_s", "Seconds in-flight requests and runs get to finish after SIGTERM")
        .range(0, 86_400),
    Setting::new("role", "What this replica does: api (HTTP only), worker (runs only) or all"),
    Setting::new("workers", "Runs in flight at once on this replica").range(1, 10_000),
    Setting::new(
        "lease_s",
        "Seconds a worker's claim on a run lasts without a heartbeat (a crashed replica's runs resume after this)",
    )
    .range(1, 3600),
    Setting::new(
        "quarantine_after_deaths",
        "Times the replica working on a run or a document may die (its lease expire) before the item is failed as quarantined instead of handed to another replica",
    )
    .range(1, 100),
    Setting::new(
        "latency_budget",
        "Measure where each run's time goes between its kickoff and the answer of its `/wait` (the stages of \
         docs/performance.md's latency budget), shown in `/metrics` as `agentd_latency_budget_*`. For benchmarks: \
         it takes a lock at each stage",
    )
    .switch(),
    Setting::new("run_timeout_s", "Time limit of a run in seconds when its kickoff sets none (0: none)")
        .range(0, 31_536_000),
    Setting::new("llm_timeout_s", "Seconds one LLM request may take").range(1, 3600),
    Setting::new(
        "llm_max_attempts",
        "Attempts per LLM call; transient failures (connection, timeout, 408, 409, 429, 5xx) are retried",
    )
    .range(1, 20),
    Setting::new(
        "allow_private_tool_hosts",
        "Comma-separated hosts or CIDRs tools may reach despite the private-address guard",
    )
    .unset("none"),
    Setting::new(
        "tool_timeout_s",
        "Seconds one http_request tool call may take (crew HTTP tools set their own timeout_ms)",
    )
    .range(1, 3600),
    Setting::new("tool_max_response_bytes", "Longest tool response handed to a model, in bytes (also the largest document fetched by URL into a knowledge base)")
        .range(256, 16_777_216),
    Setting::new("max_document_bytes", "Largest document uploaded to a knowledge base (multipart), in bytes (more: 413)")
        .range(1024, 268_435_456),
    Setting::new(
        "extract_max_memory_mib",
        "Memory (address space) of the child process that reads one uploaded or fetched document, in MiB (more: the document fails)",
    )
    .range(64, 65_536),
    Setting::new(
        "extract_timeout_s",
        "Seconds the child process reading one document may take (more: it is killed and the document fails)",
    )
    .range(1, 3600),
    Setting::new("max_agents", "Agents a crew may have (more: 422 at kickoff)").range(1, 100_000),
    Setting::new("max_tasks", "Tasks a crew may have (more: 422 at kickoff)").range(1, 100_000),
    Setting::new("max_tools", "Tools a crew may declare, and an agent or a task may name (more: 422 at kickoff)")
        .range(1, 100_000),
    Setting::new("max_reply_bytes", "Bytes of one model reply (more: the run fails with error.kind \"limit\")")
        .range(1024, 1_073_741_824),
    Setting::new(
        "max_task_output_bytes",
        "Bytes of one task's output, handed on as context (more: the run fails with error.kind \"limit\")",
    )
    .range(1024, 1_073_741_824),
    Setting::new(
        "max_run_journal_bytes",
        "Bytes of text one run may journal in all: messages, tool calls and results, outputs (more: the run \
         fails with error.kind \"limit\")",
    )
    .range(65_536, 1_099_511_627_776),
    Setting::new(
        "thread_history_bytes",
        "Bytes of a thread's history (its earlier runs' inputs and outputs) a run of the thread sees in its \
         first task's context; the oldest runs are left out first",
    )
    .range(1024, 16_777_216),
    Setting::new(
        "schedule_poll_ms",
        "How often each replica with workers looks for schedules whose next tick is due, in milliseconds",
    )
    .range(50, 60_000),
    Setting::new(
        "schedule_misfire_grace_s",
        "How late a schedule's tick may be handled and still run (later: missed, or run once under catch_up \
         \"latest\")",
    )
    .range(1, 604_800),
    Setting::new(
        "retention_days",
        "Days finished runs are kept before a background pruner removes them with their journals (0: for ever)",
    )
    .range(0, 36_500),
    Setting::new(
        "secrets_key",
        "The key stored secrets are sealed with (AES-256-GCM): 32 bytes as base64 or 64 hex digits, e.g. \
         `openssl rand -base64 32`. Without it the secrets routes answer 501 and crews that reference secrets \
         are refused",
    )
    .secret()
    .unset("none: secrets cannot be used"),
    Setting::new(
        "webhook_secret",
        "The webhook signing secret, `whsec_` + base64 of 24 to 64 bytes: signs webhooks; registered endpoints' \
         secrets derive from it, so every replica needs the same. Without it the webhook routes answer 501",
    )
    .secret()
    .unset("none: webhooks cannot be used"),
    Setting::new(
        "allow_private_webhook_hosts",
        "Comma-separated hosts or CIDRs webhooks may be sent to despite the private-address guard",
    )
    .unset("none"),
    Setting::new(
        "webhook_retry_schedule",
        "Delays between a webhook delivery's attempts (ms, s, m, h); when they are used up the delivery has \
         failed and its endpoint is disabled",
    ),
    Setting::new("webhook_rotation_grace_s", "Seconds a rotated-out webhook secret keeps signing alongside the new one")
        .range(0, 2_592_000),
    Setting::new(
        "log_format",
        "Log lines on stderr: text, or json (one object per line, with trace_id and span_id when traces are on)",
    ),
    Setting::new(
        "otel_exporter_otlp_endpoint",
        "OpenTelemetry: the OTLP/HTTP endpoint traces and GenAI metrics are exported to (`/v1/traces`, \
         `/v1/metrics` appended), e.g. http://localhost:4318. Batching, queue and timeouts follow the SDK's \
         OTEL_BSP_* variables; the resource, OTEL_RESOURCE_ATTRIBUTES",
    )
    .unset("none: traces are off"),
    Setting::new("otel_exporter_otlp_traces_endpoint", "OpenTelemetry: the traces endpoint, taken as it is")
        .unset("the endpoint + /v1/traces"),
    Setting::new("otel_exporter_otlp_metrics_endpoint", "OpenTelemetry: the metrics endpoint, taken as it is")
        .unset("the endpoint + /v1/metrics"),
    Setting::new("otel_exporter_otlp_protocol", "OpenTelemetry: the OTLP protocol; agentd speaks http/protobuf"),
    Setting::new(
        "otel_exporter_otlp_headers",
        "OpenTelemetry: headers of every export request, `key=value` pairs separated by commas (an API key, say)",
    )
    .secret()
    .unset("none"),
    Setting::new("otel_service_name", "OpenTelemetry: the service.name of agentd's spans and metrics"),
    Setting::new(
        "otel_traces_sampler",
        "OpenTelemetry: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or \
         parentbased_traceidratio (a kickoff's traceparent decides for the parentbased ones)",
    ),
    Setting::new("otel_traces_sampler_arg", "OpenTelemetry: the ratio of the traceidratio samplers (0 to 1)")
        .unset("1.0"),
    Setting::new(
        "otel_instrumentation_genai_capture_message_content",
        "OpenTelemetry: put message contents, tool arguments and tool results in spans (gen_ai.input.messages, \
         gen_ai.output.messages, gen_ai.tool.call.arguments, gen_ai.tool.call.result); secret values that tools \
         used are already replaced by [secret:<name>]",
    )
    .switch(),
    Setting::new(
        "otel_semconv_stability_opt_in",
        "OpenTelemetry: with gen_ai_latest_experimental, spans carry only the latest GenAI conventions' \
         attributes (no gen_ai.system beside gen_ai.provider.name)",
    )
    .unset("none: both names"),
];

/// Where the layers above the defaults come from.
pub struct Sources<'a> {
    /// The settings file, if one is named.
    pub file: Option<&'a Path>,
    /// Reads an environment variable.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Settings given on the command line: `(key, value)`, values as typed.
    pub flags: Vec<(String, String)>,
}

/// A value that cannot be used, with where it came from.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read the settings file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}

/// The settings with the layers they came from.
pub struct Loaded {
    pub settings: Settings,
    figment: Figment,
}

impl fmt::Debug for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loaded").field("settings", &"..").finish()
    }
}

/// The name of the defaults layer.
const DEFAULTS: &str = "default";
const ENVIRONMENT: &str = "environment";
const COMMAND_LINE: &str = "command line";

impl Settings {
    /// Load the layers: defaults, file, environment, flags. A bad value is an error naming its key,
    /// the layer it came from and what is expected.
    pub fn load(sources: &Sources<'_>) -> Result<Loaded, SettingsError> {
        let mut figment = Figment::from(Layer::defaults());
        if let Some(path) = sources.file {
            // Read first, so that a missing file is an error rather than an empty layer.
            std::fs::metadata(path)
                .map_err(|source| SettingsError::Read { path: path.display().to_string(), source })?;
            figment = figment.merge(Toml::file_exact(path));
        }
        let env: Vec<(String, String)> = SETTINGS
            .iter()
            .filter_map(|s| (sources.env)(&s.env()).map(|value| (s.key.to_owned(), value)))
            // An empty variable is an unset one (as `VAR=` in a compose file means).
            .filter(|(_, value)| !value.trim().is_empty())
            .collect();
        figment = figment
            .merge(Layer::strings(ENVIRONMENT, env))
            .merge(Layer::strings(COMMAND_LINE, sources.flags.clone()));
        let loaded = Loaded { settings: Settings::default(), figment };
        loaded.check_ranges()?;
        let mut settings: Settings = loaded.figment.extract_lossy().map_err(|e| loaded.explain(e))?;
        settings.dir = sources.file.and_then(Path::parent).map(Path::to_path_buf);
        Ok(Loaded { settings, ..loaded })
    }
}

impl Loaded {
    /// Where the value of `key` came from, e.g. `environment (AGENTD_WORKERS)`.
    pub fn source_of(&self, key: &str) -> String {
        match self.figment.find_metadata(key) {
            Some(metadata) => describe(metadata, key),
            None => DEFAULTS.to_owned(),
        }
    }

    /// A message about `key`'s value: the key, its source and `problem`.
    pub fn invalid(&self, key: &str, problem: impl fmt::Display) -> SettingsError {
        SettingsError::Invalid(format!("setting {key} (from {}): {problem}", self.source_of(key)))
    }

    /// Numbers out of their bounds, checked before extraction so that the message names the source.
    fn check_ranges(&self) -> Result<(), SettingsError> {
        for setting in SETTINGS {
            let Some((min, max)) = setting.range else { continue };
            let Ok(value) = self.figment.find_value(setting.key) else { continue };
            // Not a number: extraction says what is wrong with it.
            let expected = format!("expected a whole number from {min} to {max}");
            let Some(number) = value.to_num_lossy() else {
                // Unset (or not a string either: extraction says what is wrong with it).
                let Some(text) = value.as_str() else { continue };
                return Err(self.invalid(setting.key, format!("{expected}, found \"{text}\"")));
            };
            let negative = number.to_i128().is_some_and(|n| n < 0);
            let (Some(number), false) = (number.to_u128_lossy(), negative) else {
                return Err(self.invalid(setting.key, expected));
            };
            if number < u128::from(min) || number > u128::from(max) {
                return Err(self.invalid(setting.key, format!("{number} is out of range: {expected}")));
            }
        }
        Ok(())
    }

    /// figment's error, with every failing key's source.
    fn explain(&self, error: figment::Error) -> SettingsError {
        let messages: Vec<String> = error
            .into_iter()
            .map(|e| {
                let key = e.path.join(".");
                let source = match &e.metadata {
                    Some(metadata) if !key.is_empty() => describe(metadata, &key),
                    Some(metadata) => metadata.name.to_string(),
                    None => DEFAULTS.to_owned(),
                };
                match key.is_empty() {
                    true => format!("settings (from {source}): {}", e.kind),
                    false => format!("setting {key} (from {source}): {}", e.kind),
                }
            })
            .collect();
        SettingsError::Invalid(messages.join("; "))
    }
}

/// The `AGENTD_*` variables among `names` that name no setting (probably misspelt).
pub fn unknown_variables(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let known: Vec<String> = SETTINGS.iter().map(Setting::env).collect();
    let mut unknown: Vec<String> = names
        .into_iter()
        .filter(|name| name.starts_with("AGENTD_") && name != "AGENTD_CONFIG" && !known.contains(name))
        .collect();
    unknown.sort();
    unknown
}

/// A layer's name and, for the environment and the command line, the name the key has there.
fn describe(metadata: &Metadata, key: &str) -> String {
    if let Some(path) = metadata.source.as_ref().and_then(|s| s.file_path()) {
        return format!("the file {}", path.display());
    }
    match metadata.name.as_ref() {
        ENVIRONMENT => match Setting::find(key) {
            Some(setting) => format!("{ENVIRONMENT} {}", setting.env()),
            None => ENVIRONMENT.to_owned(),
        },
        COMMAND_LINE => format!("{COMMAND_LINE} --{}", key.replace('_', "-")),
        other => other.to_owned(),
    }
}

/// A layer of values under a name: the defaults, or strings from the environment or the command
/// line (parsed as the setting's type needs when extracted).
struct Layer {
    name: &'static str,
    data: Dict,
}

impl Layer {
    fn defaults() -> Self {
        let data = Serialized::defaults(Settings::default())
            .data()
            .ok()
            .and_then(|mut profiles| profiles.remove(&Profile::Default))
            .unwrap_or_default();
        Self { name: DEFAULTS, data }
    }

    fn strings(name: &'static str, values: Vec<(String, String)>) -> Self {
        let data = values.into_iter().map(|(key, value)| (key, Value::from(value))).collect();
        Self { name, data }
    }
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name)
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Map::from([(Profile::Default, self.data.clone())]))
    }
}

#[cfg(test)]
mod tests;

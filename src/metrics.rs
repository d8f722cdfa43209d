//! Process metrics in the Prometheus text format, on the `metrics` facade and the
//! `metrics-exporter-prometheus` recorder.
//!
//! - What the engine and the worker pool record (the claim, LLM-call and tool-call latency
//!   histograms, the LLM token counters) goes to this instance's own [`PrometheusRecorder`]:
//!   atomics per series, no lock on the recording path. No global recorder is installed, so the
//!   servers a test process starts keep their metrics apart.
//! - The values read at scrape time (runs by status, queue depth, stream subscribers, events
//!   published, grouped writes) are handed to [`Metrics::render`] as [`Gauges`] and written with
//!   the exporter's formatting helpers (so label values are escaped the same way).
//!
//! This module reads nothing itself: callers pass the gauges in.

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indexmap::IndexMap;
use metrics::{Histogram, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::formatting::{write_help_line, write_metric_line, write_type_line};
use metrics_exporter_prometheus::{LabelSet, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// Upper bounds (seconds) of the latency buckets.
const BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

const CLAIM_LATENCY: &str = "agentd_claim_latency_seconds";
const LLM_LATENCY: &str = "agentd_llm_call_duration_seconds";
const LLM_TOKENS: &str = "agentd_llm_tokens_total";
const TOOL_LATENCY: &str = "agentd_tool_call_duration_seconds";
const MCP_CALLS: &str = "agentd_mcp_calls_total";
const MCP_LATENCY: &str = "agentd_mcp_call_duration_seconds";
const PRUNED_RUNS: &str = "agentd_pruned_runs_total";
const PRUNED_ROWS: &str = "agentd_pruned_rows_total";
const WEBHOOK_DELIVERIES: &str = "agentd_webhook_deliveries_total";
const WEBHOOK_LAG: &str = "agentd_webhook_delivery_lag_seconds";
const PROTOCOL_REQUESTS: &str = "agentd_protocol_requests_total";

/// The recorded families: name, Prometheus type and help. Each is announced (HELP and TYPE) even
/// before its first sample, as scrapers and dashboards expect.
const RECORDED: [(&str, &str, &str); 11] = [
    (CLAIM_LATENCY, "histogram", "Time from kickoff to a run's first claim."),
    (LLM_LATENCY, "histogram", "LLM call latency by provider and model."),
    (LLM_TOKENS, "counter", "LLM tokens by provider, model and kind (prompt, completion; cached: the part of prompt read from the provider's cache; estimated: the part of prompt and completion agentd counted because the provider sent no usage; embedding: the input of embedding models, for knowledge bases)."),
    (TOOL_LATENCY, "histogram", "Tool call latency by tool."),
    (MCP_CALLS, "counter", "MCP tools/call requests by server, tool and outcome (ok, tool_error, error)."),
    (MCP_LATENCY, "histogram", "MCP tools/call latency by server and tool."),
    (PRUNED_RUNS, "counter", "Finished runs this replica's retention pruner removed."),
    (
        PRUNED_ROWS,
        "counter",
        "Rows (runs, tasks, events, messages, tool calls, idempotency keys) the pruner removed.",
    ),
    (
        WEBHOOK_DELIVERIES,
        "counter",
        "Webhook delivery attempts by outcome (delivered, retrying, failed: the schedule is used up, gone: 410).",
    ),
    (WEBHOOK_LAG, "histogram", "Time from an event's commit to its webhook's delivery."),
    (
        PROTOCOL_REQUESTS,
        "counter",
        "Requests to the agent protocols by protocol (mcp, a2a, ag_ui) and method (the JSON-RPC method; other for one not served; run or resume for AG-UI).",
    ),
];

/// Histogram samples are buffered until drained into their buckets; a scrape drains them, and so
/// does every this-many observations, so that a replica nobody scrapes does not grow.
const UPKEEP_EVERY: u64 = 1024;

/// Where the recorded series say they come from (the exporter ignores it).
static METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Metrics recorded by this process.
#[derive(Debug)]
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    claim_latency: Histogram,
    observations: AtomicU64,
    /// US dollars spent by provider and model (the recorder's counters count integers).
    costs: std::sync::Mutex<std::collections::BTreeMap<(String, String), f64>>,
}

const LLM_COST: &str = "agentd_llm_cost_usd_total";

/// What one kind of grouped write has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupCommits {
    /// Transactions written.
    pub batches: u64,
    /// Items written in them.
    pub items: u64,
    /// Time the writers spent writing, in seconds.
    pub busy_seconds: f64,
}

/// Gauges read when rendering.
#[derive(Debug, Default)]
pub struct Gauges {
    pub runs_by_status: Vec<(String, i64)>,
    pub sse_subscribers: i64,
    pub events_published: u64,
    /// Each kind of grouped write and what it has done.
    pub group_commits: Vec<(&'static str, GroupCommits)>,
    /// Webhook deliveries waiting, and the age of the oldest (seconds).
    pub webhook_pending: i64,
    pub webhook_oldest_pending_s: f64,
    /// The schema this binary knows (the version of its newest migration).
    pub schema: i64,
}

impl Default for Metrics {
    fn default() -> Self {
        // Only an empty bucket list is refused; without buckets the exporter renders summaries.
        let builder =
            PrometheusBuilder::new().set_buckets(&BUCKETS).unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        for (name, _, help) in RECORDED {
            let name = KeyName::from_const_str(name);
            if name.as_str().ends_with("_total") {
                recorder.describe_counter(name, None, help.into());
            } else {
                recorder.describe_histogram(name, None, help.into());
            }
        }
        let claim_latency = recorder.register_histogram(&Key::from_static_name(CLAIM_LATENCY), &METADATA);
        let handle = recorder.handle();
        Metrics {
            recorder,
            handle,
            claim_latency,
            observations: AtomicU64::new(0),
            costs: Default::default(),
        }
    }
}

impl Metrics {
    /// A run waited `wait` between its kickoff and its first claim.
    pub fn observe_claim(&self, wait: Duration) {
        self.claim_latency.record(wait.as_secs_f64());
        self.observed();
    }

    /// An LLM call to `provider`'s `model` took `duration`, used these tokens and cost this
    /// much (`None`: the model has no price).
    pub fn observe_llm(
        &self,
        provider: &str,
        model: &str,
        duration: Duration,
        usage: &crate::llm::TokenUsage,
        cost_usd: Option<f64>,
    ) {
        let labels =
            || vec![Label::new("provider", provider.to_owned()), Label::new("model", model.to_owned())];
        self.histogram(LLM_LATENCY, labels()).record(duration.as_secs_f64());
        let counts = [
            ("prompt", usage.prompt_tokens),
            ("completion", usage.completion_tokens),
            ("cached", usage.cached_tokens),
            // Of prompt and completion: counted by agentd (the provider sent none).
            ("estimated", if usage.estimated { usage.prompt_tokens + usage.completion_tokens } else { 0 }),
        ];
        for (kind, tokens) in counts {
            if kind == "estimated" && tokens == 0 {
                continue;
            }
            let mut labels = labels();
            labels.push(Label::new("kind", kind));
            self.recorder.register_counter(&Key::from_parts(LLM_TOKENS, labels), &METADATA).increment(tokens);
        }
        if let Some(cost) = cost_usd {
            let mut costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
            *costs.entry((provider.to_owned(), model.to_owned())).or_default() += cost;
        }
        self.observed();
    }

    /// An embedding request to `provider`'s `model` (a knowledge base's) took `duration` for
    /// `tokens` input tokens, costing `cost_usd` (`None`: the model has no price).
    pub fn observe_embedding(
        &self,
        provider: &str,
        model: &str,
        duration: Duration,
        tokens: u64,
        cost_usd: Option<f64>,
    ) {
        let labels =
            || vec![Label::new("provider", provider.to_owned()), Label::new("model", model.to_owned())];
        self.histogram(LLM_LATENCY, labels()).record(duration.as_secs_f64());
        let mut labels = labels();
        labels.push(Label::new("kind", "embedding"));
        self.recorder.register_counter(&Key::from_parts(LLM_TOKENS, labels), &METADATA).increment(tokens);
        if let Some(cost) = cost_usd {
            let mut costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
            *costs.entry((provider.to_owned(), model.to_owned())).or_default() += cost;
        }
        self.observed();
    }

    /// The retention pruner removed `runs` runs, `rows` rows in all.
    pub fn observe_pruned(&self, runs: u64, rows: u64) {
        for (name, count) in [(PRUNED_RUNS, runs), (PRUNED_ROWS, rows)] {
            self.recorder.register_counter(&Key::from_static_name(name), &METADATA).increment(count);
        }
    }

    /// A `tools/call` of MCP `server`'s `tool` took `duration` and ended with `outcome` (`ok`, the
    /// server's `tool_error`, or an `error` of the protocol, the transport or a time-out).
    pub fn observe_mcp(&self, server: &str, tool: &str, duration: Duration, outcome: &'static str) {
        let labels = || vec![Label::new("server", server.to_owned()), Label::new("tool", tool.to_owned())];
        self.histogram(MCP_LATENCY, labels()).record(duration.as_secs_f64());
        let mut counted = labels();
        counted.push(Label::new("outcome", outcome));
        self.recorder.register_counter(&Key::from_parts(MCP_CALLS, counted), &METADATA).increment(1);
        self.observed();
    }

    /// A request to an agent protocol's `method` (`protocol` is `mcp`, `a2a` or `ag_ui`; the
    /// method one the server serves, or `other`: a client's text never becomes a label).
    pub fn observe_protocol(&self, protocol: &'static str, method: &'static str) {
        let labels = vec![Label::new("protocol", protocol), Label::new("method", method)];
        self.recorder.register_counter(&Key::from_parts(PROTOCOL_REQUESTS, labels), &METADATA).increment(1);
    }

    /// A webhook delivery attempt ended with `outcome`; `lag` is the time from its event's commit
    /// when it was delivered.
    pub fn observe_webhook(&self, outcome: &'static str, lag: Option<Duration>) {
        let key = Key::from_parts(WEBHOOK_DELIVERIES, vec![Label::new("outcome", outcome)]);
        self.recorder.register_counter(&key, &METADATA).increment(1);
        if let Some(lag) = lag {
            self.histogram(WEBHOOK_LAG, Vec::new()).record(lag.as_secs_f64());
            self.observed();
        }
    }

    /// A call of `tool` took `duration`.
    pub fn observe_tool(&self, tool: &str, duration: Duration) {
        self.histogram(TOOL_LATENCY, vec![Label::new("tool", tool.to_owned())])
            .record(duration.as_secs_f64());
        self.observed();
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        self.recorder.register_histogram(&Key::from_parts(name, labels), &METADATA)
    }

    fn observed(&self) {
        if self.observations.fetch_add(1, Ordering::Relaxed) % UPKEEP_EVERY == UPKEEP_EVERY - 1 {
            self.handle.run_upkeep();
        }
    }

    /// Everything, in the Prometheus text format.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        render_gauges(gauges, &mut out);
        let recorded = self.handle.render();
        for (name, kind, help) in RECORDED {
            if !recorded.contains(&format!("# TYPE {name} ")) {
                header(&mut out, name, kind, help);
            }
        }
        out.push_str(&recorded);
        header(
            &mut out,
            LLM_COST,
            "counter",
            "US dollars spent on LLM calls by provider and model (priced models only).",
        );
        let costs = self.costs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for ((provider, model), cost) in costs {
            series(&mut out, LLM_COST, &[("provider", &provider), ("model", &model)], cost);
        }
        if crate::probe::is_on() {
            render_latency_budget(&mut out);
        }
        out
    }
}

/// The latency budget's totals by stage (setting `latency_budget`; see `crate::probe`).
fn render_latency_budget(out: &mut String) {
    let totals = crate::probe::totals();
    let (seconds, marks) = ("agentd_latency_budget_seconds_total", "agentd_latency_budget_marks_total");
    header(out, seconds, "counter", "Time runs spent in each stage of the latency budget.");
    for (stage, _, total) in &totals {
        series(out, seconds, &[("stage", stage)], total);
    }
    header(out, marks, "counter", "Times a run passed through each stage of the latency budget.");
    for (stage, count, _) in &totals {
        series(out, marks, &[("stage", stage)], count);
    }
}

/// The values read at scrape time.
fn render_gauges(gauges: &Gauges, out: &mut String) {
    // One series per replica: during a rolling upgrade, the scrapes show which release each runs.
    header(out, "agentd_build_info", "gauge", "This replica's release and the schema it knows (always 1).");
    let schema = gauges.schema.to_string();
    series(out, "agentd_build_info", &[("release", crate::release::RELEASE), ("schema", &schema)], 1);
    header(out, "agentd_runs", "gauge", "Runs by status.");
    for (status, count) in &gauges.runs_by_status {
        series(out, "agentd_runs", &[("status", status)], count);
    }
    let queued = gauges.runs_by_status.iter().find(|(s, _)| s == "queued").map_or(0, |(_, n)| *n);
    header(out, "agentd_queue_depth", "gauge", "Runs waiting for a worker.");
    series(out, "agentd_queue_depth", &[], queued);
    header(out, "agentd_sse_subscribers", "gauge", "Event streams open on this replica.");
    series(out, "agentd_sse_subscribers", &[], gauges.sse_subscribers);
    let name = "agentd_events_published_total";
    header(out, name, "counter", "Events this replica received to publish.");
    series(out, name, &[], gauges.events_published);
    render_group_commits(&gauges.group_commits, out);
    header(out, "agentd_webhook_queue_depth", "gauge", "Webhook deliveries waiting to be delivered.");
    series(out, "agentd_webhook_queue_depth", &[], gauges.webhook_pending);
    let name = "agentd_webhook_oldest_pending_seconds";
    header(out, name, "gauge", "Age of the oldest webhook delivery waiting (0: none).");
    series(out, name, &[], gauges.webhook_oldest_pending_s);
}

/// Transactions, items and busy time of each kind of grouped write (items per transaction tells
/// how much the group commit saves; busy time near wall time, that its writers are saturated).
fn render_group_commits(groups: &[(&str, GroupCommits)], out: &mut String) {
    type Series = (&'static str, &'static str, fn(&GroupCommits) -> f64);
    let all: [Series; 3] = [
        ("agentd_group_commit_batches_total", "Transactions written by grouped writes, by kind.", |s| {
            s.batches as f64
        }),
        ("agentd_group_commit_items_total", "Writes carried by those transactions, by kind.", |s| {
            s.items as f64
        }),
        ("agentd_group_commit_busy_seconds_total", "Time spent writing those transactions, by kind.", |s| {
            s.busy_seconds
        }),
    ];
    for (name, help, value) in all {
        header(out, name, "counter", help);
        for (kind, stats) in groups {
            series(out, name, &[("kind", kind)], value(stats));
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    write_help_line(out, name, None, None, help);
    write_type_line(out, name, None, None, kind);
}

/// One sample line; label values are escaped by the exporter's rules.
fn series(out: &mut String, name: &str, labels: &[(&'static str, &str)], value: impl Display) {
    let labels: Vec<Label> = labels.iter().map(|&(key, value)| Label::new(key, value.to_owned())).collect();
    let labels = LabelSet::from_key_and_global(&Key::from_parts(name.to_owned(), labels), &IndexMap::new());
    write_metric_line::<&str, _>(out, name, None, &labels, None, value, None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_histograms_counters_and_gauges() {
        let metrics = Metrics::default();
        let usage = |prompt, completion, cached| crate::llm::TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            estimated: false,
        };
        metrics.observe_llm("openai", "gpt\"x", Duration::from_millis(30), &usage(10, 5, 4), Some(0.25));
        metrics.observe_llm("openai", "gpt\"x", Duration::from_millis(300), &usage(1, 1, 0), Some(0.5));
        metrics.observe_llm("local", "llama", Duration::from_millis(3), &usage(1, 1, 0), None);
        metrics.observe_tool("calculator", Duration::from_micros(200));
        let journal = GroupCommits { batches: 4, items: 10, busy_seconds: 0.5 };
        let gauges = Gauges {
            runs_by_status: vec![("queued".into(), 3)],
            sse_subscribers: 2,
            events_published: 9,
            group_commits: vec![("journal", journal)],
            webhook_pending: 4,
            webhook_oldest_pending_s: 1.5,
            schema: 20261206000028,
        };
        metrics.observe_webhook("delivered", Some(Duration::from_millis(20)));
        metrics.observe_webhook("retrying", None);
        let text = metrics.render(&gauges);
        assert!(text.contains("agentd_webhook_queue_depth 4"), "{text}");
        assert!(text.contains("agentd_webhook_oldest_pending_seconds 1.5"), "{text}");
        assert!(text.contains("agentd_webhook_deliveries_total{outcome=\"retrying\"} 1"), "{text}");
        assert!(text.contains("agentd_webhook_delivery_lag_seconds_count 1"), "{text}");
        assert!(text.contains("agentd_runs{status=\"queued\"} 3"));
        assert!(text.contains("agentd_queue_depth 3"));
        let labels = "provider=\"openai\",model=\"gpt\\\"x\"";
        assert!(
            text.contains(&format!("agentd_llm_call_duration_seconds_bucket{{{labels},le=\"0.05\"}} 1")),
            "{text}"
        );
        assert!(text.contains(&format!("agentd_llm_call_duration_seconds_count{{{labels}}} 2")));
        assert!(text.contains(&format!("agentd_llm_tokens_total{{{labels},kind=\"prompt\"}} 11")));
        assert!(text.contains(&format!("agentd_llm_tokens_total{{{labels},kind=\"cached\"}} 4")));
        assert!(text.contains(&format!("agentd_llm_cost_usd_total{{{labels}}} 0.75")), "{text}");
        assert!(
            !text.contains("agentd_llm_cost_usd_total{provider=\"local\""),
            "an unpriced model has no cost"
        );
        assert!(text.contains("agentd_tool_call_duration_seconds_bucket{tool=\"calculator\",le=\"0.001\"} 1"));
        assert!(text.contains("agentd_claim_latency_seconds_count 0"));
        assert!(
            text.contains("agentd_sse_subscribers 2") && text.contains("agentd_events_published_total 9")
        );
        assert!(text.contains("agentd_group_commit_batches_total{kind=\"journal\"} 4"));
        assert!(text.contains("agentd_group_commit_items_total{kind=\"journal\"} 10"));
        assert!(text.contains("agentd_group_commit_busy_seconds_total{kind=\"journal\"} 0.5"));
    }

    #[test]
    fn every_family_is_announced_once_before_its_first_sample() {
        let metrics = Metrics::default();
        let text = metrics.render(&Gauges::default());
        for (name, kind, _) in RECORDED {
            assert_eq!(text.matches(&format!("# TYPE {name} {kind}\n")).count(), 1, "{name}:\n{text}");
        }
        metrics.observe_llm("p", "m", Duration::from_millis(1), &crate::llm::TokenUsage::default(), None);
        metrics.observe_tool("t", Duration::from_millis(1));
        let text = metrics.render(&Gauges::default());
        for (name, kind, _) in RECORDED {
            assert_eq!(text.matches(&format!("# TYPE {name} {kind}\n")).count(), 1, "{name}:\n{text}");
        }
        assert!(text
            .contains("# HELP agentd_llm_call_duration_seconds LLM call latency by provider and model.\n"));
        assert_eq!(text.matches("# TYPE agentd_llm_cost_usd_total counter\n").count(), 1);
    }

    #[test]
    fn buckets_are_cumulative_and_instances_are_separate() {
        let (one, other) = (Metrics::default(), Metrics::default());
        for millis in [1, 20, 400, 40_000] {
            one.observe_claim(Duration::from_millis(millis));
        }
        let text = one.render(&Gauges::default());
        for line in [
            "agentd_claim_latency_seconds_bucket{le=\"0.001\"} 1",
            "agentd_claim_latency_seconds_bucket{le=\"0.025\"} 2",
            "agentd_claim_latency_seconds_bucket{le=\"0.5\"} 3",
            "agentd_claim_latency_seconds_bucket{le=\"30\"} 3",
            "agentd_claim_latency_seconds_bucket{le=\"+Inf\"} 4",
            "agentd_claim_latency_seconds_count 4",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(other.render(&Gauges::default()).contains("agentd_claim_latency_seconds_count 0"));
    }

    #[test]
    fn samples_survive_upkeep_between_scrapes() {
        let metrics = Metrics::default();
        for _ in 0..UPKEEP_EVERY + 5 {
            metrics.observe_tool("calculator", Duration::from_micros(10));
        }
        let text = metrics.render(&Gauges::default());
        let line =
            format!("agentd_tool_call_duration_seconds_count{{tool=\"calculator\"}} {}", UPKEEP_EVERY + 5);
        assert!(text.contains(&line), "{line} missing from:\n{text}");
    }
}

//! Process metrics in the Prometheus text format: latency histograms and counters recorded by the
//! engine and the worker pool, rendered with the gauges read at scrape time (runs by status, queue
//! depth, stream subscribers, events published). Small on purpose: a few label sets, no crate.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::store::GroupStats;

/// Upper bounds (seconds) of the latency buckets.
const BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (bound, count) in BUCKETS.iter().zip(self.counts.iter_mut()) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, count) in BUCKETS.iter().zip(self.counts.iter()) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct State {
    claim_latency: Histogram,
    llm_latency: BTreeMap<String, Histogram>,
    llm_tokens: BTreeMap<(String, &'static str), u64>,
    tool_latency: BTreeMap<String, Histogram>,
}

/// Metrics recorded by this process.
#[derive(Debug, Default)]
pub struct Metrics {
    state: Mutex<State>,
}

/// Gauges read when rendering.
#[derive(Debug, Default)]
pub struct Gauges {
    pub runs_by_status: Vec<(String, i64)>,
    pub sse_subscribers: i64,
    pub events_published: u64,
    /// Each kind of grouped write and what it has done.
    pub group_commits: Vec<(&'static str, GroupStats)>,
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A run waited `wait` between its kickoff and its first claim.
    pub fn observe_claim(&self, wait: Duration) {
        self.with(|s| s.claim_latency.observe(wait.as_secs_f64()));
    }

    /// An LLM call to `model` took `duration` and used these tokens.
    pub fn observe_llm(&self, model: &str, duration: Duration, prompt_tokens: u64, completion_tokens: u64) {
        self.with(|s| {
            s.llm_latency.entry(model.to_owned()).or_default().observe(duration.as_secs_f64());
            *s.llm_tokens.entry((model.to_owned(), "prompt")).or_default() += prompt_tokens;
            *s.llm_tokens.entry((model.to_owned(), "completion")).or_default() += completion_tokens;
        });
    }

    /// A call of `tool` took `duration`.
    pub fn observe_tool(&self, tool: &str, duration: Duration) {
        self.with(|s| s.tool_latency.entry(tool.to_owned()).or_default().observe(duration.as_secs_f64()));
    }

    /// Everything, in the Prometheus text format.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        header(&mut out, "agentd_runs", "gauge", "Runs by status.");
        for (status, count) in &gauges.runs_by_status {
            let _ = writeln!(out, "agentd_runs{{status=\"{}\"}} {count}", escape(status));
        }
        let queued = gauges.runs_by_status.iter().find(|(s, _)| s == "queued").map_or(0, |(_, n)| *n);
        header(&mut out, "agentd_queue_depth", "gauge", "Runs waiting for a worker.");
        let _ = writeln!(out, "agentd_queue_depth {queued}");
        header(&mut out, "agentd_sse_subscribers", "gauge", "Event streams open on this replica.");
        let _ = writeln!(out, "agentd_sse_subscribers {}", gauges.sse_subscribers);
        header(
            &mut out,
            "agentd_events_published_total",
            "counter",
            "Events this replica received to publish.",
        );
        let _ = writeln!(out, "agentd_events_published_total {}", gauges.events_published);
        render_group_commits(&gauges.group_commits, &mut out);
        self.with(|s| render_recorded(s, &mut out));
        out
    }
}

fn render_recorded(s: &State, out: &mut String) {
    let name = "agentd_claim_latency_seconds";
    header(out, name, "histogram", "Time from kickoff to a run's first claim.");
    s.claim_latency.render(out, name, "");
    let name = "agentd_llm_call_duration_seconds";
    header(out, name, "histogram", "LLM call latency by model.");
    for (model, histogram) in &s.llm_latency {
        histogram.render(out, name, &format!("model=\"{}\"", escape(model)));
    }
    header(out, "agentd_llm_tokens_total", "counter", "LLM tokens by model and kind.");
    for ((model, kind), tokens) in &s.llm_tokens {
        let _ =
            writeln!(out, "agentd_llm_tokens_total{{model=\"{}\",kind=\"{kind}\"}} {tokens}", escape(model));
    }
    let name = "agentd_tool_call_duration_seconds";
    header(out, name, "histogram", "Tool call latency by tool.");
    for (tool, histogram) in &s.tool_latency {
        histogram.render(out, name, &format!("tool=\"{}\"", escape(tool)));
    }
}

/// Transactions, items and busy time of each kind of grouped write (items per transaction tells
/// how much the group commit saves; busy time near wall time, that its writers are saturated).
fn render_group_commits(groups: &[(&str, GroupStats)], out: &mut String) {
    type Series = (&'static str, &'static str, fn(&GroupStats) -> f64);
    let series: [Series; 3] = [
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
    for (name, help, value) in series {
        header(out, name, "counter", help);
        for (kind, stats) in groups {
            let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {}", value(stats));
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Escape a label value.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_histograms_counters_and_gauges() {
        let metrics = Metrics::default();
        metrics.observe_llm("openai/gpt\"x", Duration::from_millis(30), 10, 5);
        metrics.observe_llm("openai/gpt\"x", Duration::from_millis(300), 1, 1);
        metrics.observe_tool("calculator", Duration::from_micros(200));
        let journal = GroupStats { batches: 4, items: 10, busy_seconds: 0.5 };
        let gauges = Gauges {
            runs_by_status: vec![("queued".into(), 3)],
            sse_subscribers: 2,
            events_published: 9,
            group_commits: vec![("journal", journal)],
        };
        let text = metrics.render(&gauges);
        assert!(text.contains("agentd_runs{status=\"queued\"} 3"));
        assert!(text.contains("agentd_queue_depth 3"));
        assert!(
            text.contains("agentd_llm_call_duration_seconds_bucket{model=\"openai/gpt\\\"x\",le=\"0.05\"} 1")
        );
        assert!(text.contains("agentd_llm_call_duration_seconds_count{model=\"openai/gpt\\\"x\"} 2"));
        assert!(text.contains("agentd_llm_tokens_total{model=\"openai/gpt\\\"x\",kind=\"prompt\"} 11"));
        assert!(text.contains("agentd_tool_call_duration_seconds_bucket{tool=\"calculator\",le=\"0.001\"} 1"));
        assert!(text.contains("agentd_claim_latency_seconds_count 0"));
        assert!(
            text.contains("agentd_sse_subscribers 2") && text.contains("agentd_events_published_total 9")
        );
        assert!(text.contains("agentd_group_commit_batches_total{kind=\"journal\"} 4"));
        assert!(text.contains("agentd_group_commit_items_total{kind=\"journal\"} 10"));
        assert!(text.contains("agentd_group_commit_busy_seconds_total{kind=\"journal\"} 0.5"));
    }
}

//! The latency budget of a run's critical path (setting `latency_budget`, off by default): where
//! the time from a kickoff to the answer of its `/wait` goes, by stage. Each run has a clock: a
//! mark records the time since the run's previous mark under the mark's stage and restarts the
//! clock, so a run's stages add up to its whole time in this process. `/metrics` shows the totals
//! (`agentd_latency_budget_seconds_total{stage}` and `agentd_latency_budget_marks_total{stage}`);
//! `examples/loadgen.rs` turns it on and prints the budget per run. Process-wide, as the tracing
//! and OpenTelemetry handles are: off, each mark is one relaxed load.
//!
//! The marks, in a sequential run's order: `kickoff.prepare` (the request parsed, the crew
//! resolved and checked), `kickoff.insert` (the run stored), `queue.handoff` (a run claimed by
//! its kickoff, handed to a slot here) or `queue.claim` (the notification, a claimer's wake-up
//! and its claim statement), `engine.work` (the engine's own work before a model request, a tool
//! call or a commit), `llm.request`, `tool.call`, `journal.commit` (from submitting a step to its
//! commit, group commit included), `wait.wakeup` (the last step's commit to the waiting request's
//! answer: the run as that step left it, or the bus's news of it when the run executed
//! elsewhere) and `wait.read` (the run read for the answer, when it was not handed over).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use uuid::Uuid;

static ON: AtomicBool = AtomicBool::new(false);

/// Runs followed at once at most (a run that never reaches its last mark is forgotten when the
/// table is full).
const MAX_RUNS: usize = 100_000;

#[derive(Default)]
struct Budget {
    /// Each followed run's last mark.
    runs: HashMap<Uuid, Instant>,
    /// Per stage: marks and microseconds, in the order stages were first seen.
    stages: Vec<(&'static str, u64, u64)>,
}

fn budget() -> std::sync::MutexGuard<'static, Budget> {
    static BUDGET: OnceLock<Mutex<Budget>> = OnceLock::new();
    BUDGET.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Turn the budget on for this process.
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// Is the budget on?
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Start run `run`'s clock at `at` (its kickoff request's arrival).
pub fn begin(run: Uuid, at: Instant) {
    if !is_on() {
        return;
    }
    let mut budget = budget();
    if budget.runs.len() >= MAX_RUNS {
        budget.runs.clear();
    }
    budget.runs.insert(run, at);
}

/// Record the time since `run`'s last mark as `stage` (nothing for a run not followed).
pub fn mark(run: Uuid, stage: &'static str) {
    if is_on() {
        record(run, stage, false);
    }
}

/// [`mark`], and stop following `run`.
pub fn end(run: Uuid, stage: &'static str) {
    if is_on() {
        record(run, stage, true);
    }
}

fn record(run: Uuid, stage: &'static str, last: bool) {
    let now = Instant::now();
    let mut budget = budget();
    let Some(previous) = budget.runs.get_mut(&run) else { return };
    let micros = u64::try_from(now.duration_since(*previous).as_micros()).unwrap_or(u64::MAX);
    *previous = now;
    if last {
        budget.runs.remove(&run);
    }
    match budget.stages.iter_mut().find(|(name, ..)| *name == stage) {
        Some((_, marks, total)) => {
            *marks += 1;
            *total = total.saturating_add(micros);
        }
        None => budget.stages.push((stage, 1, micros)),
    }
}

/// Each stage's marks and seconds so far.
pub fn totals() -> Vec<(&'static str, u64, f64)> {
    budget().stages.iter().map(|&(stage, marks, micros)| (stage, marks, micros as f64 / 1e6)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_add_up_per_stage_and_only_for_followed_runs() {
        enable();
        let run = Uuid::now_v7();
        mark(run, "probe.test.unfollowed");
        assert!(!totals().iter().any(|(stage, ..)| *stage == "probe.test.unfollowed"));
        begin(run, Instant::now() - std::time::Duration::from_millis(5));
        mark(run, "probe.test.first");
        end(run, "probe.test.second");
        mark(run, "probe.test.after");
        let totals = totals();
        let first = totals.iter().find(|(stage, ..)| *stage == "probe.test.first").expect("recorded");
        assert_eq!(first.1, 1);
        assert!(first.2 >= 0.005, "the time since begin: {first:?}");
        assert!(totals.iter().any(|(stage, marks, _)| *stage == "probe.test.second" && *marks == 1));
        assert!(!totals.iter().any(|(stage, ..)| *stage == "probe.test.after"), "ended");
    }
}

//! The retention pruner: when a retention period is set, every replica runs this task, and one at
//! a time (the store's advisory lock) removes runs that finished more than the period ago, with
//! their journals, in small batches with a pause between them, so that claims and journal commits
//! are not held up. Removed rows are counted in `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::store::Store;

/// How the pruner works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionSettings {
    /// Finished runs older than this are removed.
    pub keep: Duration,
    /// Runs removed per transaction.
    pub batch: i64,
    /// The pause between batches while there is more to remove.
    pub pause: Duration,
    /// How often to look for runs to remove.
    pub every: Duration,
}

impl RetentionSettings {
    /// Keep finished runs for `keep`, in batches of 100 runs at most every 250 ms (400 runs a
    /// second, 34 million a day: far more than a service kicks off), looking every minute.
    pub fn keeping(keep: Duration) -> Self {
        Self { keep, batch: 100, pause: Duration::from_millis(250), every: Duration::from_secs(60) }
    }
}

/// Prune until `shutdown`.
pub async fn run(
    store: Store,
    settings: RetentionSettings,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) {
    tracing::info!(keep_days = settings.keep.as_secs_f64() / 86_400.0, "retention pruner started");
    loop {
        prune_all(&store, &settings, &metrics, &shutdown).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(settings.every) => {}
        }
    }
}

/// What one pass of the pruner removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    pub runs: u64,
    pub rows: u64,
    /// Transactions that removed runs.
    pub batches: u32,
    /// Audit records removed.
    pub audit: u64,
}

/// Remove batches while full ones come back (or until `shutdown`).
pub async fn prune_all(
    store: &Store,
    settings: &RetentionSettings,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Pass {
    let mut pass = Pass::default();
    let Ok(keep) = chrono::Duration::from_std(settings.keep) else { return pass };
    while !shutdown.is_cancelled() {
        let cutoff = chrono::Utc::now() - keep;
        match store.prune_finished(cutoff, settings.batch).await {
            Ok(pruned) => {
                metrics.observe_pruned(pruned.runs, pruned.rows);
                pass.runs += pruned.runs;
                pass.rows += pruned.rows;
                pass.batches += u32::from(pruned.runs > 0);
                if pruned.skipped || pruned.runs < settings.batch as u64 {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "retention: pruning failed; trying again later");
                break;
            }
        }
        tokio::time::sleep(settings.pause).await;
    }
    // The audit log is kept as long as runs are.
    while !shutdown.is_cancelled() {
        match store.prune_audit(chrono::Utc::now() - keep, settings.batch).await {
            Ok(removed) => {
                pass.audit += removed;
                if removed < settings.batch as u64 {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "retention: pruning the audit log failed; trying again later");
                break;
            }
        }
        tokio::time::sleep(settings.pause).await;
    }
    if pass.audit > 0 {
        tracing::info!(records = pass.audit, "retention: removed old audit records");
    }
    if pass.runs > 0 {
        tracing::info!(
            runs = pass.runs,
            rows = pass.rows,
            batches = pass.batches,
            "retention: removed finished runs"
        );
    }
    pass
}

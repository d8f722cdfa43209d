//! What operators ask of the service: whether it is ready, and the database's figures for
//! `/metrics`.

use super::{ServiceResult, Services};
use crate::store::{GroupStats, OutboxGauges};

/// The figures `/metrics` reads from the database.
pub struct StoredGauges {
    /// Runs by status.
    pub runs_by_status: Vec<(String, i64)>,
    /// The webhook outbox.
    pub outbox: OutboxGauges,
}

impl Services {
    /// Whether the database answers and every migration is applied.
    pub async fn ready(&self) -> ServiceResult<bool> {
        Ok(self.store.check_ready().await?)
    }

    /// Runs by status and the webhook outbox.
    pub async fn stored_gauges(&self) -> ServiceResult<StoredGauges> {
        let runs_by_status = self.store.runs_by_status().await?;
        let outbox = self.store.outbox_gauges().await?;
        Ok(StoredGauges { runs_by_status, outbox })
    }

    /// The group commits of this replica's store, by kind.
    pub fn group_commits(&self) -> Vec<(&'static str, GroupStats)> {
        self.store.group_stats()
    }
}

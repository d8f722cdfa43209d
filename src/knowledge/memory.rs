//! Memories at work: a run's recall of its tenant's scope, as the engine's [`MemorySource`]
//! (saving goes through the run's journal, listing and forgetting through the service).

use crate::domain::memory::MAX_MEMORY_K;
use crate::domain::RunId;
use crate::engine::memory::{MemorySource, RecallFuture};
use crate::store::Store;

/// Recalls tenants' memories by full-text relevance to a task's prompt, the most recent filling
/// up.
#[derive(Clone)]
pub struct Memories {
    store: Store,
}

impl Memories {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

impl MemorySource for Memories {
    fn recall<'a>(
        &'a self,
        tenant: &'a str,
        scope: &'a str,
        query: &'a str,
        k: u32,
        run: RunId,
    ) -> RecallFuture<'a> {
        Box::pin(async move {
            let k = i64::from(k.clamp(1, MAX_MEMORY_K));
            self.store.recall_memories(tenant, scope, query, k, run.0).await.map_err(|error| {
                tracing::warn!(%error, "a memory recall failed");
                "the memories could not be read (database error)".to_owned()
            })
        })
    }
}

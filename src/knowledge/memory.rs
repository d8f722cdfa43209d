//! Memories at work: a run's recall of its tenant's scope, as the engine's [`MemorySource`]
//! (saving goes through the run's journal, listing and forgetting through the service).

use std::collections::HashMap;

use uuid::Uuid;

use super::{fuse_ranks, Knowledge};
use crate::domain::knowledge::EmbeddingSpend;
use crate::domain::memory::{MemoryItem, MAX_MEMORY_K};
use crate::domain::{MemoryId, TenantId};
use crate::engine::memory::{MemorySource, Recall, RecallFuture, Recalled, VectorsFuture};
use crate::store::{Store, StoreResult};

/// Recalls tenants' memories: by full-text relevance to a task's prompt fused with vector
/// similarity when the crew's memory names an embedding model (and the database has pgvector),
/// the most recent filling up.
#[derive(Clone)]
pub struct Memories {
    store: Store,
    /// Embeds texts, and knows whether vectors can be kept.
    knowledge: Knowledge,
}

impl Memories {
    pub fn new(store: Store, knowledge: Knowledge) -> Self {
        Self { store, knowledge }
    }

    async fn recall_items(&self, recall: Recall<'_>) -> Result<Recalled, String> {
        let k = i64::from(recall.k.clamp(1, MAX_MEMORY_K));
        let Recall { tenant, scope, query, run, .. } = recall;
        let database = |error: crate::store::StoreError| {
            tracing::warn!(%error, "a memory recall failed");
            "the memories could not be read (database error)".to_owned()
        };
        let Some(embedding) = recall.embedding else {
            let items = self.store.recall_memories(tenant, scope, query, k, run).await.map_err(database)?;
            return Ok(Recalled { items, spend: None });
        };
        let candidates = (k * 4).max(20);
        // Matches by words first, then the most recent (score 0).
        let by_words =
            self.store.recall_memories(tenant, scope, query, candidates, run).await.map_err(database)?;
        let vector = match self.knowledge.vectors().await {
            Ok(()) => self.knowledge.embed_priced(embedding, &[query.to_owned()]).await,
            Err(why) => Err(format!("vector search is off: {why}")),
        };
        let mut spend: Option<EmbeddingSpend> = None;
        let vector = vector.map(|(mut embedded, cost)| {
            spend = Some(cost);
            embedded.vectors.pop()
        });
        let nearest = match vector {
            Ok(Some(vector)) => self
                .store
                .nearest_memories(tenant, scope, embedding, &vector, candidates, run)
                .await
                .map_err(database)?,
            Ok(None) => Vec::new(),
            Err(why) => {
                tracing::warn!(%why, "memory recall by meaning failed: recalled by words and recency");
                Vec::new()
            }
        };
        let matched: Vec<Uuid> =
            by_words.iter().filter(|item| item.score > 0.0).map(|item| item.id).collect();
        let nearest: Vec<Uuid> = nearest.into_iter().map(|(id, _)| id).collect();
        let fused = fuse_ranks(&[nearest, matched], usize::try_from(k).unwrap_or(usize::MAX));
        let mut known: HashMap<Uuid, MemoryItem> =
            by_words.iter().map(|item| (item.id, item.clone())).collect();
        let missing: Vec<MemoryId> =
            fused.iter().map(|(id, _)| *id).filter(|id| !known.contains_key(id)).map(MemoryId).collect();
        if !missing.is_empty() {
            for item in self.fetch(tenant, &missing).await.map_err(database)? {
                known.insert(item.id, item);
            }
        }
        let mut items: Vec<MemoryItem> = fused
            .iter()
            .filter_map(|(id, score)| known.get(id).map(|item| MemoryItem { score: *score, ..item.clone() }))
            .collect();
        // Fewer than k: the most recent of the others (by_words ends with them, score 0).
        for item in by_words.into_iter().filter(|item| item.score == 0.0) {
            if items.len() as i64 >= k {
                break;
            }
            if items.iter().all(|chosen| chosen.id != item.id) {
                items.push(item);
            }
        }
        Ok(Recalled { items, spend })
    }

    async fn fetch(&self, tenant: &TenantId, ids: &[MemoryId]) -> StoreResult<Vec<MemoryItem>> {
        self.store.memories_by_id(tenant, ids).await
    }
}

impl MemorySource for Memories {
    fn recall<'a>(&'a self, recall: Recall<'a>) -> RecallFuture<'a> {
        Box::pin(self.recall_items(recall))
    }

    fn embed<'a>(&'a self, embedding: &'a str, texts: &'a [String]) -> VectorsFuture<'a> {
        Box::pin(async move {
            self.knowledge.vectors().await.map_err(|why| format!("vector search is off: {why}"))?;
            let (embedded, spend) = self.knowledge.embed_priced(embedding, texts).await?;
            Ok((embedded.vectors, spend))
        })
    }
}

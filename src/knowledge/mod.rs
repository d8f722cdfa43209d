//! Knowledge bases at work: searching a tenant's base (for the API's search and for runs, as the
//! engine's [`KnowledgeSource`]) and the ingester every replica runs, which turns posted
//! documents into chunks (`ingest`), from their text (`extract`) cut along headings and
//! paragraphs (`chunk`).

pub mod chunk;
pub mod extract;
pub mod ingest;

use crate::domain::knowledge::{KnowledgeHit, SearchMode, MAX_K};
use crate::engine::knowledge::{KnowledgeSource, SearchFuture};
use crate::store::{Store, StoreError};

/// Why a search found nothing to say.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    #[error("no knowledge base named '{0}'")]
    NoBase(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a search found, and how it ranked it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub mode: SearchMode,
    pub hits: Vec<KnowledgeHit>,
}

/// Searches tenants' knowledge bases.
#[derive(Clone)]
pub struct Knowledge {
    store: Store,
}

impl Knowledge {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The `k` best chunks of `query` in `tenant`'s base `base` (full-text).
    pub async fn search(
        &self,
        tenant: &str,
        base: &str,
        query: &str,
        k: u32,
    ) -> Result<Found, KnowledgeError> {
        let record = self
            .store
            .knowledge_base(tenant, base)
            .await?
            .ok_or_else(|| KnowledgeError::NoBase(base.to_owned()))?;
        let k = i64::from(k.clamp(1, MAX_K));
        let hits = self.store.search_fulltext(record.id, query, k).await?;
        Ok(Found { mode: SearchMode::Fulltext, hits })
    }
}

impl KnowledgeSource for Knowledge {
    fn search<'a>(&'a self, tenant: &'a str, base: &'a str, query: &'a str, k: u32) -> SearchFuture<'a> {
        Box::pin(async move {
            match Knowledge::search(self, tenant, base, query, k).await {
                Ok(found) => Ok(found.hits),
                Err(KnowledgeError::NoBase(name)) => Err(format!("no knowledge base named '{name}'")),
                Err(KnowledgeError::Store(error)) => {
                    tracing::warn!(%error, "a knowledge search failed");
                    Err("the knowledge base could not be searched (database error)".to_owned())
                }
            }
        })
    }
}

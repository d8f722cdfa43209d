//! Knowledge bases at work: searching a tenant's base (for the API's search and for runs, as the
//! engine's [`KnowledgeSource`]) and the ingester every replica runs, which turns posted
//! documents into chunks (`ingest`), from their text (`extract`) cut along headings and
//! paragraphs (`chunk`). `memory` recalls a tenant's memories for runs.

pub mod chunk;
pub mod extract;
pub mod extractor;
pub mod ingest;
pub mod memory;

use std::sync::Arc;

pub use extractor::Extraction;

use crate::domain::knowledge::{EmbeddingSpend, KnowledgeHit, SearchMode, MAX_K};
use crate::domain::TenantId;
use crate::engine::knowledge::{KnowledgeSource, SearchFuture, Searched};
use crate::llm::{Embeddings, LlmRegistry, TokenUsage};
use crate::metrics::Metrics;
use crate::store::{Reach, Store, StoreError};

/// Why a search found nothing to say.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    #[error("no knowledge base named '{0}'")]
    NoBase(String),
    #[error("the embedding model failed: {0}")]
    Embedding(String),
    /// A search mode the base cannot be searched by.
    #[error("{0}")]
    Mode(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a search found, and how it ranked it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub mode: SearchMode,
    pub hits: Vec<KnowledgeHit>,
    /// What embedding the query cost (`None`: no vector search).
    pub spend: Option<EmbeddingSpend>,
}

/// Searches tenants' knowledge bases: by full text always, fused with vector similarity where
/// the database has pgvector and the base an embedding model.
#[derive(Clone)]
pub struct Knowledge {
    store: Store,
    /// The providers whose embedding models bases name (none: no base embeds).
    llms: Option<LlmRegistry>,
    /// Whether vectors can be kept (pgvector), found out once.
    vectors: Arc<tokio::sync::OnceCell<Result<(), String>>>,
    /// Where embedding requests are counted.
    metrics: Arc<Metrics>,
}

/// Candidates each ranking contributes to a hybrid search, at least.
const MIN_CANDIDATES: u32 = 20;
/// Reciprocal rank fusion's constant (the usual 60).
const RRF_K: f64 = 60.0;

impl Knowledge {
    pub fn new(store: Store, llms: Option<LlmRegistry>, metrics: Arc<Metrics>) -> Self {
        Self { store, llms, vectors: Arc::default(), metrics }
    }

    /// Can vectors be kept? Found out (and the table made) on first use; `Err` says why not.
    pub async fn vectors(&self) -> Result<(), String> {
        self.vectors.get_or_init(|| self.store.prepare_vectors()).await.clone()
    }

    /// Find out at start-up whether vectors can be kept, and say so.
    pub async fn announce(&self) {
        match self.vectors().await {
            Ok(()) => tracing::info!("knowledge: vector search is on (pgvector)"),
            Err(why) => {
                tracing::warn!(reason = %why, "knowledge: vector search is off; knowledge bases are searched by full text only")
            }
        }
    }

    /// Whether `embedding` (`provider/model`) can be used for vectors: a configured provider,
    /// and a database that keeps vectors; `Err` says why not.
    pub async fn embedding_usable(&self, embedding: &str) -> Result<(), String> {
        self.vectors().await.map_err(|why| format!("this server's database cannot keep vectors: {why}"))?;
        let llms = self.llms.as_ref().ok_or("no embedding models are configured on this server")?;
        llms.resolve(Some(embedding)).map(|_| ()).map_err(|e| e.message)
    }

    /// The vectors of `texts` by `embedding` (`provider/model`), in batches.
    pub async fn embed(&self, embedding: &str, texts: &[String]) -> Result<Embeddings, String> {
        Ok(self.embed_priced(embedding, texts).await?.0)
    }

    /// [`Knowledge::embed`], and what it cost.
    pub async fn embed_priced(
        &self,
        embedding: &str,
        texts: &[String],
    ) -> Result<(Embeddings, EmbeddingSpend), String> {
        let llms = self.llms.as_ref().ok_or("no embedding models are configured on this server")?;
        let resolved = llms.resolve(Some(embedding)).map_err(|e| e.message)?;
        let mut all = Embeddings { vectors: Vec::with_capacity(texts.len()), tokens: 0, estimated: false };
        let mut spend = EmbeddingSpend { model: embedding.to_owned(), ..EmbeddingSpend::default() };
        for batch in texts.chunks(EMBED_BATCH) {
            // The provider's shared budgets (rpm, tpm), as its chat calls keep them: each batch
            // books a request and its estimated tokens, waits its turn, then corrects the booking
            // by the tokens it used.
            let booked = match &resolved.budget {
                Some(budget) => {
                    let estimate: u64 = batch.iter().map(|text| crate::llm::estimate::count(text)).sum();
                    let wait = budget
                        .shared
                        .reserve(&budget.reservations(estimate), std::time::Duration::ZERO)
                        .await
                        .map_err(|e| format!("the provider's shared budget could not be booked: {e}"))?;
                    tokio::time::sleep(wait).await;
                    Some((budget, estimate))
                }
                None => None,
            };
            let started = std::time::Instant::now();
            let call = crate::telemetry::ModelCall {
                operation: "embeddings",
                provider: resolved.client.system(),
                model: &resolved.model,
                purpose: "embedding",
                task: None,
                agent: None,
                temperature: None,
                max_tokens: None,
            };
            let span = crate::telemetry::model_call(&call);
            let embedded =
                crate::telemetry::within(span.as_ref(), resolved.client.embed(&resolved.model, batch)).await;
            if let Some(span) = span {
                span.set("agentd.embeddings.inputs", batch.len() as i64);
                let reply = embedded.as_ref().map(|e| crate::telemetry::ModelReply {
                    response_model: None,
                    response_id: None,
                    finish_reason: None,
                    input_tokens: e.tokens,
                    output_tokens: 0,
                    cached_tokens: 0,
                });
                let reply = match &reply {
                    Ok(reply) => Ok(reply),
                    Err(error) => Err((error.kind.as_str(), error.message.as_str())),
                };
                crate::telemetry::end_model_call(span, &call, reply, started.elapsed());
            }
            if let Some((budget, estimate)) = booked.filter(|(budget, _)| budget.tpm.is_some()) {
                let used = embedded.as_ref().map_or(0, |e| e.tokens);
                let seconds = (used as f64 - estimate as f64) * budget.token_seconds();
                if let Err(error) = budget.shared.adjust(&budget.token_key(), seconds).await {
                    tracing::warn!(%error, "could not correct a provider's token booking");
                }
            }
            let embedded = embedded.map_err(|e| e.message)?;
            let usage = TokenUsage { prompt_tokens: embedded.tokens, ..TokenUsage::default() };
            let cost = resolved.price.as_ref().map(|price| price.cost(&usage));
            self.metrics.observe_embedding(
                &resolved.provider,
                &resolved.model,
                started.elapsed(),
                embedded.tokens,
                cost,
            );
            spend.cost_usd += cost.unwrap_or(0.0);
            all.vectors.extend(embedded.vectors);
            all.tokens += embedded.tokens;
            all.estimated |= embedded.estimated;
        }
        spend.tokens = all.tokens;
        spend.estimated = all.estimated;
        Ok((all, spend))
    }

    /// The `k` best chunks of `query` in `tenant`'s base `base`, ranked by `mode` (by default,
    /// hybrid where the base has vectors, else full text).
    pub async fn search(
        &self,
        tenant: &TenantId,
        base: &str,
        query: &str,
        k: u32,
        mode: Option<SearchMode>,
    ) -> Result<Found, KnowledgeError> {
        let record = self
            .store
            .knowledge_base(tenant, base)
            .await?
            .ok_or_else(|| KnowledgeError::NoBase(base.to_owned()))?;
        let k = k.clamp(1, MAX_K);
        let vectors = match (&record.embedding, record.dims, self.vectors().await) {
            (Some(embedding), Some(dims), Ok(())) => Some((embedding, dims)),
            _ => None,
        };
        let (Some((embedding, dims)), false) = (vectors, mode == Some(SearchMode::Fulltext)) else {
            if mode == Some(SearchMode::Vector) || mode == Some(SearchMode::Hybrid) {
                let why = match record.embedding {
                    None => "the base has no embedding model",
                    Some(_) => "vector search is off on this server (see its start-up log)",
                };
                return Err(KnowledgeError::Mode(why.to_owned()));
            }
            let hits = self.store.search_fulltext(record.id, query, i64::from(k), Reach::AnyWord).await?;
            return Ok(Found { mode: SearchMode::Fulltext, hits, spend: None });
        };
        let (vector, spend) = match self.embed_priced(embedding, &[query.to_owned()]).await {
            Ok((mut embedded, spend)) if embedded.vectors.len() == 1 => {
                (embedded.vectors.remove(0), Some(spend))
            }
            Ok(_) => return Err(KnowledgeError::Embedding("the model answered no vector".into())),
            Err(why) => return Err(KnowledgeError::Embedding(why)),
        };
        if mode == Some(SearchMode::Vector) {
            let hits = self.store.search_vectors(record.id, dims, &vector, i64::from(k)).await?;
            return Ok(Found { mode: SearchMode::Vector, hits, spend });
        }
        let candidates = i64::from((k * 4).max(MIN_CANDIDATES));
        let by_vector = self.store.search_vectors(record.id, dims, &vector, candidates).await?;
        let by_text = self.store.search_fulltext(record.id, query, candidates, Reach::SharedWords).await?;
        Ok(Found { mode: SearchMode::Hybrid, hits: fuse(&[by_vector, by_text], k as usize), spend })
    }
}

/// Texts embedded per request.
const EMBED_BATCH: usize = 64;

/// Reciprocal rank fusion: each hit scores the sum of `1 / (60 + rank)` over the rankings it is
/// in; the best `k`, their `score` the fused one.
fn fuse(rankings: &[Vec<KnowledgeHit>], k: usize) -> Vec<KnowledgeHit> {
    let ids: Vec<Vec<uuid::Uuid>> =
        rankings.iter().map(|r| r.iter().map(|hit| hit.chunk_id).collect()).collect();
    fuse_ranks(&ids, k)
        .into_iter()
        .filter_map(|(id, score)| {
            let hit = rankings.iter().flatten().find(|hit| hit.chunk_id == id)?;
            Some(KnowledgeHit { score, ..hit.clone() })
        })
        .collect()
}

/// Reciprocal rank fusion of rankings of ids: each scores the sum of `1 / (60 + rank)` over the
/// rankings it is in; the best `k`, best first (ties by id).
pub(crate) fn fuse_ranks<K: Copy + Ord>(rankings: &[Vec<K>], k: usize) -> Vec<(K, f64)> {
    let mut fused: Vec<(K, f64)> = Vec::new();
    for ranking in rankings {
        for (rank, id) in ranking.iter().enumerate() {
            let score = 1.0 / (RRF_K + rank as f64 + 1.0);
            match fused.iter_mut().find(|(seen, _)| seen == id) {
                Some((_, total)) => *total += score,
                None => fused.push((*id, score)),
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    fused.truncate(k);
    fused
}

impl KnowledgeSource for Knowledge {
    fn search<'a>(&'a self, tenant: &'a TenantId, base: &'a str, query: &'a str, k: u32) -> SearchFuture<'a> {
        Box::pin(async move {
            match Knowledge::search(self, tenant, base, query, k, None).await {
                Ok(found) => Ok(Searched { hits: found.hits, spend: found.spend }),
                Err(KnowledgeError::NoBase(name)) => Err(format!("no knowledge base named '{name}'")),
                Err(error @ (KnowledgeError::Embedding(_) | KnowledgeError::Mode(_))) => {
                    Err(error.to_string())
                }
                Err(KnowledgeError::Store(error)) => {
                    tracing::warn!(%error, "a knowledge search failed");
                    Err("the knowledge base could not be searched (database error)".to_owned())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{fuse, fuse_ranks, KnowledgeHit};
    use uuid::Uuid;

    #[test]
    fn fusion_of_ids_favours_those_both_rankings_hold() {
        let id = Uuid::from_u128;
        let fused = fuse_ranks(&[vec![id(1), id(2), id(3)], vec![id(3), id(4)]], 3);
        let order: Vec<u128> = fused.iter().map(|(id, _)| id.as_u128()).collect();
        assert_eq!(order, [3, 1, 2], "3: ranks 3 and 1; then 1 (rank 1), 2 (rank 2, before 4 by id)");
        assert!((fused[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert!(fuse_ranks::<u8>(&[Vec::new(), Vec::new()], 5).is_empty());
    }

    fn hit(n: u128) -> KnowledgeHit {
        KnowledgeHit {
            document_id: uuid::Uuid::from_u128(0),
            chunk_id: uuid::Uuid::from_u128(n),
            title: String::new(),
            heading: String::new(),
            text: format!("chunk {n}"),
            score: 0.0,
        }
    }

    #[test]
    fn reciprocal_rank_fusion_favours_hits_both_rankings_hold() {
        let by_vector = vec![hit(1), hit(2), hit(3)];
        let by_text = vec![hit(3), hit(4), hit(1)];
        let fused = fuse(&[by_vector, by_text], 3);
        let order: Vec<u128> = fused.iter().map(|h| h.chunk_id.as_u128()).collect();
        assert_eq!(order, [1, 3, 2], "1: ranks 1 and 3; 3: ranks 3 and 1 (ties by id); then 2");
        assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
        assert!((fused[2].score - 1.0 / 62.0).abs() < 1e-12);
        assert!(fuse(&[Vec::new(), Vec::new()], 5).is_empty());
    }
}

//! The ingester every replica runs: it leases pending documents (like runs: a lease renewed every
//! third of its length, fenced by the attempt), fetches a URL's content through the tools' egress
//! guard, extracts the text in a child process ([`super::extractor`]), cuts it into chunks and
//! writes them with the document's `ready` in one transaction, so a search never sees half a
//! document. A replica killed mid-ingestion leaves its lease to expire and another takes the
//! document from the start; a document whose replicas died `quarantine_after_deaths` times is
//! failed as quarantined, never handed on again. A replica that stops gives its documents back.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::chunk::chunk;
use super::extract::{media_type_of_name, normalize_media_type};
use super::Knowledge;
use crate::domain::field::{strip_refused, TextKind};
use crate::domain::knowledge::DocumentSource;
use crate::domain::BaseId;
use crate::domain::DocumentId;
use crate::outbound::describe;
use crate::store::{Ingested, LeasedDocument, Store, KNOWLEDGE_CHANNEL};
use crate::tools::http::Outbound;

/// Documents ingested at once per replica.
const CONCURRENCY: usize = 2;
/// How often pending documents are looked for without a notification.
const POLL: Duration = Duration::from_secs(1);
/// Time the documents in progress get to be given back when the ingester stops.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How the ingester works.
#[derive(Debug, Clone)]
pub struct IngestSettings {
    /// How long a lease on a document lasts without renewal.
    pub lease: Duration,
    /// How a document's text is read (the child process and its limits).
    pub extraction: super::Extraction,
    /// Deaths of the replicas ingesting a document after which it is failed as quarantined.
    pub quarantine_after_deaths: u32,
}

/// Ingests documents until stopped.
pub struct Ingester {
    store: Store,
    outbound: Arc<Outbound>,
    /// Embeds the chunks of bases with an embedding model.
    knowledge: Knowledge,
    settings: IngestSettings,
}

impl Ingester {
    /// An ingester fetching URLs through `outbound` (the tools' egress guard, size and time
    /// limits), leasing documents and reading them as `settings` say.
    pub fn new(
        store: Store,
        outbound: Arc<Outbound>,
        knowledge: Knowledge,
        settings: IngestSettings,
    ) -> Self {
        Self { store, outbound, knowledge, settings }
    }

    /// Ingest until `stop`; a document in progress then is left to its lease (another replica,
    /// or this one after a restart, takes it again).
    pub async fn run(self, stop: CancellationToken) {
        let this = Arc::new(self);
        let wake = this.store.waker(&[KNOWLEDGE_CHANNEL], stop.clone());
        let slots = Arc::new(Semaphore::new(CONCURRENCY));
        let mut tasks = JoinSet::new();
        while !stop.is_cancelled() {
            let free = slots.available_permits();
            if free > 0 {
                match this.store.lease_documents(free as i64, this.settings.lease).await {
                    Ok(documents) => {
                        for document in documents {
                            let Ok(permit) = slots.clone().try_acquire_owned() else { break };
                            let (this, stop) = (this.clone(), stop.clone());
                            tasks.spawn(async move {
                                this.ingest(document, &stop).await;
                                drop(permit);
                            });
                        }
                    }
                    Err(error) => tracing::warn!(%error, "knowledge: leasing documents failed; trying again"),
                }
            }
            while tasks.try_join_next().is_some() {}
            tokio::select! {
                () = stop.cancelled() => break,
                () = wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        // Each ingestion gives its document back when told to stop; wait for that a moment.
        let drained = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(STOP_GRACE, drained).await.is_err() {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
    }

    /// Ingest one leased document, renewing its lease meanwhile; the outcome is written only
    /// while the lease is still this attempt's.
    async fn ingest(&self, document: LeasedDocument, stop: &CancellationToken) {
        let (id, attempt) = (document.id, document.attempt);
        if i64::from(document.deaths) >= i64::from(self.settings.quarantine_after_deaths) {
            tracing::error!(document = %id, deaths = document.deaths, "knowledge: a document is quarantined: its replicas died ingesting it");
            let reason = format!(
                "quarantined: the replica ingesting it died {} times (its process ended or stopped renewing \
                 the lease); it is not handed to another replica",
                document.deaths
            );
            self.record(id, attempt, Err(reason)).await;
            return;
        }
        let work = self.prepare(&document);
        tokio::pin!(work);
        let lease = self.settings.lease;
        let mut renew = tokio::time::interval(lease / 3);
        renew.tick().await;
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                () = stop.cancelled() => {
                    if let Err(error) = self.store.release_document(DocumentId(id), attempt).await {
                        tracing::warn!(%error, document = %id, "knowledge: giving a document back failed; its lease will expire");
                    }
                    return;
                }
                _ = renew.tick() => match self.store.renew_document_lease(DocumentId(id), attempt, lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::info!(document = %id, "knowledge: the document was deleted or taken over; stopping");
                        return;
                    }
                    Err(error) => tracing::warn!(%error, "knowledge: renewing a document's lease failed"),
                },
            }
        };
        self.record(id, attempt, outcome).await;
    }

    async fn record(&self, id: uuid::Uuid, attempt: i32, outcome: Result<Ingested, String>) {
        let written = match &outcome {
            Ok(ingested) => self.store.finish_document(DocumentId(id), attempt, ingested).await,
            Err(reason) => self.store.fail_document(DocumentId(id), attempt, reason).await,
        };
        match (written, &outcome) {
            (Ok(true), Ok(ingested)) => {
                tracing::info!(document = %id, chunks = ingested.chunks.len(), "knowledge: document ready")
            }
            (Ok(true), Err(reason)) => tracing::info!(document = %id, %reason, "knowledge: document failed"),
            (Ok(false), _) => {
                tracing::info!(document = %id, "knowledge: the lease was lost; nothing written")
            }
            (Err(error), _) => {
                tracing::warn!(%error, document = %id, "knowledge: writing a document failed; it will be ingested again")
            }
        }
    }

    /// The document's chunks, or why it has none.
    async fn prepare(&self, document: &LeasedDocument) -> Result<Ingested, String> {
        let (media_type, bytes) = match (document.source, &document.url, &document.content) {
            (DocumentSource::Url, Some(url), _) => self.fetch(url).await?,
            (_, _, Some(content)) => (document.media_type.clone(), content.clone()),
            _ => return Err("the document has no content".to_owned()),
        };
        let chunking = document.chunking;
        let extracted = self.settings.extraction.extract(&media_type, bytes).await?;
        let prepared = tokio::task::spawn_blocking(move || {
            let chunks = chunk(&extracted.text, chunking, &crate::llm::estimate::count);
            if chunks.is_empty() {
                return Err("the document has no text".to_owned());
            }
            // The content's own title, as a title is stored: one line, no control characters.
            let title = extracted.title.map(|title| strip_refused(&title, TextKind::Line));
            Ok(Ingested { chunks, vectors: None, title: title.filter(|t| !t.trim().is_empty()) })
        });
        let mut ingested = prepared.await.map_err(|e| format!("ingestion failed: {e}"))??;
        if let Some(embedding) = &document.embedding {
            ingested.vectors = Some(self.vectors(document, embedding, &ingested).await?);
        }
        Ok(ingested)
    }

    /// The vectors of a document's chunks (their headings and text) by the base's model.
    async fn vectors(
        &self,
        document: &LeasedDocument,
        embedding: &str,
        ingested: &Ingested,
    ) -> Result<Vec<Vec<f32>>, String> {
        self.knowledge.vectors().await.map_err(|why| format!("vectors cannot be kept: {why}"))?;
        let texts: Vec<String> =
            ingested
                .chunks
                .iter()
                .map(|c| {
                    if c.heading.is_empty() {
                        c.text.clone()
                    } else {
                        format!("{}\n\n{}", c.heading, c.text)
                    }
                })
                .collect();
        let embedded = self
            .knowledge
            .embed(embedding, &texts)
            .await
            .map_err(|why| format!("embedding failed: {why}"))?;
        let dims = embedded.vectors.first().map_or(0, Vec::len) as i32;
        match document.dims {
            Some(expected) if expected != dims => {
                return Err(format!(
                    "the embedding model answered {dims} dimensions; the base's vectors have {expected}"
                ))
            }
            Some(_) => {}
            None => self
                .store
                .ensure_vector_index(BaseId(document.base_id), dims)
                .await
                .map_err(|e| e.to_string())?,
        }
        Ok(embedded.vectors)
    }

    /// A URL's media type and bytes (within the tools' response size limit and timeout).
    async fn fetch(&self, url: &str) -> Result<(String, Vec<u8>), String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
        let response = self.outbound.request(Method::GET, &parsed)?.send().await.map_err(describe)?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("fetching the URL answered HTTP {}", status.as_u16()));
        }
        let media_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(normalize_media_type)
            .filter(|m| m != "application/octet-stream")
            .or_else(|| media_type_of_name(parsed.path()).map(str::to_owned))
            .unwrap_or_else(|| "text/plain".to_owned());
        let limit = self.outbound.max_response_bytes;
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(describe)? {
            if bytes.len() + chunk.len() > limit {
                return Err(format!(
                    "the document at the URL is larger than {limit} bytes (AGENTD_TOOL_MAX_RESPONSE_BYTES)"
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((media_type, bytes))
    }
}

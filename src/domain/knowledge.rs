//! Knowledge bases: what a base is made of (its chunking, its embedding model), its documents'
//! states, how a crew refers to a base, and what a search finds. Plain data; the store keeps it,
//! `crate::knowledge` ingests and searches, the engine injects what a task's prompt finds.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::field::check_crew_name;
use super::ids::{BaseId, DocumentId};

/// Chunk sizes a base may ask for, in tokens.
pub const MIN_CHUNK_TOKENS: u32 = 16;
pub const MAX_CHUNK_TOKENS: u32 = 8192;
/// Hits a search or a crew's reference may ask for at most.
pub const MAX_K: u32 = 50;
/// Hits per base a task's prompt receives when its reference does not say.
pub const DEFAULT_K: u32 = 5;

/// How a base's documents are cut: at most `max_tokens` per chunk (cl100k tokens), the next
/// chunk of a section repeating the last `overlap` tokens of the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Chunking {
    #[schema(minimum = 16, maximum = 8192)]
    pub max_tokens: u32,
    /// Less than `max_tokens`.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 8191)]
    pub overlap: u32,
}

impl Default for Chunking {
    fn default() -> Self {
        Self { max_tokens: 256, overlap: 32 }
    }
}

impl Chunking {
    /// `Err` names what is wrong, for the `chunking` field.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(MIN_CHUNK_TOKENS..=MAX_CHUNK_TOKENS).contains(&self.max_tokens) {
            let message = format!("must be between {MIN_CHUNK_TOKENS} and {MAX_CHUNK_TOKENS}");
            return Err(("max_tokens", message));
        }
        if self.overlap >= self.max_tokens {
            return Err(("overlap", "must be less than max_tokens".to_owned()));
        }
        Ok(())
    }
}

/// A base's name: as a crew's (letters, digits, `-`, `_`, `.`).
pub fn check_base_name(name: &str) -> Result<(), String> {
    check_crew_name(name)
}

snake_case_enum! {
    /// Where a document is in its ingestion.
    #[strum(serialize_all = "snake_case")]
    pub enum DocumentStatus {
        /// Waiting for (or in) ingestion.
        Pending,
        /// Chunked and indexed: searches see it.
        Ready,
        /// Ingestion failed; `error` says why.
        Failed,
    }
}

impl DocumentStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

snake_case_enum! {
    /// How a document was given.
    #[strum(serialize_all = "snake_case")]
    pub enum DocumentSource {
        /// Text in a JSON body.
        Text,
        /// A URL fetched at ingestion.
        Url,
        /// A file uploaded as `multipart/form-data`.
        Upload,
    }
}

impl DocumentSource {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What embedding texts for a run cost: counted in the run's usage (as prompt tokens) and in its
/// split under the embedding model, though no chat call was made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmbeddingSpend {
    /// `<provider>/<model>`.
    pub model: String,
    pub tokens: u64,
    /// agentd counted the tokens (the provider sent none).
    pub estimated: bool,
    /// US dollars (0 for an unpriced model).
    pub cost_usd: f64,
}

impl EmbeddingSpend {
    /// `self` and `other` of the same model together.
    pub fn add(&mut self, other: &EmbeddingSpend) {
        self.tokens += other.tokens;
        self.estimated |= other.estimated;
        self.cost_usd += other.cost_usd;
    }
}

/// How a search ranked its hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Full-text search fused with vector similarity (reciprocal rank fusion).
    Hybrid,
    /// Vector similarity only.
    Vector,
    /// PostgreSQL full-text search only.
    Fulltext,
}

/// One chunk a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeHit {
    pub document_id: uuid::Uuid,
    pub chunk_id: uuid::Uuid,
    /// The document's title.
    pub title: String,
    /// The headings the chunk sits under, e.g. `Install > Requirements` (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub heading: String,
    pub text: String,
    /// Higher is better: the full-text rank, the cosine similarity, or the fused score (by
    /// `mode`); comparable within one search only.
    pub score: f64,
}

/// A crew's or an agent's use of a knowledge base: by name, or with how many hits a task's
/// prompt receives and the least score they must have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum KnowledgeRef {
    /// The base's name.
    Name(String),
    Detailed(KnowledgeUse),
}

/// A knowledge base and how a task's prompt uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeUse {
    /// The base's name.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// Hits appended to a task's prompt (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 50)]
    pub k: Option<u32>,
    /// Hits scoring less are left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
}

impl KnowledgeRef {
    /// The reference with its defaults filled in.
    pub fn resolved(&self) -> KnowledgeUse {
        match self {
            KnowledgeRef::Name(name) => KnowledgeUse { name: name.clone(), k: None, min_score: None },
            KnowledgeRef::Detailed(detail) => detail.clone(),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            KnowledgeRef::Name(name) => name,
            KnowledgeRef::Detailed(detail) => &detail.name,
        }
    }
}

impl KnowledgeUse {
    pub fn k(&self) -> u32 {
        self.k.unwrap_or(DEFAULT_K)
    }

    /// `Err` names the field (under the reference) and what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        check_base_name(&self.name).map_err(|message| ("name", message))?;
        if self.k.is_some_and(|k| !(1..=MAX_K).contains(&k)) {
            return Err(("k", format!("must be between 1 and {MAX_K}")));
        }
        if self.min_score.is_some_and(|score| !score.is_finite()) {
            return Err(("min_score", "must be a finite number".to_owned()));
        }
        Ok(())
    }
}

/// A knowledge base with its document and chunk counts.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeBase {
    pub id: BaseId,
    pub name: String,
    pub description: String,
    /// `<provider>/<model>` of its embedding model.
    pub embedding: Option<String>,
    pub chunking: Chunking,
    /// The length of its vectors, once its embedding model answered.
    pub dims: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub documents: i64,
    pub chunks: i64,
}

/// A document of a knowledge base.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = DocumentBody)]
pub struct KnowledgeDocument {
    #[schema(value_type = uuid::Uuid)]
    pub id: DocumentId,
    pub title: String,
    pub source: DocumentSource,
    /// The URL it was fetched from (`source: url`).
    pub url: Option<String>,
    /// Its media type (`text/markdown` for posted text; a URL's once fetched is not recorded).
    pub media_type: String,
    /// Bytes posted or uploaded (0 for a URL).
    pub bytes: i64,
    pub status: DocumentStatus,
    /// Why ingestion failed (`status: failed`).
    pub error: Option<String>,
    /// Chunks indexed (`status: ready`).
    pub chunks: i32,
    /// Tokens of those chunks (cl100k).
    pub tokens: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What posting a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    Created,
    /// The base holds this content already (a failed one is queued again).
    Existing,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reference_is_a_name_or_an_object_and_unknown_fields_are_refused() {
        let plain: KnowledgeRef = serde_json::from_value(json!("docs")).expect("a name");
        assert_eq!(plain.resolved(), KnowledgeUse { name: "docs".into(), k: None, min_score: None });
        let detailed: KnowledgeRef =
            serde_json::from_value(json!({"name": "docs", "k": 3, "min_score": 0.1})).expect("an object");
        assert_eq!(detailed.resolved().k(), 3);
        assert!(serde_json::from_value::<KnowledgeRef>(json!({"name": "d", "top": 3})).is_err());
        assert_eq!(plain.resolved().k(), DEFAULT_K);
    }

    #[test]
    fn chunking_and_references_are_checked() {
        assert!(Chunking::default().check().is_ok());
        assert_eq!(Chunking { max_tokens: 8, overlap: 0 }.check().map_err(|e| e.0), Err("max_tokens"));
        assert_eq!(Chunking { max_tokens: 64, overlap: 64 }.check().map_err(|e| e.0), Err("overlap"));
        let reference = |k, min_score| KnowledgeUse { name: "docs".into(), k, min_score };
        assert_eq!(reference(Some(0), None).check().map_err(|e| e.0), Err("k"));
        assert_eq!(reference(Some(51), None).check().map_err(|e| e.0), Err("k"));
        assert!(reference(Some(50), Some(0.5)).check().is_ok());
        let bad = KnowledgeUse { name: "a/b".into(), k: None, min_score: None };
        assert_eq!(bad.check().map_err(|e| e.0), Err("name"));
    }

    #[test]
    fn statuses_read_and_write_their_wire_names() {
        for status in [DocumentStatus::Pending, DocumentStatus::Ready, DocumentStatus::Failed] {
            assert_eq!(status.as_str().parse::<DocumentStatus>(), Ok(status));
            assert_eq!(serde_json::to_value(status).expect("serializes"), json!(status.as_str()));
        }
        assert_eq!("upload".parse::<DocumentSource>(), Ok(DocumentSource::Upload));
    }
}

//! Knowledge bases (`/v1/knowledge`): a tenant's bases by name, documents posted for ingestion
//! (text, a URL, or an uploaded file; the same content twice is one document), reading and
//! deleting them, and searching a base as a crew would. Kickoffs whose crews name a base the
//! tenant does not have are refused.

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::field::strip_refused;
use crate::domain::knowledge::{check_base_name, Chunking, DocumentSource, SearchMode, MAX_K};
use crate::domain::knowledge::{KnowledgeBase, KnowledgeDocument, Posted};
use crate::domain::validate::{check_text, parse_json, TextKind};
use crate::domain::DocumentId;
use crate::domain::TenantId;
use crate::domain::{Caller, CrewSpec, FieldError};
use crate::knowledge::{Found, KnowledgeError};
use crate::store::{Audit, NewBase, NewDocument};

/// Longest base description, in bytes.
const MAX_DESCRIPTION_BYTES: usize = 4096;
/// Longest document title, in characters.
const MAX_TITLE_CHARS: usize = 300;
/// Longest search query, in bytes.
pub const MAX_QUERY_CHARS: usize = 4096;
/// Documents a list shows at most.
const MAX_LISTED_DOCUMENTS: i64 = 1000;

/// The body of `POST /v1/knowledge`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaseBody {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    embedding: Option<String>,
    #[serde(default)]
    chunking: Option<Chunking>,
}

/// The JSON body of `POST /v1/knowledge/{name}/documents`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentBody {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

/// A file uploaded as a document.
#[derive(Debug)]
pub struct Upload {
    pub file_name: Option<String>,
    pub title: Option<String>,
    /// A supported media type (the HTTP edge refuses others).
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl Services {
    /// Create a knowledge base in the caller's tenant.
    pub async fn create_knowledge_base(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<KnowledgeBase> {
        let body: BaseBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        if let Err(message) = check_base_name(&body.name) {
            errors.push(FieldError::new("name", message));
        }
        if body.description.len() > MAX_DESCRIPTION_BYTES {
            errors.push(FieldError::new(
                "description",
                format!("must be at most {MAX_DESCRIPTION_BYTES} bytes"),
            ));
        } else if let Err(error) = check_text("description", &body.description, TextKind::Lines) {
            errors.push(error);
        }
        let chunking = body.chunking.unwrap_or_default();
        if let Err((field, message)) = chunking.check() {
            errors.push(FieldError::new(format!("chunking.{field}"), message));
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let dims = match &body.embedding {
            Some(embedding) => Some(self.probe_embedding(embedding).await?),
            None => None,
        };
        let base =
            NewBase { name: body.name, description: body.description, embedding: body.embedding, chunking };
        let created =
            self.store.create_knowledge_base(&caller.tenant, &base, audit).await?.ok_or_else(|| {
                ServiceError::Conflict(format!("a knowledge base named '{}' exists", base.name))
            })?;
        if let Some(dims) = dims {
            self.store.ensure_vector_index(created.id, dims).await?;
        }
        Ok(KnowledgeBase { dims, ..created })
    }

    /// An embedding model a base may name: `provider/model` of a configured provider whose
    /// model answers (the length of its vectors), where the database keeps vectors.
    async fn probe_embedding(&self, embedding: &str) -> ServiceResult<i32> {
        if !embedding.split_once('/').is_some_and(|(p, m)| !p.is_empty() && !m.is_empty()) {
            return Err(invalid("embedding", "must be '<provider>/<model>'"));
        }
        if let Err(why) = self.knowledge.vectors().await {
            let message = format!("this server's database cannot keep vectors: {why}");
            return Err(invalid("embedding", message));
        }
        let probe = self.knowledge.embed(embedding, &["agentd embedding probe".to_owned()]).await;
        match probe {
            Ok(embedded) => Ok(embedded.vectors.first().map_or(0, Vec::len) as i32),
            Err(why) => Err(invalid("embedding", format!("the model could not embed a probe text: {why}"))),
        }
    }

    pub async fn knowledge_bases(&self, caller: &Caller) -> ServiceResult<Vec<KnowledgeBase>> {
        Ok(self.store.knowledge_bases(&caller.tenant).await?)
    }

    pub async fn knowledge_base(&self, caller: &Caller, name: &str) -> ServiceResult<KnowledgeBase> {
        self.store.knowledge_base(&caller.tenant, name).await?.ok_or_else(|| no_base(name))
    }

    /// Delete a base with its documents, chunks and vectors.
    pub async fn delete_knowledge_base(
        &self,
        caller: &Caller,
        name: &str,
        audit: &Audit,
    ) -> ServiceResult<()> {
        let base = self.store.knowledge_base(&caller.tenant, name).await?;
        match self.store.delete_knowledge_base(&caller.tenant, name, audit).await? {
            true => {
                if let Some(base) = base.filter(|b| b.dims.is_some()) {
                    self.store.drop_vector_index(base.id).await?;
                }
                Ok(())
            }
            false => Err(no_base(name)),
        }
    }

    /// Post a document given as JSON: `{"title"?, "text"}` or `{"title"?, "url"}`.
    pub async fn post_json_document(
        &self,
        caller: &Caller,
        base: &str,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<(KnowledgeDocument, Posted)> {
        let body: DocumentBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let title = check_title(body.title)?;
        let document = match (body.text, body.url) {
            (Some(_), Some(_)) => return Err(invalid("", "give either 'text' or 'url', not both")),
            (None, None) => return Err(invalid("", "give the document's 'text' or its 'url'")),
            (Some(text), None) => {
                if text.trim().is_empty() {
                    return Err(invalid("text", "must not be empty"));
                }
                NewDocument {
                    title_given: title.is_some(),
                    title: title.unwrap_or_else(|| title_of_text(&text)),
                    source: DocumentSource::Text,
                    url: None,
                    media_type: "text/markdown".to_owned(),
                    digest: Sha256::digest(text.as_bytes()).to_vec(),
                    content: Some(text.into_bytes()),
                }
            }
            (None, Some(url)) => {
                let parsed =
                    reqwest::Url::parse(&url).map_err(|e| invalid("url", format!("not a URL: {e}")))?;
                self.tool_egress.check_url(&parsed).map_err(|e| invalid("url", e.to_string()))?;
                NewDocument {
                    title_given: title.is_some(),
                    title: title.unwrap_or_else(|| parsed.to_string()),
                    source: DocumentSource::Url,
                    url: Some(parsed.to_string()),
                    media_type: String::new(),
                    digest: Sha256::digest(format!("url:{parsed}").as_bytes()).to_vec(),
                    content: None,
                }
            }
        };
        self.post_document(caller, base, document, audit).await
    }

    /// Post an uploaded file.
    pub async fn post_upload(
        &self,
        caller: &Caller,
        base: &str,
        upload: Upload,
        audit: &Audit,
    ) -> ServiceResult<(KnowledgeDocument, Posted)> {
        if upload.bytes.is_empty() {
            return Err(invalid("file", "the file is empty"));
        }
        let given = check_title(upload.title)?;
        let title_given = given.is_some();
        let title = given
            .or(upload
                .file_name
                .map(|name| strip_refused(&name, TextKind::Line))
                .filter(|name| !name.trim().is_empty()))
            .unwrap_or_else(|| "Untitled".to_owned());
        let document = NewDocument {
            title_given,
            title: title.chars().take(MAX_TITLE_CHARS).collect(),
            source: DocumentSource::Upload,
            url: None,
            media_type: upload.media_type,
            digest: Sha256::digest(&upload.bytes).to_vec(),
            content: Some(upload.bytes),
        };
        self.post_document(caller, base, document, audit).await
    }

    async fn post_document(
        &self,
        caller: &Caller,
        base: &str,
        document: NewDocument,
        audit: &Audit,
    ) -> ServiceResult<(KnowledgeDocument, Posted)> {
        let record = self.knowledge_base(caller, base).await?;
        Ok(self.store.post_document(&caller.tenant, record.id, &document, audit).await?)
    }

    /// The base's documents, newest first.
    pub async fn knowledge_documents(
        &self,
        caller: &Caller,
        base: &str,
    ) -> ServiceResult<Vec<KnowledgeDocument>> {
        let record = self.knowledge_base(caller, base).await?;
        Ok(self.store.knowledge_documents(record.id, MAX_LISTED_DOCUMENTS).await?)
    }

    pub async fn knowledge_document(
        &self,
        caller: &Caller,
        base: &str,
        id: DocumentId,
    ) -> ServiceResult<KnowledgeDocument> {
        let record = self.knowledge_base(caller, base).await?;
        self.store.knowledge_document(record.id, id).await?.ok_or_else(|| no_document(id))
    }

    pub async fn delete_knowledge_document(
        &self,
        caller: &Caller,
        base: &str,
        id: DocumentId,
        audit: &Audit,
    ) -> ServiceResult<()> {
        let record = self.knowledge_base(caller, base).await?;
        match self.store.delete_document(&caller.tenant, record.id, id, audit).await? {
            true => Ok(()),
            false => Err(no_document(id)),
        }
    }

    /// Search a base as a crew's task would.
    pub async fn search_knowledge(
        &self,
        caller: &Caller,
        base: &str,
        query: &str,
        k: u32,
        mode: Option<SearchMode>,
    ) -> ServiceResult<Found> {
        if query.trim().is_empty() {
            return Err(invalid("q", "must not be empty"));
        }
        if query.contains('\0') {
            return Err(invalid("q", "must not contain the NUL character"));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(invalid("q", format!("must be at most {MAX_QUERY_CHARS} characters")));
        }
        if !(1..=MAX_K).contains(&k) {
            return Err(invalid("k", format!("must be between 1 and {MAX_K}")));
        }
        self.knowledge.search(&caller.tenant, base, query, k, mode).await.map_err(|error| match error {
            KnowledgeError::NoBase(name) => no_base(&name),
            KnowledgeError::Mode(why) => ServiceError::Conflict(format!("mode: {why}")),
            KnowledgeError::Embedding(why) => {
                ServiceError::Upstream(format!("the base's embedding model failed: {why}"))
            }
            KnowledgeError::Store(error) => error.into(),
        })
    }

    /// Every knowledge base the crew of a kickoff names must be the tenant's, and its memory's
    /// embedding model usable.
    pub(super) async fn check_knowledge_exists(
        &self,
        tenant: &TenantId,
        crew: &CrewSpec,
        prefix: &str,
    ) -> ServiceResult<()> {
        if let Some(embedding) = crew.memory.as_ref().and_then(|m| m.embedding.as_deref()) {
            if let Err(why) = self.knowledge.embedding_usable(embedding).await {
                return Err(invalid(&format!("{prefix}memory.embedding"), why));
            }
        }
        let refs = crew.knowledge_refs();
        if refs.is_empty() {
            return Ok(());
        }
        let mut names: Vec<String> = refs.iter().map(|(_, r)| r.name().to_owned()).collect();
        names.sort();
        names.dedup();
        let missing = self.store.missing_knowledge_bases(tenant, &names).await?;
        let errors: Vec<FieldError> = refs
            .into_iter()
            .filter(|(_, r)| missing.iter().any(|m| m == r.name()))
            .map(|(path, r)| {
                FieldError::new(format!("{prefix}{path}"), format!("no knowledge base named '{}'", r.name()))
            })
            .collect();
        match errors.is_empty() {
            true => Ok(()),
            false => Err(ServiceError::Invalid(errors)),
        }
    }
}

fn check_title(title: Option<String>) -> ServiceResult<Option<String>> {
    let Some(title) = title else { return Ok(None) };
    if title.trim().is_empty() {
        return Err(invalid("title", "must not be empty"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(invalid("title", format!("must be at most {MAX_TITLE_CHARS} characters")));
    }
    check_text("title", &title, TextKind::Line).map_err(|error| ServiceError::Invalid(vec![error]))?;
    Ok(Some(title.trim().to_owned()))
}

/// A text's title: its first `# ` heading, else its first line (shortened, without control
/// characters).
fn title_of_text(text: &str) -> String {
    let text = strip_refused(text, TextKind::Lines);
    let first = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("Untitled");
    let heading = text.lines().find_map(|line| line.trim().strip_prefix("# ")).map(str::trim);
    let title = heading.unwrap_or(first).trim_start_matches('#').trim();
    let mut short: String = title.chars().take(80).collect();
    if title.chars().count() > 80 {
        short.push('…');
    }
    short
}

fn no_base(name: &str) -> ServiceError {
    ServiceError::NotFound(format!("no knowledge base named '{name}'"))
}

fn no_document(id: DocumentId) -> ServiceError {
    ServiceError::NotFound(format!("no document {id} in this knowledge base"))
}

#[cfg(test)]
mod tests {
    use super::title_of_text;

    #[test]
    fn a_text_is_titled_by_its_first_heading_or_line() {
        assert_eq!(title_of_text("intro\n# Lumen Ledger\ntext"), "Lumen Ledger");
        assert_eq!(title_of_text("\n\n  First line here\nsecond"), "First line here");
        assert!(title_of_text(&"word ".repeat(40)).ends_with('…'));
    }
}

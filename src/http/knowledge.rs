//! Knowledge bases: `/v1/knowledge[/{name}[/documents[/{id}]|/search]]`. A document is posted
//! as JSON (`{"title"?, "text"}` or `{"title"?, "url"}`) or uploaded as `multipart/form-data`
//! (a `file` part, and a `title` part if wanted), answered 202 while it is ingested.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::{Audited, Authed};
use super::error::{ApiError, ApiResult, Problem};
use super::extract::{parse_json, ApiJson, ApiPath, ApiQuery};
use super::AppState;
use crate::domain::knowledge::{check_base_name, Chunking, KnowledgeHit, SearchMode, DEFAULT_K};
use crate::domain::knowledge::{KnowledgeBase, Posted};
use crate::domain::DocumentId;
use crate::knowledge::extract::{
    judge_content, media_type_of_content, media_type_of_name, normalize_media_type, SUPPORTED,
};
use crate::service::Upload;

/// Bytes a multipart body may carry besides its file (boundaries, part headers, a title).
const MULTIPART_OVERHEAD: usize = 64 * 1024;

/// A knowledge base.
#[derive(Debug, Serialize, ToSchema)]
pub struct KnowledgeBaseBody {
    pub name: String,
    pub description: String,
    /// `<provider>/<model>` of its embedding model (`null`: full-text search only).
    pub embedding: Option<String>,
    pub chunking: Chunking,
    /// Documents in any state.
    pub documents: i64,
    /// Chunks of its ready documents.
    pub chunks: i64,
    pub created_at: DateTime<Utc>,
}

impl From<KnowledgeBase> for KnowledgeBaseBody {
    fn from(base: KnowledgeBase) -> Self {
        Self {
            name: base.name,
            description: base.description,
            embedding: base.embedding,
            chunking: base.chunking,
            documents: base.documents,
            chunks: base.chunks,
            created_at: base.created_at,
        }
    }
}

/// Every knowledge base of the caller's tenant, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct KnowledgeBaseList {
    pub knowledge_bases: Vec<KnowledgeBaseBody>,
}

/// The body of `POST /v1/knowledge`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewKnowledgeBase {
    /// Letters, digits, `-`, `_`, `.` (1 to 100); unique in the tenant.
    #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")]
    name: String,
    /// Lines of text (line feeds and tabs, no other control characters).
    #[schema(max_length = 4096, pattern = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$")]
    description: Option<String>,
    /// `<provider>/<model>` of an embedding model (OpenAI-compatible `POST /embeddings`): chunks
    /// are embedded and the base is searched hybrid. Needs pgvector in the database.
    embedding: Option<String>,
    /// How documents are cut (default 256 tokens with 32 of overlap).
    chunking: Option<Chunking>,
}

pub use crate::domain::knowledge::KnowledgeDocument as DocumentBody;

/// A base's documents, newest first (at most 1,000).
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentList {
    pub documents: Vec<DocumentBody>,
}

/// A document given as JSON: its text, or a URL to fetch it from (through the egress guard,
/// within the tools' size and time limits).
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // The schema of what the service reads.
pub struct NewDocumentJson {
    /// Its first Markdown heading or line (text), or the URL, when absent.
    #[schema(
        min_length = 1,
        max_length = 300,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: Option<String>,
    /// Markdown or plain text (not with `url`).
    #[schema(min_length = 1)]
    text: Option<String>,
    /// An `http` or `https` URL (not with `text`).
    url: Option<String>,
}

/// A document uploaded as `multipart/form-data`: its parts `file` and `title`, no other (an
/// unknown part is a 422).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // The schema of what the handler reads.
pub struct NewDocumentUpload {
    /// The file: text, Markdown, HTML, JSON, CSV or PDF (by its part's `Content-Type`, else its file
    /// name's extension), at most `AGENTD_MAX_DOCUMENT_BYTES`.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// The file's name when absent.
    #[schema(
        min_length = 1,
        max_length = 300,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: Option<String>,
}

/// The query of a search.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for (as a task's prompt would be; not blank).
    #[param(min_length = 1, max_length = 4096, pattern = "\\S")]
    pub q: String,
    /// Hits, 1 to 50 (default 5).
    #[param(minimum = 1, maximum = 50)]
    pub k: Option<u32>,
    /// Rank by `fulltext`, `vector` or `hybrid` only (default: hybrid where the base has
    /// vectors, else full text; a mode the base cannot be searched by is a 409).
    pub mode: Option<SearchMode>,
}

/// What a search found.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    pub mode: SearchMode,
    pub hits: Vec<KnowledgeHit>,
}

/// Create a knowledge base.
#[utoipa::path(
    post, path = "/knowledge", tag = "knowledge",
    request_body = NewKnowledgeBase,
    responses(
        (status = 201, description = "Created", body = KnowledgeBaseBody,
            headers(("Location" = String, description = "The base's URL"))),
        (status = 409, description = "The tenant has a base of that name", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid name, description or chunking; an embedding model that cannot answer, or a database without pgvector", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_knowledge_base(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let base = state.services.create_knowledge_base(&caller, body, &audit).await?;
    let location = format!("/v1/knowledge/{}", base.name);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(KnowledgeBaseBody::from(base)))
        .into_response())
}

/// List the knowledge bases.
#[utoipa::path(get, path = "/knowledge", tag = "knowledge", responses((status = 200, body = KnowledgeBaseList)))]
pub async fn list_knowledge_bases(
    State(state): State<AppState>,
    Authed(caller): Authed,
) -> ApiResult<Json<KnowledgeBaseList>> {
    let bases = state.services.knowledge_bases(&caller).await?;
    Ok(Json(KnowledgeBaseList { knowledge_bases: bases.into_iter().map(Into::into).collect() }))
}

/// A knowledge base, with its document and chunk counts.
#[utoipa::path(
    get, path = "/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = KnowledgeBaseBody),
        (status = 400, description = "Malformed name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_knowledge_base(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<KnowledgeBaseBody>> {
    check_name(&name)?;
    Ok(Json(state.services.knowledge_base(&caller, &name).await?.into()))
}

/// Delete a knowledge base with its documents, chunks and vectors. Runs whose crews name it
/// fail at their next task that would search it.
#[utoipa::path(
    delete, path = "/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_knowledge_base(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    check_name(&name)?;
    state.services.delete_knowledge_base(&caller, &name, &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Add a document to a knowledge base.
///
/// Answered at once with the document `pending`; ingestion (fetch, extract, chunk, index) runs in
/// the background on any replica and survives a crash. The same content posted again (the same
/// text or file, or the same URL) answers the existing document (200), queued again if it had
/// failed.
#[utoipa::path(
    post, path = "/knowledge/{name}/documents", tag = "knowledge",
    params(("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    request_body(content(
        (NewDocumentJson = "application/json"),
        (NewDocumentUpload = "multipart/form-data"),
    )),
    responses(
        (status = 202, description = "Accepted for ingestion", body = DocumentBody,
            headers(("Location" = String, description = "The document's URL"))),
        (status = 200, description = "The base holds this content already", body = DocumentBody),
        (status = 400, description = "Malformed name, JSON or multipart body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than AGENTD_MAX_DOCUMENT_BYTES", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor multipart, or a file type that is not supported", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Empty text or file, text and url together, a URL that is not allowed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_document(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath(name): ApiPath<String>,
    request: Request,
) -> ApiResult<Response> {
    check_name(&name)?;
    let limit = state.config.max_document_bytes;
    let headers = request.headers().clone();
    declared_within(&headers, limit + MULTIPART_OVERHEAD)?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = normalize_media_type(content_type);
    let (document, posted) = if essence == "application/json" {
        let bytes = read_body(request.into_body(), limit).await?;
        let body: Value = parse_json(&bytes)?;
        state.services.post_json_document(&caller, &name, body, &audit).await?
    } else if essence == "multipart/form-data" {
        let boundary = multer::parse_boundary(content_type)
            .map_err(|e| ApiError::BadRequest(format!("malformed multipart body: {e}")))?;
        let upload = read_upload(request.into_body(), boundary, limit).await?;
        state.services.post_upload(&caller, &name, upload, &audit).await?
    } else {
        return Err(ApiError::UnsupportedMediaType(
            "post a document as JSON (Content-Type: application/json) or upload it as multipart/form-data"
                .into(),
        ));
    };
    let location = format!("/v1/knowledge/{name}/documents/{}", document.id);
    let status = match posted {
        Posted::Created => StatusCode::ACCEPTED,
        Posted::Existing => StatusCode::OK,
    };
    Ok((status, [(header::LOCATION, location)], Json(document)).into_response())
}

/// 413 at once when the declared length is over `limit`.
fn declared_within(headers: &HeaderMap, limit: usize) -> ApiResult<()> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared.is_some_and(|length| length > limit as u64) {
        true => Err(ApiError::PayloadTooLarge { limit }),
        false => Ok(()),
    }
}

async fn read_body(body: Body, limit: usize) -> ApiResult<Vec<u8>> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("cannot read the request body: {e}")))?;
        if bytes.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The `file` part (and `title`) of a multipart body, the file within `limit` bytes.
async fn read_upload(body: Body, boundary: String, limit: usize) -> ApiResult<Upload> {
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream((limit + MULTIPART_OVERHEAD) as u64)
            .for_field("file", limit as u64)
            .for_field("title", 4096),
    );
    let mut multipart = multer::Multipart::with_constraints(body.into_data_stream(), boundary, constraints);
    let mut file: Option<(Option<String>, Option<String>, Vec<u8>)> = None;
    let mut title = None;
    let malformed = |e: multer::Error| match e {
        multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. } => {
            ApiError::PayloadTooLarge { limit }
        }
        other => ApiError::BadRequest(format!("malformed multipart body: {other}")),
    };
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        match field.name() {
            Some("file") if file.is_none() => {
                let name = field.file_name().map(str::to_owned);
                let media_type = field.content_type().map(|m| normalize_media_type(m.as_ref()));
                let bytes = field.bytes().await.map_err(malformed)?;
                file = Some((name, media_type, bytes.to_vec()));
            }
            Some("title") => title = Some(field.text().await.map_err(malformed)?),
            Some(other) => {
                return Err(ApiError::validation(vec![crate::domain::FieldError::new(
                    other,
                    "unknown part: send 'file' (and 'title' if wanted)",
                )]))
            }
            None => return Err(ApiError::BadRequest("a multipart part has no name".into())),
        }
    }
    let Some((file_name, media_type, bytes)) = file else {
        return Err(ApiError::validation(vec![crate::domain::FieldError::new(
            "file",
            "the 'file' part is missing",
        )]));
    };
    let by_name = file_name.as_deref().and_then(media_type_of_name);
    let media_type = match media_type.filter(|m| m != "application/octet-stream") {
        Some(declared) => declared,
        None => by_name.unwrap_or_else(|| media_type_of_content(&bytes)).to_owned(),
    };
    if !SUPPORTED.contains(&media_type.as_str()) {
        return Err(ApiError::UnsupportedMediaType(format!(
            "documents of type '{media_type}' are not supported (supported: {})",
            SUPPORTED.join(", ")
        )));
    }
    if !bytes.is_empty() {
        judge_content(&media_type, &bytes).map_err(ApiError::UnsupportedMediaType)?;
    }
    Ok(Upload { file_name, title, media_type, bytes })
}

/// A knowledge base's documents.
#[utoipa::path(
    get, path = "/knowledge/{name}/documents", tag = "knowledge",
    params(("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$")),
    responses(
        (status = 200, body = DocumentList),
        (status = 400, description = "Malformed name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_documents(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<DocumentList>> {
    check_name(&name)?;
    let documents = state.services.knowledge_documents(&caller, &name).await?;
    Ok(Json(DocumentList { documents }))
}

/// A document: `pending`, `ready` (with its chunk and token counts) or `failed` (with the reason).
#[utoipa::path(
    get, path = "/knowledge/{name}/documents/{id}", tag = "knowledge",
    params(
        ("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        ("id" = Uuid, Path, description = "Document id"),
    ),
    responses(
        (status = 200, body = DocumentBody),
        (status = 400, description = "Malformed name or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base or document", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_document(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath((name, id)): ApiPath<(String, Uuid)>,
) -> ApiResult<Json<DocumentBody>> {
    check_name(&name)?;
    Ok(Json(state.services.knowledge_document(&caller, &name, DocumentId(id)).await?))
}

/// Delete a document with its chunks and vectors.
#[utoipa::path(
    delete, path = "/knowledge/{name}/documents/{id}", tag = "knowledge",
    params(
        ("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        ("id" = Uuid, Path, description = "Document id"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed name or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base or document", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_document(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Audited(audit): Audited,
    ApiPath((name, id)): ApiPath<(String, Uuid)>,
) -> ApiResult<StatusCode> {
    check_name(&name)?;
    state.services.delete_knowledge_document(&caller, &name, DocumentId(id), &audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Search a knowledge base as a crew's task would (its prompt as `q`): what the crew will see.
#[utoipa::path(
    get, path = "/knowledge/{name}/search", tag = "knowledge",
    params(
        ("name" = String, Path, description = "Knowledge base name", min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$"),
        SearchQuery,
    ),
    responses(
        (status = 200, body = SearchResult),
        (status = 400, description = "Malformed name or query", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such base", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The base cannot be searched by the mode asked for (no embedding model, or vector search off)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Empty or over-long query, k out of range", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The base's embedding model failed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn search(
    State(state): State<AppState>,
    Authed(caller): Authed,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> ApiResult<Json<SearchResult>> {
    check_name(&name)?;
    let k = query.k.unwrap_or(DEFAULT_K);
    let found = state.services.search_knowledge(&caller, &name, &query.q, k, query.mode).await?;
    Ok(Json(SearchResult { mode: found.mode, hits: found.hits }))
}

fn check_name(name: &str) -> ApiResult<()> {
    check_base_name(name)
        .map_err(|message| ApiError::BadRequest(format!("invalid knowledge base name: {message}")))
}

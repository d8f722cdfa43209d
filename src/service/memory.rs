//! Memories (`/v1/memories`): a tenant's items by scope, as crews' runs saved them or clients
//! posted them; listing and searching a scope, deleting an item, forgetting a whole scope.

use serde::Deserialize;
use serde_json::Value;

use super::{invalid, ServiceError, ServiceResult, Services, MAX_QUERY_CHARS};
use crate::domain::memory::{
    check_embedding, check_scope, MemoryItem, MemoryKind, MemoryVector, NewMemory, MAX_MEMORY_BYTES,
};
use crate::domain::validate::parse_json;
use crate::domain::MemoryId;
use crate::domain::{Caller, FieldError};
use crate::store::Audit;

/// Items a list shows when the request does not say, and at most.
pub const DEFAULT_MEMORY_LIMIT: u32 = 20;
pub const MAX_MEMORY_LIMIT: u32 = 200;

/// The body of `POST /v1/memories`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    scope: String,
    text: String,
    /// Save the item with its vector by this model (`<provider>/<model>`), for crews whose
    /// memory names it.
    #[serde(default)]
    embedding: Option<String>,
}

impl Services {
    /// The scope's items matching `query` (most relevant first), or the newest.
    pub async fn memories(
        &self,
        caller: &Caller,
        scope: &str,
        query: Option<&str>,
        limit: Option<u32>,
    ) -> ServiceResult<Vec<MemoryItem>> {
        let mut errors = Vec::new();
        if let Err(message) = check_scope(scope) {
            errors.push(FieldError::new("scope", message));
        }
        match query {
            Some(q) if q.trim().is_empty() => errors.push(FieldError::new("q", "must not be empty")),
            Some(q) if q.contains('\0') => {
                errors.push(FieldError::new("q", "must not contain the NUL character"))
            }
            Some(q) if q.chars().count() > MAX_QUERY_CHARS => {
                errors.push(FieldError::new("q", format!("must be at most {MAX_QUERY_CHARS} characters")))
            }
            _ => {}
        }
        let limit = limit.unwrap_or(DEFAULT_MEMORY_LIMIT);
        if !(1..=MAX_MEMORY_LIMIT).contains(&limit) {
            errors.push(FieldError::new("limit", format!("must be between 1 and {MAX_MEMORY_LIMIT}")));
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        Ok(self.store.memories(&caller.tenant, scope, query, i64::from(limit)).await?)
    }

    /// One of the tenant's items.
    pub async fn memory(&self, caller: &Caller, id: MemoryId) -> ServiceResult<MemoryItem> {
        self.store.memory(&caller.tenant, id).await?.ok_or_else(|| no_memory(id))
    }

    /// Seed a scope with a note: `{"scope", "text"}`.
    pub async fn create_memory(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<MemoryItem> {
        let body: NoteBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        if let Err(message) = check_scope(&body.scope) {
            errors.push(FieldError::new("scope", message));
        }
        if body.text.trim().is_empty() {
            errors.push(FieldError::new("text", "must not be empty"));
        } else if body.text.contains('\0') {
            errors.push(FieldError::new("text", "must not contain the NUL character"));
        } else if body.text.len() > MAX_MEMORY_BYTES {
            errors.push(FieldError::new("text", format!("must be at most {MAX_MEMORY_BYTES} bytes")));
        }
        if let Some(Err(message)) = body.embedding.as_deref().map(check_embedding) {
            errors.push(FieldError::new("embedding", message));
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let vector = match &body.embedding {
            Some(embedding) => {
                self.knowledge.embedding_usable(embedding).await.map_err(|why| invalid("embedding", why))?;
                let embedded = self.knowledge.embed(embedding, std::slice::from_ref(&body.text)).await;
                let values = embedded
                    .ok()
                    .and_then(|mut e| e.vectors.pop())
                    .ok_or_else(|| invalid("embedding", "the model could not embed the text"))?;
                Some(MemoryVector { model: embedding.clone(), values })
            }
            None => None,
        };
        let memory = NewMemory {
            id: crate::domain::MemoryId::new(),
            tenant: caller.tenant.clone(),
            scope: body.scope,
            kind: MemoryKind::Note,
            text: body.text,
            run_id: None,
            task: None,
            agent: None,
            vector,
        };
        Ok(self.store.create_memory(&memory, audit).await?)
    }

    /// Delete one item.
    pub async fn delete_memory(&self, caller: &Caller, id: MemoryId, audit: &Audit) -> ServiceResult<()> {
        match self.store.delete_memory(&caller.tenant, id, audit).await? {
            true => Ok(()),
            false => Err(no_memory(id)),
        }
    }

    /// Forget a scope: all its items, in one transaction; how many.
    pub async fn forget_memories(&self, caller: &Caller, scope: &str, audit: &Audit) -> ServiceResult<u64> {
        check_scope(scope).map_err(|message| invalid("scope", message))?;
        Ok(self.store.forget_memories(&caller.tenant, scope, audit).await?)
    }
}

fn no_memory(id: MemoryId) -> ServiceError {
    ServiceError::NotFound(format!("no memory {id}"))
}

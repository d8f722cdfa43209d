//! Knowledge in a run: when a task starts, its prompt is the query of the knowledge bases its crew
//! and agent use, and the hits are appended to the prompt as CrewAI appends them
//! (`{task_prompt}\n\n# Relevant Knowledge:\n{context}`). The retrieval is journaled with the
//! task's start (a side record of kind knowledge, holding the hits' text), so a resumed
//! run sees exactly the same context without searching again; each base's hits are announced as
//! `knowledge.retrieved`. The `search_knowledge` tool lets an agent search on its own questions.
//!
//! The engine does not know where knowledge lives: a [`KnowledgeSource`] (the composition root
//! hands one in) searches a tenant's bases.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::journal::{SideKind, Step};
use super::{Context, EngineError};
use crate::domain::crew::{CrewSpec, TaskSpec};
use crate::domain::event::{KnowledgeRetrieved, RetrievedChunk};
use crate::domain::knowledge::{EmbeddingSpend, KnowledgeHit, KnowledgeUse, DEFAULT_K, MAX_K};
use crate::domain::schema::CompiledSchema;
use crate::domain::TenantId;
use crate::domain::{ErrorKind, EventData};
use crate::tools::{CallInfo, Tool, ToolFuture, ToolInfo, SEARCH_KNOWLEDGE};

/// A search's future.
pub type SearchFuture<'a> = Pin<Box<dyn Future<Output = Result<Searched, String>> + Send + 'a>>;

/// What a search found, and what embedding its query cost (a base with vectors).
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    pub hits: Vec<KnowledgeHit>,
    pub spend: Option<EmbeddingSpend>,
}

/// Where a run's knowledge is searched: a tenant's bases, by name.
pub trait KnowledgeSource: Send + Sync {
    /// The `k` best hits of `query` in the base `base` of `tenant`; `Err` says why not (no such
    /// base, the database or the embedding model failed).
    fn search<'a>(&'a self, tenant: &'a TenantId, base: &'a str, query: &'a str, k: u32) -> SearchFuture<'a>;
}

/// The journal's record of one task's retrieval: per base, the hits as they were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Retrieved {
    base: String,
    hits: Vec<KnowledgeHit>,
}

/// The bases a task's prompt draws on: the crew's, then its agent's (a base named twice counts
/// once, the first reference's `k` and `min_score` winning).
pub(super) fn bases_of(crew: &CrewSpec, task: &TaskSpec) -> Vec<KnowledgeUse> {
    let agent = task.agent.as_deref().and_then(|name| crew.agent(name));
    let mut bases: Vec<KnowledgeUse> = Vec::new();
    for reference in crew.knowledge.iter().chain(agent.into_iter().flat_map(|a| &a.knowledge)) {
        let resolved = reference.resolved();
        if !bases.iter().any(|b| b.name == resolved.name) {
            bases.push(resolved);
        }
    }
    bases
}

/// The "Relevant Knowledge" section of `task`'s prompt (`None`: nothing to add), from the journal
/// when the task retrieved it before, else searched with `query` and journaled in `pending`.
pub(super) async fn recall(
    source: Option<&Arc<dyn KnowledgeSource>>,
    bases: &[KnowledgeUse],
    start: &super::TaskStart<'_>,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<Option<String>, EngineError> {
    let &super::TaskStart { task, agent, query } = start;
    if bases.is_empty() {
        return Ok(None);
    }
    let retrieved: Vec<Retrieved> = match ctx.recorded(SideKind::Knowledge, task)? {
        Some(retrieved) => retrieved,
        _ => {
            let source = source.ok_or_else(|| {
                EngineError::failed(ErrorKind::ToolError, "knowledge bases are not available on this server")
            })?;
            let tenant = ctx.journal.tenant();
            let mut retrieved = Vec::with_capacity(bases.len());
            for base in bases {
                let search = source.search(tenant, &base.name, query, base.k());
                let searched = ctx.guarded(search).await.ok_or(EngineError::Cancelled)?.map_err(|error| {
                    EngineError::failed(
                        ErrorKind::ToolError,
                        format!("knowledge base '{}': {error}", base.name),
                    )
                })?;
                // Counted with the retrieval's journal record: once, even if the run resumes.
                if let Some(spend) = &searched.spend {
                    pending.spend_embedding(task, agent, spend);
                }
                let hits = searched
                    .hits
                    .into_iter()
                    .filter(|hit| base.min_score.is_none_or(|min| hit.score >= min))
                    .collect();
                retrieved.push(Retrieved { base: base.name.clone(), hits });
            }
            journal(&retrieved, task, agent, pending);
            retrieved
        }
    };
    Ok(section(&retrieved))
}

/// Journal a retrieval (its hits' text included) and announce each base's hits.
fn journal(retrieved: &[Retrieved], task: &str, agent: &str, pending: &mut Step) {
    let bases: Vec<&str> = retrieved.iter().map(|r| r.base.as_str()).collect();
    pending.record(SideKind::Knowledge, (task, agent), json!({"bases": bases}), &retrieved);
    for entry in retrieved {
        let hits = entry
            .hits
            .iter()
            .map(|hit| RetrievedChunk { chunk_id: hit.chunk_id, score: hit.score })
            .collect();
        let event = KnowledgeRetrieved { task: task.to_owned(), base: entry.base.clone(), hits };
        pending.event(Some(task), Some(agent), EventData::KnowledgeRetrieved(event));
    }
}

/// The hits as the prompt shows them: each under its document's title (and headings).
fn section(retrieved: &[Retrieved]) -> Option<String> {
    let parts: Vec<String> = retrieved.iter().flat_map(|r| r.hits.iter()).map(format_hit).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn format_hit(hit: &KnowledgeHit) -> String {
    match hit.heading.is_empty() || hit.heading == hit.title {
        true => format!("## {}\n{}", hit.title, hit.text),
        false => format!("## {} ({})\n{}", hit.title, hit.heading, hit.text),
    }
}

/// `{task_prompt}\n\n# Relevant Knowledge:\n{context}`, as CrewAI's `Agent.execute_task`.
pub(super) fn with_knowledge(task_prompt: &str, section: &str) -> String {
    format!("{task_prompt}\n\n# Relevant Knowledge:\n{section}")
}

/// The `search_knowledge` tool of one run: the run's tenant's bases, those its crew and agent use
/// (any of the tenant's, by name, when they use none).
pub(super) struct SearchKnowledge {
    info: ToolInfo,
    source: Arc<dyn KnowledgeSource>,
    tenant: TenantId,
    bases: Vec<KnowledgeUse>,
}

impl SearchKnowledge {
    pub fn new(source: Arc<dyn KnowledgeSource>, tenant: &TenantId, bases: Vec<KnowledgeUse>) -> Self {
        let mut info = crate::tools::builtin_tools()
            .into_iter()
            .find(|tool| tool.name == SEARCH_KNOWLEDGE)
            .unwrap_or_else(|| ToolInfo {
                name: SEARCH_KNOWLEDGE.to_owned(),
                description: String::new(),
                parameters: json!({"type": "object"}),
                idempotent: true,
            });
        if !bases.is_empty() {
            let names: Vec<&str> = bases.iter().map(|b| b.name.as_str()).collect();
            info.description = format!("{} Bases: {}.", info.description, names.join(", "));
        }
        Self { info, source, tenant: tenant.to_owned(), bases }
    }

    /// The tool's arguments' schema, compiled once.
    pub fn schema() -> CompiledSchema {
        static SCHEMA: std::sync::LazyLock<Option<CompiledSchema>> = std::sync::LazyLock::new(|| {
            let info =
                crate::tools::builtin_tools().into_iter().find(|tool| tool.name == SEARCH_KNOWLEDGE)?;
            CompiledSchema::compile(&info.parameters).ok()
        });
        SCHEMA.clone().unwrap_or_else(super::mcp::object_schema)
    }

    async fn run(&self, arguments: Value) -> Result<String, String> {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default().trim();
        if query.is_empty() {
            return Err("'query' must not be empty".to_owned());
        }
        let named = arguments.get("base").and_then(Value::as_str).filter(|b| !b.is_empty());
        let k = arguments
            .get("k")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_K, |k| k.clamp(1, u64::from(MAX_K)) as u32);
        let bases: Vec<String> = match (named, self.bases.is_empty()) {
            (Some(base), true) => vec![base.to_owned()],
            (Some(base), false) if self.bases.iter().any(|b| b.name == base) => vec![base.to_owned()],
            (Some(base), false) => {
                let names: Vec<&str> = self.bases.iter().map(|b| b.name.as_str()).collect();
                return Err(format!(
                    "'{base}' is not one of this agent's knowledge bases ({})",
                    names.join(", ")
                ));
            }
            (None, false) => self.bases.iter().map(|b| b.name.clone()).collect(),
            (None, true) => return Err("name the knowledge base to search in 'base'".to_owned()),
        };
        let mut found = Vec::new();
        for base in &bases {
            // The tool's query embeddings are counted in /metrics, not in the run's spend: a
            // tool's result carries no usage.
            let searched = self.source.search(&self.tenant, base, query, k).await?;
            found.extend(searched.hits);
        }
        if found.is_empty() {
            return Ok(format!("Nothing found for '{query}' in {}.", bases.join(", ")));
        }
        let numbered: Vec<String> =
            found.iter().enumerate().map(|(i, hit)| format!("[{}] {}", i + 1, format_hit(hit))).collect();
        Ok(numbered.join("\n\n"))
    }
}

impl Tool for SearchKnowledge {
    fn kind(&self) -> (&'static str, Option<&str>) {
        ("knowledge", None)
    }

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value, _call: CallInfo) -> ToolFuture<'_> {
        Box::pin(self.run(arguments))
    }
}

/// Search sources by name, for tests: each base a fixed list of hits.
#[cfg(test)]
#[derive(Default)]
pub struct FixedKnowledge {
    pub bases: std::collections::HashMap<(String, String), Vec<KnowledgeHit>>,
}

#[cfg(test)]
impl KnowledgeSource for FixedKnowledge {
    fn search<'a>(
        &'a self,
        tenant: &'a TenantId,
        base: &'a str,
        _query: &'a str,
        k: u32,
    ) -> SearchFuture<'a> {
        let found = self.bases.get(&(tenant.to_owned().into_string(), base.to_owned())).cloned();
        Box::pin(async move {
            let hits = found.ok_or_else(|| format!("no knowledge base named '{base}'"))?;
            Ok(Searched { hits: hits.into_iter().take(k as usize).collect(), spend: None })
        })
    }
}

//! Memory in a run: a crew with `memory` recalls, when a task starts, the items of its scope most
//! relevant to the task's prompt (saved by earlier runs) and appends them to the prompt as
//! "Relevant memories from earlier runs"; when the task's answer is committed, an item (the task
//! and its answer) is saved with it, and with `extract` the facts and entities a side call of the
//! task's model finds in the answer. The recall is journaled with the task's start (a side record
//! of kind recall holding the items' text), the extraction as a conversation of its
//! own (`<task>#memory`), and the items go into the journal step that completes the task: a
//! resumed run recalls the same items, asks nothing twice, and never saves an item twice or loses
//! one.
//!
//! The engine does not know where memories live: a [`MemorySource`] (the composition root hands
//! one in) recalls a tenant's items; saving goes through the journal.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::effects::Purpose;
use super::journal::{SideKind, Step};
use super::repair::parse_lenient;
use super::turn::AgentTurn;
use super::{keys, Context, EngineError};
use crate::domain::event::{MemoryRetrieved, MemorySaved, RecalledMemory, SavedMemory};
use crate::domain::knowledge::EmbeddingSpend;
use crate::domain::memory::{
    cut, task_memory, MemoryItem, MemoryKind, MemorySpec, MemoryVector, NewMemory, MAX_EXTRACTED,
};
use crate::domain::TenantId;
use crate::domain::{ErrorKind, EventData, RunId, TaskOutput};
use crate::llm::ChatMessage;

/// A recall's future.
pub type RecallFuture<'a> = Pin<Box<dyn Future<Output = Result<Recalled, String>> + Send + 'a>>;
/// The future of the vectors of items to save, and what embedding them cost.
pub type VectorsFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(Vec<Vec<f32>>, EmbeddingSpend), String>> + Send + 'a>>;

/// What a recall found, and what embedding its query cost (a memory with a model).
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub items: Vec<MemoryItem>,
    pub spend: Option<EmbeddingSpend>,
}

/// What a recall looks for.
#[derive(Debug, Clone, Copy)]
pub struct Recall<'a> {
    pub tenant: &'a TenantId,
    pub scope: &'a str,
    /// The task's prompt.
    pub query: &'a str,
    pub k: u32,
    /// Items this run saved are not recalled.
    pub run: RunId,
    /// The embedding model of the crew's memory (`None`: by words and recency).
    pub embedding: Option<&'a str>,
}

/// Where a run's memories are recalled from: a tenant's scopes.
pub trait MemorySource: Send + Sync {
    /// The `k` items of the scope most relevant to the query, saved by other runs; `Err` says
    /// why not.
    fn recall<'a>(&'a self, recall: Recall<'a>) -> RecallFuture<'a>;

    /// The vectors of `texts` by `embedding` (`<provider>/<model>`), in order.
    fn embed<'a>(&'a self, embedding: &'a str, texts: &'a [String]) -> VectorsFuture<'a>;
}

/// Longest extracted fact or entity, in bytes.
const MAX_EXTRACTED_BYTES: usize = 1024;

/// The extraction side call's system prompt.
const EXTRACT_SYSTEM: &str = "You pick out what is worth remembering from a task's answer for later \
    tasks: standalone facts (each understandable without the answer) and the entities it names \
    (people, organisations, products, places) with what the answer says of them. Reply with JSON \
    only: {\"facts\": [\"...\"], \"entities\": [{\"name\": \"...\", \"type\": \"...\", \
    \"description\": \"...\"}]}. Empty lists when there is nothing worth keeping.";

/// The "Relevant memories from earlier runs" section of `task`'s prompt (`None`: nothing to add),
/// from the journal when the task recalled before, else recalled with `query` and journaled in
/// `pending`.
pub(super) async fn recall(
    source: Option<&Arc<dyn MemorySource>>,
    memory: &MemorySpec,
    scope: &str,
    start: &super::TaskStart<'_>,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<Option<String>, EngineError> {
    let &super::TaskStart { task, agent, query } = start;
    let items: Vec<MemoryItem> = match ctx.recorded(SideKind::Recall, task)? {
        Some(items) => items,
        _ => {
            let source = source.ok_or_else(|| {
                EngineError::failed(ErrorKind::ToolError, "memory is not available on this server")
            })?;
            let (tenant, run) = (ctx.journal.tenant(), ctx.journal.run_id());
            let embedding = memory.embedding.as_deref();
            let recall = source.recall(Recall { tenant, scope, query, k: memory.k, run, embedding });
            let recalled = ctx.guarded(recall).await.ok_or(EngineError::Cancelled)?.map_err(|error| {
                EngineError::failed(ErrorKind::ToolError, format!("memory scope '{scope}': {error}"))
            })?;
            // Counted with the recall's journal record: once, even if the run resumes.
            if let Some(spend) = &recalled.spend {
                pending.spend_embedding(task, agent, spend);
            }
            let items = recalled.items;
            journal(&items, scope, task, agent, pending);
            items
        }
    };
    Ok(section(&items))
}

/// Journal a recall (the items' text included) and announce it.
fn journal(items: &[MemoryItem], scope: &str, task: &str, agent: &str, pending: &mut Step) {
    pending.record(SideKind::Recall, (task, agent), json!({"scope": scope}), &items);
    let memories = items.iter().map(|item| RecalledMemory { id: item.id, score: item.score }).collect();
    let event = MemoryRetrieved { task: task.to_owned(), scope: scope.to_owned(), memories };
    pending.event(Some(task), Some(agent), EventData::MemoryRetrieved(event));
}

/// The items as the prompt shows them, oldest first (the order they happened in).
fn section(items: &[MemoryItem]) -> Option<String> {
    let mut ordered: Vec<&MemoryItem> = items.iter().collect();
    ordered.sort_by_key(|item| item.created_at);
    let parts: Vec<String> =
        ordered.iter().map(|item| format!("- {}", item.text.replace('\n', "\n  "))).collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// `{task_prompt}\n\n# Relevant memories from earlier runs:\n{items}`.
pub(super) fn with_memories(task_prompt: &str, section: &str) -> String {
    format!("{task_prompt}\n\n# Relevant memories from earlier runs:\n{section}")
}

/// Save what the completed task leaves: its item, and with `extract` the facts and entities the
/// turn's model finds in the answer (a failed extraction saves the task's item alone).
#[allow(clippy::too_many_arguments)]
pub(super) async fn remember(
    source: Option<&Arc<dyn MemorySource>>,
    memory: &MemorySpec,
    scope: &str,
    description: &str,
    turn: &AgentTurn,
    output: &TaskOutput,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<(), EngineError> {
    let item = |kind: MemoryKind, text: String| NewMemory {
        id: crate::domain::MemoryId::new(),
        tenant: ctx.journal.tenant().to_owned(),
        scope: scope.to_owned(),
        kind,
        text,
        run_id: Some(ctx.journal.run_id()),
        task: Some(turn.task.clone()),
        agent: Some(turn.agent.clone()),
        vector: None,
    };
    let mut items = vec![item(MemoryKind::Task, task_memory(description, &output.raw))];
    if memory.extract {
        match extract(description, turn, output, ctx, pending).await {
            Ok(found) => items.extend(found.into_iter().map(|(kind, text)| item(kind, text))),
            Err(EngineError::Failed { kind: ErrorKind::LlmError, message }) => {
                tracing::warn!(task = %turn.task, %message, "memory extraction failed: the task's item alone is saved");
            }
            Err(other) => return Err(other),
        }
    }
    if let (Some(embedding), Some(source)) = (&memory.embedding, source) {
        let texts: Vec<String> = items.iter().map(|item| item.text.clone()).collect();
        let embedded = ctx.guarded(source.embed(embedding, &texts)).await.ok_or(EngineError::Cancelled)?;
        match embedded {
            Ok((vectors, spend)) if vectors.len() == items.len() => {
                pending.spend_embedding(&turn.task, &turn.agent, &spend);
                for (item, values) in items.iter_mut().zip(vectors) {
                    item.vector = Some(MemoryVector { model: embedding.clone(), values });
                }
            }
            Ok((_, spend)) => {
                pending.spend_embedding(&turn.task, &turn.agent, &spend);
                tracing::warn!(task = %turn.task, "the embedding model answered the wrong number of vectors: the memories are saved without")
            }
            Err(message) => {
                tracing::warn!(task = %turn.task, %message, "memory embedding failed: the memories are saved without vectors (recalled by words)");
            }
        }
    }
    let saved = items.iter().map(|item| SavedMemory { id: item.id.0, kind: item.kind }).collect();
    let event = MemorySaved { task: turn.task.clone(), scope: scope.to_owned(), memories: saved };
    pending.event(Some(&turn.task), Some(&turn.agent), EventData::MemorySaved(event));
    pending.memories.extend(items);
    Ok(())
}

/// The facts and entities of the answer: the journaled extraction's, or a new side call's.
async fn extract(
    description: &str,
    turn: &AgentTurn,
    output: &TaskOutput,
    ctx: &Context<'_>,
    pending: &mut Step,
) -> Result<Vec<(MemoryKind, String)>, EngineError> {
    let conversation = keys::memory(&turn.task);
    let recorded = ctx.snapshot.conversation(&conversation);
    let reply = match recorded.iter().rev().find(|m| m.role == crate::llm::Role::Assistant) {
        Some(reply) => reply.content.clone().unwrap_or_default(),
        None => {
            let question = format!("The task was:\n{description}\n\nIts answer:\n{}", output.raw);
            let messages = vec![ChatMessage::system(EXTRACT_SYSTEM), ChatMessage::user(question)];
            turn.side_call(&turn.model, &conversation, messages, Purpose::Memory, ctx, pending).await?
        }
    };
    Ok(read_extraction(&reply))
}

#[derive(Deserialize)]
struct Entity {
    name: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    description: String,
}

/// The facts and entities of an extraction's reply (nothing from a reply that is not the JSON
/// asked for), at most [`MAX_EXTRACTED`], each within [`MAX_EXTRACTED_BYTES`].
fn read_extraction(reply: &str) -> Vec<(MemoryKind, String)> {
    // A model may say something before its JSON ("Sure: {...}").
    let from_brace = || reply.find('{').and_then(|at| parse_lenient(&reply[at..]));
    let Some(parsed) = parse_lenient(reply).filter(Value::is_object).or_else(from_brace) else {
        return Vec::new();
    };
    let facts = parsed.get("facts").and_then(Value::as_array).into_iter().flatten();
    let facts = facts.filter_map(Value::as_str).map(|fact| (MemoryKind::Fact, fact.trim().to_owned()));
    let entities = parsed.get("entities").and_then(Value::as_array).into_iter().flatten();
    let entities = entities.filter_map(|e| serde_json::from_value::<Entity>(e.clone()).ok()).map(|e| {
        let name = e.name.trim();
        let text = match (e.kind.trim(), e.description.trim()) {
            ("", "") => name.to_owned(),
            ("", description) => format!("{name}: {description}"),
            (kind, "") => format!("{name} ({kind})"),
            (kind, description) => format!("{name} ({kind}): {description}"),
        };
        (MemoryKind::Entity, text)
    });
    facts
        .chain(entities)
        .filter(|(_, text)| !text.is_empty())
        .map(|(kind, text)| (kind, cut(&text, MAX_EXTRACTED_BYTES)))
        .take(MAX_EXTRACTED)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extraction_reads_facts_and_entities_and_ignores_the_rest() {
        let reply = r#"Sure: {"facts": ["Ada prefers tea", "", 3], "entities": [
            {"name": "Ada", "type": "person", "description": "the customer"},
            {"name": "Kettle 2"}, {"type": "no name"}]}"#;
        let found = read_extraction(reply);
        assert_eq!(
            found,
            [
                (MemoryKind::Fact, "Ada prefers tea".to_owned()),
                (MemoryKind::Entity, "Ada (person): the customer".to_owned()),
                (MemoryKind::Entity, "Kettle 2".to_owned()),
            ]
        );
        assert!(read_extraction("nothing to keep").is_empty());
        let many = format!(r#"{{"facts": [{}]}}"#, vec!["\"f\""; 50].join(","));
        assert_eq!(read_extraction(&many).len(), MAX_EXTRACTED);
    }

    #[test]
    fn the_section_lists_items_oldest_first() {
        let at = |s: i64| chrono::DateTime::from_timestamp(s, 0).expect("time");
        let item = |text: &str, s: i64| MemoryItem {
            id: uuid::Uuid::nil(),
            scope: "s".into(),
            kind: MemoryKind::Task,
            text: text.into(),
            run_id: None,
            task: None,
            agent: None,
            created_at: at(s),
            score: 0.0,
        };
        let section = section(&[item("newer", 20), item("older\nline", 10)]).expect("a section");
        assert_eq!(section, "- older\n  line\n- newer");
        assert_eq!(section_of_none(), None);
        assert!(with_memories("Do it", &section)
            .starts_with("Do it\n\n# Relevant memories from earlier runs:\n- older"));
    }

    fn section_of_none() -> Option<String> {
        section(&[])
    }
}

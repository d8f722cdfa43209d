//! Threads: a tenant's conversations of runs. A kickoff that names a thread joins it; its first
//! task sees the thread's history (the earlier runs' inputs and final outputs, oldest first,
//! "Conversation so far"), and what happens when another run of the thread has not ended yet is the
//! kickoff's `multitask_strategy`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{RunId, RunStatus};
use crate::domain::{TenantId, ThreadId};

/// Earlier runs a thread's run sees when its kickoff does not say (`history_runs`), and at most.
pub const DEFAULT_HISTORY_RUNS: u32 = 10;
pub const MAX_HISTORY_RUNS: u32 = 100;

/// The heading of a thread's history in a first task's context.
pub const HISTORY_HEADING: &str = "Conversation so far (the earlier runs of this thread, oldest first):";

/// What a kickoff into a thread does while another run of the thread has not ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refuse the kickoff (409).
    Reject,
    /// Queue the new run behind the thread's unfinished runs (status `waiting`); it starts when
    /// they have ended.
    #[default]
    Enqueue,
    /// Cancel the thread's unfinished runs (they stay, with what they did) and start the new one
    /// once they have stopped.
    Interrupt,
    /// Cancel the thread's unfinished runs and delete them once they have stopped; then start the
    /// new one.
    Rollback,
}

/// A kickoff's place in a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadJoin {
    pub thread_id: Uuid,
    pub strategy: MultitaskStrategy,
    /// How many earlier runs its first task sees (at most [`MAX_HISTORY_RUNS`]).
    pub history_runs: u32,
}

/// The thread a protocol's conversation id (an A2A `contextId`, an AG-UI `threadId`) stands for
/// in `tenant` when it is not the id of one of the tenant's threads: the first 128 bits of the
/// SHA-256 of the tenant, the protocol and the id. The same conversation of the same tenant is
/// always the same thread, and no two tenants' conversations share one, whatever id they give
/// (another tenant's thread id included).
pub fn conversation_thread(tenant: &TenantId, protocol: &str, conversation: &str) -> ThreadId {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{tenant}\n{protocol}\n{conversation}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    ThreadId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// Whether a thread has a run that has not ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Every run of the thread has ended (or it has none).
    Idle,
    /// A run of the thread is queued, waiting, running, awaiting input or being cancelled.
    Busy,
}

/// A run of a thread, as the thread lists it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ThreadRun {
    #[schema(value_type = Uuid)]
    pub id: RunId,
    pub status: RunStatus,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A thread.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Thread {
    pub id: Uuid,
    /// Free-form data kept with the thread (`GET /v1/threads?metadata=` finds threads by it).
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    pub status: ThreadStatus,
    pub created_at: DateTime<Utc>,
    /// When a run last joined the thread (or it was created).
    pub updated_at: DateTime<Utc>,
    /// Its runs, oldest first: the newest 100 (`GET /v1/threads/{id}` only; absent in lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<ThreadRun>>,
}

/// The runs a thread's page shows at most.
pub const MAX_THREAD_RUNS_SHOWN: i64 = 100;

/// An earlier run of a thread as its history shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PastRun {
    pub inputs: Map<String, Value>,
    /// Its final output's text.
    pub output: String,
}

/// The thread history a run's first task sees: the earlier runs (oldest first) with their inputs
/// and final outputs, in at most `max_bytes` (the oldest runs are left out first; a single run
/// that does not fit is cut). `None` when there is nothing to show.
pub fn render_history(runs: &[PastRun], max_bytes: usize) -> Option<String> {
    let entries: Vec<String> = runs
        .iter()
        .map(|run| {
            let inputs = Value::Object(run.inputs.clone()).to_string();
            format!("Inputs: {inputs}\nOutput: {}", run.output.trim())
        })
        .collect();
    let budget = max_bytes.saturating_sub(HISTORY_HEADING.len() + 2);
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for entry in entries.iter().rev() {
        let cost = entry.len() + 2;
        if used + cost > budget {
            if kept.is_empty() {
                // The newest run alone is over the limit: its beginning, cut.
                let cut = super::memory::cut(entry, budget.saturating_sub(2));
                return (!cut.is_empty()).then(|| format!("{HISTORY_HEADING}\n\n{cut}"));
            }
            break;
        }
        used += cost;
        kept.push(entry);
    }
    if kept.is_empty() {
        return None;
    }
    kept.reverse();
    Some(format!("{HISTORY_HEADING}\n\n{}", kept.join("\n\n")))
}

/// One page of threads, newest first.
#[derive(Debug)]
pub struct ThreadPage {
    pub threads: Vec<Thread>,
    /// The id to pass as `before` for the next page; `None` on the last page.
    pub next_before: Option<Uuid>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn past(topic: &str, output: &str) -> PastRun {
        PastRun { inputs: json!({ "topic": topic }).as_object().cloned().unwrap(), output: output.to_owned() }
    }

    #[test]
    fn a_conversation_is_a_thread_of_its_tenant_only() {
        let id = "0195f0c2-0000-7000-8000-000000000001";
        let a = conversation_thread(&"team-a".into(), "ag_ui", id);
        assert_eq!(a, conversation_thread(&"team-a".into(), "ag_ui", id), "stable");
        assert_ne!(a, conversation_thread(&"team-b".into(), "ag_ui", id), "per tenant");
        assert_ne!(a, conversation_thread(&"team-a".into(), "a2a", id), "per protocol");
        assert_ne!(a.to_string(), id, "never the id it was given");
        // Threads made before keep being found: the derivation does not change.
        let pinned = conversation_thread(&"default".into(), "a2a", "ctx-1");
        assert_eq!(pinned.to_string(), "7c95e207-d0af-8808-8e29-7e0dbb11d2fe");
    }

    #[test]
    fn history_lists_runs_oldest_first() {
        let history =
            render_history(&[past("a", "first answer"), past("b", "second answer ")], 4096).unwrap();
        assert_eq!(
            history,
            format!(
                "{HISTORY_HEADING}\n\nInputs: {{\"topic\":\"a\"}}\nOutput: first answer\n\n\
                 Inputs: {{\"topic\":\"b\"}}\nOutput: second answer"
            )
        );
        assert_eq!(render_history(&[], 4096), None);
    }

    #[test]
    fn the_oldest_runs_are_dropped_first_to_fit() {
        let runs = [past("a", &"x".repeat(100)), past("b", &"y".repeat(100)), past("c", "zz")];
        let history = render_history(&runs, 300).unwrap();
        assert!(history.len() <= 300, "{}", history.len());
        assert!(!history.contains("\"a\""), "{history}");
        assert!(history.contains("\"b\"") && history.contains("\"c\""), "{history}");
        assert!(history.find("\"b\"") < history.find("\"c\""));
    }

    #[test]
    fn a_single_run_over_the_limit_is_cut() {
        let history = render_history(&[past("a", &"x".repeat(10_000))], 500).unwrap();
        assert!(history.len() <= 500, "{}", history.len());
        assert!(history.starts_with(HISTORY_HEADING) && history.ends_with('…'), "{history}");
    }
}

//! How big a crew and a run may get. Defaults that a real crew never meets (CrewAI crews have a
//! handful of agents and tasks), so that a hostile or runaway request cannot make the service
//! run out of memory or lose its leases. Each is a server setting (see docs/configuration.md).
//!
//! Over a [`CrewLimits`] limit at kickoff (or when a crew is registered): a 422 naming the limit.
//! Over a [`RunLimits`] limit during a run: the run fails with `error.kind = "limit"`.

/// What one crew spec may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrewLimits {
    /// Agents of a crew (`AGENTD_MAX_AGENTS`).
    pub max_agents: usize,
    /// Tasks of a crew (`AGENTD_MAX_TASKS`).
    pub max_tasks: usize,
    /// Tools a crew declares (`AGENTD_MAX_TOOLS`); also the most one agent or task may name.
    pub max_tools: usize,
}

impl Default for CrewLimits {
    fn default() -> Self {
        Self { max_agents: 50, max_tasks: 100, max_tools: 100 }
    }
}

/// What one run may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// Bytes of one model reply, its text and tool-call arguments (`AGENTD_MAX_REPLY_BYTES`).
    pub max_reply_bytes: usize,
    /// Bytes of one task's output, which later tasks get as context
    /// (`AGENTD_MAX_TASK_OUTPUT_BYTES`).
    pub max_task_output_bytes: usize,
    /// Bytes of text one run journals in all: messages, tool calls and results, outputs
    /// (`AGENTD_MAX_RUN_JOURNAL_BYTES`).
    pub max_journal_bytes: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            max_reply_bytes: 1024 * 1024,
            max_task_output_bytes: 512 * 1024,
            max_journal_bytes: 64 * 1024 * 1024,
        }
    }
}

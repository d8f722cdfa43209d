//! The journal's keys. A conversation and a tool call are named after where they happen, so that
//! a resumed run finds what it already did: an agent's conversation is its task's name (or, for a
//! coworker, the key of the delegating call), and everything else derives from it here.
//!
//! | key | what |
//! |---|---|
//! | `<conversation>#<iteration>/<call id>` | a native tool call of the reply at that iteration (also a coworker's conversation) |
//! | `<conversation>#<iteration>/react` | the ReAct action of that reply |
//! | `<conversation>#<iteration>/guardrail` | the guardrail judge's conversation about that reply |
//! | `<conversation>#plan` | the planner's conversation |
//! | `<conversation>#step-<n>` | step `n` (from 1) of a planned task |
//! | `<task>#memory` | the conversation extracting facts and entities of the task's answer |
//! | `#judge` | an evaluation's judge's conversation about the run's final answer |

pub use crate::domain::journal::JournalKey;

/// A task's own conversation: the task's name.
pub fn task(name: &str) -> JournalKey {
    JournalKey::from(name)
}

/// A native tool call, by the provider's call id.
pub fn native_call(conversation: &str, iteration: u32, call_id: &str) -> JournalKey {
    format!("{conversation}#{iteration}/{call_id}").into()
}

/// The ReAct action of a reply (one per reply).
pub fn react_call(conversation: &str, iteration: u32) -> JournalKey {
    format!("{conversation}#{iteration}/react").into()
}

/// The judge's conversation about the answer of `iteration`.
pub fn guardrail(conversation: &str, iteration: u32) -> JournalKey {
    format!("{conversation}#{iteration}/guardrail").into()
}

/// The planner's conversation.
pub fn plan(conversation: &str) -> JournalKey {
    format!("{conversation}#plan").into()
}

/// The conversation of step `number` (from 1) of a planned task.
pub fn step(conversation: &str, number: usize) -> JournalKey {
    format!("{conversation}#step-{number}").into()
}

/// The conversation that extracted the facts and entities of a task's answer.
pub fn memory(task: &str) -> JournalKey {
    format!("{task}#memory").into()
}

/// The conversation of an evaluation's judge (one per run: it judges the final answer).
pub fn judge() -> JournalKey {
    JournalKey::from("#judge")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys are stored in journals: they must not change shape.
    #[test]
    fn keys_keep_their_journaled_shape() {
        assert_eq!(native_call("t", 2, "call_1"), "t#2/call_1");
        assert_eq!(react_call("t", 3), "t#3/react");
        assert_eq!(guardrail("t", 1), "t#1/guardrail");
        assert_eq!(plan("t"), "t#plan");
        assert_eq!(step("t#2/c", 4), "t#2/c#step-4");
        assert_eq!(memory("t"), "t#memory");
        assert_eq!(judge(), "#judge");
    }
}

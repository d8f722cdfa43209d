//! The engine: executes a crew's tasks with its agents. Per task, the agent loop calls the model,
//! reads its reply (native tool calls or ReAct text), runs tools and feeds observations back until
//! a final answer. Every step goes through a [`Journal`](journal::Journal), so a run can be rebuilt
//! and continued after a crash; the engine itself never touches SQL or HTTP-server types.

pub mod journal;
pub mod prompts;
pub mod react;
pub mod repair;

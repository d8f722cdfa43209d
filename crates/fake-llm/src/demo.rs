//! The built-in fake model's script (`agentd serve --fake-llm`): it shows the agent loop at work
//! and says in every answer that it is a fake.

use super::{Script, ScriptError};

/// What the built-in fake model (`--fake-llm`) answers to every prompt.
const FAKE_LLM_ANSWER: &str =
    "This answer comes from agentd's built-in FAKE model (--fake-llm), not a real LLM. \
     Configure a provider (OPENAI_API_KEY, or AGENTD_CONFIG) to get real answers.";

/// The built-in fake model's script, which shows the agent loop at work: an agent offered tools
/// calls the first one once (arguments from its schema's examples) and answers with its result;
/// a planner gets a one-step plan (the task's answer then quotes the step's), a guardrail judge
/// passes every answer. ReAct agents (their
/// system prompt asks for "Final Answer:") get the same in ReAct text. Every answer says it is
/// a fake's.
fn rules() -> serde_json::Value {
    let after_tool = format!("{FAKE_LLM_ANSWER} The {{{{first_tool}}}} tool answered: {{{{tool_result}}}}");
    let after_observation = format!("{FAKE_LLM_ANSWER} The tool answered: {{{{1}}}}");
    let observation = serde_json::json!({"regex": "(?s)Observation:\\s*(.*)"});
    let plan = r#"{"steps": [{"description": "Do the task as asked (a plan from the FAKE model)", "expected_tool": null}]}"#;
    let verdict = r#"{"pass": true, "reason": "the FAKE model passes every guardrail"}"#;
    // The last turn of a planned task is asked for its answer from its steps' results.
    let results = serde_json::json!({"regex": "(?s)Their results:\n(.*)\n\nGive the final answer"});
    let from_steps = format!("{FAKE_LLM_ANSWER} From the plan's steps: {{{{1}}}}");
    serde_json::json!({"rules": [
        {"name": "planner", "when": {"system": "You plan how to perform a task"}, "reply": {"text": plan}},
        {"name": "guardrail", "when": {"system": "strict reviewer"}, "reply": {"text": verdict}},
        {"name": "react answer from the plan", "when": {"system": "Final Answer:", "message": results},
         "reply": {"react": {"final_answer": from_steps}, "delay_ms": 100}},
        {"name": "answer from the plan", "when": {"message": results}, "reply": {"text": from_steps, "delay_ms": 100}},
        {"name": "native tool call", "when": {"tools": true, "call": 1},
         "reply": {"tool_calls": [{"name": "$first_tool", "arguments": "$example"}], "delay_ms": 100}},
        {"name": "native answer after the tool", "when": {"tools": true, "tool_result": {"regex": "(?s).*"}},
         "reply": {"text": after_tool, "delay_ms": 100}},
        {"name": "react tool call", "when": {"system": "Tool Name:", "call": 1},
         "reply": {"react": {"action": "$first_tool", "input": "$example"}, "delay_ms": 100}},
        {"name": "react answer after the tool", "when": {"system": "Tool Name:", "message": observation},
         "reply": {"react": {"final_answer": after_observation}, "delay_ms": 100}},
        {"name": "react", "when": {"system": "Final Answer:"},
         "reply": {"text": format!("Final Answer: {FAKE_LLM_ANSWER}"), "delay_ms": 200}},
        {"name": "native", "reply": {"text": FAKE_LLM_ANSWER, "delay_ms": 200}},
    ]})
}

/// The script of `--fake-llm`.
pub fn script() -> Result<Script, ScriptError> {
    Script::from_value(rules())
}

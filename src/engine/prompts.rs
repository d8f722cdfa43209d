//! The words the engine says to models, after CrewAI's prompts: the role-playing system prompt,
//! the ReAct format, the task prompt with its context, and the nudges (parse errors, the forced
//! final answer, reflection after native tool calls, the switch to text tools, summaries).

use super::toolbox::DelegateMode;
use crate::llm::ToolDefinition;
use crate::tools::ToolInfo;

/// The agent's identity.
pub fn role_playing(role: &str, goal: &str, backstory: &str) -> String {
    format!("You are {role}. {backstory}\nYour personal goal is: {goal}")
}

/// The ReAct instructions listing the tools (appended to the system prompt in text mode).
pub fn react_tools(tools: &[ToolDefinition]) -> String {
    let described: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                "Tool Name: {}\nTool Arguments: {}\nTool Description: {}",
                t.name, t.parameters, t.description
            )
        })
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "\nYou ONLY have access to the following tools, and should NEVER make up tools that are not listed here:\n\n\
         {}\n\n\
         IMPORTANT: Use the following format in your response:\n\n\
         ```\n\
         Thought: you should always think about what to do\n\
         Action: the action to take, only one name of [{}], just the name, exactly as it's written.\n\
         Action Input: the input to the action, just a simple JSON object, enclosed in curly braces, using \" to wrap keys and values.\n\
         Observation: the result of the action\n\
         ```\n\n\
         Once all necessary information is gathered, return the following format:\n\n\
         ```\n\
         Thought: I now know the final answer\n\
         Final Answer: the final answer to the original input question\n\
         ```",
        described.join("\n\n"),
        names.join(", ")
    )
}

/// The answer format for an agent without tools in text mode.
pub const REACT_NO_TOOLS: &str = "\nTo give my best complete final answer to the task respond using the exact following format:\n\n\
    Thought: I now can give a great answer\n\
    Final Answer: Your final answer must be the great and the most complete as possible, it must be outcome described.\n\n\
    I MUST use these formats, my job depends on it!";

/// The user prompt of a task.
pub fn task_prompt(description: &str, expected_output: &str, context: Option<&str>, react: bool) -> String {
    let mut prompt = format!(
        "\nCurrent Task: {description}\n\nThis is the expected criteria for your final answer: {expected_output}\n\
         you MUST return the actual complete content as the final answer, not a summary."
    );
    if let Some(context) = context.filter(|c| !c.trim().is_empty()) {
        prompt.push_str(&format!("\n\nThis is the context you're working with:\n{context}"));
    }
    prompt.push_str(
        "\n\nBegin! This is VERY important to you, use the tools available and give your best Final Answer, your job depends on it!",
    );
    if react {
        prompt.push_str("\n\nThought:");
    }
    prompt
}

/// The outputs of earlier tasks, as context.
pub fn context_block(outputs: &[(&str, &str)]) -> String {
    outputs.iter().map(|(_, output)| *output).collect::<Vec<_>>().join("\n\n----------\n\n")
}

/// Fed back when a ReAct reply could not be parsed.
pub fn parse_error_feedback(error: &str, tools: &[ToolDefinition]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "{error}\n\nI MUST either use a tool (use one at time) OR give my best final answer not both at the same time. \
         When responding, I must use the following format:\n\n\
         ```\nThought: you should always think about what to do\n\
         Action: the action to take, should be one of [{}]\n\
         Action Input: the input to the action, dictionary enclosed in curly braces\n\
         Observation: the result of the action\n```\n\
         This Thought/Action/Action Input/Result can repeat N times. Once I know the final answer, I must return the following format:\n\n\
         ```\nThought: I now can give a great answer\n\
         Final Answer: Your final answer must be the great and the most complete as possible, it must be outcome described\n```",
        names.join(", ")
    )
}

/// Asked once `max_iter` is reached: answer now, without tools.
pub const FORCE_FINAL_ANSWER: &str = "Now it's time you MUST give your absolute best final answer. \
    You'll ignore all previous instructions, stop using any tools, and just return your absolute BEST Final answer.";

/// Sent after native tool results.
pub const REFLECT_ON_RESULTS: &str =
    "Analyze the tool result. If requirements are met, provide the Final Answer. \
    Otherwise, call the next tool. Deliver only the answer without meta-commentary.";

/// The observation that follows a ReAct action.
pub fn observation(result: &str) -> String {
    format!("Observation: {result}")
}

/// How the switch to text tools begins (the engine recognises it when rebuilding a conversation).
pub const FALLBACK_NOTICE: &str = "Native tool calling is not available.";

/// Sent when the provider rejected native tools mid-run: continue in text.
pub fn fallback_to_react(tools: &[ToolDefinition]) -> String {
    format!(
        "{FALLBACK_NOTICE} From now on, use tools by writing text in the format below.{}",
        react_tools(tools)
    )
}

/// The system prompt of the summariser.
pub const SUMMARIZER_SYSTEM: &str = "You are a helpful assistant that simply summarizes the content.";

/// Ask for a summary of part of a conversation.
pub fn summarize(text: &str) -> String {
    format!("Summarize the following text, make sure to include all the important information: {text}")
}

/// The message that replaces the summarised conversation.
pub fn summary(merged: &str) -> String {
    format!("This is a summary of our conversation so far:\n{merged}")
}

/// Fed back when a final answer does not match the task's output schema.
pub fn schema_feedback(errors: &[String]) -> String {
    format!(
        "Your final answer must be valid JSON matching the required schema, but it has these problems:\n- {}\n\
         Give your Final Answer again as JSON only, fixing every problem.",
        errors.join("\n- ")
    )
}

/// Added to the task prompt when the output must follow a JSON schema.
pub fn schema_instruction(schema: &serde_json::Value) -> String {
    format!("\n\nYour final answer MUST be a JSON object (no prose around it) that matches this JSON schema:\n{schema}")
}

/// The manager of the hierarchical process.
pub const MANAGER_ROLE: &str = "Crew Manager";
pub const MANAGER_GOAL: &str = "Manage the team to complete the task in the best way possible.";
pub const MANAGER_BACKSTORY: &str = "You are a seasoned manager with a knack for getting the best out of your team.\n\
    You are also known for your ability to delegate work to the right people, and to ask the right questions to get \
    the best out of your team.\nEven though you don't perform tasks by yourself, you have a lot of experience in the \
    field, which allows you to properly evaluate the work of your team members.";

/// What a coworker is asked to deliver.
pub const COWORKER_EXPECTED_OUTPUT: &str =
    "Your best answer to your coworker asking you this, accounting for the context shared.";

/// The delegation tools (CrewAI's "Delegate work to coworker" and "Ask question to coworker").
pub fn delegation_tool(mode: DelegateMode, coworkers: &str) -> ToolInfo {
    let (name, verb, field) = match mode {
        DelegateMode::Work => ("delegate_work_to_coworker", "Delegate a specific task", "task"),
        DelegateMode::Question => ("ask_question_to_coworker", "Ask a specific question", "question"),
    };
    let what = if mode == DelegateMode::Work {
        "the task you want them to do"
    } else {
        "the question you have for them"
    };
    ToolInfo {
        name: name.to_owned(),
        description: format!(
            "{verb} to one of the following coworkers: {coworkers}\nThe input to this tool should be the coworker, \
             {what}, and ALL necessary context to execute it, they know nothing about it, so share absolutely \
             everything you know, don't reference things but instead explain them."
        ),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                field: {"type": "string", "description": format!("The {field} for the coworker")},
                "context": {"type": "string", "description": "Everything the coworker needs to know"},
                "coworker": {"type": "string", "description": "The role of the coworker"}
            },
            "required": [field, "context", "coworker"]
        }),
        idempotent: true,
    }
}

/// The system prompt of the guardrail judge.
pub const GUARDRAIL_SYSTEM: &str =
    "You are a strict reviewer. You check whether an answer satisfies a rule, \
    and reply with JSON only: {\"pass\": true|false, \"reason\": \"one sentence\"}.";

/// Ask the judge about one answer.
pub fn guardrail_question(task: &str, rule: &str, answer: &str) -> String {
    format!("The task was:\n{task}\n\nThe rule the answer must satisfy:\n{rule}\n\nThe answer:\n{answer}\n\nDoes the answer satisfy the rule?")
}

/// The system prompt of an evaluation's judge.
pub const JUDGE_SYSTEM: &str =
    "You are a strict evaluator. You decide whether a crew's final answer meets a rubric, \
    and reply with JSON only: {\"pass\": true|false, \"score\": a number from 0 to 1, \"reason\": \"one sentence\"}.";

/// Ask an evaluation's judge about a case's final answer.
pub fn judge_question(inputs: &str, rubric: &str, answer: &str) -> String {
    format!("The crew's inputs were:\n{inputs}\n\nThe rubric:\n{rubric}\n\nThe crew's final answer:\n{answer}\n\nDoes the answer meet the rubric?")
}

/// Fed back when the answer failed its guardrail.
pub fn guardrail_feedback(reason: &str) -> String {
    format!("Your final answer did not pass the required check: {reason}\nGive your Final Answer again, fixing this.")
}

/// The planner's system prompt.
pub const PLANNER_SYSTEM: &str =
    "You plan how to perform a task. Break it into a short ordered list of concrete \
    steps, each small enough to do on its own. Reply with JSON only: \
    {\"steps\": [{\"description\": \"...\", \"expected_tool\": \"tool name or null\"}]}.";

/// Ask for a plan of a task.
pub fn planner_prompt(task: &str, tools: &[String]) -> String {
    let tools = if tools.is_empty() { "none".to_owned() } else { tools.join("\n") };
    format!("The task:\n{task}\n\nThe tools available:\n{tools}\n\nGive the plan.")
}

/// The system prompt of a step's executor (before the agent's identity).
pub const STEP_SYSTEM: &str = "You execute exactly one step of a larger plan. Do this step only, using \
    tools when needed, then give its result as your final answer.";

/// The user prompt of one step.
pub fn step_prompt(step: &str, earlier: &[String], expected_tool: Option<&str>) -> String {
    let mut prompt = format!("Current step: {step}");
    if !earlier.is_empty() {
        let results: Vec<String> =
            earlier.iter().enumerate().map(|(i, r)| format!("Step {}: {r}", i + 1)).collect();
        prompt.push_str(&format!("\n\nResults of the earlier steps:\n{}", results.join("\n")));
    }
    if let Some(tool) = expected_tool {
        prompt.push_str(&format!("\n\nThis step is expected to use the tool '{tool}'."));
    }
    prompt
}

/// The task prompt once the plan's steps are done.
pub fn plan_final_prompt(task: &str, results: &str) -> String {
    format!("{task}\n\nYour plan's steps are done. Their results:\n{results}\n\nGive the final answer for the task.")
}

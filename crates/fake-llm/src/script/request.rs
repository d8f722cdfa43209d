//! What rules read of a chat-completions request.

use serde_json::Value;

/// The parts of a chat-completions request that rules look at.
#[derive(Debug)]
pub struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    /// The names of the native tools offered.
    pub tools: Vec<&'a str>,
    /// Each native tool's parameters schema, in the order of `tools`.
    pub parameters: Vec<&'a Value>,
    pub stream: bool,
}

/// One message: its role and its text (the text parts of a multi-part content, joined).
#[derive(Debug)]
pub struct Message<'a> {
    pub role: &'a str,
    pub text: String,
}

impl<'a> Request<'a> {
    /// Read a request body; missing or odd fields read as empty.
    pub fn read(body: &'a Value) -> Self {
        let messages = body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| Message {
                        role: m["role"].as_str().unwrap_or_default(),
                        text: text_of(&m["content"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let named: Vec<(&str, &Value)> = body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| {
                        let name = t.pointer("/function/name").and_then(Value::as_str)?;
                        Some((name, &t["function"]["parameters"]))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (tools, parameters) = named.into_iter().unzip();
        Self {
            model: body["model"].as_str().unwrap_or_default(),
            messages,
            tools,
            parameters,
            stream: body["stream"].as_bool().unwrap_or(false),
        }
    }

    /// Does the request offer native tools?
    pub fn offers_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    /// Which call of its conversation this is: one more than the assistant turns it carries (a
    /// retry of the same request keeps its position).
    pub fn position(&self) -> u32 {
        let turns = self.messages.iter().filter(|m| m.role == "assistant").count();
        u32::try_from(turns).unwrap_or(u32::MAX - 1) + 1
    }

    /// The text of the last user or tool message.
    pub fn last_message(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == "user" || m.role == "tool")
            .map_or("", |m| m.text.as_str())
    }

    /// The text of the last tool result, if the request holds one.
    pub fn last_tool_result(&self) -> Option<&str> {
        self.messages.iter().rev().find(|m| m.role == "tool").map(|m| m.text.as_str())
    }

    /// The role of the last message.
    pub fn last_role(&self) -> &str {
        self.messages.last().map_or("", |m| m.role)
    }

    /// The first tool offered: the first native tool, else the first `Tool Name:` line of the
    /// messages (the ReAct prompt's tool list, in the system prompt or in the switch to ReAct).
    pub fn first_tool(&self) -> Option<&str> {
        self.tools.first().copied().or_else(|| {
            self.messages
                .iter()
                .filter(|m| m.role == "system" || m.role == "user")
                .flat_map(|m| m.text.lines())
                .find_map(|line| line.trim().strip_prefix("Tool Name:").map(str::trim))
                .filter(|name| !name.is_empty())
        })
    }

    /// The parameters schema of the tool `name`: a native tool's, else the `Tool Arguments:` line
    /// that follows its `Tool Name:` line in a ReAct prompt.
    pub fn parameters_of(&self, name: &str) -> Option<Value> {
        if let Some(at) = self.tools.iter().position(|tool| *tool == name) {
            return self.parameters.get(at).map(|schema| (*schema).clone());
        }
        self.messages.iter().filter(|m| m.role == "system" || m.role == "user").find_map(|m| {
            let mut lines = m.text.lines();
            lines.find(|line| line.trim().strip_prefix("Tool Name:").map(str::trim) == Some(name))?;
            let arguments = lines.next()?.trim().strip_prefix("Tool Arguments:")?;
            serde_json::from_str(arguments.trim()).ok()
        })
    }

    /// A short stable id of the conversation: a hash of its first system and first user message.
    pub fn conversation(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        for role in ["system", "user"] {
            self.messages.iter().find(|m| m.role == role).map(|m| m.text.as_str()).hash(&mut hasher);
        }
        format!("{:016x}", hasher.finish())
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

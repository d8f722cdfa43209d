//! What a rule answers: a message, tool calls, ReAct text or an HTTP error, with placeholders
//! filled from the request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use super::request::Request;
use super::spec::{ErrorSpec, ReactSpec, ReplySpec, ToolCallSpec, UsageField};
use super::FakeReply;

/// The longest delay a reply may ask for.
const MAX_DELAY_MS: u64 = 600_000;

/// What a rule answers, with its placeholders still to fill.
#[derive(Debug)]
pub(super) struct ReplyTemplate {
    kind: ReplyKind,
    delay: Duration,
    chunk_delay: Duration,
    /// Prompt and completion tokens reported; `None`: no usage at all.
    usage: Option<(u32, u32)>,
    headers: Vec<(String, String)>,
}

#[derive(Debug)]
enum ReplyKind {
    /// An assistant message: text, native tool calls, or both.
    Message { text: Option<Template>, calls: Vec<CallTemplate> },
    /// ReAct text: an action, or a final answer.
    React { thought: Option<Template>, step: ReactStep },
    /// An HTTP error.
    Error { status: u16, body: ErrorBody },
}

#[derive(Debug)]
enum ReactStep {
    Action { tool: ToolName, input: Arguments },
    Final(Template),
}

#[derive(Debug)]
enum ErrorBody {
    /// The script's body, sent as it is (a string as plain text).
    Literal(Value),
    /// `{"error": {"message", "type", "code"}}`, as OpenAI sends.
    Standard { message: Template, kind: String, code: Option<String> },
}

#[derive(Debug)]
struct CallTemplate {
    id: Option<String>,
    name: ToolName,
    arguments: Arguments,
}

#[derive(Debug)]
enum ToolName {
    /// `$first_tool`: the first tool the request offers.
    First,
    Named(String),
}

#[derive(Debug)]
enum Arguments {
    /// A JSON value whose strings are templates, sent serialised.
    Json(JsonTemplate),
    /// The arguments text itself (which may be deliberately broken JSON).
    Text(Template),
    /// `"$example"`: an instance of the called tool's parameters schema.
    Example,
}

#[derive(Debug)]
enum JsonTemplate {
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
    Other(Value),
}

/// What placeholders are filled from.
pub(super) struct Ctx<'a, 'r> {
    pub(super) groups: Vec<String>,
    pub(super) request: &'a Request<'r>,
    pub(super) ids: &'a AtomicU64,
}

impl ReplyTemplate {
    /// Check a reply; errors start with the path below `reply` (".text: ...").
    pub(super) fn build(spec: ReplySpec, groups: usize) -> Result<Self, String> {
        if spec.delay_ms > MAX_DELAY_MS || spec.chunk_delay_ms > MAX_DELAY_MS {
            return Err(format!(": delay_ms and chunk_delay_ms must be at most {MAX_DELAY_MS}"));
        }
        let mut headers = Vec::new();
        for (name, value) in spec.headers {
            if axum::http::HeaderName::try_from(name.as_str()).is_err()
                || axum::http::HeaderValue::try_from(value.as_str()).is_err()
            {
                return Err(format!(".headers: '{name}' is not a valid header name and value"));
            }
            headers.push((name, value));
        }
        let kinds =
            [spec.text.is_some() || spec.tool_calls.is_some(), spec.react.is_some(), spec.error.is_some()];
        let kind = match (spec.text, spec.tool_calls, spec.react, spec.error) {
            _ if kinds.iter().filter(|k| **k).count() != 1 => {
                return Err(
                    ": give exactly one of text (optionally with tool_calls), tool_calls, react or error"
                        .into(),
                )
            }
            (text, calls, None, None) => {
                let text = text
                    .map(|t| Template::parse(&t, groups))
                    .transpose()
                    .map_err(|e| format!(".text: {e}"))?;
                let calls = calls
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                    .map(|(i, call)| {
                        CallTemplate::build(call, groups).map_err(|e| format!(".tool_calls[{i}]{e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if text.is_none() && calls.is_empty() {
                    return Err(".tool_calls: must hold at least one call".into());
                }
                ReplyKind::Message { text, calls }
            }
            (_, _, Some(react), _) => build_react(react, groups).map_err(|e| format!(".react{e}"))?,
            (_, _, _, Some(error)) => build_error(error, groups).map_err(|e| format!(".error{e}"))?,
        };
        let usage = match spec.usage {
            None | Some(UsageField::Sent(true)) => Some((10, 5)),
            Some(UsageField::Sent(false)) => None,
            Some(UsageField::Counts(u)) => Some((u.prompt_tokens, u.completion_tokens)),
        };
        Ok(Self {
            kind,
            delay: Duration::from_millis(spec.delay_ms),
            chunk_delay: Duration::from_millis(spec.chunk_delay_ms),
            usage,
            headers,
        })
    }

    pub(super) fn render(&self, ctx: &Ctx<'_, '_>) -> Result<FakeReply, String> {
        let usage = self.usage.map(|(prompt, completion)| {
            json!({
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": u64::from(prompt) + u64::from(completion),
            })
        });
        let (status, body) = match &self.kind {
            ReplyKind::Message { text, calls } => {
                let content = text.as_ref().map(|t| t.render(ctx));
                let calls = calls.iter().map(|call| call.render(ctx)).collect::<Result<Vec<_>, _>>()?;
                let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
                let mut message = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                (200, completion(ctx, message, finish, usage))
            }
            ReplyKind::React { thought, step } => {
                let text = react_text(thought.as_ref(), step, ctx)?;
                (200, completion(ctx, json!({"role": "assistant", "content": text}), "stop", usage))
            }
            ReplyKind::Error { status, body } => (*status, body.render(ctx)),
        };
        Ok(FakeReply {
            status,
            headers: self.headers.clone(),
            body,
            delay: self.delay,
            chunk_delay: self.chunk_delay,
            cut_after: None,
            gate: None,
        })
    }
}

/// A chat completion as OpenAI sends it, with an id of its own.
fn completion(ctx: &Ctx<'_, '_>, message: Value, finish_reason: &str, usage: Option<Value>) -> Value {
    let created =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut body = json!({
        "id": format!("chatcmpl-fake-{}", ctx.ids.fetch_add(1, Ordering::Relaxed) + 1),
        "object": "chat.completion",
        "created": created,
        "model": ctx.request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    body
}

fn build_react(spec: ReactSpec, groups: usize) -> Result<ReplyKind, String> {
    let template =
        |text: &str, field: &str| Template::parse(text, groups).map_err(|e| format!(".{field}: {e}"));
    let thought = spec.thought.as_deref().map(|t| template(t, "thought")).transpose()?;
    let step = match (spec.action, spec.final_answer) {
        (Some(action), None) => {
            let input = spec.input.unwrap_or_else(|| json!({}));
            ReactStep::Action {
                tool: ToolName::parse(action),
                input: Arguments::build(input, groups).map_err(|e| format!(".input{e}"))?,
            }
        }
        (None, Some(answer)) if spec.input.is_none() => ReactStep::Final(template(&answer, "final_answer")?),
        (None, Some(_)) => return Err(": input belongs to an action, not to a final_answer".into()),
        _ => return Err(": give exactly one of action (with input) or final_answer".into()),
    };
    Ok(ReplyKind::React { thought, step })
}

fn build_error(spec: ErrorSpec, groups: usize) -> Result<ReplyKind, String> {
    if !(400..=599).contains(&spec.status) {
        return Err(".status: must be an HTTP error status, 400 to 599".into());
    }
    let body = match spec.body {
        Some(body) if spec.message.is_none() && spec.kind.is_none() && spec.code.is_none() => {
            ErrorBody::Literal(body)
        }
        Some(_) => return Err(": body replaces message, type and code; give one or the others".into()),
        None => {
            let message = spec.message.unwrap_or_else(|| format!("scripted error {}", spec.status));
            ErrorBody::Standard {
                message: Template::parse(&message, groups).map_err(|e| format!(".message: {e}"))?,
                kind: spec.kind.unwrap_or_else(|| "fake_error".into()),
                code: spec.code,
            }
        }
    };
    Ok(ReplyKind::Error { status: spec.status, body })
}

fn react_text(thought: Option<&Template>, step: &ReactStep, ctx: &Ctx<'_, '_>) -> Result<String, String> {
    let thought = thought.map(|t| t.render(ctx));
    Ok(match step {
        ReactStep::Action { tool, input } => {
            let tool = tool.render(ctx)?;
            let thought = thought.unwrap_or_else(|| format!("I should use the {tool} tool."));
            format!("Thought: {thought}\nAction: {tool}\nAction Input: {}", input.render(ctx, &tool))
        }
        ReactStep::Final(answer) => {
            let thought = thought.unwrap_or_else(|| "I now know the final answer".into());
            format!("Thought: {thought}\nFinal Answer: {}", answer.render(ctx))
        }
    })
}

impl ErrorBody {
    fn render(&self, ctx: &Ctx<'_, '_>) -> Value {
        match self {
            ErrorBody::Literal(body) => body.clone(),
            ErrorBody::Standard { message, kind, code } => {
                json!({"error": {"message": message.render(ctx), "type": kind, "code": code}})
            }
        }
    }
}

impl CallTemplate {
    fn build(spec: ToolCallSpec, groups: usize) -> Result<Self, String> {
        if spec.name.trim().is_empty() {
            return Err(".name: must name a tool, or be \"$first_tool\"".into());
        }
        let arguments = Arguments::build(spec.arguments.unwrap_or_else(|| json!({})), groups)
            .map_err(|e| format!(".arguments{e}"))?;
        Ok(Self { id: spec.id, name: ToolName::parse(spec.name), arguments })
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> Result<Value, String> {
        let id = self
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}", ctx.ids.fetch_add(1, Ordering::Relaxed) + 1));
        let name = self.name.render(ctx)?;
        let arguments = self.arguments.render(ctx, &name);
        Ok(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
    }
}

impl ToolName {
    fn parse(name: String) -> Self {
        if name == "$first_tool" {
            ToolName::First
        } else {
            ToolName::Named(name)
        }
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> Result<String, String> {
        match self {
            ToolName::Named(name) => Ok(name.clone()),
            ToolName::First => ctx
                .request
                .first_tool()
                .map(str::to_owned)
                .ok_or_else(|| "it calls $first_tool, but the request offers no tools".to_owned()),
        }
    }
}

impl Arguments {
    fn build(value: Value, groups: usize) -> Result<Self, String> {
        match value {
            Value::String(text) if text == "$example" => Ok(Arguments::Example),
            Value::String(text) => {
                Template::parse(&text, groups).map(Arguments::Text).map_err(|e| format!(": {e}"))
            }
            Value::Object(_) => JsonTemplate::build(value, groups).map(Arguments::Json),
            _ => Err(": must be an object (sent as JSON) or a string (sent as it is)".into()),
        }
    }

    /// The arguments of a call to `tool`.
    fn render(&self, ctx: &Ctx<'_, '_>, tool: &str) -> String {
        match self {
            Arguments::Text(template) => template.render(ctx),
            Arguments::Json(template) => template.render(ctx).to_string(),
            Arguments::Example => ctx
                .request
                .parameters_of(tool)
                .map_or_else(|| json!({}), |schema| example(&schema))
                .to_string(),
        }
    }
}

impl JsonTemplate {
    fn build(value: Value, groups: usize) -> Result<Self, String> {
        Ok(match value {
            Value::String(text) => {
                JsonTemplate::Text(Template::parse(&text, groups).map_err(|e| format!(": {e}"))?)
            }
            Value::Array(items) => JsonTemplate::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| JsonTemplate::build(item, groups).map_err(|e| format!("[{i}]{e}")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(fields) => JsonTemplate::Object(
                fields
                    .into_iter()
                    .map(|(key, item)| {
                        let built = JsonTemplate::build(item, groups).map_err(|e| format!(".{key}{e}"))?;
                        Ok((key, built))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            other => JsonTemplate::Other(other),
        })
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> Value {
        match self {
            JsonTemplate::Text(template) => Value::String(template.render(ctx)),
            JsonTemplate::Array(items) => Value::Array(items.iter().map(|i| i.render(ctx)).collect()),
            JsonTemplate::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.render(ctx))).collect())
            }
            JsonTemplate::Other(value) => value.clone(),
        }
    }
}

/// A text with `{{placeholders}}`.
#[derive(Debug)]
struct Template(Vec<Part>);

#[derive(Debug)]
enum Part {
    Literal(String),
    /// `{{0}}` (the whole match of `when.message`), `{{1}}`, … (its groups).
    Group(usize),
    /// `{{message}}`: the last user or tool message.
    Message,
    /// `{{tool_result}}`: the last tool result.
    ToolResult,
    /// `{{model}}`.
    Model,
    /// `{{call}}`: the call's position in its conversation.
    Call,
    /// `{{first_tool}}`.
    FirstTool,
}

/// The placeholders a template may use, as the error message lists them.
const PLACEHOLDERS: &str =
    "{{message}}, {{tool_result}}, {{model}}, {{call}}, {{first_tool}}, {{open}} (a literal '{{'), {{0}}, {{1}}, …";

impl Template {
    fn parse(text: &str, groups: usize) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close =
                after.find("}}").ok_or_else(|| format!("'{{{{' without a closing '}}}}' in \"{text}\""))?;
            let name = after[..close].trim();
            let part = match name {
                "message" => Part::Message,
                "tool_result" => Part::ToolResult,
                "model" => Part::Model,
                "call" => Part::Call,
                "first_tool" => Part::FirstTool,
                "open" => Part::Literal("{{".to_owned()),
                _ => match name.parse::<usize>() {
                    Ok(0) => Part::Group(0),
                    Ok(n) if n <= groups => Part::Group(n),
                    Ok(n) => {
                        return Err(format!(
                            "{{{{{n}}}}} needs when.message to be a regex with at least {n} group(s) (it has {groups})"
                        ))
                    }
                    Err(_) => return Err(format!("unknown placeholder {{{{{name}}}}} (known: {PLACEHOLDERS})")),
                },
            };
            parts.push(part);
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self(parts))
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> String {
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Group(n) => out.push_str(ctx.groups.get(*n).map_or("", String::as_str)),
                Part::Message => out.push_str(ctx.request.last_message()),
                Part::ToolResult => out.push_str(ctx.request.last_tool_result().unwrap_or_default()),
                Part::Model => out.push_str(ctx.request.model),
                Part::Call => out.push_str(&ctx.request.position().to_string()),
                Part::FirstTool => out.push_str(ctx.request.first_tool().unwrap_or_default()),
            }
        }
        out
    }
}

/// A value that fits `schema`, as a model filling a tool's arguments would give: each required
/// property (all of them when none is required) from its first `examples` entry, `default`,
/// `const` or first `enum` value, else a plain value of its type.
pub(super) fn example(schema: &Value) -> Value {
    example_at(schema, 0)
}

fn example_at(schema: &Value, depth: usize) -> Value {
    if let Some(given) = schema["examples"].get(0).or(schema.get("default")).or(schema.get("const")) {
        return given.clone();
    }
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    if depth > 8 {
        return Value::Null;
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => {
            kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null")
        }
        kind => kind.as_str().unwrap_or(if schema.get("properties").is_some() { "object" } else { "string" }),
    };
    match kind {
        "object" => {
            let properties = schema["properties"].as_object();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map_or_else(Vec::new, |names| names.iter().filter_map(Value::as_str).collect());
            let mut object = serde_json::Map::new();
            for (name, property) in properties.into_iter().flatten() {
                if required.is_empty() || required.contains(&name.as_str()) {
                    object.insert(name.clone(), example_at(property, depth + 1));
                }
            }
            Value::Object(object)
        }
        "array" => Value::Array(Vec::new()),
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("example"),
    }
}

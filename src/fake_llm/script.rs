//! Scripts for the fake LLM: rules tried in order against each chat-completions request; the
//! first rule whose `when` matches (and whose `times` is not used up) answers with its `reply`.
//! A script is JSON or TOML; the format, with every error message, is documented in
//! `docs/fake-llm.md`, and `examples/fake-llm/` holds scripts that CI runs.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::{json, Value};

use super::FakeReply;

/// The longest delay a reply may ask for.
const MAX_DELAY_MS: u64 = 600_000;

/// A script that cannot be used, naming the place in it that is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(String);

/// A loaded, checked script.
#[derive(Debug)]
pub struct Script {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    /// The rule's `name`, or `rules[<i>]`.
    label: String,
    when: When,
    /// How many requests the rule may answer (none: any number).
    times: Option<u32>,
    used: AtomicU32,
    reply: ReplyTemplate,
}

impl Script {
    /// Read a script file: TOML when its name ends in `.toml`, JSON otherwise.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("cannot read the script {shown}: {e}")))?;
        let parsed = match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Self::from_toml(&text),
            _ => Self::from_json(&text),
        };
        parsed.map_err(|ScriptError(message)| ScriptError(format!("script {shown}: {message}")))
    }

    /// A script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ScriptError(format!("not valid JSON: {e}")))?;
        Self::from_value(value)
    }

    /// A script from TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ScriptError> {
        let value: Value = toml::from_str(text).map_err(|e| ScriptError(format!("not valid TOML: {e}")))?;
        Self::from_value(value)
    }

    /// A script from its parsed form (`{"rules": [...]}`).
    pub fn from_value(value: Value) -> Result<Self, ScriptError> {
        let spec: ScriptSpec = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            match path.as_str() {
                "." => ScriptError(inner.to_string()),
                _ => ScriptError(format!("{path}: {inner}")),
            }
        })?;
        if spec.rules.is_empty() {
            return Err(ScriptError("rules: a script needs at least one rule".into()));
        }
        let rules = spec
            .rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| Rule::build(i, rule))
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// How many rules the script has.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the script has no rules (never true of a loaded script).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The answer of the first rule that matches `request`: the rule's label and its reply, or
    /// why the reply could not be made. `None`: no rule matches. `ids` numbers tool calls.
    pub fn answer(
        &self,
        request: &Request<'_>,
        ids: &AtomicU64,
    ) -> Option<(String, Result<FakeReply, String>)> {
        for rule in &self.rules {
            let Some(groups) = rule.when.matches(request) else { continue };
            if !rule.take() {
                continue;
            }
            let ctx = Ctx { groups, request, ids };
            let reply = rule.reply.render(&ctx).map_err(|e| format!("rule '{}': {e}", rule.label));
            return Some((rule.label.clone(), reply));
        }
        None
    }

    /// Forget how often each rule answered (`times` counts from zero again).
    pub fn reset(&self) {
        for rule in &self.rules {
            rule.used.store(0, Ordering::Relaxed);
        }
    }
}

impl Rule {
    fn build(index: usize, spec: RuleSpec) -> Result<Self, ScriptError> {
        let at = format!("rules[{index}]");
        let label = spec.name.clone().unwrap_or_else(|| at.clone());
        let when = When::build(spec.when);
        let groups = when.message.as_ref().map_or(0, Pattern::groups);
        let reply =
            ReplyTemplate::build(spec.reply, groups).map_err(|e| ScriptError(format!("{at}.reply{e}")))?;
        Ok(Self { label, when, times: spec.times.map(NonZeroU32::get), used: AtomicU32::new(0), reply })
    }

    /// Count one use, unless `times` are used up.
    fn take(&self) -> bool {
        let Some(times) = self.times else { return true };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| (used < times).then_some(used + 1))
            .is_ok()
    }
}

// ---------------------------------------------------------------------------------------------
// What a request says

/// The parts of a chat-completions request that rules look at.
#[derive(Debug)]
pub struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    /// The names of the native tools offered.
    pub tools: Vec<&'a str>,
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
        let tools = body["tools"]
            .as_array()
            .map(|tools| {
                tools.iter().filter_map(|t| t.pointer("/function/name").and_then(Value::as_str)).collect()
            })
            .unwrap_or_default();
        Self {
            model: body["model"].as_str().unwrap_or_default(),
            messages,
            tools,
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

    /// The text of the last tool result.
    pub fn last_tool_result(&self) -> &str {
        self.messages.iter().rev().find(|m| m.role == "tool").map_or("", |m| m.text.as_str())
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

// ---------------------------------------------------------------------------------------------
// Matching

#[derive(Debug, Default)]
struct When {
    model: Option<Glob>,
    message: Option<Pattern>,
    tool_result: Option<Pattern>,
    any_message: Option<Pattern>,
    system: Option<Pattern>,
    last_role: Option<&'static str>,
    tools: Option<bool>,
    call: Option<Calls>,
    stream: Option<bool>,
}

impl When {
    fn build(spec: WhenSpec) -> Self {
        Self {
            model: spec.model.map(Glob),
            message: spec.message.map(|p| p.0),
            tool_result: spec.tool_result.map(|p| p.0),
            any_message: spec.any_message.map(|p| p.0),
            system: spec.system.map(|p| p.0),
            last_role: spec.last_role.map(RoleSpec::as_str),
            tools: spec.tools,
            call: spec.call.map(|c| c.0),
            stream: spec.stream,
        }
    }

    /// The groups of the `message` pattern (the whole match first) when every condition holds.
    fn matches(&self, request: &Request<'_>) -> Option<Vec<String>> {
        let holds = self.model.as_ref().is_none_or(|glob| glob.matches(request.model))
            && self.tools.is_none_or(|offered| offered == request.offers_tools())
            && self.stream.is_none_or(|stream| stream == request.stream)
            && self.last_role.is_none_or(|role| role == request.last_role())
            && self.call.as_ref().is_none_or(|calls| calls.contains(request.position()))
            && self.tool_result.as_ref().is_none_or(|p| p.find(request.last_tool_result()).is_some())
            && self.system.as_ref().is_none_or(|p| {
                request.messages.iter().any(|m| m.role == "system" && p.find(&m.text).is_some())
            })
            && self
                .any_message
                .as_ref()
                .is_none_or(|p| request.messages.iter().any(|m| p.find(&m.text).is_some()));
        if !holds {
            return None;
        }
        match &self.message {
            Some(pattern) => pattern.find(request.last_message()),
            None => Some(Vec::new()),
        }
    }
}

/// A model name pattern: `*` stands for any run of characters.
#[derive(Debug)]
struct Glob(String);

impl Glob {
    fn matches(&self, text: &str) -> bool {
        let mut parts = self.0.split('*');
        let first = parts.next().unwrap_or_default();
        let Some(mut rest) = text.strip_prefix(first) else { return false };
        let parts: Vec<&str> = parts.collect();
        let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
        for part in middle {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.ends_with(last)
    }
}

/// A text condition: a substring, or a regular expression.
#[derive(Debug)]
enum Pattern {
    Contains(String),
    Regex(Regex),
}

impl Pattern {
    /// The match and its groups (absent groups as empty strings), or `None`.
    fn find(&self, text: &str) -> Option<Vec<String>> {
        match self {
            Pattern::Contains(needle) => text.contains(needle.as_str()).then(|| vec![needle.clone()]),
            Pattern::Regex(regex) => regex.captures(text).map(|caps| {
                caps.iter().map(|group| group.map_or_else(String::new, |g| g.as_str().to_owned())).collect()
            }),
        }
    }

    /// How many numbered groups the pattern has.
    fn groups(&self) -> usize {
        match self {
            Pattern::Contains(_) => 0,
            Pattern::Regex(regex) => regex.captures_len() - 1,
        }
    }
}

/// Which calls of a conversation a rule answers.
#[derive(Debug)]
enum Calls {
    Listed(Vec<u32>),
    AtLeast(u32),
}

impl Calls {
    fn contains(&self, position: u32) -> bool {
        match self {
            Calls::Listed(positions) => positions.contains(&position),
            Calls::AtLeast(first) => position >= *first,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Replies

/// What a rule answers, with its placeholders still to fill.
#[derive(Debug)]
struct ReplyTemplate {
    kind: ReplyKind,
    delay: Duration,
    chunk_delay: Duration,
    usage: (u32, u32),
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
}

#[derive(Debug)]
enum JsonTemplate {
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
    Other(Value),
}

/// What placeholders are filled from.
struct Ctx<'a, 'r> {
    groups: Vec<String>,
    request: &'a Request<'r>,
    ids: &'a AtomicU64,
}

impl ReplyTemplate {
    /// Check a reply; errors start with the path below `reply` (".text: ...").
    fn build(spec: ReplySpec, groups: usize) -> Result<Self, String> {
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
        let usage = spec.usage.map_or((10, 5), |u| (u.prompt_tokens, u.completion_tokens));
        Ok(Self {
            kind,
            delay: Duration::from_millis(spec.delay_ms),
            chunk_delay: Duration::from_millis(spec.chunk_delay_ms),
            usage,
            headers,
        })
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> Result<FakeReply, String> {
        let usage = json!({
            "prompt_tokens": self.usage.0,
            "completion_tokens": self.usage.1,
            "total_tokens": u64::from(self.usage.0) + u64::from(self.usage.1),
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
                (200, completion(ctx.request.model, message, finish, usage))
            }
            ReplyKind::React { thought, step } => {
                let text = react_text(thought.as_ref(), step, ctx)?;
                (
                    200,
                    completion(
                        ctx.request.model,
                        json!({"role": "assistant", "content": text}),
                        "stop",
                        usage,
                    ),
                )
            }
            ReplyKind::Error { status, body } => (*status, body.render(ctx)),
        };
        Ok(FakeReply {
            status,
            headers: self.headers.clone(),
            body,
            delay: self.delay,
            chunk_delay: self.chunk_delay,
        })
    }
}

fn completion(model: &str, message: Value, finish_reason: &str, usage: Value) -> Value {
    json!({
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    })
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
            format!("Thought: {thought}\nAction: {tool}\nAction Input: {}", input.render(ctx))
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
        Ok(json!({
            "id": id,
            "type": "function",
            "function": {"name": self.name.render(ctx)?, "arguments": self.arguments.render(ctx)},
        }))
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
            Value::String(text) => {
                Template::parse(&text, groups).map(Arguments::Text).map_err(|e| format!(": {e}"))
            }
            Value::Object(_) => JsonTemplate::build(value, groups).map(Arguments::Json),
            _ => Err(": must be an object (sent as JSON) or a string (sent as it is)".into()),
        }
    }

    fn render(&self, ctx: &Ctx<'_, '_>) -> String {
        match self {
            Arguments::Text(template) => template.render(ctx),
            Arguments::Json(template) => template.render(ctx).to_string(),
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
    "{{message}}, {{tool_result}}, {{model}}, {{call}}, {{first_tool}}, {{0}}, {{1}}, …";

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
                Part::ToolResult => out.push_str(ctx.request.last_tool_result()),
                Part::Model => out.push_str(ctx.request.model),
                Part::Call => out.push_str(&ctx.request.position().to_string()),
                Part::FirstTool => out.push_str(ctx.request.first_tool().unwrap_or_default()),
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// The file format

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptSpec {
    rules: Vec<RuleSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    name: Option<String>,
    #[serde(default)]
    when: WhenSpec,
    times: Option<NonZeroU32>,
    reply: ReplySpec,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WhenSpec {
    model: Option<String>,
    message: Option<PatternSpec>,
    tool_result: Option<PatternSpec>,
    any_message: Option<PatternSpec>,
    system: Option<PatternSpec>,
    last_role: Option<RoleSpec>,
    tools: Option<bool>,
    call: Option<CallSpec>,
    stream: Option<bool>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RoleSpec {
    System,
    User,
    Assistant,
    Tool,
}

impl RoleSpec {
    fn as_str(self) -> &'static str {
        match self {
            RoleSpec::System => "system",
            RoleSpec::User => "user",
            RoleSpec::Assistant => "assistant",
            RoleSpec::Tool => "tool",
        }
    }
}

#[derive(Deserialize)]
#[serde(try_from = "Value")]
struct PatternSpec(Pattern);

impl TryFrom<Value> for PatternSpec {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        const SHAPE: &str = "must be a string (found as a substring) or {\"regex\": \"...\"}";
        match value {
            Value::String(text) => Ok(Self(Pattern::Contains(text))),
            Value::Object(fields) if fields.len() == 1 => match fields.get("regex") {
                Some(Value::String(regex)) => Regex::new(regex)
                    .map(|r| Self(Pattern::Regex(r)))
                    .map_err(|e| format!("invalid regex: {e}")),
                _ => Err(SHAPE.into()),
            },
            _ => Err(SHAPE.into()),
        }
    }
}

#[derive(Deserialize)]
#[serde(try_from = "Value")]
struct CallSpec(Calls);

impl TryFrom<Value> for CallSpec {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        const SHAPE: &str =
            "must be a position (1 is a conversation's first call), a list of them, or {\"at_least\": N}";
        let position = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| *n >= 1);
        match &value {
            Value::Number(_) => {
                position(&value).map(|n| Self(Calls::Listed(vec![n]))).ok_or_else(|| SHAPE.into())
            }
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .map(position)
                .collect::<Option<Vec<_>>>()
                .map(|l| Self(Calls::Listed(l)))
                .ok_or_else(|| SHAPE.into()),
            Value::Object(fields) if fields.len() == 1 => fields
                .get("at_least")
                .and_then(position)
                .map(|n| Self(Calls::AtLeast(n)))
                .ok_or_else(|| SHAPE.into()),
            _ => Err(SHAPE.into()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplySpec {
    text: Option<String>,
    tool_calls: Option<Vec<ToolCallSpec>>,
    react: Option<ReactSpec>,
    error: Option<ErrorSpec>,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    chunk_delay_ms: u64,
    usage: Option<UsageSpec>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallSpec {
    name: String,
    arguments: Option<Value>,
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReactSpec {
    thought: Option<String>,
    action: Option<String>,
    input: Option<Value>,
    final_answer: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorSpec {
    status: u16,
    message: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    code: Option<String>,
    body: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageSpec {
    #[serde(default)]
    prompt_tokens: u32,
    #[serde(default)]
    completion_tokens: u32,
}

#[cfg(test)]
mod tests;

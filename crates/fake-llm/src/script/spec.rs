//! The script file's format (JSON, or TOML read into the same shape), checked by serde with the
//! path of whatever does not fit.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptSpec {
    pub(super) rules: Vec<RuleSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RuleSpec {
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) when: WhenSpec,
    pub(super) times: Option<NonZeroU32>,
    pub(super) reply: ReplySpec,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct WhenSpec {
    pub(super) model: Option<String>,
    pub(super) message: Option<PatternSpec>,
    pub(super) tool_result: Option<PatternSpec>,
    pub(super) any_message: Option<PatternSpec>,
    pub(super) system: Option<PatternSpec>,
    pub(super) last_role: Option<RoleSpec>,
    pub(super) tools: Option<bool>,
    pub(super) call: Option<CallSpec>,
    pub(super) stream: Option<bool>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RoleSpec {
    System,
    User,
    Assistant,
    Tool,
}

impl RoleSpec {
    pub(super) fn as_str(self) -> &'static str {
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
pub(super) struct PatternSpec(pub(super) Pattern);

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
pub(super) struct CallSpec(pub(super) Calls);

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
pub(super) struct ReplySpec {
    pub(super) text: Option<String>,
    pub(super) tool_calls: Option<Vec<ToolCallSpec>>,
    pub(super) react: Option<ReactSpec>,
    pub(super) error: Option<ErrorSpec>,
    #[serde(default)]
    pub(super) delay_ms: u64,
    #[serde(default)]
    pub(super) chunk_delay_ms: u64,
    pub(super) usage: Option<UsageField>,
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolCallSpec {
    pub(super) name: String,
    pub(super) arguments: Option<Value>,
    pub(super) id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReactSpec {
    pub(super) thought: Option<String>,
    pub(super) action: Option<String>,
    pub(super) input: Option<Value>,
    pub(super) final_answer: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ErrorSpec {
    pub(super) status: u16,
    pub(super) message: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) code: Option<String>,
    pub(super) body: Option<Value>,
}

/// `usage`: the counts to report, or `false` to report none (as llama.cpp's server streams).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum UsageField {
    Counts(UsageSpec),
    Sent(bool),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UsageSpec {
    #[serde(default)]
    pub(super) prompt_tokens: u32,
    #[serde(default)]
    pub(super) completion_tokens: u32,
}

/// A text condition: a substring, or a regular expression.
#[derive(Debug)]
pub(super) enum Pattern {
    Contains(String),
    Regex(Regex),
}

impl Pattern {
    /// The match and its groups (absent groups as empty strings), or `None`.
    pub(super) fn find(&self, text: &str) -> Option<Vec<String>> {
        match self {
            Pattern::Contains(needle) => text.contains(needle.as_str()).then(|| vec![needle.clone()]),
            Pattern::Regex(regex) => regex.captures(text).map(|caps| {
                caps.iter().map(|group| group.map_or_else(String::new, |g| g.as_str().to_owned())).collect()
            }),
        }
    }

    /// How many numbered groups the pattern has.
    pub(super) fn groups(&self) -> usize {
        match self {
            Pattern::Contains(_) => 0,
            Pattern::Regex(regex) => regex.captures_len() - 1,
        }
    }
}

/// Which calls of a conversation a rule answers.
#[derive(Debug)]
pub(super) enum Calls {
    Listed(Vec<u32>),
    AtLeast(u32),
}

impl Calls {
    pub(super) fn contains(&self, position: u32) -> bool {
        match self {
            Calls::Listed(positions) => positions.contains(&position),
            Calls::AtLeast(first) => position >= *first,
        }
    }
}

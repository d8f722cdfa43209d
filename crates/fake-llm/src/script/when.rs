//! The conditions of a rule.

use super::request::Request;
use super::spec::{Calls, Pattern, RoleSpec, WhenSpec};

/// A rule's `when`: every condition given must hold.
#[derive(Debug, Default)]
pub(super) struct When {
    model: Option<Glob>,
    pub(super) message: Option<Pattern>,
    tool_result: Option<Pattern>,
    any_message: Option<Pattern>,
    system: Option<Pattern>,
    last_role: Option<&'static str>,
    tools: Option<bool>,
    call: Option<Calls>,
    stream: Option<bool>,
}

impl When {
    pub(super) fn build(spec: WhenSpec) -> Self {
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
    pub(super) fn matches(&self, request: &Request<'_>) -> Option<Vec<String>> {
        let holds = self.model.as_ref().is_none_or(|glob| glob.matches(request.model))
            && self.tools.is_none_or(|offered| offered == request.offers_tools())
            && self.stream.is_none_or(|stream| stream == request.stream)
            && self.last_role.is_none_or(|role| role == request.last_role())
            && self.call.as_ref().is_none_or(|calls| calls.contains(request.position()))
            && self
                .tool_result
                .as_ref()
                .is_none_or(|p| request.last_tool_result().is_some_and(|t| p.find(t).is_some()))
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

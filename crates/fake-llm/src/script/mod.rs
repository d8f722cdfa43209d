//! Scripts for the fake LLM: rules tried in order against each chat-completions request; the
//! first rule whose `when` matches (and whose `times` is not used up) answers with its `reply`.
//! A script is JSON or TOML; the format, with every error message, is documented in
//! `docs/fake-llm.md`, and `examples/fake-llm/` holds scripts that CI runs.
//!
//! `spec` is the file format, `request` what rules read of a request, `when` the conditions,
//! `reply` the answers and their placeholders.

mod reply;
mod request;
mod spec;
mod when;

pub use request::Request;

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde_json::Value;

use super::FakeReply;
use reply::{Ctx, ReplyTemplate};
use spec::Pattern;
use spec::{RuleSpec, ScriptSpec};
use when::When;

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

    /// A script of one rule answering every request with `text` after `delay_ms`
    /// (`agentd fake-llm --reply`); `text` is sent as it is, placeholders and all.
    pub fn single_reply(text: &str, delay_ms: u64) -> Result<Self, ScriptError> {
        let text = text.replace("{{", "{{open}}");
        Self::from_value(
            serde_json::json!({"rules": [{"name": "--reply", "reply": {"text": text, "delay_ms": delay_ms}}]}),
        )
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
            if rule.used_up() {
                continue;
            }
            let ctx = Ctx { groups, request, ids };
            let reply = rule.reply.render(&ctx).map_err(|e| format!("rule '{}': {e}", rule.label));
            // A reply that could not be made does not use up the rule.
            if reply.is_ok() && !rule.take() {
                continue;
            }
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

    fn used_up(&self) -> bool {
        self.times.is_some_and(|times| self.used.load(Ordering::Acquire) >= times)
    }

    /// Count one use, unless `times` are used up (another request may have taken the last).
    fn take(&self) -> bool {
        let Some(times) = self.times else { return true };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| (used < times).then_some(used + 1))
            .is_ok()
    }
}

#[cfg(test)]
mod tests;

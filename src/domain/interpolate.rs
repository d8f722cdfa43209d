//! `{placeholder}` interpolation, as CrewAI does it: a placeholder is `{` + an identifier
//! (`[A-Za-z_][A-Za-z0-9_-]*`) + `}`. Anything else in braces (JSON examples, `{ }`) is left alone.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::CrewSpec;

/// Every placeholder name in `text`, in order of appearance (with repeats).
pub fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        let open = rest.find('{')?;
        let after = &rest[open + 1..];
        let len = identifier_len(after);
        if len > 0 && after[len..].starts_with('}') {
            rest = &after[len + 1..];
            return Some(&after[..len]);
        }
        rest = after;
    })
}

fn identifier_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    chars.find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')).map_or(text.len(), |(i, _)| i)
}

/// Replace each placeholder that has an input; strings are inserted as they are, other values as
/// JSON. Placeholders without an input are left as written.
pub fn interpolate(text: &str, inputs: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let len = identifier_len(after);
        let value = (len > 0 && after[len..].starts_with('}')).then(|| inputs.get(&after[..len])).flatten();
        match value {
            Some(value) => {
                out.push_str(&rest[..open]);
                match value {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[len + 1..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The texts of a crew that take placeholders: agents' role, goal and backstory, tasks'
/// description and expected output, and the memory's scope.
pub fn interpolated_texts(crew: &CrewSpec) -> impl Iterator<Item = &str> {
    let agents = crew.agents.iter().flat_map(|a| [a.role.as_str(), a.goal.as_str(), a.backstory.as_str()]);
    let tasks = crew.tasks.iter().flat_map(|t| [t.description.as_str(), t.expected_output.as_str()]);
    agents.chain(tasks).chain(crew.memory.iter().map(|m| m.scope.as_str()))
}

/// The distinct input names a crew needs, sorted.
pub fn required_inputs(crew: &CrewSpec) -> BTreeSet<String> {
    interpolated_texts(crew).flat_map(placeholders).map(str::to_owned).collect()
}

impl CrewSpec {
    /// The JSON Schema of the crew's inputs: its own `inputs_schema`, or each `{placeholder}` a
    /// required string.
    pub fn inputs_json_schema(&self) -> Value {
        if let Some(schema) = &self.inputs_schema {
            return schema.clone();
        }
        let names = required_inputs(self);
        let properties: serde_json::Map<String, Value> =
            names.iter().map(|name| (name.clone(), serde_json::json!({"type": "string"}))).collect();
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": names,
            "additionalProperties": true,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_identifiers_and_skips_json_and_empty_braces() {
        let text = r#"Research {topic} for {user_name} in {year-2}; ignore {"a": 1}, { }, {} and {9x}"#;
        let found: Vec<_> = placeholders(text).collect();
        assert_eq!(found, ["topic", "user_name", "year-2"]);
    }

    #[test]
    fn handles_nested_and_unterminated_braces() {
        let found: Vec<_> = placeholders("{{topic}} {open").collect();
        assert_eq!(found, ["topic"]);
    }

    #[test]
    fn interpolates_strings_raw_and_other_values_as_json() {
        let inputs = json!({"topic": "AI", "n": 3, "tags": ["a"]});
        let inputs = inputs.as_object().expect("object");
        let out = interpolate("{topic}: {n} {tags} {missing} {\"x\": 1}", inputs);
        assert_eq!(out, r#"AI: 3 ["a"] {missing} {"x": 1}"#);
    }

    #[test]
    fn interpolation_keeps_multibyte_text() {
        let inputs = json!({"ville": "Zürich"});
        let out = interpolate("Café {ville} — {ville}", inputs.as_object().expect("object"));
        assert_eq!(out, "Café Zürich — Zürich");
    }
}

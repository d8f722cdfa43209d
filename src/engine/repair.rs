//! Reading the JSON that models write: code fences, Python-style quotes, trailing commas and
//! output cut off mid-object are repaired where the intent is unambiguous.

use serde_json::Value;

/// Parse `text` as JSON, repairing the usual damage. `None` when nothing sensible comes out.
pub fn parse_lenient(text: &str) -> Option<Value> {
    let mut value = parse_repaired(text)?;
    // Model output is journaled as jsonb, which cannot hold a NUL (`\u0000` in the JSON).
    crate::text::scrub_value(&mut value);
    Some(value)
}

fn parse_repaired(text: &str) -> Option<Value> {
    let text = strip_fences(text.trim());
    if text.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let closed = close_truncated(text);
    if let Ok(value) = serde_json::from_str(&closed) {
        return Some(value);
    }
    if !text.contains('"') && text.contains('\'') {
        let swapped = close_truncated(&text.replace('\'', "\""));
        return serde_json::from_str(&swapped).ok();
    }
    None
}

/// Remove a surrounding Markdown code fence (```json … ```), if any.
pub fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let body = rest.split_once('\n').map_or(rest, |(first, body)| {
        if first.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
            body
        } else {
            rest
        }
    });
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// Close strings, arrays and objects left open by a cut-off answer, and drop a dangling comma or
/// a key with no value.
fn close_truncated(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut stack = Vec::new();
    let mut strings = Strings::default();
    for c in text.chars() {
        out.push(c);
        if strings.inside(c) {
            continue;
        }
        match c {
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    if strings.open {
        if strings.escaped {
            out.pop();
        }
        out.push('"');
    }
    trim_dangling(&mut out);
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    remove_trailing_commas(&out)
}

/// A trailing `,` or `"key":` cannot be completed: remove it.
fn trim_dangling(out: &mut String) {
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if out.ends_with(',') {
        out.pop();
    } else if out.ends_with(':') {
        out.pop();
        let key_start = out.trim_end().strip_suffix('"').and_then(|s| s.rfind('"'));
        if let Some(start) = key_start {
            out.truncate(start);
            trim_dangling(out);
        }
    }
}

/// Where a left-to-right scan of JSON text is with respect to strings.
#[derive(Default)]
struct Strings {
    open: bool,
    escaped: bool,
}

impl Strings {
    /// Take the next character; whether it belongs to a string (its quotes included).
    fn inside(&mut self, c: char) -> bool {
        if !self.open {
            self.open = c == '"';
            return self.open;
        }
        match (self.escaped, c) {
            (true, _) => self.escaped = false,
            (false, '\\') => self.escaped = true,
            (false, '"') => self.open = false,
            _ => {}
        }
        true
    }
}

/// Drop commas directly before a closing bracket (outside strings).
fn remove_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut strings = Strings::default();
    for c in text.chars() {
        if !strings.inside(c) && (c == '}' || c == ']') {
            let kept = out.trim_end().len();
            out.truncate(kept);
            if out.ends_with(',') {
                out.pop();
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_clean_and_fenced_json() {
        assert_eq!(parse_lenient(r#"{"a": 1}"#), Some(json!({"a": 1})));
        assert_eq!(parse_lenient("```json\n{\"a\": 1}\n```"), Some(json!({"a": 1})));
        assert_eq!(parse_lenient("```\n[1, 2]\n```"), Some(json!([1, 2])));
    }

    #[test]
    fn repairs_truncated_objects() {
        assert_eq!(parse_lenient(r#"{"expression": "2*(3+4)""#), Some(json!({"expression": "2*(3+4)"})));
        assert_eq!(parse_lenient(r#"{"q": "open str"#), Some(json!({"q": "open str"})));
        assert_eq!(parse_lenient(r#"{"a": 1, "b": [1, 2"#), Some(json!({"a": 1, "b": [1, 2]})));
        assert_eq!(parse_lenient(r#"{"a": 1,"#), Some(json!({"a": 1})));
        assert_eq!(parse_lenient(r#"{"a": 1, "b":"#), Some(json!({"a": 1})));
        assert_eq!(parse_lenient(r#"{"a": {"b": "c\"#), Some(json!({"a": {"b": "c"}})));
    }

    #[test]
    fn repairs_trailing_commas_and_single_quotes() {
        assert_eq!(parse_lenient(r#"{"a": [1, 2,], }"#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse_lenient("{'city': 'Paris'}"), Some(json!({"city": "Paris"})));
    }

    #[test]
    fn gives_up_on_prose() {
        assert_eq!(parse_lenient("the weather in Paris"), None);
        assert_eq!(parse_lenient("   "), None);
    }
}

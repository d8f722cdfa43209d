//! Text Postgres can store. Postgres refuses the NUL character in `text` and in `jsonb` strings,
//! so NUL from outside (a model's reply, a tool's result) is replaced with U+FFFD as it enters a
//! run (the engine's effects layer, so the engine works with what the journal keeps), the
//! Postgres journal scrubs every step it writes (`Step::scrub_nul`: the one guarantee, whatever
//! path a text took), and API bodies that carry one are refused.

use serde_json::Value;

/// The stand-in for a NUL character.
const REPLACEMENT: &str = "\u{FFFD}";

/// Replace every NUL character of `text`.
pub fn scrub(text: &mut String) {
    if text.contains('\0') {
        *text = text.replace('\0', REPLACEMENT);
    }
}

/// Replace every NUL character in the strings and keys of `value`.
pub fn scrub_value(value: &mut Value) {
    match value {
        Value::String(text) => scrub(text),
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(map) => {
            if map.keys().any(|key| key.contains('\0')) {
                let entries = std::mem::take(map);
                *map =
                    entries.into_iter().map(|(key, value)| (key.replace('\0', REPLACEMENT), value)).collect();
            }
            map.values_mut().for_each(scrub_value);
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Does this JSON text hold a NUL character (the escape `\u0000`: JSON has no raw control
/// characters in strings)?
pub fn has_nul_escape(json: &[u8]) -> bool {
    let mut backslashes = 0usize;
    for (i, byte) in json.iter().enumerate() {
        match byte {
            b'\\' => backslashes += 1,
            b'u' if backslashes % 2 == 1 => {
                if json.get(i + 1..i + 5) == Some(b"0000") {
                    return true;
                }
                backslashes = 0;
            }
            _ => backslashes = 0,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_characters_are_replaced_in_text_and_json() {
        let mut text = "a\0b\0".to_owned();
        scrub(&mut text);
        assert_eq!(text, "a\u{FFFD}b\u{FFFD}");
        let mut value = json!({"k\0": ["x\0", {"y": "z\0"}], "n": 1});
        scrub_value(&mut value);
        assert_eq!(value, json!({"k\u{FFFD}": ["x\u{FFFD}", {"y": "z\u{FFFD}"}], "n": 1}));
    }

    #[test]
    fn only_a_real_nul_escape_counts() {
        assert!(has_nul_escape(br#"{"a": "x\u0000y"}"#));
        assert!(has_nul_escape(br#"{"a\u0000": 1}"#));
        assert!(has_nul_escape(br#"["\\\u0000"]"#), "an escaped backslash, then the escape");
        assert!(!has_nul_escape(br#"["\\u0000"]"#), "a backslash, then the text u0000");
        assert!(!has_nul_escape(br#"["\u0001", "u0000", "\u0030"]"#));
    }
}

//! Errors that name the field of a request they are about ([`FieldError`], with its JSON path),
//! reading a request's JSON into a type with such errors, and the one rule for the free texts a
//! client stores and the server shows again ([`check_text`]: names, labels, descriptions, prompts
//! hold no control character, so none reaches a terminal, a log line or a table as an escape).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One problem with one field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// JSON path of the field, e.g. `crew.tasks[0].agent`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// The same error under a parent path (`crew` + `agents[0]` → `crew.agents[0]`).
    pub fn under(mut self, parent: &str) -> Self {
        self.field = join_path(parent, &self.field);
        self
    }
}

/// Deserialize a request's JSON into `T`; a mismatch is one error naming the field's path.
pub fn parse_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Vec<FieldError>> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        vec![FieldError::new(field, e.into_inner().to_string())]
    })
}

/// Join a parent path and a child path the way JSON paths read.
pub fn join_path(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty() || child == ".") {
        (true, _) => child.to_owned(),
        (false, true) => parent.to_owned(),
        (false, false) if child.starts_with('[') => format!("{parent}{child}"),
        (false, false) => format!("{parent}.{child}"),
    }
}

/// What layout a stored free text may have, for [`check_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A name or a label: one line, no control character at all.
    Line,
    /// A description or a prompt: lines, with tabs (line feeds and tabs are its only control
    /// characters).
    Lines,
}

/// [`check_text`]'s rule for a [`TextKind::Line`] as a JSON Schema `pattern` (the API's schema
/// repeats it as a literal; a test checks the document against these).
pub const LINE_PATTERN: &str = r"^[^\x00-\x1F\x7F-\x9F]*$";
/// [`LINE_PATTERN`], and not blank.
pub const LINE_NOT_BLANK_PATTERN: &str =
    r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$";
/// [`check_text`]'s rule for [`TextKind::Lines`] as a JSON Schema `pattern`.
pub const LINES_PATTERN: &str = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$";
/// [`LINES_PATTERN`], and not blank.
pub const LINES_NOT_BLANK_PATTERN: &str =
    r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B-\x1F\x7F-\x9F]*$";

/// Is `c` a character a stored text of `kind` may not hold? Every control character: C0
/// (U+0000 to U+001F: NUL; ESC, which begins a terminal's escape sequences; CR, which writes
/// over a line; BEL, BS, …), DEL (U+007F) and C1 (U+0080 to U+009F: CSI, OSC, …); a
/// [`TextKind::Lines`] keeps line feeds and tabs.
pub fn is_refused_char(c: char, kind: TextKind) -> bool {
    c.is_control() && !(kind == TextKind::Lines && matches!(c, '\n' | '\t'))
}

/// A free text a client stores and the server shows again (a key's name, a webhook's
/// description, a crew's prompts, a document's title, …) holds no character
/// [`is_refused_char`] refuses: the error names `field` and the first such character.
pub fn check_text(field: &str, text: &str, kind: TextKind) -> Result<(), FieldError> {
    let Some((at, c)) = text.chars().enumerate().find(|(_, c)| is_refused_char(*c, kind)) else {
        return Ok(());
    };
    let allowed = match kind {
        TextKind::Line => "",
        TextKind::Lines => " other than line feeds and tabs",
    };
    Err(FieldError::new(
        field,
        format!(
            "must not contain control characters{allowed} (U+{:04X} at character {})",
            u32::from(c),
            at + 1
        ),
    ))
}

/// `text` without the characters [`check_text`] refuses: for a text the server makes from what
/// it was given (a title from a file's name or a document's first line).
pub fn strip_refused(text: &str, kind: TextKind) -> String {
    text.chars().filter(|c| !is_refused_char(*c, kind)).collect()
}

/// Longest name of a crew, an agent, a task or a tool (crew names appear in URLs).
pub const MAX_NAME_LEN: usize = 100;

/// Is `name` a valid crew name (it appears in URLs)?
pub fn check_crew_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(format!("must be 1 to {MAX_NAME_LEN} characters of letters, digits, '-', '_' or '.'"));
    }
    // `.` and `..` are path segments URLs normalise away: such a crew could not be reached.
    if name.chars().all(|c| c == '.') {
        return Err("must not be made of dots only".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character the rule is about, and a few it lets through.
    fn samples() -> Vec<char> {
        let mut chars: Vec<char> = (0u32..=0xA0).filter_map(char::from_u32).collect();
        chars.extend(['é', '\u{2028}', '\u{202E}', '\u{FEFF}', '😀', '中']);
        chars
    }

    #[test]
    fn names_refuse_every_control_character_and_descriptions_keep_lines_and_tabs() {
        for c in samples() {
            let code = u32::from(c);
            let control = code < 0x20 || (0x7F..=0x9F).contains(&code);
            assert_eq!(is_refused_char(c, TextKind::Line), control, "U+{code:04X} in a name");
            let layout = c == '\n' || c == '\t';
            assert_eq!(
                is_refused_char(c, TextKind::Lines),
                control && !layout,
                "U+{code:04X} in a description"
            );
        }
        assert!(check_text("name", "CI key (nightly) \u{e9}", TextKind::Line).is_ok());
        assert!(check_text("description", "Line one\n\tLine two", TextKind::Lines).is_ok());
        let error = check_text("name", "ok\u{1b}[31mred", TextKind::Line).expect_err("ESC");
        assert_eq!(error.field, "name");
        assert!(error.message.contains("U+001B at character 3"), "{}", error.message);
        for (text, code) in
            [("a\r\nb", "U+000D"), ("\u{7f}", "U+007F"), ("x\u{9b}2J", "U+009B"), ("\0", "U+0000")]
        {
            let error = check_text("description", text, TextKind::Lines).expect_err(text);
            assert!(error.message.contains(code), "{text:?}: {}", error.message);
        }
        assert!(check_text("name", "two\nlines", TextKind::Line).is_err());
        assert_eq!(strip_refused("a\u{1b}[2Jb\n", TextKind::Line), "a[2Jb");
        assert_eq!(strip_refused("a\u{1b}[2Jb\n", TextKind::Lines), "a[2Jb\n");
    }

    #[test]
    fn the_schema_patterns_say_what_the_rule_says() {
        let line = regex::Regex::new(LINE_PATTERN).expect("pattern");
        let lines = regex::Regex::new(LINES_PATTERN).expect("pattern");
        let line_not_blank = regex::Regex::new(LINE_NOT_BLANK_PATTERN).expect("pattern");
        let lines_not_blank = regex::Regex::new(LINES_NOT_BLANK_PATTERN).expect("pattern");
        for c in samples() {
            let text = format!("a{c}b");
            let code = u32::from(c);
            assert_eq!(line.is_match(&text), check_text("", &text, TextKind::Line).is_ok(), "U+{code:04X}");
            assert_eq!(lines.is_match(&text), check_text("", &text, TextKind::Lines).is_ok(), "U+{code:04X}");
            assert_eq!(line_not_blank.is_match(&text), line.is_match(&text), "U+{code:04X}");
            assert_eq!(lines_not_blank.is_match(&text), lines.is_match(&text), "U+{code:04X}");
        }
        for blank in ["", " ", "\t\n "] {
            assert!(!line_not_blank.is_match(blank) && !lines_not_blank.is_match(blank), "{blank:?}");
        }
        assert!(lines_not_blank.is_match("\n\tx\n"));
    }
}

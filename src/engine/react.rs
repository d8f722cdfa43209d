//! Parsing ReAct text (`Thought:` / `Action:` / `Action Input:` / `Final Answer:`), tolerant of
//! the usual damage: odd spacing and case, Markdown emphasis and code fences, numbered labels
//! (`Action 1:`), a hallucinated `Observation:`, and JSON cut off or written loosely.

use serde_json::Value;

use super::repair::{parse_lenient, strip_fences};

/// What a ReAct reply asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ReactStep {
    /// Call a tool.
    Action { thought: String, tool: String, input: ActionInput },
    /// The agent's answer.
    Final { thought: String, output: String },
}

/// The text after `Action Input:`.
#[derive(Debug, Clone, PartialEq)]
pub enum ActionInput {
    /// JSON (possibly repaired).
    Json(Value),
    /// Plain text: the tool's single argument, if it has one.
    Text(String),
}

/// Why a reply could not be read; the message is fed back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("Invalid Format: I missed the 'Action:' after 'Thought:'. I will do right next, and don't use a tool I have already used.")]
    MissingAction,
    #[error("Invalid Format: I missed the 'Action Input:' after 'Action:'. I will do right next, and don't use a tool I have already used.")]
    MissingActionInput,
    #[error("Invalid Format: I gave an empty answer. I must either use a tool or give my Final Answer.")]
    Empty,
}

/// Read one reply.
pub fn parse(text: &str) -> Result<ReactStep, ParseError> {
    let text = normalise(text);
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let thought = thought_of(&text);
    if let Some(at) = find_label(&text, "final answer") {
        let output = clean_final(&text[at..]);
        return Ok(ReactStep::Final { thought, output });
    }
    let Some(action_at) = find_label(&text, "action") else { return Err(ParseError::MissingAction) };
    let Some((tool_end, input_at)) = find_action_input(&text, action_at) else {
        return Err(ParseError::MissingActionInput);
    };
    let tool = clean_tool_name(&text[action_at..tool_end]);
    if tool.is_empty() {
        return Err(ParseError::MissingAction);
    }
    let input = action_input(&text[input_at..]);
    Ok(ReactStep::Action { thought, tool, input })
}

/// Drop Markdown emphasis around labels (`**Action:**`) and normalise line endings.
fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n").replace("**", "")
}

/// Where the value of a `label:` line starts (case-insensitive, optional number before the
/// colon, the label at the start of a line or of the text). The first match wins.
fn find_label(text: &str, label: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(label) {
        let start = from + found;
        from = start + label.len();
        let at_line_start =
            lower[..start].trim_end_matches([' ', '\t']).ends_with('\n') || lower[..start].trim().is_empty();
        if !at_line_start {
            continue;
        }
        let rest = &lower[from..];
        let skipped = rest.len() - rest.trim_start_matches(|c: char| c == ' ' || c.is_ascii_digit()).len();
        if rest[skipped..].starts_with(':') {
            return Some(from + skipped + 1);
        }
    }
    None
}

/// After `Action:` at `action_at`: where the tool name ends (the start of the `Action Input:`
/// line) and where the input begins. Accepts `Action Input:`, `Action 1 Input:`, `Action Input 1:`.
fn find_action_input(text: &str, action_at: usize) -> Option<(usize, usize)> {
    let mut line_start = action_at;
    for line in text[action_at..].split_inclusive('\n') {
        if let Some(value_at) = action_input_label(line) {
            return Some((line_start, line_start + value_at));
        }
        line_start += line.len();
    }
    None
}

/// If `line` starts with an action-input label, the offset just after its colon.
fn action_input_label(line: &str) -> Option<usize> {
    let lower = line.to_ascii_lowercase();
    let skip = |s: &str| s.len() - s.trim_start_matches(|c: char| c == ' ' || c.is_ascii_digit()).len();
    let indent = lower.len() - lower.trim_start().len();
    lower[indent..].starts_with("action").then_some(())?;
    let mut at = indent + "action".len();
    at += skip(&lower[at..]);
    lower[at..].starts_with("input").then_some(())?;
    at += "input".len();
    at += skip(&lower[at..]);
    lower[at..].starts_with(':').then_some(at + 1)
}

fn thought_of(text: &str) -> String {
    let start = find_label(text, "thought").unwrap_or(0);
    let end = ["action", "final answer"]
        .iter()
        .filter_map(|label| find_label(&text[start..], label))
        .min()
        .map_or(text.len(), |rel| {
            let label_end = start + rel;
            text[..label_end].rfind('\n').unwrap_or(start).max(start)
        });
    text[start..end].trim().to_owned()
}

fn clean_tool_name(raw: &str) -> String {
    let line = raw.trim().lines().next().unwrap_or_default();
    line.trim().trim_matches(|c: char| c == '`' || c == '*' || c == '"' || c == '\'').trim().to_owned()
}

fn clean_final(raw: &str) -> String {
    let trimmed = raw.trim();
    let unfenced = strip_fences(trimmed);
    unfenced.strip_suffix("```").unwrap_or(unfenced).trim().to_owned()
}

fn action_input(raw: &str) -> ActionInput {
    let mut text = raw;
    if let Some(at) = find_label(text, "observation") {
        let label_start = text[..at].to_ascii_lowercase().rfind("observation").unwrap_or(at);
        text = &text[..label_start];
    }
    let text = text.trim();
    match parse_lenient(text) {
        Some(Value::String(text)) => ActionInput::Text(text),
        Some(value) => ActionInput::Json(value),
        None => ActionInput::Text(strip_fences(text).trim_matches('"').trim().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn action(tool: &str, input: Value) -> ReactStep {
        ReactStep::Action { thought: String::new(), tool: tool.into(), input: ActionInput::Json(input) }
    }

    fn without_thought(step: ReactStep) -> ReactStep {
        match step {
            ReactStep::Action { tool, input, .. } => {
                ReactStep::Action { thought: String::new(), tool, input }
            }
            ReactStep::Final { output, .. } => ReactStep::Final { thought: String::new(), output },
        }
    }

    #[test]
    fn reads_a_clean_action() {
        let step = parse("Thought: I need math\nAction: calculator\nAction Input: {\"expression\": \"2*7\"}")
            .expect("parse");
        assert_eq!(
            step,
            ReactStep::Action {
                thought: "I need math".into(),
                tool: "calculator".into(),
                input: ActionInput::Json(json!({"expression": "2*7"}))
            }
        );
    }

    #[test]
    fn tolerates_case_spacing_emphasis_numbers_and_fences() {
        let cases = [
            "thought: hmm\naction:   Calculator  \naction input:{\"expression\": \"1\"}",
            "**Thought:** hmm\n**Action:** Calculator\n**Action Input:** {\"expression\": \"1\"}",
            "Thought: hmm\nAction 1: Calculator\nAction 1 Input: {\"expression\": \"1\"}",
            "Thought: hmm\nAction: `Calculator`\nAction Input: ```json\n{\"expression\": \"1\"}\n```",
            "Thought: hmm\nAction: Calculator\nAction Input: {\"expression\": \"1\"}\nObservation: 1\nThought: done",
            "Thought: hmm\r\nAction: Calculator\r\nAction Input: {\"expression\": \"1\"",
        ];
        for text in cases {
            let step = without_thought(parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}")));
            assert_eq!(step, action("Calculator", json!({"expression": "1"})), "{text:?}");
        }
    }

    #[test]
    fn plain_text_inputs_are_kept_as_text() {
        let step =
            parse("Thought: look it up\nAction: search\nAction Input: \"weather in Paris\"").expect("parse");
        let ReactStep::Action { input, .. } = step else { panic!("not an action") };
        assert_eq!(input, ActionInput::Text("weather in Paris".into()));
    }

    #[test]
    fn final_answers_win_and_keep_their_text() {
        let step = parse("Thought: I now know the final answer\nFinal Answer: Paris is\n- big\n- old")
            .expect("parse");
        assert_eq!(
            step,
            ReactStep::Final {
                thought: "I now know the final answer".into(),
                output: "Paris is\n- big\n- old".into()
            }
        );
        let fenced = parse("Final Answer: ```json\n{\"answer\": 1}\n```").expect("parse");
        assert_eq!(
            without_thought(fenced),
            ReactStep::Final { thought: String::new(), output: "{\"answer\": 1}".into() }
        );
        let both = parse("Thought: x\nAction: calculator\nAction Input: {}\nFinal Answer: 3").expect("parse");
        assert!(matches!(both, ReactStep::Final { output, .. } if output == "3"));
    }

    #[test]
    fn reports_what_is_missing() {
        assert_eq!(parse("I think the answer is 4."), Err(ParseError::MissingAction));
        assert_eq!(parse("Thought: x\nAction: calculator"), Err(ParseError::MissingActionInput));
        assert_eq!(parse("  \n"), Err(ParseError::Empty));
        assert_eq!(parse("Thought: x\nAction:\nAction Input: {}"), Err(ParseError::MissingAction));
    }

    #[test]
    fn labels_inside_prose_are_not_labels() {
        assert_eq!(parse("The final answer: is unclear"), Err(ParseError::MissingAction));
    }
}

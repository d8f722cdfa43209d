//! Streamed answers (`"stream": true`): a completion cut into OpenAI's `chat.completion.chunk`
//! server-sent events: the role, the content word by word, each tool call's name then its
//! arguments in pieces, the finish reason, the usage when `stream_options.include_usage` asks for
//! it (and the reply has one), and `data: [DONE]`.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::{json, Value};

/// Characters of tool-call arguments per chunk.
const ARGUMENT_PIECE: usize = 16;

/// The events of `completion` (a chat-completion body), or `None` when it is not one.
pub fn events(completion: &Value, include_usage: bool) -> Option<Vec<String>> {
    let choice = completion.pointer("/choices/0")?;
    let message = choice.get("message")?;
    let id = completion.get("id").cloned().unwrap_or_else(|| json!("chatcmpl-fake"));
    let created = completion.get("created").cloned().unwrap_or_else(|| json!(0));
    let model = completion["model"].clone();
    let head = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model});
    let chunk = |choices: Value| {
        let mut body = head.clone();
        body["choices"] = choices;
        format!("data: {body}\n\n")
    };
    let delta = |delta: Value| chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]));
    let mut events = vec![delta(json!({"role": "assistant", "content": ""}))];
    if let Some(content) = message["content"].as_str() {
        events.extend(words(content).map(|word| delta(json!({"content": word}))));
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let function = &call["function"];
        events.push(delta(json!({"tool_calls": [{
            "index": index, "id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }]})));
        let arguments = function["arguments"].as_str().unwrap_or_default();
        for piece in pieces(arguments, ARGUMENT_PIECE) {
            events.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})));
        }
    }
    let finish = choice.get("finish_reason").cloned().unwrap_or_else(|| json!("stop"));
    events.push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}])));
    // A reply without usage (as llama.cpp's server streams) sends none even when asked.
    if let Some(usage) = completion.get("usage").filter(|u| include_usage && !u.is_null()) {
        let mut body = head.clone();
        body["choices"] = json!([]);
        body["usage"] = usage.clone();
        events.push(format!("data: {body}\n\n"));
    }
    events.push("data: [DONE]\n\n".to_owned());
    Some(events)
}

/// A `text/event-stream` response sending `events` with `gap` between them.
pub fn response(events: Vec<String>, gap: Duration, headers: &[(String, String)]) -> Response {
    let stream =
        futures_util::stream::iter(events.into_iter().enumerate()).then(move |(i, event)| async move {
            if i > 0 && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            Ok::<_, std::convert::Infallible>(event)
        });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    let map = response.headers_mut();
    map.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    map.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    super::add_headers(&mut response, headers);
    response
}

/// `text` as words, each with the whitespace that follows it (joined, they are `text` again).
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let end = rest[word_end..].find(|c: char| !c.is_whitespace()).map_or(rest.len(), |at| word_end + at);
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// `text` in pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(event: &str) -> Value {
        let json =
            event.strip_prefix("data: ").and_then(|e| e.strip_suffix("\n\n")).expect("an SSE data line");
        serde_json::from_str(json).expect("JSON")
    }

    #[test]
    fn words_rejoin_to_the_text() {
        for text in ["", "one", "two words", " lead and trail  ", "a\n\nb\tc", "héllo wörld"] {
            assert_eq!(words(text).collect::<String>(), text);
        }
        assert_eq!(words("a b  c").collect::<Vec<_>>(), ["a ", "b  ", "c"]);
    }

    #[test]
    fn a_completion_streams_as_chunks_that_add_up_to_it() {
        let completion = json!({
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me compute that.",
                "tool_calls": [{"id": "c1", "type": "function",
                                "function": {"name": "calculator", "arguments": "{\"expression\": \"6*7 + 1000000\"}"}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        });
        let all = events(&completion, true).expect("a completion");
        assert_eq!(all.last().map(String::as_str), Some("data: [DONE]\n\n"));
        let chunks: Vec<Value> = all[..all.len() - 1].iter().map(|e| data(e)).collect();
        let content: String = chunks
            .iter()
            .filter_map(|c| c.pointer("/choices/0/delta/content").and_then(Value::as_str))
            .collect();
        assert_eq!(content, "Let me compute that.");
        let arguments: String = chunks
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/tool_calls/0/function/arguments").and_then(Value::as_str)
            })
            .collect();
        assert_eq!(arguments, "{\"expression\": \"6*7 + 1000000\"}");
        assert!(chunks.iter().any(|c| c.pointer("/choices/0/delta/tool_calls/0/id") == Some(&json!("c1"))));
        let finish: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c.pointer("/choices/0/finish_reason"))
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(finish, [&json!("tool_calls")]);
        assert_eq!(chunks.last().map(|c| c["usage"]["total_tokens"].clone()), Some(json!(7)));
        assert!(events(&json!({"error": {"message": "x"}}), false).is_none());
    }
}

//! Scripts: loading and its error messages, matching, `times`, templates, and the replies.

use std::sync::atomic::AtomicU64;

use serde_json::{json, Value};

use super::{Request, Script};

fn script(value: Value) -> Script {
    Script::from_value(value).expect("a valid script")
}

fn error_of(value: Value) -> String {
    Script::from_value(value).expect_err("an invalid script").to_string()
}

/// The rule that answers `body` and the reply's body (or the render error).
fn answer(script: &Script, body: &Value) -> Option<(String, Result<Value, String>)> {
    let ids = AtomicU64::new(0);
    let request = Request::read(body);
    script.answer(&request, &ids).map(|(label, reply)| (label, reply.map(|r| r.body)))
}

fn rule_of(script: &Script, body: &Value) -> Option<String> {
    answer(script, body).map(|(label, _)| label)
}

fn content(body: &Value) -> &str {
    body.pointer("/choices/0/message/content").and_then(Value::as_str).unwrap_or_default()
}

fn chat(messages: Value) -> Value {
    json!({"model": "gpt-4o-mini", "messages": messages})
}

#[test]
fn bad_scripts_are_refused_with_the_place_that_is_wrong() {
    let cases = [
        (json!({}), "missing field `rules`"),
        (json!({"rules": []}), "rules: a script needs at least one rule"),
        (
            json!({"rules": [{"reply": {"text": "x"}, "extra": 1}]}),
            "rules[0].extra: unknown field `extra`, expected one of `name`, `when`, `times`, `reply`",
        ),
        (
            json!({"rules": [{"when": {"call": 0}, "reply": {"text": "x"}}]}),
            "rules[0].when.call: must be a position",
        ),
        (
            json!({"rules": [{"when": {"call": "2"}, "reply": {"text": "x"}}]}),
            "rules[0].when.call: must be a position",
        ),
        (
            json!({"rules": [{"when": {"message": {"regex": "("}}, "reply": {"text": "x"}}]}),
            "rules[0].when.message: invalid regex",
        ),
        (
            json!({"rules": [{"when": {"message": 3}, "reply": {"text": "x"}}]}),
            "rules[0].when.message: must be a string",
        ),
        (
            json!({"rules": [{"when": {"last_role": "robot"}, "reply": {"text": "x"}}]}),
            "rules[0].when.last_role: unknown variant `robot`",
        ),
        (json!({"rules": [{"reply": {}}]}), "rules[0].reply: give exactly one of text"),
        (
            json!({"rules": [{"reply": {"text": "x", "react": {"final_answer": "y"}}}]}),
            "rules[0].reply: give exactly one of text",
        ),
        (
            json!({"rules": [{"reply": {"tool_calls": []}}]}),
            "rules[0].reply.tool_calls: must hold at least one call",
        ),
        (
            json!({"rules": [{"reply": {"tool_calls": [{"name": ""}]}}]}),
            "rules[0].reply.tool_calls[0].name: must name a tool",
        ),
        (
            json!({"rules": [{"reply": {"tool_calls": [{"name": "t", "arguments": 3}]}}]}),
            "rules[0].reply.tool_calls[0].arguments: must be an object",
        ),
        (
            json!({"rules": [{"reply": {"text": "{{nope}}"}}]}),
            "rules[0].reply.text: unknown placeholder {{nope}}",
        ),
        (
            json!({"rules": [{"reply": {"text": "{{1}}"}}]}),
            "rules[0].reply.text: {{1}} needs when.message to be a regex with at least 1 group(s) (it has 0)",
        ),
        (
            json!({"rules": [{"reply": {"text": "{{message"}}]}),
            "rules[0].reply.text: '{{' without a closing '}}'",
        ),
        (
            json!({"rules": [{"reply": {"tool_calls": [{"name": "t", "arguments": {"a": ["{{x}}"]}}]}}]}),
            "rules[0].reply.tool_calls[0].arguments.a[0]: unknown placeholder {{x}}",
        ),
        (
            json!({"rules": [{"reply": {"error": {"status": 200}}}]}),
            "rules[0].reply.error.status: must be an HTTP error status",
        ),
        (
            json!({"rules": [{"reply": {"error": {"status": 500, "body": {}, "message": "m"}}}]}),
            "rules[0].reply.error: body replaces message",
        ),
        (json!({"rules": [{"reply": {"react": {}}}]}), "rules[0].reply.react: give exactly one of action"),
        (
            json!({"rules": [{"reply": {"react": {"final_answer": "a", "input": {}}}}]}),
            "rules[0].reply.react: input belongs to an action",
        ),
        (
            json!({"rules": [{"reply": {"text": "x", "delay_ms": 600001}}]}),
            "rules[0].reply: delay_ms and chunk_delay_ms must be at most 600000",
        ),
        (
            json!({"rules": [{"reply": {"text": "x", "headers": {"bad name": "v"}}}]}),
            "rules[0].reply.headers: 'bad name' is not a valid header",
        ),
        (
            json!({"rules": [{"times": 0, "reply": {"text": "x"}}]}),
            "rules[0].times: invalid value: integer `0`",
        ),
    ];
    for (value, expected) in cases {
        let message = error_of(value.clone());
        assert!(message.starts_with(expected), "{value}\n  got:      {message}\n  expected: {expected}…");
    }
}

#[test]
fn json_and_toml_scripts_read_the_same() {
    let toml = r#"
        [[rules]]
        name = "calc"
        when = { message = { regex = 'What is (\d+)\+(\d+)' }, tools = true }
        reply = { tool_calls = [{ name = "$first_tool", arguments = { expression = "{{1}}+{{2}}" } }] }

        [[rules]]
        name = "answer"
        reply = { text = "The result is {{tool_result}}." }
    "#;
    let from_toml = Script::from_toml(toml).expect("valid TOML script");
    let from_json = script(json!({"rules": [
        {"name": "calc", "when": {"message": {"regex": "What is (\\d+)\\+(\\d+)"}, "tools": true},
         "reply": {"tool_calls": [{"name": "$first_tool", "arguments": {"expression": "{{1}}+{{2}}"}}]}},
        {"name": "answer", "reply": {"text": "The result is {{tool_result}}."}},
    ]}));
    let first = json!({"model": "m", "messages": [{"role": "user", "content": "What is 2+3?"}],
                       "tools": [{"type": "function", "function": {"name": "calculator"}}]});
    let second = json!({"model": "m", "messages": [
        {"role": "user", "content": "What is 2+3?"},
        {"role": "assistant", "content": null, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"}]});
    for script in [&from_toml, &from_json] {
        let (label, body) = answer(script, &first).expect("a rule");
        let body = body.expect("rendered");
        assert_eq!(label, "calc");
        let call = &body["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "calculator");
        assert_eq!(call["function"]["arguments"], "{\"expression\":\"2+3\"}");
        assert_eq!(call["id"], "call_1");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        let (label, body) = answer(script, &second).expect("a rule");
        assert_eq!((label.as_str(), content(&body.expect("rendered"))), ("answer", "The result is 5."));
    }
    let broken = Script::from_toml("[[rules]]\nreply = ").expect_err("bad TOML").to_string();
    assert!(broken.starts_with("not valid TOML"), "{broken}");
    let broken = Script::from_json("{").expect_err("bad JSON").to_string();
    assert!(broken.starts_with("not valid JSON"), "{broken}");
}

#[test]
fn rules_match_on_model_messages_tools_stream_and_position() {
    let s = script(json!({"rules": [
        {"name": "glob", "when": {"model": "claude-*-opus"}, "reply": {"text": "g"}},
        {"name": "judge", "when": {"system": "strict reviewer"}, "reply": {"text": "j"}},
        {"name": "streaming", "when": {"stream": true}, "reply": {"text": "s"}},
        {"name": "no tools, third call on", "when": {"tools": false, "call": {"at_least": 3}}, "reply": {"text": "n"}},
        {"name": "after tool", "when": {"last_role": "tool", "tool_result": "42"}, "reply": {"text": "t"}},
        {"name": "anywhere", "when": {"any_message": {"regex": "^secret$"}}, "reply": {"text": "a"}},
        {"name": "second or fourth", "when": {"call": [2, 4]}, "reply": {"text": "p"}},
        {"name": "first", "when": {"call": 1, "message": "hello"}, "reply": {"text": "f"}},
    ]}));
    let user = |text: &str| json!({"role": "user", "content": text});
    let assistant = json!({"role": "assistant", "content": "..."});
    let tool = |text: &str| json!({"role": "tool", "tool_call_id": "c", "content": text});
    assert_eq!(rule_of(&s, &json!({"model": "claude-3-opus", "messages": []})).as_deref(), Some("glob"));
    assert_eq!(
        rule_of(&s, &json!({"model": "claude-3-sonnet", "messages": [user("hello")]})).as_deref(),
        Some("first")
    );
    let judged = chat(json!([{"role": "system", "content": "You are a strict reviewer."}, user("x")]));
    assert_eq!(rule_of(&s, &judged).as_deref(), Some("judge"));
    let streamed = json!({"model": "m", "stream": true, "messages": [user("hello")]});
    assert_eq!(rule_of(&s, &streamed).as_deref(), Some("streaming"));
    let third = chat(json!([user("hello"), assistant, user("again"), assistant, user("more")]));
    assert_eq!(rule_of(&s, &third).as_deref(), Some("no tools, third call on"));
    let with_tools = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "t"}}],
                            "messages": [user("hello"), assistant, user("again"), assistant, user("more")]});
    assert_eq!(rule_of(&s, &with_tools), None, "the third call offers tools and no rule takes it");
    let after_tool = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "t"}}],
                            "messages": [user("hello"), assistant, tool("the answer is 42")]});
    assert_eq!(rule_of(&s, &after_tool).as_deref(), Some("after tool"));
    let other_result = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "t"}}],
                              "messages": [user("hello"), assistant, tool("7")]});
    assert_eq!(rule_of(&s, &other_result).as_deref(), Some("second or fourth"));
    assert_eq!(rule_of(&s, &chat(json!([user("secret")]))).as_deref(), Some("anywhere"));
    assert_eq!(rule_of(&s, &chat(json!([user("bye")]))), None);
}

#[test]
fn the_position_counts_assistant_turns_and_the_conversation_is_stable() {
    let body = chat(json!([
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "a"}, {"role": "user", "content": "Observation: 1"},
        {"role": "assistant", "content": "b"}, {"role": "user", "content": "Observation: 2"},
    ]));
    let request = Request::read(&body);
    assert_eq!(request.position(), 3);
    assert_eq!(request.last_message(), "Observation: 2");
    let first = chat(json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]));
    assert_eq!(Request::read(&first).conversation(), request.conversation());
    let other = chat(json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "other"}]));
    assert_ne!(Request::read(&other).conversation(), request.conversation());
    let parts = chat(json!([{"role": "user", "content": [{"type": "text", "text": "look"},
                                                          {"type": "image_url", "image_url": {"url": "data:"}}]}]));
    assert_eq!(Request::read(&parts).last_message(), "look");
}

#[test]
fn times_bound_a_rule_and_reset_restores_it() {
    let s = script(json!({"rules": [
        {"name": "busy", "times": 2, "reply": {"error": {"status": 429, "message": "slow down"}, "headers": {"retry-after": "1"}}},
        {"name": "ok", "reply": {"text": "fine"}},
    ]}));
    let body = chat(json!([{"role": "user", "content": "hi"}]));
    let ids = AtomicU64::new(0);
    let request = Request::read(&body);
    let (label, reply) = s.answer(&request, &ids).expect("a rule");
    let reply = reply.expect("rendered");
    assert_eq!((label.as_str(), reply.status), ("busy", 429));
    assert_eq!(reply.headers, [("retry-after".to_owned(), "1".to_owned())]);
    assert_eq!(reply.body, json!({"error": {"message": "slow down", "type": "fake_error", "code": null}}));
    assert_eq!(rule_of(&s, &body).as_deref(), Some("busy"));
    assert_eq!(rule_of(&s, &body).as_deref(), Some("ok"));
    assert_eq!(rule_of(&s, &body).as_deref(), Some("ok"));
    s.reset();
    assert_eq!(rule_of(&s, &body).as_deref(), Some("busy"));
}

#[test]
fn first_tool_without_tools_is_an_error_naming_the_rule() {
    let s =
        script(json!({"rules": [{"name": "caller", "reply": {"tool_calls": [{"name": "$first_tool"}]}}]}));
    let (label, reply) = answer(&s, &chat(json!([{"role": "user", "content": "x"}]))).expect("a rule");
    assert_eq!(label, "caller");
    assert_eq!(
        reply.expect_err("no tools"),
        "rule 'caller': it calls $first_tool, but the request offers no tools"
    );
}

#[test]
fn replies_carry_usage_delays_literal_bodies_and_raw_arguments() {
    let s = script(json!({"rules": [
        {"when": {"message": "raw"}, "reply": {"tool_calls": [{"id": "fixed", "name": "t", "arguments": "{\"a\": "}],
                                               "text": "calling", "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                                               "delay_ms": 250, "chunk_delay_ms": 20}},
        {"when": {"message": "literal"}, "reply": {"error": {"status": 400, "body": "tools are not supported"}}},
    ]}));
    let body = chat(json!([{"role": "user", "content": "raw"}]));
    let ids = AtomicU64::new(0);
    let (_, reply) = s.answer(&Request::read(&body), &ids).expect("a rule");
    let reply = reply.expect("rendered");
    assert_eq!(reply.delay, std::time::Duration::from_millis(250));
    assert_eq!(reply.chunk_delay, std::time::Duration::from_millis(20));
    let message = &reply.body["choices"][0]["message"];
    assert_eq!(
        (message["content"].as_str(), message["tool_calls"][0]["id"].as_str()),
        (Some("calling"), Some("fixed"))
    );
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{\"a\": ");
    assert_eq!(reply.body["usage"], json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}));
    let body = chat(json!([{"role": "user", "content": "literal"}]));
    let (_, reply) = s.answer(&Request::read(&body), &ids).expect("a rule");
    let reply = reply.expect("rendered");
    assert_eq!((reply.status, reply.body), (400, json!("tools are not supported")));
}

#[test]
fn usage_false_reports_none_streamed_or_not() {
    let s = script(json!({"rules": [{"reply": {"text": "quiet", "usage": false}}]}));
    let body = chat(json!([{"role": "user", "content": "x"}]));
    let ids = AtomicU64::new(0);
    let (_, reply) = s.answer(&Request::read(&body), &ids).expect("a rule");
    let reply = reply.expect("rendered");
    assert_eq!(reply.body["choices"][0]["message"]["content"], "quiet");
    assert!(reply.body.get("usage").is_none(), "no usage: {}", reply.body);
    let events = crate::stream::events(&reply.body, true).expect("a completion");
    assert!(events.iter().all(|e| !e.contains("\"usage\"")), "no usage chunk even when asked: {events:?}");
    assert_eq!(events.last().map(String::as_str), Some("data: [DONE]\n\n"));
    let wrong = serde_json::from_value::<super::spec::ScriptSpec>(
        json!({"rules": [{"reply": {"text": "t", "usage": "none"}}]}),
    );
    assert!(wrong.is_err(), "usage is counts or a boolean");
}

#[test]
fn a_tool_result_condition_needs_a_tool_result() {
    let s = script(json!({"rules": [
        {"name": "after a tool", "when": {"tool_result": {"regex": ".*"}}, "reply": {"text": "t"}},
        {"name": "other", "reply": {"text": "o"}},
    ]}));
    assert_eq!(rule_of(&s, &chat(json!([{"role": "user", "content": "x"}]))).as_deref(), Some("other"));
    let with_tool =
        chat(json!([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": ""}]));
    assert_eq!(rule_of(&s, &with_tool).as_deref(), Some("after a tool"));
}

#[test]
fn a_reply_that_cannot_be_made_does_not_use_up_its_rule() {
    let s = script(
        json!({"rules": [{"name": "once", "times": 1, "reply": {"tool_calls": [{"name": "$first_tool"}]}}]}),
    );
    let without_tools = chat(json!([{"role": "user", "content": "x"}]));
    assert!(answer(&s, &without_tools).expect("the rule").1.is_err());
    let with_tools = json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
                            "tools": [{"type": "function", "function": {"name": "calculator"}}]});
    assert!(answer(&s, &with_tools).expect("the rule, still unused").1.is_ok());
    assert!(answer(&s, &with_tools).is_none(), "used once");
}

#[test]
fn open_writes_literal_braces_and_completions_have_ids() {
    let s = script(json!({"rules": [{"reply": {"text": "{{open}}name}} is {{model}}"}}]}));
    let (_, body) = answer(&s, &chat(json!([]))).expect("a rule");
    let body = body.expect("rendered");
    assert_eq!(content(&body), "{{name}} is gpt-4o-mini");
    assert!(body["id"].as_str().is_some_and(|id| id.starts_with("chatcmpl-fake-")), "{body}");
    assert!(body["created"].as_u64().is_some_and(|t| t > 1_700_000_000), "{body}");
    assert_eq!(
        (body["object"].as_str(), body["model"].as_str()),
        (Some("chat.completion"), Some("gpt-4o-mini"))
    );
    let single = Script::single_reply("Final Answer: {{kept}}", 0).expect("a script");
    let (label, body) = answer(&single, &chat(json!([]))).expect("a rule");
    assert_eq!((label.as_str(), content(&body.expect("rendered"))), ("--reply", "Final Answer: {{kept}}"));
}

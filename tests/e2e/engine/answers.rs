//! A crew's answer end to end, through the worker, the provider's wire format and the HTTP
//! views of the run: messages, tool calls and events; NUL characters from the model; an image a
//! tool returns, sent to the model as a multimodal message.

use super::*;

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn native_tool_call_then_final_answer(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "2*(3+4)"}))]),
        FakeReply::text("The answer is 14."),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "The answer is 14.");
    assert_eq!(out.run["status"], "completed");
    assert_eq!(out.run["output"], json!({"raw": "The answer is 14.", "json": null}));
    assert_eq!((&out.run["tasks"][0]["status"], &out.run["error"]), (&json!("completed"), &Value::Null));
    assert_eq!(
        out.run["usage"],
        json!({"llm_calls": 2, "prompt_tokens": 20, "completion_tokens": 10, "cached_tokens": 0, "estimated_tokens": 0, "tool_calls": 1, "cost_usd": 0.0})
    );
    assert_eq!(out.roles(), ["system", "user", "assistant", "tool", "user", "assistant"]);
    assert!(out.content(0).contains("You are Analyst of tides."), "{}", out.content(0));
    assert!(out.content(1).contains("Current Task: Study tides"), "{}", out.content(1));
    assert_eq!(
        out.messages[2]["tool_calls"],
        json!([{"id": "c1", "name": "calculator", "arguments": "{\"expression\":\"2*(3+4)\"}"}])
    );
    assert_eq!((out.messages[3]["tool_call_id"].as_str(), out.content(3)), (Some("c1"), "14"));
    assert!(out.content(4).starts_with("Analyze the tool result"));
    assert_eq!(out.content(5), "The answer is 14.");
    assert!(out.messages.iter().all(|m| m["task"] == "t" && m["agent"] == "a"));
    assert_eq!(
        out.calls(),
        [succeeded("t#1/c1", "calculator", json!({"expression": "2*(3+4)"}), "14", false)]
    );

    assert_eq!(out.event_types(), expected_events(&["llm.finished", "tool.started", "tool.finished"]));
    assert_eq!(out.data("task.started")[0], &json!({"task": "t", "agent": "a"}));
    assert_eq!(out.data("llm.started")[0], &json!({"model": "openai/test-model", "iteration": 1}));
    let finished = out.data("llm.finished")[1];
    assert_eq!((&finished["iteration"], &finished["usage"]["prompt_tokens"]), (&json!(2), &json!(10)));
    assert_eq!(
        out.data("tool.started")[0],
        &json!({"tool_call_id": "t#1/c1", "tool": "calculator", "arguments": {"expression": "2*(3+4)"}})
    );
    let tool = out.data("tool.finished")[0];
    assert_eq!((&tool["observation"], &tool["cached"]), (&json!("14"), &json!(false)));
    assert_eq!(out.data("agent.final_answer")[0], &json!({"output": "The answer is 14."}));
    assert_eq!(out.data("task.completed")[0], &json!({"task": "t", "output": "The answer is 14."}));
    assert_eq!(out.data("run.completed")[0], &json!({"output": "The answer is 14."}));

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(offered(&requests[0]), ["calculator"]);
    assert!(requests[0].get("stop").is_none(), "no stop words in native mode");
    let second = sent(&requests[1]);
    assert_eq!(second.len(), 5);
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[3], json!({"role": "tool", "content": "14", "tool_call_id": "c1"}));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn nul_characters_from_the_model_are_replaced_not_fatal(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "6*7", "note": "a\u{0}b"}))]),
        FakeReply::text("42\u{0}!"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;
    assert_eq!(out.run["status"], "completed", "{}", out.run);
    assert_eq!(out.raw(), "42\u{FFFD}!");
    assert_eq!(out.calls()[0]["arguments"], json!({"expression": "6*7", "note": "a\u{FFFD}b"}));
    assert_eq!(out.calls()[0]["result"], "42");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_image_observation_arrives_as_a_multimodal_message(pool: PgPool) {
    let h = Harness::start_with(pool, true, allow_loopback).await;
    let url = png_tool().await;
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "lookup_order", json!({"order_id": "A1"}))]),
        FakeReply::text("A tiny PNG."),
    ]);
    let out = h
        .run(&crew(json!(["lookup_order"]), "native", json!({"tools": [lookup_tool(&url, json!({}))]})))
        .await;
    assert_eq!(out.raw(), "A tiny PNG.");
    let finished = out.data("tool.finished");
    assert_eq!(
        (finished[0]["media_type"].as_str(), finished[0]["bytes"].as_u64()),
        (Some("image/png"), Some(8))
    );
    let request = &h.fake.requests()[1];
    let image = sent(request).iter().find(|m| m["content"].is_array()).expect("a multimodal message");
    assert_eq!(image["role"], "user");
    assert_eq!(image["content"][1]["type"], "image_url");
    assert!(image["content"][1]["image_url"]["url"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
    assert!(!out.events.iter().any(|e| e.to_string().contains("base64")), "no image data in events");
}

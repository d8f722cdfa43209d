//! What the provider does to a run: tools refused with a 400 (the ReAct fallback), rate limits
//! and Retry-After, server errors and timeouts retried, a bad key failing the run without leaking.

use super::*;

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn tools_rejected_with_400_fall_back_to_react(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::error(400, "tools is not supported with this model"),
        FakeReply::text("Thought: add\nAction: calculator\nAction Input: {\"expression\": \"1+2\"}"),
        FakeReply::text("Final Answer: 3"),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "3");
    assert_eq!(
        out.event_types(),
        expected_events(&[
            "agent.fallback",
            "llm.started",
            "llm.finished",
            "agent.thought",
            "tool.started",
            "tool.finished"
        ])
    );
    let fallback = out.data("agent.fallback")[0];
    assert_eq!((&fallback["from"], &fallback["to"]), (&json!("native"), &json!("react")));
    let reason = fallback["reason"].as_str().expect("reason");
    assert!(reason.contains("400") && reason.contains("tools is not supported"), "{reason}");
    assert_eq!(out.roles(), ["system", "user", "user", "assistant", "user", "assistant"]);
    assert!(out.content(2).starts_with("Native tool calling is not available."));
    assert_eq!(out.content(4), "Observation: 3");
    assert_eq!(out.calls(), [succeeded("t#1/react", "calculator", json!({"expression": "1+2"}), "3", false)]);
    assert_eq!(out.run["usage"]["llm_calls"], 3, "every call sent is counted, the rejected one too");

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3, "a 400 is not retried");
    assert_eq!((offered(&requests[0]), requests[0].get("stop")), (vec!["calculator"], None));
    for request in &requests[1..] {
        assert!(request.get("tools").is_none());
        assert_eq!(request["stop"], json!([REACT_STOP]));
    }
    let notice = last_sent(&requests[1]);
    assert!(notice.starts_with("Native tool calling is not available.") && notice.contains("Action Input:"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn rate_limit_waits_for_retry_after(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([
        FakeReply::error(429, "Rate limit reached for requests").with_header("retry-after", "1"),
        FakeReply::text("After the wait."),
    ]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "After the wait.");
    assert_eq!(out.event_types(), ONE_CALL);
    let duration = out.data("llm.finished")[0]["duration_ms"].as_u64().expect("duration");
    // Backoff without the header would wait at most 500 ms.
    assert!(duration >= 1000, "waited only {duration} ms");
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1], "the same request again");
    assert_eq!(out.run["usage"]["llm_calls"], 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn server_error_is_retried(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([FakeReply::error(500, "upstream exploded"), FakeReply::text("Recovered.")]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "Recovered.");
    assert_eq!(out.event_types(), ONE_CALL);
    assert_eq!(out.roles(), ["system", "user", "assistant"]);
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1]);
    assert_eq!(
        out.run["usage"],
        json!({"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0, "estimated_tokens": 0, "tool_calls": 0, "cost_usd": 0.0})
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn slow_answers_time_out_and_are_retried(pool: PgPool) {
    let h = Harness::start_with(pool, true, |c| c.llm_timeout = Duration::from_millis(300)).await;
    h.fake
        .push([FakeReply::text("Too late.").with_delay(Duration::from_secs(2)), FakeReply::text("In time.")]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert_eq!(out.raw(), "In time.");
    assert_eq!(out.event_types(), ONE_CALL);
    assert!(out.data("llm.finished")[0]["duration_ms"].as_u64().expect("duration") >= 300);
    assert_eq!(h.fake.requests().len(), 2);
    assert!(out.messages.iter().all(|m| m["content"] != "Too late."));
    assert_eq!(out.run["usage"]["llm_calls"], 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn timeouts_on_every_attempt_fail_the_run(pool: PgPool) {
    let h = Harness::start_with(pool, true, |c| {
        c.llm_timeout = Duration::from_millis(200);
        c.llm_max_attempts = 2;
    })
    .await;
    let slow = FakeReply::text("Too late.").with_delay(Duration::from_secs(2));
    h.fake.push([slow.clone(), slow]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert!(matches!(out.result, Err(EngineError::Failed { kind: ErrorKind::Timeout, .. })));
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "timeout");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("did not answer within the request timeout of 200ms"), "{message}");
    assert_eq!(h.fake.requests().len(), 2);
    assert_eq!(out.event_types(), FAILED_CALL);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn llm_authentication_failure_fails_the_run_without_leaking_the_key(pool: PgPool) {
    const KEY: &str = "sk-e2e-secret-key-0123456789";
    let h = Harness::start_with(pool, true, |c| {
        c.providers.get_mut("openai").expect("openai").api_key = Some(Secret::new(KEY));
    })
    .await;
    h.fake.push([FakeReply::error(401, &format!("Incorrect API key provided: {KEY}."))]);
    let out = h.run(&crew(json!([]), "auto", json!({}))).await;

    assert!(
        matches!(out.result, Err(EngineError::Failed { kind: ErrorKind::LlmError, .. })),
        "{:?}",
        out.result
    );
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["tasks"][0]["status"], "failed");
    assert_eq!(out.run["output"], Value::Null);
    assert_eq!(out.run["error"]["kind"], "llm_error");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("401") && message.contains("[redacted]"), "{message}");
    assert_eq!(out.event_types(), FAILED_CALL);
    assert_eq!(out.data("task.failed")[0], &json!({"task": "t", "error": message}));
    assert_eq!(out.data("run.failed")[0], &json!({"error": {"kind": "llm_error", "message": message}}));
    assert_eq!(out.run["usage"]["llm_calls"], 1, "the call was sent: it is counted");

    let headers = h.fake.request_headers();
    assert_eq!(headers.len(), 1, "a 401 is not retried");
    let auth = headers[0].get("authorization").and_then(|v| v.to_str().ok());
    assert_eq!(auth, Some(format!("Bearer {KEY}").as_str()), "the key was sent to the provider");
    for stored in [&out.run, &json!(out.messages), &json!(out.tool_calls), &json!(out.events)] {
        assert!(!stored.to_string().contains(KEY), "the key leaked: {stored}");
    }
}

//! The OpenAI-compatible client against a scripted local server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;
use crate::fake_llm::{FakeLlm, FakeReply};
use crate::outbound::Secret;

fn ok(body: Value) -> FakeReply {
    FakeReply::ok(body)
}

fn status(code: u16, body: Value) -> FakeReply {
    FakeReply { status: code, ..FakeReply::ok(body) }
}

/// A fake provider serving `replies`.
async fn serve(replies: Vec<FakeReply>) -> (String, FakeLlm) {
    let fake = FakeLlm::start().await.expect("fake LLM");
    fake.push(replies);
    (fake.base_url(), fake)
}

fn client(base: &str, policy: RetryPolicy) -> OpenAiClient {
    let backoff = Backoff::with_jitter(policy, Arc::new(|| 1.0));
    OpenAiClient::new(reqwest::Client::new(), base, Some(Secret::new("sk-test-secret")), backoff)
}

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
    }
}

fn answer(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 12, "completion_tokens": 3}})
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "gpt-test".into(),
        messages: vec![
            ChatMessage::system("You are terse."),
            ChatMessage {
                role: Role::Assistant,
                content: None,
                tool_calls: vec![ToolCallRequest {
                    id: "c0".into(),
                    name: "calculator".into(),
                    arguments: "{}".into(),
                }],
                tool_call_id: None,
                images: Vec::new(),
            },
            ChatMessage::tool("c0", "42"),
        ],
        tools: vec![ToolDefinition {
            name: "calculator".into(),
            description: "math".into(),
            parameters: json!({"type": "object"}),
        }],
        stop: vec!["\nObservation:".into()],
        temperature: Some(0.2),
        max_tokens: Some(64),
        response_schema: None,
        deltas: None,
    }
}

#[tokio::test]
async fn sends_the_openai_shape_and_reads_tool_calls() {
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"1+1\"}"}},
        {"type": "function", "function": {"name": "current_time", "arguments": {}}}
    ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 7}});
    let (base, script) = serve(vec![ok(reply)]).await;
    let response = client(&base, fast_policy()).chat(&request()).await.expect("chat");
    assert_eq!(
        response.usage,
        TokenUsage { prompt_tokens: 5, completion_tokens: 7, cached_tokens: 0, estimated: false }
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.tool_calls[0].arguments, "{\"expression\": \"1+1\"}");
    assert_eq!(
        (response.tool_calls[1].id.as_str(), response.tool_calls[1].arguments.as_str()),
        ("call_1", "{}")
    );

    let (headers, body) = (&script.request_headers()[0], &script.requests()[0]);
    assert_eq!(headers["authorization"], "Bearer sk-test-secret");
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stop"], json!(["\nObservation:"]));
    assert_eq!((body["temperature"].as_f64(), body["max_tokens"].as_u64()), (Some(0.2), Some(64)));
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {
        "name": "calculator", "description": "math", "parameters": {"type": "object"}}})
    );
    assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["name"], "calculator");
    assert_eq!(body["messages"][1]["content"], Value::Null);
    assert_eq!(body["messages"][2], json!({"role": "tool", "content": "42", "tool_call_id": "c0"}));
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let (base, script) = serve(vec![
        status(500, json!({"error": {"message": "boom"}})),
        status(503, json!("busy")),
        ok(answer("done")),
    ])
    .await;
    let response = client(&base, fast_policy()).chat(&request()).await.expect("chat");
    assert_eq!(response.content.as_deref(), Some("done"));
    assert_eq!(script.requests().len(), 3);
}

#[tokio::test]
async fn rate_limits_honour_retry_after() {
    let limited =
        status(429, json!({"error": {"message": "slow down"}})).with_header("retry-after-ms", "300");
    let (base, script) = serve(vec![limited, ok(answer("done"))]).await;
    let started = Instant::now();
    client(&base, fast_policy()).chat(&request()).await.expect("chat");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn persistent_rate_limits_end_classified_with_the_wait() {
    let limited = || status(429, json!({"error": {"message": "quota"}})).with_header("retry-after", "0");
    let (base, script) = serve(vec![limited(), limited(), limited(), limited()]).await;
    let error = client(&base, fast_policy()).chat(&request()).await.expect_err("rate limited");
    assert_eq!(error.kind, LlmErrorKind::RateLimited);
    assert_eq!(error.retry_after, Some(Duration::ZERO));
    assert_eq!(script.requests().len(), 3, "max_attempts bounds the calls");

    let long =
        status(429, json!({"error": {"message": "come back later"}})).with_header("retry-after", "3600");
    let (base, script) = serve(vec![long]).await;
    let error = client(&base, fast_policy()).chat(&request()).await.expect_err("rate limited");
    assert_eq!((error.kind, error.retry_after), (LlmErrorKind::RateLimited, Some(Duration::from_secs(3600))));
    assert_eq!(script.requests().len(), 1, "a long wait is the caller's to schedule");
}

#[tokio::test]
async fn client_errors_are_classified_and_not_retried() {
    let cases = [
        (
            400,
            json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 8192 tokens"}}),
            LlmErrorKind::ContextWindowExceeded,
        ),
        (
            400,
            json!({"error": {"message": "prompt is too long: 200000 tokens > 100000 maximum"}}),
            LlmErrorKind::ContextWindowExceeded,
        ),
        (
            400,
            json!({"error": {"message": "This model does not support tools"}}),
            LlmErrorKind::ToolsUnsupported,
        ),
        (
            422,
            json!({"error": "function calling is not supported by this backend"}),
            LlmErrorKind::ToolsUnsupported,
        ),
        (
            401,
            json!({"error": {"message": "Incorrect API key provided: sk-test-secret"}}),
            LlmErrorKind::Authentication,
        ),
        (404, json!({"error": {"message": "model not found"}}), LlmErrorKind::Other),
        // llama.cpp's server (llama-cpp-python 0.3.36) refuses a `json_schema` response format
        // with a 500: the same request fails again, so it is not retried.
        (
            500,
            json!({"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}", "type": "internal_server_error", "param": null, "code": null}}),
            LlmErrorKind::SchemaUnsupported,
        ),
    ];
    for (code, body, kind) in cases {
        let (base, script) = serve(vec![status(code, body.clone())]).await;
        let error = client(&base, fast_policy()).chat(&request()).await.expect_err("error");
        assert_eq!(error.kind, kind, "{body}");
        assert!(!error.message.contains("sk-test-secret"), "key leaked: {}", error.message);
        assert_eq!(script.requests().len(), 1);
    }
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let slow = || ok(answer("late")).with_delay(Duration::from_millis(400));
    let (base, script) = serve(vec![slow(), slow(), slow()]).await;
    let policy = RetryPolicy { request_timeout: Duration::from_millis(100), ..fast_policy() };
    let error = client(&base, policy).chat(&request()).await.expect_err("timeout");
    assert_eq!(error.kind, LlmErrorKind::Timeout);
    assert!(
        error.message.contains("did not answer within the request timeout of 100ms"),
        "{}",
        error.message
    );
    assert_eq!(script.requests().len(), 3);
}

#[tokio::test]
async fn unreachable_providers_fail_after_the_attempts() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    drop(listener);
    let error = client(&base, fast_policy()).chat(&request()).await.expect_err("refused");
    assert_eq!(error.kind, LlmErrorKind::Other);
    assert!(error.message.contains("request to the provider failed"), "{}", error.message);
    assert!(error.message.contains("tcp connect error"), "the cause is named: {}", error.message);
}

#[tokio::test]
async fn malformed_answers_are_errors() {
    let (base, _) = serve(vec![
        ok(json!({"choices": []})),
        ok(json!({"error": {"message": "maximum context length exceeded"}})),
    ])
    .await;
    let client = client(&base, fast_policy());
    assert_eq!(client.chat(&request()).await.expect_err("no choices").kind, LlmErrorKind::Other);
    assert_eq!(
        client.chat(&request()).await.expect_err("error body").kind,
        LlmErrorKind::ContextWindowExceeded
    );
}

#[test]
fn registry_resolves_provider_prefixes_and_bare_models() {
    let fake: Arc<dyn LlmClient> = Arc::new(client("http://127.0.0.1:9/v1", fast_policy()));
    let registry = LlmRegistry::new("openai/gpt-4o-mini")
        .with_client("openai", fake.clone(), true)
        .with_client("local", fake, false);
    let default = registry.resolve(None).expect("default");
    assert_eq!((default.provider.as_str(), default.model.as_str()), ("openai", "gpt-4o-mini"));
    let local = registry.resolve(Some("local/meta-llama/Llama-3")).expect("local");
    assert_eq!((local.model.as_str(), local.native_tools), ("meta-llama/Llama-3", false));
    assert_eq!(registry.resolve(Some("gpt-4o")).expect("bare").provider, "openai");
    assert!(registry.resolve(Some("other/x")).is_err());
}

#[tokio::test]
async fn rate_limits_are_reported_to_the_hook() {
    let limited = status(429, json!({"error": {"message": "slow"}})).with_header("retry-after-ms", "120");
    let (base, _) = serve(vec![limited, ok(answer("done"))]).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let hook: RateLimitHook = Arc::new(move |wait| sink.lock().expect("lock").push(wait));
    client(&base, fast_policy()).on_rate_limit(hook).chat(&request()).await.expect("chat");
    assert_eq!(*seen.lock().expect("lock"), [Duration::from_millis(120)]);
}

#[tokio::test]
async fn images_are_sent_as_content_parts() {
    let (base, fake) = serve(vec![ok(answer("seen"))]).await;
    let image = Image { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() };
    let request = ChatRequest {
        model: "gpt-test".into(),
        messages: vec![ChatMessage { images: vec![image], ..ChatMessage::user("Look:") }],
        ..ChatRequest::default()
    };
    client(&base, fast_policy()).chat(&request).await.expect("chat");
    assert_eq!(
        fake.requests()[0]["messages"][0]["content"],
        json!([{"type": "text", "text": "Look:"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])
    );
}

/// A request streaming into a recorder of `(attempt, text)`.
type Seen = Arc<std::sync::Mutex<Vec<(u32, String)>>>;

fn streaming(text_only: bool) -> (ChatRequest, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let sink = DeltaSink(Arc::new(move |attempt, text: &str| {
        record.lock().expect("lock").push((attempt, text.to_owned()));
    }));
    let mut request = request();
    if text_only {
        request.stop.clear();
    }
    request.deltas = Some(sink);
    (request, seen)
}

fn joined(seen: &std::sync::Mutex<Vec<(u32, String)>>, attempt: u32) -> String {
    seen.lock().expect("lock").iter().filter(|(a, _)| *a == attempt).map(|(_, t)| t.as_str()).collect()
}

#[tokio::test]
async fn a_streamed_answer_is_handed_over_as_it_arrives_and_assembled() {
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": "Let me compute that for you.",
        "tool_calls": [{"id": "call_9", "type": "function",
                        "function": {"name": "calculator", "arguments": "{\"expression\": \"6*7 + 1000000\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 21, "completion_tokens": 13}});
    let (base, script) = serve(vec![ok(reply).with_chunk_delay(Duration::from_millis(5))]).await;
    let (request, seen) = streaming(true);
    let response = client(&base, fast_policy()).chat(&request).await.expect("chat");
    assert_eq!(response.content.as_deref(), Some("Let me compute that for you."));
    assert_eq!(joined(&seen, 1), "Let me compute that for you.");
    assert!(seen.lock().expect("lock").len() >= 6, "word by word: {:?}", seen.lock().expect("lock"));
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(
        (response.tool_calls[0].id.as_str(), response.tool_calls[0].arguments.as_str()),
        ("call_9", "{\"expression\": \"6*7 + 1000000\"}")
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        response.usage,
        TokenUsage { prompt_tokens: 21, completion_tokens: 13, cached_tokens: 0, estimated: false }
    );
    let body = &script.requests()[0];
    assert_eq!(
        (body["stream"].clone(), body["stream_options"].clone()),
        (json!(true), json!({"include_usage": true}))
    );
}

#[tokio::test]
async fn a_streamed_answer_stops_at_a_stop_sequence_even_if_the_provider_goes_on() {
    let text =
        "Thought: I need it\nAction: calculator\nAction Input: {}\nObservation: a guess\nFinal Answer: 3";
    let (base, _script) = serve(vec![FakeReply::text(text)]).await;
    let (request, seen) = streaming(false);
    let response = client(&base, fast_policy()).chat(&request).await.expect("chat");
    let expected = "Thought: I need it\nAction: calculator\nAction Input: {}";
    assert_eq!(response.content.as_deref(), Some(expected));
    assert_eq!(joined(&seen, 1), expected, "the deltas never showed the stop sequence");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn a_stream_cut_mid_reply_is_retried_and_the_deltas_say_which_attempt() {
    let (base, script) = serve(vec![
        FakeReply::text("one two three four five").cut_after(3),
        FakeReply::text("one two three four five"),
    ])
    .await;
    let (request, seen) = streaming(true);
    let response = client(&base, fast_policy()).chat(&request).await.expect("chat");
    assert_eq!(response.content.as_deref(), Some("one two three four five"));
    assert_eq!(script.requests().len(), 2);
    assert_eq!(joined(&seen, 1), "one two ", "the cut attempt's text");
    assert_eq!(joined(&seen, 2), "one two three four five");
}

#[tokio::test]
async fn a_streaming_request_answered_with_an_error_is_classified_as_usual() {
    let (base, _script) = serve(vec![status(
        400,
        json!({"error": {"message": "tools are not supported", "code": "unsupported"}}),
    )])
    .await;
    let (request, seen) = streaming(true);
    let error = client(&base, fast_policy()).chat(&request).await.expect_err("an error");
    assert!(error.message.contains("400"), "{error:?}");
    assert!(seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_reply_without_usage_gets_an_estimate_streamed_or_not() {
    let text = "The transistor replaced the vacuum tube in nearly every radio by 1960.";
    let (base, script) =
        serve(vec![FakeReply::text(text).without_usage(), FakeReply::text(text).without_usage()]).await;
    let client = client(&base, fast_policy());
    let plain = client.chat(&request()).await.expect("chat");
    let (request, seen) = streaming(true);
    let streamed = client.chat(&request).await.expect("chat");
    assert_eq!(joined(&seen, 1), text);
    assert_eq!(script.requests()[1]["stream_options"]["include_usage"], json!(true), "it was asked for");
    for response in [plain, streamed] {
        let usage = response.usage;
        assert!(usage.estimated, "marked as estimated: {usage:?}");
        assert_eq!(usage.prompt_tokens, estimate::prompt_tokens(&request.messages, &request.tools));
        assert_eq!(usage.completion_tokens, estimate::count(text));
        assert!(usage.completion_tokens >= 12, "a sentence is a dozen tokens or more: {usage:?}");
        assert!(usage.prompt_tokens > usage.completion_tokens, "the prompt holds three messages and a tool");
        assert_eq!(usage.cached_tokens, 0);
    }
}

#[tokio::test]
async fn a_stream_cut_at_a_stop_sequence_is_estimated_from_what_was_kept() {
    // The provider would send its usage after the finish, but the text stops at the stop
    // sequence and the rest is not read.
    let text = "Thought: look it up\nAction: calculator\nAction Input: {}\nObservation: guessed";
    let (base, _script) = serve(vec![FakeReply::text(text)]).await;
    let (request, _seen) = streaming(false);
    let response = client(&base, fast_policy()).chat(&request).await.expect("chat");
    let kept = "Thought: look it up\nAction: calculator\nAction Input: {}";
    assert_eq!(response.content.as_deref(), Some(kept));
    assert!(response.usage.estimated);
    assert_eq!(response.usage.completion_tokens, estimate::count(kept));
}

#[tokio::test]
async fn an_empty_stream_is_asked_again_without_streaming_for_the_servers_error() {
    // llama.cpp's server answers a streamed prompt over its context window with 200 and an
    // event stream that closes at once; unstreamed, it answers 400 with its error.
    let too_long = json!({"error": {"message": "This model's maximum context length is 1024 tokens. However, you requested 1541 tokens (1531 in the messages, 10 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let (base, script) = serve(vec![FakeReply::text("unused").cut_after(0), status(400, too_long)]).await;
    let (request, seen) = streaming(true);
    let error = client(&base, fast_policy()).chat(&request).await.expect_err("too long");
    assert_eq!(error.kind, LlmErrorKind::ContextWindowExceeded);
    assert!(error.message.contains("maximum context length is 1024 tokens"), "{}", error.message);
    let sent = script.requests();
    assert_eq!(sent.len(), 2, "one streamed request, one without streaming, no retries");
    assert_eq!((sent[0]["stream"].clone(), sent[1].get("stream")), (json!(true), None));
    assert!(seen.lock().expect("lock").is_empty());

    // A server that answers the second time is taken at its word.
    let (base, _script) = serve(vec![FakeReply::text("unused").cut_after(0), ok(answer("fine"))]).await;
    let (request, _seen) = streaming(true);
    let response = client(&base, fast_policy()).chat(&request).await.expect("chat");
    assert_eq!((response.content.as_deref(), response.usage.estimated), (Some("fine"), false));
}

//! The provider kinds end to end: a crew kicked off over HTTP runs against a scripted Anthropic
//! Messages API or Azure OpenAI deployment (see `crate::fakes`), which refuses any request its
//! documentation says the real service refuses. Native tools, ReAct stop sequences, images,
//! prompt caching, streaming, structured outputs and their fallback, retried 429 / 529 with their
//! headers, a wrong key; and the crew of both kinds with its cost per task.

use std::time::Duration;

use super::*;
use crate::fakes::anthropic::{self, FakeAnthropic};
use crate::fakes::azure::{self, FakeAzure};
use crate::support::database_text;

const CLAUDE_KEY: &str = "sk-ant-test-key";
const AZURE_KEY: &str = "azure-test-key-0123";

/// Add the providers of `toml` (keys from `CLAUDE_KEY` / `AZURE_KEY`) to `config`.
pub(super) fn add_providers(config: &mut Config, toml: &str) {
    let file: Settings = toml::from_str(toml).expect("provider toml");
    let env = |name: &str| match name {
        "CLAUDE_KEY" => Some(CLAUDE_KEY.to_owned()),
        "AZURE_KEY" => Some(AZURE_KEY.to_owned()),
        "WRONG_KEY" => Some("sk-ant-not-the-key".to_owned()),
        _ => None,
    };
    config.providers.extend(config::providers(&file, env).expect("providers"));
}

fn claude(url: &str, extra: &str) -> String {
    format!("[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{url}\"\napi_key_env = \"CLAUDE_KEY\"\nmax_tokens = 1024\n{extra}\n")
}

fn az(url: &str, extra: &str) -> String {
    format!("[providers.az]\nkind = \"azure\"\nbase_url = \"{url}\"\napi_key_env = \"AZURE_KEY\"\n{extra}\n")
}

/// A one-task crew whose agent uses `llm`.
fn crew_on(llm: &str, tools: Value, tool_calling: &str, extra: Value) -> Value {
    let mut spec = crew(tools, tool_calling, extra);
    spec["agents"][0]["llm"] = json!(llm);
    spec
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_native_tools_images_and_prompt_caching(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool, true, |c| {
        allow_loopback(c);
        add_providers(c, &claude(&fake.url, "prompt_caching = true"));
    })
    .await;
    let url = png_tool().await;
    fake.script.push([
        anthropic::message(
            json!([{"type": "text", "text": "Let me look. "},
                   {"type": "tool_use", "id": "toolu_01", "name": "lookup_order", "input": {"order_id": "A1"}}]),
            "tool_use",
            json!({"input_tokens": 300, "output_tokens": 40, "cache_creation_input_tokens": 200}),
        ),
        anthropic::message(
            json!([{"type": "text", "text": "A tiny PNG."}]),
            "end_turn",
            json!({"input_tokens": 120, "output_tokens": 9, "cache_read_input_tokens": 200}),
        ),
    ]);
    let spec = crew_on(
        "claude/claude-test",
        json!(["lookup_order"]),
        "native",
        json!({"tools": [lookup_tool(&url, json!({}))]}),
    );
    let out = h.run(&spec).await;

    assert_eq!(out.raw(), "A tiny PNG.", "{:?}", out.result);
    let seen = fake.script.seen();
    assert_eq!(
        seen.iter().map(|s| s.status).collect::<Vec<_>>(),
        [200, 200],
        "the fake accepted both requests"
    );
    let headers = &seen[0].headers;
    assert_eq!(headers["x-api-key"], CLAUDE_KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(!headers.contains_key("authorization"));
    let first = &seen[0].body;
    assert_eq!(first["model"], "claude-test");
    assert_eq!(first["max_tokens"], 1024, "the provider's documented default");
    assert_eq!(first["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(first["system"][0]["text"].as_str().is_some_and(|s| s.contains("Analyst of tides")));
    assert_eq!(first["tools"][0]["name"], "lookup_order");
    assert_eq!(first["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    let second = seen[1].body["messages"].as_array().expect("messages");
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(
        second[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_01", "name": "lookup_order", "input": {"order_id": "A1"}})
    );
    let answer = &second[2]["content"];
    assert_eq!(
        (answer[0]["type"].as_str(), answer[0]["tool_use_id"].as_str()),
        (Some("tool_result"), Some("toolu_01"))
    );
    let image = answer.as_array().expect("blocks").iter().find(|b| b["type"] == "image").expect("the image");
    assert_eq!(
        (image["source"]["type"].as_str(), image["source"]["media_type"].as_str()),
        (Some("base64"), Some("image/png"))
    );
    // Input counts the cache's tokens; the cached part is the cache reads.
    assert_eq!(out.run["usage"]["prompt_tokens"], 500 + 320);
    assert_eq!(
        (out.run["usage"]["completion_tokens"].as_i64(), out.run["usage"]["cached_tokens"].as_i64()),
        (Some(49), Some(200))
    );
    let finished = out.data("llm.finished");
    assert_eq!(
        finished[1]["usage"],
        json!({"prompt_tokens": 320, "completion_tokens": 9, "cached_tokens": 200})
    );
    assert_eq!(finished[1]["model"], "claude/claude-test");
    // The journal keeps the engine's messages; the provider got them as three alternating turns,
    // the tool result first in its turn, then the image's caption, the image and the reflection.
    assert_eq!(out.roles(), ["system", "user", "assistant", "tool", "user", "user", "assistant"]);
    let kinds: Vec<&str> =
        answer.as_array().expect("blocks").iter().map(|b| b["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["tool_result", "text", "image", "text"]);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_react_streams_and_stops_at_the_observation(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &claude(&fake.url, ""))).await;
    fake.script.push([
        anthropic::message(
            json!([{"type": "text", "text": "Thought: add\nAction: calculator\nAction Input: {\"expression\": \"1+2\"}"}]),
            "stop_sequence",
            json!({"input_tokens": 50, "output_tokens": 12}),
        ),
        anthropic::text("Thought: done\nFinal Answer: 3", 70, 8),
    ]);
    // Streamed: the text arrives as `text_delta` events.
    let out =
        h.run(&crew_on("claude/claude-test", json!(["calculator"]), "react", json!({"stream": true}))).await;
    assert_eq!(out.raw(), "3", "{:?}", out.result);
    let bodies = fake.script.bodies();
    assert_eq!((&bodies[0]["stream"], &bodies[1]["stream"]), (&json!(true), &json!(true)));
    assert_eq!(bodies[0]["stop_sequences"], json!(["\nObservation:"]));
    assert_eq!(out.run["usage"]["completion_tokens"], 20, "the streams' usage is read");
    assert!(bodies[0].get("tools").is_none(), "ReAct offers tools in the prompt");
    let turns = bodies[1]["messages"].as_array().expect("messages");
    assert_eq!(
        turns.iter().map(|t| t["role"].as_str().unwrap_or_default()).collect::<Vec<_>>(),
        ["user", "assistant", "user"]
    );
    assert_eq!(turns[2]["content"][0]["text"], "Observation: 3");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_overload_and_rate_limits_are_retried_as_their_headers_say(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &claude(&fake.url, ""))).await;
    fake.script.push([
        anthropic::overloaded(),
        anthropic::rate_limited(1),
        anthropic::text("Recovered.", 10, 2),
    ]);
    let out = h.run(&crew_on("claude/claude-test", json!([]), "native", json!({}))).await;
    assert_eq!(out.raw(), "Recovered.", "{:?}", out.result);
    let seen = fake.script.seen();
    assert_eq!(seen.iter().map(|s| s.status).collect::<Vec<_>>(), [529, 429, 200]);
    let waited = seen[2].at - seen[1].at;
    assert!(waited >= Duration::from_millis(950), "retry-after: 1 was honoured ({waited:?})");
    assert_eq!(out.run["usage"]["llm_calls"], 1, "one call, retried inside the client");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_says_its_budget_is_spent_and_the_next_call_waits_for_the_reset(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &claude(&fake.url, ""))).await;
    fake.script.push([
        anthropic::budget_spent(
            anthropic::tool_use(&[("toolu_1", "calculator", json!({"expression": "1+1"}))]),
            2,
        ),
        anthropic::text("2", 10, 1),
    ]);
    let out = h.run(&crew_on("claude/claude-test", json!(["calculator"]), "native", json!({}))).await;
    assert_eq!(out.raw(), "2", "{:?}", out.result);
    let seen = fake.script.seen();
    assert_eq!(seen.iter().map(|s| s.status).collect::<Vec<_>>(), [200, 200], "no call was refused");
    // The reset was dated 2 s after the fake answered, which was after it received the first
    // call (5 ms for reading the wall clock apart from the monotonic one).
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(1_995), "the second call waited for the reset ({gap:?})");
    let throttled = out.data("run.throttled");
    assert_eq!(throttled.len(), 1, "{throttled:?}");
    assert_eq!(throttled[0]["limit"], "provider:claude (provider asked to wait)");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_with_a_wrong_key_fails_the_run_without_showing_the_key(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool.clone(), true, |c| {
        add_providers(c, &claude(&fake.url, "").replace("CLAUDE_KEY", "WRONG_KEY"))
    })
    .await;
    let out = h.run(&crew_on("claude/claude-test", json!([]), "native", json!({}))).await;
    assert_eq!(out.event_types(), FAILED_CALL);
    assert_eq!(out.run["error"]["kind"], "llm_error");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("401") && message.contains("invalid x-api-key"), "{message}");
    assert_eq!(fake.script.seen().len(), 1, "an authentication error is not retried");
    assert!(!database_text(&pool).await.contains("sk-ant-not-the-key"), "the key is stored nowhere");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn anthropic_structured_output_is_a_forced_tool_and_streams(pool: PgPool) {
    let fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &claude(&fake.url, ""))).await;
    fake.script.push([anthropic::message(
        json!([{"type": "tool_use", "id": "toolu_9", "name": "t", "input": {"answer": 42}}]),
        "tool_use",
        json!({"input_tokens": 80, "output_tokens": 15}),
    )]);
    let schema =
        json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let spec = crew_on(
        "claude/claude-test",
        json!([]),
        "native",
        json!({"stream": true, "tasks": [{"output_schema": schema}]}),
    );
    let out = h.run(&spec).await;
    assert_eq!(out.run["output"]["json"], json!({"answer": 42}), "{:?}", out.result);
    let body = &fake.script.bodies()[0];
    assert_eq!(body["stream"], true, "the run streams");
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "t"}));
    assert_eq!(body["tools"][0]["input_schema"], schema);
    assert_eq!(out.run["usage"]["completion_tokens"], 15, "the stream's usage is read");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn azure_calls_the_deployment_with_its_api_version_and_key_header(pool: PgPool) {
    let fake = FakeAzure::start(AZURE_KEY, &["gpt4o-prod"]).await;
    let h =
        Harness::start_with(pool, true, |c| add_providers(c, &az(&fake.url, "api_version = \"2024-10-21\"")))
            .await;
    fake.script.push([
        azure::tool_calls(&[("call_1", "calculator", json!({"expression": "2*7"}))]),
        azure::rate_limited(1),
        azure::answer("The answer is 14.", 900, 12, 512),
    ]);
    let out = h.run(&crew_on("az/gpt4o-prod", json!(["calculator"]), "native", json!({}))).await;
    assert_eq!(out.raw(), "The answer is 14.", "{:?}", out.result);
    let seen = fake.script.seen();
    assert_eq!(seen.iter().map(|s| s.status).collect::<Vec<_>>(), [200, 429, 200]);
    assert_eq!(seen[0].path, "/openai/deployments/gpt4o-prod/chat/completions");
    assert_eq!(seen[0].query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(seen[0].headers["api-key"], AZURE_KEY);
    assert!(seen[2].at - seen[1].at >= Duration::from_millis(950), "retry-after-ms honoured");
    assert_eq!(
        seen[2].body["messages"][3],
        json!({"role": "tool", "content": "14", "tool_call_id": "call_1"})
    );
    assert_eq!(
        (out.run["usage"]["prompt_tokens"].as_i64(), out.run["usage"]["cached_tokens"].as_i64()),
        (Some(910), Some(512))
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn azure_unknown_deployment_fails_the_run_with_the_providers_words(pool: PgPool) {
    let fake = FakeAzure::start(AZURE_KEY, &["gpt4o-prod"]).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &az(&fake.url, ""))).await;
    let out = h.run(&crew_on("az/gpt4o-typo", json!([]), "native", json!({}))).await;
    assert_eq!(out.run["error"]["kind"], "llm_error");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("404") && message.contains("deployment for this resource does not exist"),
        "{message}"
    );
    assert_eq!(
        fake.script.seen()[0].query.as_deref(),
        Some(&*format!("api-version={}", config::AZURE_API_VERSION))
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn structured_output_uses_response_format_and_falls_back_when_refused(pool: PgPool) {
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
                        "additionalProperties": false});
    let spec = |llm: &str| crew_on(llm, json!([]), "native", json!({"tasks": [{"output_schema": schema}]}));

    // A deployment that takes it: the schema goes as a strict json_schema.
    let takes = FakeAzure::start(AZURE_KEY, &["d"]).await;
    let h = Harness::start_with(pool.clone(), true, |c| add_providers(c, &az(&takes.url, ""))).await;
    takes.script.push([azure::answer("{\"answer\": 42}", 50, 5, 0)]);
    let out = h.run(&spec("az/d")).await;
    assert_eq!(out.run["output"]["json"], json!({"answer": 42}), "{:?}", out.result);
    let format = &takes.script.bodies()[0]["response_format"];
    assert_eq!(
        format,
        &json!({"type": "json_schema", "json_schema": {"name": "t", "schema": schema, "strict": true}})
    );

    // One that refuses it: the agent goes on with the prompt's instructions alone, and says so.
    let refuses = FakeAzure::start_with(AZURE_KEY, &["d"], true).await;
    let h = Harness::start_with(pool, true, |c| add_providers(c, &az(&refuses.url, ""))).await;
    refuses.script.push([azure::answer("```json\n{\"answer\": 7}\n```", 50, 5, 0)]);
    let out = h.run(&spec("az/d")).await;
    assert_eq!(out.run["output"]["json"], json!({"answer": 7}), "{:?}", out.result);
    let seen = refuses.script.seen();
    assert_eq!(seen.iter().map(|s| s.status).collect::<Vec<_>>(), [400, 200]);
    assert!(seen[1].body.get("response_format").is_none());
    assert!(
        last_sent(&seen[1].body).contains("MUST be a JSON object"),
        "the prompt still asks for the schema"
    );
    let fallback = out.data("agent.fallback");
    assert_eq!((&fallback[0]["from"], &fallback[0]["to"]), (&json!("native_schema"), &json!("prompt")));
    assert!(fallback[0]["reason"].as_str().is_some_and(|r| r.contains("response_format")), "{fallback:?}");
}

/// The crew of the issue: a researcher on Anthropic, a writer on Azure using the research; each
/// task's cost against figures computed by hand from the configured prices.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_crew_of_an_anthropic_and_an_azure_agent_completes_with_its_cost_per_task(pool: PgPool) {
    let claude_fake = FakeAnthropic::start(CLAUDE_KEY).await;
    let azure_fake = FakeAzure::start(AZURE_KEY, &["writer-4o"]).await;
    let h = Harness::start_with(pool, true, |c| {
        add_providers(
            c,
            &claude(
                &claude_fake.url,
                "prices.\"claude-sonnet\" = { input = 3.0, output = 15.0, cached_input = 0.3 }",
            ),
        );
        add_providers(
            c,
            &az(
                &azure_fake.url,
                "prices.\"writer-4o\" = { input = 2.5, output = 10.0, cached_input = 1.25 }",
            ),
        );
    })
    .await;
    claude_fake.script.push([
        anthropic::tool_use(&[("toolu_1", "calculator", json!({"expression": "6*7"}))]),
        anthropic::message(
            json!([{"type": "text", "text": "Tides rise twice a day; 42."}]),
            "end_turn",
            json!({"input_tokens": 1000, "output_tokens": 500, "cache_read_input_tokens": 2000}),
        ),
    ]);
    azure_fake.script.push([azure::answer("Tides: twice daily (42).", 3000, 200, 1000)]);
    let spec = json!({
        "name": "mixed",
        "agents": [
            {"name": "researcher", "role": "Researcher of {topic}", "goal": "Find facts", "backstory": "Careful.",
             "llm": "claude/claude-sonnet", "tools": ["calculator"]},
            {"name": "writer", "role": "Writer", "goal": "Write", "backstory": "Clear.", "llm": "az/writer-4o"}
        ],
        "tasks": [
            {"name": "research", "description": "Research {topic}", "expected_output": "Facts", "agent": "researcher"},
            {"name": "write", "description": "Write it up", "expected_output": "A sentence", "agent": "writer",
             "context": ["research"]}
        ]
    });
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Tides: twice daily (42).", "{:?}", out.result);
    assert!(
        last_sent(&azure_fake.script.bodies()[0]).contains("Tides rise twice a day; 42."),
        "the research reached the writer"
    );

    // By hand, in dollars per million tokens:
    // research call 1: 10 in × 3 + 5 out × 15 = 105; call 2: (3000 − 2000) in × 3 + 2000 cached × 0.3
    //   + 500 out × 15 = 3000 + 600 + 7500 = 11,100; the task: 11,205 → $0.011205.
    // write: (3000 − 1000) × 2.5 + 1000 × 1.25 + 200 × 10 = 5000 + 1250 + 2000 = 8,250 → $0.00825.
    let lines = out.run["usage_breakdown"].as_array().expect("usage_breakdown");
    let line = |task: &str| lines.iter().find(|l| l["task"] == task).expect(task);
    let research = line("research");
    assert_eq!(
        (research["agent"].as_str(), research["model"].as_str()),
        (Some("researcher"), Some("claude/claude-sonnet"))
    );
    assert_eq!((research["llm_calls"].as_i64(), research["prompt_tokens"].as_i64()), (Some(2), Some(3010)));
    assert_eq!(
        (research["completion_tokens"].as_i64(), research["cached_tokens"].as_i64()),
        (Some(505), Some(2000))
    );
    let close = |value: &Value, expected: f64| (value.as_f64().expect("a number") - expected).abs() < 1e-12;
    assert!(close(&research["cost_usd"], 0.011205), "{research}");
    let write = line("write");
    assert_eq!(
        (write["agent"].as_str(), write["model"].as_str(), write["llm_calls"].as_i64()),
        (Some("writer"), Some("az/writer-4o"), Some(1))
    );
    assert!(close(&write["cost_usd"], 0.00825), "{write}");
    assert!(close(&out.run["usage"]["cost_usd"], 0.011205 + 0.00825), "{}", out.run["usage"]);
    assert_eq!(out.run["usage"]["cached_tokens"], 3000);
    let costs: Vec<f64> =
        out.data("llm.finished").iter().map(|d| d["cost_usd"].as_f64().expect("priced")).collect();
    assert_eq!(costs.len(), 3);
    assert!((costs[1] - 0.0111).abs() < 1e-12 && (costs[2] - 0.00825).abs() < 1e-12, "{costs:?}");
}

//! Spend: the run budgets (`max_tokens`, `max_cost_usd`) stopping a runaway loop, checked before
//! a call on its estimate and after it on the reported usage; a kickoff's budget over the
//! crew's; bad budgets refused; and a provider's tokens per minute spacing calls by what they
//! used.

use std::time::Duration;

use agentd::llm::Price;

use super::kinds::add_providers;
use super::*;
use crate::fakes::azure::{self, FakeAzure};
use crate::support::expect_problem;

/// A native tool call to the calculator that reports `prompt` and `completion` tokens.
fn costly_call(n: usize, prompt: u64, completion: u64) -> FakeReply {
    let mut reply =
        FakeReply::tool_calls(&[(&format!("c{n}"), "calculator", json!({"expression": format!("{n}+1")}))]);
    reply.body["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion});
    reply
}

/// A model that never stops calling tools, each call costing 1,000 tokens.
fn runaway(h: &Harness) {
    h.fake.push((1..=20).map(|n| costly_call(n, 900, 100)));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_tokens_stops_a_runaway_loop_on_the_reported_usage(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    runaway(&h);
    let spec =
        crew(json!(["calculator"]), "native", json!({"max_tokens": 3500, "agents": [{"max_iter": 20}]}));
    let out = h.run(&spec).await;
    assert_eq!(out.run["status"], "failed");
    assert_eq!(out.run["error"]["kind"], "budget");
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("a model call took it to 4000 tokens, over max_tokens = 3500 (3000 used before it)"),
        "{message}"
    );
    assert_eq!(
        (out.run["usage"]["llm_calls"].as_i64(), out.run["usage"]["prompt_tokens"].as_i64()),
        (Some(4), Some(3600))
    );
    assert_eq!(h.fake.requests().len(), 4, "no call after the budget was spent");
    assert_eq!(out.data("llm.finished").len(), 4, "the last call's usage is journaled with the failure");
}

/// A provider that sends no usage (llama.cpp's server streams none): every call is counted by
/// agentd's estimate, marked as such on the call and the run, and the budget binds on it.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_stream_without_usage_is_estimated_and_the_budget_binds_on_it(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let words = "tide ".repeat(400);
    h.fake.push((1..=20).map(|n| {
        let mut reply = costly_call(n, 0, 0).without_usage();
        reply.body["choices"][0]["message"]["content"] = json!(words);
        reply
    }));
    let spec = crew(json!(["calculator"]), "native", json!({"agents": [{"max_iter": 20}]}));
    let body = json!({"crew": spec, "inputs": {"topic": "tides"}, "stream": true, "max_tokens": 1000});
    let queued = expect_json(h.app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
    let out = h.run_queued(&queued).await;
    assert_eq!(
        (out.run["status"].as_str(), out.run["error"]["kind"].as_str()),
        (Some("failed"), Some("budget")),
        "{}",
        out.run
    );
    assert_eq!(h.fake.requests()[0]["stream"], json!(true));
    let finished = out.data("llm.finished");
    assert!(
        !finished.is_empty() && finished.len() < 20,
        "the budget stopped the loop: {} calls",
        finished.len()
    );
    let mut total = 0;
    for data in &finished {
        let usage = &data["usage"];
        assert_eq!(usage["estimated"], json!(true), "{data}");
        let completion = usage["completion_tokens"].as_i64().expect("completion");
        // 400 words of text and the call's name and arguments.
        assert!(completion >= 400, "{usage}");
        total += usage["prompt_tokens"].as_i64().expect("prompt") + completion;
    }
    let usage = &out.run["usage"];
    assert_eq!(usage["estimated_tokens"].as_i64(), Some(total), "{usage}");
    assert_eq!(
        usage["prompt_tokens"].as_i64().expect("prompt")
            + usage["completion_tokens"].as_i64().expect("completion"),
        total,
        "every figure of the run was estimated"
    );
    // Counted, the first call's tokens leave too little for the second call's prompt (which
    // holds the first reply); uncounted (0), the second and third would have gone out.
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("the next model call would take it to")
            && message.contains(&format!("({total} used before it)")),
        "{message}"
    );
    assert!(total > 400, "{usage}");
}

/// A provider's own figures are never marked as estimated.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn reported_usage_is_not_marked_as_estimated(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    h.fake.push([costly_call(1, 900, 100), FakeReply::text("done")]);
    let out = h.run(&crew(json!(["calculator"]), "native", json!({}))).await;
    assert_eq!(out.run["status"], "completed", "{}", out.run);
    assert_eq!(out.run["usage"]["estimated_tokens"], 0);
    for data in out.data("llm.finished") {
        assert!(data["usage"].get("estimated").is_none(), "{data}");
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_budget_too_small_for_the_prompt_stops_before_the_call(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    runaway(&h);
    let out = h.run(&crew(json!(["calculator"]), "native", json!({"max_tokens": 10}))).await;
    assert_eq!(
        (out.run["status"].as_str(), out.run["error"]["kind"].as_str()),
        (Some("failed"), Some("budget"))
    );
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("the next model call would take it to") && message.contains("max_tokens = 10"),
        "{message}"
    );
    assert!(h.fake.requests().is_empty(), "the provider was never called");
    assert_eq!(out.run["usage"]["llm_calls"], 0);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn max_cost_usd_of_the_kickoff_stops_a_runaway_loop(pool: PgPool) {
    let h = Harness::start_with(pool, true, |c| {
        let openai = c.providers.get_mut("openai").expect("openai");
        openai.prices.insert("test-model".into(), Price { input: 10.0, output: 30.0, cached_input: None });
    })
    .await;
    runaway(&h);
    // Each call: 900 × $10 + 100 × $30 per million = $0.012. The kickoff's cap wins over the crew's.
    let spec =
        crew(json!(["calculator"]), "native", json!({"max_cost_usd": 100.0, "agents": [{"max_iter": 20}]}));
    let body = json!({"crew": spec, "inputs": {"topic": "tides"}, "max_cost_usd": 0.03});
    let queued = expect_json(h.app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
    let out = h.run_queued(&queued).await;
    assert_eq!(out.run["error"]["kind"], "budget", "{}", out.run);
    let message = out.run["error"]["message"].as_str().expect("message");
    assert!(message.contains("a model call took it to $0.036000, over max_cost_usd = $0.03"), "{message}");
    assert_eq!(h.fake.requests().len(), 3);
    assert!(
        (out.run["usage"]["cost_usd"].as_f64().expect("cost") - 0.036).abs() < 1e-12,
        "{}",
        out.run["usage"]
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn bad_budgets_are_refused_with_the_field_named(pool: PgPool) {
    let h = Harness::start(pool, true).await;
    let spec = crew(json!([]), "native", json!({}));
    for (body, field) in [
        (json!({"crew": spec, "inputs": {"topic": "t"}, "max_cost_usd": -1}), "max_cost_usd"),
        (json!({"crew": spec, "inputs": {"topic": "t"}, "max_cost_usd": 0}), "max_cost_usd"),
        (json!({"crew": spec, "inputs": {"topic": "t"}, "max_tokens": 0}), "max_tokens"),
        (
            json!({"crew": crew(json!([]), "native", json!({"max_tokens": 2_000_000_000_000u64})), "inputs": {"topic": "t"}}),
            "crew.max_tokens",
        ),
        // A kickoff's valid budget does not hide the crew's invalid one.
        (
            json!({"crew": crew(json!([]), "native", json!({"max_tokens": 0})), "inputs": {"topic": "t"}, "max_tokens": 5}),
            "crew.max_tokens",
        ),
    ] {
        let problem =
            expect_problem(h.app.post_json("/v1/kickoffs", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        let fields: Vec<&str> = problem["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .filter_map(|e| e["field"].as_str())
            .collect();
        assert_eq!(fields, [field], "{problem}");
    }
    let problem = expect_problem(
        h.app
            .post_json("/v1/kickoffs", &json!({"crew": spec, "inputs": {"topic": "t"}, "max_tokens": -5}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("max_tokens"), "{problem}");
}

/// A tool call on Azure reporting `tokens` in all.
fn azure_call(n: usize, tokens: u64) -> crate::fakes::Scripted {
    let mut reply =
        azure::tool_calls(&[(&format!("call_{n}"), "calculator", json!({"expression": format!("{n}*2")}))]);
    reply.body["usage"] =
        json!({"prompt_tokens": tokens - 50, "completion_tokens": 50, "total_tokens": tokens});
    reply
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn tpm_spaces_calls_by_the_tokens_they_used(pool: PgPool) {
    let fake = FakeAzure::start("azure-test-key-0123", &["d"]).await;
    // 60,000 tokens a minute: a millisecond per token.
    let h = Harness::start_with(pool, true, |c| {
        add_providers(c, &format!("[providers.az]\nkind = \"azure\"\nbase_url = \"{}\"\napi_key_env = \"AZURE_KEY\"\ntpm = 60000\n", fake.url))
    })
    .await;
    fake.script.push([azure_call(1, 500), azure_call(2, 1500), azure::answer("Done.", 100, 10, 0)]);
    let mut spec = crew(json!(["calculator"]), "native", json!({}));
    spec["agents"][0]["llm"] = json!("az/d");
    // The first call is booked after this instant. Each next one is booked once the call before
    // it reported its usage, a millisecond per token after that call's slot: the second at least
    // 500 ms after this instant, the third 2,000 ms (without the correction by the reported usage
    // the slots would follow the estimates, about 150 ms each).
    let before = std::time::Instant::now();
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Done.", "{:?}", out.result);
    let after: Vec<Duration> = fake.script.seen().iter().map(|s| s.at - before).collect();
    eprintln!("calls after 500 and 1,500 tokens at 60,000 tokens/min, from the kickoff: {after:?}");
    assert_eq!(after.len(), 3);
    assert!(after[1] >= Duration::from_millis(500), "{after:?}");
    assert!(after[2] >= Duration::from_millis(2_000), "{after:?}");
    // Each booked wait is at most the tokens of the call before it (it counts from when that call
    // was booked, which was earlier): never the estimate and the usage both.
    let throttled = out.data("run.throttled");
    assert_eq!(throttled.len(), 2, "{throttled:?}");
    let waits: Vec<u64> = throttled.iter().map(|t| t["wait_ms"].as_u64().expect("wait_ms")).collect();
    assert!(waits[0] > 0 && waits[0] <= 500 && waits[1] > 0 && waits[1] <= 1_500, "{waits:?}");
    let limit = throttled[1]["limit"].as_str().expect("limit");
    assert_eq!(limit, "provider:az (60000 tokens/min, shared by all replicas)");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_retry_books_its_own_slot_on_the_shared_budget(pool: PgPool) {
    let fake = FakeAzure::start("azure-test-key-0123", &["d"]).await;
    // The provider enforces the 120 a minute itself: a retry sent at once (a few ms after the
    // 429) would come 400 ms early or more; a call that left late of its slot moves the
    // provider's schedule on, and the tolerance absorbs up to 400 ms of that.
    fake.script.enforce_rpm(120, Duration::from_millis(400));
    crate::support::log_rate_bookings(&pool).await;
    let h = Harness::start_with(pool.clone(), true, |c| {
        add_providers(
            c,
            &format!("[providers.az]\nkind = \"azure\"\nbase_url = \"{}\"\napi_key_env = \"AZURE_KEY\"\nrpm = 120\n", fake.url),
        )
    })
    .await;
    // A 429 that says to wait 0 s: the retry still waits for the next slot of the budget.
    fake.script.push([azure::rate_limited(0), azure::answer("Done.", 100, 10, 0)]);
    let mut spec = crew(json!([]), "native", json!({}));
    spec["agents"][0]["llm"] = json!("az/d");
    let before = std::time::Instant::now();
    let out = h.run(&spec).await;
    assert_eq!(out.raw(), "Done.", "{:?}", out.result);
    let seen = fake.script.seen();
    assert_eq!(
        seen.iter().map(|s| s.status).collect::<Vec<_>>(),
        [429, 200],
        "the provider refused no retry"
    );
    // What was booked: the first call's slot, then the retry's, a whole interval after it.
    let changes = crate::support::rate_changes(&pool, "provider:az:rpm").await;
    let (first, last) = (changes.first().expect("the first booking"), changes.last().expect("changes"));
    assert!(last.after - first.after >= 0.5 - 1e-6, "the retry booked its own slot: {changes:?}");
    // The first slot began after the kickoff, so the retry went out half a second after it at least.
    let retried = seen[1].at - before;
    assert!(
        retried >= Duration::from_millis(500),
        "the retry went out in its slot, not at once ({retried:?})"
    );
}

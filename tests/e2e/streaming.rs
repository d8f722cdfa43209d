//! Token streaming (`"stream": true`): the fake model streams its answer chunk by chunk with a
//! per-chunk delay; the run's SSE stream carries `llm.delta` messages (no `id:`) as they arrive,
//! the journal holds the assembled reply, and a reconnect resumes at the durable events only.

use std::time::{Duration, Instant};

use agentd::config::{self, Config, Settings};
use agentd::fake_llm::{FakeLlm, FakeReply};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::events::{Sse, SseReader};
use crate::support::{expect_json, test_config, TestApp};
use crate::worker::{fake_config, fast_settings, start_workers, wait_for};

const TEXT: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa";
const CHUNK: Duration = Duration::from_millis(100);

fn crew() -> Value {
    json!({
        "name": "typist",
        "agents": [{"name": "a", "role": "Writer", "goal": "Write", "backstory": "Brief."}],
        "tasks": [{"name": "t", "description": "Write ten words.", "expected_output": "Words", "agent": "a"}]
    })
}

/// Kick off the crew with `stream`.
async fn kickoff(app: &TestApp, stream: Option<bool>) -> String {
    let mut body = json!({"crew": crew(), "inputs": {}});
    if let Some(stream) = stream {
        body["stream"] = json!(stream);
    }
    let response = app.post_json("/v1/kickoffs", &body).await;
    expect_json(response, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned()
}

/// Every message until the stream ends, with when it arrived.
async fn read_all(stream: &mut SseReader) -> Vec<(Instant, Sse)> {
    let mut all = Vec::new();
    while let Some(message) = stream.next(Duration::from_secs(30)).await {
        all.push((Instant::now(), message));
    }
    all
}

/// Kick off the crew with `stream` and follow its event stream from the start while a worker
/// pool runs it; every message, with when it arrived.
async fn follow(
    pool: &PgPool,
    config: &Config,
    stream: Option<bool>,
) -> (TestApp, String, Vec<(Instant, Sse)>) {
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let id = kickoff(&app, stream).await;
    let mut sse = SseReader::open(&app, &format!("/v1/runs/{id}/events"), None).await;
    let workers = start_workers(pool, config, fast_settings(2, Duration::from_secs(5)));
    let all = read_all(&mut sse).await;
    workers.shutdown().await;
    (app, id, all)
}

fn is_delta(message: &Sse) -> bool {
    message.event.as_deref() == Some("llm.delta")
}

fn delta_text(messages: &[&Sse], attempt: u64) -> String {
    messages
        .iter()
        .filter(|m| m.data["data"]["attempt"].as_u64() == Some(attempt))
        .map(|m| m.data["data"]["text"].as_str().expect("text"))
        .collect()
}

async fn assistant_text(app: &TestApp, id: &str) -> String {
    let messages = expect_json(app.get(&format!("/v1/runs/{id}/messages")).await, StatusCode::OK).await;
    let messages = messages["messages"].as_array().expect("messages").clone();
    let last = messages.iter().rev().find(|m| m["role"] == "assistant").expect("an assistant message");
    last["content"].as_str().expect("content").to_owned()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_streamed_reply_arrives_as_it_is_typed_and_is_journaled_whole(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text(TEXT).with_chunk_delay(CHUNK)]);
    let config = fake_config(&fake);
    let (app, id, all) = follow(&pool, &config, Some(true)).await;

    let deltas: Vec<&Sse> = all.iter().map(|(_, m)| m).filter(|m| is_delta(m)).collect();
    assert!(deltas.len() >= 5, "the reply came in pieces: {deltas:?}");
    for delta in &deltas {
        assert_eq!(delta.id, None, "a delta carries no id: Last-Event-ID names durable events only");
        assert_eq!(
            (delta.data["type"].as_str(), delta.data["run_id"].as_str()),
            (Some("llm.delta"), Some(id.as_str()))
        );
        assert_eq!((delta.data["task"].as_str(), delta.data["agent"].as_str()), (Some("t"), Some("a")));
        assert_eq!(
            (delta.data["data"]["iteration"].as_u64(), delta.data["data"]["attempt"].as_u64()),
            (Some(1), Some(1))
        );
        assert!(delta.data.get("seq").is_none());
    }
    assert_eq!(delta_text(&deltas, 1), TEXT, "the deltas add up to the reply");
    assert_eq!(assistant_text(&app, &id).await, TEXT, "the journal holds the reply whole");
    let run = wait_for(&app, &id, &["completed"]).await;
    assert_eq!(run["output"]["raw"], TEXT);

    // The first delta came long before the reply was complete: the fake sends a chunk every
    // 100 ms, so the last of ~11 arrives about a second after the first.
    let when = |kind: &str| {
        all.iter().find(|(_, m)| m.event.as_deref() == Some(kind)).map(|(at, _)| *at).expect(kind)
    };
    let first_delta = all.iter().find(|(_, m)| is_delta(m)).map(|(at, _)| *at).expect("a delta");
    let (started, finished) = (when("llm.started"), when("llm.finished"));
    assert!(first_delta > started, "deltas follow llm.started");
    let ahead = finished - first_delta;
    eprintln!("first delta {:?} after llm.started, {ahead:?} before llm.finished", first_delta - started);
    assert!(ahead >= CHUNK * 6, "the first delta arrived only {ahead:?} before the reply was done");
    // The durable events are as without streaming: dense seqs, no delta among them.
    let durable: Vec<i64> =
        all.iter().filter(|(_, m)| !is_delta(m)).map(|(_, m)| m.data["seq"].as_i64().expect("seq")).collect();
    assert_eq!(durable, (1..=durable.len() as i64).collect::<Vec<_>>());
    let listed = expect_json(app.get(&format!("/v1/runs/{id}/events")).await, StatusCode::OK).await;
    assert_eq!(listed["events"].as_array().map(Vec::len), Some(durable.len()), "deltas are not journaled");
    let request = &fake.requests()[0];
    assert_eq!(
        (request["stream"].clone(), request["stream_options"]["include_usage"].clone()),
        (json!(true), json!(true))
    );
    assert!(run["usage"]["completion_tokens"].as_i64() > Some(0), "usage came with the stream: {run}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_run_that_does_not_stream_calls_the_model_as_before(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text(TEXT).with_chunk_delay(CHUNK)]);
    let config = fake_config(&fake);
    let (app, id, all) = follow(&pool, &config, None).await;
    assert!(all.iter().all(|(_, m)| !is_delta(m)));
    assert!(fake.requests()[0].get("stream").is_none_or(|s| s == &json!(false)));
    assert_eq!(assistant_text(&app, &id).await, TEXT);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_reconnect_mid_reply_resumes_at_the_durable_events_only(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text(TEXT).with_chunk_delay(CHUNK * 2)]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let id = kickoff(&app, Some(true)).await;
    let path = format!("/v1/runs/{id}/events");
    let mut stream = SseReader::open(&app, &path, None).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let mut before = Vec::new();
    while before.iter().filter(|m: &&Sse| is_delta(m)).count() < 2 {
        before.push(stream.next(Duration::from_secs(10)).await.expect("a message"));
    }
    drop(stream);
    let last_id = before.iter().rev().find_map(|m| m.id.clone()).expect("a durable event before the deltas");
    let mut again = SseReader::open(&app, &path, Some(&last_id)).await;
    let after: Vec<Sse> = read_all(&mut again).await.into_iter().map(|(_, m)| m).collect();
    workers.shutdown().await;

    let durable = |messages: &[Sse]| -> Vec<i64> {
        messages.iter().filter(|m| !is_delta(m)).map(|m| m.data["seq"].as_i64().expect("seq")).collect()
    };
    let (first, second) = (durable(&before), durable(&after));
    let last: i64 = last_id.parse().expect("numeric id");
    assert_eq!(second.first(), Some(&(last + 1)), "resumed right after Last-Event-ID");
    let mut all: Vec<i64> = first.into_iter().chain(second).collect();
    let n = all.len() as i64;
    all.dedup();
    assert_eq!(all, (1..=n).collect::<Vec<_>>(), "every durable event once");
    // The deltas sent before the reconnect are not sent again; later ones arrive live.
    let early: Vec<&Sse> = before.iter().filter(|m| is_delta(m)).collect();
    let late: Vec<&Sse> = after.iter().filter(|m| is_delta(m)).collect();
    let (early, late) = (delta_text(&early, 1), delta_text(&late, 1));
    assert!(TEXT.starts_with(&early) && TEXT.ends_with(&late), "{early:?} / {late:?}");
    assert!(early.len() + late.len() <= TEXT.len(), "no delta twice: {early:?} then {late:?}");
    assert_eq!(assistant_text(&app, &id).await, TEXT);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn cancel_aborts_a_streaming_call_at_once(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let long = vec!["word"; 60].join(" ");
    fake.push([FakeReply::text(&long).with_chunk_delay(Duration::from_millis(500))]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let id = kickoff(&app, Some(true)).await;
    let mut stream = SseReader::open(&app, &format!("/v1/runs/{id}/events"), None).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    while !is_delta(&stream.next(Duration::from_secs(10)).await.expect("a message")) {}
    let asked = Instant::now();
    let response = app.post_json(&format!("/v1/runs/{id}/cancel"), &json!({})).await;
    assert!(response.status().is_success(), "{}", response.status());
    let run = wait_for(&app, &id, &["cancelled"]).await;
    let took = asked.elapsed();
    workers.shutdown().await;
    eprintln!("a streaming call of ~30 s was cancelled in {took:?}");
    assert!(took < Duration::from_secs(5), "the streaming call was not aborted: {took:?} ({run})");
    assert_eq!(fake.requests().len(), 1);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_stream_cut_by_the_provider_is_retried_and_the_deltas_start_again(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text(TEXT).cut_after(4),
        FakeReply::text(TEXT).with_chunk_delay(Duration::from_millis(20)),
    ]);
    let config = fake_config(&fake);
    let (app, id, all) = follow(&pool, &config, Some(true)).await;
    let all: Vec<Sse> = all.into_iter().map(|(_, m)| m).collect();
    let deltas: Vec<&Sse> = all.iter().filter(|m| is_delta(m)).collect();
    assert_eq!(delta_text(&deltas, 1), "alpha beta gamma ", "the cut attempt's text");
    assert_eq!(delta_text(&deltas, 2), TEXT, "the retry's, whole");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(assistant_text(&app, &id).await, TEXT);
    assert_eq!(wait_for(&app, &id, &["completed"]).await["output"]["raw"], TEXT);
}

/// A ReAct agent (the provider takes no native tools) streaming a reply that runs on past its
/// stop word: the text stops at `\nObservation:`, in the deltas and in the journal.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn react_stop_words_hold_while_streaming(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    let reply = "Thought: I know it.\nFinal Answer: forty-two\nObservation: made up\nFinal Answer: wrong";
    fake.push([FakeReply::text(reply).with_chunk_delay(Duration::from_millis(10))]);
    let toml = format!("[providers.openai]\nbase_url = \"{}\"\nnative_tools = false\n", fake.base_url());
    let file: Settings = toml::from_str(&toml).expect("toml");
    let config =
        Config { providers: config::providers(&file, |_| None).expect("providers"), ..test_config() };
    let (app, id, all) = follow(&pool, &config, Some(true)).await;
    let all: Vec<Sse> = all.into_iter().map(|(_, m)| m).collect();
    let deltas: Vec<&Sse> = all.iter().filter(|m| is_delta(m)).collect();
    let kept = "Thought: I know it.\nFinal Answer: forty-two";
    assert_eq!(delta_text(&deltas, 1), kept);
    assert_eq!(assistant_text(&app, &id).await, kept);
    assert_eq!(wait_for(&app, &id, &["completed"]).await["output"]["raw"], "forty-two");
    assert_eq!(fake.requests()[0]["stop"], json!(["\nObservation:"]));
}

/// An Anthropic provider streams too: its `text_delta` events reach the run's SSE stream as
/// `llm.delta`, and the journal holds the reply whole.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_anthropic_reply_streams_as_llm_deltas(pool: PgPool) {
    let fake = crate::fakes::anthropic::FakeAnthropic::start("sk-ant-stream").await;
    fake.script
        .push([crate::fakes::anthropic::text(TEXT, 30, 12).with_chunk_delay(Duration::from_millis(40))]);
    let file: Settings = toml::from_str(&format!(
        "default_model = \"claude/claude-test\"\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"K\"\n",
        fake.url
    ))
    .expect("toml");
    let config = Config {
        providers: config::providers(&file, |_| Some("sk-ant-stream".to_owned())).expect("providers"),
        default_model: "claude/claude-test".into(),
        ..test_config()
    };
    let (app, id, all) = follow(&pool, &config, Some(true)).await;
    let deltas: Vec<&Sse> = all.iter().map(|(_, m)| m).filter(|m| is_delta(m)).collect();
    assert!(!deltas.is_empty(), "no llm.delta: {all:?}");
    assert_eq!(delta_text(&deltas, 1), TEXT, "the deltas add up to the reply");
    assert_eq!(assistant_text(&app, &id).await, TEXT);
    let run = wait_for(&app, &id, &["completed"]).await;
    assert_eq!(
        (run["usage"]["prompt_tokens"].as_i64(), run["usage"]["completion_tokens"].as_i64()),
        (Some(30), Some(12))
    );
    assert_eq!(fake.script.bodies()[0]["stream"], true);
}

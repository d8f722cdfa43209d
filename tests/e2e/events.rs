//! Server-sent events as a client reads them: live tails, exact resume, the firehose, another
//! replica's runs, a subscriber that stalls through 10,000 events, waiting, and stream auth.

use std::time::{Duration, Instant};

use agentd::domain::event::RunCompleted;
use agentd::domain::{EventData, RunId};
use agentd::engine::journal::{Journal, RunChange, Step};
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::{RunJournal, Store};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::{expect_json, expect_problem, thought, TestApp};
use crate::worker::{calc_crew, fake_config, fast_settings, start_workers, wait_for};

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Value,
}

/// Reads a `text/event-stream` response the way a browser does.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
    /// Bytes of a character split between chunks.
    partial: Vec<u8>,
    pub comments: usize,
    /// Ids of messages without data (positions), which a browser keeps as its Last-Event-ID.
    pub positions: Vec<String>,
}

impl SseReader {
    pub async fn open(app: &TestApp, path: &str, last_event_id: Option<&str>) -> Self {
        let mut request = app.request(reqwest::Method::GET, path).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        Self::of(request.send().await.expect("GET"))
    }

    /// Read `response`, which must be a stream (a protocol's answer to a POST, say).
    pub fn of(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"));
        Self { response, buffer: String::new(), partial: Vec::new(), comments: 0, positions: Vec::new() }
    }

    /// The next event, `None` when the stream ends; panics after `wait` without one.
    pub async fn next(&mut self, wait: Duration) -> Option<Sse> {
        let deadline = Instant::now() + wait;
        loop {
            match self.next_block(deadline).await? {
                (_, Some(event)) => return Some(event),
                (Some(id), None) => self.positions.push(id),
                (None, None) => self.comments += 1,
            }
        }
    }

    /// The next position (a message with an id and no data); panics if an event comes first.
    pub async fn position(&mut self, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            match self.next_block(deadline).await.expect("the stream ended") {
                (_, Some(event)) => panic!("an event before the position: {event:?}"),
                (Some(id), None) => return id,
                (None, None) => self.comments += 1,
            }
        }
    }

    /// The next message, parsed; `None` when the stream ends.
    async fn next_block(&mut self, deadline: Instant) -> Option<(Option<String>, Option<Sse>)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse_block(&block));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.response.chunk()).await.expect("an event in time");
            match chunk.expect("stream") {
                Some(bytes) => {
                    // A chunk may end inside a multi-byte character: keep its start for the next.
                    self.partial.extend_from_slice(&bytes);
                    let valid = match std::str::from_utf8(&self.partial) {
                        Ok(text) => text.len(),
                        Err(error) if error.error_len().is_none() => error.valid_up_to(),
                        Err(error) => panic!("the stream is not UTF-8: {error}"),
                    };
                    let rest = self.partial.split_off(valid);
                    self.buffer.push_str(std::str::from_utf8(&self.partial).expect("checked"));
                    self.partial = rest;
                }
                None => return None,
            }
        }
    }

    /// Every event until the stream ends.
    pub async fn drain(&mut self) -> Vec<Sse> {
        let mut events = Vec::new();
        while let Some(event) = self.next(Duration::from_secs(30)).await {
            events.push(event);
        }
        events
    }
}

/// A message's id, and the event when it has data.
fn parse_block(block: &str) -> (Option<String>, Option<Sse>) {
    let (mut id, mut event, mut data) = (None, None, String::new());
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("id:") {
            id = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("event:") {
            event = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    if data.is_empty() {
        return (id, None);
    }
    (id.clone(), Some(Sse { id, event, data: serde_json::from_str(&data).expect("JSON data") }))
}

fn seqs(events: &[Sse]) -> Vec<i64> {
    events.iter().map(|e| e.data["seq"].as_i64().expect("seq")).collect()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_live_tail_follows_the_run_to_its_terminal_event(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "2+3"}))])
            .with_delay(Duration::from_millis(300)),
        FakeReply::text("5"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let run = app.kickoff(&calc_crew(), json!({"expr": "2+3"})).await;
    let id = run["id"].as_str().expect("id");
    let mut stream = SseReader::open(&app, &format!("/v1/runs/{id}/events"), None).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let events = stream.drain().await;
    let types: Vec<&str> = events.iter().map(|e| e.event.as_deref().expect("event")).collect();
    assert_eq!(types.first(), Some(&"run.queued"));
    assert!(
        types.contains(&"tool.started")
            && types.contains(&"tool.finished")
            && types.contains(&"agent.final_answer")
    );
    assert_eq!(types.last(), Some(&"run.completed"));
    let expected: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(seqs(&events), expected, "dense, in order, no duplicates");
    for event in &events {
        assert_eq!(event.id.as_deref(), Some(event.data["seq"].to_string().as_str()));
        assert_eq!(event.event.as_deref(), event.data["type"].as_str());
        assert_eq!(event.data["run_id"], id);
    }
    let tool = events.iter().find(|e| e.event.as_deref() == Some("tool.started")).expect("tool.started");
    assert_eq!(tool.data["data"]["arguments"], json!({"expression": "2+3"}));
    workers.shutdown().await;
}

/// A stream opened while its run is ending still ends with the run's terminal event. The stream
/// reads the run's status and its events in two statements: had the run ended between the two
/// (events read first), the stream would have stopped without `run.completed`. Streams here open
/// 0 to 11 ms after their kickoffs against an instant model, so some meet each run as it ends.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_stream_opened_as_its_run_ends_still_ends_with_the_terminal_event(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.set_default(Some(FakeReply::text("done")));
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(8, Duration::from_secs(5)));
    for round in 0..20u64 {
        let app = &app;
        let streams = (0..8u64).map(|n| async move {
            let run = app.kickoff(&calc_crew(), json!({"expr": "1"})).await;
            let id = run["id"].as_str().expect("id").to_owned();
            tokio::time::sleep(Duration::from_millis((round * 8 + n) % 12)).await;
            let events = SseReader::open(app, &format!("/v1/runs/{id}/events"), None).await.drain().await;
            (id, events)
        });
        for (id, events) in futures_util::future::join_all(streams).await {
            let types: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
            assert_eq!(types.last(), Some(&"run.completed"), "run {id}: {types:?}");
            assert_eq!(seqs(&events), (1..=events.len() as i64).collect::<Vec<_>>(), "run {id}");
        }
    }
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn resume_gives_exactly_the_events_after_the_last_id(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "1"}))]),
        FakeReply::text("1"),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let id = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    wait_for(&app, &id, &["completed"]).await;
    let all = SseReader::open(&app, &format!("/v1/runs/{id}/events"), None).await.drain().await;
    let total = all.len() as i64;
    assert!(total > 5);
    let resumed = SseReader::open(&app, &format!("/v1/runs/{id}/events"), Some("3")).await.drain().await;
    assert_eq!(seqs(&resumed), (4..=total).collect::<Vec<_>>());
    let by_query =
        SseReader::open(&app, &format!("/v1/runs/{id}/events?after={}", total - 1), None).await.drain().await;
    assert_eq!(seqs(&by_query), [total]);

    let sse = |path: String, last: String| {
        app.request(reqwest::Method::GET, &path)
            .header("accept", "text/event-stream")
            .header("last-event-id", last)
            .send()
    };
    // At or past a finished run's last event: 204, so an EventSource stops reconnecting.
    for last in [total, total + 5] {
        let at_end = sse(format!("/v1/runs/{id}/events"), last.to_string()).await.expect("GET");
        assert_eq!(at_end.status(), StatusCode::NO_CONTENT, "Last-Event-ID {last}");
        assert!(at_end.bytes().await.expect("body").is_empty());
    }
    let by_query = app
        .request(reqwest::Method::GET, &format!("/v1/runs/{id}/events?after={total}"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET");
    assert_eq!(by_query.status(), StatusCode::NO_CONTENT);
    // The JSON log is a page like any other.
    let page = app.get(&format!("/v1/runs/{id}/events?after={total}")).await;
    assert_eq!(expect_json(page, StatusCode::OK).await["events"], serde_json::json!([]));

    expect_problem(
        sse(format!("/v1/runs/{id}/events"), "x".into()).await.expect("GET"),
        StatusCode::BAD_REQUEST,
    )
    .await;
    expect_problem(
        sse(format!("/v1/runs/{}/events", Uuid::now_v7()), "0".into()).await.expect("GET"),
        StatusCode::NOT_FOUND,
    )
    .await;
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_firehose_carries_every_run_filters_by_crew_and_resumes(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("a"), FakeReply::text("b")]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let mut firehose = SseReader::open(&app, "/v1/events", None).await;
    let mut other = calc_crew();
    other["name"] = json!("other-crew");
    let mut filtered = SseReader::open(&app, "/v1/events?crew=other-crew", None).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let first = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    wait_for(&app, &first, &["completed"]).await;
    let second = app.kickoff(&other, json!({"expr": "2"})).await["id"].as_str().expect("id").to_owned();
    wait_for(&app, &second, &["completed"]).await;

    let mut seen = Vec::new();
    while seen.iter().filter(|e: &&Sse| e.event.as_deref() == Some("run.completed")).count() < 2 {
        seen.push(firehose.next(Duration::from_secs(10)).await.expect("event"));
    }
    let ids: Vec<i64> =
        seen.iter().map(|e| e.id.as_deref().expect("id").parse().expect("global id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "global ids increase: {ids:?}");
    let runs: std::collections::BTreeSet<&str> =
        seen.iter().map(|e| e.data["run_id"].as_str().expect("run")).collect();
    assert_eq!(runs, [first.as_str(), second.as_str()].into_iter().collect());

    let only_other = filtered.next(Duration::from_secs(10)).await.expect("event");
    assert_eq!(only_other.data["run_id"], second.as_str());

    let middle = ids[ids.len() / 2];
    let mut resumed = SseReader::open(&app, "/v1/events", Some(&middle.to_string())).await;
    let next = resumed.next(Duration::from_secs(10)).await.expect("event");
    assert_eq!(
        next.id.as_deref().map(|i| i.parse::<i64>().expect("id")),
        ids.iter().find(|i| **i > middle).copied()
    );
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_firehose_can_start_at_the_end_of_the_log(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("a"), FakeReply::text("b")]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let first = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    wait_for(&app, &first, &["completed"]).await;
    let mut everything = SseReader::open(&app, "/v1/events", None).await;
    let mut end = 0;
    loop {
        let event = everything.next(Duration::from_secs(10)).await.expect("event");
        end = event.id.as_deref().expect("id").parse::<i64>().expect("global id").max(end);
        if event.event.as_deref() == Some("run.completed") {
            break;
        }
    }

    // From now: a bare position (the end of the log), then only what comes later.
    // The position comes before anything is kicked off: what is committed after it is sent.
    let mut tail = SseReader::open(&app, "/v1/events?from_now=true", None).await;
    assert_eq!(tail.position(Duration::from_secs(10)).await, end.to_string());
    let second = app.kickoff(&calc_crew(), json!({"expr": "2"})).await["id"].as_str().expect("id").to_owned();
    let next = tail.next(Duration::from_secs(10)).await.expect("event");
    assert!(tail.positions.is_empty(), "{:?}", tail.positions);
    assert_eq!(
        (next.event.as_deref(), next.data["run_id"].as_str()),
        (Some("run.queued"), Some(second.as_str()))
    );
    assert!(next.id.as_deref().expect("id").parse::<i64>().expect("id") > end);
    wait_for(&app, &second, &["completed"]).await;

    // Last-Event-ID or after wins over from_now: a reconnecting EventSource resumes exactly.
    let path = "/v1/events?from_now=true";
    let mut resumed = SseReader::open(&app, path, Some(&end.to_string())).await;
    let next = resumed.next(Duration::from_secs(10)).await.expect("event");
    assert_eq!(next.data["run_id"], second.as_str());
    assert!(resumed.positions.is_empty());
    let mut replay = SseReader::open(&app, "/v1/events?from_now=true&after=0", None).await;
    let next = replay.next(Duration::from_secs(10)).await.expect("event");
    assert_eq!(
        (next.event.as_deref(), next.data["run_id"].as_str()),
        (Some("run.queued"), Some(first.as_str()))
    );
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_run_executed_by_one_replica_streams_from_another(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("done").with_delay(Duration::from_millis(200))]);
    let config = fake_config(&fake);
    let (executing, watching) = (
        TestApp::spawn_with(pool.clone(), config.clone()).await,
        TestApp::spawn_with(pool.clone(), config.clone()).await,
    );
    let id =
        executing.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    let mut stream = SseReader::open(&watching, &format!("/v1/runs/{id}/events"), None).await;
    let first = stream.next(Duration::from_secs(10)).await.expect("run.queued");
    assert_eq!(first.event.as_deref(), Some("run.queued"));
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let rest = stream.drain().await;
    assert_eq!(rest.last().and_then(|e| e.event.as_deref()), Some("run.completed"));
    assert_eq!(seqs(&rest), (2..=rest.len() as i64 + 1).collect::<Vec<_>>());
    workers.shutdown().await;
}

/// A run claimed by hand (no workers: the test journals its steps) and a stream following it.
async fn claimed_run_stream(pool: &PgPool) -> (TestApp, RunJournal, SseReader) {
    let app = TestApp::spawn(pool.clone()).await;
    let id = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    let run_id = RunId(Uuid::parse_str(&id).expect("uuid"));
    let store = Store::new(pool.clone());
    let claimed =
        store.claim_run(run_id, "test", Duration::from_secs(60)).await.expect("claim").expect("claimed");
    let stream = SseReader::open(&app, &format!("/v1/runs/{id}/events"), None).await;
    let journal = store.journal(run_id, claimed.attempt);
    (app, journal, stream)
}

/// Live deltas and events reach a stream in the order Postgres delivers their notifications, but a
/// stream that reads an event from the database (catching up) can hold it before a delta sent
/// earlier arrives: a delta of a turn whose `llm.finished` the stream has sent is dropped, and the
/// next turn's deltas still come.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_delta_that_comes_after_its_turn_ended_is_not_sent(pool: PgPool) {
    use agentd::domain::event::{LlmFinished, LlmStarted, TokenUsage};
    let (_app, journal, mut stream) = claimed_run_stream(&pool).await;
    for _ in 0..2 {
        stream.next(Duration::from_secs(10)).await.expect("run.queued, run.started");
    }
    let store = Store::new(pool.clone());
    let run_id = journal.run_id();
    let delta = |iteration: u32, text: &str| {
        json!({"run_id": run_id, "type": "llm.delta", "at": "2026-12-07T00:00:00Z", "task": "t", "agent": "a",
               "data": {"iteration": iteration, "attempt": 1, "text": text}})
        .to_string()
    };
    let commit = |data: EventData| {
        let mut step = Step::default();
        step.event(Some("t"), Some("a"), data);
        journal.commit(step)
    };
    let started = |iteration| {
        EventData::LlmStarted(LlmStarted {
            model: "fake/m".into(),
            iteration: Some(iteration),
            purpose: None,
        })
    };
    let finished = |iteration| {
        EventData::LlmFinished(LlmFinished {
            model: "fake/m".into(),
            usage: TokenUsage { prompt_tokens: 1, completion_tokens: 1, cached_tokens: 0, estimated: false },
            cost_usd: None,
            duration_ms: 1,
            iteration: Some(iteration),
            purpose: None,
            retries: 0,
        })
    };
    // Each step is read before the next is sent: a notification batch relays its deltas first.
    let notify = |payload: String| {
        let store = store.clone();
        async move { store.notify_all(agentd::store::DELTAS_CHANNEL, &[payload]).await.expect("notify") }
    };
    commit(started(1)).await.expect("commit");
    assert_eq!(next(&mut stream).await, "llm.started");
    notify(delta(1, "Hel")).await;
    assert_eq!(next(&mut stream).await, "delta 1 Hel");
    commit(finished(1)).await.expect("commit");
    assert_eq!(next(&mut stream).await, "llm.finished");
    // Late: turn 1 has ended for this stream. Then turn 2 streams before its llm.started is
    // committed (the call and that commit go together).
    notify(delta(1, "lo")).await;
    notify(delta(2, "Bye")).await;
    assert_eq!(next(&mut stream).await, "delta 2 Bye");
    commit(started(2)).await.expect("commit");
    commit(finished(2)).await.expect("commit");
    let mut end = Step::default();
    end.event(None, None, EventData::RunCompleted(RunCompleted { output: "Bye".into() }));
    end.run = Some(RunChange::Completed { output: agentd::domain::TaskOutput::new("Bye", None) });
    journal.commit(end).await.expect("commit");
    let rest: Vec<String> = stream.drain().await.iter().map(describe).collect();
    assert_eq!(rest, ["llm.started", "llm.finished", "run.completed"]);
}

/// An event's type, or a delta's iteration and text.
fn describe(event: &Sse) -> String {
    match event.event.as_deref() {
        Some("llm.delta") => {
            format!(
                "delta {} {}",
                event.data["data"]["iteration"],
                event.data["data"]["text"].as_str().unwrap_or("?")
            )
        }
        other => other.unwrap_or("?").to_owned(),
    }
}

async fn next(stream: &mut SseReader) -> String {
    describe(&stream.next(Duration::from_secs(10)).await.expect("an event"))
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_stalled_subscriber_gets_all_10000_events_in_order(pool: PgPool) {
    let (_app, journal, mut stream) = claimed_run_stream(&pool).await;
    // Read nothing while 10,000 events are committed.
    for batch in 0..10 {
        let mut step = Step::default();
        for i in 0..1_000 {
            step.event(Some("t"), Some("a"), thought((batch * 1_000 + i).to_string()));
        }
        journal.commit(step).await.expect("commit");
    }
    let mut end = Step::default();
    end.event(None, None, EventData::RunCompleted(RunCompleted { output: "done".into() }));
    end.run = Some(RunChange::Completed { output: agentd::domain::TaskOutput::new("done", None) });
    journal.commit(end).await.expect("commit");
    let events = stream.drain().await;
    assert_eq!(events.len(), 10_003, "run.queued, run.started, 10,000 thoughts, run.completed");
    assert_eq!(seqs(&events), (1..=10_003).collect::<Vec<_>>());
    let texts: Vec<i64> = events[2..10_002]
        .iter()
        .map(|e| e.data["data"]["text"].as_str().and_then(|t| t.parse().ok()).expect("text"))
        .collect();
    assert_eq!(texts, (0..10_000).collect::<Vec<_>>());
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn events_of_every_size_arrive_live_intact_and_in_order(pool: PgPool) {
    // One commit of events from 10 bytes to 20 KB: notifications name them, and the replica reads
    // them from the table, whatever their size.
    let (_app, journal, mut stream) = claimed_run_stream(&pool).await;
    for _ in 0..2 {
        stream.next(Duration::from_secs(10)).await.expect("run.queued, run.started");
    }
    let sizes = [10, 3_000, 10, 5_000, 20_000, 10, 10, 3_700, 3_700, 3_700];
    let mut step = Step::default();
    for size in &sizes {
        step.event(Some("t"), Some("a"), thought("é".repeat(*size / 2)));
    }
    journal.commit(step).await.expect("commit");
    let mut live = Vec::new();
    while live.len() < sizes.len() {
        live.push(stream.next(Duration::from_secs(10)).await.expect("an event, live"));
    }
    assert_eq!(seqs(&live), (3..=12).collect::<Vec<_>>());
    for (event, size) in live.iter().zip(sizes) {
        assert_eq!(event.data["data"]["text"].as_str().map(|t| t.chars().count()), Some(size / 2));
    }
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn wait_returns_when_the_run_settles_or_the_timeout_passes(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("done").with_delay(Duration::from_millis(300))]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let id = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    let queued = expect_json(app.get(&format!("/v1/runs/{id}/wait?timeout_s=0")).await, StatusCode::OK).await;
    assert_eq!(queued["status"], "queued", "as it stands when the timeout passes");
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(5)));
    let done = expect_json(app.get(&format!("/v1/runs/{id}/wait?timeout_s=30")).await, StatusCode::OK).await;
    assert_eq!(done["status"], "completed");
    expect_problem(app.get(&format!("/v1/runs/{id}/wait?timeout_s=301")).await, StatusCode::BAD_REQUEST)
        .await;
    expect_problem(app.get(&format!("/v1/runs/{}/wait", Uuid::now_v7())).await, StatusCode::NOT_FOUND).await;
    workers.shutdown().await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn streams_accept_the_key_as_a_query_parameter_and_nothing_else_does(pool: PgPool) {
    let app = TestApp::spawn_with_keys(pool, "stream-key").await;
    let id = app.kickoff(&calc_crew(), json!({"expr": "1"})).await["id"].as_str().expect("id").to_owned();
    let client = reqwest::Client::new();
    let stream = client
        .get(format!("{}/v1/runs/{id}/events?access_token=stream-key", app.base))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET");
    assert_eq!(stream.status(), StatusCode::OK);
    let firehose =
        client.get(format!("{}/v1/events?access_token=stream-key", app.base)).send().await.expect("GET");
    assert_eq!(firehose.status(), StatusCode::OK);
    let wrong = client.get(format!("{}/v1/events?access_token=nope", app.base)).send().await.expect("GET");
    expect_problem(wrong, StatusCode::UNAUTHORIZED).await;
    let elsewhere =
        client.get(format!("{}/v1/runs/{id}?access_token=stream-key", app.base)).send().await.expect("GET");
    expect_problem(elsewhere, StatusCode::UNAUTHORIZED).await;
}

//! What a key may see ends when the key does: streams opened with a stored key (in the header or
//! as `?access_token=`) end within about a second of its revocation (on another replica) or its
//! expiry, with a last message saying why and nothing after it: the firehose and a run's events
//! with `stream.closed`, the protocols' streams with their own errors (MCP's JSON-RPC error,
//! AG-UI's `RUN_ERROR`). A stream of a key of `AGENTD_API_KEYS` goes on; the revocation is
//! audited. The runs followed stay queued throughout (these replicas run no workers). And the one
//! query each replica reads its streams' keys with.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use agentd::domain::{KeyId, Quotas, Scope, TenantId};
use agentd::store::{Audit, KeyStanding, Store};
use uuid::Uuid;

use crate::events::{Sse, SseReader};
use crate::protocols::{published_crew, register};
use crate::support::{expect_json, sample_crew, sample_inputs, TestApp};
use crate::tenants::{key, server, tenant};

/// What the product promises: a stream ends within this of its key's end (keys are read once a
/// second on each replica).
const ENDS_WITHIN: Duration = Duration::from_secs(2);
/// Time enough for a message that is due on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(15);

/// Read `stream` to its end: its last message, when it arrived, and what came before it. Panics
/// when it does not end by [`PATIENCE`].
async fn last_message(stream: &mut SseReader, name: &str) -> (Sse, Instant, Vec<Sse>) {
    let mut seen = Vec::new();
    loop {
        let message = tokio::time::timeout(PATIENCE, stream.next(PATIENCE * 2)).await.unwrap_or_else(|_| {
            panic!("{name} is still open {PATIENCE:?} later (after {} messages)", seen.len())
        });
        let arrived = Instant::now();
        match message {
            Some(message) => seen.push((message, arrived)),
            None => {
                let (last, at) = seen.pop().unwrap_or_else(|| panic!("{name} ended with no message"));
                return (last, at, seen.into_iter().map(|(message, _)| message).collect());
            }
        }
    }
}

/// Move key `id`'s expiry to a second from now (as if it had been made to expire then): when
/// it expires, as an instant of this process.
async fn expire_soon(pool: &PgPool, id: &str) -> Instant {
    let expires_at: DateTime<Utc> = sqlx::query_scalar(
        "UPDATE api_keys SET expires_at = now() + interval '1 second' WHERE id = $1::uuid RETURNING expires_at",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .expect("expiry moved");
    Instant::now() + (expires_at - Utc::now()).to_std().unwrap_or_default()
}

/// `at` is within [`ENDS_WITHIN`] after `end`, and not before it.
fn assert_ended_in_time(name: &str, end: Instant, at: Instant) {
    let slack = Duration::from_millis(50);
    assert!(at + slack >= end, "{name} closed {:?} before its key ended", end - at);
    assert!(at <= end + ENDS_WITHIN, "{name} closed {:?} after its key ended", at - end);
    eprintln!("{name} closed {:?} after its key ended", at.saturating_duration_since(end));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_revoked_or_expired_key_ends_its_event_streams_saying_why(pool: PgPool) {
    let first = server(pool.clone()).await;
    let second = server(pool.clone()).await;
    tenant(&first, "team-a").await;
    let (runner, _) = key(&first, "team-a", &["read", "kickoff"]).await;
    let (a, a_id) = key(&first, "team-a", &["read"]).await;
    let (b, b_id) = key(&first, "team-a", &["read"]).await;
    let runner = first.as_key(Some(&runner));
    let run = runner.kickoff(&sample_crew(), sample_inputs()).await;
    let run_events = format!("/v1/runs/{}/events", run["id"].as_str().expect("id"));
    let (with_a, anonymous) = (first.as_key(Some(&a)), first.as_key(None));
    // A long poll of A's, under way while the streams open: its answer is when it ended.
    let wait = format!("/v1/runs/{}/wait?timeout_s=20", run["id"].as_str().expect("id"));
    let waiting = tokio::spawn({
        let with_a = first.as_key(Some(&a));
        async move { (with_a.get(&wait).await.status(), Instant::now()) }
    });
    let mut streams = [
        ("A's firehose", SseReader::open(&with_a, "/v1/events", None).await),
        ("A's run stream", SseReader::open(&with_a, &run_events, None).await),
        ("B's firehose", SseReader::open(&anonymous, &format!("/v1/events?access_token={b}"), None).await),
        (
            "B's run stream",
            SseReader::open(&anonymous, &format!("{run_events}?access_token={b}"), None).await,
        ),
    ];
    // The operator's (a key of AGENTD_API_KEYS, which has no row to end).
    let mut operator = SseReader::open(&first, "/v1/events", None).await;
    for (name, stream) in streams
        .iter_mut()
        .map(|(name, stream)| (*name, stream))
        .chain([("the operator's firehose", &mut operator)])
    {
        let queued = stream.next(PATIENCE).await.unwrap_or_else(|| panic!("{name} ended"));
        assert_eq!((queued.event.as_deref(), &queued.data["run_id"]), (Some("run.queued"), &run["id"]));
    }

    // A is revoked on the other replica: this one learns it from its own reading of keys.
    assert_eq!(second.delete(&format!("/v1/keys/{a_id}")).await.status(), StatusCode::NO_CONTENT);
    let revoked = Instant::now();
    for (name, stream) in &mut streams[..2] {
        let (closed, at, before) = last_message(stream, name).await;
        assert_eq!(closed.event.as_deref(), Some("stream.closed"), "{name}: {closed:?}");
        assert_eq!(closed.data["type"], "stream.closed");
        assert_eq!(closed.data["reason"], "key_revoked", "{name}: {closed:?}");
        assert!(closed.data["detail"].as_str().is_some_and(|d| d.contains("revoked")), "{closed:?}");
        assert_eq!(closed.id, None, "{name}: Last-Event-ID keeps naming the last event");
        assert!(before.is_empty(), "{name} delivered after the run's first event: {before:?}");
        assert_ended_in_time(name, revoked, at);
    }
    let (status, at) = waiting.await.expect("the wait");
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a wait under way when its key is revoked");
    assert_ended_in_time("A's wait", revoked, at);
    // B's streams go on: B's firehose gets a run kicked off now.
    let later = runner.kickoff(&sample_crew(), sample_inputs()).await;
    let next = streams[2].1.next(PATIENCE).await.expect("B's firehose goes on");
    assert_eq!((next.event.as_deref(), &next.data["run_id"]), (Some("run.queued"), &later["id"]));

    // B expires a second from now.
    let expired = expire_soon(&pool, &b_id).await;
    for (name, stream) in &mut streams[2..] {
        let (closed, at, before) = last_message(stream, name).await;
        assert_eq!(closed.event.as_deref(), Some("stream.closed"), "{name}: {closed:?}");
        assert_eq!(closed.data["reason"], "key_expired", "{name}: {closed:?}");
        assert!(before.is_empty(), "{name}: {before:?}");
        assert_ended_in_time(name, expired, at);
    }
    // Neither key opens a stream again.
    for (key, path) in
        [(Some(a.as_str()), "/v1/events".to_owned()), (None, format!("/v1/events?access_token={b}"))]
    {
        let response = first.as_key(key).request(reqwest::Method::GET, &path).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }

    // The operator's stream saw both runs and goes on.
    let next = operator.next(PATIENCE).await.expect("the operator's firehose goes on");
    assert_eq!((next.event.as_deref(), &next.data["run_id"]), (Some("run.queued"), &later["id"]));
    let third = runner.kickoff(&sample_crew(), sample_inputs()).await;
    let next = operator.next(PATIENCE).await.expect("the operator's firehose goes on");
    assert_eq!(&next.data["run_id"], &third["id"]);

    // The revocation is audited (in its own transaction): by the operator, of A, for team-a.
    let audit = expect_json(first.get("/v1/audit?action=key.revoke").await, StatusCode::OK).await;
    let records = audit["entries"].as_array().expect("entries");
    assert_eq!(records.len(), 1, "{audit}");
    let record = &records[0];
    assert_eq!(
        (record["resource"].as_str(), record["outcome"].as_str(), record["tenant"].as_str()),
        (Some(format!("/v1/keys/{a_id}").as_str()), Some("succeeded"), Some("team-a")),
        "{record}"
    );
    assert_eq!(record["key_id"], Value::Null, "made with a key of AGENTD_API_KEYS: {record}");
}

/// A `tools/call` of the current MCP revision (no session), answered with a stream.
async fn mcp_call(app: &TestApp, tool: &str) -> SseReader {
    let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": tool, "arguments": {"question": "q"}, "_meta": envelope}});
    let response = app
        .request(reqwest::Method::POST, "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .expect("POST /mcp");
    SseReader::of(response)
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_protocols_streams_end_with_their_own_errors_when_their_key_ends(pool: PgPool) {
    let first = server(pool.clone()).await;
    let second = server(pool.clone()).await;
    tenant(&first, "team-a").await;
    let (manager, _) = key(&first, "team-a", &["manage", "read"]).await;
    let manager = first.as_key(Some(&manager));
    register(&manager, &published_crew("research", json!({"mcp": true, "ag_ui": true}))).await;
    let (m, m_id) = key(&first, "team-a", &["kickoff"]).await;
    let (u, u_id) = key(&first, "team-a", &["kickoff"]).await;

    let mut call = mcp_call(&first.as_key(Some(&m)), "research").await;
    call.position(PATIENCE).await; // the priming event: the call's stream is open
    let input = json!({"threadId": "t-1", "runId": "r-1", "forwardedProps": {"inputs": {"question": "q"}}});
    let response = first.as_key(Some(&u)).post_json("/v1/ag-ui/crews/research", &input).await;
    let mut agent = SseReader::of(response);
    let started = agent.next(PATIENCE).await.expect("RUN_STARTED");
    assert_eq!(started.data["type"], "RUN_STARTED");

    // M is revoked on the other replica; U expires a second from now.
    assert_eq!(second.delete(&format!("/v1/keys/{m_id}")).await.status(), StatusCode::NO_CONTENT);
    let revoked = Instant::now();
    let expired = expire_soon(&pool, &u_id).await;

    let (answer, at, before) = last_message(&mut call, "the MCP call").await;
    assert!(before.is_empty(), "{before:?}");
    let error = &answer.data["error"];
    assert_eq!((answer.data["id"].as_i64(), error["code"].as_i64()), (Some(7), Some(-32050)), "{answer:?}");
    assert_eq!(error["data"]["reason"], "key_revoked", "{answer:?}");
    assert_ended_in_time("the MCP call", revoked, at);

    let (finished, at, before) = last_message(&mut agent, "the AG-UI run").await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(
        (finished.data["type"].as_str(), finished.data["code"].as_str()),
        (Some("RUN_ERROR"), Some("key_expired"))
    );
    assert!(finished.data["message"].as_str().is_some_and(|m| m.contains("expired")), "{finished:?}");
    assert_ended_in_time("the AG-UI run", expired, at);

    // The runs go on: the server ended the streams, no client cancelled a call.
    let runs = expect_json(manager.get("/v1/runs").await, StatusCode::OK).await;
    let statuses: Vec<&str> =
        runs["runs"].as_array().expect("runs").iter().filter_map(|r| r["status"].as_str()).collect();
    assert_eq!(statuses, ["queued", "queued"], "{runs}");
}

/// The checker's one query: each key asked about, as it stands, whether or not its row (or its
/// tenant) still exists.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn one_query_reads_how_every_watched_key_stands(pool: PgPool) {
    let store = Store::new(pool.clone());
    let team = TenantId::from("team-a");
    let audit = Audit::new(None, &team, "key.create", "/v1/keys");
    store.create_tenant(&team, &Quotas::default(), &audit).await.expect("tenant");
    let issue =
        |expires_at| agentd::service::issue_key(&store, &team, "k", &[Scope::Read], expires_at, &audit);
    let live = issue(None).await.expect("key").record.id;
    let expiring = issue(Some(Utc::now() + chrono::TimeDelta::hours(1))).await.expect("key").record;
    let revoked = issue(None).await.expect("key").record.id;
    assert!(store.revoke_key(revoked, None, &audit).await.expect("revoke"));
    let (gone, orphan) = (Uuid::now_v7(), Uuid::now_v7());

    let ids = [live, expiring.id, revoked, KeyId(gone), KeyId(orphan)];
    let tenants = ["team-a", "team-a", "team-a", "team-a", "team-z"].map(TenantId::from);
    let mut standings = store.key_standings(&ids, &tenants).await.expect("standings");
    standings.sort_by_key(|s| ids.iter().position(|id| *id == s.id));
    let standing = |id, exists, revoked, expires_at, tenant_exists| KeyStanding {
        id,
        exists,
        revoked,
        expires_at,
        tenant_exists,
    };
    assert_eq!(
        standings,
        [
            standing(live, true, false, None, true),
            standing(expiring.id, true, false, expiring.expires_at, true),
            standing(revoked, true, true, None, true),
            standing(KeyId(gone), false, false, None, true),
            standing(KeyId(orphan), false, false, None, false),
        ]
    );
}

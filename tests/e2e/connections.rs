//! Connections as `agentd serve` handles them (a child process, on raw sockets where the point is
//! what a client sends): the connection cap with its spare health-route slots, the header, idle
//! and body timeouts, event streams that outlive them, streams ended at shutdown, and the database
//! cut away.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::{child_database_url, Agentd};
use crate::fake_llm::{slow_crew, TempFile, SLOW_SCRIPT};

const LIMITS: &[(&str, &str)] = &[
    ("AGENTD_MAX_CONNECTIONS", "8"),
    ("AGENTD_HEADER_TIMEOUT_S", "1"),
    ("AGENTD_IDLE_TIMEOUT_S", "3"),
    ("AGENTD_BODY_TIMEOUT_S", "1"),
];

async fn connect(base: &str) -> TcpStream {
    TcpStream::connect(base.trim_start_matches("http://")).await.expect("connect")
}

/// Read until the peer closes the connection (or `patience` passes): what it sent, and when.
async fn read_until_closed(stream: &mut TcpStream, patience: Duration) -> Option<(Vec<u8>, Instant)> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some((received, Instant::now())),
            Ok(Ok(read)) => received.extend_from_slice(&buffer[..read]),
        }
    }
}

/// Read one response (head and a `Content-Length` body) from a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if received.len() >= end + 4 + length {
                return text;
            }
        }
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("a response in time")
            .expect("read");
        assert!(read > 0, "closed before the response was complete: {text}");
        received.extend_from_slice(&buffer[..read]);
    }
}

/// A request on a connection of its own.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client")
}

#[sqlx::test(migrations = false)]
async fn past_the_connection_cap_only_health_routes_answer_and_half_sent_requests_are_cut(pool: PgPool) {
    let url = child_database_url(&pool).await;
    // A header timeout long enough for the checks below to run while the slots are held, on a
    // loaded machine too.
    let env = [LIMITS, &[("AGENTD_HEADER_TIMEOUT_S", "5")]].concat();
    let agentd = Agentd::start(&url, &env);
    let base = agentd.base.clone();
    // Fill every slot with a request that never finishes its headers.
    let started = Instant::now();
    let mut stalled = Vec::new();
    for _ in 0..8 {
        let mut stream = connect(&base).await;
        stream.write_all(b"GET /v1/runs HTTP/1.1\r\n").await.expect("write");
        stalled.push(stream);
    }
    let client = fresh_client();
    // Once the server has taken all eight (a request before that is served in a free slot).
    let busy = loop {
        let response = client.get(format!("{base}/v1/runs")).send().await.expect("GET /v1/runs");
        if response.status() != StatusCode::OK || started.elapsed() > Duration::from_secs(4) {
            break response;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
    let ready = client.get(format!("{base}/readyz")).send().await.expect("GET /readyz");
    assert_eq!(ready.status(), StatusCode::OK, "a spare connection answers the health routes");
    assert_eq!(busy.headers()["retry-after"], "2");
    assert_eq!(busy.headers()["connection"], "close");
    let problem: Value = busy.json().await.expect("problem");
    assert_eq!(problem["detail"], "too many connections; retry later");
    // The header timeout closes each of them, unanswered (each was connected after `started`).
    for stream in &mut stalled {
        let (answer, closed) =
            read_until_closed(stream, Duration::from_secs(15)).await.expect("a stalled request is cut");
        assert!(answer.is_empty() || String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 408"));
        assert!(closed - started >= Duration::from_secs(5), "not before the timeout: {:?}", closed - started);
    }
    let freed = client.get(format!("{base}/v1/runs")).send().await.expect("GET /v1/runs");
    assert_eq!(freed.status(), StatusCode::OK, "the slots are free again");
    let logs = agentd.log_lines().join("\n");
    assert!(logs.contains("connection cap reached"), "{logs}");
}

#[sqlx::test(migrations = false)]
async fn a_slow_sender_is_cut_and_an_idle_connection_outlives_the_header_timeout(pool: PgPool) {
    let url = child_database_url(&pool).await;
    // An idle timeout well apart from the header timeout (1 s): a pause between requests falls
    // clearly between the two, however late the test's own timer fires.
    let env = [LIMITS, &[("AGENTD_IDLE_TIMEOUT_S", "6")]].concat();
    let agentd = Agentd::start(&url, &env);
    let base = agentd.base.clone();
    // Slowloris: a byte every 200 ms of a header that never ends. Bytes keep coming, yet the
    // connection is closed once the header timeout has passed since the first.
    let started = Instant::now();
    let mut slow = connect(&base).await;
    slow.write_all(b"GET /healthz HTTP/1.1\r\nX-Pad: ").await.expect("write");
    let mut cut = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if slow.write_all(b"a").await.is_err() {
            cut = Some(started.elapsed());
            break;
        }
        let mut probe = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(1), slow.read(&mut probe)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                cut = Some(started.elapsed());
                break;
            }
            Ok(Ok(_)) | Err(_) => {}
        }
    }
    let cut = cut.expect("a slow sender is cut within 8 s");
    assert!(cut >= Duration::from_secs(1) && cut < Duration::from_secs(8), "{cut:?}");

    // A kept-alive connection may wait past the header timeout for its next request (the idle
    // timeout is 6 s), then is closed once idle for that long.
    let mut kept = connect(&base).await;
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: agentd\r\n\r\n").await.expect("write");
    assert!(read_response(&mut kept).await.starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: agentd\r\n\r\n").await.expect("write");
    assert!(read_response(&mut kept).await.starts_with("HTTP/1.1 200"), "idle under 6 s: still served");
    let idle_from = Instant::now();
    let (_, closed) = read_until_closed(&mut kept, Duration::from_secs(20)).await.expect("closed when idle");
    // Closed after the idle timeout, counted by the server from before the answer was read here:
    // long past the header timeout, yet closed.
    let idle = closed - idle_from;
    assert!(idle >= Duration::from_secs(3) && idle < Duration::from_secs(15), "{idle:?}");
}

#[sqlx::test(migrations = false)]
async fn a_body_that_does_not_arrive_is_a_408_and_event_streams_outlive_the_timeouts(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let files = TempFile::new("slow.toml", SLOW_SCRIPT);
    let config = files.add("agentd.toml", "[providers.fake]\nkind = \"fake\"\nscript = \"slow.toml\"\n");
    let env = [LIMITS, &[("AGENTD_CONFIG", config.to_str().expect("path"))]].concat();
    let agentd = Agentd::start(&url, &env);
    let base = agentd.base.clone();
    let mut partial = connect(&base).await;
    partial
        .write_all(b"POST /v1/kickoffs HTTP/1.1\r\nHost: agentd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"crew\":")
        .await
        .expect("write");
    let (answer, _) =
        read_until_closed(&mut partial, Duration::from_secs(10)).await.expect("answered and closed");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("/problems/request-timeout"), "{answer}");

    // A stream stays open past the header and idle timeouts and delivers what comes later.
    let client = fresh_client();
    let mut stream = client
        .get(format!("{base}/v1/events?from_now=true"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let kickoff = client
        .post(format!("{base}/v1/kickoffs"))
        .json(&json!({"crew": slow_crew(), "inputs": {}}))
        .send()
        .await
        .expect("kickoff");
    assert_eq!(kickoff.status(), StatusCode::ACCEPTED);
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !text.contains("event: run.queued") {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("the event arrives")
            .expect("read")
            .expect("the stream is still open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[sqlx::test(migrations = false)]
async fn sigterm_ends_open_streams_with_a_retry_hint_and_exits_without_waiting_the_grace(pool: PgPool) {
    let url = child_database_url(&pool).await;
    // An API replica (no workers): the run stays queued, its stream open, and nothing but the
    // streams could hold the process up.
    let files = TempFile::new("slow.toml", SLOW_SCRIPT);
    let config = files.add("agentd.toml", "[providers.fake]\nkind = \"fake\"\nscript = \"slow.toml\"\n");
    let env = [
        ("AGENTD_CONFIG", config.to_str().expect("path")),
        ("AGENTD_SHUTDOWN_GRACE_S", "30"),
        ("AGENTD_ROLE", "api"),
    ];
    let agentd = Agentd::start(&url, &env);
    let base = agentd.base.clone();
    let client = fresh_client();
    let mut firehose = client
        .get(format!("{base}/v1/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("firehose");
    let kickoff: Value = client
        .post(format!("{base}/v1/kickoffs"))
        .json(&json!({"crew": slow_crew(), "inputs": {}}))
        .send()
        .await
        .expect("kickoff")
        .json()
        .await
        .expect("run");
    let run = kickoff["id"].as_str().expect("id").to_owned();
    let mut run_stream = client
        .get(format!("{base}/v1/runs/{run}/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("run stream");
    assert_eq!(run_stream.status(), StatusCode::OK);
    let stopped = Instant::now();
    let stop = tokio::spawn(agentd.stop("-TERM"));
    for stream in [&mut firehose, &mut run_stream] {
        let mut text = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(chunk) = stream.chunk().await.transpose() {
                match chunk {
                    Ok(chunk) => text.push_str(&String::from_utf8_lossy(&chunk)),
                    Err(_) => break,
                }
            }
        });
        read.await.expect("the stream ends at shutdown");
        assert!(text.contains("retry: 500\n"), "{text}");
    }
    let (status, logs) = stop.await.expect("join");
    assert!(status.success(), "{status:?}: {}", logs.join("\n"));
    let took = stopped.elapsed();
    assert!(took < Duration::from_secs(15), "exited after {took:?}, not after the 30 s grace");
}

/// A TCP proxy in front of PostgreSQL that the test can cut (every connection closed, new ones
/// refused) and restore on the same port.
struct DatabaseProxy {
    addr: std::net::SocketAddr,
    cut: tokio_util::sync::CancellationToken,
}

impl DatabaseProxy {
    async fn start(addr: std::net::SocketAddr, upstream: String) -> Self {
        let listener = agentd::net::listen(addr).expect("proxy listens");
        let addr = listener.local_addr().expect("addr");
        let cut = tokio_util::sync::CancellationToken::new();
        let token = cut.clone();
        tokio::spawn(async move {
            loop {
                let (mut client, _) = tokio::select! {
                    accepted = listener.accept() => accepted.expect("accept"),
                    () = token.cancelled() => return,
                };
                let (token, upstream) = (token.clone(), upstream.clone());
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream.as_str()).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        () = token.cancelled() => {}
                    }
                });
            }
        });
        Self { addr, cut }
    }

    /// Close every connection and stop listening.
    fn cut(&self) {
        self.cut.cancel();
    }
}

#[sqlx::test(migrations = false)]
async fn a_database_cut_away_is_a_503_within_about_two_seconds_and_service_comes_back(pool: PgPool) {
    let direct = child_database_url(&pool).await;
    // The database the test was given (a throw-away cluster's port, or DATABASE_URL's).
    let parsed = url::Url::parse(&direct).expect("url");
    let upstream = format!(
        "{}:{}",
        parsed.host_str().filter(|h| !h.is_empty()).unwrap_or("127.0.0.1"),
        parsed.port().unwrap_or(5432)
    );
    let proxy = DatabaseProxy::start("127.0.0.1:0".parse().expect("addr"), upstream.clone()).await;
    let mut through = url::Url::parse(&direct).expect("url");
    through.set_port(Some(proxy.addr.port())).expect("port");
    // Started off the test's thread, which the proxy needs while agentd migrates.
    let through = through.to_string();
    let agentd = tokio::task::spawn_blocking(move || Agentd::start(&through, &[])).await.expect("start");
    let base = agentd.base.clone();
    let client = reqwest::Client::new();
    let listed = client.get(format!("{base}/v1/runs")).send().await.expect("GET");
    assert_eq!(listed.status(), StatusCode::OK);

    proxy.cut();
    for path in ["/v1/runs", "/v1/crews", "/readyz"] {
        let asked = Instant::now();
        let response = client.get(format!("{base}{path}")).send().await.expect("GET");
        let took = asked.elapsed();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(response.headers().contains_key("retry-after"), "{path}");
        let problem: Value = response.json().await.expect("problem");
        assert_eq!(problem["type"], "/problems/unavailable", "{path}: {problem}");
        // The pool gives up after 2 s (it was 5 s, answered 500).
        assert!(took < Duration::from_millis(4_000), "{path}: answered after {took:?}");
    }
    let mut crew = slow_crew();
    crew["agents"][0]["llm"] = json!("gpt-4o-mini");
    let refused = client
        .post(format!("{base}/v1/kickoffs"))
        .json(&json!({"crew": crew, "inputs": {}}))
        .send()
        .await
        .expect("POST");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);

    let _restored = DatabaseProxy::start(proxy.addr, upstream).await;
    let mut back = None;
    for _ in 0..50 {
        let response = client.get(format!("{base}/v1/runs")).send().await.expect("GET");
        if response.status() == StatusCode::OK {
            back = Some(response.json::<Value>().await.expect("runs"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let runs = back.expect("service comes back with the database");
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(0), "the refused kickoff created nothing: {runs}");
}

//! Live delta latency: how long a streamed reply's text takes from the provider's send to an SSE
//! client of the run. agentd (`app::serve`, in this process, on a fresh database) calls a
//! streaming provider served here that sends `CHUNKS` (50) content chunks `GAP_MS` (20) apart,
//! each holding its send time; a client follows each of `RUNS` (20) streaming runs over
//! `GET /v1/runs/{id}/events` and reads the times back out of the `llm.delta` messages.
//! Prints p50/p90/p99 in milliseconds.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example delta_latency`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentd::config::{self, Config, Secret, Settings};
use axum::response::sse::{Event, Sse};
use futures_util::StreamExt;
use serde_json::{json, Value};
use sqlx::Connection;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn now_micros() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0)
}

/// A chat-completions endpoint that streams chunks stamped with their send time.
async fn provider() -> Result<String, BoxError> {
    let (chunks, gap) = (setting("CHUNKS", 50), Duration::from_millis(setting("GAP_MS", 20)));
    let route = axum::routing::post(move || async move {
        let head = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"});
        let chunk = move |choices: Value, usage: Option<Value>| {
            let mut body = head.clone();
            body["choices"] = choices;
            if let Some(usage) = usage {
                body["usage"] = usage;
            }
            Event::default().data(body.to_string())
        };
        let stream = futures_util::stream::iter(0..chunks + 2).then(move |i| {
            let chunk = chunk.clone();
            async move {
                let event = if i < chunks {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    let text = format!("t{} ", now_micros());
                    chunk(json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}]), None)
                } else if i == chunks {
                    chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]), None)
                } else {
                    chunk(json!([]), Some(json!({"prompt_tokens": 10, "completion_tokens": chunks})))
                };
                Ok::<_, std::convert::Infallible>(event)
            }
        });
        Sse::new(stream.chain(futures_util::stream::once(async { Ok(Event::default().data("[DONE]")) })))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().route("/v1/chat/completions", route)).await
    });
    Ok(format!("http://{addr}/v1"))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let admin = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL")?;
    let database = format!("agentd_delta_{}", std::process::id());
    sqlx::query(&format!("CREATE DATABASE {database}"))
        .execute(&mut sqlx::PgConnection::connect(&admin).await?)
        .await?;
    let url = format!("{}/{database}", admin.rsplit_once('/').map_or(admin.as_str(), |(base, _)| base));
    let result = measure(&url).await;
    let mut connection = sqlx::PgConnection::connect(&admin).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)")).execute(&mut connection).await?;
    result
}

async fn measure(url: &str) -> Result<(), BoxError> {
    let base_url = provider().await?;
    let file: Settings = toml::from_str(&format!("[providers.openai]\nbase_url = \"{base_url}\"\n"))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = Config {
        providers: config::providers(&file, |_| None)?,
        bind: ([127, 0, 0, 1], port).into(),
        ..Config::new(Secret::new(url))
    };
    tokio::spawn(agentd::app::serve(config));
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
        if Instant::now() > deadline {
            return Err("agentd did not become ready".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let crew = json!({"name": "typist",
        "agents": [{"name": "a", "role": "Writer", "goal": "Write", "backstory": "Brief."}],
        "tasks": [{"name": "t", "description": "Write.", "expected_output": "Text", "agent": "a"}]});
    let mut lags = Vec::new();
    for _ in 0..setting("RUNS", 20) {
        let run: Value = client
            .post(format!("{base}/v1/kickoffs"))
            .json(&json!({"crew": crew, "stream": true}))
            .send()
            .await?
            .json()
            .await?;
        let id = run["id"].as_str().ok_or("no run id")?;
        let response = client
            .get(format!("{base}/v1/runs/{id}/events"))
            .header("accept", "text/event-stream")
            .send()
            .await?;
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        'stream: while let Some(chunk) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk?));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let arrived = now_micros();
                let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or_default();
                if block.contains("event: llm.delta") {
                    let delta: Value = serde_json::from_str(data)?;
                    let text = delta["data"]["text"].as_str().unwrap_or_default();
                    for stamp in text.split_whitespace().filter_map(|t| t.strip_prefix('t')) {
                        let sent: u128 = stamp.parse()?;
                        lags.push(arrived.saturating_sub(sent) as f64 / 1000.0);
                    }
                } else if block.contains("event: run.completed") || block.contains("event: run.failed") {
                    break 'stream;
                }
            }
        }
    }
    lags.sort_by(f64::total_cmp);
    if lags.is_empty() {
        return Err("no deltas arrived".into());
    }
    let q = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize];
    println!(
        "delta latency, provider send to SSE client: {} chunks, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
        lags.len(),
        q(0.5),
        q(0.9),
        q(0.99)
    );
    Ok(())
}

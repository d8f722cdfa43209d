//! What an MCP tool call costs over a plain HTTP tool call: agentd's MCP client (`tools/call` over
//! Streamable HTTP: JSON-RPC, the session and revision headers, an event-stream answer) against
//! the reference server's `echo`, and agentd's HTTP tool request against a plain Node `http`
//! server answering the same text, on the same machine and runtime (both servers are Node), calls
//! interleaved one at a time. Prints the medians and p90s in microseconds and their difference.
//!
//! `tests/mcp/setup.sh && cargo run --release --example mcp_overhead` (`CALLS`, default 500).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::outbound::egress::EgressPolicy;
use agentd::tools::http::{fetch, Outbound, Request};
use agentd::tools::mcp::client::McpClient;
use agentd::tools::secrets::{NoSecrets, Redactor, SecretSource};
use agentd::tools::CallInfo;
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn free_port() -> Result<u16, BoxError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

async fn wait_listening(port: u16) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if Instant::now() > deadline {
            return Err(format!("nothing listens on {port}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn percentile(sorted: &[u128], p: f64) -> u128 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let calls: usize = std::env::var("CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let root = env!("CARGO_MANIFEST_DIR");
    let everything =
        format!("{root}/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !std::path::Path::new(&everything).exists() {
        return Err("run tests/mcp/setup.sh first (the MCP reference server is not installed)".into());
    }
    let (mcp_port, http_port) = (free_port()?, free_port()?);
    let _mcp = tokio::process::Command::new("node")
        .args([everything.as_str(), "streamableHttp"])
        .env("PORT", mcp_port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    // The same answer as the reference server's echo, from Node's plain http module.
    let script = "require('http').createServer((q, s) => { let b = ''; q.on('data', c => b += c); \
                  q.on('end', () => { const m = JSON.parse(b).message; s.writeHead(200, {'content-type': 'text/plain'}); \
                  s.end('Echo: ' + m); }); }).listen(Number(process.argv[1]), '127.0.0.1');";
    let _http = tokio::process::Command::new("node")
        .args(["-e", script, &http_port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    wait_listening(mcp_port).await?;
    wait_listening(http_port).await?;

    let policy = EgressPolicy::parse("127.0.0.1/32")?;
    let outbound = Arc::new(Outbound::new(policy, Duration::from_secs(10), 64 * 1024)?);
    let secrets: Arc<dyn SecretSource> = Arc::new(NoSecrets);
    let url = reqwest::Url::parse(&format!("http://127.0.0.1:{mcp_port}/mcp"))?;
    let client =
        Arc::new(McpClient::new(url, Vec::new(), Duration::from_secs(10), outbound.clone(), secrets));
    let http_url = format!("http://127.0.0.1:{http_port}/echo");
    let call = CallInfo { idempotency_key: "bench".into() };

    let mut mcp = Vec::with_capacity(calls);
    let mut http = Vec::with_capacity(calls);
    for i in 0..calls + 20 {
        let message = format!("call {i}");
        let params = json!({"name": "echo", "arguments": {"message": message}});
        let started = Instant::now();
        client.request("tools/call", params, &mut Redactor::default()).await?;
        let mcp_us = started.elapsed().as_micros();
        let body = json!({"message": message});
        let request = Request {
            method: reqwest::Method::POST,
            url: &http_url,
            body: Some(&body),
            timeout: None,
            headers: Vec::new(),
        };
        let started = Instant::now();
        fetch(&outbound, request, &call).await?;
        let http_us = started.elapsed().as_micros();
        // The first calls warm connections and the session up.
        if i >= 20 {
            mcp.push(mcp_us);
            http.push(http_us);
        }
    }
    mcp.sort_unstable();
    http.sort_unstable();
    let (mcp50, http50) = (percentile(&mcp, 0.5), percentile(&http, 0.5));
    println!("calls each: {calls} (interleaved, after 20 warm-up calls)");
    println!("MCP tools/call (reference server echo): p50 {mcp50} µs, p90 {} µs", percentile(&mcp, 0.9));
    println!("HTTP tool POST (node http echo):        p50 {http50} µs, p90 {} µs", percentile(&http, 0.9));
    println!(
        "MCP overhead per call: p50 +{} µs ({:.2}×)",
        mcp50.saturating_sub(http50),
        mcp50 as f64 / http50.max(1) as f64
    );
    Ok(())
}

//! The `local` provider's embedding model, measured on this machine's CPU: texts per second
//! when a batch of 64 chunks is embedded (as the ingester sends them), tokens per second, and
//! the latency of one short query (as a hybrid search or a memory recall embeds it), p50 and
//! p99. The texts are the paragraphs of the retrieval corpus (`tests/knowledge/corpus`), so
//! their lengths are those of real chunks.
//!
//! ```sh
//! tests/vector/setup.sh    # all-MiniLM-L6-v2 into target/models/all-minilm-l6-v2
//! cargo run --release --example local_embed_bench              # MODELS=target/models MODEL=all-minilm-l6-v2 ROUNDS=5 QUERIES=100
//! ```

use std::time::{Duration, Instant};

use agentd::llm::{LlmClient, LocalClient};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn setting(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let root = env!("CARGO_MANIFEST_DIR");
    let models = setting("MODELS", &format!("{root}/target/models"));
    let model = setting("MODEL", "all-minilm-l6-v2");
    let rounds: usize = setting("ROUNDS", "5").parse()?;
    let queries: usize = setting("QUERIES", "100").parse()?;

    let mut paragraphs = Vec::new();
    let mut files: Vec<_> =
        std::fs::read_dir(format!("{root}/tests/knowledge/corpus"))?.collect::<Result<_, _>>()?;
    files.sort_by_key(|f| f.path());
    for file in files {
        let text = std::fs::read_to_string(file.path())?;
        paragraphs.extend(text.split("\n\n").map(str::trim).filter(|p| p.len() > 80).map(str::to_owned));
    }
    let batch: Vec<String> = paragraphs.iter().cycle().take(64).cloned().collect();

    let client = LocalClient::new(&models);
    let started = Instant::now();
    let loaded = client.model(&model).await.map_err(|e| e.message)?;
    println!("load: {:.2} s ({model})", started.elapsed().as_secs_f64());
    let tokens: usize = batch.iter().map(|t| loaded.tokens(t).len()).sum();
    println!("batch: 64 paragraphs of the corpus, {:.0} tokens each on average", tokens as f64 / 64.0);

    client.embed(&model, &batch).await.map_err(|e| e.message)?;
    let started = Instant::now();
    for _ in 0..rounds {
        client.embed(&model, &batch).await.map_err(|e| e.message)?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let texts = (rounds * batch.len()) as f64;
    println!(
        "batches: {:.1} texts/s, {:.0} tokens/s ({rounds} batches of 64 in {elapsed:.2} s, one core)",
        texts / elapsed,
        (rounds * tokens) as f64 / elapsed
    );

    let mut latencies = Vec::with_capacity(queries);
    for i in 0..queries {
        let query = [format!("How do recurring invoices work, question {i}?")];
        let started = Instant::now();
        client.embed(&model, &query).await.map_err(|e| e.message)?;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "one query: p50 {:.2} ms, p99 {:.2} ms ({queries} queries)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    Ok(())
}

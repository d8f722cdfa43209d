//! `POST /v1/embeddings` as OpenAI answers it, with vectors that are deterministic and clearly
//! not semantic: each text's vector is drawn from a generator seeded with a hash of the text
//! (unit length, 64 dimensions or the request's `dimensions`). The same text always gets the same
//! vector and different texts unrelated ones, so a vector search over them finds exact repeats
//! only; they exercise the wire format, batching and storage, not retrieval quality.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// Dimensions of a vector when the request does not ask.
pub const DEFAULT_DIMENSIONS: usize = 64;
/// The most dimensions a request may ask for.
const MAX_DIMENSIONS: u64 = 4096;

/// The answer to an embeddings request body.
pub fn answer(body: &[u8]) -> Response {
    let bad = |message: String| {
        let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    };
    let request: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return bad(format!("invalid JSON body: {e}")),
    };
    let inputs: Vec<&str> = match &request["input"] {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) => match items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
            Some(texts) if !texts.is_empty() => texts,
            _ => return bad("'input' must be a string or a non-empty array of strings".into()),
        },
        _ => return bad("'input' must be a string or a non-empty array of strings".into()),
    };
    let dimensions = match request.get("dimensions") {
        None | Some(Value::Null) => DEFAULT_DIMENSIONS,
        Some(value) => match value.as_u64().filter(|d| (1..=MAX_DIMENSIONS).contains(d)) {
            Some(d) => d as usize,
            None => return bad(format!("'dimensions' must be an integer from 1 to {MAX_DIMENSIONS}")),
        },
    };
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count().max(1)).sum();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": vector(text, dimensions)}))
        .collect();
    let model = request["model"].as_str().unwrap_or("fake-embedding");
    Json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
    .into_response()
}

/// The vector of `text`: unit length, from a generator seeded with its FNV-1a hash.
pub fn vector(text: &str, dimensions: usize) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut next = || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let raw: Vec<f64> =
        (0..dimensions).map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0).collect();
    let norm = raw.iter().map(|x| x * x).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
    raw.iter().map(|x| (x / norm) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::vector;

    #[test]
    fn vectors_are_deterministic_unit_length_and_unrelated() {
        let a = vector("the same text", 64);
        assert_eq!(a, vector("the same text", 64));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        let b = vector("the same text!", 64);
        let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(cosine.abs() < 0.5, "{cosine}");
        assert_eq!(vector("x", 384).len(), 384);
    }
}

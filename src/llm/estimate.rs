//! Token counts for a call whose provider sent none (llama.cpp's server and others send no usage
//! in a stream, even when asked with `stream_options.include_usage`; a stream cut at a stop
//! sequence is not read to its usage). The prompt is counted from the request as sent, the
//! completion from the text and tool calls received, with OpenAI's `cl100k_base` encoding
//! (`tiktoken-rs`) and the chat format's overhead per message. On llama.cpp's server with
//! SmolLM2 (a 49k vocabulary) English prompts come out about 10% under the server's own counts;
//! text in other languages further under (docs/operations.md has the measurements). The figures are marked
//! [`TokenUsage::estimated`]; budgets, rate limits, cost and metrics use them as they would a
//! provider's. A provider's own figures always win: this runs only when a reply has none.

use super::types::{
    ChatMessage, ChatRequest, ChatResponse, TokenUsage, ToolCallRequest, ToolDefinition, IMAGE_TOKENS,
};

/// Tokens a chat format spends around each message (role and delimiters: ChatML's
/// `<|im_start|>role\n … <|im_end|>\n` is five, OpenAI's three or four).
const PER_MESSAGE: u64 = 5;

/// Tokens that begin the reply (the assistant's header the server appends to the prompt).
const REPLY_PRIMING: u64 = 3;

/// Fill in the usage of `response` when its provider sent none (marked `estimated`; the counts
/// are still zero). Counting is CPU work proportional to the text, so it runs off the async
/// workers.
pub(super) async fn complete_usage(request: &ChatRequest, response: &mut ChatResponse) {
    if !response.usage.estimated {
        return;
    }
    let messages = request.messages.clone();
    let tools = request.tools.clone();
    let content = response.content.clone();
    let calls = response.tool_calls.clone();
    let counted = tokio::task::spawn_blocking(move || {
        (prompt_tokens(&messages, &tools), completion_tokens(content.as_deref(), &calls))
    })
    .await;
    let (prompt, completion) = match counted {
        Ok(counts) => counts,
        // Only a panic inside the tokenizer gets here: fall back to the cheap estimate.
        Err(_) => {
            (request.estimated_prompt_tokens(), response.content.as_ref().map_or(0, |c| c.len() as u64 / 4))
        }
    };
    response.usage = TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: 0,
        estimated: true,
    };
}

/// The tokens of `text` in `cl100k_base` (special tokens counted as text).
pub fn count(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len() as u64
}

/// The prompt's tokens: every message with its overhead, its tool calls and images, and the
/// tools offered.
pub fn prompt_tokens(messages: &[ChatMessage], tools: &[ToolDefinition]) -> u64 {
    let mut tokens = REPLY_PRIMING;
    for message in messages {
        tokens += PER_MESSAGE + message.content.as_deref().map_or(0, count);
        tokens += calls_tokens(&message.tool_calls);
        tokens += message.images.len() as u64 * IMAGE_TOKENS;
    }
    for tool in tools {
        tokens += count(&tool.name) + count(&tool.description) + count(&tool.parameters.to_string());
    }
    tokens
}

/// The reply's tokens: its text and its tool calls (servers count no end-of-turn token).
pub fn completion_tokens(content: Option<&str>, calls: &[ToolCallRequest]) -> u64 {
    content.map_or(0, count) + calls_tokens(calls)
}

fn calls_tokens(calls: &[ToolCallRequest]) -> u64 {
    calls.iter().map(|call| count(&call.name) + count(&call.arguments)).sum()
}

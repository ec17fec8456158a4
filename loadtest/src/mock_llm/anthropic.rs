//! `POST /v1/messages`: the Anthropic Messages wire, streamed and whole.
//!
//! A stream is `message_start` and a `ping`, then content blocks — each a
//! `content_block_start`, its deltas (`thinking_delta` then a `signature_delta`,
//! `text_delta`, or `input_json_delta` pieces starting with `""`) and a
//! `content_block_stop` — then `message_delta` (stop reason, output tokens) and
//! `message_stop`; every `data:` has an `event:` line naming its `type`, and there is
//! no `[DONE]` (`llm-wire.md` §2.2). A mid-stream `@mock.fail` is an `event: error`
//! after HTTP 200, as Anthropic sends `overloaded_error`. Cache reads and writes
//! follow the request's `cache_control` breakpoints ([`super::anthropic_cache`]).

use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use weft_llm::mockscript::{self, Item, Outcome};
use weft_llm::{StopReason, Usage};

use super::AppState;
use super::anthropic_wire::{
    AnthropicError, MessagesRequest, check_thinking, error_type, messages as chat_messages,
    signature,
};
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(super) async fn messages(State(state): State<AppState>, body: Bytes) -> Response {
    state.keep(&body);
    match respond(state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn respond(state: AppState, body: &[u8]) -> Result<Response, AnthropicError> {
    let req: MessagesRequest = serde_json::from_slice(body)
        .map_err(|e| AnthropicError::invalid(format!("invalid request body: {e}")))?;
    check_thinking(&req)?;
    let chat = chat_messages(&req)?;
    let cached = state.prompt_cache.account(&req)?;
    let script = state
        .script(&chat, req.max_tokens, &req.messages)
        .map_err(|e| AnthropicError::invalid(e.to_string()))?;
    let items = match script.outcome {
        Outcome::Reject(fail) => {
            return Err(AnthropicError::for_status(fail.status, fail.retry_after));
        }
        Outcome::Stream(items) => items,
    };
    let message = MessageHead {
        id: format!("msg_mock{:016x}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        model: req.model.clone(),
        input: script.input.saturating_sub(cached.read + cached.written),
        cache_read: cached.read,
        cache_creation: cached.written,
    };
    let paced = mockscript::pace(items, script.timing);
    if req.stream.unwrap_or(false) {
        return Ok(stream_response(message, paced));
    }
    Ok(whole_response(&message, paced.collect().await))
}

struct MessageHead {
    id: String,
    model: String,
    /// Uncached input tokens (Anthropic reports cache reads and writes apart).
    input: u64,
    cache_read: u64,
    cache_creation: u64,
}

impl MessageHead {
    fn usage(&self, output: u64) -> Value {
        json!({"input_tokens": self.input, "cache_creation_input_tokens": self.cache_creation,
               "cache_read_input_tokens": self.cache_read, "output_tokens": output, "service_tier": "standard"})
    }

    fn message(&self, content: Value, stop: Option<&str>, output: u64) -> Value {
        json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model,
               "content": content, "stop_reason": stop, "stop_sequence": null, "usage": self.usage(output)})
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Block {
    Text,
    Thinking,
}

/// Turns items into events, opening and closing content blocks as the kind changes.
struct Encoder {
    index: u32,
    open: Option<Block>,
    /// The open thinking block's text, signed when it closes.
    thinking: String,
    buf: Vec<u8>,
}

impl Encoder {
    fn event(&mut self, data: Value) {
        let name = data["type"].as_str().unwrap_or("message").to_owned();
        self.buf
            .extend_from_slice(format!("event: {name}\ndata: ").as_bytes());
        serde_json::to_writer(&mut self.buf, &data).expect("JSON values serialise");
        self.buf.extend_from_slice(b"\n\n");
    }

    fn delta(&mut self, delta: Value) {
        self.event(json!({"type": "content_block_delta", "index": self.index, "delta": delta}));
    }

    fn ensure(&mut self, block: Block) {
        if self.open == Some(block) {
            return;
        }
        self.close();
        let content = match block {
            Block::Text => json!({"type": "text", "text": ""}),
            Block::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
        };
        self.event(
            json!({"type": "content_block_start", "index": self.index, "content_block": content}),
        );
        self.open = Some(block);
    }

    fn close(&mut self) {
        match self.open.take() {
            None => return,
            Some(Block::Thinking) => {
                let signed = signature(&std::mem::take(&mut self.thinking));
                self.delta(json!({"type": "signature_delta", "signature": signed}))
            }
            Some(Block::Text) => {}
        }
        self.event(json!({"type": "content_block_stop", "index": self.index}));
        self.index += 1;
    }

    fn item(&mut self, item: &Item) -> Bytes {
        match item {
            Item::Thinking(t) => {
                self.ensure(Block::Thinking);
                self.thinking.push_str(t);
                self.delta(json!({"type": "thinking_delta", "thinking": t}));
            }
            Item::Text(t) => {
                self.ensure(Block::Text);
                self.delta(json!({"type": "text_delta", "text": t}));
            }
            Item::ToolCall(call) => {
                self.close();
                let block =
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
                self.event(json!({"type": "content_block_start", "index": self.index, "content_block": block}));
                let args: Vec<char> = call.args.to_string().chars().collect();
                self.delta(json!({"type": "input_json_delta", "partial_json": ""}));
                for piece in args.chunks(8) {
                    self.delta(json!({"type": "input_json_delta", "partial_json": piece.iter().collect::<String>()}));
                }
                self.event(json!({"type": "content_block_stop", "index": self.index}));
                self.index += 1;
            }
            Item::Finished { stop, usage } => {
                self.close();
                self.event(json!({"type": "message_delta",
                    "delta": {"stop_reason": stop_reason(*stop), "stop_sequence": null},
                    "usage": {"output_tokens": usage.output}}));
                self.event(json!({"type": "message_stop"}));
            }
            Item::Fail(fail) => {
                let error = json!({"type": error_type(fail.status), "message": AnthropicError::for_status(fail.status, None).message});
                self.event(json!({"type": "error", "error": error}));
            }
            Item::Cut => {}
        }
        Bytes::from(std::mem::take(&mut self.buf))
    }
}

fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::EndTurn | StopReason::Other => "end_turn",
    }
}

fn stream_response(
    head: MessageHead,
    items: impl futures::Stream<Item = Item> + Send + 'static,
) -> Response {
    let mut encoder = Encoder {
        index: 0,
        open: None,
        thinking: String::new(),
        buf: Vec::with_capacity(512),
    };
    encoder.event(json!({"type": "message_start", "message": head.message(json!([]), None, 1)}));
    encoder.event(json!({"type": "ping"}));
    let start = Bytes::from(std::mem::take(&mut encoder.buf));
    // A cut ends the body early and cleanly: no `message_stop`.
    let body = items
        .take_while(|item| futures::future::ready(*item != Item::Cut))
        .map(move |item| Ok::<_, std::io::Error>(encoder.item(&item)));
    let first = stream::once(async move { Ok::<_, std::io::Error>(start) });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    (
        headers,
        [("request-id", "req_mock")],
        Body::from_stream(first.chain(body)),
    )
        .into_response()
}

fn whole_response(head: &MessageHead, items: Vec<Item>) -> Response {
    let (mut thinking, mut text, mut content) = (String::new(), String::new(), Vec::new());
    for item in items {
        match item {
            Item::Thinking(t) => thinking.push_str(&t),
            Item::Text(t) => text.push_str(&t),
            Item::ToolCall(c) => content
                .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})),
            Item::Fail(fail) => {
                return AnthropicError::for_status(fail.status, fail.retry_after).into_response();
            }
            Item::Cut => {
                let cut =
                    stream::once(async { Err::<Bytes, _>(std::io::Error::other("@mock.cut")) });
                return Body::from_stream(cut).into_response();
            }
            Item::Finished { stop, usage } => {
                return finished(head, thinking, text, content, stop, usage);
            }
        }
    }
    AnthropicError::for_status(500, None).into_response()
}

fn finished(
    head: &MessageHead,
    thinking: String,
    text: String,
    calls: Vec<Value>,
    stop: StopReason,
    usage: Usage,
) -> Response {
    let mut content = Vec::new();
    if !thinking.is_empty() {
        let signed = signature(&thinking);
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": signed}));
    }
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    content.extend(calls);
    axum::Json(head.message(Value::Array(content), Some(stop_reason(stop)), usage.output))
        .into_response()
}

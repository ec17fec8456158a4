//! `POST /v1/chat/completions`: streamed (SSE chunks, `data: [DONE]`) and whole.
//!
//! Streamed chunks follow the recorded OpenAI stream (`llm-wire.md` §1.2): one `id`
//! and `created` for the whole response, a first delta carrying the role, tool calls
//! as a first fragment (index, id, type, name, empty arguments) followed by argument
//! fragments, a last choice delta `{}` with the `finish_reason`, then — when
//! `include_usage` — a usage chunk with empty `choices` (and `"usage": null` on every
//! other chunk), then `data: [DONE]`. Reasoning goes in DeepSeek's `reasoning_content`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use weft_llm::mockscript::{self, Item, Outcome};
use weft_llm::{StopReason, ToolCall, Usage};

use super::AppState;
use super::openai_wire::{ApiError, CompletionRequest, messages};

pub(super) async fn models() -> axum::Json<Value> {
    axum::Json(json!({"object": "list", "data": [
        {"id": "mock", "object": "model", "created": 0, "owned_by": "weft"}
    ]}))
}

pub(super) async fn chat_completions(State(state): State<AppState>, body: Bytes) -> Response {
    state.keep(&body);
    match respond(state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn respond(state: AppState, body: &[u8]) -> Result<Response, ApiError> {
    let req: CompletionRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            format!("We could not parse the JSON body of your request: {e}"),
            None,
        )
    })?;
    let chat = messages(&req.messages)?;
    let script = state
        .script(&chat, req.max_tokens(), &req.messages)
        .map_err(|e| ApiError::bad_request(e.to_string(), Some("messages")))?;
    let timing = script.timing;
    let items = match script.outcome {
        Outcome::Reject(fail) => return Err(ApiError::for_status(fail.status, fail.retry_after)),
        Outcome::Stream(items) => items,
    };
    let chunks = Chunks::new(req.model.clone(), req.include_usage());
    if req.stream.unwrap_or(false) {
        return Ok(stream_response(chunks, mockscript::pace(items, timing)));
    }
    let items: Vec<Item> = mockscript::pace(items, timing).collect().await;
    Ok(whole_response(&chunks, items))
}

/// The constant parts of one response's chunks.
pub(super) struct Chunks {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Chunks {
    fn new(model: String, include_usage: bool) -> Self {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let id = format!(
            "chatcmpl-mock{:012x}",
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        );
        Chunks {
            id,
            created,
            model,
            include_usage,
        }
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> Value {
        let mut c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model, "system_fingerprint": "fp_weft_mock", "choices": choices,
        });
        if self.include_usage {
            c["usage"] = usage.unwrap_or(Value::Null);
        }
        c
    }

    fn delta(&self, delta: Value, finish: Option<&str>) -> Value {
        self.chunk(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]),
            None,
        )
    }

    /// The SSE frames for one scripted item, written together.
    fn frames(&self, item: &Item, buf: &mut Vec<u8>) {
        match item {
            Item::Thinking(t) => data(buf, &self.delta(json!({"reasoning_content": t}), None)),
            Item::Text(t) => data(buf, &self.delta(json!({"content": t}), None)),
            Item::ToolCall(call) => {
                for fragment in tool_fragments(call, 0) {
                    data(buf, &self.delta(json!({"tool_calls": [fragment]}), None));
                }
            }
            Item::Finished { stop, usage } => {
                data(buf, &self.delta(json!({}), Some(finish_reason(*stop))));
                if self.include_usage {
                    data(buf, &self.chunk(json!([]), Some(usage_json(usage))));
                }
                buf.extend_from_slice(b"data: [DONE]\n\n");
            }
            Item::Fail(fail) => data(buf, &ApiError::for_status(fail.status, None).body()),
            Item::Cut => {}
        }
    }
}

fn data(buf: &mut Vec<u8>, value: &Value) {
    buf.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *buf, value).expect("JSON values serialise");
    buf.extend_from_slice(b"\n\n");
}

/// A tool call as the recorded stream sends it: the head, then argument pieces.
fn tool_fragments(call: &ToolCall, index: usize) -> Vec<Value> {
    let head = json!({"index": index, "id": call.id, "type": "function",
        "function": {"name": call.name, "arguments": ""}});
    let args = call.args.to_string();
    let chars: Vec<char> = args.chars().collect();
    let pieces = chars.chunks(6).map(|c| c.iter().collect::<String>());
    std::iter::once(head)
        .chain(pieces.map(|p| json!({"index": index, "function": {"arguments": p}})))
        .collect()
}

pub(super) fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::EndTurn | StopReason::Other => "stop",
    }
}

pub(super) fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    })
}

fn stream_response(
    chunks: Chunks,
    items: impl futures::Stream<Item = Item> + Send + 'static,
) -> Response {
    let mut first = Vec::new();
    data(
        &mut first,
        &chunks.delta(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        ),
    );
    let head = stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(first)) });
    // A cut ends the body cleanly but early: no finish_reason, no `[DONE]`. (Failing
    // the body instead makes hyper drop what it had buffered, headers included.)
    let body = items
        .take_while(|item| futures::future::ready(*item != Item::Cut))
        .map(move |item| {
            let mut buf = Vec::with_capacity(256);
            chunks.frames(&item, &mut buf);
            Ok(Bytes::from(buf))
        });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    (headers, Body::from_stream(head.chain(body))).into_response()
}

fn whole_response(chunks: &Chunks, items: Vec<Item>) -> Response {
    let (mut text, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    for item in items {
        match item {
            Item::Thinking(t) => thinking.push_str(&t),
            Item::Text(t) => text.push_str(&t),
            Item::ToolCall(c) => calls.push(json!({"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.args.to_string()}})),
            Item::Fail(fail) => {
                return ApiError::for_status(fail.status, fail.retry_after).into_response();
            }
            Item::Cut => {
                let cut =
                    stream::once(async { Err::<Bytes, _>(std::io::Error::other("@mock.cut")) });
                return Body::from_stream(cut).into_response();
            }
            Item::Finished { stop, usage } => {
                let mut message = json!({"role": "assistant", "content": text, "refusal": null});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(std::mem::take(&mut calls));
                    if text.is_empty() {
                        message["content"] = Value::Null;
                    }
                }
                if !thinking.is_empty() {
                    message["reasoning_content"] = json!(thinking);
                }
                return axum::Json(json!({
                    "id": chunks.id, "object": "chat.completion", "created": chunks.created,
                    "model": chunks.model, "system_fingerprint": "fp_weft_mock",
                    "choices": [{"index": 0, "message": message, "logprobs": null,
                        "finish_reason": finish_reason(stop)}],
                    "usage": usage_json(&usage),
                }))
                .into_response();
            }
        }
    }
    ApiError::for_status(500, None).into_response()
}

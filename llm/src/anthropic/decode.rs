//! Anthropic stream events → [`StreamEvent`]s.
//!
//! Dispatch is on the payload's `type` (which repeats the `event:` name). Tool input
//! arrives as `input_json_delta` pieces, assembled per block index and yielded whole
//! at `content_block_stop`. A thinking block streams its text as `thinking_delta`s
//! (yielded as they come) and its `signature` as a `signature_delta`; at its stop the
//! whole block is yielded as [`StreamEvent::Reasoned`], as is a `redacted_thinking`
//! block (whose `data` arrives whole in its start). Usage is cumulative: `message_start` carries the input
//! side, `message_delta` the output (and sometimes repeats the rest; non-null wins).

use std::collections::HashMap;

use eventsource_stream::Event;
use serde_json::Value;

use crate::sse::{Decoder, Out, transient};
use crate::{LlmError, Reasoning, StopReason, StreamEvent, ToolCall, Usage};

struct ToolBlock {
    id: String,
    name: String,
    start_input: Value,
    json: String,
}

#[derive(Default)]
pub(super) struct EventDecoder {
    started: bool,
    tools: HashMap<u64, ToolBlock>,
    /// Reasoning blocks open by index: a thinking block's text and signature
    /// grow with its deltas.
    thoughts: HashMap<u64, Reasoning>,
    stop: Option<StopReason>,
    saw_tool: bool,
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
    reasoning: u64,
}

impl Decoder for EventDecoder {
    fn on_event(&mut self, event: &Event, out: &mut Out) -> bool {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(_) if event.data.trim().is_empty() => return false,
            Err(e) => {
                out.push_back(Err(LlmError::Fatal {
                    reason: format!("malformed event: {e}"),
                    status: None,
                }));
                return true;
            }
        };
        let kind = data["type"].as_str().unwrap_or(&event.event);
        match kind {
            "message_start" => {
                self.started = true;
                self.usage_from(&data["message"]["usage"]);
            }
            "content_block_start" => self.block_start(&data),
            "content_block_delta" => self.block_delta(&data, out),
            "content_block_stop" => self.block_stop(&data, out),
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop = Some(stop_reason(reason));
                }
                self.usage_from(&data["usage"]);
            }
            "message_stop" => {
                let mut stop = self.stop.unwrap_or(StopReason::EndTurn);
                if self.saw_tool && stop == StopReason::EndTurn {
                    stop = StopReason::ToolUse;
                }
                out.push_back(Ok(StreamEvent::Finished {
                    stop,
                    usage: self.usage(),
                }));
                return true;
            }
            "error" => {
                out.push_back(Err(stream_error(&data["error"])));
                return true;
            }
            _ => {} // ping and future event types
        }
        false
    }

    fn on_eof(&mut self, out: &mut Out) {
        let what = if self.started {
            "message_stop"
        } else {
            "message_start"
        };
        out.push_back(Err(transient(format!("stream ended before {what}"))));
    }
}

impl EventDecoder {
    fn block_start(&mut self, data: &Value) {
        let block = &data["content_block"];
        let index = data["index"].as_u64().unwrap_or(0);
        let text = |key: &str| block[key].as_str().unwrap_or_default().to_owned();
        match block["type"].as_str() {
            Some("thinking") => {
                let thinking = Reasoning::Thinking {
                    thinking: text("thinking"),
                    signature: text("signature"),
                };
                self.thoughts.insert(index, thinking);
            }
            Some("redacted_thinking") => {
                let redacted = Reasoning::RedactedThinking { data: text("data") };
                self.thoughts.insert(index, redacted);
            }
            _ => {}
        }
        if block["type"] == "tool_use" {
            let tool = ToolBlock {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                name: block["name"].as_str().unwrap_or_default().to_owned(),
                start_input: block["input"].clone(),
                json: String::new(),
            };
            self.tools.insert(data["index"].as_u64().unwrap_or(0), tool);
        }
    }

    fn block_delta(&mut self, data: &Value, out: &mut Out) {
        let delta = &data["delta"];
        let piece = |key: &str| {
            delta[key]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        match delta["type"].as_str() {
            Some("text_delta") => out.extend(piece("text").map(|t| Ok(StreamEvent::Text(t)))),
            Some("thinking_delta") => {
                if let Some(t) = piece("thinking") {
                    if let Some(Reasoning::Thinking { thinking, .. }) = self.open_reasoning(data) {
                        thinking.push_str(&t);
                    }
                    out.push_back(Ok(StreamEvent::Thinking(t)));
                }
            }
            Some("signature_delta") => {
                if let Some(Reasoning::Thinking { signature, .. }) = self.open_reasoning(data) {
                    signature.push_str(delta["signature"].as_str().unwrap_or_default());
                }
            }
            Some("input_json_delta") => {
                if let Some(tool) = self.tools.get_mut(&data["index"].as_u64().unwrap_or(0)) {
                    tool.json
                        .push_str(delta["partial_json"].as_str().unwrap_or_default());
                }
            }
            _ => {} // citations_delta
        }
    }

    fn open_reasoning(&mut self, data: &Value) -> Option<&mut Reasoning> {
        self.thoughts.get_mut(&data["index"].as_u64().unwrap_or(0))
    }

    fn block_stop(&mut self, data: &Value, out: &mut Out) {
        let index = data["index"].as_u64().unwrap_or(0);
        if let Some(block) = self.thoughts.remove(&index) {
            out.push_back(Ok(StreamEvent::Reasoned(block)));
            return;
        }
        let Some(tool) = self.tools.remove(&index) else {
            return;
        };
        let args = match tool.json.trim() {
            "" if tool.start_input.is_object() => tool.start_input,
            "" => Value::Object(Default::default()),
            raw => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())),
        };
        self.saw_tool = true;
        out.push_back(Ok(StreamEvent::ToolCall(ToolCall {
            id: tool.id,
            name: tool.name,
            args,
        })));
    }

    fn usage_from(&mut self, usage: &Value) {
        let set = |field: &mut u64, key: &str| {
            if let Some(n) = usage[key].as_u64() {
                *field = n;
            }
        };
        set(&mut self.input, "input_tokens");
        set(&mut self.cache_read, "cache_read_input_tokens");
        set(&mut self.cache_creation, "cache_creation_input_tokens");
        set(&mut self.output, "output_tokens");
        if let Some(n) = usage["output_tokens_details"]["thinking_tokens"].as_u64() {
            self.reasoning = n;
        }
    }

    fn usage(&self) -> Usage {
        Usage {
            input: self.input + self.cache_read + self.cache_creation,
            output: self.output,
            cache_read: self.cache_read,
            reasoning: self.reasoning,
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Classify an in-stream error by its type: overload, rate limits, timeouts and
/// server errors are transient (the same errors are 529/429/504/500 before the stream).
fn stream_error(error: &Value) -> LlmError {
    let kind = error["type"].as_str().unwrap_or("api_error");
    let message = error["message"].as_str().unwrap_or("error in stream");
    match kind {
        "overloaded_error" | "rate_limit_error" | "api_error" | "timeout_error" => {
            transient(format!("{kind}: {message}"))
        }
        _ => LlmError::Fatal {
            reason: format!("{kind}: {message}"),
            status: None,
        },
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;

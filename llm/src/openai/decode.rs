//! Chat Completions chunks → [`StreamEvent`]s.
//!
//! Tool calls are accumulated by `index` (fragments carry `id` and name only on the
//! first piece) and yielded whole when the choice finishes. Some servers reuse
//! index 0 for parallel calls with distinct ids; a new id therefore starts a new call.

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::Value;

use crate::classify::classify_status;
use crate::sse::{Decoder, Out, transient};
use crate::{LlmError, StopReason, StreamEvent, ToolCall, Usage};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
    object: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolDelta>>,
}

#[derive(Deserialize)]
struct ToolDelta {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Default)]
struct PartialCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

/// Decoder state for one streamed completion.
#[derive(Default)]
pub(crate) struct ChunkDecoder {
    calls: Vec<PartialCall>,
    stop: Option<StopReason>,
    saw_tool_calls: bool,
    usage: Usage,
}

impl Decoder for ChunkDecoder {
    fn on_event(&mut self, event: &Event, out: &mut Out) -> bool {
        let data = event.data.trim();
        if data.starts_with("[DONE]") {
            self.finish(out);
            return true;
        }
        if data.is_empty() {
            return false;
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                let reason = format!("malformed chunk: {e}");
                out.push_back(Err(LlmError::Fatal {
                    reason,
                    status: None,
                }));
                return true;
            }
        };
        if let Some(err) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            out.push_back(Err(stream_error(err)));
            return true;
        }
        if event.event == "error" || chunk.object.as_deref() == Some("error") {
            let err: Value = serde_json::from_str(data).unwrap_or_default();
            out.push_back(Err(stream_error(&err)));
            return true;
        }
        if let Some(u) = chunk.usage {
            self.usage = usage(u);
        }
        // We ask for one choice; servers that send more are answered by the first.
        if let Some(choice) = chunk.choices.into_iter().flatten().next() {
            self.on_choice(choice, out);
        }
        false
    }

    fn on_eof(&mut self, out: &mut Out) {
        if self.stop.is_some() {
            self.finish(out);
        } else {
            out.push_back(Err(transient("stream ended before [DONE]")));
        }
    }
}

impl ChunkDecoder {
    fn on_choice(&mut self, choice: Choice, out: &mut Out) {
        let delta = choice.delta.unwrap_or_default();
        for thinking in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !thinking.is_empty() {
                out.push_back(Ok(StreamEvent::Thinking(thinking)));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push_back(Ok(StreamEvent::Text(text)));
            }
        }
        for (position, fragment) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.on_tool_fragment(fragment, position as u32);
        }
        if let Some(reason) = choice.finish_reason {
            self.stop = Some(stop_reason(&reason));
            self.flush_calls(out);
        }
    }

    fn on_tool_fragment(&mut self, fragment: ToolDelta, position: u32) {
        let index = fragment.index.unwrap_or(position);
        let id = fragment.id.filter(|id| !id.is_empty());
        let existing = self.calls.iter().rposition(|c| c.index == index);
        let call = match existing {
            Some(i)
                if id
                    .as_ref()
                    .is_none_or(|id| self.calls[i].id.is_empty() || *id == self.calls[i].id) =>
            {
                &mut self.calls[i]
            }
            _ => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.last_mut().expect("just pushed")
            }
        };
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    fn flush_calls(&mut self, out: &mut Out) {
        for (n, call) in self.calls.drain(..).enumerate() {
            self.saw_tool_calls = true;
            let args = match call.arguments.trim() {
                "" => Value::Object(Default::default()),
                raw => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())),
            };
            let id = if call.id.is_empty() {
                format!("call_{n}")
            } else {
                call.id
            };
            out.push_back(Ok(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                args,
            })));
        }
    }

    fn finish(&mut self, out: &mut Out) {
        self.flush_calls(out);
        let mut stop = self.stop.unwrap_or(StopReason::EndTurn);
        // Some servers say `stop` even though they called tools.
        if self.saw_tool_calls && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
        out.push_back(Ok(StreamEvent::Finished {
            stop,
            usage: self.usage,
        }));
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        _ => StopReason::Other,
    }
}

fn usage(u: WireUsage) -> Usage {
    let cached = u.prompt_tokens_details.and_then(|d| d.cached_tokens);
    Usage {
        input: u.prompt_tokens.unwrap_or(0),
        output: u.completion_tokens.unwrap_or(0),
        cache_read: cached.or(u.prompt_cache_hit_tokens).unwrap_or(0),
        reasoning: u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
    }
}

/// An error reported inside a 200 stream. vLLM puts the HTTP status in an integer
/// `code`; otherwise request-shaped errors are fatal and the rest (server errors,
/// overload, rate limits) transient.
fn stream_error(err: &Value) -> LlmError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error in stream");
    if let Some(status) = err
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
    {
        return classify_status(status as u16, message, None, None);
    }
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    let fatal = [
        "invalid_request",
        "authentication",
        "permission",
        "not_found",
        "BadRequest",
    ];
    if fatal.iter().any(|f| kind.contains(f)) {
        LlmError::Fatal {
            reason: format!("{kind}: {message}"),
            status: None,
        }
    } else {
        transient(format!("error in stream: {kind}: {message}"))
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;

//! The Anthropic Messages request as the mock reads it, and its error bodies
//! (`{"type":"error","error":{"type","message"},"request_id"}`, `llm-wire.md` §2.3).
//!
//! A user turn's `image` blocks become the images of its user message. Only a
//! `base64` source is taken: a `url` or `file` source would need a network or the
//! Files API, which the mock does not have, so it answers 400 instead.
//!
//! Extended thinking is checked as the API checks it ([`check_thinking`]): a budget
//! of at least 1,024 tokens below `max_tokens`, and, with thinking on, the last
//! assistant turn that called tools must open with its thinking blocks, each still
//! carrying the signature the mock gave it ([`signature`]: a hash of the text, so
//! a block changed or rebuilt from another block's text is refused too).

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use weft_llm::{ChatMessage, Image, Reasoning, ToolCall};

#[derive(Debug, Clone, Deserialize)]
pub(super) struct MessagesRequest {
    pub model: String,
    pub max_tokens: Option<u32>,
    pub messages: Vec<Value>,
    pub system: Option<Value>,
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"type": "enabled", "budget_tokens": N}` or `{"type": "disabled"}`.
    #[serde(default)]
    pub thinking: Option<Value>,
    /// The tools offered (read only for the prompt cache's prefix).
    #[serde(default)]
    pub tools: Option<Value>,
}

/// The signature the mock gives a thinking block: base64 of SHA-256 over its text.
pub fn signature(thinking: &str) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"weft-mock-thinking:")
        .chain_update(thinking.as_bytes())
        .finalize();
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Refuse what the Messages API refuses about thinking (messages in `llm-wire.md` §2).
pub(super) fn check_thinking(req: &MessagesRequest) -> Result<(), AnthropicError> {
    for (i, m) in req.messages.iter().enumerate() {
        for (j, b) in blocks(&m["content"]).enumerate() {
            let text = b["thinking"].as_str().unwrap_or_default();
            if b["type"] == "thinking" && b["signature"].as_str() != Some(&signature(text)) {
                return Err(AnthropicError::invalid(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                )));
            }
        }
    }
    let Some(thinking) = &req.thinking else {
        return Ok(());
    };
    match thinking["type"].as_str() {
        Some("disabled") => return Ok(()),
        Some("enabled") => {}
        other => {
            return Err(AnthropicError::invalid(format!(
                "thinking.type: Input should be 'enabled' or 'disabled', got {other:?}"
            )));
        }
    }
    let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
    if budget < 1024 {
        return Err(AnthropicError::invalid(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ));
    }
    if u64::from(req.max_tokens.unwrap_or(0)) <= budget {
        return Err(AnthropicError::invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ));
    }
    let Some((i, last)) = req
        .messages
        .iter()
        .enumerate()
        .rfind(|(_, m)| m["role"] == "assistant")
    else {
        return Ok(());
    };
    let calls_tools = blocks(&last["content"]).any(|b| b["type"] == "tool_use");
    let first = blocks(&last["content"])
        .next()
        .map(|b| b["type"].as_str().unwrap_or(""));
    match first {
        Some("thinking" | "redacted_thinking") => Ok(()),
        Some(found) if calls_tools => Err(AnthropicError::invalid(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
             `{found}`. When `thinking` is enabled, a final `assistant` message must start with \
             a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
        ))),
        _ => Ok(()),
    }
}

pub(super) struct AnthropicError {
    pub status: StatusCode,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl AnthropicError {
    pub fn invalid(message: impl Into<String>) -> Self {
        AnthropicError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn for_status(status: u16, retry_after: Option<Duration>) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = match error_type(status.as_u16()) {
            "overloaded_error" => "Overloaded",
            "rate_limit_error" => "Number of requests has exceeded your rate limit.",
            "api_error" => "Internal server error",
            _ => "Injected failure (@mock.fail).",
        };
        AnthropicError {
            status,
            message: message.into(),
            retry_after,
        }
    }

    pub fn body(&self) -> Value {
        json!({"type": "error", "error": {"type": error_type(self.status.as_u16()), "message": self.message},
               "request_id": "req_mock"})
    }
}

/// Anthropic's `error.type` for a status.
pub(super) fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ => "invalid_request_error",
    }
}

impl IntoResponse for AnthropicError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        headers.insert("request-id", HeaderValue::from_static("req_mock"));
        if let Some(after) = self.retry_after {
            headers.insert(
                "retry-after",
                HeaderValue::from(after.as_secs_f64().ceil() as u64),
            );
        }
        response
    }
}

/// Convert to the model-side shape: `system` first, tool results (user blocks) as
/// tool messages named after the `tool_use` they answer, then any user text.
pub(super) fn messages(req: &MessagesRequest) -> Result<Vec<ChatMessage>, AnthropicError> {
    if req.max_tokens.is_none() {
        return Err(AnthropicError::invalid("max_tokens: Field required"));
    }
    if req.messages.is_empty() {
        return Err(AnthropicError::invalid(
            "messages: at least one message is required",
        ));
    }
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = &req.system {
        out.push(ChatMessage::System {
            content: text_of(system),
        });
    }
    for (i, m) in req.messages.iter().enumerate() {
        let content = m.get("content").unwrap_or(&Value::Null);
        match m.get("role").and_then(Value::as_str) {
            Some("user") => {
                for block in blocks(content).filter(|b| b["type"] == "tool_result") {
                    let call_id = block["tool_use_id"].as_str().unwrap_or_default().to_owned();
                    let name = tool_name(&out, &call_id).unwrap_or_else(|| "tool".into());
                    out.push(ChatMessage::Tool {
                        call_id,
                        name,
                        content: text_of(&block["content"]),
                    });
                }
                let text = text_of(content);
                let images = images_of(i, content)?;
                let has_results = blocks(content).any(|b| b["type"] == "tool_result");
                if !text.is_empty() || !images.is_empty() || !has_results {
                    out.push(ChatMessage::User {
                        content: text,
                        images,
                    });
                }
            }
            Some("assistant") => {
                let tool_calls = blocks(content)
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| ToolCall {
                        id: b["id"].as_str().unwrap_or_default().into(),
                        name: b["name"].as_str().unwrap_or_default().into(),
                        args: b["input"].clone(),
                    })
                    .collect();
                let reasoning = blocks(content)
                    .filter_map(|b| serde_json::from_value::<Reasoning>(b.clone()).ok())
                    .collect();
                out.push(ChatMessage::Assistant {
                    content: text_of(content),
                    tool_calls,
                    reasoning,
                });
            }
            other => {
                return Err(AnthropicError::invalid(format!(
                    "messages.{i}.role: Input should be 'user' or 'assistant', got {other:?}"
                )));
            }
        }
    }
    Ok(out)
}

fn blocks(content: &Value) -> impl Iterator<Item = &Value> {
    content.as_array().into_iter().flatten()
}

/// The `image` blocks of message `i`, in order.
fn images_of(i: usize, content: &Value) -> Result<Vec<Image>, AnthropicError> {
    blocks(content)
        .enumerate()
        .filter(|(_, b)| b["type"] == "image")
        .map(|(j, b)| {
            let source = &b["source"];
            match (
                source["type"].as_str(),
                source["media_type"].as_str(),
                source["data"].as_str(),
            ) {
                (Some("base64"), Some(mime), Some(data)) => Ok(Image {
                    mime: mime.to_owned(),
                    data: data.into(),
                }),
                _ => Err(AnthropicError::invalid(format!(
                    "messages.{i}.content.{j}.source: the mock LLM server takes only \
                     {{\"type\": \"base64\", \"media_type\", \"data\"}} image sources"
                ))),
            }
        })
        .collect()
}

/// A string, or the text of its `text` blocks.
pub(super) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        _ => blocks(content)
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
    }
}

fn tool_name(earlier: &[ChatMessage], call_id: &str) -> Option<String> {
    earlier.iter().rev().find_map(|m| match m {
        ChatMessage::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c| c.id == call_id)
            .map(|c| c.name.clone()),
        _ => None,
    })
}

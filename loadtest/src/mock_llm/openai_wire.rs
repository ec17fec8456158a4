//! The OpenAI Chat Completions request as the mock reads it, and the error bodies
//! it answers with (all four keys, as the OpenAPI `Error` schema requires).
//!
//! A user message's `image_url` parts become its images. Only `data:…;base64,` URLs
//! are taken: the mock has no network to fetch a link with, and says so with a 400
//! rather than pretend the model saw the picture.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use weft_llm::{ChatMessage, Image, ToolCall};

#[derive(Debug, Deserialize)]
pub(super) struct CompletionRequest {
    pub model: String,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub max_tokens: Option<u32>,
    pub max_completion_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(super) struct StreamOptions {
    pub include_usage: Option<bool>,
}

impl CompletionRequest {
    pub fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
    }

    pub fn max_tokens(&self) -> Option<u32> {
        self.max_completion_tokens.or(self.max_tokens)
    }
}

/// An OpenAI-shaped error response.
pub(super) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>, param: Option<&'static str>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            param,
            code: None,
            retry_after: None,
        }
    }

    /// The error a real server would send for `status`.
    pub fn for_status(status: u16, retry_after: Option<Duration>) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (message, code) = match status.as_u16() {
            401 => (
                "Incorrect API key provided: sk-***.",
                Some("invalid_api_key"),
            ),
            404 => (
                "The model does not exist or you do not have access to it.",
                Some("model_not_found"),
            ),
            429 => (
                "Rate limit reached for requests",
                Some("rate_limit_exceeded"),
            ),
            s if s >= 500 => (
                "The server had an error while processing your request.",
                None,
            ),
            _ => ("Injected failure (@mock.fail).", None),
        };
        ApiError {
            status,
            message: message.into(),
            param: None,
            code,
            retry_after,
        }
    }

    pub fn body(&self) -> Value {
        let kind = match self.status.as_u16() {
            403 => "permission_error",
            408 => "timeout",
            409 => "conflict",
            429 => "requests",
            s if s >= 500 => "server_error",
            _ => "invalid_request_error",
        };
        json!({"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        headers.insert("x-request-id", HeaderValue::from_static("req_mock"));
        if let Some(after) = self.retry_after {
            let ms = HeaderValue::from(after.as_millis() as u64);
            headers.insert("retry-after-ms", ms);
            headers.insert(
                "retry-after",
                HeaderValue::from(after.as_secs_f64().ceil() as u64),
            );
        }
        response
    }
}

/// Convert wire messages to the model-side shape the mock script reads. A tool
/// message's name is found from the assistant call it answers.
pub(super) fn messages(wire: &[Value]) -> Result<Vec<ChatMessage>, ApiError> {
    if wire.is_empty() {
        let mut err = ApiError::bad_request("Invalid 'messages': empty array.", Some("messages"));
        err.code = Some("empty_array");
        return Err(err);
    }
    let mut out: Vec<ChatMessage> = Vec::with_capacity(wire.len());
    for (i, m) in wire.iter().enumerate() {
        let content = text_of(m.get("content"));
        let message = match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => ChatMessage::System { content },
            Some("user") => ChatMessage::User {
                content,
                images: images_of(i, m.get("content"))?,
            },
            Some("assistant") => ChatMessage::Assistant {
                reasoning: Vec::new(),
                content,
                tool_calls: tool_calls(m),
            },
            Some("tool") => {
                let call_id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let name = tool_name(&out, call_id).unwrap_or_else(|| "tool".to_owned());
                ChatMessage::Tool {
                    call_id: call_id.to_owned(),
                    name,
                    content,
                }
            }
            other => {
                let problem = format!(
                    "Invalid value: {other:?}. Supported values are: 'system', 'user', 'assistant', 'tool' and 'developer'."
                );
                return Err(ApiError::bad_request(
                    format!("Invalid 'messages[{i}].role': {problem}"),
                    None,
                ));
            }
        };
        out.push(message);
    }
    Ok(out)
}

/// `content` as a string, or the concatenated `text` parts, or empty.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The `image_url` parts of message `i`'s content, in order.
fn images_of(i: usize, content: Option<&Value>) -> Result<Vec<Image>, ApiError> {
    let Some(Value::Array(parts)) = content else {
        return Ok(Vec::new());
    };
    let images = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.get("type").and_then(Value::as_str) == Some("image_url"));
    images
        .map(|(j, part)| {
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or_default();
            data_url(url).ok_or_else(|| {
                ApiError::bad_request(
                    format!(
                        "Invalid 'messages[{i}].content[{j}].image_url.url': the mock LLM server \
                         takes only base64 data URLs (data:<mime>;base64,<data>)."
                    ),
                    Some("messages"),
                )
            })
        })
        .collect()
}

/// `data:<mime>[;param…];base64,<data>` → the image it carries.
fn data_url(url: &str) -> Option<Image> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let header = header.strip_suffix(";base64")?;
    let mime = header.split(';').next().unwrap_or_default();
    Some(Image {
        mime: mime.to_owned(),
        data: data.into(),
    })
}

fn tool_calls(m: &Value) -> Vec<ToolCall> {
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    calls
        .iter()
        .map(|c| {
            let raw = c
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            ToolCall {
                id: c
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                name: c
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                args: serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())),
            }
        })
        .collect()
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

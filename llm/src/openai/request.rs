//! Building the Chat Completions request body from a [`ChatRequest`].
//!
//! A user message with images becomes an array of content parts, its text first and
//! then one `image_url` part per image carrying a `data:` URL (we never hand the
//! provider a link to fetch); without images it stays a plain string, which every
//! OpenAI-compatible server reads.

use serde_json::{Value, json};

use super::OpenAiConfig;
use crate::{ChatMessage, ChatRequest, Image, ToolCall};

pub(super) fn body(req: &ChatRequest, config: &OpenAiConfig) -> Value {
    let model = if req.model.is_empty() {
        &config.model_name
    } else {
        &req.model
    };
    let mut body = json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": req.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
    }
    if let Some(max) = req.max_tokens {
        // OpenAI's newer models refuse `max_tokens`; most compatible servers
        // (Ollama, older vLLM) only read it.
        let key = if is_openai(&config.base_url) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[key] = json!(max);
    }
    body
}

fn is_openai(base_url: &str) -> bool {
    base_url.contains("://api.openai.com")
}

fn message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content, images } if images.is_empty() => {
            json!({"role": "user", "content": content})
        }
        ChatMessage::User { content, images } => {
            let text = (!content.is_empty()).then(|| json!({"type": "text", "text": content}));
            let parts: Vec<Value> = text
                .into_iter()
                .chain(images.iter().map(image_part))
                .collect();
            json!({"role": "user", "content": parts})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => json!({
            "role": "assistant",
            "content": if content.is_empty() { Value::Null } else { json!(content) },
            "tool_calls": tool_calls.iter().map(tool_call).collect::<Vec<_>>(),
        }),
        ChatMessage::Tool {
            call_id, content, ..
        } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

fn image_part(image: &Image) -> Value {
    let url = format!("data:{};base64,{}", image.mime, image.data);
    json!({"type": "image_url", "image_url": {"url": url}})
}

fn tool_call(call: &ToolCall) -> Value {
    // Arguments travel as a JSON string; an unparsable string we kept goes back verbatim.
    let arguments = match &call.args {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;
    use std::time::Duration;

    fn config(base: &str) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base.into(),
            api_key: None,
            model_name: "default-model".into(),
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn full_request_shape() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "f".into(),
            args: json!({"a": 1}),
        };
        let req = ChatRequest {
            thinking_budget: None,
            model: String::new(),
            messages: vec![
                ChatMessage::System {
                    content: "sys".into(),
                },
                ChatMessage::User {
                    content: "hi".into(),
                    images: Vec::new(),
                },
                ChatMessage::Assistant {
                    reasoning: Vec::new(),
                    content: String::new(),
                    tool_calls: vec![call],
                },
                ChatMessage::Tool {
                    call_id: "call_1".into(),
                    name: "f".into(),
                    content: "ok".into(),
                },
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({}),
            }]
            .into(),
            max_tokens: Some(50),
            attempt: 1,
        };
        let body = body(&req, &config("http://localhost:11434/v1"));
        assert_eq!(body["model"], "default-model");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 50);
        assert_eq!(
            body["messages"][1]["content"], "hi",
            "no images: a plain string"
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"a":1}"#
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "call_1");
        assert_eq!(body["tools"][0]["function"]["name"], "f");
        let body = super::body(&req, &config("https://api.openai.com/v1"));
        assert_eq!(body["max_completion_tokens"], 50);
        assert!(body.get("max_tokens").is_none());
    }

    fn image(mime: &str, data: &str) -> Image {
        Image {
            mime: mime.into(),
            data: data.into(),
        }
    }

    fn one_user(content: &str, images: Vec<Image>) -> ChatRequest {
        ChatRequest {
            model: "gpt-4o".into(),
            messages: vec![ChatMessage::User {
                content: content.into(),
                images,
            }]
            .into(),
            tools: vec![].into(),
            max_tokens: None,
            thinking_budget: None,
            attempt: 1,
        }
    }

    #[test]
    fn images_become_data_url_parts_after_the_text() {
        let req = one_user(
            "what is this?",
            vec![
                image("image/png", "iVBORw0KGgo="),
                image("image/jpeg", "/9j/4AA="),
            ],
        );
        let body = body(&req, &config("https://api.openai.com/v1"));
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AA="}},
            ]})
        );
    }

    #[test]
    fn an_image_without_text_sends_no_empty_text_part() {
        let req = one_user("", vec![image("image/webp", "UklGRg==")]);
        let body = body(&req, &config("https://api.openai.com/v1"));
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}}])
        );
    }
}

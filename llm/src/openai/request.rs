//! Building the Chat Completions request body from a [`ChatRequest`].

use serde_json::{Value, json};

use super::OpenAiConfig;
use crate::{ChatMessage, ChatRequest, ToolCall};

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
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
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
            model: String::new(),
            messages: vec![
                ChatMessage::System {
                    content: "sys".into(),
                },
                ChatMessage::User {
                    content: "hi".into(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![call],
                },
                ChatMessage::Tool {
                    call_id: "call_1".into(),
                    name: "f".into(),
                    content: "ok".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({}),
            }],
            max_tokens: Some(50),
            attempt: 1,
        };
        let body = body(&req, &config("http://localhost:11434/v1"));
        assert_eq!(body["model"], "default-model");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 50);
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
}

//! Building the Messages request body: system prompt hoisted to the top level,
//! tool results as `tool_result` blocks, consecutive same-role turns merged (the
//! API wants user and assistant turns to alternate).
//!
//! A user message's images are `image` blocks with a base64 source placed before its
//! text, as Anthropic recommends. Merging keeps each message's blocks together and in
//! order, so in a merged turn every image still sits just before the text it came
//! with, and `tool_result` blocks (which must open a turn) stay first: a user message
//! only ever follows tool results, never precedes them within one turn.
//!
//! With extended thinking on (`ChatRequest::thinking_budget`), the assistant turns
//! after the last user message — the tool loop of the turn being answered — and the
//! last assistant turn open with their signed reasoning blocks, unchanged, as the
//! API requires ("a final `assistant` message must start with a thinking block").
//! Earlier turns' blocks are left out: the API strips them anyway, so sending them
//! would only cost bytes.
//! `max_tokens` must exceed the budget; unset, it is the budget plus
//! [`DEFAULT_MAX_TOKENS`] for the answer.
//!
//! Prompt caching puts two of the four `cache_control` breakpoints the API allows:
//! on the system prompt (the cache's prefix order is tools, system, messages, so
//! this one holds the tools and instructions, which change least) and on the last
//! block of the last message. The next step of the run, or the next turn, sends
//! that same prefix and more; the API looks back from its own last breakpoint
//! for the longest prefix it has cached, so it reads everything up to the previous
//! request's end from the cache (at a tenth of the input price) and writes only
//! what is new. Prompts under the model's minimum (1,024 tokens for most) are not
//! cached, and nothing is refused for it.

use serde_json::{Value, json};

use super::DEFAULT_MAX_TOKENS;
use crate::{ChatMessage, ChatRequest, Image};

pub(super) fn body(req: &ChatRequest, default_model: &str, cache: bool) -> Value {
    let model = if req.model.is_empty() {
        default_model
    } else {
        &req.model
    };
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter_map(|m| {
            if let ChatMessage::System { content } = m {
                Some(content.as_str())
            } else {
                None
            }
        })
        .collect();
    let max_tokens = match (req.max_tokens, req.thinking_budget) {
        (Some(max), _) => max,
        (None, Some(budget)) => budget + DEFAULT_MAX_TOKENS,
        (None, None) => DEFAULT_MAX_TOKENS,
    };
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "stream": true,
        "messages": turns(&req.messages, req.thinking_budget.is_some()),
    });
    if let Some(budget) = req.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    if !system.is_empty() {
        let text = system.join("\n\n");
        body["system"] = match cache {
            true => json!([{"type": "text", "text": text, "cache_control": ephemeral()}]),
            false => json!(text),
        };
    }
    if cache
        && let Some(last) = body["messages"]
            .as_array_mut()
            .and_then(|turns| turns.last_mut())
            .and_then(|turn| turn["content"].as_array_mut())
            .and_then(|blocks| blocks.last_mut())
    {
        last["cache_control"] = ephemeral();
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

/// A cache breakpoint of the default lifetime (five minutes, renewed by each read).
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn turns(messages: &[ChatMessage], thinking: bool) -> Vec<Value> {
    // Reasoning goes back only with thinking on: for the turn being answered (the
    // assistant messages after the last user message), and for the last assistant
    // message in any case (its tool results may share a turn with new user text).
    let last_user = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }));
    let last_assistant = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::Assistant { .. }));
    let sends_reasoning =
        |i: usize| thinking && (Some(i) == last_assistant || last_user.is_none_or(|u| i > u));
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let (role, blocks) = match m {
            ChatMessage::System { .. } => continue,
            ChatMessage::User { content, images } => {
                // The API refuses an empty text block; an image may stand alone.
                let text = (!content.is_empty() || images.is_empty())
                    .then(|| json!({"type": "text", "text": content}));
                let blocks = images.iter().map(image_block).chain(text).collect();
                ("user", blocks)
            }
            ChatMessage::Tool {
                call_id, content, ..
            } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content})],
            ),
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
            } => {
                let reasoning = reasoning
                    .iter()
                    .filter(|r| sends_reasoning(i) && r.is_signed())
                    .map(|r| json!(r));
                let text = (!content.is_empty()).then(|| json!({"type": "text", "text": content}));
                let calls = tool_calls.iter().map(|c| {
                    let input = if c.args.is_object() {
                        c.args.clone()
                    } else {
                        json!({})
                    };
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
                });
                let blocks = reasoning.chain(text).chain(calls).collect();
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn image_block(image: &Image) -> Value {
    json!({"type": "image", "source": {
        "type": "base64", "media_type": image.mime, "data": &*image.data,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reasoning, ToolCall, ToolSpec};

    #[test]
    fn system_hoisted_and_tool_results_are_user_blocks() {
        let call = ToolCall {
            id: "toolu_1".into(),
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
                    content: "checking".into(),
                    tool_calls: vec![call],
                },
                ChatMessage::Tool {
                    call_id: "toolu_1".into(),
                    name: "f".into(),
                    content: "ok".into(),
                },
                ChatMessage::User {
                    content: "and?".into(),
                    images: Vec::new(),
                },
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            max_tokens: None,
            attempt: 1,
        };
        let body = body(&req, "claude-x", false);
        assert_eq!(body["model"], "claude-x");
        assert_eq!(body["system"], "sys");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            3,
            "tool result and next user text share a turn"
        );
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[1]["content"][1]["input"], json!({"a": 1}));
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
        assert_eq!(messages[2]["content"][1]["text"], "and?");
    }

    fn image(mime: &str, data: &str) -> Image {
        Image {
            mime: mime.into(),
            data: data.into(),
        }
    }

    fn image_json(mime: &str, data: &str) -> Value {
        json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
    }

    #[test]
    fn images_come_before_the_text_and_stay_with_it_when_turns_merge() {
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "shot".into(),
            args: json!({}),
        };
        let req = ChatRequest {
            thinking_budget: None,
            model: String::new(),
            messages: vec![
                ChatMessage::User {
                    content: "compare".into(),
                    images: vec![
                        image("image/png", "iVBORw0KGgo="),
                        image("image/gif", "R0lGOD=="),
                    ],
                },
                ChatMessage::User {
                    content: "and this one".into(),
                    images: vec![image("image/jpeg", "/9j/4AA=")],
                },
                ChatMessage::Assistant {
                    reasoning: Vec::new(),
                    content: String::new(),
                    tool_calls: vec![call],
                },
                ChatMessage::Tool {
                    call_id: "toolu_1".into(),
                    name: "shot".into(),
                    content: "taken".into(),
                },
                ChatMessage::User {
                    content: String::new(),
                    images: vec![image("image/webp", "UklGRg==")],
                },
            ]
            .into(),
            tools: vec![].into(),
            max_tokens: None,
            attempt: 1,
        };
        let body = body(&req, "claude-x", false);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[0],
            json!({"role": "user", "content": [
                image_json("image/png", "iVBORw0KGgo="),
                image_json("image/gif", "R0lGOD=="),
                {"type": "text", "text": "compare"},
                image_json("image/jpeg", "/9j/4AA="),
                {"type": "text", "text": "and this one"},
            ]})
        );
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "taken"},
                image_json("image/webp", "UklGRg=="),
            ]),
            "tool results first; an image without text sends no empty text block"
        );
    }

    #[test]
    fn with_thinking_the_turn_being_answered_opens_with_its_signed_blocks() {
        let signed = |text: &str| Reasoning::Thinking {
            thinking: text.into(),
            signature: format!("sig-{text}"),
        };
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "f".into(),
            args: json!({}),
        };
        let assistant = |reasoning: Vec<Reasoning>, id: &str| ChatMessage::Assistant {
            content: String::new(),
            tool_calls: vec![call(id)],
            reasoning,
        };
        let result = |id: &str| ChatMessage::Tool {
            call_id: id.into(),
            name: "f".into(),
            content: "ok".into(),
        };
        let user = |text: &str| ChatMessage::User {
            content: text.into(),
            images: Vec::new(),
        };
        let unsigned = Reasoning::Thinking {
            thinking: "from another provider".into(),
            signature: String::new(),
        };
        let redacted = Reasoning::RedactedThinking {
            data: "RW5j".into(),
        };
        let mut req = ChatRequest {
            model: String::new(),
            messages: vec![
                user("first"),
                assistant(vec![signed("old")], "toolu_1"),
                result("toolu_1"),
                user("second"),
                assistant(vec![signed("a"), redacted.clone(), unsigned], "toolu_2"),
                result("toolu_2"),
                assistant(vec![signed("b")], "toolu_3"),
                result("toolu_3"),
            ]
            .into(),
            tools: vec![].into(),
            max_tokens: None,
            thinking_budget: Some(2048),
            attempt: 1,
        };
        let sent = body(&req, "claude-x", false);
        assert_eq!(
            sent["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(sent["max_tokens"], 2048 + DEFAULT_MAX_TOKENS);
        let kinds = |turn: &Value| -> Vec<String> {
            turn["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["type"].as_str().unwrap().to_owned())
                .collect()
        };
        let turns = sent["messages"].as_array().unwrap();
        assert_eq!(
            kinds(&turns[1]),
            ["tool_use"],
            "an earlier turn's are left out"
        );
        assert_eq!(
            kinds(&turns[3]),
            ["thinking", "redacted_thinking", "tool_use"],
            "the unsigned block is not sent"
        );
        assert_eq!(
            turns[3]["content"][0],
            json!({"type": "thinking", "thinking": "a", "signature": "sig-a"})
        );
        assert_eq!(
            turns[3]["content"][1],
            json!({"type": "redacted_thinking", "data": "RW5j"})
        );
        assert_eq!(kinds(&turns[5]), ["thinking", "tool_use"]);

        // New text after the last results: the last assistant turn still opens with its blocks.
        std::sync::Arc::make_mut(&mut req.messages).push(user("and then?"));
        let sent = body(&req, "claude-x", false);
        let turns = sent["messages"].as_array().unwrap();
        assert_eq!(
            kinds(&turns[3]),
            ["tool_use"],
            "no longer the turn being answered"
        );
        assert_eq!(
            kinds(&turns[5]),
            ["thinking", "tool_use"],
            "the last assistant turn"
        );

        req.thinking_budget = None;
        let sent = body(&req, "claude-x", false);
        assert!(sent.get("thinking").is_none());
        assert_eq!(
            kinds(&sent["messages"][3]),
            ["tool_use"],
            "thinking off: no blocks"
        );
    }

    #[test]
    fn the_cache_marks_the_system_prompt_and_the_newest_block() {
        let req = ChatRequest {
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
                    content: "hello".into(),
                    tool_calls: Vec::new(),
                    reasoning: Vec::new(),
                },
                ChatMessage::User {
                    content: "more".into(),
                    images: vec![Image {
                        mime: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    }],
                },
            ]
            .into(),
            tools: vec![].into(),
            max_tokens: None,
            thinking_budget: None,
            attempt: 1,
        };
        let sent = body(&req, "claude-x", true);
        assert_eq!(
            sent["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        let marked: Vec<(usize, usize)> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .flat_map(|(i, turn)| {
                let blocks = turn["content"].as_array().unwrap();
                blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.get("cache_control").is_some())
                    .map(move |(j, _)| (i, j))
            })
            .collect();
        assert_eq!(
            marked,
            [(2, 1)],
            "the last block of the last turn, its text"
        );
        let plain = body(&req, "claude-x", false);
        assert_eq!(plain["system"], "sys");
        assert!(!plain.to_string().contains("cache_control"));
    }
}

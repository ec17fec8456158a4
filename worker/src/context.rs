//! Builds the model's context from the database: a system prompt for the mode,
//! then the session's recent messages (the hot window), mapped to the provider
//! neutral `weft_llm::ChatMessage`.

use weft_llm::{ChatMessage, ToolCall};
use weft_shared::mode::RunMode;
use weft_shared::store::Message;

pub fn system_prompt(mode: RunMode) -> String {
    let base = "You are Weft, a helpful assistant. Answer in the language the user writes in.";
    match mode {
        RunMode::Chat => format!("{base} Tools are disabled in this conversation."),
        RunMode::Agent => format!("{base} Use the tools you are given when they help."),
    }
}

pub fn to_chat_messages(mode: RunMode, history: &[Message]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(history.len() + 1);
    out.push(ChatMessage::System {
        content: system_prompt(mode),
    });
    for m in history {
        out.push(match m.role.as_str() {
            "user" => ChatMessage::User {
                content: m.content.clone(),
            },
            "tool" => ChatMessage::Tool {
                call_id: m.call_id.clone(),
                name: m.name.clone().unwrap_or_default(),
                content: m.content.clone(),
            },
            _ => ChatMessage::Assistant {
                content: m.content.clone(),
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        args: c.args.clone(),
                    })
                    .collect(),
            },
        });
    }
    out
}

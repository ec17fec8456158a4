//! Builds the model's context from the database: the system prompt of the run's
//! agent, then the session's messages (fitted to the window by [`window`]), mapped
//! to the provider-neutral `weft_llm::ChatMessage`.

pub mod files;
pub mod history;
pub mod prompt;
pub(crate) mod truncate;
pub mod window;

use weft_config::AgentConfig;
use weft_llm::{ChatMessage, ToolCall};
use weft_store::{ClaimedRun, Message, Store};

/// The session's agent (the default one when it names none that exists) and
/// the system prompt for this run: see `weft_shared::prompt`. What it is made
/// of comes from `inputs`, read again only when it changed ([`prompt`]).
pub async fn system_for(
    inputs: &prompt::PromptInputs,
    store: &Store,
    run: &ClaimedRun,
    skills_dir: &std::path::Path,
) -> weft_store::Result<(AgentConfig, String, bool)> {
    let agent = inputs.agent(store, run).await?;
    let mine = inputs.instructions(store, run).await;
    let today = weft_shared::time::rfc3339(weft_shared::time::now_ms());
    let skills = inputs.skills(store, run, skills_dir).await?;
    let lines = weft_shared::prompt::skill_lines(&skills, &agent);
    let prompt = weft_shared::prompt::system_prompt(&agent, &mine, &lines, &today[..10]);
    Ok((agent, prompt, !lines.is_empty()))
}

/// Puts `background` (a Lark group's recent messages) before the newest
/// user turn, for this run only: nothing is stored.
pub fn before_the_question(messages: &mut [ChatMessage], background: &str) {
    if let Some(ChatMessage::User { content, .. }) = messages
        .iter_mut()
        .rev()
        .find(|m| matches!(m, ChatMessage::User { .. }))
    {
        *content = format!("{background}\n\n{content}");
    }
}

/// The model's view of `history`, with the attachments `files` loaded for it.
pub fn to_chat_messages(
    system: String,
    history: &[std::sync::Arc<Message>],
    files: &files::Files,
) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(history.len() + 1);
    out.push(ChatMessage::System { content: system });
    for m in history {
        out.push(match m.role.as_str() {
            "user" => {
                let (content, images) = files::user_content(m, files);
                ChatMessage::User { content, images }
            }
            "tool" => ChatMessage::Tool {
                call_id: m.call_id.clone(),
                name: m.name.clone().unwrap_or_default(),
                content: m.content.clone(),
            },
            _ => ChatMessage::Assistant {
                reasoning: m.reasoning.clone(),
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

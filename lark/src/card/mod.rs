//! Card JSON 2.0 documents for what the bot shows.
//!
//! JSON 2.0 treats unknown properties as errors, so every builder emits only the
//! documented fields: `schema`, `config` (`update_multi`, `streaming_mode`,
//! `streaming_config`, `summary`), `header{title,template}`, and `body.elements`
//! of `markdown`, `hr`, `collapsible_panel` and `column_set`/`column` holding
//! `button`s. Element ids follow Lark's rule (a letter, then `[A-Za-z0-9_]`, ≤ 20
//! chars, unique in the card) so CardKit can stream into them. Every word comes
//! from [`crate::text`], in the card's [`crate::text::Lang`].

pub mod approval;
mod click;
pub mod markdown;
pub mod plan;
pub mod question;
mod reply;
pub mod todo;

use serde_json::{Value, json};

pub use approval::{ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalClick};
pub use click::ClickContext;
pub use markdown::MarkdownLimits;
pub use plan::{PlanAnswer, PlanCard, PlanChoice, PlanClick};
pub use question::{QuestionAnswer, QuestionCard, QuestionClick};
pub use reply::{
    AgentProgress, Reasoning, ReplyCard, Source, ToolApproval, ToolProgress, ToolStatus,
    body_change,
};
pub use todo::TodoCard;

/// Element id of the streamed reply text.
pub const BODY_ELEMENT_ID: &str = "reply_body";

/// The phase of a reply, shown by the header colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardState {
    Thinking,
    Streaming,
    AwaitingApproval,
    /// Waiting for the person to answer a question the agent asked.
    AwaitingAnswer,
    /// Waiting for the person to decide the agent's plan (plan mode).
    AwaitingDecision,
    Done,
    Failed,
    Cancelled,
}

impl CardState {
    /// A `header.template` colour.
    pub fn template(self) -> &'static str {
        match self {
            Self::Thinking | Self::Streaming => "blue",
            Self::AwaitingApproval | Self::AwaitingAnswer | Self::AwaitingDecision => "orange",
            Self::Done => "green",
            Self::Failed => "red",
            Self::Cancelled => "grey",
        }
    }
}

fn header(title: &str, template: &str) -> Value {
    json!({"title": {"tag": "plain_text", "content": title}, "template": template})
}

fn markdown(element_id: &str, content: &str) -> Value {
    json!({"tag": "markdown", "element_id": element_id, "content": content})
}

/// A small-print markdown element.
fn notation(element_id: &str, content: &str) -> Value {
    json!({"tag": "markdown", "element_id": element_id, "content": content, "text_size": "notation"})
}

/// A folded (or open) panel: a plain-text title always shown, `elements` on
/// demand.
fn panel(element_id: &str, expanded: bool, title: &str, elements: Vec<Value>) -> Value {
    json!({
        "tag": "collapsible_panel",
        "element_id": element_id,
        "expanded": expanded,
        "header": {"title": {"tag": "plain_text", "content": title}},
        "border": {"color": "grey"},
        "elements": elements,
    })
}

/// How a streaming card types its text out: a few characters every few
/// milliseconds, and on each update whatever is still untyped at once
/// (`fast`), so the animation never falls behind the model.
fn streaming_config() -> Value {
    json!({
        "print_frequency_ms": {"default": 30},
        "print_step": {"default": 2},
        "print_strategy": "fast",
    })
}

fn card(
    title: &str,
    template: &str,
    streaming: bool,
    summary: &str,
    elements: Vec<Value>,
) -> Value {
    let mut config =
        json!({"update_multi": true, "streaming_mode": streaming, "summary": {"content": summary}});
    if streaming {
        config["streaming_config"] = streaming_config();
    }
    json!({
        "schema": "2.0",
        "config": config,
        "header": header(title, template),
        "body": {"elements": elements},
    })
}

/// A one-off card: a coloured header over one markdown block (command answers,
/// notices). The markdown is sanitised like a reply.
pub fn notice_card(title: &str, state: CardState, text: &str) -> Value {
    let text = markdown::sanitize(text, MarkdownLimits::default().max_tables);
    card(
        title,
        state.template(),
        false,
        title,
        vec![markdown("notice_text", &text)],
    )
}

/// A card reporting a failure.
pub fn error_card(title: &str, message: &str) -> Value {
    card(
        title,
        CardState::Failed.template(),
        false,
        title,
        vec![markdown("error_text", message)],
    )
}

/// A one-line preview of `text` for a card's `summary` (chat lists).
fn summary_of(text: &str, fallback: &str) -> String {
    const SUMMARY_CHARS: usize = 50;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return fallback.to_owned();
    }
    let mut out: String = flat.chars().take(SUMMARY_CHARS).collect();
    if flat.chars().count() > SUMMARY_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(summary_of("hello\n\nworld", "Weft"), "hello world");
        assert_eq!(summary_of("  ", "Weft"), "Weft");
        assert_eq!(summary_of(&"字".repeat(60), "Weft").chars().count(), 51);
    }
}

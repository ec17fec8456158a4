//! Card JSON 2.0 documents for what the bot shows.
//!
//! JSON 2.0 treats unknown properties as errors, so every builder emits only the
//! documented fields: `schema`, `config`, `header{title,template}`, and
//! `body.elements` of `markdown`, `hr`, and `column_set`/`column` holding
//! `button`s. Element ids follow Lark's rule (a letter, then `[A-Za-z0-9_]`, ≤ 20
//! chars) so CardKit can stream into them.

pub mod approval;
pub mod markdown;

use serde_json::{Value, json};

pub use approval::{ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalClick};
pub use markdown::MarkdownLimits;

/// Element id of the streamed reply text.
pub const BODY_ELEMENT_ID: &str = "reply_body";

/// The phase of a reply, shown by the header colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardState {
    Thinking,
    Streaming,
    AwaitingApproval,
    Done,
    Failed,
    Cancelled,
}

impl CardState {
    /// A `header.template` colour.
    pub fn template(self) -> &'static str {
        match self {
            Self::Thinking | Self::Streaming => "blue",
            Self::AwaitingApproval => "orange",
            Self::Done => "green",
            Self::Failed => "red",
            Self::Cancelled => "grey",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// Held until a person approves it.
    AwaitingApproval,
    Running,
    Succeeded,
    Failed,
}

/// One line of the tool-progress section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolProgress {
    pub name: String,
    pub status: ToolStatus,
    /// A short, already-redacted summary (arguments or result).
    pub detail: String,
}

/// The streaming reply card of one run.
#[derive(Debug, Clone)]
pub struct ReplyCard {
    pub title: String,
    pub state: CardState,
    pub body: String,
    pub tools: Vec<ToolProgress>,
    /// e.g. "12.3 s · 1,234 tokens".
    pub footer: Option<String>,
}

fn header(title: &str, template: &str) -> Value {
    json!({"title": {"tag": "plain_text", "content": title}, "template": template})
}

fn markdown(element_id: &str, content: &str) -> Value {
    json!({"tag": "markdown", "element_id": element_id, "content": content})
}

fn card(
    title: &str,
    template: &str,
    streaming: bool,
    summary: &str,
    elements: Vec<Value>,
) -> Value {
    json!({
        "schema": "2.0",
        "config": {"update_multi": true, "streaming_mode": streaming, "summary": {"content": summary}},
        "header": header(title, template),
        "body": {"elements": elements},
    })
}

/// The tool-progress section: one markdown line per tool call.
pub fn tool_progress(tools: &[ToolProgress]) -> Option<Value> {
    if tools.is_empty() {
        return None;
    }
    let lines: Vec<String> = tools
        .iter()
        .map(|t| {
            let icon = match t.status {
                ToolStatus::AwaitingApproval => "⏸",
                ToolStatus::Running => "⏳",
                ToolStatus::Succeeded => "✅",
                ToolStatus::Failed => "❌",
            };
            let detail = t.detail.replace('\n', " ");
            if detail.is_empty() {
                format!("{icon} `{}`", t.name)
            } else {
                format!("{icon} `{}` {detail}", t.name)
            }
        })
        .collect();
    Some(markdown("tools", &lines.join("\n")))
}

impl ReplyCard {
    /// Renders the card, splitting a long body into continuation cards; the first
    /// card carries the tools, the last one the footer. Streaming mode is on only
    /// while the reply is in progress.
    pub fn render(&self, limits: MarkdownLimits) -> Vec<Value> {
        let streaming = matches!(self.state, CardState::Thinking | CardState::Streaming);
        let body = if self.body.is_empty() && self.state == CardState::Thinking {
            "…"
        } else {
            &self.body
        };
        let pieces = markdown::split(body, limits.max_element_bytes);
        let count = pieces.len();
        pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut elements = Vec::new();
                if i == 0 {
                    elements.extend(tool_progress(&self.tools));
                }
                elements.push(markdown(BODY_ELEMENT_ID, &markdown::sanitize(piece, limits.max_tables)));
                if i + 1 == count
                    && let Some(footer) = &self.footer {
                        elements.push(json!({"tag": "hr"}));
                        elements.push(json!({"tag": "markdown", "element_id": "footer", "content": footer, "text_size": "notation"}));
                    }
                let title = if i == 0 { self.title.clone() } else { format!("{} (continued {}/{count})", self.title, i + 1) };
                let summary = if streaming { "[Generating...]" } else { &self.title };
                card(&title, self.state.template(), streaming && i + 1 == count, summary, elements)
            })
            .collect()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_card_shape() {
        let card = ReplyCard {
            title: "Weft".into(),
            state: CardState::Done,
            body: "hello".into(),
            tools: vec![ToolProgress {
                name: "shell".into(),
                status: ToolStatus::Succeeded,
                detail: "ls".into(),
            }],
            footer: Some("1.0 s".into()),
        };
        let pages = card.render(MarkdownLimits::default());
        assert_eq!(pages.len(), 1);
        let page = &pages[0];
        assert_eq!(page["schema"], "2.0");
        assert_eq!(page["header"]["template"], "green");
        assert_eq!(page["config"]["streaming_mode"], false);
        let elements = page["body"]["elements"].as_array().unwrap();
        assert_eq!(elements[0]["element_id"], "tools");
        assert_eq!(elements[1]["element_id"], BODY_ELEMENT_ID);
        assert_eq!(elements.last().unwrap()["content"], "1.0 s");
    }

    #[test]
    fn long_reply_becomes_continuation_cards() {
        let card = ReplyCard {
            title: "Weft".into(),
            state: CardState::Streaming,
            body: "line of text\n".repeat(100),
            tools: vec![],
            footer: None,
        };
        let pages = card.render(MarkdownLimits {
            max_tables: 3,
            max_element_bytes: 500,
        });
        assert!(pages.len() >= 3);
        assert_eq!(
            pages[1]["header"]["title"]["content"],
            format!("Weft (continued 2/{})", pages.len())
        );
        assert_eq!(pages[0]["config"]["streaming_mode"], false);
        assert_eq!(pages.last().unwrap()["config"]["streaming_mode"], true);
    }
}

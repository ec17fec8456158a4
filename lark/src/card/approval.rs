//! The card that asks a person to approve a tool call, and the same card once
//! answered.
//!
//! Open, it shows the tool, its arguments and three callback buttons — Approve,
//! Deny, Always — whose `card.action.trigger` carries `action.value` =
//! `{"approval_id", "decision", …context}`: the caller's `context` (where the
//! approval lives) rides along so the handler can find it without a lookup
//! table. Answered, it shows who decided and has no buttons; that version is what
//! a callback's response puts in place of the clicked card, and it stays a small
//! card of its own, so it never competes with a streaming reply card for Lark's
//! per-message patch budget. Its words are in the chat's language
//! ([`ApprovalCard::render_in`]).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::markdown::{self, MarkdownLimits};
use super::{CardState, card, markdown as markdown_element};
use crate::text::say::{self, Verdict};
use crate::text::{Lang, Text};

/// Characters of the arguments shown, at most (the card stays far below 30 KB).
const ARGS_SHOWN: usize = 2_000;

/// Which button was clicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalChoice {
    Approve,
    Deny,
    /// Approve, and stop asking about this tool in this conversation.
    Always,
}

impl ApprovalChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
            Self::Always => "always",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Self::Approve),
            "deny" => Some(Self::Deny),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// Where the request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Waiting for a click; unanswered after `expires_in` it counts as denied.
    Open {
        expires_in: Duration,
    },
    Approved {
        by: String,
        always: bool,
    },
    Denied {
        by: String,
    },
    /// Nobody answered in time.
    Expired,
    /// The conversation moved on (the reply ended) before anyone answered.
    Closed,
}

/// A tool call waiting for (or given) a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalCard {
    pub approval_id: String,
    pub tool: String,
    pub args: Value,
    /// Echoed in every button's callback value next to `approval_id` and
    /// `decision` (those two keys win over the same keys here).
    pub context: Map<String, Value>,
    pub answer: ApprovalAnswer,
}

/// A click on an approval button, read back from the callback's `action.value`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalClick {
    pub approval_id: String,
    pub choice: ApprovalChoice,
    /// The card's `context`.
    pub context: Map<String, Value>,
}

impl ApprovalClick {
    /// `None` when `value` is not one of our approval buttons.
    pub fn parse(value: &Value) -> Option<Self> {
        let mut context = value.as_object()?.clone();
        let approval_id = match context.remove("approval_id")? {
            Value::String(id) if !id.is_empty() => id,
            _ => return None,
        };
        let choice = ApprovalChoice::parse(context.remove("decision")?.as_str()?)?;
        Some(Self {
            approval_id,
            choice,
            context,
        })
    }
}

impl ApprovalCard {
    /// The card in English (see [`Self::render_in`]).
    pub fn render(&self) -> Value {
        self.render_in(Lang::En)
    }

    /// The card in `lang`.
    pub fn render_in(&self, lang: Lang) -> Value {
        let (title, state) = match &self.answer {
            ApprovalAnswer::Open { .. } => (
                say::approve_title(lang, &self.tool),
                CardState::AwaitingApproval,
            ),
            ApprovalAnswer::Approved { .. } => (
                say::answered_title(lang, &self.tool, Some(Verdict::Approved)),
                CardState::Done,
            ),
            ApprovalAnswer::Denied { .. } => (
                say::answered_title(lang, &self.tool, Some(Verdict::Denied)),
                CardState::Failed,
            ),
            ApprovalAnswer::Expired | ApprovalAnswer::Closed => (
                say::answered_title(lang, &self.tool, None),
                CardState::Cancelled,
            ),
        };
        let mut elements = vec![
            markdown_element("approval_call", &self.describe_call(lang)),
            markdown_element("approval_answer", &self.answer_line(lang)),
        ];
        if matches!(self.answer, ApprovalAnswer::Open { .. }) {
            elements.push(self.buttons(lang));
        }
        card(&title, state.template(), false, &title, elements)
    }

    fn describe_call(&self, lang: Lang) -> String {
        let args = match &self.args {
            Value::Null => String::new(),
            Value::Object(map) if map.is_empty() => String::new(),
            args => serde_json::to_string_pretty(args).unwrap_or_default(),
        };
        let text = if args.is_empty() {
            say::wants_to_run(lang, &self.tool)
        } else {
            let mut shown: String = args.chars().take(ARGS_SHOWN).collect();
            if args.chars().count() > ARGS_SHOWN {
                shown.push('…');
            }
            format!(
                "{}\n```json\n{}\n```",
                say::wants_to_run_with(lang, &self.tool),
                shown.replace("```", "'''")
            )
        };
        markdown::sanitize(&text, MarkdownLimits::default().max_tables)
    }

    fn answer_line(&self, lang: Lang) -> String {
        let line = match &self.answer {
            ApprovalAnswer::Open { expires_in } => {
                say::approval_open(lang, &self.tool, *expires_in)
            }
            ApprovalAnswer::Approved { by, always } => say::approval_approved(lang, by, *always),
            ApprovalAnswer::Denied { by } => say::approval_denied(lang, by),
            ApprovalAnswer::Expired => lang.text(Text::ApprovalExpired).to_owned(),
            ApprovalAnswer::Closed => lang.text(Text::ApprovalClosed).to_owned(),
        };
        markdown::neutralize_mentions(&line)
    }

    fn buttons(&self, lang: Lang) -> Value {
        let button = |choice: ApprovalChoice, label: Text, kind: &str| {
            let mut value = self.context.clone();
            value.insert("approval_id".into(), json!(self.approval_id));
            value.insert("decision".into(), json!(choice.as_str()));
            json!({
                "tag": "column",
                "width": "auto",
                "elements": [{
                    "tag": "button",
                    "element_id": choice.as_str(),
                    "text": {"tag": "plain_text", "content": lang.text(label)},
                    "type": kind,
                    "behaviors": [{"type": "callback", "value": value}],
                }],
            })
        };
        json!({
            "tag": "column_set",
            "flex_mode": "none",
            "horizontal_spacing": "small",
            "columns": [
                button(ApprovalChoice::Approve, Text::ApproveButton, "primary_filled"),
                button(ApprovalChoice::Deny, Text::DenyButton, "danger"),
                button(ApprovalChoice::Always, Text::AlwaysButton, "default"),
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(answer: ApprovalAnswer) -> ApprovalCard {
        let mut context = Map::new();
        context.insert("run_id".into(), json!("r1"));
        ApprovalCard {
            approval_id: "ap_1".into(),
            tool: "current_time".into(),
            args: json!({"tz": "UTC"}),
            context,
            answer,
        }
    }

    fn buttons(card: &Value) -> Vec<Value> {
        card["body"]["elements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tag"] == "column_set")
            .flat_map(|set| set["columns"].as_array().unwrap().clone())
            .flat_map(|col| col["elements"].as_array().unwrap().clone())
            .collect()
    }

    #[test]
    fn an_open_request_has_three_buttons_whose_clicks_read_back() {
        let card = request(ApprovalAnswer::Open {
            expires_in: Duration::from_secs(1800),
        })
        .render();
        assert_eq!(card["header"]["template"], "orange");
        let text = card["body"]["elements"][0]["content"].as_str().unwrap();
        assert!(
            text.contains("current_time") && text.contains("\"tz\": \"UTC\""),
            "{text}"
        );
        let note = card["body"]["elements"][1]["content"].as_str().unwrap();
        assert!(note.contains("30 min"), "{note}");
        let buttons = buttons(&card);
        let choices: Vec<ApprovalChoice> = buttons
            .iter()
            .map(|b| {
                let click = ApprovalClick::parse(&b["behaviors"][0]["value"]).unwrap();
                assert_eq!(click.approval_id, "ap_1");
                assert_eq!(click.context["run_id"], "r1");
                click.choice
            })
            .collect();
        assert_eq!(
            choices,
            [
                ApprovalChoice::Approve,
                ApprovalChoice::Deny,
                ApprovalChoice::Always
            ]
        );
    }

    #[test]
    fn an_answered_request_says_who_and_has_no_buttons() {
        let card = request(ApprovalAnswer::Denied { by: "alice".into() }).render();
        assert!(buttons(&card).is_empty());
        assert_eq!(card["header"]["template"], "red");
        assert_eq!(card["body"]["elements"][1]["content"], "❌ denied by alice");
        let always = request(ApprovalAnswer::Approved {
            by: "<at id=all></at>".into(),
            always: true,
        })
        .render();
        let line = always["body"]["elements"][1]["content"].as_str().unwrap();
        assert!(line.starts_with("✅ approved by &lt;at"), "{line}");
    }

    #[test]
    fn a_chinese_chat_gets_a_chinese_card() {
        let open = request(ApprovalAnswer::Open {
            expires_in: Duration::from_secs(1800),
        })
        .render_in(Lang::Zh);
        assert_eq!(
            open["header"]["title"]["content"],
            "允许运行 current_time？"
        );
        let labels: Vec<String> = buttons(&open)
            .iter()
            .map(|b| b["text"]["content"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(labels, ["批准", "拒绝", "总是允许"]);
        let note = open["body"]["elements"][1]["content"].as_str().unwrap();
        assert!(note.contains("30 分钟"), "{note}");
        let approved = request(ApprovalAnswer::Approved {
            by: "alice".into(),
            always: false,
        })
        .render_in(Lang::Zh);
        assert!(buttons(&approved).is_empty());
        assert_eq!(
            approved["body"]["elements"][1]["content"],
            "✅ alice 已批准"
        );
        let expired = request(ApprovalAnswer::Expired).render_in(Lang::Zh);
        assert_eq!(expired["header"]["template"], "grey");
        assert_eq!(
            expired["body"]["elements"][1]["content"],
            "⌛ 已过期：无人及时回应"
        );
    }

    #[test]
    fn other_values_are_not_clicks() {
        assert_eq!(ApprovalClick::parse(&json!({"action": "ok"})), None);
        assert_eq!(
            ApprovalClick::parse(&json!({"approval_id": "a", "decision": "maybe"})),
            None
        );
        assert_eq!(ApprovalClick::parse(&json!("approve")), None);
    }
}

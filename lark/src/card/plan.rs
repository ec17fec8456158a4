//! The card that asks the person to decide the agent's plan (plan mode,
//! `propose_plan`), and the same card once decided.
//!
//! Open, it shows the plan (the agent's Markdown, cut to stay far below Lark's
//! 30 KB, with a note that the whole plan is in the reply and on the web page),
//! two callback buttons — Approve, Reject — whose `card.action.trigger`
//! carries `action.value` = `{"plan_id", "decision", …context}`, and a hint
//! that a reply in the chat asks for changes (the gateway takes that reply as
//! a revise, its text the comment). Decided, it says who decided what and has
//! no buttons; like the approval and question cards it is a small card of its
//! own, redrawn in a click's answer and rewritten by the worker however else
//! it ends. Its words are in the chat's language ([`PlanCard::render_in`]).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::markdown::{self, MarkdownLimits};
use super::{CardState, card, markdown as markdown_element, notation};
use crate::text::say;
use crate::text::{Lang, Text};

/// Bytes of the plan shown, at most: with the buttons and the hint the card
/// stays far below 30 KB (a Chinese plan takes three bytes a character).
const PLAN_SHOWN_BYTES: usize = 12_000;
/// Characters of a decision's comment shown once decided.
const COMMENT_SHOWN: usize = 1_000;

/// Which button was clicked (a revise is a reply in the chat, not a button).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanChoice {
    Approve,
    Reject,
}

impl PlanChoice {
    /// As `POST /v1/plans/{id}` spells the decision.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Self::Approve),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// Where the plan stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanAnswer {
    /// Waiting for a decision; undecided after `expires_in` the plan expires
    /// and the reply ends.
    Open { expires_in: Duration },
    /// Carried out from here on.
    Approved { by: String, comment: Option<String> },
    /// The reply ended with the plan, nothing carried out.
    Rejected { by: String, comment: Option<String> },
    /// Changes asked for: a new plan (a card of its own) follows.
    Revised { by: String, comment: String },
    /// Nobody decided in time.
    Expired,
    /// The reply ended (stopped, failed) before anyone decided.
    Closed,
}

/// A plan waiting for (or given) the person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCard {
    pub plan_id: String,
    /// The plan, as the agent wrote it (Markdown).
    pub markdown: String,
    /// Echoed in every button's callback value next to `plan_id` and
    /// `decision` (those two keys win over the same keys here).
    pub context: Map<String, Value>,
    pub answer: PlanAnswer,
}

/// A click on a plan's button, read back from the callback's `action.value`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanClick {
    pub plan_id: String,
    pub choice: PlanChoice,
    /// The card's `context`.
    pub context: Map<String, Value>,
}

impl PlanClick {
    /// `None` when `value` is not one of our plan buttons.
    pub fn parse(value: &Value) -> Option<Self> {
        let mut context = value.as_object()?.clone();
        let plan_id = match context.remove("plan_id")? {
            Value::String(id) if !id.is_empty() => id,
            _ => return None,
        };
        let choice = PlanChoice::parse(context.remove("decision")?.as_str()?)?;
        Some(Self {
            plan_id,
            choice,
            context,
        })
    }
}

impl PlanCard {
    /// The card in English (see [`Self::render_in`]).
    pub fn render(&self) -> Value {
        self.render_in(Lang::En)
    }

    /// The card in `lang`.
    pub fn render_in(&self, lang: Lang) -> Value {
        let (title, state) = match &self.answer {
            PlanAnswer::Open { .. } => (Text::PlanTitle, CardState::AwaitingDecision),
            PlanAnswer::Approved { .. } => (Text::PlanApprovedTitle, CardState::Done),
            PlanAnswer::Rejected { .. } => (Text::PlanRejectedTitle, CardState::Failed),
            // Superseded by the plan that follows.
            PlanAnswer::Revised { .. } => (Text::PlanRevisedTitle, CardState::Cancelled),
            PlanAnswer::Expired | PlanAnswer::Closed => {
                (Text::PlanUndecidedTitle, CardState::Cancelled)
            }
        };
        let title = lang.text(title);
        let mut elements = vec![markdown_element("plan_text", &self.describe(lang))];
        let open = matches!(self.answer, PlanAnswer::Open { .. });
        if open {
            elements.push(self.buttons(lang));
        }
        elements.push(match &self.answer {
            PlanAnswer::Open { .. } => notation("plan_answer", &self.answer_line(lang)),
            _ => markdown_element("plan_answer", &self.answer_line(lang)),
        });
        let summary = super::summary_of(&self.markdown, title);
        card(title, state.template(), false, &summary, elements)
    }

    /// The plan, sanitised, and cut (fences closed) when too long for the card.
    fn describe(&self, lang: Lang) -> String {
        let plan = markdown::sanitize(self.markdown.trim(), MarkdownLimits::default().max_tables);
        let mut pieces = markdown::split(&plan, PLAN_SHOWN_BYTES).into_iter();
        let mut shown = pieces.next().unwrap_or_default();
        if pieces.next().is_some() {
            shown = format!("{}\n\n{}", shown.trim_end(), lang.text(Text::PlanCut));
        }
        shown
    }

    fn answer_line(&self, lang: Lang) -> String {
        let comment = |c: &str| one_line(&head(c, COMMENT_SHOWN));
        let line = match &self.answer {
            PlanAnswer::Open { expires_in } => say::plan_hint(lang, *expires_in),
            PlanAnswer::Approved { by, comment: c } => {
                say::plan_approved(lang, by, c.as_deref().map(comment).as_deref())
            }
            PlanAnswer::Rejected { by, comment: c } => {
                say::plan_rejected(lang, by, c.as_deref().map(comment).as_deref())
            }
            PlanAnswer::Revised { by, comment: c } => say::plan_revised(lang, by, &comment(c)),
            PlanAnswer::Expired => lang.text(Text::PlanExpired).to_owned(),
            PlanAnswer::Closed => lang.text(Text::ApprovalClosed).to_owned(),
        };
        markdown::neutralize_mentions(&line)
    }

    fn buttons(&self, lang: Lang) -> Value {
        let button = |choice: PlanChoice, label: Text, kind: &str| {
            let mut value = self.context.clone();
            value.insert("plan_id".into(), json!(self.plan_id));
            value.insert("decision".into(), json!(choice.as_str()));
            json!({
                "tag": "column",
                "width": "auto",
                "elements": [{
                    "tag": "button",
                    "element_id": format!("plan_{}", choice.as_str()),
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
                button(PlanChoice::Approve, Text::ApproveButton, "primary_filled"),
                button(PlanChoice::Reject, Text::RejectButton, "danger"),
            ],
        })
    }
}

/// `text` on one line (a comment under the plan).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `n` characters of `text`, with `…` when cut.
fn head(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;

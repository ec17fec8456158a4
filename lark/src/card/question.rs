//! The card that asks the person a question for the agent (`ask_user`), and the
//! same card once answered.
//!
//! Open, it shows the question, its options numbered, and how to answer. A
//! question with one answer among options gets one callback button per option,
//! whose `card.action.trigger` carries `action.value` = `{"question_id",
//! "answer", …context}` (the option's text itself: the click needs no lookup to
//! know what it chose, and the store checks it against the options anyway).
//! Lark cards have no toggle buttons that add up to one answer, so a question
//! that takes several options, or a typed answer only, has no buttons: its card
//! says to reply in the chat (`1,3`, or the answer itself), which the gateway
//! reads as the answer. Answered, it says who answered what and has no buttons;
//! like the approval card it is a small card of its own, redrawn in a click's
//! answer and rewritten by the worker however else it ends. Its words are in
//! the chat's language ([`QuestionCard::render_in`]).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::markdown::{self, MarkdownLimits};
use super::{CardState, card, markdown as markdown_element, notation};
use crate::text::say::{self, Answering};
use crate::text::{Lang, Text};

/// Characters of the question shown, at most (the card stays far below 30 KB).
const QUESTION_SHOWN: usize = 4_000;
/// Characters of an option shown on its button and in the list.
const OPTION_SHOWN: usize = 200;
/// Characters of an answer shown once answered.
const ANSWER_SHOWN: usize = 1_000;

/// Where the question stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionAnswer {
    /// Waiting for an answer; unanswered after `expires_in` the reply goes on
    /// without one.
    Open { expires_in: Duration },
    /// The chosen options, or the typed answer.
    Answered { by: String, answer: Vec<String> },
    /// Nobody answered in time.
    Expired,
    /// The reply ended (stopped, failed) before anyone answered.
    Closed,
}

/// A question waiting for (or given) the person's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionCard {
    pub question_id: String,
    pub question: String,
    /// Choices offered; empty for a typed answer.
    pub options: Vec<String>,
    /// Several options may be chosen.
    pub multiple: bool,
    /// A typed answer is taken besides the options.
    pub allow_text: bool,
    /// Echoed in every button's callback value next to `question_id` and
    /// `answer` (those two keys win over the same keys here).
    pub context: Map<String, Value>,
    pub answer: QuestionAnswer,
}

/// A click on an option's button, read back from the callback's `action.value`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionClick {
    pub question_id: String,
    /// The option's text.
    pub answer: String,
    /// The card's `context`.
    pub context: Map<String, Value>,
}

impl QuestionClick {
    /// `None` when `value` is not one of our question buttons.
    pub fn parse(value: &Value) -> Option<Self> {
        let mut context = value.as_object()?.clone();
        let question_id = match context.remove("question_id")? {
            Value::String(id) if !id.is_empty() => id,
            _ => return None,
        };
        let answer = match context.remove("answer")? {
            Value::String(answer) => answer,
            _ => return None,
        };
        Some(Self {
            question_id,
            answer,
            context,
        })
    }
}

impl QuestionCard {
    /// The card in English (see [`Self::render_in`]).
    pub fn render(&self) -> Value {
        self.render_in(Lang::En)
    }

    /// The card in `lang`.
    pub fn render_in(&self, lang: Lang) -> Value {
        let (title, state) = match &self.answer {
            QuestionAnswer::Open { .. } => (Text::QuestionTitle, CardState::AwaitingAnswer),
            QuestionAnswer::Answered { .. } => (Text::AnsweredTitle, CardState::Done),
            QuestionAnswer::Expired | QuestionAnswer::Closed => {
                (Text::UnansweredTitle, CardState::Cancelled)
            }
        };
        let title = lang.text(title);
        let mut elements = vec![markdown_element("question_text", &self.describe())];
        let open = matches!(self.answer, QuestionAnswer::Open { .. });
        if open && self.has_buttons() {
            elements.push(self.buttons());
        }
        elements.push(match &self.answer {
            QuestionAnswer::Open { .. } => notation("question_answer", &self.answer_line(lang)),
            _ => markdown_element("question_answer", &self.answer_line(lang)),
        });
        let summary = super::summary_of(&self.question, title);
        card(title, state.template(), false, &summary, elements)
    }

    /// One button per option: a question that takes one of them.
    fn has_buttons(&self) -> bool {
        !self.options.is_empty() && !self.multiple
    }

    /// The question and its options, numbered.
    fn describe(&self) -> String {
        let mut text = head(self.question.trim(), QUESTION_SHOWN);
        if !self.options.is_empty() {
            text.push('\n');
        }
        for (i, option) in self.options.iter().enumerate() {
            text.push_str(&format!(
                "\n{}. {}",
                i + 1,
                one_line(&head(option, OPTION_SHOWN))
            ));
        }
        markdown::neutralize_mentions(&markdown::sanitize(
            &text,
            MarkdownLimits::default().max_tables,
        ))
    }

    fn answer_line(&self, lang: Lang) -> String {
        let line = match &self.answer {
            QuestionAnswer::Open { expires_in } => {
                let how = match (self.options.is_empty(), self.multiple) {
                    (true, _) => Answering::Type,
                    (false, false) => Answering::Pick {
                        text: self.allow_text,
                    },
                    (false, true) => Answering::PickSeveral {
                        text: self.allow_text,
                    },
                };
                say::question_hint(lang, how, self.options.len(), *expires_in)
            }
            QuestionAnswer::Answered { by, answer } => {
                let shown: Vec<String> = answer
                    .iter()
                    .map(|a| one_line(&head(a, ANSWER_SHOWN)))
                    .collect();
                say::question_answered(lang, by, &shown)
            }
            QuestionAnswer::Expired => lang.text(Text::QuestionExpired).to_owned(),
            QuestionAnswer::Closed => lang.text(Text::ApprovalClosed).to_owned(),
        };
        markdown::neutralize_mentions(&line)
    }

    fn buttons(&self) -> Value {
        let columns: Vec<Value> = self
            .options
            .iter()
            .enumerate()
            .map(|(i, option)| {
                let mut value = self.context.clone();
                value.insert("question_id".into(), json!(self.question_id));
                value.insert("answer".into(), json!(option));
                json!({
                    "tag": "column",
                    "width": "auto",
                    "elements": [{
                        "tag": "button",
                        "element_id": format!("option_{i}"),
                        "text": {"tag": "plain_text", "content": one_line(&head(option, OPTION_SHOWN))},
                        "type": if i == 0 { "primary_filled" } else { "default" },
                        "behaviors": [{"type": "callback", "value": value}],
                    }],
                })
            })
            .collect();
        // `flow`: the buttons wrap onto more lines when they do not fit one.
        json!({
            "tag": "column_set",
            "flex_mode": "flow",
            "horizontal_spacing": "small",
            "columns": columns,
        })
    }
}

/// `text` on one line (a list item, a button).
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

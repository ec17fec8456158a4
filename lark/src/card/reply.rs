//! The streaming reply card of one run: from the top, the model's reasoning (a
//! panel, open while it thinks, folded once the answer starts), one folded
//! panel per tool call (its title says how it went; inside, the pretty-printed
//! arguments and a preview of the result), the answer, a "still working… 3 min"
//! line while the reply has said nothing for minutes (a slow tool: the chat
//! must not take it for hung), and a footer with the reply's numbers.
//!
//! A card must stay under Lark's 30 KB, so what the extras may take is capped:
//! the reasoning shows its last 200 characters, a call its first 2,000
//! characters of arguments and 500 of result, and all calls' details together
//! 6 KB (the newest first; older calls keep their title line, and past 20
//! panels they are counted on one line). The answer beyond one card continues
//! in follow-up cards.

use serde_json::{Value, json};

use super::markdown::{self, MarkdownLimits};
use super::{BODY_ELEMENT_ID, CardState, card, markdown as markdown_element, notation, panel};
use crate::text::say::{self, Footer, Verdict};
use crate::text::{Lang, Text};

/// Characters of reasoning shown, at most (the tail: what the model thinks now).
const REASONING_SHOWN: usize = 200;
/// Characters of a call's pretty-printed arguments shown, at most.
const ARGS_SHOWN: usize = 2_000;
/// Characters of a call's result shown, at most.
const RESULT_SHOWN: usize = 500;
/// Bytes of markdown all calls' details may take together.
const TOOL_DETAILS_BYTES: usize = 6_000;
/// Calls shown as panels, at most; older ones are counted.
const TOOL_PANELS: usize = 20;

/// The model's reasoning so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Reasoning {
    /// What it reasoned (the card shows the last 200 characters).
    pub text: String,
    /// It is thinking now (nothing of the answer or a call since): the panel is open.
    pub thinking: bool,
    /// How long it thought, in all.
    pub ms: u64,
    pub tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// Held until a person approves it.
    AwaitingApproval,
    Running,
    Succeeded,
    Failed,
}

/// Where a call's approval stands, when it needed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolApproval {
    Waiting,
    Decided {
        verdict: Verdict,
        by: Option<String>,
    },
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    pub name: String,
    pub status: ToolStatus,
    pub args: Value,
    /// A preview of what it returned, once it ended.
    pub result: Option<String>,
    pub duration_ms: Option<u64>,
    pub approval: Option<ToolApproval>,
}

/// The streaming reply card of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyCard {
    pub title: String,
    pub state: CardState,
    pub lang: Lang,
    /// The answer so far.
    pub body: String,
    /// Why it failed (shown in the `Failed` state).
    pub error: Option<String>,
    pub reasoning: Option<Reasoning>,
    pub tools: Vec<ToolProgress>,
    pub footer: Option<Footer>,
    /// The documents the answer cites as `[n]` (knowledge bases), shown under
    /// it on the last card.
    pub sources: Vec<Source>,
    /// The question, when it was asked outside Lark (typed into this
    /// conversation in the web UI or the terminal): quoted at the top, so the
    /// chat sees what the answer answers.
    pub asked_elsewhere: Option<String>,
    /// The tasks this reply handed to other agents (`delegate`), one line
    /// each with where it stands, under the calls.
    pub agents: Vec<AgentProgress>,
    /// While the reply has said nothing for minutes: how long it has been
    /// going (ms), a line under the answer. A line of its own, not part of the
    /// answer's element, so the answer's text keeps streaming as typing.
    pub still_working: Option<u64>,
}

/// A task handed to another agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProgress {
    pub agent: String,
    pub task: String,
    pub status: weft_wire::states::DelegationStatus,
}

impl ReplyCard {
    /// An empty card in `state`.
    pub fn new(title: impl Into<String>, state: CardState, lang: Lang) -> Self {
        ReplyCard {
            title: title.into(),
            state,
            lang,
            body: String::new(),
            error: None,
            reasoning: None,
            tools: Vec::new(),
            footer: None,
            sources: Vec::new(),
            asked_elsewhere: None,
            agents: Vec::new(),
            still_working: None,
        }
    }

    /// Renders the card, splitting a long answer into continuation cards; the
    /// first card carries the reasoning and the calls, the last one the footer.
    /// Streaming mode is on (in the last card) only while the reply goes on.
    pub fn render(&self, limits: MarkdownLimits) -> Vec<Value> {
        let lang = self.lang;
        let streaming = matches!(self.state, CardState::Thinking | CardState::Streaming);
        let text = self.text();
        let pieces = markdown::split(&text, limits.max_element_bytes);
        let count = pieces.len();
        let summary = if streaming {
            lang.text(Text::Generating).to_owned()
        } else {
            super::summary_of(&self.body, &self.title)
        };
        pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut elements = Vec::new();
                if i == 0 {
                    elements.extend(self.asked_elsewhere.as_deref().map(|q| {
                        let q = markdown::neutralize_mentions(&q.replace('\n', " "));
                        notation("asked_elsewhere", &say::asked_elsewhere(lang, q.trim()))
                    }));
                    elements.extend(self.reasoning.as_ref().map(|r| reasoning_panel(r, lang)));
                    elements.extend(tool_elements(&self.tools, lang));
                    if !self.agents.is_empty() {
                        elements.push(notation("agents", &agents_text(&self.agents, lang)));
                    }
                }
                let piece = markdown::sanitize(piece, limits.max_tables);
                elements.push(markdown_element(BODY_ELEMENT_ID, &piece));
                if i + 1 == count
                    && let Some(ms) = self.still_working
                {
                    elements.push(notation("still_working", &say::still_working(lang, ms)));
                }
                if i + 1 == count && !self.sources.is_empty() {
                    elements.push(notation("sources", &sources_text(&self.sources, lang)));
                }
                if i + 1 == count
                    && let Some(footer) = &self.footer
                {
                    elements.push(json!({"tag": "hr"}));
                    elements.push(notation("footer", &say::footer(lang, footer)));
                }
                let title = if i == 0 {
                    self.title.clone()
                } else {
                    say::continued(lang, &self.title, i + 1, count)
                };
                let template = self.state.template();
                card(
                    &title,
                    template,
                    streaming && i + 1 == count,
                    &summary,
                    elements,
                )
            })
            .collect()
    }

    /// The answer, and what the reply's state says after it.
    fn text(&self) -> String {
        let lang = self.lang;
        let mut text = self.body.trim_end().to_owned();
        let note = match self.state {
            CardState::AwaitingApproval => {
                Some(format!("_⏸ {}_", lang.text(Text::WaitingForApproval)))
            }
            CardState::AwaitingAnswer => Some(format!("_⏸ {}_", lang.text(Text::WaitingForAnswer))),
            CardState::AwaitingDecision => {
                Some(format!("_⏸ {}_", lang.text(Text::WaitingForDecision)))
            }
            CardState::Failed => {
                let message = self
                    .error
                    .as_deref()
                    .unwrap_or(lang.text(Text::ReplyFailed));
                Some(format!("**❌ {message}**"))
            }
            CardState::Cancelled => Some(format!("_{}_", lang.text(Text::Stopped))),
            CardState::Thinking | CardState::Streaming | CardState::Done => None,
        };
        if let Some(note) = note {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&note);
        }
        if text.is_empty() && self.state == CardState::Thinking {
            text.push('…');
        }
        text
    }
}

/// One document an answer cites.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The answer's `[n]`.
    pub n: u32,
    pub document: String,
    /// "page 7", or the heading path.
    pub position: String,
}

/// `**Sources**` and one line per cited document: `[1] handbook.pdf — page 7`.
fn sources_text(sources: &[Source], lang: Lang) -> String {
    let mut text = format!("**{}**", lang.text(Text::Sources));
    for s in sources {
        let document = markdown::neutralize_mentions(&s.document.replace('\n', " "));
        text.push_str(&format!("\n[{}] {document}", s.n));
        if !s.position.is_empty() {
            text.push_str(&format!(" — {}", s.position.replace('\n', " ")));
        }
    }
    text
}

/// One line per task handed to another agent: the agent, where it stands,
/// the task's first line (shortened).
fn agents_text(agents: &[AgentProgress], lang: Lang) -> String {
    agents
        .iter()
        .map(|a| {
            let line = a.task.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let mut task: String = line.trim().chars().take(60).collect();
            if line.trim().chars().count() > 60 {
                task.push('…');
            }
            let task = markdown::neutralize_mentions(&task).replace('*', "∗");
            say::delegation(
                lang,
                &markdown::neutralize_mentions(&a.agent),
                &task,
                a.status,
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The reasoning panel: open with the latest thoughts while the model thinks.
fn reasoning_panel(r: &Reasoning, lang: Lang) -> Value {
    let title = say::reasoning_title(lang, r.thinking, r.ms, r.tokens);
    let preview = tail(r.text.trim(), REASONING_SHOWN);
    let preview = markdown::neutralize_mentions(&preview.replace("```", "'''"));
    panel(
        "reasoning",
        r.thinking,
        &title,
        vec![notation("reasoning_text", &preview)],
    )
}

/// The calls: the newest as folded panels with details (while the budget
/// lasts), older ones as title lines, the oldest counted.
fn tool_elements(tools: &[ToolProgress], lang: Lang) -> Vec<Value> {
    let mut budget = TOOL_DETAILS_BYTES;
    let mut panels = Vec::new();
    let mut lines = Vec::new();
    let shown = tools.len().saturating_sub(TOOL_PANELS);
    for (i, tool) in tools.iter().enumerate().skip(shown).rev() {
        let details = tool.details(lang);
        if details.len() <= budget {
            budget -= details.len();
            let body = vec![notation(&format!("tool_{i}_d"), &details)];
            panels.push(panel(&format!("tool_{i}"), false, &tool.title(lang), body));
        } else {
            lines.push(tool.title(lang));
        }
    }
    panels.reverse();
    lines.reverse();
    if shown > 0 {
        lines.insert(0, say::earlier_calls(lang, shown));
    }
    let mut out = Vec::new();
    if !lines.is_empty() {
        out.push(notation("tools_more", &lines.join("\n")));
    }
    out.extend(panels);
    out
}

impl ToolProgress {
    /// `✅ current_time · approved by alice · 12 ms`.
    fn title(&self, lang: Lang) -> String {
        let icon = match self.status {
            ToolStatus::AwaitingApproval => "⏸",
            ToolStatus::Running => "⏳",
            ToolStatus::Succeeded => "✅",
            ToolStatus::Failed => "❌",
        };
        let mut parts = vec![format!("{icon} {}", self.name)];
        match &self.approval {
            Some(ToolApproval::Waiting) => {
                parts.push(lang.text(Text::WaitingForApproval).to_owned())
            }
            Some(ToolApproval::Decided { verdict, by }) => {
                parts.push(say::decided_by(lang, *verdict, by.as_deref()))
            }
            None => {}
        }
        match self.duration_ms {
            Some(ms) => parts.push(say::duration(lang, ms)),
            None if self.status == ToolStatus::Running => {
                parts.push(lang.text(Text::Running).to_owned())
            }
            None => {}
        }
        // Plain text, one line; model-made names must not mention anyone.
        markdown::neutralize_mentions(&parts.join(" · ").replace('\n', " "))
    }

    /// The pretty-printed arguments and the result preview, as markdown.
    fn details(&self, lang: Lang) -> String {
        let args = match &self.args {
            Value::Null => String::new(),
            Value::Object(map) if map.is_empty() => String::new(),
            args => serde_json::to_string_pretty(args).unwrap_or_default(),
        };
        let mut out = if args.is_empty() {
            format!("_{}_", lang.text(Text::NoArguments))
        } else {
            format!(
                "**{}**\n```json\n{}\n```",
                lang.text(Text::Arguments),
                fenced(&head(&args, ARGS_SHOWN))
            )
        };
        if let Some(result) = self.result.as_deref().filter(|r| !r.trim().is_empty()) {
            out.push_str(&format!(
                "\n**{}**\n```text\n{}\n```",
                lang.text(Text::Result),
                fenced(&head(result.trim_end(), RESULT_SHOWN))
            ));
        }
        markdown::neutralize_mentions(&out)
    }
}

/// Text that goes inside a code fence: it must not close the fence.
fn fenced(text: &str) -> String {
    text.replace("```", "'''")
}

/// The first `n` characters of `text`, with `…` when cut.
fn head(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// The last `n` characters of `text`, with `…` when cut.
fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_owned();
    }
    let mut out = String::from("…");
    out.extend(text.chars().skip(count - n));
    out
}

/// When `new` differs from `old` only in the answer's text: that text, which
/// CardKit can stream into the card (typing out the tail) instead of replacing
/// the whole card.
pub fn body_change(old: &Value, new: &Value) -> Option<String> {
    fn take_body(doc: &mut Value) -> Option<Value> {
        doc["body"]["elements"]
            .as_array_mut()?
            .iter_mut()
            .find(|e| e["element_id"] == BODY_ELEMENT_ID)?
            .get_mut("content")
            .map(Value::take)
    }
    let (mut old, mut new) = (old.clone(), new.clone());
    let before = take_body(&mut old)?;
    let after = take_body(&mut new)?;
    (old == new && before != after).then(|| after.as_str().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests;

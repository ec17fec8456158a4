//! A run's reply as a Lark card, folded from the run's events — the same
//! protocol, and the same attempt rules, as every other client: `run_started
//! {resume_step}` drops what earlier attempts showed for steps ≥ `resume_step`,
//! `retrying {step}` drops that step's text so far. Pure, so a card rebuilt from
//! the whole log by a new worker after a crash is the card the old one showed.

use std::collections::BTreeMap;

use weft_lark::card::{CardState, ReplyCard, ToolProgress, ToolStatus};
use weft_shared::api::UsageDto;
use weft_shared::event::{EventKind, RunEvent};

pub const CARD_TITLE: &str = "Weft";
/// Arguments shown on a tool line, at most.
const ARGS_PREVIEW: usize = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Thinking,
    Streaming,
    Done,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq)]
struct ToolLine {
    step: u32,
    call_id: String,
    name: String,
    args: String,
    /// `None` while running; then whether it succeeded and how long it took.
    ended: Option<(bool, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplyView {
    pub phase: Phase,
    text: BTreeMap<u32, String>,
    tools: Vec<ToolLine>,
    footer: Option<String>,
    error: Option<String>,
}

impl Default for ReplyView {
    fn default() -> Self {
        ReplyView {
            phase: Phase::Thinking,
            text: BTreeMap::new(),
            tools: Vec::new(),
            footer: None,
            error: None,
        }
    }
}

impl ReplyView {
    pub fn apply(&mut self, event: &RunEvent) {
        match &event.kind {
            EventKind::RunStarted { resume_step, .. } => {
                self.text.retain(|step, _| step < resume_step);
                self.tools.retain(|t| t.step < *resume_step);
            }
            EventKind::Text { step, delta } => {
                self.text.entry(*step).or_default().push_str(delta);
                self.phase = Phase::Streaming;
            }
            EventKind::Retrying { step, .. } => {
                self.text.remove(step);
            }
            EventKind::ToolStart {
                step,
                call_id,
                name,
                args,
            } => self.tools.push(ToolLine {
                step: *step,
                call_id: call_id.clone(),
                name: name.clone(),
                args: short(&args.to_string()),
                ended: None,
            }),
            EventKind::ToolEnd {
                call_id,
                ok,
                duration_ms,
                ..
            } => {
                if let Some(line) = self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                    line.ended = Some((*ok, *duration_ms));
                }
            }
            EventKind::Done {
                model,
                usage,
                ttft_ms,
                duration_ms,
                ..
            } => {
                self.phase = Phase::Done;
                self.footer = Some(footer(model, usage, *ttft_ms, *duration_ms));
            }
            EventKind::Error(e) => {
                self.phase = Phase::Failed;
                self.error = Some(e.message.clone());
            }
            EventKind::Cancelled { .. } => self.phase = Phase::Cancelled,
            EventKind::Thinking { .. }
            | EventKind::ApprovalRequired { .. }
            | EventKind::ApprovalDecided { .. }
            | EventKind::Usage(_)
            | EventKind::Heartbeat { .. } => {}
        }
    }

    /// Whether the reply has ended (the card shows its last state).
    pub fn is_final(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed | Phase::Cancelled)
    }

    /// The reply's text so far, all steps in order.
    pub fn body(&self) -> String {
        self.text
            .values()
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim_end())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    pub fn card(&self) -> ReplyCard {
        let mut body = self.body();
        let state = match self.phase {
            Phase::Thinking => CardState::Thinking,
            Phase::Streaming => CardState::Streaming,
            Phase::Done => CardState::Done,
            Phase::Failed => {
                let message = self.error.as_deref().unwrap_or("the run failed");
                push_paragraph(&mut body, &format!("**❌ {message}**"));
                CardState::Failed
            }
            Phase::Cancelled => {
                push_paragraph(&mut body, "_🛑 stopped_");
                CardState::Cancelled
            }
        };
        ReplyCard {
            title: CARD_TITLE.into(),
            state,
            body,
            tools: self.tools.iter().map(ToolLine::progress).collect(),
            footer: self.footer.clone(),
        }
    }
}

impl ToolLine {
    fn progress(&self) -> ToolProgress {
        let (status, detail) = match self.ended {
            None => (ToolStatus::Running, self.args.clone()),
            Some((ok, ms)) => (
                if ok {
                    ToolStatus::Succeeded
                } else {
                    ToolStatus::Failed
                },
                format!("{} · {}", self.args, seconds(ms)),
            ),
        };
        ToolProgress {
            name: self.name.clone(),
            status,
            detail,
        }
    }
}

fn push_paragraph(body: &mut String, text: &str) {
    if !body.is_empty() {
        body.push_str("\n\n");
    }
    body.push_str(text);
}

fn short(args: &str) -> String {
    let args = if args == "{}" || args == "null" {
        ""
    } else {
        args
    };
    let mut out: String = args.chars().take(ARGS_PREVIEW).collect();
    if args.chars().count() > ARGS_PREVIEW {
        out.push('…');
    }
    out.replace('`', "'")
}

fn seconds(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// `3.2 s · 120 → 45 tokens · 14.1 tok/s · model`; the rate counts output tokens
/// over the time after the first token.
fn footer(model: &str, usage: &UsageDto, ttft_ms: Option<u64>, duration_ms: u64) -> String {
    let generating = duration_ms.saturating_sub(ttft_ms.unwrap_or(0)).max(1);
    let rate = usage.output as f64 * 1000.0 / generating as f64;
    format!(
        "{} · {} → {} tokens · {rate:.1} tok/s · {model}",
        seconds(duration_ms),
        usage.input,
        usage.output
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_shared::api::ErrorBody;
    use weft_shared::ids::{MessageId, RunId, SessionId};

    use super::*;

    fn ev(seq: u64, kind: EventKind) -> RunEvent {
        RunEvent {
            run_id: RunId("r".into()),
            seq,
            ts: 0,
            kind,
        }
    }

    fn started(attempt: u32, resume_step: u32) -> EventKind {
        EventKind::RunStarted {
            session_id: SessionId("s".into()),
            model: "mock".into(),
            attempt,
            resume_step,
        }
    }

    fn text(step: u32, delta: &str) -> EventKind {
        EventKind::Text {
            step,
            delta: delta.into(),
        }
    }

    #[test]
    fn a_reply_streams_shows_tools_and_ends_with_a_footer() {
        let mut v = ReplyView::default();
        v.apply(&ev(1, started(1, 1)));
        assert_eq!(v.card().state, CardState::Thinking);
        v.apply(&ev(
            2,
            EventKind::ToolStart {
                step: 1,
                call_id: "c".into(),
                name: "current_time".into(),
                args: json!({"tz": "UTC"}),
            },
        ));
        assert_eq!(v.card().tools[0].status, ToolStatus::Running);
        v.apply(&ev(
            3,
            EventKind::ToolEnd {
                step: 1,
                call_id: "c".into(),
                name: "current_time".into(),
                ok: true,
                output: "x".into(),
                duration_ms: 12,
            },
        ));
        v.apply(&ev(4, text(2, "Hello ")));
        v.apply(&ev(5, text(2, "world")));
        let usage = UsageDto {
            input: 10,
            output: 20,
            ..UsageDto::default()
        };
        v.apply(&ev(
            6,
            EventKind::Done {
                message_id: MessageId("m".into()),
                model: "mock".into(),
                usage,
                ttft_ms: Some(0),
                duration_ms: 2000,
            },
        ));
        let card = v.card();
        assert!(v.is_final());
        assert_eq!(card.state, CardState::Done);
        assert_eq!(card.body, "Hello world");
        assert_eq!(card.tools[0].status, ToolStatus::Succeeded);
        assert_eq!(card.tools[0].detail, r#"{"tz":"UTC"} · 12 ms"#);
        assert_eq!(
            card.footer.as_deref(),
            Some("2.0 s · 10 → 20 tokens · 10.0 tok/s · mock")
        );
    }

    #[test]
    fn a_new_attempt_replaces_what_the_old_one_showed_of_its_steps() {
        let mut v = ReplyView::default();
        v.apply(&ev(1, started(1, 1)));
        v.apply(&ev(2, text(1, "step one ")));
        v.apply(&ev(3, text(2, "half of two")));
        v.apply(&ev(4, started(2, 2)));
        v.apply(&ev(5, text(2, "all of two")));
        assert_eq!(v.body(), "step one\n\nall of two");
        v.apply(&ev(
            6,
            EventKind::Retrying {
                step: 2,
                attempt: 1,
                reason: "503".into(),
                delay_ms: 1,
            },
        ));
        v.apply(&ev(7, text(2, "again")));
        assert_eq!(v.body(), "step one\n\nagain");
    }

    #[test]
    fn failures_and_cancels_keep_the_partial_text() {
        let mut v = ReplyView::default();
        v.apply(&ev(1, text(1, "partial")));
        let mut failed = v.clone();
        failed.apply(&ev(
            2,
            EventKind::Error(ErrorBody {
                code: "upstream_error".into(),
                message: "boom".into(),
            }),
        ));
        assert_eq!(failed.card().state, CardState::Failed);
        assert_eq!(failed.card().body, "partial\n\n**❌ boom**");
        v.apply(&ev(2, EventKind::Cancelled { by: "lark".into() }));
        assert_eq!(v.card().state, CardState::Cancelled);
        assert_eq!(v.card().body, "partial\n\n_🛑 stopped_");
    }
}

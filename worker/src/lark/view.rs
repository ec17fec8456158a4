//! A run's reply as a Lark card, folded from the run's events — the same
//! protocol, and the same attempt rules, as every other client: `run_started
//! {resume_step}` drops what earlier attempts showed for steps ≥ `resume_step`,
//! `retrying {step}` drops that step's text so far. Pure, so a card rebuilt from
//! the whole log by a new worker after a crash is the card the old one showed.
//!
//! A call held for approval is a tool line that says so (and, once answered, who
//! answered); the buttons live on a card of their own per approval
//! ([`ReplyView::open_approvals`] lists the ones to show).

use std::collections::BTreeMap;

use weft_lark::card::markdown::neutralize_mentions;
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
    /// Set when the call needed a person's approval.
    approval: Option<Approval>,
}

/// Where a call's approval stands.
#[derive(Debug, Clone, PartialEq)]
enum Approval {
    Waiting,
    /// `approved`, `denied` or `expired`, and by whom.
    Answered {
        decision: String,
        by: Option<String>,
    },
}

/// An approval a person is asked for, as `approval_required` announced it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The seq of its `approval_required`.
    pub seq: u64,
    pub approval_id: String,
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    /// Unix ms.
    pub expires_at: i64,
    answered: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplyView {
    pub phase: Phase,
    text: BTreeMap<u32, String>,
    tools: Vec<ToolLine>,
    approvals: Vec<ApprovalRequest>,
    footer: Option<String>,
    error: Option<String>,
}

impl Default for ReplyView {
    fn default() -> Self {
        ReplyView {
            phase: Phase::Thinking,
            text: BTreeMap::new(),
            tools: Vec::new(),
            approvals: Vec::new(),
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
                self.approvals.retain(|a| a.step < *resume_step);
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
            } => match self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                // The call was held for approval and now runs.
                Some(line) => line.ended = None,
                None => self.tools.push(ToolLine {
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: short(&args.to_string()),
                    ended: None,
                    approval: None,
                }),
            },
            EventKind::ApprovalRequired {
                step,
                approval_id,
                call_id,
                name,
                args,
                expires_at,
            } => {
                self.tools.retain(|t| &t.call_id != call_id);
                self.tools.push(ToolLine {
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: short(&args.to_string()),
                    ended: None,
                    approval: Some(Approval::Waiting),
                });
                self.approvals.retain(|a| &a.approval_id != approval_id);
                self.approvals.push(ApprovalRequest {
                    seq: event.seq,
                    approval_id: approval_id.clone(),
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: args.clone(),
                    expires_at: *expires_at,
                    answered: false,
                });
            }
            EventKind::ApprovalDecided {
                approval_id,
                call_id,
                decision,
                by,
                ..
            } => {
                if let Some(line) = self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                    line.approval = Some(Approval::Answered {
                        decision: decision.clone(),
                        by: by.clone(),
                    });
                }
                if let Some(request) = self
                    .approvals
                    .iter_mut()
                    .find(|a| &a.approval_id == approval_id)
                {
                    request.answered = true;
                }
            }
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
            EventKind::Thinking { .. } | EventKind::Usage(_) | EventKind::Heartbeat { .. } => {}
        }
    }

    /// Whether the reply has ended (the card shows its last state).
    pub fn is_final(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed | Phase::Cancelled)
    }

    /// Approvals still waiting for a person while the reply goes on: the ones
    /// whose buttons must be on screen.
    pub fn open_approvals(&self) -> Vec<&ApprovalRequest> {
        if self.is_final() {
            return Vec::new();
        }
        self.approvals.iter().filter(|a| !a.answered).collect()
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
        let waiting = !self.open_approvals().is_empty();
        let state = match self.phase {
            Phase::Thinking | Phase::Streaming if waiting => {
                push_paragraph(&mut body, "_⏸ waiting for approval_");
                CardState::AwaitingApproval
            }
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
        let note = self.approval.as_ref().map(|a| match a {
            Approval::Waiting => "waiting for approval".to_owned(),
            Approval::Answered { decision, by } => match by {
                Some(by) => format!("{decision} by {by}"),
                None => decision.clone(),
            },
        });
        let refused = matches!(&self.approval, Some(Approval::Answered { decision, .. }) if decision != "approved");
        let status = match (self.ended, &self.approval) {
            (Some((true, _)), _) => ToolStatus::Succeeded,
            (Some((false, _)), _) => ToolStatus::Failed,
            (None, Some(Approval::Waiting)) => ToolStatus::AwaitingApproval,
            (None, _) if refused => ToolStatus::Failed,
            (None, _) => ToolStatus::Running,
        };
        let parts: Vec<String> = [
            Some(self.args.clone()),
            note,
            self.ended.map(|(_, ms)| seconds(ms)),
        ]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
        ToolProgress {
            name: self.name.clone(),
            status,
            detail: parts.join(" · "),
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
    // Model-made arguments must not mention anyone (`<at id=all>`).
    neutralize_mentions(&out.replace('`', "'"))
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
mod tests;

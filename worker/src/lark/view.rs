//! A run's reply as a Lark card, folded from the run's events — the same
//! protocol, and the same attempt rules, as every other client: `run_started
//! {resume_step}` drops what earlier attempts showed for steps ≥ `resume_step`,
//! `retrying {step}` drops that step's text and thinking so far. Pure (times
//! come from the events' `ts`), so a card rebuilt from the whole log by a new
//! worker after a crash is the card the old one showed.
//!
//! A call held for approval is a tool line that says so (and, once answered,
//! who answered); the buttons live on a card of their own per approval
//! ([`ReplyView::approvals`] says what each of those cards must show).

mod reasoning;

use std::collections::BTreeMap;

use weft_lark::card::{CardState, ReplyCard, Source, ToolApproval, ToolProgress, ToolStatus};
use weft_lark::text::Lang;
use weft_lark::text::say::{Footer, Verdict};
use weft_shared::api::UsageDto;
use weft_shared::event::{EventKind, RunEvent};

use reasoning::Thinking;

pub const CARD_TITLE: &str = "Weft";

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
    args: serde_json::Value,
    /// `None` while running; then whether it succeeded, how long it took and
    /// (a preview of) what it returned.
    ended: Option<(bool, u64, String)>,
    /// Set when the call needed a person's approval.
    approval: Option<ToolApproval>,
}

/// How an approval was answered, as `approval_decided` announced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub verdict: Verdict,
    pub by: Option<String>,
    /// The seq of its `approval_decided`.
    pub seq: u64,
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
    pub answer: Option<Answer>,
}

/// What an approval's own card must show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ApprovalShown<'a> {
    /// The buttons.
    Open,
    Answered(&'a Answer),
    /// The reply ended before anyone answered.
    Closed,
}

/// The end of a run, for the footer.
#[derive(Debug, Clone, PartialEq)]
struct Ended {
    model: String,
    usage: UsageDto,
    ttft_ms: Option<u64>,
    duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplyView {
    pub phase: Phase,
    text: BTreeMap<u32, String>,
    thinking: Thinking,
    tools: Vec<ToolLine>,
    approvals: Vec<ApprovalRequest>,
    done: Option<Ended>,
    error: Option<String>,
    /// The documents the answer cites (`citations`).
    sources: Vec<Source>,
}

impl Default for ReplyView {
    fn default() -> Self {
        ReplyView {
            phase: Phase::Thinking,
            text: BTreeMap::new(),
            thinking: Thinking::default(),
            tools: Vec::new(),
            approvals: Vec::new(),
            done: None,
            error: None,
            sources: Vec::new(),
        }
    }
}

impl ReplyView {
    pub fn apply(&mut self, event: &RunEvent) {
        let ts = event.ts;
        match &event.kind {
            EventKind::RunStarted { resume_step, .. } => {
                self.text.retain(|step, _| step < resume_step);
                self.thinking.drop_from(*resume_step);
                self.tools.retain(|t| t.step < *resume_step);
                self.approvals.retain(|a| a.step < *resume_step);
            }
            EventKind::Thinking { step, delta } => self.thinking.think(*step, delta, ts),
            EventKind::Text { step, delta } => {
                self.thinking.answered(*step, ts);
                self.text.entry(*step).or_default().push_str(delta);
                self.phase = Phase::Streaming;
            }
            EventKind::Retrying { step, .. } => {
                self.text.remove(step);
                self.thinking.drop_step(*step);
            }
            EventKind::ToolStart {
                step,
                call_id,
                name,
                args,
            } => {
                self.thinking.answered(*step, ts);
                match self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                    // The call was held for approval and now runs.
                    Some(line) => line.ended = None,
                    None => self.tools.push(ToolLine {
                        step: *step,
                        call_id: call_id.clone(),
                        name: name.clone(),
                        args: args.clone(),
                        ended: None,
                        approval: None,
                    }),
                }
            }
            EventKind::ApprovalRequired {
                step,
                approval_id,
                call_id,
                name,
                args,
                expires_at,
            } => {
                self.thinking.answered(*step, ts);
                self.tools.retain(|t| &t.call_id != call_id);
                self.tools.push(ToolLine {
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: args.clone(),
                    ended: None,
                    approval: Some(ToolApproval::Waiting),
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
                    answer: None,
                });
            }
            EventKind::ApprovalDecided {
                approval_id,
                call_id,
                decision,
                by,
                ..
            } => {
                let verdict = Verdict::parse(decision).unwrap_or(Verdict::Denied);
                if let Some(line) = self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                    line.approval = Some(ToolApproval::Decided {
                        verdict,
                        by: by.clone(),
                    });
                }
                if let Some(request) = self
                    .approvals
                    .iter_mut()
                    .find(|a| &a.approval_id == approval_id)
                {
                    request.answer = Some(Answer {
                        verdict,
                        by: by.clone(),
                        seq: event.seq,
                    });
                }
            }
            EventKind::ToolEnd {
                call_id,
                ok,
                output,
                duration_ms,
                ..
            } => {
                if let Some(line) = self.tools.iter_mut().find(|t| &t.call_id == call_id) {
                    line.ended = Some((*ok, *duration_ms, output.clone()));
                }
            }
            EventKind::Usage(usage) => self.thinking.reported(usage.reasoning),
            EventKind::Citations { items } => {
                self.sources = items
                    .iter()
                    .map(|c| Source {
                        n: c.n,
                        document: c.document_name.clone(),
                        position: c.position.clone(),
                    })
                    .collect();
            }
            EventKind::Done {
                model,
                usage,
                ttft_ms,
                duration_ms,
                ..
            } => {
                self.phase = Phase::Done;
                self.thinking.reported(usage.reasoning);
                self.done = Some(Ended {
                    model: model.clone(),
                    usage: *usage,
                    ttft_ms: *ttft_ms,
                    duration_ms: *duration_ms,
                });
            }
            EventKind::Error(e) => {
                self.phase = Phase::Failed;
                self.error = Some(e.message.clone());
            }
            EventKind::Cancelled { .. } => self.phase = Phase::Cancelled,
            EventKind::Heartbeat { .. } => {}
        }
    }

    /// Whether the reply has ended (the card shows its last state).
    pub fn is_final(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed | Phase::Cancelled)
    }

    /// Whether there is anything to show yet (a card with only "…" is worth
    /// waiting a moment for: the first content usually comes soon).
    pub fn has_content(&self) -> bool {
        self.is_final()
            || !self.body().is_empty()
            || !self.tools.is_empty()
            || self.thinking.shown(false).is_some()
    }

    /// Approvals still waiting for a person while the reply goes on: the ones
    /// whose buttons must be on screen.
    pub fn open_approvals(&self) -> Vec<&ApprovalRequest> {
        self.approvals()
            .into_iter()
            .filter(|(_, shown)| *shown == ApprovalShown::Open)
            .map(|(request, _)| request)
            .collect()
    }

    /// Every approval of the reply and what its card must show.
    pub fn approvals(&self) -> Vec<(&ApprovalRequest, ApprovalShown<'_>)> {
        self.approvals
            .iter()
            .map(|a| {
                let shown = match &a.answer {
                    Some(answer) => ApprovalShown::Answered(answer),
                    None if self.is_final() => ApprovalShown::Closed,
                    None => ApprovalShown::Open,
                };
                (a, shown)
            })
            .collect()
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

    pub fn card(&self, lang: Lang) -> ReplyCard {
        let waiting = !self.open_approvals().is_empty();
        let state = match self.phase {
            Phase::Thinking | Phase::Streaming if waiting => CardState::AwaitingApproval,
            Phase::Thinking => CardState::Thinking,
            Phase::Streaming => CardState::Streaming,
            Phase::Done => CardState::Done,
            Phase::Failed => CardState::Failed,
            Phase::Cancelled => CardState::Cancelled,
        };
        let going_on = matches!(state, CardState::Thinking | CardState::Streaming);
        ReplyCard {
            title: CARD_TITLE.into(),
            state,
            lang,
            body: self.body(),
            error: self.error.clone(),
            reasoning: self.thinking.shown(going_on),
            tools: self.tools.iter().map(ToolLine::progress).collect(),
            footer: self.done.as_ref().map(Ended::footer),
            sources: self.sources.clone(),
            asked_elsewhere: None,
        }
    }
}

impl ToolLine {
    fn progress(&self) -> ToolProgress {
        let refused = matches!(
            &self.approval,
            Some(ToolApproval::Decided { verdict, .. }) if *verdict != Verdict::Approved
        );
        let status = match (&self.ended, &self.approval) {
            (Some((true, ..)), _) => ToolStatus::Succeeded,
            (Some((false, ..)), _) => ToolStatus::Failed,
            (None, Some(ToolApproval::Waiting)) => ToolStatus::AwaitingApproval,
            (None, _) if refused => ToolStatus::Failed,
            (None, _) => ToolStatus::Running,
        };
        ToolProgress {
            name: self.name.clone(),
            status,
            args: self.args.clone(),
            result: self.ended.as_ref().map(|(_, _, output)| output.clone()),
            // A refused call did not run: no time to show.
            duration_ms: self
                .ended
                .as_ref()
                .filter(|_| !refused)
                .map(|(_, ms, _)| *ms),
            approval: self.approval.clone(),
        }
    }
}

impl Ended {
    /// The rate counts output tokens over the time after the first token; the
    /// context share rounds up (a sliver used shows as 1%).
    fn footer(&self) -> Footer {
        let u = &self.usage;
        let generating = self
            .duration_ms
            .saturating_sub(self.ttft_ms.unwrap_or(0))
            .max(1);
        Footer {
            duration_ms: self.duration_ms,
            billed_input: u.input.saturating_sub(u.cache_read),
            cached_input: u.cache_read.min(u.input),
            output: u.output,
            tokens_per_s: u.output as f64 * 1000.0 / generating as f64,
            context_percent: (u.context_window > 0)
                .then(|| (u.context_tokens * 100).div_ceil(u.context_window)),
            model: self.model.clone(),
        }
    }
}

#[cfg(test)]
mod tests;

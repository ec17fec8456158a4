//! A run's reply as a Lark card, folded from the run's events by the same fold
//! as every other client ([`weft_shared::fold`]: `run_started {resume_step}`
//! drops what earlier attempts showed for steps ≥ `resume_step`, `retrying
//! {step}` what that step said so far). Pure (times
//! come from the events' `ts`), so a card rebuilt from the whole log by a new
//! worker after a crash is the card the old one showed.
//!
//! A call held for approval is a tool line that says so (and, once answered,
//! who answered); the buttons live on a card of their own per approval
//! ([`ReplyView::approvals`] says what each of those cards must show). A
//! question the agent asks (`ask_user`) is a card of its own too
//! ([`ReplyView::questions`]), while the reply card waits orange for the
//! answer; so is a plan the agent proposes in plan mode ([`ReplyView::plans`]),
//! while the reply card, which shows the plan as the step's text, waits for
//! the decision.

mod reasoning;

use weft_lark::card::{
    AgentProgress, CardState, ReplyCard, Source, ToolApproval, ToolProgress, ToolStatus,
};
use weft_lark::text::Lang;
use weft_lark::text::say::{Footer, Verdict};
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::fold::{
    Answered, Decided, Outcome, PlanDecided, RunFold, ToolCall, ToolStatus as FoldStatus,
};
pub use weft_shared::fold::{Approval, Plan, Question};

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

/// What an approval's own card must show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ApprovalShown<'a> {
    /// The buttons.
    Open,
    Answered(&'a Decided),
    /// The reply ended before anyone answered.
    Closed,
}

/// What a question's own card must show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuestionShown<'a> {
    /// The question, open (its buttons, or how to reply).
    Open,
    /// Answered or expired.
    Answered(&'a Answered),
    /// The reply ended before anyone answered.
    Closed,
}

/// What a plan's own card must show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlanShown<'a> {
    /// The plan, open (its buttons, and that a reply asks for changes).
    Open,
    /// Decided or expired.
    Decided(&'a PlanDecided),
    /// The reply ended before anyone decided.
    Closed,
}

/// The reply as its card shows it: the run's events folded by the protocol's
/// one fold ([`RunFold`]), plus how long the model thought, which only the
/// card tells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplyView {
    fold: RunFold,
    thinking: Thinking,
}

impl ReplyView {
    pub fn apply(&mut self, event: &RunEvent) {
        if self.fold.is_final() {
            return;
        }
        let ts = event.ts;
        match &event.kind {
            EventKind::RunStarted { resume_step, .. } => self.thinking.drop_from(*resume_step),
            EventKind::Thinking { step, delta } => self.thinking.think(*step, delta, ts),
            EventKind::Text { step, .. }
            | EventKind::ToolStart { step, .. }
            | EventKind::ApprovalRequired { step, .. }
            | EventKind::Question { step, .. }
            | EventKind::PlanProposed { step, .. } => self.thinking.answered(*step, ts),
            EventKind::Retrying { step, .. } => self.thinking.drop_step(*step),
            EventKind::Usage(usage) | EventKind::Done { usage, .. } => {
                self.thinking.reported(usage.reasoning)
            }
            _ => {}
        }
        self.fold.apply(event);
    }

    pub fn phase(&self) -> Phase {
        match &self.fold.outcome {
            Some(Outcome::Done) => Phase::Done,
            Some(Outcome::Failed(_)) => Phase::Failed,
            Some(Outcome::Cancelled { .. }) => Phase::Cancelled,
            None if self.fold.has_text() => Phase::Streaming,
            None => Phase::Thinking,
        }
    }

    /// Whether the reply has ended (the card shows its last state).
    pub fn is_final(&self) -> bool {
        self.fold.is_final()
    }

    /// Whether there is anything to show yet (a card with only "…" is worth
    /// waiting a moment for: the first content usually comes soon).
    pub fn has_content(&self) -> bool {
        self.is_final()
            || !self.body().is_empty()
            || !self.fold.tools.is_empty()
            || !self.fold.questions.is_empty()
            || !self.fold.plans.is_empty()
            || !self.fold.delegations.is_empty()
            || self.thinking.shown(false).is_some()
    }

    /// Approvals still waiting for a person while the reply goes on: the ones
    /// whose buttons must be on screen.
    pub fn open_approvals(&self) -> Vec<&Approval> {
        self.approvals()
            .into_iter()
            .filter(|(_, shown)| *shown == ApprovalShown::Open)
            .map(|(request, _)| request)
            .collect()
    }

    /// Every approval of the reply and what its card must show.
    pub fn approvals(&self) -> Vec<(&Approval, ApprovalShown<'_>)> {
        self.fold
            .approvals
            .iter()
            .map(|a| {
                let shown = match &a.decided {
                    Some(decided) => ApprovalShown::Answered(decided),
                    None if self.is_final() => ApprovalShown::Closed,
                    None => ApprovalShown::Open,
                };
                (a, shown)
            })
            .collect()
    }

    /// Every question of the reply and what its card must show.
    pub fn questions(&self) -> Vec<(&Question, QuestionShown<'_>)> {
        self.fold
            .questions
            .iter()
            .map(|q| {
                let shown = match &q.answered {
                    Some(answered) => QuestionShown::Answered(answered),
                    None if self.is_final() => QuestionShown::Closed,
                    None => QuestionShown::Open,
                };
                (q, shown)
            })
            .collect()
    }

    /// Every plan of the reply and what its card must show.
    pub fn plans(&self) -> Vec<(&Plan, PlanShown<'_>)> {
        self.fold
            .plans
            .iter()
            .map(|p| {
                let shown = match &p.decided {
                    Some(decided) => PlanShown::Decided(decided),
                    None if self.is_final() => PlanShown::Closed,
                    None => PlanShown::Open,
                };
                (p, shown)
            })
            .collect()
    }

    /// The conversation's todo list as this reply last changed it
    /// (`todo_update`); empty when the reply has not touched it. Shown on a
    /// card of its own ([`weft_lark::card::TodoCard`]).
    pub fn todos(&self) -> &[weft_shared::api::TodoItem] {
        self.fold.todos.as_deref().unwrap_or_default()
    }

    /// The reply's text so far, all steps in order.
    pub fn body(&self) -> String {
        self.fold
            .steps
            .values()
            .map(|s| s.text.as_str())
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim_end())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    pub fn card(&self, lang: Lang) -> ReplyCard {
        let waiting = !self.open_approvals().is_empty();
        let asking = self.fold.open_question().is_some();
        let planned = self.fold.open_plan().is_some();
        let state = match self.phase() {
            Phase::Thinking | Phase::Streaming if waiting => CardState::AwaitingApproval,
            Phase::Thinking | Phase::Streaming if asking => CardState::AwaitingAnswer,
            Phase::Thinking | Phase::Streaming if planned => CardState::AwaitingDecision,
            Phase::Thinking => CardState::Thinking,
            Phase::Streaming => CardState::Streaming,
            Phase::Done => CardState::Done,
            Phase::Failed => CardState::Failed,
            Phase::Cancelled => CardState::Cancelled,
        };
        let going_on = matches!(state, CardState::Thinking | CardState::Streaming);
        let fold = &self.fold;
        ReplyCard {
            title: CARD_TITLE.into(),
            state,
            lang,
            body: self.body(),
            error: match &fold.outcome {
                Some(Outcome::Failed(e)) => Some(e.message.clone()),
                _ => None,
            },
            reasoning: self.thinking.shown(going_on),
            tools: fold.tools.iter().map(|t| self.progress(t)).collect(),
            footer: matches!(fold.outcome, Some(Outcome::Done)).then(|| self.footer()),
            sources: fold
                .citations
                .iter()
                .map(|c| Source {
                    n: c.n,
                    document: c.document_name.clone(),
                    position: c.position.clone(),
                })
                .collect(),
            asked_elsewhere: None,
            agents: fold
                .delegations
                .iter()
                .map(|d| AgentProgress {
                    agent: d.agent.clone(),
                    task: d.task.clone(),
                    status: d.status,
                })
                .collect(),
            still_working: fold.still_working.filter(|_| going_on),
        }
    }

    fn progress(&self, call: &ToolCall) -> ToolProgress {
        let approval = call
            .approval_id
            .as_ref()
            .map(|_| match self.fold.decision(call) {
                None => ToolApproval::Waiting,
                Some(d) => ToolApproval::Decided {
                    verdict: d.decision,
                    by: d.by.clone(),
                },
            });
        let status = match self.fold.tool_status(call) {
            FoldStatus::Ok => ToolStatus::Succeeded,
            FoldStatus::Failed => ToolStatus::Failed,
            FoldStatus::AwaitingApproval => ToolStatus::AwaitingApproval,
            FoldStatus::Running => ToolStatus::Running,
        };
        // A refused call did not run: no time to show.
        let refused = self
            .fold
            .decision(call)
            .is_some_and(|d| d.decision != Verdict::Approved);
        ToolProgress {
            name: call.name.clone(),
            status,
            args: call.args.clone(),
            result: call.ended.as_ref().map(|e| e.output.clone()),
            duration_ms: call
                .ended
                .as_ref()
                .filter(|_| !refused)
                .map(|e| e.duration_ms),
            approval,
        }
    }

    /// The footer of a reply that ended well. The rate counts output tokens
    /// over the time after the first token; the context share rounds up (a
    /// sliver used shows as 1%).
    fn footer(&self) -> Footer {
        let f = &self.fold;
        let u = &f.usage;
        let duration_ms = f.duration_ms.unwrap_or_default();
        let generating = duration_ms.saturating_sub(f.ttft_ms.unwrap_or(0)).max(1);
        Footer {
            duration_ms,
            billed_input: u.input.saturating_sub(u.cache_read),
            cached_input: u.cache_read.min(u.input),
            output: u.output,
            tokens_per_s: u.output as f64 * 1000.0 / generating as f64,
            context_percent: (u.context_window > 0)
                .then(|| (u.context_tokens * 100).div_ceil(u.context_window)),
            model: f.model.clone(),
        }
    }
}

#[cfg(test)]
mod tests;

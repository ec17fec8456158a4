//! Folding run events into a reply (docs/protocol.md, "Run events").
//!
//! The stream already removed duplicates; this applies the two rules that make
//! earlier output void: `retrying{step}` discards that step's partial text, and a
//! `run_started` with `attempt > 1` discards every step `>= resume_step` of the
//! earlier attempts. [`Reply::apply`] returns [`Change`]s so renderers can show
//! progress live and retract what became void.

use std::collections::BTreeMap;

use weft_wire::api::{Citation, ErrorBody, UsageDto};
use weft_wire::event::{EventKind, RunEvent};

#[derive(Debug, Clone, Default)]
pub struct StepOutput {
    pub text: String,
    pub thinking: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    /// `None` while running.
    pub ok: Option<bool>,
    pub output: String,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Failed(ErrorBody),
    Cancelled { by: String },
}

/// What an event changed, for live rendering.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Started {
        attempt: u32,
    },
    Text {
        step: u32,
        delta: String,
    },
    Thinking {
        step: u32,
        delta: String,
    },
    /// Output of steps `from..=to` is void; renderers drop what they showed of it.
    Retract {
        from: u32,
        to: u32,
        reason: String,
    },
    ToolStart(usize),
    ToolEnd(usize),
    Approval {
        approval_id: String,
        name: String,
        args: serde_json::Value,
    },
    /// `approved`, `denied` or `expired`, and by whom.
    ApprovalDecided {
        name: String,
        decision: String,
        by: Option<String>,
    },
    Usage,
    /// The sources the answer cites arrived ([`Reply::citations`]).
    Citations,
    Finished,
}

#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub run_id: Option<String>,
    pub session_id: Option<String>,
    pub model: String,
    pub steps: BTreeMap<u32, StepOutput>,
    pub tools: Vec<ToolCall>,
    pub usage: UsageDto,
    pub ttft_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub outcome: Option<Outcome>,
    /// The documents the answer cites as `[n]`.
    pub citations: Vec<Citation>,
}

impl Reply {
    pub fn apply(&mut self, ev: RunEvent) -> Vec<Change> {
        self.run_id.get_or_insert(ev.run_id.0);
        match ev.kind {
            EventKind::RunStarted {
                session_id,
                model,
                attempt,
                resume_step,
            } => {
                self.session_id = Some(session_id.0);
                self.model = model;
                let mut out = vec![Change::Started { attempt }];
                if attempt > 1 && self.steps.keys().any(|s| *s >= resume_step) {
                    self.steps.retain(|s, _| *s < resume_step);
                    self.tools.retain(|t| t.step < resume_step);
                    out.push(Change::Retract {
                        from: resume_step,
                        to: u32::MAX,
                        reason: format!("attempt {attempt} resumes at step {resume_step}"),
                    });
                }
                out
            }
            EventKind::Text { step, delta } => {
                self.steps.entry(step).or_default().text.push_str(&delta);
                vec![Change::Text { step, delta }]
            }
            EventKind::Thinking { step, delta } => {
                self.steps
                    .entry(step)
                    .or_default()
                    .thinking
                    .push_str(&delta);
                vec![Change::Thinking { step, delta }]
            }
            EventKind::ToolStart {
                step,
                call_id,
                name,
                args,
            } => {
                self.tools.push(ToolCall {
                    step,
                    call_id,
                    name,
                    args,
                    ok: None,
                    output: String::new(),
                    duration_ms: 0,
                });
                vec![Change::ToolStart(self.tools.len() - 1)]
            }
            EventKind::ToolEnd {
                call_id,
                ok,
                output,
                duration_ms,
                ..
            } => match self.tools.iter().rposition(|t| t.call_id == call_id) {
                Some(i) => {
                    let t = &mut self.tools[i];
                    (t.ok, t.output, t.duration_ms) = (Some(ok), output, duration_ms);
                    vec![Change::ToolEnd(i)]
                }
                None => vec![],
            },
            EventKind::ApprovalRequired {
                approval_id,
                name,
                args,
                ..
            } => vec![Change::Approval {
                approval_id,
                name,
                args,
            }],
            EventKind::ApprovalDecided {
                name, decision, by, ..
            } => vec![Change::ApprovalDecided { name, decision, by }],
            EventKind::Usage(u) => {
                self.usage = u;
                vec![Change::Usage]
            }
            EventKind::Retrying { step, reason, .. } => match self.steps.remove(&step) {
                Some(s) if !s.text.is_empty() || !s.thinking.is_empty() => vec![Change::Retract {
                    from: step,
                    to: step,
                    reason,
                }],
                _ => vec![],
            },
            EventKind::Citations { items } => {
                self.citations = items;
                vec![Change::Citations]
            }
            EventKind::Heartbeat { .. } => vec![],
            EventKind::Done {
                model,
                usage,
                ttft_ms,
                duration_ms,
                ..
            } => {
                (self.model, self.usage, self.ttft_ms, self.duration_ms) =
                    (model, usage, ttft_ms, Some(duration_ms));
                self.outcome = Some(Outcome::Done);
                vec![Change::Finished]
            }
            EventKind::Error(e) => {
                self.outcome = Some(Outcome::Failed(e));
                vec![Change::Finished]
            }
            EventKind::Cancelled { by } => {
                self.outcome = Some(Outcome::Cancelled { by });
                vec![Change::Finished]
            }
        }
    }

    /// The reply's text: every kept step's text, steps separated by a blank line.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .steps
            .values()
            .map(|s| s.text.trim())
            .filter(|t| !t.is_empty())
            .collect();
        parts.join("\n\n")
    }

    pub fn thinking(&self) -> String {
        self.steps
            .values()
            .map(|s| s.thinking.as_str())
            .collect::<Vec<_>>()
            .join("")
    }

    pub fn succeeded(&self) -> bool {
        self.outcome == Some(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_wire::ids::{RunId, SessionId};

    fn ev(seq: u64, kind: EventKind) -> RunEvent {
        RunEvent {
            run_id: RunId("r".into()),
            seq,
            ts: 0,
            kind,
        }
    }

    fn text(step: u32, d: &str) -> EventKind {
        EventKind::Text {
            step,
            delta: d.into(),
        }
    }

    #[test]
    fn retrying_discards_the_partial_step_and_resume_drops_later_steps() {
        let mut r = Reply::default();
        let started = |attempt, resume_step| EventKind::RunStarted {
            session_id: SessionId("s".into()),
            model: "m".into(),
            attempt,
            resume_step,
        };
        r.apply(ev(1, started(1, 1)));
        r.apply(ev(2, text(1, "first ")));
        r.apply(ev(3, text(2, "half")));
        let ch = r.apply(ev(
            4,
            EventKind::Retrying {
                step: 2,
                attempt: 1,
                reason: "429".into(),
                delay_ms: 10,
            },
        ));
        assert!(matches!(ch[0], Change::Retract { from: 2, to: 2, .. }));
        r.apply(ev(5, text(2, "again")));
        r.apply(ev(6, text(3, "lost")));
        let ch = r.apply(ev(7, started(2, 3)));
        assert!(matches!(ch[1], Change::Retract { from: 3, .. }));
        r.apply(ev(8, text(3, "kept")));
        assert_eq!(r.text(), "first\n\nagain\n\nkept");
    }
}

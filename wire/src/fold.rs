//! The one fold of a run's events into what the run has said so far: its steps'
//! text and thinking, its tool calls, the approvals, questions and plans it
//! waited for, the runs it delegated to other agents, its citations and how it ended. The terminal client, the Lark card and the load
//! tester fold events with this; the web's reducer (`web/src/stream/reducer.ts`)
//! follows the same rules, and one table of cases (`wire/tests/fold_cases.json`)
//! is run against both.
//!
//! The stream has already removed duplicates and filled gaps (`seq`); what is
//! left are the two rules that make earlier output void:
//!
//! * `retrying {step}`: the step restarts; what it said so far is void (its
//!   text and thinking; a worker announces a step's calls only once the model
//!   has finished the step, so there are none to void, but if there were, they
//!   would be too).
//! * `run_started {resume_step}`: a new attempt goes on from `resume_step`;
//!   whatever earlier attempts said at steps `>= resume_step` — text,
//!   thinking, tool calls, approvals, questions, plans, delegations — is void. (A run that waited for an
//!   approval resumes at the step after the waiting one, so that step's text and
//!   its approvals stay.)
//!
//! And a run that ended takes no more events. A tool call's state is
//! [`RunFold::tool_status`].
//!
//! A run that has said nothing but `heartbeat`s for [`STILL_WORKING_AFTER_MS`]
//! (a slow tool, a model thinking out of sight) is [`RunFold::still_working`]:
//! every client says "still working… N min" rather than look hung. The
//! heartbeat's `idle_ms` decides, not the time between events a client saw, so
//! a client that attaches late or replays the log shows the same.
//!
//! [`RunFold::apply`] returns the [`Change`]s an event made, so a renderer can
//! show progress live and take back what became void.

use std::collections::BTreeMap;

use crate::api::{Citation, ErrorBody, MemoryRef, TodoItem, UsageDto};
use crate::event::{EventKind, RunEvent};
use crate::states::{DelegationStatus, PlanStatus, QuestionStatus, Verdict};

/// How long a run says nothing but heartbeats before it shows as still
/// working (issue 27: three minutes).
pub const STILL_WORKING_AFTER_MS: u64 = 180_000;

/// What one step said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutput {
    pub text: String,
    pub thinking: String,
}

/// A tool call, as far as it got.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    /// `None` while it runs (or waits for its approval).
    pub ended: Option<ToolEnded>,
    /// The approval it needed, if any: the id of an [`Approval`].
    pub approval_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEnded {
    pub ok: bool,
    pub duration_ms: u64,
    /// A preview of what it returned.
    pub output: String,
}

/// An approval the run asked a person for (`approval_required`).
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The seq of its `approval_required`.
    pub seq: u64,
    pub approval_id: String,
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    /// Unix ms; unanswered by then it counts as denied.
    pub expires_at: i64,
    pub decided: Option<Decided>,
}

/// How an approval was answered (`approval_decided`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub decision: Verdict,
    pub by: Option<String>,
    /// The seq of its `approval_decided`.
    pub seq: u64,
}

/// A question the agent asked the person (`question`).
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The seq of its `question`.
    pub seq: u64,
    pub question_id: String,
    pub step: u32,
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
    pub multiple: bool,
    pub allow_text: bool,
    /// Unix ms; unanswered by then the model is told nobody answered.
    pub expires_at: i64,
    pub answered: Option<Answered>,
}

/// How a question was answered (`question_answered`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub status: QuestionStatus,
    pub answer: Vec<String>,
    pub by: Option<String>,
    /// The seq of its `question_answered`.
    pub seq: u64,
}

/// A plan the agent proposed (`plan_proposed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The seq of its `plan_proposed`.
    pub seq: u64,
    pub plan_id: String,
    pub step: u32,
    pub call_id: String,
    pub markdown: String,
    /// Unix ms; undecided by then the plan expires and the run ends.
    pub expires_at: i64,
    pub decided: Option<PlanDecided>,
}

/// How a plan was decided (`plan_decided`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDecided {
    pub status: PlanStatus,
    pub comment: Option<String>,
    pub by: Option<String>,
    /// The seq of its `plan_decided`.
    pub seq: u64,
}

/// A task the agent handed to another agent (`agent_start`): a run of its
/// own, `run_id`, whose events can be attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    /// The seq of its `agent_start`.
    pub seq: u64,
    pub delegation_id: String,
    pub step: u32,
    pub call_id: String,
    pub agent: String,
    pub task: String,
    /// The child's session and run.
    pub session_id: String,
    pub run_id: String,
    /// `running` until its `agent_end`.
    pub status: DelegationStatus,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Running,
    /// Held until a person answers its approval.
    AwaitingApproval,
    Ok,
    /// It failed, or its approval was denied or expired (it never runs).
    Failed,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Running => "running",
            ToolStatus::AwaitingApproval => "awaiting_approval",
            ToolStatus::Ok => "ok",
            ToolStatus::Failed => "failed",
        }
    }
}

/// How the run ended.
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
    /// What was shown of steps `from..=to` is void.
    Retract {
        from: u32,
        to: u32,
        reason: String,
    },
    /// The call at this index of [`RunFold::tools`] started (or, after its
    /// approval, runs now).
    ToolStart(usize),
    ToolEnd(usize),
    /// The approval at this index of [`RunFold::approvals`] is asked.
    Approval(usize),
    /// The approval at this index of [`RunFold::approvals`] was answered.
    ApprovalDecided(usize),
    /// The question at this index of [`RunFold::questions`] is asked.
    Question(usize),
    /// The question at this index of [`RunFold::questions`] was answered (or
    /// expired).
    QuestionAnswered(usize),
    /// The plan at this index of [`RunFold::plans`] is proposed.
    Plan(usize),
    /// The plan at this index of [`RunFold::plans`] was decided (or expired).
    PlanDecided(usize),
    /// The delegation at this index of [`RunFold::delegations`] started.
    Agent(usize),
    /// The delegation at this index of [`RunFold::delegations`] ended.
    AgentEnded(usize),
    Usage,
    /// The sources the answer cites arrived ([`RunFold::citations`]).
    Citations,
    /// The memories the prompt carried arrived ([`RunFold::memories`]).
    Memories,
    /// The session's todo list changed ([`RunFold::todos`]).
    Todos,
    /// [`RunFold::still_working`] was set, moved on, or cleared.
    StillWorking,
    Finished,
}

/// A run's events folded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFold {
    pub run_id: Option<String>,
    pub session_id: Option<String>,
    pub model: String,
    /// The attempt the newest `run_started` announced.
    pub attempt: u32,
    pub steps: BTreeMap<u32, StepOutput>,
    pub tools: Vec<ToolCall>,
    pub approvals: Vec<Approval>,
    pub questions: Vec<Question>,
    pub plans: Vec<Plan>,
    pub delegations: Vec<Delegation>,
    /// The newest usage reported (a step's, then the run's total).
    pub usage: UsageDto,
    pub ttft_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    /// The documents the answer cites as `[n]`.
    pub citations: Vec<Citation>,
    /// The person's memories the prompt carried (a new attempt says again).
    pub memories: Vec<MemoryRef>,
    /// The session's todo list as this run last changed it; `None` until it does.
    pub todos: Option<Vec<TodoItem>>,
    /// The version of `todos` (see [`EventKind::Todo`]).
    pub todos_version: u64,
    /// While the run has said nothing but heartbeats for
    /// [`STILL_WORKING_AFTER_MS`]: how long it has been going (the newest
    /// heartbeat's `elapsed_ms`). Any other event clears it.
    pub still_working: Option<u64>,
    pub outcome: Option<Outcome>,
}

impl RunFold {
    pub fn apply(&mut self, ev: &RunEvent) -> Vec<Change> {
        // Once ended, nothing else belongs to the run.
        if self.outcome.is_some() {
            return Vec::new();
        }
        if self.run_id.is_none() {
            self.run_id = Some(ev.run_id.0.clone());
        }
        let was = self.still_working.take();
        if let EventKind::Heartbeat {
            elapsed_ms,
            idle_ms,
        } = ev.kind
        {
            self.still_working = (idle_ms >= STILL_WORKING_AFTER_MS).then_some(elapsed_ms);
        }
        let mut changes = self.said(ev);
        if self.still_working != was {
            changes.push(Change::StillWorking);
        }
        changes
    }

    /// What `ev` says besides whether the run is still working.
    fn said(&mut self, ev: &RunEvent) -> Vec<Change> {
        match &ev.kind {
            EventKind::RunStarted {
                session_id,
                model,
                attempt,
                resume_step,
            } => {
                self.session_id = Some(session_id.0.clone());
                self.model = model.clone();
                self.attempt = *attempt;
                let mut out = vec![Change::Started { attempt: *attempt }];
                let void = |step: u32| step >= *resume_step;
                let had = self.steps.keys().any(|s| void(*s))
                    || self.tools.iter().any(|t| void(t.step))
                    || self.approvals.iter().any(|a| void(a.step))
                    || self.questions.iter().any(|q| void(q.step))
                    || self.plans.iter().any(|p| void(p.step))
                    || self.delegations.iter().any(|d| void(d.step));
                if had {
                    self.steps.retain(|s, _| !void(*s));
                    self.tools.retain(|t| !void(t.step));
                    self.approvals.retain(|a| !void(a.step));
                    self.questions.retain(|q| !void(q.step));
                    self.plans.retain(|p| !void(p.step));
                    self.delegations.retain(|d| !void(d.step));
                    out.push(Change::Retract {
                        from: *resume_step,
                        to: u32::MAX,
                        reason: format!("attempt {attempt} resumes at step {resume_step}"),
                    });
                }
                out
            }
            EventKind::Text { step, delta } => {
                self.steps.entry(*step).or_default().text.push_str(delta);
                vec![Change::Text {
                    step: *step,
                    delta: delta.clone(),
                }]
            }
            EventKind::Thinking { step, delta } => {
                self.steps
                    .entry(*step)
                    .or_default()
                    .thinking
                    .push_str(delta);
                vec![Change::Thinking {
                    step: *step,
                    delta: delta.clone(),
                }]
            }
            EventKind::Retrying { step, reason, .. } => {
                let said = self
                    .steps
                    .remove(step)
                    .is_some_and(|s| !s.text.is_empty() || !s.thinking.is_empty());
                let waits = |f: &RunFold| {
                    f.tools.len()
                        + f.approvals.len()
                        + f.questions.len()
                        + f.plans.len()
                        + f.delegations.len()
                };
                let calls = waits(self);
                self.tools.retain(|t| t.step != *step);
                self.approvals.retain(|a| a.step != *step);
                self.questions.retain(|q| q.step != *step);
                self.plans.retain(|p| p.step != *step);
                self.delegations.retain(|d| d.step != *step);
                if said || calls != waits(self) {
                    vec![Change::Retract {
                        from: *step,
                        to: *step,
                        reason: reason.clone(),
                    }]
                } else {
                    vec![]
                }
            }
            EventKind::ToolStart {
                step,
                call_id,
                name,
                args,
            } => {
                let at = match self.tools.iter().rposition(|t| &t.call_id == call_id) {
                    // Held for its approval, it runs now.
                    Some(i) => {
                        self.tools[i].ended = None;
                        i
                    }
                    None => {
                        self.tools.push(ToolCall {
                            step: *step,
                            call_id: call_id.clone(),
                            name: name.clone(),
                            args: args.clone(),
                            ended: None,
                            approval_id: None,
                        });
                        self.tools.len() - 1
                    }
                };
                vec![Change::ToolStart(at)]
            }
            EventKind::ToolEnd {
                call_id,
                ok,
                output,
                duration_ms,
                ..
            } => match self.tools.iter().rposition(|t| &t.call_id == call_id) {
                Some(i) => {
                    self.tools[i].ended = Some(ToolEnded {
                        ok: *ok,
                        duration_ms: *duration_ms,
                        output: output.clone(),
                    });
                    vec![Change::ToolEnd(i)]
                }
                None => vec![],
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
                self.tools.push(ToolCall {
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: args.clone(),
                    ended: None,
                    approval_id: Some(approval_id.clone()),
                });
                self.approvals.retain(|a| &a.approval_id != approval_id);
                self.approvals.push(Approval {
                    seq: ev.seq,
                    approval_id: approval_id.clone(),
                    step: *step,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: args.clone(),
                    expires_at: *expires_at,
                    decided: None,
                });
                vec![Change::Approval(self.approvals.len() - 1)]
            }
            EventKind::ApprovalDecided {
                approval_id,
                decision,
                by,
                ..
            } => match self
                .approvals
                .iter()
                .position(|a| &a.approval_id == approval_id)
            {
                Some(i) => {
                    self.approvals[i].decided = Some(Decided {
                        decision: *decision,
                        by: by.clone(),
                        seq: ev.seq,
                    });
                    vec![Change::ApprovalDecided(i)]
                }
                None => vec![],
            },
            EventKind::Question {
                step,
                question_id,
                call_id,
                question,
                options,
                multiple,
                allow_text,
                expires_at,
            } => {
                self.questions.retain(|q| &q.question_id != question_id);
                self.questions.push(Question {
                    seq: ev.seq,
                    question_id: question_id.clone(),
                    step: *step,
                    call_id: call_id.clone(),
                    question: question.clone(),
                    options: options.clone(),
                    multiple: *multiple,
                    allow_text: *allow_text,
                    expires_at: *expires_at,
                    answered: None,
                });
                vec![Change::Question(self.questions.len() - 1)]
            }
            EventKind::QuestionAnswered {
                question_id,
                status,
                answer,
                by,
                ..
            } => match self
                .questions
                .iter()
                .position(|q| &q.question_id == question_id)
            {
                Some(i) => {
                    self.questions[i].answered = Some(Answered {
                        status: *status,
                        answer: answer.clone(),
                        by: by.clone(),
                        seq: ev.seq,
                    });
                    vec![Change::QuestionAnswered(i)]
                }
                None => vec![],
            },
            EventKind::PlanProposed {
                step,
                plan_id,
                call_id,
                markdown,
                expires_at,
            } => {
                self.plans.retain(|p| &p.plan_id != plan_id);
                self.plans.push(Plan {
                    seq: ev.seq,
                    plan_id: plan_id.clone(),
                    step: *step,
                    call_id: call_id.clone(),
                    markdown: markdown.clone(),
                    expires_at: *expires_at,
                    decided: None,
                });
                vec![Change::Plan(self.plans.len() - 1)]
            }
            EventKind::PlanDecided {
                plan_id,
                status,
                comment,
                by,
                ..
            } => match self.plans.iter().position(|p| &p.plan_id == plan_id) {
                Some(i) => {
                    self.plans[i].decided = Some(PlanDecided {
                        status: *status,
                        comment: comment.clone(),
                        by: by.clone(),
                        seq: ev.seq,
                    });
                    vec![Change::PlanDecided(i)]
                }
                None => vec![],
            },
            EventKind::AgentStart {
                step,
                delegation_id,
                call_id,
                agent,
                task,
                child_session_id,
                child_run_id,
            } => {
                self.delegations
                    .retain(|d| &d.delegation_id != delegation_id);
                self.delegations.push(Delegation {
                    seq: ev.seq,
                    delegation_id: delegation_id.clone(),
                    step: *step,
                    call_id: call_id.clone(),
                    agent: agent.clone(),
                    task: task.clone(),
                    session_id: child_session_id.0.clone(),
                    run_id: child_run_id.0.clone(),
                    status: DelegationStatus::Running,
                });
                vec![Change::Agent(self.delegations.len() - 1)]
            }
            EventKind::AgentEnd {
                delegation_id,
                status,
                ..
            } => match self
                .delegations
                .iter()
                .position(|d| &d.delegation_id == delegation_id)
            {
                Some(i) => {
                    self.delegations[i].status = *status;
                    vec![Change::AgentEnded(i)]
                }
                None => vec![],
            },
            EventKind::Usage(u) => {
                self.usage = *u;
                vec![Change::Usage]
            }
            EventKind::Citations { items } => {
                self.citations = items.clone();
                vec![Change::Citations]
            }
            EventKind::MemoryUsed { memories } => {
                self.memories = memories.clone();
                vec![Change::Memories]
            }
            EventKind::Todo { items, version, .. } => {
                // An older list arriving after a newer one (two calls of one
                // step) changes nothing.
                if *version != 0 && *version < self.todos_version {
                    return vec![];
                }
                self.todos_version = *version;
                self.todos = Some(items.clone());
                vec![Change::Todos]
            }
            EventKind::Heartbeat { .. } => vec![],
            EventKind::Done {
                model,
                usage,
                ttft_ms,
                duration_ms,
                ..
            } => {
                self.model = model.clone();
                self.usage = *usage;
                self.ttft_ms = *ttft_ms;
                self.duration_ms = Some(*duration_ms);
                self.outcome = Some(Outcome::Done);
                vec![Change::Finished]
            }
            EventKind::Error(e) => {
                self.outcome = Some(Outcome::Failed(e.clone()));
                vec![Change::Finished]
            }
            EventKind::Cancelled { by } => {
                self.outcome = Some(Outcome::Cancelled { by: by.clone() });
                vec![Change::Finished]
            }
        }
    }

    /// Each kept step's text, in step order, as streamed.
    pub fn streamed_text(&self) -> String {
        self.steps.values().map(|s| s.text.as_str()).collect()
    }

    /// The reply's text as a person reads it: every kept step's text, trimmed,
    /// steps apart by a blank line.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .steps
            .values()
            .map(|s| s.text.trim())
            .filter(|t| !t.is_empty())
            .collect();
        parts.join("\n\n")
    }

    /// The kept steps' thinking, in order.
    pub fn thinking(&self) -> String {
        self.steps.values().map(|s| s.thinking.as_str()).collect()
    }

    /// Whether any step has text.
    pub fn has_text(&self) -> bool {
        self.steps.values().any(|s| !s.text.is_empty())
    }

    pub fn succeeded(&self) -> bool {
        self.outcome == Some(Outcome::Done)
    }

    pub fn is_final(&self) -> bool {
        self.outcome.is_some()
    }

    /// The approval with this id.
    pub fn approval(&self, id: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.approval_id == id)
    }

    /// The question asked and not answered yet, if any (the one a reply
    /// answers).
    pub fn open_question(&self) -> Option<&Question> {
        self.questions.iter().rev().find(|q| q.answered.is_none())
    }

    /// The plan proposed and not decided yet, if any (the one a reply
    /// revises).
    pub fn open_plan(&self) -> Option<&Plan> {
        self.plans.iter().rev().find(|p| p.decided.is_none())
    }

    /// The decision on `call`'s approval, if it needed one and it was answered.
    pub fn decision(&self, call: &ToolCall) -> Option<&Decided> {
        call.approval_id
            .as_deref()
            .and_then(|id| self.approval(id))
            .and_then(|a| a.decided.as_ref())
    }

    pub fn tool_status(&self, call: &ToolCall) -> ToolStatus {
        if let Some(ended) = &call.ended {
            return if ended.ok {
                ToolStatus::Ok
            } else {
                ToolStatus::Failed
            };
        }
        match (&call.approval_id, self.decision(call)) {
            (Some(_), None) => ToolStatus::AwaitingApproval,
            (Some(_), Some(d)) if d.decision != Verdict::Approved => ToolStatus::Failed,
            _ => ToolStatus::Running,
        }
    }
}

//! Run events: the one protocol every client speaks (docs/protocol.md,
//! "Run events").
//!
//! An event is `{"type", "run_id", "seq", "ts", …fields}`. `seq` starts at 1, has
//! no gaps and continues across attempts; it doubles as the SSE `id`. Events are
//! serialised once by the worker into a [`Frame`]; the bus and the gateway move the
//! frame's JSON around without re-encoding it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::{Citation, ErrorBody, UsageDto};
use crate::ids::{MessageId, RunId, SessionId};
use crate::states::{DelegationStatus, PlanStatus, QuestionStatus, Verdict};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunEvent {
    #[schema(value_type = String)]
    pub run_id: RunId,
    pub seq: u64,
    /// Unix milliseconds.
    pub ts: i64,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    RunStarted {
        #[schema(value_type = String)]
        session_id: SessionId,
        model: String,
        attempt: u32,
        resume_step: u32,
    },
    Text {
        step: u32,
        delta: String,
    },
    Thinking {
        step: u32,
        delta: String,
    },
    ToolStart {
        step: u32,
        call_id: String,
        name: String,
        args: serde_json::Value,
    },
    ToolEnd {
        step: u32,
        call_id: String,
        name: String,
        ok: bool,
        /// A preview of at most 2000 characters.
        output: String,
        duration_ms: u64,
    },
    /// A tool call waits for a person's yes (`POST /v1/approvals/{approval_id}`);
    /// the run holds no worker meanwhile.
    ApprovalRequired {
        step: u32,
        approval_id: String,
        call_id: String,
        name: String,
        args: serde_json::Value,
        /// Unix milliseconds; unanswered by then, it counts as denied (`expired`).
        expires_at: i64,
    },
    /// An approval was answered: `approved`, `denied` or `expired`. Published by
    /// the worker that resumes the run, just after the decision.
    ApprovalDecided {
        step: u32,
        approval_id: String,
        call_id: String,
        name: String,
        decision: Verdict,
        /// Who decided (a username); none when it expired.
        by: Option<String>,
    },
    /// The agent asks the person a question (`ask_user`) and the run waits
    /// for the first answer (`POST /v1/questions/{question_id}`, a Lark card's
    /// button or a plain reply in the chat), holding no worker
    /// (`waiting_input`).
    Question {
        step: u32,
        question_id: String,
        call_id: String,
        question: String,
        /// Choices offered; empty for a free answer.
        options: Vec<String>,
        /// Several options may be chosen.
        multiple: bool,
        /// A typed answer is accepted besides the options.
        allow_text: bool,
        /// Unix milliseconds; unanswered by then, the model is told nobody
        /// answered (`expired`).
        expires_at: i64,
    },
    /// A question was answered (`answered`, with the answer) or expired.
    /// Published by the worker that resumes the run.
    QuestionAnswered {
        step: u32,
        question_id: String,
        call_id: String,
        status: QuestionStatus,
        /// The chosen options, or the one typed answer; empty when it expired.
        answer: Vec<String>,
        /// Who answered (a username).
        by: Option<String>,
    },
    /// Plan mode: the agent's plan (the step's text, as Markdown); the run
    /// waits for the first decision (`POST /v1/plans/{plan_id}`, a Lark
    /// card's button or a plain reply, the REPL), holding no worker
    /// (`waiting_input`). Nothing that changes anything ran before it.
    PlanProposed {
        step: u32,
        plan_id: String,
        call_id: String,
        markdown: String,
        /// Unix milliseconds; undecided by then, the plan `expired` and the
        /// run ends with it as its reply.
        expires_at: i64,
    },
    /// A plan was decided (`approved`: the run goes on with every tool;
    /// `revised`: a new plan follows; `rejected`, `expired`: the run ends).
    /// Published by the worker that resumes the run.
    PlanDecided {
        step: u32,
        plan_id: String,
        call_id: String,
        status: PlanStatus,
        comment: Option<String>,
        /// Who decided (a username).
        by: Option<String>,
    },
    /// Delegation: the agent handed `task` to the agent `agent` (`delegate`).
    /// The task is a run of its own (`run_id`) in a child session of the same
    /// person (`session_id`), crash-safe like any run and cancelled with this
    /// one: attach to `run_id`'s events to watch it. This run waits for the
    /// step's delegations holding no worker (`waiting_agents`).
    AgentStart {
        step: u32,
        delegation_id: String,
        call_id: String,
        agent: String,
        task: String,
        /// The child's session.
        #[schema(value_type = String)]
        child_session_id: SessionId,
        /// The child's run: attach to its events to watch it.
        #[schema(value_type = String)]
        child_run_id: RunId,
    },
    /// A delegated run ended: `succeeded` (its answer is the call's result,
    /// in the `tool_end` that follows), `failed` or `cancelled`. Published by
    /// the worker that resumes this run.
    AgentEnd {
        step: u32,
        delegation_id: String,
        call_id: String,
        agent: String,
        #[schema(value_type = String)]
        child_run_id: RunId,
        status: DelegationStatus,
    },
    Usage(UsageDto),
    /// The session's todo list changed (`todo_update`): the whole list after
    /// the change. The list is the session's (`GET /v1/sessions/{id}/todos`).
    /// `version` counts the session's lists up: calls of one step run at once
    /// and their events may arrive in any order, so a client keeps the list
    /// of the highest version (0: a log written before versions, newest last).
    Todo {
        step: u32,
        #[serde(default)]
        version: u64,
        items: Vec<crate::api::TodoItem>,
    },
    /// The memories of the person (`GET /v1/me/memories`) this run's prompt
    /// carried, sent before the first step; stored on the run
    /// (`memories_used`).
    MemoryUsed {
        memories: Vec<crate::api::MemoryRef>,
    },
    /// The sources the answer cites as `[n]`, sent just before `done` and
    /// stored with the reply (`citations` on its message).
    Citations {
        items: Vec<Citation>,
    },
    /// A transient upstream error: the step restarts after `delay_ms`; clients drop
    /// the partial text/thinking of `step` received so far.
    Retrying {
        step: u32,
        attempt: u32,
        reason: String,
        delay_ms: u64,
    },
    /// Nothing else was said for the heartbeat interval (30 s), while the
    /// model or a tool is still at work. `elapsed_ms`: since this attempt (or
    /// its resume after a wait) started; `idle_ms`: since it last said anything
    /// but a heartbeat (absent from logs written before it was sent: 0).
    Heartbeat {
        elapsed_ms: u64,
        #[serde(default)]
        idle_ms: u64,
    },
    Done {
        #[schema(value_type = String)]
        message_id: MessageId,
        model: String,
        usage: UsageDto,
        ttft_ms: Option<u64>,
        duration_ms: u64,
    },
    Error(ErrorBody),
    Cancelled {
        by: String,
    },
}

impl EventKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::Text { .. } => "text",
            EventKind::Thinking { .. } => "thinking",
            EventKind::ToolStart { .. } => "tool_start",
            EventKind::ToolEnd { .. } => "tool_end",
            EventKind::ApprovalRequired { .. } => "approval_required",
            EventKind::ApprovalDecided { .. } => "approval_decided",
            EventKind::Question { .. } => "question",
            EventKind::QuestionAnswered { .. } => "question_answered",
            EventKind::PlanProposed { .. } => "plan_proposed",
            EventKind::PlanDecided { .. } => "plan_decided",
            EventKind::AgentStart { .. } => "agent_start",
            EventKind::AgentEnd { .. } => "agent_end",
            EventKind::Usage(_) => "usage",
            EventKind::MemoryUsed { .. } => "memory_used",
            EventKind::Todo { .. } => "todo",
            EventKind::Citations { .. } => "citations",
            EventKind::Retrying { .. } => "retrying",
            EventKind::Heartbeat { .. } => "heartbeat",
            EventKind::Done { .. } => "done",
            EventKind::Error(_) => "error",
            EventKind::Cancelled { .. } => "cancelled",
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::Done { .. } | EventKind::Error(_) | EventKind::Cancelled { .. }
        )
    }
}

/// One message of a run's `text/event-stream`, as the OpenAPI document describes
/// it (never built in code: the gateway writes frames directly).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RunEventMessage {
    /// The event's `seq`: send it back as `Last-Event-ID` to re-attach.
    pub id: String,
    /// The event's `type`.
    pub event: String,
    /// The event as JSON: a [`RunEvent`].
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// An encoded event as it travels through the bus: the seq and type for routing,
/// the JSON for the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub seq: u64,
    pub ty: Arc<str>,
    pub json: Arc<str>,
}

impl Frame {
    pub fn encode(ev: &RunEvent) -> Frame {
        Frame {
            seq: ev.seq,
            ty: Arc::from(ev.kind.type_name()),
            json: Arc::from(serde_json::to_string(ev).expect("events always serialise")),
        }
    }

    /// Rebuild a frame from stored JSON (the bus log).
    pub fn from_json(json: &str) -> Option<Frame> {
        #[derive(Deserialize)]
        struct Head<'a> {
            seq: u64,
            #[serde(borrow, rename = "type")]
            ty: &'a str,
        }
        let head: Head<'_> = serde_json::from_str(json).ok()?;
        Some(Frame {
            seq: head.seq,
            ty: Arc::from(head.ty),
            json: Arc::from(json),
        })
    }

    pub fn is_terminal(&self) -> bool {
        matches!(&*self.ty, "done" | "error" | "cancelled")
    }

    pub fn decode(&self) -> Option<RunEvent> {
        serde_json::from_str(&self.json).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shape_matches_the_contract() {
        let ev = RunEvent {
            run_id: RunId("r1".into()),
            seq: 7,
            ts: 1_764_460_000_000,
            kind: EventKind::Text {
                step: 1,
                delta: "你好".into(),
            },
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type":"text","run_id":"r1","seq":7,"ts":1764460000000i64,"step":1,"delta":"你好"})
        );
        let frame = Frame::encode(&ev);
        assert_eq!(&*frame.ty, "text");
        assert_eq!(Frame::from_json(&frame.json), Some(frame.clone()));
        assert_eq!(frame.decode(), Some(ev));
    }

    #[test]
    fn usage_and_error_flatten_their_fields() {
        let ev = RunEvent {
            run_id: RunId("r".into()),
            seq: 2,
            ts: 0,
            kind: EventKind::Error(ErrorBody {
                code: "upstream".into(),
                message: "boom".into(),
            }),
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["code"], "upstream");
        assert!(Frame::encode(&ev).is_terminal());
    }

    #[test]
    fn a_heartbeat_from_before_idle_ms_still_decodes() {
        let old = r#"{"type":"heartbeat","run_id":"r","seq":3,"ts":0,"elapsed_ms":30000}"#;
        let ev: RunEvent = serde_json::from_str(old).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::Heartbeat {
                elapsed_ms: 30_000,
                idle_ms: 0
            }
        );
    }
}

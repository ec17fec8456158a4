//! The card view folded from event sequences a user would see.

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

fn required(seq: u64, call: &str) -> RunEvent {
    ev(
        seq,
        EventKind::ApprovalRequired {
            step: 1,
            approval_id: format!("ap_{call}"),
            call_id: call.into(),
            name: "current_time".into(),
            args: json!({"tz": "<at id=all></at>"}),
            expires_at: 99,
        },
    )
}

fn decided(seq: u64, call: &str, decision: &str, by: Option<&str>) -> RunEvent {
    ev(
        seq,
        EventKind::ApprovalDecided {
            step: 1,
            approval_id: format!("ap_{call}"),
            call_id: call.into(),
            name: "current_time".into(),
            decision: decision.into(),
            by: by.map(str::to_owned),
        },
    )
}

#[test]
fn a_held_call_waits_then_says_who_answered_and_runs() {
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    v.apply(&ev(2, text(1, "Let me check.")));
    v.apply(&required(3, "c1"));
    let card = v.card();
    assert_eq!(card.state, CardState::AwaitingApproval);
    assert_eq!(card.body, "Let me check.\n\n_⏸ waiting for approval_");
    assert_eq!(card.tools[0].status, ToolStatus::AwaitingApproval);
    assert!(
        card.tools[0].detail.contains("&lt;at id=all>")
            && card.tools[0].detail.ends_with("waiting for approval"),
        "{}",
        card.tools[0].detail
    );
    let open = v.open_approvals();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].approval_id, "ap_c1");

    // The resuming attempt: decision, `run_started {resume_step: 2}`, the call.
    v.apply(&decided(4, "c1", "approved", Some("alice")));
    v.apply(&ev(5, started(1, 2)));
    assert!(v.open_approvals().is_empty());
    assert_eq!(v.card().state, CardState::Streaming, "blue again");
    assert_eq!(
        v.card().body,
        "Let me check.",
        "the waiting step's text stays"
    );
    v.apply(&ev(
        6,
        EventKind::ToolStart {
            step: 1,
            call_id: "c1".into(),
            name: "current_time".into(),
            args: json!({}),
        },
    ));
    assert_eq!(v.card().tools.len(), 1, "one line per call");
    v.apply(&ev(
        7,
        EventKind::ToolEnd {
            step: 1,
            call_id: "c1".into(),
            name: "current_time".into(),
            ok: true,
            output: "noon".into(),
            duration_ms: 3,
        },
    ));
    let line = &v.card().tools[0];
    assert_eq!(line.status, ToolStatus::Succeeded);
    assert!(
        line.detail.ends_with("approved by alice · 3 ms"),
        "{}",
        line.detail
    );
}

#[test]
fn denied_and_expired_calls_read_as_refused() {
    let mut v = ReplyView::default();
    v.apply(&required(1, "c1"));
    v.apply(&required(2, "c2"));
    v.apply(&decided(3, "c1", "denied", Some("bob")));
    assert_eq!(v.open_approvals().len(), 1, "c2 still waits");
    assert_eq!(v.card().state, CardState::AwaitingApproval);
    v.apply(&decided(4, "c2", "expired", None));
    let card = v.card();
    assert_eq!(card.state, CardState::Thinking);
    assert_eq!(card.tools[0].status, ToolStatus::Failed);
    assert!(card.tools[0].detail.ends_with("denied by bob"));
    assert!(card.tools[1].detail.ends_with("expired"));
    // A cancelled run shows no buttons, whatever was pending.
    let mut cancelled = ReplyView::default();
    cancelled.apply(&required(1, "c1"));
    cancelled.apply(&ev(2, EventKind::Cancelled { by: "lark".into() }));
    assert!(cancelled.open_approvals().is_empty());
}

//! The card view folded from event sequences a user would see.

use serde_json::json;
use weft_lark::text::say;
use weft_shared::api::{ErrorBody, UsageDto};
use weft_shared::ids::{MessageId, RunId, SessionId};

use super::*;

fn ev(seq: u64, kind: EventKind) -> RunEvent {
    at(seq, 0, kind)
}

/// An event published at `ts` (unix ms).
fn at(seq: u64, ts: i64, kind: EventKind) -> RunEvent {
    RunEvent {
        run_id: RunId("r".into()),
        seq,
        ts,
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
    assert_eq!(v.card(Lang::En).state, CardState::Thinking);
    assert!(!v.has_content(), "nothing to show yet");
    v.apply(&ev(
        2,
        EventKind::ToolStart {
            step: 1,
            call_id: "c".into(),
            name: "current_time".into(),
            args: json!({"tz": "UTC"}),
        },
    ));
    assert_eq!(v.card(Lang::En).tools[0].status, ToolStatus::Running);
    assert!(v.has_content());
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
        input: 1_500,
        output: 20,
        cache_read: 1_000,
        context_tokens: 640,
        context_window: 32_000,
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
    let card = v.card(Lang::En);
    assert!(v.is_final());
    assert_eq!(card.state, CardState::Done);
    assert_eq!(card.body, "Hello world");
    assert_eq!(card.tools[0].status, ToolStatus::Succeeded);
    assert_eq!(card.tools[0].args, json!({"tz": "UTC"}));
    assert_eq!(card.tools[0].result.as_deref(), Some("x"));
    assert_eq!(card.tools[0].duration_ms, Some(12));
    let footer = card.footer.expect("a footer");
    assert_eq!(
        say::footer(Lang::En, &footer),
        "2.0 s · 500 (+1.0K cached) → 20 tokens · 10.0 tok/s · 2% context · mock"
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
    assert_eq!(failed.card(Lang::En).state, CardState::Failed);
    assert_eq!(failed.card(Lang::En).error.as_deref(), Some("boom"));
    assert_eq!(failed.card(Lang::En).body, "partial");
    v.apply(&ev(2, EventKind::Cancelled { by: "lark".into() }));
    assert_eq!(v.card(Lang::En).state, CardState::Cancelled);
    assert_eq!(v.card(Lang::En).body, "partial");
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
            decision: decision.parse().expect("a verdict"),
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
    let card = v.card(Lang::En);
    assert_eq!(card.state, CardState::AwaitingApproval);
    assert_eq!(card.body, "Let me check.");
    assert_eq!(card.tools[0].status, ToolStatus::AwaitingApproval);
    assert_eq!(card.tools[0].approval, Some(ToolApproval::Waiting));
    let open = v.open_approvals();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].approval_id, "ap_c1");

    // The resuming attempt: decision, `run_started {resume_step: 2}`, the call.
    v.apply(&decided(4, "c1", "approved", Some("alice")));
    v.apply(&ev(5, started(1, 2)));
    assert!(v.open_approvals().is_empty());
    assert_eq!(v.card(Lang::En).state, CardState::Streaming, "blue again");
    assert_eq!(
        v.card(Lang::En).body,
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
    assert_eq!(v.card(Lang::En).tools.len(), 1, "one line per call");
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
    let line = &v.card(Lang::En).tools[0];
    assert_eq!(line.status, ToolStatus::Succeeded);
    assert_eq!(
        line.approval,
        Some(ToolApproval::Decided {
            verdict: Verdict::Approved,
            by: Some("alice".into())
        })
    );
    assert_eq!(line.duration_ms, Some(3));
}

#[test]
fn denied_and_expired_calls_read_as_refused() {
    let mut v = ReplyView::default();
    v.apply(&required(1, "c1"));
    v.apply(&required(2, "c2"));
    v.apply(&decided(3, "c1", "denied", Some("bob")));
    assert_eq!(v.open_approvals().len(), 1, "c2 still waits");
    assert_eq!(v.card(Lang::En).state, CardState::AwaitingApproval);
    v.apply(&decided(4, "c2", "expired", None));
    let card = v.card(Lang::En);
    assert_eq!(card.state, CardState::Thinking);
    assert_eq!(card.tools[0].status, ToolStatus::Failed);
    let answers: Vec<Option<(Verdict, Option<&str>, u64)>> = v
        .approvals()
        .iter()
        .map(|(_, shown)| match shown {
            ApprovalShown::Answered(a) => Some((a.decision, a.by.as_deref(), a.seq)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            Some((Verdict::Denied, Some("bob"), 3)),
            Some((Verdict::Expired, None, 4))
        ]
    );
    // A cancelled run shows no buttons, whatever was pending: the card closes.
    let mut cancelled = ReplyView::default();
    cancelled.apply(&required(1, "c1"));
    cancelled.apply(&ev(2, EventKind::Cancelled { by: "lark".into() }));
    assert!(cancelled.open_approvals().is_empty());
    assert_eq!(cancelled.approvals()[0].1, ApprovalShown::Closed);
}

fn think(step: u32, delta: &str) -> EventKind {
    EventKind::Thinking {
        step,
        delta: delta.into(),
    }
}

#[test]
fn reasoning_shows_while_thinking_then_folds_with_its_time_and_tokens() {
    let mut v = ReplyView::default();
    v.apply(&at(1, 1_000, started(1, 1)));
    v.apply(&at(2, 1_000, think(1, "Let me think ")));
    assert!(v.has_content(), "thoughts are worth a card");
    v.apply(&at(3, 3_000, think(1, "about this carefully.")));
    let r = v.card(Lang::En).reasoning.expect("reasoning shown");
    assert!(r.thinking, "open while thinking");
    assert_eq!(r.text, "Let me think about this carefully.");
    assert_eq!(r.ms, 2_000);
    assert_eq!(r.tokens, 9, "estimated: 34 ASCII characters");
    assert_eq!(v.card(Lang::En).state, CardState::Thinking);

    v.apply(&at(4, 4_300, text(1, "Answer")));
    v.apply(&at(
        5,
        4_400,
        EventKind::Usage(UsageDto {
            reasoning: 1_200,
            ..UsageDto::default()
        }),
    ));
    let r = v.card(Lang::En).reasoning.unwrap();
    assert!(!r.thinking, "folded once the answer starts");
    assert_eq!(
        (r.ms, r.tokens),
        (3_300, 1_200),
        "the provider's count wins"
    );

    // A retried step thinks again from scratch.
    v.apply(&at(
        6,
        5_000,
        EventKind::Retrying {
            step: 1,
            attempt: 1,
            reason: "503".into(),
            delay_ms: 1,
        },
    ));
    assert!(v.card(Lang::En).reasoning.is_none());
    v.apply(&at(7, 6_000, think(1, "again")));
    v.apply(&at(8, 6_500, text(1, "A")));
    v.apply(&at(9, 7_000, EventKind::Cancelled { by: "u".into() }));
    let r = v.card(Lang::En).reasoning.unwrap();
    assert!(!r.thinking);
    assert_eq!(r.ms, 500);
}

#[test]
fn a_thinking_reply_waiting_for_approval_folds_its_reasoning() {
    let mut v = ReplyView::default();
    v.apply(&at(1, 0, think(1, "I need the time")));
    v.apply(&required(2, "c1"));
    let card = v.card(Lang::Zh);
    assert_eq!(card.state, CardState::AwaitingApproval);
    assert_eq!(card.lang, Lang::Zh);
    assert!(!card.reasoning.unwrap().thinking);
}

#[test]
fn citations_become_the_cards_sources() {
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    v.apply(&ev(2, text(1, "25 days [1].")));
    v.apply(&ev(
        3,
        EventKind::Citations {
            items: vec![weft_shared::api::Citation {
                n: 1,
                knowledge_id: "k".into(),
                document_id: "d".into(),
                document_name: "handbook.pdf".into(),
                chunk_id: "c".into(),
                snippet: "Everyone gets 25 days.".into(),
                position: "page 7".into(),
                page: Some(7),
            }],
        },
    ));
    let card = v.card(Lang::En);
    assert_eq!(
        card.sources,
        vec![Source {
            n: 1,
            document: "handbook.pdf".into(),
            position: "page 7".into()
        }]
    );
}

fn asked(seq: u64, id: &str) -> RunEvent {
    ev(
        seq,
        EventKind::Question {
            step: 1,
            question_id: id.into(),
            call_id: format!("call_{id}"),
            question: "Which colour?".into(),
            options: vec!["red".into(), "blue".into()],
            multiple: false,
            allow_text: false,
            expires_at: 99,
        },
    )
}

#[test]
fn a_question_waits_orange_then_says_who_answered() {
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    v.apply(&asked(2, "q_1"));
    assert!(v.has_content(), "a question is worth a card at once");
    assert_eq!(v.card(Lang::En).state, CardState::AwaitingAnswer);
    let shown: Vec<_> = v.questions().into_iter().map(|(_, s)| s).collect();
    assert_eq!(shown, [QuestionShown::Open]);
    // The resuming attempt announces the answer and goes on.
    v.apply(&ev(3, started(1, 2)));
    v.apply(&ev(
        4,
        EventKind::QuestionAnswered {
            step: 1,
            question_id: "q_1".into(),
            call_id: "call_q_1".into(),
            status: weft_store::QuestionStatus::Answered,
            answer: vec!["blue".into()],
            by: Some("Alice".into()),
        },
    ));
    assert_eq!(v.card(Lang::En).state, CardState::Thinking);
    match v.questions()[..] {
        [(q, QuestionShown::Answered(a))] => {
            assert_eq!(q.question_id, "q_1");
            assert_eq!(
                (a.answer.as_slice(), a.by.as_deref()),
                (&["blue".to_owned()][..], Some("Alice"))
            );
        }
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn a_question_left_open_by_a_stopped_reply_is_closed() {
    let mut v = ReplyView::default();
    v.apply(&asked(1, "q_1"));
    v.apply(&ev(2, EventKind::Cancelled { by: "lark".into() }));
    assert_eq!(v.card(Lang::En).state, CardState::Cancelled);
    let shown: Vec<_> = v.questions().into_iter().map(|(_, s)| s).collect();
    assert_eq!(shown, [QuestionShown::Closed]);
}

fn proposed(seq: u64, step: u32, id: &str) -> RunEvent {
    ev(
        seq,
        EventKind::PlanProposed {
            step,
            plan_id: id.into(),
            call_id: format!("plan_{step}"),
            markdown: "1. Read the code.".into(),
            expires_at: 99,
        },
    )
}

#[test]
fn a_plan_waits_for_its_decision_and_a_revised_one_is_followed_by_the_next() {
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    v.apply(&ev(2, text(1, "1. Read the code.")));
    v.apply(&proposed(3, 1, "pl_1"));
    let card = v.card(Lang::En);
    assert_eq!(card.state, CardState::AwaitingDecision);
    let shown: Vec<_> = v.plans().into_iter().map(|(_, s)| s).collect();
    assert_eq!(shown, [PlanShown::Open]);
    // A reply in the chat revised it: the resuming attempt announces that,
    // and the agent plans again.
    v.apply(&ev(4, started(1, 2)));
    v.apply(&ev(
        5,
        EventKind::PlanDecided {
            step: 1,
            plan_id: "pl_1".into(),
            call_id: "plan_1".into(),
            status: weft_store::PlanStatus::Revised,
            comment: Some("add a test first".into()),
            by: Some("Alice".into()),
        },
    ));
    assert_eq!(
        v.card(Lang::En).state,
        CardState::Streaming,
        "working again"
    );
    v.apply(&ev(6, text(2, "1. Add a test.")));
    v.apply(&proposed(7, 2, "pl_2"));
    match v.plans()[..] {
        [
            (first, PlanShown::Decided(decided)),
            (second, PlanShown::Open),
        ] => {
            assert_eq!(
                (first.plan_id.as_str(), second.plan_id.as_str()),
                ("pl_1", "pl_2")
            );
            assert_eq!(decided.comment.as_deref(), Some("add a test first"));
        }
        ref other => panic!("{other:?}"),
    }
    assert_eq!(v.card(Lang::En).state, CardState::AwaitingDecision);
    // Stopped while it waits: the open plan's card closes.
    v.apply(&ev(8, EventKind::Cancelled { by: "lark".into() }));
    assert_eq!(v.plans()[1].1, PlanShown::Closed);
}

#[test]
fn the_view_holds_the_todo_list_the_reply_last_sent() {
    use weft_shared::api::{TodoItem, TodoStatus};
    let item = |id: &str, status| TodoItem {
        id: id.into(),
        text: format!("item {id}"),
        status,
    };
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    assert!(v.todos().is_empty(), "no list, no card");
    let todo = |items| EventKind::Todo {
        step: 1,
        version: 0,
        items,
    };
    v.apply(&ev(2, todo(vec![item("1", TodoStatus::Pending)])));
    let both = vec![item("1", TodoStatus::Done), item("2", TodoStatus::Pending)];
    v.apply(&ev(3, todo(both.clone())));
    v.apply(&ev(4, text(2, "Half done.")));
    assert_eq!(v.todos(), both.as_slice());
}

#[test]
fn a_call_running_for_minutes_puts_still_working_on_the_card_until_it_ends() {
    let mut v = ReplyView::default();
    v.apply(&ev(1, started(1, 1)));
    v.apply(&ev(
        2,
        EventKind::ToolStart {
            step: 1,
            call_id: "c".into(),
            name: "web_fetch".into(),
            args: json!({"url": "https://example.com"}),
        },
    ));
    let beat = |elapsed_ms, idle_ms| EventKind::Heartbeat {
        elapsed_ms,
        idle_ms,
    };
    v.apply(&ev(3, beat(60_000, 30_000)));
    assert_eq!(v.card(Lang::En).still_working, None, "30 s is not long");
    v.apply(&ev(4, beat(210_000, 180_000)));
    assert_eq!(v.card(Lang::En).still_working, Some(210_000));
    v.apply(&ev(
        5,
        EventKind::ToolEnd {
            step: 1,
            call_id: "c".into(),
            name: "web_fetch".into(),
            ok: true,
            output: "page".into(),
            duration_ms: 200_000,
        },
    ));
    assert_eq!(v.card(Lang::En).still_working, None);
}

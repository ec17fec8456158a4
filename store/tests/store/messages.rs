//! Messages: conversation order across runs and steps, paging back through it,
//! and the context window a run is given (`context_messages`).

use serde_json::json;
use weft_shared::api::ToolCallDto;
use weft_shared::ids::{MessageId, RunId, SessionId, UserId};
use weft_store::{
    FinishOutcome, Message, RunEnd, RunLimits, SendOutcome, StepCheckpoint, StoreError, ToolResult,
    valid_cursor,
};
use weft_wire::reasoning::Reasoning;

use crate::both_backends;
use crate::harness::{Db, claim, req, session, start, user};

both_backends!(
    conversation_order_across_runs_and_steps,
    pages_go_back_without_gaps_or_repeats,
    context_skips_waiting_messages,
    context_window_never_starts_with_a_tool_result,
    messages_are_scoped_to_the_session_owner,
    a_reader_of_what_changed_sees_what_a_full_read_sees,
);

/// A conversation: "hello" → step 1 asks two tools → final reply, and "also
/// this" sent while the run was busy, which becomes the follow-up run.
struct Conversation {
    user: UserId,
    session: SessionId,
    first: RunId,
    followup: RunId,
    hello: MessageId,
    final_reply: MessageId,
}

fn tool_calls() -> Vec<ToolCallDto> {
    vec![
        ToolCallDto {
            id: "call_1".into(),
            name: "current_time".into(),
            args: json!({"tz": "UTC"}),
        },
        ToolCallDto {
            id: "call_2".into(),
            name: "web_fetch".into(),
            args: json!({"url": "https://example.com"}),
        },
    ]
}

/// Step 1's reasoning: a signed block and a redacted one, as Anthropic sends them.
fn step_reasoning() -> Vec<Reasoning> {
    vec![
        Reasoning::Thinking {
            thinking: "The user wants the time.".into(),
            signature: "c2lnbmVk".into(),
        },
        Reasoning::RedactedThinking {
            data: "RW5jcnlwdGVk".into(),
        },
    ]
}

async fn conversation(db: &Db) -> Conversation {
    let s = &db.store;
    let alice = user(db, "alice").await;
    let sess = session(db, &alice).await;
    let first = start(db, &alice.id, &sess.id, "hello").await;
    let claimed = claim(db, &first.run_id, "w1").await;
    let cp = StepCheckpoint {
        reasoning: step_reasoning(),
        step: 1,
        content: "let me check".into(),
        tool_calls: tool_calls(),
        results: vec![
            ToolResult {
                call_id: "call_1".into(),
                name: "current_time".into(),
                content: "12:00".into(),
            },
            ToolResult {
                call_id: "call_2".into(),
                name: "web_fetch".into(),
                content: "<html>".into(),
            },
        ],
    };
    assert!(
        s.checkpoint_step(&first.run_id, "w1", &sess.id, &cp, 10)
            .await
            .unwrap()
    );
    let waiting = s
        .send_message(&req(&alice.id, &sess.id, "also this"))
        .await
        .unwrap();
    assert!(matches!(waiting, SendOutcome::Queued { .. }), "{waiting:?}");
    let FinishOutcome::Finished {
        message_id: Some(final_reply),
        followup: Some(followup),
        ..
    } = s
        .finish_run(
            &claimed,
            "w1",
            &RunEnd::Succeeded {
                content: "It is noon".into(),
                step: 2,
                citations: Vec::new(),
                reasoning: vec![Reasoning::Thinking {
                    thinking: "Noon, then.".into(),
                    signature: String::new(),
                }],
            },
            Default::default(),
            None,
            &RunLimits::unlimited(),
        )
        .await
        .unwrap()
    else {
        panic!("expected a finished run with a follow-up");
    };
    Conversation {
        user: alice.id,
        session: sess.id,
        first: first.run_id,
        followup,
        hello: first.message_id,
        final_reply,
    }
}

fn shape(msgs: &[Message]) -> Vec<(String, String)> {
    msgs.iter()
        .map(|m| (m.role.clone(), m.content.clone()))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

async fn conversation_order_across_runs_and_steps(db: Db) {
    let c = conversation(&db).await;
    let (msgs, next) = db
        .store
        .list_messages(&c.user, &c.session, 50, None)
        .await
        .unwrap();
    assert_eq!(next, None);
    assert_eq!(
        shape(&msgs),
        pairs(&[
            ("user", "hello"),
            ("assistant", "let me check"),
            ("tool", "12:00"),
            ("tool", "<html>"),
            ("assistant", "It is noon"),
            ("user", "also this"),
        ])
    );
    let runs: Vec<Option<RunId>> = msgs.iter().map(|m| m.run_id.clone()).collect();
    let (a, b) = (Some(c.first.clone()), Some(c.followup.clone()));
    assert_eq!(runs, [a.clone(), a.clone(), a.clone(), a.clone(), a, b]);
    assert_eq!(
        msgs.iter().map(|m| m.step).collect::<Vec<_>>(),
        [None, Some(1), Some(1), Some(1), Some(2), None]
    );
    // The step's tool calls and the results' ids round-trip, and the reasoning
    // before the calls and the reply, block by block (the API shows its text).
    assert_eq!(msgs[1].tool_calls, tool_calls());
    assert_eq!(msgs[1].reasoning, step_reasoning());
    assert_eq!(
        msgs[1].to_dto().thinking.as_deref(),
        Some("The user wants the time.")
    );
    assert_eq!(msgs[4].to_dto().thinking.as_deref(), Some("Noon, then."));
    assert!(msgs[0].reasoning.is_empty() && msgs[2].to_dto().thinking.is_none());
    assert_eq!(
        (msgs[2].call_id.as_str(), msgs[2].name.as_deref()),
        ("call_1", Some("current_time"))
    );
    assert_eq!(
        (msgs[3].call_id.as_str(), msgs[3].name.as_deref()),
        ("call_2", Some("web_fetch"))
    );
    assert_eq!(msgs[0].id, c.hello);
    assert_eq!(msgs[4].id, c.final_reply);
    assert!(msgs.iter().all(|m| m.session_id == c.session));

    // One message by id.
    let got = db.store.get_message(&c.final_reply).await.unwrap().unwrap();
    assert_eq!(got, msgs[4]);
    assert_eq!(db.store.get_message(&MessageId::new()).await.unwrap(), None);
    // The run records its final message.
    let run = db.store.get_run(&c.user, &c.first).await.unwrap();
    assert_eq!(run.final_message_id, Some(c.final_reply.0.clone()));
}

async fn pages_go_back_without_gaps_or_repeats(db: Db) {
    let c = conversation(&db).await;
    let (everything, _) = db
        .store
        .list_messages(&c.user, &c.session, 50, None)
        .await
        .unwrap();
    let mut seen: Vec<Message> = Vec::new();
    let mut before: Option<String> = None;
    let mut sizes = Vec::new();
    loop {
        let (page, next) = db
            .store
            .list_messages(&c.user, &c.session, 2, before.as_deref())
            .await
            .unwrap();
        sizes.push(page.len());
        // Each page is oldest→newest and precedes what was already seen.
        seen.splice(0..0, page);
        match next {
            Some(cursor) => {
                assert!(valid_cursor(&cursor), "{cursor}");
                before = Some(cursor);
            }
            None => break,
        }
        assert!(sizes.len() < 20, "paging does not end");
    }
    assert_eq!(sizes, [2, 2, 2]);
    assert_eq!(seen, everything);
}

async fn context_skips_waiting_messages(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let run = start(&db, &alice.id, &sess.id, "first").await;
    for text in ["second", "third"] {
        let out = s
            .send_message(&req(&alice.id, &sess.id, text))
            .await
            .unwrap();
        assert!(matches!(out, SendOutcome::Queued { .. }), "{out:?}");
    }
    // The run sees only what it answers; the waiting messages are listed last.
    let ctx = s.context_messages(&sess.id, 20).await.unwrap();
    assert_eq!(shape(&ctx), pairs(&[("user", "first")]));
    let (listed, _) = s
        .list_messages(&alice.id, &sess.id, 20, None)
        .await
        .unwrap();
    assert_eq!(
        shape(&listed),
        pairs(&[("user", "first"), ("user", "second"), ("user", "third")])
    );
    assert_eq!(listed[1].run_id, None);

    // When the run ends they become the follow-up run's context, in order.
    let claimed = claim(&db, &run.run_id, "w1").await;
    s.finish_run(
        &claimed,
        "w1",
        &RunEnd::Succeeded {
            content: "one".into(),
            step: 1,
            citations: Vec::new(),
            reasoning: Vec::new(),
        },
        Default::default(),
        None,
        &RunLimits::unlimited(),
    )
    .await
    .unwrap();
    let ctx = s.context_messages(&sess.id, 20).await.unwrap();
    assert_eq!(
        shape(&ctx),
        pairs(&[
            ("user", "first"),
            ("assistant", "one"),
            ("user", "second"),
            ("user", "third"),
        ])
    );
    assert!(ctx[2].run_id.is_some() && ctx[2].run_id == ctx[3].run_id);
}

async fn context_window_never_starts_with_a_tool_result(db: Db) {
    let c = conversation(&db).await;
    let s = &db.store;
    let window = |hot: usize| {
        let s = s.clone();
        let session = c.session.clone();
        async move { shape(&s.context_messages(&session, hot).await.unwrap()) }
    };
    let tail = pairs(&[("assistant", "It is noon"), ("user", "also this")]);
    assert_eq!(window(2).await, tail);
    // The last 3 and 4 start inside step 1's tool results: those are dropped.
    assert_eq!(window(3).await, tail);
    assert_eq!(window(4).await, tail);
    assert_eq!(
        window(5).await,
        pairs(&[
            ("assistant", "let me check"),
            ("tool", "12:00"),
            ("tool", "<html>"),
            ("assistant", "It is noon"),
            ("user", "also this"),
        ])
    );
    assert_eq!(window(100).await.len(), 6);
    assert_eq!(window(1).await, pairs(&[("user", "also this")]));
}

async fn messages_are_scoped_to_the_session_owner(db: Db) {
    let c = conversation(&db).await;
    let mallory = user(&db, "mallory").await;
    let peek = db
        .store
        .list_messages(&mallory.id, &c.session, 50, None)
        .await;
    assert!(matches!(peek, Err(StoreError::NotFound)), "{peek:?}");
    let gone = db
        .store
        .list_messages(&c.user, &SessionId::new(), 50, None)
        .await;
    assert!(matches!(gone, Err(StoreError::NotFound)), "{gone:?}");
}

/// Migration 0017's contract, which a worker's copy of a session relies on:
/// after every write, the copy plus `history_since(its newest seq)` is the full
/// read, as long as `history_rev` did not move; every rewrite moves it.
async fn a_reader_of_what_changed_sees_what_a_full_read_sees(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let mut copy: Vec<Message> = Vec::new();
    let mut rev = s
        .history_state(&sess.id)
        .await
        .unwrap()
        .unwrap()
        .history_rev;
    // Brings `copy` up to date the way a worker does; true when it had to start over.
    async fn catch_up(
        s: &weft_store::Store,
        sess: &SessionId,
        copy: &mut Vec<Message>,
        rev: &mut i64,
    ) -> bool {
        let seen = copy.iter().map(|m| m.seq).max().unwrap_or(0);
        let (state, new) = s.history_since(sess, None, seen).await.unwrap().unwrap();
        assert_eq!(state, s.history_state(sess).await.unwrap().unwrap());
        let full = s.context_after(sess, None, 1000).await.unwrap();
        let again = state.history_rev != *rev;
        if again {
            *copy = full.clone();
            *rev = state.history_rev;
        } else {
            copy.extend(new);
            copy.sort_by(|a, b| a.ord.cmp(&b.ord));
        }
        assert_eq!(shape(copy), shape(&full));
        again
    }
    let first = start(&db, &alice.id, &sess.id, "first").await;
    assert!(!catch_up(s, &sess.id, &mut copy, &mut rev).await);
    // Sent while the run is busy: waits, unseen by both reads.
    let out = s
        .send_message(&req(&alice.id, &sess.id, "second"))
        .await
        .unwrap();
    assert!(matches!(out, SendOutcome::Queued { .. }), "{out:?}");
    assert!(!catch_up(s, &sess.id, &mut copy, &mut rev).await);
    let claimed = claim(&db, &first.run_id, "w1").await;
    let cp = StepCheckpoint {
        reasoning: Vec::new(),
        step: 1,
        content: "checking".into(),
        tool_calls: tool_calls(),
        results: vec![ToolResult {
            call_id: "call_1".into(),
            name: "current_time".into(),
            content: "noon".into(),
        }],
    };
    assert!(
        s.checkpoint_step(&claimed.id, "w1", &sess.id, &cp, 3)
            .await
            .unwrap()
    );
    assert!(!catch_up(s, &sess.id, &mut copy, &mut rev).await);
    assert_eq!(copy.len(), 3, "{:?}", shape(&copy));
    // The end writes the reply and the waiting message joins the follow-up run:
    // a change to a message already written.
    let end = |content: &str| RunEnd::Succeeded {
        content: content.into(),
        step: 2,
        citations: Vec::new(),
        reasoning: Vec::new(),
    };
    let out = s
        .finish_run(
            &claimed,
            "w1",
            &end("it is noon"),
            Default::default(),
            None,
            &RunLimits::unlimited(),
        )
        .await
        .unwrap();
    let FinishOutcome::Finished {
        followup: Some(followup),
        ..
    } = out
    else {
        panic!("no follow-up run: {out:?}");
    };
    assert!(catch_up(s, &sess.id, &mut copy, &mut rev).await);
    assert_eq!(shape(&copy).last().unwrap().1, "second");
    let claimed = claim(&db, &followup, "w1").await;
    s.finish_run(
        &claimed,
        "w1",
        &end("got it"),
        Default::default(),
        None,
        &RunLimits::unlimited(),
    )
    .await
    .unwrap();
    assert!(!catch_up(s, &sess.id, &mut copy, &mut rev).await);
    assert_eq!(shape(&copy).len(), 6);
    // An undo hides messages: the copy starts over too.
    let undone = s.undo_turn(&alice.id, &sess.id, None).await.unwrap();
    assert!(
        matches!(undone, weft_store::TurnOutcome::Done { .. }),
        "{undone:?}"
    );
    assert!(catch_up(s, &sess.id, &mut copy, &mut rev).await);
    assert_eq!(shape(&copy).len(), 4);
}

//! The send transaction: a new run, or — when the session is busy — wait
//! (enqueue, up to the cap), interrupt, or reject; idempotency keys replay the
//! first answer. Parallel sends to one session must serialise on it.

use weft_shared::api::Multitask;
use weft_shared::ids::SessionId;
use weft_store::{ActiveRun, FinishOutcome, RunLimits, RunStatus, SendOutcome, StoreError};

use crate::both_backends;
use crate::harness::{Db, claim, req, session, start, started, succeed_claimed, user};

both_backends!(
    a_send_starts_a_run,
    reject_refuses_while_a_run_is_active,
    enqueue_waits_up_to_the_cap,
    interrupt_cancels_and_takes_the_waiting_messages,
    idempotency_key_replays_the_first_answer,
    sends_to_unknown_or_foreign_sessions_are_not_found,
    parallel_sends_to_one_session_start_one_run,
    parallel_retries_with_one_key_write_once,
    a_shared_session_runs_as_each_speaker,
);

async fn messages_in(db: &Db, session: &SessionId) -> i64 {
    db.count(format!(
        "select count(*) from messages where session_id = '{session}'"
    ))
    .await
}

async fn runs_in(db: &Db, session: &SessionId) -> i64 {
    db.count(format!(
        "select count(*) from runs where session_id = '{session}'"
    ))
    .await
}

async fn a_send_starts_a_run(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = s
        .create_session(&alice.id, "t", "base-model", "agent", "web")
        .await
        .unwrap();
    let out = s
        .send_message(&req(&alice.id, &sess.id, "hello"))
        .await
        .unwrap();
    let SendOutcome::Started {
        run,
        interrupted: None,
    } = out
    else {
        panic!("{out:?}");
    };
    let rec = s.get_run(&alice.id, &run.run_id).await.unwrap();
    assert_eq!(rec.status, RunStatus::Queued);
    assert_eq!(rec.attempt, 0);
    assert_eq!(
        (rec.model.as_str(), rec.agent.as_str()),
        ("base-model", "agent")
    );
    assert_eq!((&rec.session_id, &rec.user_id), (&sess.id, &alice.id));
    assert_eq!(rec.finished_at, None);
    let msg = s.get_message(&run.message_id).await.unwrap().unwrap();
    assert_eq!(
        (msg.role.as_str(), msg.content.as_str(), msg.run_id.as_ref()),
        ("user", "hello", Some(&run.run_id))
    );
    assert_eq!(s.queued_runs().await.unwrap(), 1);

    // A send may pick another model and agent for its run.
    let other = session(&db, &alice).await;
    let mut r = req(&alice.id, &other.id, "hi");
    r.message.model = Some("big-model".into());
    r.message.agent = Some("chat".into());
    let run = started(s.send_message(&r).await.unwrap());
    let rec = s.get_run(&alice.id, &run.run_id).await.unwrap();
    assert_eq!(
        (rec.model.as_str(), rec.agent.as_str()),
        ("big-model", "chat")
    );
    assert_eq!(s.queued_runs().await.unwrap(), 2);
}

async fn reject_refuses_while_a_run_is_active(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let first = start(&db, &alice.id, &sess.id, "one").await;
    let mut r = req(&alice.id, &sess.id, "two");
    r.message.multitask = Multitask::Reject;
    r.message.idempotency_key = Some("k-rejected".into());
    assert_eq!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::Rejected {
            active_run_id: first.run_id.clone()
        }
    );
    // Still refused once the run is running; nothing was written, not even the key.
    claim(&db, &first.run_id, "w1").await;
    assert!(matches!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::Rejected { .. }
    ));
    assert_eq!(messages_in(&db, &sess.id).await, 1);
    assert_eq!(runs_in(&db, &sess.id).await, 1);
    assert_eq!(
        db.count("select count(*) from idempotency_keys".into())
            .await,
        0
    );
}

async fn enqueue_waits_up_to_the_cap(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let first = start(&db, &alice.id, &sess.id, "one").await;
    let mut waiting = Vec::new();
    for text in ["two", "three"] {
        let mut r = req(&alice.id, &sess.id, text);
        r.queued_messages_per_session = 2;
        match s.send_message(&r).await.unwrap() {
            SendOutcome::Queued {
                message_id,
                active_run_id,
            } => {
                assert_eq!(active_run_id, first.run_id);
                waiting.push(message_id);
            }
            other => panic!("{other:?}"),
        }
    }
    let mut r = req(&alice.id, &sess.id, "four");
    r.queued_messages_per_session = 2;
    assert_eq!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::QueueFull {
            active_run_id: first.run_id.clone()
        }
    );
    assert_eq!(messages_in(&db, &sess.id).await, 3);
    // Waiting messages belong to no run yet.
    for id in &waiting {
        assert_eq!(s.get_message(id).await.unwrap().unwrap().run_id, None);
    }
    // No cap (0): more may wait.
    r.queued_messages_per_session = 0;
    assert!(matches!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::Queued { .. }
    ));
    assert_eq!(runs_in(&db, &sess.id).await, 1);
}

async fn interrupt_cancels_and_takes_the_waiting_messages(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let first = start(&db, &alice.id, &sess.id, "one").await;
    let waiting = s
        .send_message(&req(&alice.id, &sess.id, "two"))
        .await
        .unwrap();
    let SendOutcome::Queued {
        message_id: waiting,
        ..
    } = waiting
    else {
        panic!("{waiting:?}");
    };

    let mut r = req(&alice.id, &sess.id, "three");
    r.message.multitask = Multitask::Interrupt;
    let out = s.send_message(&r).await.unwrap();
    let SendOutcome::Started {
        run: second,
        interrupted: Some(ActiveRun { id, was_queued }),
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!((id, was_queued), (first.run_id.clone(), true));
    let old = s.get_run(&alice.id, &first.run_id).await.unwrap();
    assert_eq!(old.status, RunStatus::Cancelled);
    assert_eq!(old.cancelled_by.as_deref(), Some("interrupt"));
    assert!(old.finished_at.is_some());
    // The message that waited joins the new run.
    assert_eq!(
        s.get_message(&waiting).await.unwrap().unwrap().run_id,
        Some(second.run_id.clone())
    );
    let ctx = s.context_messages(&sess.id, 20).await.unwrap();
    let texts: Vec<&str> = ctx.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["one", "two", "three"]);

    // Interrupting a running run: its worker is the one to end its stream.
    claim(&db, &second.run_id, "w1").await;
    let out = s.send_message(&r).await.unwrap();
    let SendOutcome::Started {
        interrupted: Some(ActiveRun { id, was_queued }),
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!((id, was_queued), (second.run_id.clone(), false));
    assert!(!s.heartbeat(&second.run_id, "w1", 1).await.unwrap());
}

async fn idempotency_key_replays_the_first_answer(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let sess = session(&db, &alice).await;
    let mut r = req(&alice.id, &sess.id, "hello");
    r.message.idempotency_key = Some("retry-me".into());
    let first = started(s.send_message(&r).await.unwrap());
    let replay = SendOutcome::Replayed {
        message_id: first.message_id.clone(),
        run_id: Some(first.run_id.clone()),
    };
    assert_eq!(s.send_message(&r).await.unwrap(), replay);
    // Even with another text or multitask mode, and after the run ended.
    let c = claim(&db, &first.run_id, "w1").await;
    s.finish_run(
        &c,
        "w1",
        &weft_store::RunEnd::Succeeded {
            content: "hi".into(),
            step: 1,
            citations: Vec::new(),
            reasoning: Vec::new(),
        },
        Default::default(),
        None,
        &Default::default(),
    )
    .await
    .unwrap();
    r.message.text = "hello again".into();
    r.message.multitask = Multitask::Reject;
    assert_eq!(s.send_message(&r).await.unwrap(), replay);
    assert_eq!(messages_in(&db, &sess.id).await, 2, "user + reply only");
    assert_eq!(runs_in(&db, &sess.id).await, 1);

    // A key on a message that waited replays without a run.
    let busy = session(&db, &alice).await;
    start(&db, &alice.id, &busy.id, "one").await;
    let mut w = req(&alice.id, &busy.id, "two");
    w.message.idempotency_key = Some("waiting".into());
    let SendOutcome::Queued { message_id, .. } = s.send_message(&w).await.unwrap() else {
        panic!("expected to wait");
    };
    assert_eq!(
        s.send_message(&w).await.unwrap(),
        SendOutcome::Replayed {
            message_id,
            run_id: None
        }
    );

    // Keys are per user: bob's "retry-me" is his own.
    let his = session(&db, &bob).await;
    let mut b = req(&bob.id, &his.id, "hello");
    b.message.idempotency_key = Some("retry-me".into());
    let bobs = started(s.send_message(&b).await.unwrap());
    assert_ne!(bobs.run_id, first.run_id);
}

async fn sends_to_unknown_or_foreign_sessions_are_not_found(db: Db) {
    let alice = user(&db, "alice").await;
    let mallory = user(&db, "mallory").await;
    let sess = session(&db, &alice).await;
    let foreign = db
        .store
        .send_message(&req(&mallory.id, &sess.id, "hi"))
        .await;
    assert!(matches!(foreign, Err(StoreError::NotFound)), "{foreign:?}");
    let unknown = db
        .store
        .send_message(&req(&alice.id, &SessionId::new(), "hi"))
        .await;
    assert!(matches!(unknown, Err(StoreError::NotFound)), "{unknown:?}");
    assert_eq!(messages_in(&db, &sess.id).await, 0);
}

/// Double texting at speed: one message starts the run, the others wait for it.
/// A parallel send must never fail because another one got there first.
async fn parallel_sends_to_one_session_start_one_run(db: Db) {
    const SENDS: usize = 10;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let tasks: Vec<_> = (0..SENDS)
        .map(|i| {
            let s = db.store.clone();
            let r = req(&alice.id, &sess.id, &format!("message {i}"));
            tokio::spawn(async move { s.send_message(&r).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let errors: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().err().map(|e| e.to_string()))
        .collect();
    assert!(
        errors.is_empty(),
        "{} of {SENDS} parallel sends to one session failed: {errors:?}",
        errors.len()
    );
    let started_runs: Vec<_> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(SendOutcome::Started { run, .. }) => Some(run.run_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(started_runs.len(), 1, "{outcomes:?}");
    let queued = outcomes
        .iter()
        .filter(|o| {
            matches!(o, Ok(SendOutcome::Queued { active_run_id, .. }) if *active_run_id == started_runs[0])
        })
        .count();
    assert_eq!(queued, SENDS - 1, "{outcomes:?}");
    assert_eq!(messages_in(&db, &sess.id).await, SENDS as i64);
    assert_eq!(runs_in(&db, &sess.id).await, 1);
}

/// A client retrying one request on several connections at once: one message,
/// one run, and every retry answers with them.
async fn parallel_retries_with_one_key_write_once(db: Db) {
    const RETRIES: usize = 8;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let tasks: Vec<_> = (0..RETRIES)
        .map(|_| {
            let s = db.store.clone();
            let mut r = req(&alice.id, &sess.id, "exactly once");
            r.message.idempotency_key = Some("one-key".into());
            tokio::spawn(async move { s.send_message(&r).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let errors: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().err().map(|e| e.to_string()))
        .collect();
    assert!(
        errors.is_empty(),
        "{} of {RETRIES} parallel retries failed: {errors:?}",
        errors.len()
    );
    let first: Vec<_> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(SendOutcome::Started { run, .. }) => Some(run.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(first.len(), 1, "{outcomes:?}");
    let replayed = outcomes
        .iter()
        .filter(|o| {
            matches!(o, Ok(SendOutcome::Replayed { message_id, run_id })
                if *message_id == first[0].message_id && run_id.as_ref() == Some(&first[0].run_id))
        })
        .count();
    assert_eq!(replayed, RETRIES - 1, "{outcomes:?}");
    assert_eq!(messages_in(&db, &sess.id).await, 1);
    assert_eq!(runs_in(&db, &sess.id).await, 1);
}

/// A Lark group (issue 21): members send into the session of whoever spoke
/// first. Each message is its speaker's — the run, the author, the name — and
/// messages that waited become a run of the first waiting speaker.
async fn a_shared_session_runs_as_each_speaker(db: Db) {
    let s = &db.store;
    let (alice, bob) = (user(&db, "alice").await, user(&db, "bob").await);
    let team = session(&db, &alice).await;
    let as_in = |who: &weft_shared::ids::UserId, name: &str, text: &str| {
        let mut r = req(who, &team.id, text);
        r.message.session_owner = alice.id.clone();
        r.message.author_name = Some(name.to_owned());
        r
    };
    // Without the owner named, Bob's send into Alice's session finds nothing.
    assert!(matches!(
        s.send_message(&req(&bob.id, &team.id, "hi")).await,
        Err(StoreError::NotFound)
    ));
    let bobs = started(s.send_message(&as_in(&bob.id, "Bob", "hi")).await.unwrap());
    let run = s.get_run(&bob.id, &bobs.run_id).await.unwrap();
    assert_eq!(run.user_id, bob.id);
    // The session's owner sees the run; a stranger does not.
    assert!(s.get_run(&alice.id, &bobs.run_id).await.is_ok());
    let carol = user(&db, "carol").await;
    assert!(matches!(
        s.get_run(&carol.id, &bobs.run_id).await,
        Err(StoreError::NotFound)
    ));
    let said = s.get_message(&bobs.message_id).await.unwrap().unwrap();
    assert_eq!(
        (said.author_id, said.author_name.as_deref()),
        (Some(bob.id.clone()), Some("Bob"))
    );
    // Alice, then Bob, write while Bob's run is on: the follow-up is Alice's.
    for (who, name) in [(&alice.id, "Alice"), (&bob.id, "Bob")] {
        let out = s.send_message(&as_in(who, name, "more")).await.unwrap();
        assert!(matches!(out, SendOutcome::Queued { .. }), "{out:?}");
    }
    let claimed = claim(&db, &bobs.run_id, "w1").await;
    let out = succeed_claimed(&db, &claimed, &RunLimits::unlimited()).await;
    let FinishOutcome::Finished {
        followup: Some(next),
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!(s.get_run(&alice.id, &next).await.unwrap().user_id, alice.id);
}

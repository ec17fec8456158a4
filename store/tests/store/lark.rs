//! What the Lark bot keeps in the database (the inbox is `lark_inbox`): Lark users
//! and linking them to accounts, the conversation → session binding, the reply
//! target, words and cards of a run (compare-and-set), the THINKING reactions,
//! and the final card a run owes until it is shown.

use weft_shared::ids::{RunId, UserId};
use weft_store::{
    CardEntityRecord, Decision, LarkCard, LarkChat, LinkOutcome, NewApproval, PendingStep,
    ReactionRecord, Role, RunEnd, RunLimits, SendOutcome, StoreError, lark_username,
};

use crate::both_backends;
use crate::harness::{Db, claim, req, session, start, started, succeed_claimed, user};

both_backends!(
    lark_users_are_created_once,
    linking_moves_the_placeholder_over,
    conversations_bind_to_sessions,
    reply_target_is_the_newest_lark_message,
    cards_are_compare_and_set,
    the_target_carries_the_newest_words,
    approval_cards_say_how_they_were_decided,
    reactions_are_taken_once_the_reply_ends,
    an_owed_final_card_is_claimed_once_after_the_end,
);

fn chat(id: &str) -> LarkChat {
    LarkChat {
        chat_id: id.into(),
        thread_id: String::new(),
    }
}

fn thread(id: &str, thread: &str) -> LarkChat {
    LarkChat {
        chat_id: id.into(),
        thread_id: thread.into(),
    }
}

async fn lark_users_are_created_once(db: Db) {
    let s = &db.store;
    let u = s.lark_user("ou_abc").await.unwrap();
    assert_eq!(
        (u.username.as_str(), u.role),
        (lark_username("ou_abc").as_str(), Role::User)
    );
    assert_eq!(u.username, "lark:ou_abc");
    assert_eq!(s.lark_user("ou_abc").await.unwrap(), u);
    // Several gateways see the sender's first message at once.
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.lark_user("ou_new").await })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().expect("every replica gets the user").id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(s.list_users().await.unwrap().len(), 2);
}

async fn linking_moves_the_placeholder_over(db: Db) {
    let s = &db.store;
    let real = user(&db, "alice").await;
    let placeholder = s.lark_user("ou_alice").await.unwrap();
    let sess = s
        .lark_session(&chat("oc_p2p"), &placeholder.id, "mock", "agent")
        .await
        .unwrap();
    let mut r = req(&placeholder.id, &sess.id, "from lark");
    r.message.idempotency_key = Some("lark:om_1".into());
    r.message.attachments = vec![weft_store::NewAttachment {
        name: "shot.png".into(),
        kind: weft_shared::api::AttachmentKind::Image,
        mime: "image/png".into(),
        bytes: 10,
        sha256: "ab".repeat(32),
        text_chars: None,
        unreadable: None,
    }];
    let run = started(s.send_message(&r).await.unwrap());

    assert_eq!(
        s.link_lark(&real.id, "ou_alice").await.unwrap(),
        LinkOutcome::Linked { moved_sessions: 1 }
    );
    // Alice sees the conversation, its run, and her Lark messages are hers now.
    let moved = s.get_session(&real.id, &sess.id).await.unwrap();
    assert_eq!(moved.user_id, real.id);
    // …and so are the files of her Lark messages.
    let (msgs, _) = s.list_messages(&real.id, &sess.id, 10, None).await.unwrap();
    let file = &msgs[0].attachments[0].id;
    assert!(s.get_attachment(&real.id, file).await.is_ok());
    assert_eq!(
        s.get_run(&real.id, &run.run_id).await.unwrap().user_id,
        real.id
    );
    assert!(matches!(
        s.get_user(&placeholder.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(s.lark_user("ou_alice").await.unwrap().id, real.id);
    assert_eq!(
        s.lark_session(&chat("oc_p2p"), &real.id, "mock", "agent")
            .await
            .unwrap()
            .id,
        sess.id
    );
    // A Lark redelivery after the link still replays.
    r.message.user = real.id.clone();
    r.message.session_owner = real.id.clone();
    assert_eq!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::Replayed {
            message_id: run.message_id,
            run_id: Some(run.run_id)
        }
    );

    // Linking again changes nothing; another account cannot take the identity.
    assert_eq!(
        s.link_lark(&real.id, "ou_alice").await.unwrap(),
        LinkOutcome::Linked { moved_sessions: 0 }
    );
    let bob = user(&db, "bob").await;
    assert_eq!(
        s.link_lark(&bob.id, "ou_alice").await.unwrap(),
        LinkOutcome::TakenBy("alice".into())
    );
    // An identity never seen before links without anything to move.
    assert_eq!(
        s.link_lark(&bob.id, "ou_bob").await.unwrap(),
        LinkOutcome::Linked { moved_sessions: 0 }
    );
    assert_eq!(s.lark_user("ou_bob").await.unwrap().id, bob.id);
    let nobody = s.link_lark(&UserId::new(), "ou_x").await;
    assert!(matches!(nobody, Err(StoreError::NotFound)), "{nobody:?}");
}

async fn conversations_bind_to_sessions(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let other = s.lark_user("ou_2").await.unwrap();
    let group = chat("oc_group");
    let first = s
        .lark_session(&group, &owner.id, "mock", "agent")
        .await
        .unwrap();
    assert_eq!(
        (first.source.as_str(), &first.user_id, first.title.as_str()),
        ("lark", &owner.id, "")
    );
    // Whoever speaks next talks to the same session, owned by the first speaker.
    let again = s
        .lark_session(&group, &other.id, "mock", "agent")
        .await
        .unwrap();
    assert_eq!((&again.id, &again.user_id), (&first.id, &owner.id));
    // A topic thread is a conversation of its own.
    let topic = s
        .lark_session(&thread("oc_group", "omt_1"), &other.id, "mock", "agent")
        .await
        .unwrap();
    assert_ne!(topic.id, first.id);
    assert_eq!(topic.user_id, other.id);

    // `/new`, `/sessions`, `/resume`.
    db.exec(format!(
        "update sessions set updated_at = 1000 where id = '{}'",
        first.id
    ))
    .await;
    let fresh = s
        .lark_new_session(&group, &owner.id, "big", "chat")
        .await
        .unwrap();
    assert_eq!(
        s.lark_session(&group, &owner.id, "mock", "agent")
            .await
            .unwrap()
            .id,
        fresh.id
    );
    let history: Vec<_> = s
        .lark_chat_sessions(&group, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(history, [fresh.id.clone(), first.id.clone()]);
    assert_eq!(s.lark_chat_sessions(&group, 1).await.unwrap().len(), 1);
    s.lark_bind(&group, &first.id).await.unwrap();
    assert_eq!(
        s.lark_session(&group, &owner.id, "mock", "agent")
            .await
            .unwrap()
            .id,
        first.id
    );
    // The thread kept its own binding throughout.
    assert_eq!(
        s.lark_session(&thread("oc_group", "omt_1"), &owner.id, "m", "a")
            .await
            .unwrap()
            .id,
        topic.id
    );

    // Many first messages of a new conversation at once: one session.
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let s = s.clone();
            let owner = owner.id.clone();
            tokio::spawn(async move {
                s.lark_session(&chat("oc_busy"), &owner, "mock", "agent")
                    .await
            })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().expect("every caller gets the session").id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
}

async fn reply_target_is_the_newest_lark_message(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let sess = s
        .lark_session(&thread("oc_g", "omt_9"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let mut r = req(&owner.id, &sess.id, "first");
    r.message.lark_message_id = Some("om_1".into());
    let first = started(s.send_message(&r).await.unwrap());
    for (text, id) in [("second", "om_2"), ("third", "om_3")] {
        let mut w = req(&owner.id, &sess.id, text);
        w.message.lark_message_id = Some(id.into());
        assert!(matches!(
            s.send_message(&w).await.unwrap(),
            SendOutcome::Queued { .. }
        ));
    }
    // A message from another client joins too, but is no reply target.
    s.send_message(&req(&owner.id, &sess.id, "from the web"))
        .await
        .unwrap();

    let target = s.lark_target(&first.run_id).await.unwrap().unwrap();
    assert_eq!(target.chat, thread("oc_g", "omt_9"));
    assert_eq!(target.reply_to.as_deref(), Some("om_1"));
    assert!(target.cards.is_empty());

    let c = claim(&db, &first.run_id, "w1").await;
    let out = s
        .finish_run(
            &c,
            "w1",
            &RunEnd::Succeeded {
                content: "ok".into(),
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
    let weft_store::FinishOutcome::Finished {
        followup: Some(next),
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    let target = s.lark_target(&next).await.unwrap().unwrap();
    assert_eq!(target.reply_to.as_deref(), Some("om_3"));

    // Runs outside Lark conversations have no target.
    let web = user(&db, "web").await;
    let plain = session(&db, &web).await;
    let run = start(&db, &web.id, &plain.id, "hi").await;
    assert_eq!(s.lark_target(&run.run_id).await.unwrap(), None);
    assert_eq!(s.lark_target(&RunId::new()).await.unwrap(), None);
}

async fn cards_are_compare_and_set(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let a = s
        .lark_session(&chat("oc_a"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let run = start(&db, &owner.id, &a.id, "hi").await.run_id;
    let card1 = [LarkCard::plain("om_card1")];
    assert_eq!(s.set_lark_cards(&run, &[], &card1).await.unwrap(), card1);
    // A stale writer (a previous attempt) loses and sees the winner's cards.
    let late = [LarkCard::plain("om_late")];
    assert_eq!(s.set_lark_cards(&run, &[], &late).await.unwrap(), card1);
    // A CardKit entity is recorded before its message is sent, then completed.
    let entity = CardEntityRecord {
        card_id: "7e1".into(),
        created_ms: 1_764_460_000_000,
    };
    let unsent = [
        card1[0].clone(),
        LarkCard {
            message_id: None,
            entity: Some(entity.clone()),
        },
    ];
    assert_eq!(
        s.set_lark_cards(&run, &card1, &unsent).await.unwrap(),
        unsent
    );
    let mut sent = unsent.clone();
    sent[1].message_id = Some("om_card2".into());
    assert_eq!(s.set_lark_cards(&run, &unsent, &sent).await.unwrap(), sent);
    assert_eq!(
        s.set_lark_cards(&run, &unsent, &card1).await.unwrap(),
        sent,
        "a writer that did not see the message loses"
    );
    assert_eq!(s.lark_target(&run).await.unwrap().unwrap().cards, sent);

    // Cards recorded before entities (bare message ids) still read, and can
    // be added to.
    db.exec(format!(
        "update runs set lark_cards = '[\"om_old\"]' where id = '{}'",
        run.0
    ))
    .await;
    let old = s.lark_target(&run).await.unwrap().unwrap().cards;
    assert_eq!(old, [LarkCard::plain("om_old")]);
    let more = [LarkCard::plain("om_old"), LarkCard::plain("om_old2")];
    assert_eq!(s.set_lark_cards(&run, &old, &more).await.unwrap(), more);

    // Two attempts racing for the first card: one card per run.
    let b = s
        .lark_session(&chat("oc_b"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let run = start(&db, &owner.id, &b.id, "hi").await.run_id;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            let run = run.clone();
            tokio::spawn(async move {
                s.set_lark_cards(&run, &[], &[LarkCard::plain(format!("om_{i}"))])
                    .await
            })
        })
        .collect();
    let mut seen = Vec::new();
    for t in tasks {
        seen.push(t.await.unwrap().unwrap());
    }
    let stored = s.lark_target(&run).await.unwrap().unwrap().cards;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(seen.iter().all(|cards| *cards == stored), "{seen:?}");
}

async fn the_target_carries_the_newest_words(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let sess = s
        .lark_session(&chat("oc_lang"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let run = start(
        &db,
        &owner.id,
        &sess.id,
        &format!("你好 {}", "x".repeat(500)),
    )
    .await
    .run_id;
    let text = s.lark_target(&run).await.unwrap().unwrap().text;
    assert!(text.starts_with("你好 x"), "{text}");
    assert_eq!(text.chars().count(), 200, "only the start is read");
}

async fn approval_cards_say_how_they_were_decided(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let sess = s
        .lark_session(&chat("oc_ap"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let run = start(&db, &owner.id, &sess.id, "hi").await.run_id;
    claim(&db, &run, "w1").await;
    let call = |id: &str, tool: &str| NewApproval {
        id: id.into(),
        call_id: format!("c_{id}"),
        name: tool.into(),
        args: serde_json::json!({}),
        expires_at: weft_shared::time::now_ms() + 60_000,
    };
    let pending = PendingStep {
        reasoning: Vec::new(),
        step: 1,
        content: String::new(),
        tool_calls: Vec::new(),
    };
    let asked = [
        call("ap_once", "a"),
        call("ap_always", "b"),
        call("ap_no", "c"),
    ];
    assert!(
        s.store_waits(
            &run,
            "w1",
            &pending,
            &weft_store::NewWaits {
                approvals: asked.to_vec(),
                questions: Vec::new(),
                plans: Vec::new(),
                delegations: Vec::new()
            }
        )
        .await
        .unwrap()
    );
    for ap in &asked {
        s.record_lark_approval_card(&ap.id, &format!("om_{}", ap.id))
            .await
            .unwrap();
    }
    let who = &owner.username;
    for (id, decision) in [
        ("ap_once", Decision::Approve),
        ("ap_always", Decision::Always),
        ("ap_no", Decision::Deny),
    ] {
        s.decide_approval(id, &owner.id, false, who, decision, None)
            .await
            .unwrap();
    }
    let mut cards = s.lark_approval_cards(&run).await.unwrap();
    cards.sort_by(|a, b| a.approval_id.cmp(&b.approval_id));
    let seen: Vec<(&str, &str, bool)> = cards
        .iter()
        .map(|c| (c.approval_id.as_str(), c.message_id.as_str(), c.always))
        .collect();
    assert_eq!(
        seen,
        [
            ("ap_always", "om_ap_always", true),
            ("ap_no", "om_ap_no", false),
            ("ap_once", "om_ap_once", false),
        ]
    );
}

async fn reactions_are_taken_once_the_reply_ends(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let sess = s
        .lark_session(&chat("oc_a"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let mut r = req(&owner.id, &sess.id, "hi");
    r.message.lark_message_id = Some("om_1".into());
    let first = started(s.send_message(&r).await.unwrap());
    let mut w = req(&owner.id, &sess.id, "more");
    w.message.lark_message_id = Some("om_2".into());
    let SendOutcome::Queued {
        message_id: waiting,
        ..
    } = s.send_message(&w).await.unwrap()
    else {
        panic!("expected to wait");
    };

    assert_eq!(
        s.record_lark_reaction(&first.message_id, "re_1")
            .await
            .unwrap(),
        ReactionRecord::Kept
    );
    assert_eq!(
        s.record_lark_reaction(&waiting, "re_2").await.unwrap(),
        ReactionRecord::Kept
    );
    // The first run's reply ends: its own reaction comes off, not the waiting one's.
    assert_eq!(
        s.take_lark_reactions(&first.run_id).await.unwrap(),
        [("om_1".to_string(), "re_1".to_string())]
    );
    assert!(
        s.take_lark_reactions(&first.run_id)
            .await
            .unwrap()
            .is_empty()
    );
    // A reaction recorded after the end is the recorder's to remove.
    assert_eq!(
        s.record_lark_reaction(&first.message_id, "re_late")
            .await
            .unwrap(),
        ReactionRecord::ReplyEnded
    );
    assert!(
        s.take_lark_reactions(&first.run_id)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn an_owed_final_card_is_claimed_once_after_the_end(db: Db) {
    let s = &db.store;
    let owner = s.lark_user("ou_1").await.unwrap();
    let sess = s
        .lark_session(&chat("oc_a"), &owner.id, "mock", "agent")
        .await
        .unwrap();
    let run = started(
        s.send_message(&req(&owner.id, &sess.id, "hi"))
            .await
            .unwrap(),
    )
    .run_id;
    let claimed = claim(&db, &run, "w1").await;
    s.lark_card_owed(&run).await.unwrap();
    let overdue = |ms| async move { s.claim_overdue_lark_cards(ms, 3_600_000, 10).await.unwrap() };
    let back = |column: &str, ms: i64| {
        db.exec(format!(
            "update runs set {column} = {column} - {ms} where id = '{}'",
            run.0
        ))
    };
    back("lark_card_due", 20_000).await;
    assert_eq!(
        overdue(5_000).await,
        (vec![], 0),
        "a running run owes nothing yet"
    );
    succeed_claimed(&db, &claimed, &RunLimits::unlimited()).await;
    assert_eq!(
        overdue(5_000).await,
        (vec![], 0),
        "not overdue a moment after the end"
    );
    back("finished_at", 10_000).await;
    assert_eq!(overdue(5_000).await, (vec![run.clone()], 0));
    assert_eq!(
        overdue(5_000).await,
        (vec![], 0),
        "claimed: nobody else takes it for a while"
    );
    back("lark_card_due", 10_000).await;
    assert_eq!(
        overdue(5_000).await,
        (vec![run.clone()], 0),
        "a claim that lapsed"
    );
    back("lark_card_due", 10_000).await;
    s.lark_card_shown(&run).await.unwrap();
    assert_eq!(overdue(5_000).await, (vec![], 0), "shown: owed no more");
    // Owed again and ended long ago: given up.
    s.lark_card_owed(&run).await.unwrap();
    back("finished_at", 7_200_000).await;
    assert_eq!(overdue(5_000).await, (vec![], 1));
}

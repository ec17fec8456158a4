//! Replies: one streaming card per message, its reaction and footer, redeliveries, groups and threads, long and awkward text, failures.

use serde_json::json;
use weft_lark::fake::PushOptions;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    dm_streams_one_card_with_reaction_and_footer,
    redelivered_events_get_one_reply,
    many_messages_get_one_reply_each,
    groups_need_a_mention_and_threads_get_thread_replies,
    long_and_awkward_replies_stay_readable,
    failed_runs_end_the_card_red,
    a_thinking_model_shows_its_reasoning_then_the_answer,
    cards_are_patched_where_cardkit_is_refused,
);

async fn dm_streams_one_card_with_reaction_and_footer(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.tokens 40 @mock.delay 0 25");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green");
    assert_eq!(body(&card), words(40));
    let footer = element(&card, "footer");
    assert!(
        footer.contains("tokens") && footer.contains("tok/s") && footer.ends_with("mock"),
        "{footer}"
    );
    assert_eq!(w.replies(&msg).len(), 1, "exactly one card");
    // A CardKit card entity, sent once by reference, the answer typed out in
    // it, updated only after it was sent, with strictly increasing sequences,
    // and no longer streaming at the end.
    let card_id = card.card_id.clone().expect("a CardKit card");
    let entity = w.fake.card_entity(&card_id).unwrap();
    assert!(!entity.streaming, "streaming ended");
    assert_eq!(entity.updates_before_send, 0);
    let records = w.fake.records();
    let ours = format!("/open-apis/cardkit/v1/cards/{card_id}");
    let sequences: Vec<i64> = records
        .calls
        .iter()
        .filter(|c| c.path.starts_with(&ours) && c.status == 200)
        .map(|c| c.body["sequence"].as_i64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");
    let typed: Vec<&str> = records
        .calls_to("PUT", &format!("{ours}/elements/reply_body/content"))
        .iter()
        .filter_map(|c| c.body["content"].as_str())
        .collect();
    assert!(!typed.is_empty(), "the answer was typed out");
    assert!(
        typed.iter().all(|t| words(40).starts_with(t.trim_end())),
        "each update carries the whole text so far: {typed:?}"
    );
    assert!(
        records
            .calls_to(
                "PATCH",
                &format!("/open-apis/im/v1/messages/{}", card.message_id)
            )
            .is_empty(),
        "no message patches"
    );
    let added = records.calls_to(
        "POST",
        &format!("/open-apis/im/v1/messages/{msg}/reactions"),
    );
    assert_eq!(added.len(), 1, "one THINKING reaction");
    assert_eq!(added[0].body["reaction_type"]["emoji_type"], "THINKING");
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn redelivered_events_get_one_reply(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (event, msg) = w.ids();
    let envelope = message_event(
        &event,
        &msg,
        "oc_dm_a",
        "p2p",
        "",
        "ou_alice",
        "hello",
        json!([]),
    );
    w.fake.push_event(envelope.clone(), PushOptions::default());
    w.final_card(&msg).await;

    // Redelivered after its ack.
    w.fake.push_event(envelope.clone(), PushOptions::default());
    w.until("the second delivery's ack", |f| {
        let r = f.records();
        let attempts = r.attempts_of(&event);
        (attempts.len() == 2
            && attempts
                .iter()
                .all(|a| matches!(a.outcome, weft_lark::fake::AttemptOutcome::Acked(_))))
        .then_some(())
    })
    .await;
    // Redelivered because the ack was "lost": the fake pushes it again itself.
    let (lost_event, lost_msg) = w.ids();
    w.fake.lose_next_acks(1);
    w.fake.push_event(
        message_event(
            &lost_event,
            &lost_msg,
            "oc_dm_a",
            "p2p",
            "",
            "ou_alice",
            "again",
            json!([]),
        ),
        PushOptions::default(),
    );
    w.until("the redelivery", |f| {
        (f.records().attempts_of(&lost_event).len() >= 2 && f.records().acked(&lost_event))
            .then_some(())
    })
    .await;
    w.final_card(&lost_msg).await;
    // After a restart of the gateway that took it.
    w.restart_gateway(0).await;
    w.fake.push_event(envelope, PushOptions::default());
    let marker = w.dm("ou_alice", "marker");
    w.final_card(&marker).await;
    assert_eq!(
        w.replies(&msg).len(),
        1,
        "one reply to the redelivered message"
    );
    assert_eq!(
        w.replies(&lost_msg).len(),
        1,
        "one reply to the unacked message"
    );
    assert!(w.fake.records().attempts_of(&event).len() >= 3);
}

async fn many_messages_get_one_reply_each(b: Backend) {
    // Four processes share the app's 50 calls/s (the fake enforces it like Lark).
    let share = if b == Backend::Distributed {
        "12"
    } else {
        "50"
    };
    let mut w = LarkWorld::start_with(
        b,
        2,
        fake_config(),
        &[("WEFT_LARK__CALLS_PER_SECOND", share)],
    )
    .await;
    let sent: Vec<(usize, String)> = (0..50)
        .map(|i| (i, w.dm(&format!("ou_user{i}"), &format!("message {i}"))))
        .collect();
    for (i, msg) in &sent {
        let card = w.final_card(msg).await;
        assert_eq!(body(&card), format!("You said: message {i}"));
    }
    for (_, msg) in &sent {
        assert_eq!(w.replies(msg).len(), 1, "one reply to {msg}");
    }
    if b == Backend::Distributed {
        let conns: std::collections::HashSet<_> = w
            .fake
            .records()
            .pushes
            .iter()
            .filter_map(|p| p.conn_id)
            .collect();
        assert_eq!(conns.len(), 2, "both replicas received events");
    }
}

async fn groups_need_a_mention_and_threads_get_thread_replies(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (e1, plain) = w.ids();
    w.fake.push_event(
        message_event(
            &e1,
            &plain,
            "oc_group",
            "group",
            "",
            "ou_alice",
            "hello all",
            json!([]),
        ),
        PushOptions::default(),
    );
    let (e2, everyone) = w.ids();
    w.fake.push_event(
        message_event(
            &e2,
            &everyone,
            "oc_group",
            "group",
            "",
            "ou_alice",
            "@_all standup",
            json!([{"key": "@_all", "id": {"open_id": ""}, "name": "all"}]),
        ),
        PushOptions::default(),
    );
    let (e3, asked) = w.ids();
    w.fake.push_event(
        message_event(
            &e3,
            &asked,
            "oc_group",
            "topic_group",
            "omt_topic",
            "ou_bob",
            "@_user_1 what now?",
            bot_mention(),
        ),
        PushOptions::default(),
    );
    let card = w.final_card(&asked).await;
    assert_eq!(
        body(&card),
        "You said: [Bob] what now?",
        "the mention is stripped; in a group the model reads who spoke"
    );
    assert_eq!(card.thread_id, "omt_topic", "answered in the thread");
    w.until("the acks", |f| {
        (f.records().acked(&e1) && f.records().acked(&e2)).then_some(())
    })
    .await;
    assert!(w.replies(&plain).is_empty(), "no mention, no answer");
    assert!(w.replies(&everyone).is_empty(), "@_all never triggers");
}

async fn long_and_awkward_replies_stay_readable(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    // About 33 KB of text: more than one card holds.
    let long = w.dm("ou_alice", "@mock.tokens 5000");
    let first = w.final_card(&long).await;
    let cards = w
        .until("every card", |_| {
            let cards = w.replies(&long);
            (cards.len() == 2 && cards.iter().all(|c| template(c) == "green")).then_some(cards)
        })
        .await;
    assert_eq!(cards[0], first);
    let title = cards[1].content["header"]["title"]["content"]
        .as_str()
        .unwrap();
    assert_eq!(title, "Weft (continued 2/2)");
    let text: String = cards.iter().map(body).collect();
    assert_eq!(
        text.split_whitespace().collect::<Vec<_>>(),
        words(5000).split_whitespace().collect::<Vec<_>>()
    );
    assert!(
        element(&cards[1], "footer").contains("tok/s"),
        "the footer ends the last card"
    );
    // The model cannot @everyone.
    let at = w.dm("ou_alice", "<at id=all></at> hi");
    let card = w.final_card(&at).await;
    assert!(!body(&card).contains("<at"), "{}", body(&card));
    assert!(body(&card).contains("&lt;at id=all>"));
}

async fn failed_runs_end_the_card_red(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.fail 400");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "red");
    assert!(body(&card).starts_with("**❌ "), "{}", body(&card));
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn a_thinking_model_shows_its_reasoning_then_the_answer(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    // Two seconds of thinking (40 words, 50 ms apart), then the answer.
    let msg = w.dm(
        "ou_alice",
        "@mock.think 40 @mock.tokens 10 @mock.delay 0 50",
    );
    let card = w.final_card(&msg).await;
    assert_eq!(body(&card), words(10));
    let reasoning = find(&card.content, "reasoning").expect("the reasoning panel");
    assert_eq!(reasoning["expanded"], false, "folded at the end");
    let title = reasoning["header"]["title"]["content"].as_str().unwrap();
    assert!(
        title.starts_with("💭 ")
            && title.ends_with(" s · 40 tokens")
            && !title.contains("Thinking"),
        "the thinking time and the provider's reasoning tokens: {title}"
    );
    let history = w.history(&card);
    let thinking: Vec<&serde_json::Value> = history
        .iter()
        .filter(|doc| find(doc, "reasoning").is_some_and(|r| r["expanded"] == true))
        .collect();
    assert!(
        !thinking.is_empty(),
        "the reasoning showed while the model thought"
    );
    for doc in &thinking {
        let preview = find(doc, "reasoning_text").unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            preview.starts_with("t1") || preview.starts_with('…'),
            "{preview}"
        );
        assert!(preview.chars().count() <= 201, "a preview: {preview}");
        let title = find(doc, "reasoning").unwrap()["header"]["title"]["content"].clone();
        assert!(
            title.as_str().unwrap().starts_with("💭 Thinking… "),
            "{title}"
        );
        assert_eq!(
            find(doc, "reply_body").unwrap()["content"],
            "…",
            "no answer yet"
        );
    }
    for doc in &history {
        let answer = find(doc, "reply_body").unwrap()["content"].clone();
        if answer != "…" {
            assert_eq!(
                find(doc, "reasoning").unwrap()["expanded"],
                false,
                "folded once the answer starts: {doc}"
            );
        }
    }
}

async fn cards_are_patched_where_cardkit_is_refused(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    w.fake.refuse_cardkit(Some((
        99991672,
        "Access denied. One of the following scopes is required: [cardkit:card:write]",
    )));
    let msg = w.dm("ou_alice", "@mock.tokens 40 @mock.delay 0 25");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green");
    assert_eq!(body(&card), words(40));
    assert_eq!(card.card_id, None, "a plain card");
    let records = w.fake.records();
    let patches = records.calls_to(
        "PATCH",
        &format!("/open-apis/im/v1/messages/{}", card.message_id),
    );
    assert!(!patches.is_empty(), "the card grew in place");
    // Meanwhile the next reply does not ask CardKit again.
    let refused_before = w
        .fake
        .records()
        .calls_to("POST", "/open-apis/cardkit/")
        .len();
    let next = w.dm("ou_alice", "again");
    assert_eq!(body(&w.final_card(&next).await), "You said: again");
    assert_eq!(
        w.fake
            .records()
            .calls_to("POST", "/open-apis/cardkit/")
            .len(),
        refused_before
    );
}

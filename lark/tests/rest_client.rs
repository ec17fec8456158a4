//! Our REST client and rate-aware sender against the fake Lark server.

mod common;

use common::*;
use serde_json::{Value, json};
use weft_lark::card::{CardState, MarkdownLimits, ReplyCard, markdown};
use weft_lark::rest::{ErrorClass, Fallback, MessageContent, ReceiveIdType, ReplyMode};
use weft_lark::sender::{RateAwareSender, RateLimits};

const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";

fn streaming_card(text: &str) -> Value {
    ReplyCard {
        title: "Weft".into(),
        state: CardState::Streaming,
        body: text.into(),
        tools: vec![],
        footer: None,
    }
    .render(MarkdownLimits::default())
    .remove(0)
}

fn tables(n: usize) -> String {
    (0..n)
        .map(|i| format!("| t{i} | v |\n|---|---|\n| a | b |\n\n"))
        .collect()
}

#[tokio::test]
async fn messages_reactions_and_a_cached_token() {
    let fake = fake(fast_config()).await;
    let rest = rest(&fake);
    let sent = rest
        .send_message(
            ReceiveIdType::ChatId,
            "oc_chat",
            &MessageContent::Text("hi".into()),
        )
        .await
        .unwrap();
    assert!(sent.message_id.starts_with("om_"));
    let card = rest
        .reply_message(
            &sent.message_id,
            &MessageContent::Interactive(streaming_card("…")),
            ReplyMode::InThread,
        )
        .await
        .unwrap();
    assert!(!card.thread_id.is_empty(), "reply_in_thread opens a thread");
    assert_eq!(card.root_id, sent.message_id);
    rest.patch_card(&card.message_id, &streaming_card("done"))
        .await
        .unwrap();
    let reaction = rest
        .add_reaction(&sent.message_id, "THUMBSUP")
        .await
        .unwrap();
    rest.remove_reaction(&sent.message_id, &reaction.reaction_id)
        .await
        .unwrap();
    rest.recall_message(&card.message_id).await.unwrap();
    let err = rest
        .patch_card(&card.message_id, &streaming_card("late"))
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Fatal, "{err}");

    let records = fake.records();
    assert_eq!(
        records.calls_to("POST", TOKEN_PATH).len(),
        1,
        "token fetched once and cached"
    );
    let send = &records.calls_to("POST", "/open-apis/im/v1/messages")[0];
    assert_eq!(send.query, "receive_id_type=chat_id");
    assert!(send.body["content"].is_string(), "content is a JSON string");
}

#[tokio::test]
async fn expired_token_is_refreshed_and_the_send_retried_once() {
    let fake = fake(fast_config()).await;
    let rest = rest(&fake);
    rest.send_message(
        ReceiveIdType::OpenId,
        "ou_user",
        &MessageContent::Text("one".into()),
    )
    .await
    .unwrap();
    fake.revoke_tokens();
    let sent = rest
        .send_message(
            ReceiveIdType::OpenId,
            "ou_user",
            &MessageContent::Text("two".into()),
        )
        .await
        .expect("send succeeds after refreshing the token");
    assert!(sent.message_id.starts_with("om_"));

    let records = fake.records();
    assert_eq!(records.calls_to("POST", TOKEN_PATH).len(), 2);
    let sends = records.calls_to("POST", "/open-apis/im/v1/messages");
    let codes: Vec<i64> = sends.iter().map(|c| c.code).collect();
    assert_eq!(codes, vec![0, 99991663, 0]);
    assert_eq!(
        sends[1].body["uuid"], sends[2].body["uuid"],
        "the retry reuses the idempotency key"
    );
}

#[tokio::test]
async fn cardkit_entity_streams_with_increasing_sequence() {
    let fake = fake(fast_config()).await;
    let rest = rest(&fake);
    let card = rest.create_card(&streaming_card("")).await.unwrap();
    let sent = rest
        .send_message(ReceiveIdType::ChatId, "oc_chat", &card.as_message())
        .await
        .unwrap();
    assert!(sent.message_id.starts_with("om_"));
    let again = rest
        .send_message(ReceiveIdType::ChatId, "oc_other", &card.as_message())
        .await
        .unwrap_err();
    assert_eq!(
        again.class(),
        ErrorClass::Fallback(Fallback::CardRejected),
        "an entity is sent only once"
    );

    for text in ["Hel", "Hello", "Hello, world"] {
        rest.stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, text)
            .await
            .unwrap();
    }
    rest.update_card_settings(&card, &json!({"config": {"streaming_mode": false}}))
        .await
        .unwrap();
    let closed = rest
        .stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, "more")
        .await;
    assert!(closed.is_err(), "streaming is closed");

    let records = fake.records();
    let seqs: Vec<i64> = records
        .calls
        .iter()
        .filter(|c| c.path.starts_with("/open-apis/cardkit/v1/cards/") && c.status == 200)
        .map(|c| c.body["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn too_many_tables_is_a_card_fallback_and_sanitising_fixes_it() {
    let fake = fake(fast_config()).await;
    let rest = rest(&fake);
    let raw = json!({"schema": "2.0", "config": {"update_multi": true},
        "body": {"elements": [{"tag": "markdown", "content": tables(8)}]}});
    let err = rest
        .send_message(
            ReceiveIdType::ChatId,
            "oc_chat",
            &MessageContent::Interactive(raw),
        )
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Fallback(Fallback::CardRejected));
    assert!(err.to_string().contains("11310"), "{err}");

    let card = ReplyCard {
        title: "t".into(),
        state: CardState::Done,
        body: tables(8),
        tools: vec![],
        footer: None,
    };
    let page = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(
        markdown::count_tables(page["body"]["elements"][0]["content"].as_str().unwrap()),
        3
    );
    rest.send_message(
        ReceiveIdType::ChatId,
        "oc_chat",
        &MessageContent::Interactive(page),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_naive_burst_of_patches_draws_429() {
    let fake = fake(fast_config()).await;
    let rest = rest(&fake);
    let msg = rest
        .send_message(
            ReceiveIdType::ChatId,
            "oc_chat",
            &MessageContent::Interactive(streaming_card("")),
        )
        .await
        .unwrap();
    let mut rate_limited = 0;
    for i in 0..10 {
        if let Err(e) = rest
            .patch_card(&msg.message_id, &streaming_card(&i.to_string()))
            .await
        {
            assert_eq!(e.class(), ErrorClass::Retryable);
            rate_limited += 1;
        }
    }
    assert!(
        rate_limited > 0,
        "the fake enforces 5 patches/s per message"
    );
}

#[tokio::test]
async fn rate_aware_sender_coalesces_bursts_without_429() {
    let fake = fake(fast_config()).await;
    let sender = RateAwareSender::new(rest(&fake), RateLimits::default());

    // Eight cards patched at once exceed the app's 50/s if unpaced.
    let mut messages = Vec::new();
    for i in 0..8 {
        let chat = format!("oc_chat_{i}");
        let msg = sender
            .send_message(
                ReceiveIdType::ChatId,
                &chat,
                &MessageContent::Interactive(streaming_card("")),
            )
            .await
            .unwrap();
        messages.push(msg.message_id);
    }
    let card = sender.create_card(&streaming_card("")).await.unwrap();
    let element = sender.element_stream(card.clone(), weft_lark::card::BODY_ELEMENT_ID);
    let streams: Vec<_> = messages
        .iter()
        .map(|id| sender.patch_stream(id.clone()))
        .collect();
    let mut text = String::new();
    for step in 0..300 {
        text.push_str("tok ");
        element.update(text.clone());
        for stream in &streams {
            stream.update(streaming_card(&format!("{step}")));
        }
        if step % 10 == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    let stats = element.finish().await.expect("element stream finishes");
    assert!(stats.coalesced > 0);
    for stream in streams {
        stream.finish().await.expect("patch stream finishes");
    }

    let records = fake.records();
    let limited: Vec<_> = records.calls.iter().filter(|c| c.status == 429).collect();
    if !limited.is_empty() {
        let t0 = records.calls[0].at;
        for c in &records.calls {
            eprintln!(
                "{:>6} {} {} {}",
                c.at.duration_since(t0).as_millis(),
                c.method,
                c.path,
                c.status
            );
        }
    }
    assert!(limited.is_empty(), "no 429s: {limited:?}");
    for id in &messages {
        let last = records
            .calls_to("PATCH", &format!("/open-apis/im/v1/messages/{id}"))
            .last()
            .cloned()
            .unwrap();
        let card: Value = serde_json::from_str(last.body["content"].as_str().unwrap()).unwrap();
        assert_eq!(
            card["body"]["elements"][0]["content"], "299",
            "latest content wins"
        );
    }
    let streamed = records.calls_to(
        "PUT",
        &format!("/open-apis/cardkit/v1/cards/{}/elements", card.card_id),
    );
    assert_eq!(streamed.last().unwrap().body["content"], text.as_str());
}

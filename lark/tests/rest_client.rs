//! Our REST client and rate-aware sender against the fake Lark server.

mod common;

use common::*;
use serde_json::{Value, json};
use weft_lark::card::{CardState, MarkdownLimits, ReplyCard, markdown};
use weft_lark::rest::{ErrorClass, Fallback, MessageContent, ReceiveIdType, ReplyMode};
use weft_lark::sender::{RateAwareSender, RateLimits};
use weft_lark::text::Lang;

const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";

fn streaming_card(text: &str) -> Value {
    let mut card = ReplyCard::new("Weft", CardState::Streaming, Lang::En);
    card.body = text.into();
    card.render(MarkdownLimits::default()).remove(0)
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

    let mut card = ReplyCard::new("t", CardState::Done, Lang::En);
    card.body = tables(8);
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
async fn rate_aware_sender_keeps_bursts_within_the_limits() {
    let fake = fake(fast_config()).await;
    let sender = RateAwareSender::new(rest(&fake), RateLimits::default());

    // Eight cards patched as fast as they can be exceed 5/s per message and,
    // together with a streamed entity, the app's 50/s if unpaced.
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
    sender
        .send_message(ReceiveIdType::ChatId, "oc_entity", &card.as_message())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for id in messages.clone() {
        let sender = sender.clone();
        tasks.push(tokio::spawn(async move {
            for step in 0..8 {
                sender
                    .patch_card(&id, &streaming_card(&step.to_string()))
                    .await
                    .unwrap();
            }
        }));
    }
    let streaming = {
        let (sender, card) = (sender.clone(), card.clone());
        tokio::spawn(async move {
            let mut text = String::new();
            for _ in 0..15 {
                text.push_str("tok ");
                // Waiting for room first, then sending, never draws a 429.
                sender.app_room().await;
                sender
                    .stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, &text)
                    .await
                    .unwrap();
            }
            text
        })
    };
    for task in tasks {
        task.await.unwrap();
    }
    let text = streaming.await.unwrap();

    let records = fake.records();
    let limited: Vec<_> = records.calls.iter().filter(|c| c.status != 200).collect();
    assert!(limited.is_empty(), "no 429s: {limited:?}");
    for id in &messages {
        let last = records
            .calls_to("PATCH", &format!("/open-apis/im/v1/messages/{id}"))
            .last()
            .cloned()
            .unwrap();
        let card: Value = serde_json::from_str(last.body["content"].as_str().unwrap()).unwrap();
        assert_eq!(card["body"]["elements"][0]["content"], "7");
    }
    let entity = fake.card_entity(&card.card_id).unwrap();
    assert_eq!(entity.last_sequence, 15);
    assert_eq!(entity.updates_before_send, 0);
    assert_eq!(
        entity.document["body"]["elements"][0]["content"],
        text.as_str()
    );
}

#[tokio::test]
async fn the_fake_holds_card_entities_to_lark_s_rules() {
    let fake = fake(weft_lark::fake::FakeConfig {
        streaming_timeout: std::time::Duration::from_millis(300),
        ..fast_config()
    })
    .await;
    let rest = rest(&fake);
    let card = rest.create_card(&streaming_card("a")).await.unwrap();
    // An update before the message referencing it is sent is counted.
    rest.stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, "ab")
        .await
        .unwrap();
    let sent = rest
        .send_message(ReceiveIdType::ChatId, "oc_chat", &card.as_message())
        .await
        .unwrap();
    let entity = fake.card_entity(&card.card_id).unwrap();
    assert_eq!(entity.updates_before_send, 1);
    assert_eq!(entity.message_id.as_deref(), Some(sent.message_id.as_str()));
    let shown = fake
        .sent_messages()
        .into_iter()
        .find(|m| m.message_id == sent.message_id)
        .unwrap();
    assert_eq!(shown.card_id.as_deref(), Some(card.card_id.as_str()));
    assert_eq!(shown.content["body"]["elements"][0]["content"], "ab");

    // A sequence moved forward is fine; one not above the last is refused.
    card.advance_to(1_000);
    rest.stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, "abc")
        .await
        .unwrap();
    assert_eq!(
        fake.card_entity(&card.card_id).unwrap().last_sequence,
        1_000
    );
    let stale = weft_lark::rest::CardEntity::resume(card.card_id.clone(), 10);
    let err = rest
        .stream_element_content(&stale, weft_lark::card::BODY_ELEMENT_ID, "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(weft_lark::rest::CODE_CARDKIT_SEQUENCE));

    // Streaming closes by itself; a full update turns it on again.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let closed = rest
        .stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, "abcd")
        .await
        .unwrap_err();
    assert_eq!(closed.class(), ErrorClass::Fatal, "{closed}");
    rest.update_card(&card, &streaming_card("abcd"))
        .await
        .unwrap();
    assert!(fake.card_entity(&card.card_id).unwrap().streaming);
    rest.stream_element_content(&card, weft_lark::card::BODY_ELEMENT_ID, "abcde")
        .await
        .unwrap();

    // Element ids must be unique.
    let mut twice = streaming_card("x");
    let body = twice["body"]["elements"][0].clone();
    twice["body"]["elements"].as_array_mut().unwrap().push(body);
    let err = rest.create_card(&twice).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Fallback(Fallback::CardRejected));

    // An app without CardKit's scope is refused every call.
    fake.refuse_cardkit(Some((99991672, "Access denied: cardkit:card:write")));
    let err = rest.create_card(&streaming_card("")).await.unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Fatal, Some(99991672))
    );
}

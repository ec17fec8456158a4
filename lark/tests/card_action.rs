//! A button click end to end against the fake: an approval card sent over REST,
//! a click pushed as `card.action.trigger` on the long connection, our answer in
//! the ack, and the fake replacing the clicked card with the answered one.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Map, json};
use tokio_util::sync::CancellationToken;
use weft_lark::card::{ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalClick};
use weft_lark::event::CardActionResponse;
use weft_lark::fake::ClickError;
use weft_lark::rest::{MessageContent, ReceiveIdType};
use weft_lark::ws::{self, Delivery};

fn approval(answer: ApprovalAnswer) -> ApprovalCard {
    ApprovalCard {
        approval_id: "ap_7".into(),
        tool: "current_time".into(),
        args: json!({}),
        context: Map::from_iter([("run_id".to_owned(), json!("run_1"))]),
        answer,
    }
}

#[tokio::test]
async fn a_click_is_answered_in_the_ack_and_replaces_the_card() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();
    let open = approval(ApprovalAnswer::Open {
        expires_in: Duration::from_secs(600),
    });
    let sent = rest(&fake)
        .send_message(
            ReceiveIdType::ChatId,
            "oc_team",
            &MessageContent::Interactive(open.render()),
        )
        .await
        .unwrap();

    assert!(matches!(
        fake.click_button(&sent.message_id, "ou_bob", "Maybe"),
        Err(ClickError::NoSuchButton { available, .. }) if available == ["Approve", "Deny", "Always allow"]
    ));
    let event = fake
        .click_button(&sent.message_id, "ou_bob", "Deny")
        .unwrap();
    let Delivery::CardAction(action) = next_delivery(&mut rx, "the click").await else {
        panic!("expected a card action");
    };
    assert_eq!(action.envelope.header.event_id, event);
    assert_eq!(action.action.operator.open_id, "ou_bob");
    assert_eq!(action.action.context.open_message_id, sent.message_id);
    assert_eq!(action.action.context.open_chat_id, "oc_team");
    let click = ApprovalClick::parse(&action.action.action.value).expect("our button");
    assert_eq!(click.approval_id, "ap_7");
    assert_eq!(click.choice, ApprovalChoice::Deny);
    assert_eq!(click.context["run_id"], "run_1");
    let answered = approval(ApprovalAnswer::Denied { by: "bob".into() }).render();
    action.respond(CardActionResponse::toast("success", "Denied").with_card(answered.clone()));

    let records = fake
        .wait_until(WAIT, |r| r.acked(&event))
        .await
        .expect("the click is acked");
    assert_eq!(
        records.ack_data(&event),
        Some(&json!({"toast": {"type": "success", "content": "Denied"},
                     "card": {"type": "raw", "data": answered}}))
    );
    assert!(records.bad_frames.is_empty(), "{:?}", records.bad_frames);
    let card = fake
        .sent_messages()
        .into_iter()
        .find(|m| m.message_id == sent.message_id)
        .unwrap();
    assert_eq!(
        card.content, answered,
        "the answered card replaced the clicked one"
    );
    assert!(
        matches!(
            fake.click_button(&sent.message_id, "ou_bob", "Approve"),
            Err(ClickError::NoSuchButton { available, .. }) if available.is_empty()
        ),
        "the answered card has no buttons left"
    );
    cancel.cancel();
}

#[tokio::test]
async fn a_click_left_unanswered_is_acked_without_an_answer_before_lark_gives_up() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let mut config = ws_config(&fake);
    config.card_response_deadline = Duration::from_millis(300);
    let (mut rx, _task) = ws::start(config, cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();
    let open = approval(ApprovalAnswer::Open {
        expires_in: Duration::from_secs(600),
    });
    let sent = rest(&fake)
        .send_message(
            ReceiveIdType::ChatId,
            "oc_team",
            &MessageContent::Interactive(open.render()),
        )
        .await
        .unwrap();
    let event = fake
        .click_button(&sent.message_id, "ou_bob", "approve")
        .unwrap();
    // Held and never answered: the ack still goes out, with no data.
    let _held = next_delivery(&mut rx, "the click").await;
    let records = fake.wait_until(WAIT, |r| r.acked(&event)).await.unwrap();
    assert_eq!(records.ack_data(&event), None);
    assert_eq!(records.attempts_of(&event).len(), 1, "no redelivery");
    cancel.cancel();
}

//! One flooded chat holds up no other chat and no button click (issue 20).
//! Before, every message took one of the gateway's 256 handler slots before it
//! waited for its chat, so a chat with 256 messages in line blocked everyone
//! else's messages and every approval click. Here the slots are 4, one chat's
//! line 6, and the chat's first message hangs on a file download that the fake
//! Lark holds.

use serde_json::json;
use weft_files::samples;
use weft_lark::fake::{FakeResource, PushOptions};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(a_flooded_chat_holds_up_no_other_chat_nor_any_click);

async fn a_flooded_chat_holds_up_no_other_chat_nor_any_click(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[
            ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm"),
            ("WEFT_LARK__MAX_CONCURRENT_MESSAGES", "4"),
            ("WEFT_LARK__QUEUED_MESSAGES_PER_CHAT", "6"),
        ],
    )
    .await;
    // Alice's reply waits for her click.
    let asked = w.dm("ou_alice", "what time is it? @mock.tool current_time {}");
    let ask = w
        .until("the approval card", |_| {
            w.replies(&asked).into_iter().find(|m| {
                !element(m, "approval_call").is_empty()
                    && m.content.to_string().contains("\"Approve\"")
            })
        })
        .await;

    // Bob's chat: a message whose image takes for ever to fetch, then 11 more.
    let hold = w.fake.hold_downloads();
    let mut bob = Vec::new();
    let (event, held) = w.ids();
    w.fake
        .add_resource(&held, "img_held", FakeResource::image(samples::png()));
    let mut envelope = message_event(
        &event,
        &held,
        "oc_dm_ou_bob",
        "p2p",
        "",
        "ou_bob",
        "",
        json!([]),
    );
    envelope["event"]["message"]["message_type"] = json!("post");
    envelope["event"]["message"]["content"] = json!(
        json!({"zh_cn": {"title": "", "content": [
            [{"tag": "text", "text": "@mock.reply got the picture"}],
            [{"tag": "img", "image_key": "img_held"}],
        ]}})
        .to_string()
    );
    w.fake.push_event(envelope, PushOptions::default());
    bob.push(held.clone());
    for i in 1..12 {
        bob.push(w.dm("ou_bob", &format!("@mock.reply and {i}")));
    }

    // Carol is answered, and Alice's click decides, while Bob's chat is stuck.
    let hello = w.dm("ou_carol", "@mock.reply hello carol");
    let card = w.final_card(&hello).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    assert_eq!(body(&card), "hello carol");
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "Approve")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    assert_eq!(template(&w.final_card(&asked).await), "green");
    assert!(
        w.replies(&held).is_empty(),
        "Bob's first message was still waiting for its image"
    );

    // Bob's seventh message found his chat's line full: told once, the rest dropped.
    let busy = w
        .until("the busy notice", |_| w.replies(&bob[6]).into_iter().next())
        .await;
    assert!(notice(&busy).contains("did not read"), "{}", notice(&busy));

    drop(hold);
    let card = w.final_card(&held).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    for late in &bob[7..] {
        assert!(w.replies(late).is_empty(), "{late} was answered");
    }
}

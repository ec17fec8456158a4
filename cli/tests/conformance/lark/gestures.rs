//! Natural gestures in a group (issue 21): replying to one of the bot's
//! messages addresses it without an @mention; what a message replies to — its
//! words, its image — reaches the model with the turn; replies among people,
//! and images nobody addressed to the bot, stay unanswered. With `[lark]
//! group_context_messages`, the group's latest messages go with a reply as its
//! background.

use serde_json::{Value, json};
use weft_files::samples;
use weft_lark::fake::{FakeResource, PushOptions};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    replies_to_the_bot_and_quoted_messages_reach_the_model,
    a_groups_background_reaches_the_model,
);

const TEAM: &str = "oc_team";

/// A group message from `sender` replying to `parent`, with `mentions`; of
/// `message_type` with `content`.
fn reply(
    w: &mut LarkWorld,
    sender: &str,
    parent: &str,
    message_type: &str,
    content: Value,
    mentions: Value,
) -> String {
    let (event, message) = w.ids();
    let mut envelope = message_event(&event, &message, TEAM, "group", "", sender, "", mentions);
    let m = &mut envelope["event"]["message"];
    m["parent_id"] = json!(parent);
    m["message_type"] = json!(message_type);
    m["content"] = json!(content.to_string());
    w.fake.push_event(envelope, PushOptions::default());
    message
}

/// The session's messages as the linked owner reads them.
async fn messages(w: &LarkWorld, token: &str) -> Vec<Value> {
    let sessions = w.get_json("/v1/sessions", token).await;
    let id = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    w.get_json(&format!("/v1/sessions/{id}/messages"), token)
        .await["messages"]
        .as_array()
        .unwrap()
        .clone()
}

async fn replies_to_the_bot_and_quoted_messages_reach_the_model(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let first = w.group(TEAM, "ou_alice", "@mock.reply The deploy is at four.");
    let card = w.final_card(&first).await;

    // Bob answers the bot's card, no mention: for the bot, with the quote.
    let followup = reply(
        &mut w,
        "ou_bob",
        &card.message_id,
        "text",
        json!({"text": "which timezone? @mock.context"}),
        json!([]),
    );
    w.final_card(&followup).await;
    let said = messages(&w, &alice).await;
    let picture: Value = serde_json::from_str(
        said.iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .and_then(|m| m["content"].as_str())
            .unwrap(),
    )
    .unwrap();
    let last = picture["users"].as_array().unwrap().last().unwrap().clone();
    let last = last.as_str().unwrap();
    assert!(
        last.starts_with("[Bob] [Replying to your earlier reply: \"")
            && last.contains("The deploy is at four.")
            && last.ends_with("\"]\nwhich timezone? @mock.context"),
        "{last}"
    );

    // A reply to a person, without a mention, is not for the bot; an image
    // posted without addressing the bot neither.
    let aside = reply(
        &mut w,
        "ou_bob",
        &first,
        "text",
        json!({"text": "thanks Alice"}),
        json!([]),
    );
    let png = samples::png();
    let (event, photo) = w.ids();
    w.fake.add_resource(
        &photo,
        "img_v3_whiteboard",
        FakeResource::image(png.clone()),
    );
    let mut envelope = message_event(&event, &photo, TEAM, "group", "", "ou_alice", "", json!([]));
    envelope["event"]["message"]["message_type"] = json!("image");
    envelope["event"]["message"]["content"] =
        json!(json!({"image_key": "img_v3_whiteboard"}).to_string());
    w.fake.push_event(envelope, PushOptions::default());

    // Replying to that image with a mention brings the image into the turn.
    let asked = reply(
        &mut w,
        "ou_bob",
        &photo,
        "text",
        json!({"text": "@_user_1 what is on it? @mock.describe_images"}),
        bot_mention(),
    );
    let card = w.final_card(&asked).await;
    assert!(
        body(&card).contains(&format!("image/png, {} bytes", png.len())),
        "{}",
        body(&card)
    );
    // Messages of one chat are handled in order: the two before were seen, and
    // neither was answered.
    assert!(w.replies(&aside).is_empty(), "a reply among people");
    assert!(w.replies(&photo).is_empty(), "an image for nobody");
    let said = messages(&w, &alice).await;
    let turn = said.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(turn["author_name"], "Bob");
    assert_eq!(turn["attachments"][0]["kind"], "image", "{turn}");
}

/// A group message from `sender` addressed to nobody (no mention).
fn chatter(w: &mut LarkWorld, sender: &str, text: &str) {
    let (event, message) = w.ids();
    let envelope = message_event(&event, &message, TEAM, "group", "", sender, text, json!([]));
    w.fake.push_event(envelope, PushOptions::default());
}

/// The newest user turn as the model read it (`@mock.context` answers it).
fn newest_turn(messages: &[Value]) -> String {
    let picture = picture(messages);
    let users = picture["users"].as_array().unwrap();
    users.last().and_then(Value::as_str).unwrap().to_owned()
}

async fn a_groups_background_reaches_the_model(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_LARK__GROUP_CONTEXT_MESSAGES", "3")],
    )
    .await;
    let alice = w.linked_account("alice", "ou_alice").await;
    for (who, text) in [
        ("ou_alice", "one"),
        ("ou_bob", "two"),
        ("ou_alice", "three"),
        ("ou_bob", "four"),
    ] {
        chatter(&mut w, who, text);
    }
    let asked = w.group(TEAM, "ou_alice", "what did they say @mock.context");
    w.final_card(&asked).await;
    // The last three, oldest first, with their speakers; the chatter itself
    // was not answered and is not stored.
    let seen = newest_turn(&messages(&w, &alice).await);
    assert_eq!(
        seen,
        "[Recent messages in this group, oldest first: background only, not addressed to you]\n\
         [Bob] two\n[Alice] three\n[Bob] four\n[End of the background]\n\n\
         [Alice] what did they say @mock.context"
    );
    let stored = messages(&w, &alice).await;
    assert_eq!(stored.iter().filter(|m| m["role"] == "user").count(), 1);

    // The bot's reply and the question to it are the conversation, not its
    // background.
    chatter(&mut w, "ou_bob", "five");
    let again = w.group(TEAM, "ou_alice", "and now @mock.context");
    w.final_card(&again).await;
    let seen = newest_turn(&messages(&w, &alice).await);
    assert!(
        seen.contains(
            "\n[Alice] three\n[Bob] four\n[Bob] five\n[End of the background]\n\n[Alice] and now"
        ),
        "{seen}"
    );

    // Without the permission: answered without a background, and one warning
    // card for the chat however many replies follow.
    w.fake.deny_group_history(true);
    let warnings = |f: &weft_lark::fake::FakeLark| {
        f.sent_messages()
            .into_iter()
            .filter(|m| m.chat_id == TEAM && m.reply_to.is_empty())
            .filter(|m| m.content.to_string().contains("im:message.group_msg"))
            .count()
    };
    for text in ["third @mock.context", "fourth @mock.context"] {
        let m = w.group(TEAM, "ou_alice", text);
        w.final_card(&m).await;
        let seen = newest_turn(&messages(&w, &alice).await);
        assert_eq!(seen, format!("[Alice] {text}"));
    }
    w.until("the warning card", |f| (warnings(f) > 0).then_some(()))
        .await;
    assert_eq!(warnings(&w.fake), 1, "{}", w.logs());
}

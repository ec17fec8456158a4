use serde_json::{Value, json};
use weft_lark::rest::ResourceType;

use super::*;

const NOW: i64 = 1_800_000_000_000;

fn me() -> BotIdentity {
    BotIdentity {
        app_id: "cli_app".into(),
        open_id: "ou_bot".into(),
    }
}

fn event(chat_type: &str, text: &str, mentions: Value) -> EventEnvelope {
    serde_json::from_value(json!({
        "schema": "2.0",
        "header": {"event_id": "e1", "event_type": "im.message.receive_v1", "app_id": "cli_app", "create_time": NOW.to_string()},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_alice"}, "sender_type": "user"},
            "message": {"message_id": "om_1", "chat_id": "oc_1", "thread_id": "", "chat_type": chat_type,
                        "message_type": "text", "create_time": NOW.to_string(),
                        "content": json!({"text": text}).to_string(), "mentions": mentions},
        }
    }))
    .unwrap()
}

fn bot_mention() -> Value {
    json!([{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "Weft"}])
}

fn text_of(v: Verdict) -> String {
    match message_of(v) {
        (text, files) if files.is_empty() => text,
        other => panic!("not text alone: {other:?}"),
    }
}

fn message_of(v: Verdict) -> (String, Vec<LarkFile>) {
    match v {
        Verdict::Handle(Incoming {
            body: Body::Message { text, files },
            ..
        }) => (text, files),
        other => panic!("not handled as a message: {other:?}"),
    }
}

fn file(key: &str, kind: ResourceType, name: Option<&str>) -> LarkFile {
    LarkFile {
        message_id: None,
        key: key.into(),
        kind,
        name: name.map(Into::into),
    }
}

#[test]
fn direct_messages_are_handled() {
    let v = classify(
        &event("p2p", "hello", json!([])),
        &me(),
        &LarkConfig::default(),
        NOW,
    );
    assert_eq!(text_of(v), "hello");
}

#[test]
fn a_reply_without_a_mention_is_handled_once_it_proves_it_is_for_the_bot() {
    let cfg = LarkConfig::default();
    let mut reply = event("group", "and then?", json!([]));
    reply.event["message"]["parent_id"] = json!("om_bot_card");
    let Verdict::Handle(incoming) = classify(&reply, &me(), &cfg, NOW) else {
        panic!("a reply is looked at");
    };
    assert!(incoming.needs_reply_to_bot);
    assert_eq!(incoming.parent_id, "om_bot_card");
    // With a mention it is for the bot whatever it replies to.
    let mut mentioned = event("group", "@_user_1 and then?", bot_mention());
    mentioned.event["message"]["parent_id"] = json!("om_other");
    let Verdict::Handle(incoming) = classify(&mentioned, &me(), &cfg, NOW) else {
        panic!("handled");
    };
    assert!(!incoming.needs_reply_to_bot);
}

#[test]
fn groups_need_a_mention_of_the_bot_and_at_all_never_counts() {
    let cfg = LarkConfig::default();
    let plain = event("group", "hello", json!([]));
    assert_eq!(
        classify(&plain, &me(), &cfg, NOW),
        Verdict::Ignore("group message without a mention of the bot")
    );
    let all = event(
        "group",
        "@_all hello",
        json!([{"key": "@_all", "id": {"open_id": ""}, "name": "all"}]),
    );
    assert!(matches!(
        classify(&all, &me(), &cfg, NOW),
        Verdict::Ignore(_)
    ));
    let mentioned = event("group", "@_user_1 /help", bot_mention());
    assert_eq!(text_of(classify(&mentioned, &me(), &cfg, NOW)), "/help");
    let open = LarkConfig {
        require_mention: false,
        ..LarkConfig::default()
    };
    assert_eq!(text_of(classify(&plain, &me(), &open, NOW)), "hello");
}

#[test]
fn other_mentions_become_names() {
    let mentions = json!([
        {"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "Weft"},
        {"key": "@_user_2", "id": {"open_id": "ou_bob"}, "name": "Bob"},
    ]);
    let v = classify(
        &event("group", "@_user_1 ask @_user_2 now", mentions),
        &me(),
        &LarkConfig::default(),
        NOW,
    );
    assert_eq!(text_of(v), "ask @Bob now");
}

#[test]
fn what_is_ignored() {
    let cfg = LarkConfig::default();
    let mut other_app = event("p2p", "hi", json!([]));
    other_app.header.app_id = "cli_other".into();
    assert_eq!(
        classify(&other_app, &me(), &cfg, NOW),
        Verdict::Ignore("event for another app")
    );
    let mut from_bot = event("p2p", "hi", json!([]));
    from_bot.event["sender"]["sender_id"]["open_id"] = json!("ou_bot");
    assert_eq!(
        classify(&from_bot, &me(), &cfg, NOW),
        Verdict::Ignore("sent by a bot")
    );
    let mut app_sender = event("p2p", "hi", json!([]));
    app_sender.event["sender"]["sender_type"] = json!("app");
    assert_eq!(
        classify(&app_sender, &me(), &cfg, NOW),
        Verdict::Ignore("sent by a bot")
    );
    let stale = event("p2p", "hi", json!([]));
    assert_eq!(
        classify(&stale, &me(), &cfg, NOW + MAX_AGE_MS + 1),
        Verdict::Ignore("older than 30 minutes")
    );
    let mut odd = event("p2p", "hi", json!([]));
    odd.event = json!({"message": 5});
    assert_eq!(
        classify(&odd, &me(), &cfg, NOW),
        Verdict::Ignore("malformed message event")
    );
    let mut card = event("p2p", "hi", json!([]));
    card.header.event_type = "im.chat.member.bot.added_v1".into();
    assert_eq!(
        classify(&card, &me(), &cfg, NOW),
        Verdict::Ignore("not a message event")
    );
    let only = LarkConfig {
        allowed_chats: vec!["oc_2".into()],
        ..LarkConfig::default()
    };
    assert_eq!(
        classify(&event("p2p", "hi", json!([])), &me(), &only, NOW),
        Verdict::Ignore("chat not in lark.allowed_chats")
    );
}

#[test]
fn images_files_and_posts_are_read_and_the_rest_is_unsupported() {
    let cfg = LarkConfig::default();
    let with = |kind: &str, content: Value| {
        let mut e = event("p2p", "", json!([]));
        e.event["message"]["message_type"] = json!(kind);
        e.event["message"]["content"] = json!(content.to_string());
        classify(&e, &me(), &cfg, NOW)
    };
    assert_eq!(
        message_of(with("image", json!({"image_key": "img_1"}))),
        (
            String::new(),
            vec![file("img_1", ResourceType::Image, None)]
        )
    );
    assert_eq!(
        message_of(with(
            "file",
            json!({"file_key": "file_1", "file_name": "q3.pdf"})
        )),
        (
            String::new(),
            vec![file("file_1", ResourceType::File, Some("q3.pdf"))]
        )
    );
    assert_eq!(
        text_of(with(
            "post",
            json!({"zh_cn": {"title": "T", "content": [[{"tag": "text", "text": "line one"}], [{"tag": "a", "text": "link", "href": "x"}]]}})
        )),
        "T\nline one\nlink"
    );
    assert_eq!(
        message_of(with(
            "post",
            json!({"title": "", "content": [
                [{"tag": "text", "text": "what is this? "}, {"tag": "img", "image_key": "img_a"}],
                [{"tag": "img", "image_key": "img_b"}],
            ]})
        )),
        (
            "what is this?".to_owned(),
            vec![
                file("img_a", ResourceType::Image, None),
                file("img_b", ResourceType::Image, None)
            ]
        )
    );
    for (kind, content, why) in [
        ("audio", json!({"file_key": "f", "duration": 3}), "audio"),
        ("sticker", json!({"file_key": "f"}), "sticker"),
        ("image", json!({}), "image"),
        ("file", json!({"file_name": "x"}), "file"),
        (
            "post",
            json!({"content": [[{"tag": "media", "file_key": "f", "image_key": "i"}]]}),
            "post with video",
        ),
    ] {
        match with(kind, content) {
            Verdict::Handle(Incoming {
                body: Body::Unsupported(k),
                ..
            }) => assert_eq!(k, why),
            other => panic!("{kind}: {other:?}"),
        }
    }
}

#[test]
fn threads_are_their_own_conversation() {
    let mut e = event("group", "@_user_1 hi", bot_mention());
    e.event["message"]["thread_id"] = json!("omt_9");
    match classify(&e, &me(), &LarkConfig::default(), NOW) {
        Verdict::Handle(i) => assert_eq!(i.chat.key(), "oc_1/omt_9"),
        other => panic!("{other:?}"),
    }
}

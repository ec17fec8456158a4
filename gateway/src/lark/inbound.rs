//! What an inbound Lark event asks of the bot, decided without any I/O: ignore it
//! (and why), or handle a message from someone in some conversation. Kept pure so
//! every rule — other apps, the bot's own messages, stale redeliveries, groups
//! without a mention, `@_all` — is a unit test, not a scenario.

use serde_json::Value;
use weft_lark::event::{EventEnvelope, MESSAGE_RECEIVE, Mention, ReceivedMessage};
use weft_shared::config::LarkConfig;
use weft_shared::store::LarkChat;

/// Messages older than this are dropped: Lark redelivers for hours, and a reply
/// to something said half an hour ago only confuses.
pub const MAX_AGE_MS: i64 = 30 * 60 * 1000;

/// The key Lark uses for an @everyone mention.
const MENTION_ALL: &str = "@_all";

/// Who the bot is.
#[derive(Debug, Clone)]
pub struct BotIdentity {
    pub app_id: String,
    pub open_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatType {
    P2p,
    Group,
}

/// A message for the bot.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    pub message_id: String,
    pub chat: LarkChat,
    pub chat_type: ChatType,
    pub sender_open_id: String,
    pub body: Body,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// The text with the bot's mention removed and other mentions as `@name`.
    Text(String),
    /// Something the bot cannot read yet (image, file, audio, sticker, …).
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Handle(Incoming),
    Ignore(&'static str),
}

/// Decides what to do with `envelope` at `now_ms`.
pub fn classify(
    envelope: &EventEnvelope,
    me: &BotIdentity,
    config: &LarkConfig,
    now_ms: i64,
) -> Verdict {
    use Verdict::Ignore;
    let header = &envelope.header;
    if !header.app_id.is_empty() && header.app_id != me.app_id {
        return Ignore("event for another app");
    }
    if header.event_type != MESSAGE_RECEIVE {
        return Ignore("not a message event");
    }
    let Some(Ok(receive)) = envelope.message_receive() else {
        return Ignore("malformed message event");
    };
    let (sender, message) = (receive.sender, receive.message);
    let sender_open_id = sender.sender_id.open_id;
    if sender.sender_type == "app" || sender_open_id == me.open_id {
        return Ignore("sent by a bot");
    }
    if message.message_id.is_empty() || message.chat_id.is_empty() {
        return Ignore("message without id or chat");
    }
    if sender_open_id.is_empty() {
        return Ignore("sender without open_id");
    }
    let created = message.create_time.parse::<i64>().unwrap_or(now_ms);
    if now_ms - created > MAX_AGE_MS {
        return Ignore("older than 30 minutes");
    }
    if !config.allowed_chats.is_empty() && !config.allowed_chats.contains(&message.chat_id) {
        return Ignore("chat not in lark.allowed_chats");
    }
    let chat_type = if message.chat_type == "p2p" {
        ChatType::P2p
    } else {
        ChatType::Group
    };
    let mentioned = message
        .mentions
        .iter()
        .any(|m| m.key != MENTION_ALL && !me.open_id.is_empty() && m.id.open_id == me.open_id);
    if chat_type == ChatType::Group && config.require_mention && !mentioned {
        return Ignore("group message without a mention of the bot");
    }
    let body = match readable_text(&message) {
        Ok(text) => {
            let text = strip_mentions(&text, &message.mentions, &me.open_id);
            if text.is_empty() {
                return Ignore("empty after removing the mention");
            }
            Body::Text(text)
        }
        Err(kind) => Body::Unsupported(kind),
    };
    Verdict::Handle(Incoming {
        chat: LarkChat {
            chat_id: message.chat_id,
            thread_id: message.thread_id,
        },
        message_id: message.message_id,
        chat_type,
        sender_open_id,
        body,
    })
}

/// The text of a `text` message, or of a `post` made only of text; otherwise the
/// kind of content that cannot be read.
fn readable_text(message: &ReceivedMessage) -> Result<String, String> {
    match message.message_type.as_str() {
        "text" => message.text().ok_or_else(|| "text".to_owned()),
        "post" => post_text(&message.content).ok_or_else(|| "post with images".to_owned()),
        other => Err(other.to_owned()),
    }
}

/// A post's paragraphs as lines; `None` when it carries images or media.
fn post_text(content: &str) -> Option<String> {
    let v: Value = serde_json::from_str(content).ok()?;
    // Posts may arrive wrapped in a locale key (`{"zh_cn": {…}}`).
    let post = if v.get("content").is_some() {
        &v
    } else {
        v.as_object()?
            .values()
            .find(|x| x.get("content").is_some())?
    };
    let mut lines = Vec::new();
    if let Some(title) = post["title"].as_str().filter(|t| !t.is_empty()) {
        lines.push(title.to_owned());
    }
    for paragraph in post["content"].as_array()? {
        let mut line = String::new();
        for node in paragraph.as_array()? {
            match node["tag"].as_str().unwrap_or_default() {
                "text" | "a" | "md" | "code_block" => {
                    line.push_str(node["text"].as_str().unwrap_or_default())
                }
                "at" => {
                    line.push_str(&format!(
                        "@_at_{}",
                        node["user_id"].as_str().unwrap_or_default()
                    ));
                }
                "img" | "media" => return None,
                _ => {}
            }
        }
        lines.push(line);
    }
    Some(lines.join("\n"))
}

/// Removes the bot's mention placeholder; other mentions become `@name`.
fn strip_mentions(text: &str, mentions: &[Mention], bot_open_id: &str) -> String {
    let mut out = text.to_owned();
    for m in mentions.iter().filter(|m| !m.key.is_empty()) {
        let replacement = if m.id.open_id == bot_open_id && !bot_open_id.is_empty() {
            String::new()
        } else if m.key == MENTION_ALL {
            "@all".to_owned()
        } else {
            format!("@{}", m.name)
        };
        // Posts spell mentions by user id instead of by key.
        let by_user = (!m.id.user_id.is_empty()).then(|| format!("@_at_{}", m.id.user_id));
        for key in std::iter::once(m.key.clone()).chain(by_user) {
            if replacement.is_empty() {
                out = out.replace(&format!("{key} "), "");
            }
            out = out.replace(&key, &replacement);
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
        match v {
            Verdict::Handle(Incoming {
                body: Body::Text(t),
                ..
            }) => t,
            other => panic!("not handled as text: {other:?}"),
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
    fn images_are_unsupported_and_text_posts_are_read() {
        let mut image = event("p2p", "", json!([]));
        image.event["message"]["message_type"] = json!("image");
        image.event["message"]["content"] = json!(r#"{"image_key":"img_1"}"#);
        match classify(&image, &me(), &LarkConfig::default(), NOW) {
            Verdict::Handle(Incoming {
                body: Body::Unsupported(kind),
                ..
            }) => assert_eq!(kind, "image"),
            other => panic!("{other:?}"),
        }
        let mut post = event("p2p", "", json!([]));
        post.event["message"]["message_type"] = json!("post");
        post.event["message"]["content"] = json!(
            json!({"zh_cn": {"title": "T", "content": [[{"tag": "text", "text": "line one"}], [{"tag": "a", "text": "link", "href": "x"}]]}}).to_string()
        );
        assert_eq!(
            text_of(classify(&post, &me(), &LarkConfig::default(), NOW)),
            "T\nline one\nlink"
        );
        let mut post_img = post.clone();
        post_img.event["message"]["content"] = json!(
            json!({"title": "", "content": [[{"tag": "img", "image_key": "i"}]]}).to_string()
        );
        assert!(matches!(
            classify(&post_img, &me(), &LarkConfig::default(), NOW),
            Verdict::Handle(Incoming {
                body: Body::Unsupported(_),
                ..
            })
        ));
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
}

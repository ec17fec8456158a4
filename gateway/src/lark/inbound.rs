//! What an inbound Lark event asks of the bot, decided without any I/O: ignore it
//! (and why), or handle a message from someone in some conversation. Kept pure so
//! every rule — other apps, the bot's own messages, stale redeliveries, groups
//! without a mention, `@_all` — is a unit test, not a scenario.
//!
//! A message is read as text plus the files it carries: an `image` message is one
//! image, a `file` message one file, a `post` its text and its `img` elements.
//! Only their keys are known here; the bytes are fetched when it is handled.

use serde_json::Value;
use weft_lark::event::{EventEnvelope, MESSAGE_RECEIVE, Mention, ReceivedMessage};
use weft_lark::rest::ResourceType;
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
    /// The message this one replies to (quotes); empty when none.
    pub parent_id: String,
    /// Whether it must still prove it is for the bot: a group message without
    /// a mention (where one is required) that replies to some message, which
    /// addresses the bot only when that message is the bot's.
    pub needs_reply_to_bot: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// The text with the bot's mention removed and other mentions as `@name`
    /// (empty when only files came), and the files to fetch, in message order.
    Message { text: String, files: Vec<LarkFile> },
    /// Something the bot cannot read (audio, video, a sticker, …): its kind.
    Unsupported(String),
}

/// A file or image of a message, fetched from Lark by the message id and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkFile {
    /// The message that carries it, when not the one being handled (a quoted
    /// message's image or file).
    pub message_id: Option<String>,
    pub key: String,
    pub kind: ResourceType,
    /// A `file` message's `file_name`; images have no name.
    pub name: Option<String>,
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
    // A reply to one of the bot's messages addresses it without a mention;
    // whose the quoted message is, the handler asks Lark.
    let needs_reply_to_bot = chat_type == ChatType::Group && config.require_mention && !mentioned;
    if needs_reply_to_bot && message.parent_id.is_empty() {
        return Ignore("group message without a mention of the bot");
    }
    let body = match readable(&message) {
        Ok((text, files)) => {
            let text = strip_mentions(&text, &message.mentions, &me.open_id);
            if text.is_empty() && files.is_empty() {
                return Ignore("empty after removing the mention");
            }
            Body::Message { text, files }
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
        parent_id: message.parent_id,
        needs_reply_to_bot,
    })
}

/// The text and files of a `text`, `post`, `image` or `file` message; otherwise
/// the kind of content that cannot be read.
fn readable(message: &ReceivedMessage) -> Result<(String, Vec<LarkFile>), String> {
    let content = || serde_json::from_str::<Value>(&message.content).ok();
    let key = |v: &Value, field: &str| {
        v[field]
            .as_str()
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
    };
    let kind = message.message_type.as_str();
    match kind {
        "text" => message
            .text()
            .map(|text| (text, Vec::new()))
            .ok_or_else(|| kind.to_owned()),
        "post" => post(&message.content).ok_or_else(|| "post with video".to_owned()),
        "image" => content()
            .and_then(|v| key(&v, "image_key"))
            .map(|key| (String::new(), vec![image(key)]))
            .ok_or_else(|| kind.to_owned()),
        "file" => content()
            .and_then(|v| {
                let file = LarkFile {
                    message_id: None,
                    key: key(&v, "file_key")?,
                    kind: ResourceType::File,
                    name: key(&v, "file_name"),
                };
                Some((String::new(), vec![file]))
            })
            .ok_or_else(|| kind.to_owned()),
        other => Err(other.to_owned()),
    }
}

fn image(key: String) -> LarkFile {
    LarkFile {
        message_id: None,
        key,
        kind: ResourceType::Image,
        name: None,
    }
}

/// A post's paragraphs as lines and its `img` elements as images; `None` when
/// it carries a video (`media`) or is malformed.
pub(super) fn post(content: &str) -> Option<(String, Vec<LarkFile>)> {
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
    let mut images = Vec::new();
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
                "img" => {
                    if let Some(key) = node["image_key"].as_str().filter(|k| !k.is_empty()) {
                        images.push(image(key.to_owned()));
                    }
                }
                "media" => return None,
                _ => {}
            }
        }
        lines.push(line);
    }
    Some((lines.join("\n"), images))
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
}

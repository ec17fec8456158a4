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
pub(super) fn readable(message: &ReceivedMessage) -> Result<(String, Vec<LarkFile>), String> {
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
fn post(content: &str) -> Option<(String, Vec<LarkFile>)> {
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
mod tests;

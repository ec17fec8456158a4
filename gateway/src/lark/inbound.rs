//! What an inbound Lark event asks of the bot, decided without any I/O: ignore it
//! (and why), or handle a message from someone in some conversation. Kept pure so
//! every rule — other apps, the bot's own messages, stale redeliveries, groups
//! without a mention, `@_all` — is a unit test, not a scenario.
//!
//! A message is read as text plus the files it carries: an `image` message is one
//! image, a `file` message one file, a `post` its text and its `img` elements.
//! Only their keys are known here; the bytes are fetched when it is handled.

use weft_config::LarkConfig;
pub use weft_lark::content::LarkFile;
use weft_lark::content::{MENTION_ALL, readable, strip_mentions};
use weft_lark::event::{EventEnvelope, MESSAGE_RECEIVE};
use weft_store::LarkChat;

/// Messages older than this are dropped: Lark redelivers for hours, and a reply
/// to something said half an hour ago only confuses.
pub const MAX_AGE_MS: i64 = 30 * 60 * 1000;

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
    let body = match readable(&message.message_type, &message.content) {
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

#[cfg(test)]
mod tests;

//! A group's background (`[lark] group_context_messages = N`): the last N
//! messages of the group — who wrote what — go with a reply's context, so the
//! bot follows a conversation it was not addressed in.
//!
//! They are read when the reply starts (each attempt, so a resumed reply reads
//! the group as it is then), with one `GET /open-apis/im/v1/messages` of the
//! chat, newest first, and never stored: the session keeps only what was said
//! to the bot. Left out are the bot's own messages and those that @mention it
//! (both are the conversation already), and everything from the run's own
//! question on. The background goes before the newest user turn, so the
//! system prompt and earlier turns stay the same prefix from reply to reply
//! (what providers cache).
//!
//! Reading a group's messages needs a scope (`im:message.group_msg`) a tenant
//! admin may not have granted. Without it the reply goes on without the
//! background, and the chat gets one warning card an hour: this process
//! remembers whom it warned, and the card's `uuid` (the chat and the hour) makes
//! Lark take one such card per chat and hour from all workers together.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_lark::card::{CardState, notice_card};
use weft_lark::rest::{CODE_SCOPE_MISSING, FetchedMessage, MessageContent, ReceiveIdType};
use weft_lark::text::{Lang, Text};
use weft_shared::ids::RunId;
use weft_shared::time::now_ms;
use weft_store::retrying;

use super::LarkEgress;

/// A background message is cut to this many characters.
const MESSAGE_CHARS: usize = 500;
/// Lark's page: the most messages one call reads.
const PAGE: u32 = 50;
/// Waiting longer than this for Lark delays the reply more than the
/// background is worth.
const READ_WITHIN: Duration = Duration::from_secs(3);
const WARN_EVERY: Duration = Duration::from_secs(3600);

/// Chats warned about the missing scope, and when.
#[derive(Default)]
pub(super) struct Warned(Mutex<HashMap<String, Instant>>);

impl LarkEgress {
    /// The background of `run`'s group, `count` messages at most, ready to go
    /// before its question; `None` outside a group, or when Lark will not say.
    pub(crate) async fn background(&self, run: &RunId, count: u32) -> Option<String> {
        // Optional context: a short retry, not the card's patient one.
        let target = match retrying("lark target", || self.store.lark_target(run)).await {
            Ok(target) => target.filter(|t| t.shared)?,
            Err(e) => {
                tracing::warn!(run.id = %run, error = %e, "reading the run's lark chat failed; no group background");
                return None;
            }
        };
        let chat = &target.chat.chat_id;
        // Room for the messages that are left out (the bot's, mentions of it).
        let read = (count.saturating_mul(2)).clamp(count, PAGE);
        let listed = tokio::time::timeout(READ_WITHIN, self.sender.chat_messages(chat, read)).await;
        let newest_first = match listed {
            Ok(Ok(messages)) => messages,
            Ok(Err(e)) if e.code() == Some(CODE_SCOPE_MISSING) => {
                let lang = Lang::of(&target.text, self.tenant);
                self.warn_no_scope(chat, lang).await;
                return None;
            }
            Ok(Err(e)) => {
                tracing::warn!(lark.chat_id = %chat, error = %e, "reading the group's recent messages failed; replying without them");
                return None;
            }
            Err(_) => {
                tracing::warn!(lark.chat_id = %chat, "lark did not list the group's messages within 3 s; replying without them");
                return None;
            }
        };
        let bot = self.bot_open_id().await;
        // From the run's own question on it is the conversation, not its background.
        let before = match target.reply_to.as_deref() {
            Some(question) => match newest_first.iter().position(|m| m.message_id == question) {
                Some(at) => &newest_first[at + 1..],
                None => &newest_first[..],
            },
            None => &newest_first[..],
        };
        let mut picked: Vec<&FetchedMessage> = before
            .iter()
            .filter(|m| !m.deleted && m.sender.sender_type == "user")
            .filter(|m| {
                !bot.as_deref()
                    .is_some_and(|b| m.mentions.iter().any(|x| x.id == b))
            })
            .take(count as usize)
            .collect();
        if picked.is_empty() {
            return None;
        }
        picked.reverse();
        let mut lines = vec![
            "[Recent messages in this group, oldest first: background only, not addressed to you]"
                .to_owned(),
        ];
        for m in picked {
            let who = self.names.of(&self.sender, &m.sender.id).await;
            lines.push(format!("[{who}] {}", readable(m)));
        }
        lines.push("[End of the background]".to_owned());
        Some(lines.join("\n"))
    }

    async fn bot_open_id(&self) -> Option<String> {
        self.bot
            .get_or_try_init(|| async { self.sender.bot_info().await.map(|b| b.open_id) })
            .await
            .inspect_err(|e| tracing::warn!(error = %e, "reading the bot's identity failed"))
            .ok()
            .cloned()
    }

    /// One card per chat and hour saying the background cannot be read.
    async fn warn_no_scope(&self, chat: &str, lang: Lang) {
        {
            let mut warned = self.warned.0.lock().expect("warned lock");
            if warned.get(chat).is_some_and(|t| t.elapsed() < WARN_EVERY) {
                return;
            }
            warned.insert(chat.to_owned(), Instant::now());
        }
        tracing::warn!(lark.chat_id = %chat, "lark.group_context_messages is set but the app may not read group messages (grant im:message.group_msg)");
        let card = notice_card(
            lang.text(Text::BackgroundDeniedTitle),
            CardState::Failed,
            lang.text(Text::BackgroundDenied),
        );
        let hour = now_ms() / 3_600_000;
        let uuid: String = format!("wbg{hour}{chat}").chars().take(50).collect();
        if let Err(e) = self
            .sender
            .send_message_once(
                ReceiveIdType::ChatId,
                chat,
                &MessageContent::Interactive(card),
                &uuid,
            )
            .await
        {
            tracing::warn!(lark.chat_id = %chat, error = %e, "sending the background warning card failed");
        }
    }
}

/// A background message as the model reads it: its text (mentions by name),
/// a post's words, or what kind of message it was.
fn readable(m: &FetchedMessage) -> String {
    let content: Value = serde_json::from_str(&m.body.content).unwrap_or(Value::Null);
    let text = match m.msg_type.as_str() {
        "text" => {
            let mut text = content["text"].as_str().unwrap_or_default().to_owned();
            for mention in &m.mentions {
                text = text.replace(&mention.key, &format!("@{}", mention.name));
            }
            text
        }
        "post" => {
            // `{title, content}`, or the same under a locale (`zh_cn`).
            let post = if content.get("content").is_some() {
                &content
            } else {
                content
                    .as_object()
                    .and_then(|locales| locales.values().next())
                    .unwrap_or(&Value::Null)
            };
            let mut words: Vec<String> = post["title"]
                .as_str()
                .map(str::to_owned)
                .into_iter()
                .collect();
            post_words(&post["content"], &mut words);
            words.join(" ")
        }
        kind => format!("[{kind}]"),
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > MESSAGE_CHARS {
        let cut: String = text.chars().take(MESSAGE_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}

fn post_words(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("text", Value::String(s)) if !s.trim().is_empty() => out.push(s.clone()),
                    _ => post_words(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| post_words(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_lark::rest::{FetchedBody, FetchedMention};

    use super::*;

    fn message(msg_type: &str, content: Value) -> FetchedMessage {
        FetchedMessage {
            msg_type: msg_type.into(),
            body: FetchedBody {
                content: content.to_string(),
            },
            ..FetchedMessage::default()
        }
    }

    #[test]
    fn background_messages_read_as_text() {
        let mut m = message("text", json!({"text": "@_user_1 ships   friday"}));
        m.mentions.push(FetchedMention {
            key: "@_user_1".into(),
            id: "ou_x".into(),
            name: "Bob".into(),
        });
        assert_eq!(readable(&m), "@Bob ships friday");
        let post = message(
            "post",
            json!({"title": "Plan", "content": [[{"tag": "text", "text": "step one"}]]}),
        );
        assert_eq!(readable(&post), "Plan step one");
        let localised = message(
            "post",
            json!({"zh_cn": {"title": "", "content": [[{"tag": "md", "text": "第一步"}]]}}),
        );
        assert_eq!(readable(&localised), "第一步");
        assert_eq!(
            readable(&message("image", json!({"image_key": "k"}))),
            "[image]"
        );
        let long = message("text", json!({"text": "a".repeat(600)}));
        assert_eq!(readable(&long).chars().count(), MESSAGE_CHARS + 1);
    }
}

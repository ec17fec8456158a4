//! A message that replies to another (`parent_id`): the quoted message is
//! fetched (`GET /open-apis/im/v1/messages/:id`, scope `im:message:readonly`)
//! so that its text — and its image or file — reach the model with the turn,
//! and so that a reply to one of the bot's own messages addresses the bot in a
//! group without an @mention. One call per replying message; when Lark will
//! not say (no scope, a recalled message), the turn goes on without the quote,
//! and an unmentioned reply is not taken as addressing the bot.

use serde_json::Value;
use weft_lark::event::ReceivedMessage;

use super::super::Bot;
use super::super::inbound::{Incoming, LarkFile, readable};

/// A quote is cut to this many characters: context, not a second message.
const QUOTE_CHARS: usize = 2_000;

/// What the handled message quotes.
pub(in crate::lark) struct Quoted {
    /// The bot's own message (one of its cards or notices).
    pub from_bot: bool,
    /// Who wrote it, as the model is told.
    pub who: String,
    pub text: String,
    /// Its image or file, fetched with the quoted message's id.
    pub files: Vec<LarkFile>,
}

impl Quoted {
    /// `text` with the quote before it, as the model reads the turn.
    pub fn around(&self, text: &str) -> String {
        if self.text.trim().is_empty() {
            return text.to_owned();
        }
        format!(
            "[Replying to {}: \"{}\"]\n{text}",
            self.who,
            self.text.trim()
        )
    }
}

impl Bot {
    /// The message `incoming` replies to, when it replies to one Lark shows us.
    pub(in crate::lark) async fn quoted(&self, incoming: &Incoming) -> Option<Quoted> {
        if incoming.parent_id.is_empty() {
            return None;
        }
        let fetched = match self.sender.get_message(&incoming.parent_id).await {
            Ok(Some(m)) if !m.deleted => m,
            Ok(_) => return None,
            Err(e) => {
                tracing::debug!(lark.message_id = %incoming.parent_id, error = %e, "the quoted lark message could not be read");
                return None;
            }
        };
        let from_bot = fetched.is_from_app(&self.me.app_id);
        let who = if from_bot {
            "your earlier reply".to_owned()
        } else {
            self.names.of(&self.sender, &fetched.sender.id).await
        };
        let (text, files) = content_of(&fetched.msg_type, &fetched.body.content);
        let files = files
            .into_iter()
            .map(|f| LarkFile {
                message_id: Some(incoming.parent_id.clone()),
                ..f
            })
            .collect();
        Some(Quoted {
            from_bot,
            who,
            text: text.chars().take(QUOTE_CHARS).collect(),
            files,
        })
    }
}

/// The readable text and files of a fetched message's content: read as an
/// incoming message is ([`readable`]), and a card by its words.
fn content_of(msg_type: &str, content: &str) -> (String, Vec<LarkFile>) {
    let message = ReceivedMessage {
        message_type: msg_type.to_owned(),
        content: content.to_owned(),
        ..ReceivedMessage::default()
    };
    match readable(&message) {
        Ok(read) => read,
        Err(_) if msg_type == "interactive" => {
            let mut words = Vec::new();
            card_words(
                &serde_json::from_str(content).unwrap_or(Value::Null),
                &mut words,
            );
            (words.join("\n"), Vec::new())
        }
        Err(_) => (String::new(), Vec::new()),
    }
}

fn card_words(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("content" | "text", Value::String(s)) if !s.trim().is_empty() => {
                        out.push(s.clone())
                    }
                    _ => card_words(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| card_words(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quotes_read_text_posts_files_and_cards() {
        let text = json!({"text": "the plan"}).to_string();
        assert_eq!(content_of("text", &text).0, "the plan");
        let image = json!({"image_key": "img_1"}).to_string();
        let (_, files) = content_of("image", &image);
        assert_eq!(files[0].key, "img_1");
        let card =
            json!({"schema": "2.0", "header": {"title": {"tag": "plain_text", "content": "Weft"}},
            "body": {"elements": [{"tag": "markdown", "content": "It is 4 pm."}]}})
            .to_string();
        let (words, _) = content_of("interactive", &card);
        assert!(words.contains("It is 4 pm."), "{words}");
        let q = Quoted {
            from_bot: false,
            who: "Bob".into(),
            text: "the plan".into(),
            files: Vec::new(),
        };
        assert_eq!(q.around("why?"), "[Replying to Bob: \"the plan\"]\nwhy?");
    }
}

//! A message that replies to another (`parent_id`): the quoted message is
//! fetched (`GET /open-apis/im/v1/messages/:id`, scope `im:message:readonly`)
//! so that its text — and its image or file — reach the model with the turn,
//! and so that a reply to one of the bot's own messages addresses the bot in a
//! group without an @mention. One call per replying message; when Lark will
//! not say (no scope, a recalled message), the turn goes on without the quote,
//! and an unmentioned reply is not taken as addressing the bot.

use weft_lark::content::fetched;

use super::super::Bot;
use super::super::inbound::{Incoming, LarkFile};

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
        let message = match self.sender.get_message(&incoming.parent_id).await {
            Ok(Some(m)) if !m.deleted => m,
            Ok(_) => return None,
            Err(e) => {
                tracing::debug!(lark.message_id = %incoming.parent_id, error = %e, "the quoted lark message could not be read");
                return None;
            }
        };
        let from_bot = message.is_from_app(&self.me.app_id);
        let who = if from_bot {
            "your earlier reply".to_owned()
        } else {
            self.names.of(&self.sender, &message.sender.id).await
        };
        let (text, files) = fetched(&message.msg_type, &message.body.content);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_goes_before_the_turn() {
        let q = Quoted {
            from_bot: false,
            who: "Bob".into(),
            text: "the plan".into(),
            files: Vec::new(),
        };
        assert_eq!(q.around("why?"), "[Replying to Bob: \"the plan\"]\nwhy?");
    }
}

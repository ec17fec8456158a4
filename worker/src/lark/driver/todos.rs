//! The todo card (`todo_update`): a reply that changes the conversation's
//! todo list gets one card of its own showing it ([`TodoCard`]), sent with the
//! first change and rewritten in place with each change after, so the chat
//! watches one list tick over.
//!
//! **Finding the card again.** The card is sent under a Lark `uuid` derived
//! from the run: Lark answers a second send under the same `uuid` (within an
//! hour) with the first message, so a later attempt's follower — its worker
//! died, or the run waited and resumed — gets the same card back instead of a
//! second one, and rewrites it with the list as it stands.

use weft_lark::card::TodoCard;
use weft_lark::rest::MessageContent;
use weft_shared::api::TodoItem;

use super::{Driver, SyncError, classify};
use crate::lark::view::ReplyView;

impl Driver {
    /// Shows `view`'s todo list on the run's todo card, if the list changed
    /// since this follower last showed it.
    pub(super) async fn sync_todos(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        let items = view.todos();
        if items.is_empty() || self.todos_shown.as_deref() == Some(items) {
            return Ok(());
        }
        let card = TodoCard {
            items: items.to_vec(),
        }
        .render_in(self.lang);
        let uuid = uuid_of(&self.run.0);
        match self.todo_message.clone() {
            Some(message) => {
                self.rewrite_card(Some(message), &card, &uuid, "todo_patch")
                    .await?;
            }
            // A follower of an earlier attempt may have sent it: the same
            // `uuid` returns that card, which is then rewritten as it stands.
            None if self.before.is_some_and(|b| b > 0) => {
                let sent = self
                    .send(&MessageContent::Interactive(card.clone()), &uuid)
                    .await
                    .map_err(classify)?;
                self.todo_message = Some(sent.message_id.clone());
                self.rewrite_card(Some(sent.message_id), &card, &uuid, "todo_patch")
                    .await?;
            }
            None => {
                let sent = self
                    .send(&MessageContent::Interactive(card), &uuid)
                    .await
                    .map_err(classify)?;
                self.todo_message = Some(sent.message_id);
            }
        }
        self.todos_shown = Some(items.to_vec());
        Ok(())
    }
}

/// The Lark `uuid` of a run's todo card (at most 50 characters).
fn uuid_of(run: &str) -> String {
    format!("weft-t-{run}").chars().take(50).collect()
}

/// What the todo card shows, for comparing with the next view.
pub(super) type Shown = Option<Vec<TodoItem>>;

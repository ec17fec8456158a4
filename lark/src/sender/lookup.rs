//! The reading calls (a message, a chat's latest, user names) within the
//! per-app limit, like every other call.

use super::RateAwareSender;
use crate::rest::{FetchedMessage, LarkError};

impl RateAwareSender {
    pub async fn get_message(&self, message_id: &str) -> Result<Option<FetchedMessage>, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.get_message(message_id).await
    }

    pub async fn chat_messages(
        &self,
        chat_id: &str,
        count: u32,
    ) -> Result<Vec<FetchedMessage>, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.chat_messages(chat_id, count).await
    }

    pub async fn user_name(&self, open_id: &str) -> Result<Option<String>, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.user_name(open_id).await
    }
}

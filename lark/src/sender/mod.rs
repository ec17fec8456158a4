//! A rate-aware sender for streaming replies.
//!
//! Lark limits card updates to 5 patches/s per message, 10 CardKit calls/s per
//! card, and 50 calls/s per app for these APIs. [`RateAwareSender`] counts every
//! call against its target and the app in one shared [`Limiter`] and waits for
//! room, so the bot never draws a 429. Streaming callers keep only their newest
//! content while they wait ([`RateAwareSender::app_room`] tells them when a call
//! would go out), so a fast model never builds a backlog either.

mod limiter;
mod lookup;
mod names;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::rest::{
    CardEntity, LarkError, MessageContent, Reaction, ReceiveIdType, ReplyMode, Resource,
    ResourceType, RestClient, SentMessage,
};

use limiter::Limiter;
pub use names::{Names, short_id};

/// Per-second limits (defaults are Lark's documented ones).
#[derive(Debug, Clone, Copy)]
pub struct RateLimits {
    pub patches_per_message: u32,
    pub cardkit_ops_per_card: u32,
    pub sends_per_chat: u32,
    pub calls_per_app: u32,
    /// The counting window, measured from each request's completion (≥ 1 s).
    pub window: Duration,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            patches_per_message: 5,
            cardkit_ops_per_card: 10,
            sends_per_chat: 5,
            calls_per_app: 50,
            window: Duration::from_secs(1),
        }
    }
}

/// Cheap to clone; clones share the limiter.
#[derive(Clone)]
pub struct RateAwareSender {
    rest: RestClient,
    limits: RateLimits,
    limiter: Arc<Limiter>,
}

impl RateAwareSender {
    pub fn new(rest: RestClient, limits: RateLimits) -> Self {
        Self {
            rest,
            limits,
            limiter: Arc::new(Limiter::new(limits.window)),
        }
    }

    /// The underlying client; calls made on it directly bypass the limits.
    pub fn rest(&self) -> &RestClient {
        &self.rest
    }

    fn app_key(&self) -> (String, u32) {
        ("app".to_owned(), self.limits.calls_per_app)
    }

    /// Sends a message within the per-chat and per-app limits.
    pub async fn send_message(
        &self,
        id_type: ReceiveIdType,
        receive_id: &str,
        content: &MessageContent,
    ) -> Result<SentMessage, LarkError> {
        let keys = [
            (format!("chat:{receive_id}"), self.limits.sends_per_chat),
            self.app_key(),
        ];
        let _permit = self.limiter.acquire(&keys).await;
        self.rest.send_message(id_type, receive_id, content).await
    }

    /// Replies to `message_id` (in chat `chat_id`) within the per-chat and per-app
    /// limits, at most once per `uuid` (see [`RestClient::reply_message_once`]).
    pub async fn reply_message_once(
        &self,
        chat_id: &str,
        message_id: &str,
        content: &MessageContent,
        mode: ReplyMode,
        uuid: &str,
    ) -> Result<SentMessage, LarkError> {
        let keys = [
            (format!("chat:{chat_id}"), self.limits.sends_per_chat),
            self.app_key(),
        ];
        let _permit = self.limiter.acquire(&keys).await;
        self.rest
            .reply_message_once(message_id, content, mode, uuid)
            .await
    }

    /// [`Self::send_message`] at most once per `uuid`.
    pub async fn send_message_once(
        &self,
        id_type: ReceiveIdType,
        receive_id: &str,
        content: &MessageContent,
        uuid: &str,
    ) -> Result<SentMessage, LarkError> {
        let keys = [
            (format!("chat:{receive_id}"), self.limits.sends_per_chat),
            self.app_key(),
        ];
        let _permit = self.limiter.acquire(&keys).await;
        self.rest
            .send_message_once(id_type, receive_id, content, uuid)
            .await
    }

    /// One full-card patch of a sent interactive message, waiting for room in the
    /// message's (5/s) and the app's windows. Callers that stream keep only their
    /// newest card while they wait, so the latest content wins.
    pub async fn patch_card(&self, message_id: &str, card: &Value) -> Result<(), LarkError> {
        let keys = [
            (format!("msg:{message_id}"), self.limits.patches_per_message),
            self.app_key(),
        ];
        let _permit = self.limiter.acquire(&keys).await;
        self.rest.patch_card(message_id, card).await
    }

    /// Adds or removes a reaction within the per-app limit.
    pub async fn add_reaction(&self, message_id: &str, emoji: &str) -> Result<Reaction, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.add_reaction(message_id, emoji).await
    }

    pub async fn remove_reaction(
        &self,
        message_id: &str,
        reaction_id: &str,
    ) -> Result<(), LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.remove_reaction(message_id, reaction_id).await
    }

    /// Downloads a file or image a user sent, within the per-app limit (see
    /// [`RestClient::download_resource`]; the download counts as in flight until
    /// it is read whole).
    pub async fn download_resource(
        &self,
        message_id: &str,
        file_key: &str,
        kind: ResourceType,
        max_bytes: u64,
    ) -> Result<Resource, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest
            .download_resource(message_id, file_key, kind, max_bytes)
            .await
    }

    /// The bot's identity, within the per-app limit (start-up of a replica while
    /// others already send must not draw a 429).
    pub async fn bot_info(&self) -> Result<crate::rest::BotInfo, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.bot_info().await
    }

    /// Creates a CardKit entity within the per-app limit.
    pub async fn create_card(&self, document: &Value) -> Result<CardEntity, LarkError> {
        let _permit = self.limiter.acquire(&[self.app_key()]).await;
        self.rest.create_card(document).await
    }

    /// Streams the full text of a markdown element of a CardKit entity, within
    /// the card's (10/s) and the app's windows. Calls on one card must be made
    /// one after another: their `sequence` must arrive in order.
    pub async fn stream_element_content(
        &self,
        card: &CardEntity,
        element_id: &str,
        content: &str,
    ) -> Result<(), LarkError> {
        let _permit = self
            .limiter
            .acquire(&[self.card_key(card), self.app_key()])
            .await;
        self.rest
            .stream_element_content(card, element_id, content)
            .await
    }

    /// Returns once a call would find room in the app's window, without making
    /// one: a caller that streams waits here, then sends whatever is newest by
    /// then, so while the app's budget is spent elsewhere its updates fold into
    /// one instead of queueing stale ones.
    pub async fn app_room(&self) {
        self.limiter.wait_room(&[self.app_key()]).await;
    }

    /// Updates card settings (e.g. ends streaming mode) within the card's limit.
    /// Finish the card's element streams first: `sequence` must stay ordered.
    pub async fn update_card_settings(
        &self,
        card: &CardEntity,
        settings: &Value,
    ) -> Result<(), LarkError> {
        let _permit = self
            .limiter
            .acquire(&[self.card_key(card), self.app_key()])
            .await;
        self.rest.update_card_settings(card, settings).await
    }

    /// Replaces a whole CardKit card within the card's limit.
    pub async fn update_card(&self, card: &CardEntity, document: &Value) -> Result<(), LarkError> {
        let _permit = self
            .limiter
            .acquire(&[self.card_key(card), self.app_key()])
            .await;
        self.rest.update_card(card, document).await
    }

    fn card_key(&self, card: &CardEntity) -> (String, u32) {
        (
            format!("card:{}", card.card_id),
            self.limits.cardkit_ops_per_card,
        )
    }
}

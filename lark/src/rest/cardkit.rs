//! CardKit card entities: create, stream element text, update settings and cards.
//!
//! Every update of an entity carries a `sequence` that must strictly increase per
//! card (a positive int32); [`CardEntity`] owns that counter (shared by clones)
//! and derives the idempotency `uuid` from it, as the official channel module
//! does. A caller that takes an entity over from another process cannot know
//! the last number used there, so it can move the counter forward
//! ([`CardEntity::advance_to`]) to a number that grows by itself, such as the
//! milliseconds since the entity was created. Updates to one card must still be
//! sent one at a time — concurrent requests could arrive out of order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, LarkError, MessageContent, RestClient};

/// A created card entity and its update sequence.
#[derive(Debug, Clone)]
pub struct CardEntity {
    pub card_id: String,
    sequence: Arc<AtomicU64>,
}

impl CardEntity {
    /// Resumes an entity created earlier (e.g. by a previous attempt), continuing
    /// after `last_sequence`.
    pub fn resume(card_id: impl Into<String>, last_sequence: u64) -> Self {
        Self {
            card_id: card_id.into(),
            sequence: Arc::new(AtomicU64::new(last_sequence)),
        }
    }

    fn next_sequence(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Makes the next update's sequence at least `floor` (never lower than it
    /// would have been).
    pub fn advance_to(&self, floor: u64) {
        self.sequence
            .fetch_max(floor.saturating_sub(1), Ordering::SeqCst);
    }

    /// The last sequence number used.
    pub fn last_sequence(&self) -> u64 {
        self.sequence.load(Ordering::SeqCst)
    }

    /// The content for sending this entity as an interactive message.
    pub fn as_message(&self) -> MessageContent {
        MessageContent::CardRef(self.card_id.clone())
    }
}

#[derive(Deserialize, Default)]
struct Created {
    card_id: String,
}

impl RestClient {
    /// Creates an entity from a Card JSON 2.0 document.
    pub async fn create_card(&self, card: &Value) -> Result<CardEntity, LarkError> {
        let created: Created = self
            .send(Call {
                method: Method::POST,
                path: "/open-apis/cardkit/v1/cards".into(),
                query: &[],
                body: Some(json!({"type": "card_json", "data": card.to_string()})),
            })
            .await?;
        Ok(CardEntity::resume(created.card_id, 0))
    }

    /// Streams the **full** text of a markdown element; when the old text is a
    /// prefix of the new one, Lark types out only the tail.
    pub async fn stream_element_content(
        &self,
        card: &CardEntity,
        element_id: &str,
        content: &str,
    ) -> Result<(), LarkError> {
        let sequence = card.next_sequence();
        self.send::<Value>(Call {
            method: Method::PUT,
            path: format!(
                "/open-apis/cardkit/v1/cards/{}/elements/{element_id}/content",
                card.card_id
            ),
            query: &[],
            body: Some(json!({
                "content": content,
                "sequence": sequence,
                "uuid": format!("c_{}_{sequence}", card.card_id),
            })),
        })
        .await
        .map(drop)
    }

    /// Updates card settings, e.g. `{"config":{"streaming_mode":false}}`.
    pub async fn update_card_settings(
        &self,
        card: &CardEntity,
        settings: &Value,
    ) -> Result<(), LarkError> {
        let sequence = card.next_sequence();
        self.send::<Value>(Call {
            method: Method::PATCH,
            path: format!("/open-apis/cardkit/v1/cards/{}/settings", card.card_id),
            query: &[],
            body: Some(json!({
                "settings": settings.to_string(),
                "sequence": sequence,
                "uuid": format!("c_{}_{sequence}", card.card_id),
            })),
        })
        .await
        .map(drop)
    }

    /// Replaces the whole card.
    pub async fn update_card(&self, card: &CardEntity, document: &Value) -> Result<(), LarkError> {
        let sequence = card.next_sequence();
        self.send::<Value>(Call {
            method: Method::PUT,
            path: format!("/open-apis/cardkit/v1/cards/{}", card.card_id),
            query: &[],
            body: Some(json!({
                "card": {"type": "card_json", "data": document.to_string()},
                "sequence": sequence,
                "uuid": format!("c_{}_{sequence}", card.card_id),
            })),
        })
        .await
        .map(drop)
    }
}

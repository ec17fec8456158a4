//! IM message calls: send, reply, patch a card, recall, reactions.
//!
//! Content is always sent as a JSON *string* inside the JSON body — Lark's format —
//! built here from a typed [`MessageContent`] so callers cannot get it wrong.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, LarkError, RestClient};

/// How `receive_id` is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveIdType {
    OpenId,
    UserId,
    UnionId,
    Email,
    ChatId,
}

impl ReceiveIdType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenId => "open_id",
            Self::UserId => "user_id",
            Self::UnionId => "union_id",
            Self::Email => "email",
            Self::ChatId => "chat_id",
        }
    }
}

/// A message body and its `msg_type`.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageContent {
    Text(String),
    /// A `post` body, e.g. `{"zh_cn":{"title":"","content":[[{"tag":"md","text":"…"}]]}}`.
    Post(Value),
    /// A Card JSON 2.0 document.
    Interactive(Value),
    /// A CardKit entity, sent by reference (each entity can be sent only once).
    CardRef(String),
}

impl MessageContent {
    pub fn msg_type(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Post(_) => "post",
            Self::Interactive(_) | Self::CardRef(_) => "interactive",
        }
    }

    /// The `content` field: a JSON document serialised to a string.
    pub fn content_string(&self) -> String {
        match self {
            Self::Text(text) => json!({ "text": text }).to_string(),
            Self::Post(post) | Self::Interactive(post) => post.to_string(),
            Self::CardRef(card_id) => {
                json!({"type": "card", "data": {"card_id": card_id}}).to_string()
            }
        }
    }
}

/// Whether a reply opens (or continues) a topic thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    Inline,
    InThread,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct SentMessage {
    pub message_id: String,
    #[serde(default)]
    pub chat_id: String,
    #[serde(default)]
    pub root_id: String,
    #[serde(default)]
    pub parent_id: String,
    #[serde(default)]
    pub thread_id: String,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct Reaction {
    pub reaction_id: String,
}

/// An idempotency key: Lark dedups sends with the same `uuid` for an hour.
fn idempotency_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl RestClient {
    pub async fn send_message(
        &self,
        id_type: ReceiveIdType,
        receive_id: &str,
        content: &MessageContent,
    ) -> Result<SentMessage, LarkError> {
        self.send_message_once(id_type, receive_id, content, &idempotency_key())
            .await
    }

    /// [`Self::send_message`] made at most once per `uuid` (see
    /// [`Self::reply_message_once`]).
    pub async fn send_message_once(
        &self,
        id_type: ReceiveIdType,
        receive_id: &str,
        content: &MessageContent,
        uuid: &str,
    ) -> Result<SentMessage, LarkError> {
        self.send(Call {
            method: Method::POST,
            path: "/open-apis/im/v1/messages".into(),
            query: &[("receive_id_type", id_type.as_str())],
            body: Some(json!({
                "receive_id": receive_id,
                "msg_type": content.msg_type(),
                "content": content.content_string(),
                "uuid": uuid,
            })),
        })
        .await
    }

    pub async fn reply_message(
        &self,
        message_id: &str,
        content: &MessageContent,
        mode: ReplyMode,
    ) -> Result<SentMessage, LarkError> {
        self.reply_message_once(message_id, content, mode, &idempotency_key())
            .await
    }

    /// A reply that Lark makes at most once per `uuid` (≤ 50 characters) within an
    /// hour: a caller that retries after a crash passes the same key and gets the
    /// message the first request created instead of a second one.
    pub async fn reply_message_once(
        &self,
        message_id: &str,
        content: &MessageContent,
        mode: ReplyMode,
        uuid: &str,
    ) -> Result<SentMessage, LarkError> {
        self.send(Call {
            method: Method::POST,
            path: format!("/open-apis/im/v1/messages/{message_id}/reply"),
            query: &[],
            body: Some(json!({
                "msg_type": content.msg_type(),
                "content": content.content_string(),
                "reply_in_thread": mode == ReplyMode::InThread,
                "uuid": uuid,
            })),
        })
        .await
    }

    /// Replaces the content of a sent interactive card (≤ 5/s per message, ≤ 30 KB).
    pub async fn patch_card(&self, message_id: &str, card: &Value) -> Result<(), LarkError> {
        self.send::<Value>(Call {
            method: Method::PATCH,
            path: format!("/open-apis/im/v1/messages/{message_id}"),
            query: &[],
            body: Some(json!({ "content": card.to_string() })),
        })
        .await
        .map(drop)
    }

    /// Recalls (deletes) a message the bot sent.
    pub async fn recall_message(&self, message_id: &str) -> Result<(), LarkError> {
        self.send::<Value>(Call {
            method: Method::DELETE,
            path: format!("/open-apis/im/v1/messages/{message_id}"),
            query: &[],
            body: None,
        })
        .await
        .map(drop)
    }

    /// Adds an emoji reaction (`emoji_type` is case-sensitive, e.g. `THUMBSUP`).
    pub async fn add_reaction(
        &self,
        message_id: &str,
        emoji_type: &str,
    ) -> Result<Reaction, LarkError> {
        self.send(Call {
            method: Method::POST,
            path: format!("/open-apis/im/v1/messages/{message_id}/reactions"),
            query: &[],
            body: Some(json!({ "reaction_type": { "emoji_type": emoji_type } })),
        })
        .await
    }

    pub async fn remove_reaction(
        &self,
        message_id: &str,
        reaction_id: &str,
    ) -> Result<(), LarkError> {
        self.send::<Value>(Call {
            method: Method::DELETE,
            path: format!("/open-apis/im/v1/messages/{message_id}/reactions/{reaction_id}"),
            query: &[],
            body: None,
        })
        .await
        .map(drop)
    }
}

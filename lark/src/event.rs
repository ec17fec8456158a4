//! Schema 2.0 event envelopes as they arrive over the long connection.
//!
//! The envelope is kept generic (`event` stays JSON) so an unknown event type is
//! still delivered and acked; typed views exist for the two events the bot needs:
//! `im.message.receive_v1` and `card.action.trigger`. Every field Lark may omit is
//! `#[serde(default)]` so a missing one never turns into a dropped event.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const MESSAGE_RECEIVE: &str = "im.message.receive_v1";
pub const CARD_ACTION_TRIGGER: &str = "card.action.trigger";

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct EventEnvelope {
    #[serde(default)]
    pub schema: String,
    pub header: EventHeader,
    #[serde(default)]
    pub event: Value,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct EventHeader {
    #[serde(default)]
    pub event_id: String,
    #[serde(default)]
    pub event_type: String,
    /// Milliseconds since the epoch, as a string.
    #[serde(default)]
    pub create_time: String,
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub app_id: String,
    #[serde(default)]
    pub tenant_key: String,
}

impl EventEnvelope {
    pub fn parse(payload: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(payload)
    }

    /// The `im.message.receive_v1` body, if this is one.
    pub fn message_receive(&self) -> Option<Result<MessageReceive, serde_json::Error>> {
        (self.header.event_type == MESSAGE_RECEIVE)
            .then(|| serde_json::from_value(self.event.clone()))
    }

    /// The `card.action.trigger` body, if this is one.
    pub fn card_action(&self) -> Option<Result<CardAction, serde_json::Error>> {
        (self.header.event_type == CARD_ACTION_TRIGGER)
            .then(|| serde_json::from_value(self.event.clone()))
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct UserId {
    #[serde(default)]
    pub union_id: String,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub open_id: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct MessageReceive {
    pub sender: Sender,
    pub message: ReceivedMessage,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Sender {
    #[serde(default)]
    pub sender_id: UserId,
    #[serde(default)]
    pub sender_type: String,
    #[serde(default)]
    pub tenant_key: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ReceivedMessage {
    pub message_id: String,
    #[serde(default)]
    pub root_id: String,
    #[serde(default)]
    pub parent_id: String,
    #[serde(default)]
    pub create_time: String,
    #[serde(default)]
    pub update_time: String,
    #[serde(default)]
    pub chat_id: String,
    #[serde(default)]
    pub thread_id: String,
    /// `p2p`, `group` or `topic_group`.
    #[serde(default)]
    pub chat_type: String,
    /// `text`, `post`, `image`, `file`, ...
    #[serde(default)]
    pub message_type: String,
    /// A JSON document encoded as a string; its shape depends on `message_type`.
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Mention {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub id: UserId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub tenant_key: String,
}

impl ReceivedMessage {
    /// The `text` of a `text` message, with `@_user_N` placeholders left in place.
    pub fn text(&self) -> Option<String> {
        if self.message_type != "text" {
            return None;
        }
        let v: Value = serde_json::from_str(&self.content).ok()?;
        v.get("text")?.as_str().map(str::to_owned)
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct CardAction {
    #[serde(default)]
    pub operator: Operator,
    /// Token for a delayed card update.
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub action: ActionDetail,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub context: ActionContext,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Operator {
    #[serde(default)]
    pub tenant_key: String,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub open_id: String,
    #[serde(default)]
    pub union_id: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ActionDetail {
    #[serde(default)]
    pub value: Value,
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub form_value: Value,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct ActionContext {
    #[serde(default)]
    pub open_message_id: String,
    #[serde(default)]
    pub open_chat_id: String,
}

/// What a card callback answers (`{"toast":…,"card":…}`), carried in the ack.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CardActionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toast: Option<Toast>,
    /// `{"type":"raw","data":<card json>}` to replace the card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Toast {
    /// `info`, `success`, `error` or `warning`.
    #[serde(rename = "type")]
    pub kind: String,
    pub content: String,
}

impl CardActionResponse {
    pub fn toast(kind: &str, content: impl Into<String>) -> Self {
        Self {
            toast: Some(Toast {
                kind: kind.to_owned(),
                content: content.into(),
            }),
            card: None,
        }
    }

    /// Replace the card with `card` (JSON 2.0).
    pub fn with_card(mut self, card: Value) -> Self {
        self.card = Some(serde_json::json!({"type": "raw", "data": card}));
        self
    }
}

//! Button clicks: `card.action.trigger` callbacks pushed the way Lark pushes them,
//! and the callback's answer applied to the clicked card.
//!
//! Lark sends a callback only for a button that is on the card, with that
//! button's `behaviors[].value`; [`FakeLark::click_button`] therefore looks the
//! button up on the card as the fake holds it now (after patches and earlier
//! answers) and refuses to click one that is not there. The callback travels as
//! an ordinary `type=event` push (same frames, ack rules and redelivery as any
//! event, §1.6 of the reference). When its ack carries
//! `{"card":{"type":"raw","data":…}}` the clicked card is replaced with that
//! document, as Lark does (for everyone: JSON 2.0 cards are shared).

use serde_json::{Value, json};

use super::records::AckRecord;
use super::{FakeLark, PushOptions};

/// What [`FakeLark::click_button`] could not do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClickError {
    #[error("no interactive message {0} sent by the app")]
    NoSuchCard(String),
    #[error("no button {label:?} on card {message_id}; it has {available:?}")]
    NoSuchButton {
        message_id: String,
        label: String,
        available: Vec<String>,
    },
}

/// A schema 2.0 `card.action.trigger` envelope: `operator_open_id` clicked a
/// button carrying `value` on message `open_message_id` in chat `open_chat_id`.
pub fn card_action_event(
    event_id: &str,
    operator_open_id: &str,
    open_message_id: &str,
    open_chat_id: &str,
    value: Value,
) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let suffix = operator_open_id.trim_start_matches("ou_");
    json!({
        "schema": "2.0",
        "header": {
            "event_id": event_id, "event_type": "card.action.trigger",
            "create_time": now.to_string(), "token": "", "app_id": "cli_fake_app", "tenant_key": "tenant_fake",
        },
        "event": {
            "operator": {"tenant_key": "tenant_fake", "user_id": format!("u_{suffix}"),
                         "open_id": operator_open_id, "union_id": format!("on_{suffix}")},
            "token": format!("c-{event_id}"),
            "action": {"value": value, "tag": "button"},
            "host": "im_message",
            "delivery_type": "",
            "context": {"url": "", "preview_token": "", "open_message_id": open_message_id,
                        "open_chat_id": open_chat_id},
        },
    })
}

/// A `card.action.trigger` from `ou_fake` for a button with `value`.
pub fn sample_card_action(event_id: &str, open_message_id: &str, value: Value) -> Value {
    card_action_event(event_id, "ou_fake", open_message_id, "oc_fake", value)
}

/// Every callback button anywhere in a card: `(label, element_id, value)`.
fn callback_buttons(card: &Value, out: &mut Vec<(String, String, Value)>) {
    match card {
        Value::Object(map) => {
            if map.get("tag").and_then(Value::as_str) == Some("button") {
                let callback = map
                    .get("behaviors")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|b| b["type"] == "callback");
                if let Some(behaviour) = callback {
                    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                    out.push((
                        text(&map["text"]["content"]),
                        text(map.get("element_id").unwrap_or(&Value::Null)),
                        behaviour["value"].clone(),
                    ));
                }
            }
            map.values().for_each(|v| callback_buttons(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| callback_buttons(v, out)),
        _ => {}
    }
}

impl FakeLark {
    /// `operator_open_id` clicks the button labelled `label` (or with that
    /// `element_id`) on the app's card `message_id`; returns the callback's
    /// `event_id`. Its ack, with the decoded answer, is in the records.
    pub fn click_button(
        &self,
        message_id: &str,
        operator_open_id: &str,
        label: &str,
    ) -> Result<String, ClickError> {
        let (chat_id, card) = {
            let state = self.state();
            let msg = state
                .rest
                .messages
                .get(message_id)
                .filter(|m| !m.from_user && !m.recalled && m.msg_type == "interactive")
                .ok_or_else(|| ClickError::NoSuchCard(message_id.to_owned()))?;
            (
                msg.chat_id.clone(),
                serde_json::from_str::<Value>(&msg.content).unwrap_or(Value::Null),
            )
        };
        let mut buttons = Vec::new();
        callback_buttons(&card, &mut buttons);
        let Some((_, _, value)) = buttons
            .iter()
            .find(|(text, id, _)| text == label || id == label)
        else {
            return Err(ClickError::NoSuchButton {
                message_id: message_id.to_owned(),
                label: label.to_owned(),
                available: buttons.into_iter().map(|(text, _, _)| text).collect(),
            });
        };
        let event_id = format!("ev_click_{}", uuid::Uuid::new_v4().simple());
        let envelope = card_action_event(
            &event_id,
            operator_open_id,
            message_id,
            &chat_id,
            value.clone(),
        );
        Ok(self.push_event(envelope, PushOptions::default()))
    }

    /// Applies a callback's answered card to the clicked message.
    pub(super) fn apply_card_response(&self, payload: &[u8], ack: &AckRecord) {
        let Ok(envelope) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        if envelope["header"]["event_type"] != "card.action.trigger" {
            return;
        }
        let Some(card) = ack
            .data
            .as_ref()
            .map(|d| &d["card"])
            .filter(|c| !c.is_null())
        else {
            return;
        };
        let message_id = envelope["event"]["context"]["open_message_id"]
            .as_str()
            .unwrap_or_default();
        let mut state = self.state();
        let problem = if card["type"] != "raw" || !card["data"].is_object() {
            Some("only {\"type\":\"raw\",\"data\":{…}} cards are applied".to_owned())
        } else if let Some(refused) = super::rest::check_card(self.config(), &card["data"]) {
            Some(format!("Lark would refuse it with code {}", refused.code()))
        } else if let Some(msg) = state.rest.messages.get_mut(message_id) {
            msg.content = card["data"].to_string();
            None
        } else {
            Some("the clicked message does not exist".to_owned())
        };
        if let Some(problem) = problem {
            state.records.bad_frames.push(format!(
                "card in the answer to a click on {message_id}: {problem}"
            ));
        }
        drop(state);
        self.notify();
    }
}

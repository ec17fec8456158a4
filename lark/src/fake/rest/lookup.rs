//! Fake reading endpoints: `GET /open-apis/im/v1/messages/:id` (a user's message
//! as it was pushed, or one the app sent) and `GET /open-apis/contact/v3/users/:id`
//! (the names tests give with [`crate::fake::FakeLark::set_user_name`], or Lark's
//! scope error when the test took the contact permission away).

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{CODE_NOT_FOUND, Reply, Req};
use crate::fake::{FakeConfig, FakeLark, State};

/// Lark's "the app lacks a scope this call needs" (contact, message reading).
pub(crate) const CODE_SCOPE_MISSING: i64 = 99991672;

/// What the fake keeps of a message a user sent (pushed as an event).
#[derive(Debug, Clone, Default)]
pub(crate) struct PushedMessage {
    pub sender_open_id: String,
    pub msg_type: String,
    pub content: String,
    pub parent_id: String,
    pub chat_id: String,
}

pub(super) fn get_message(config: &FakeConfig, state: &State, id: &str) -> Reply {
    let rest = &state.rest;
    if rest.message_read_denied {
        return scope_missing("im:message:readonly");
    }
    let item = if let Some(m) = rest.pushed.get(id) {
        json!({
            "message_id": id, "root_id": "", "parent_id": m.parent_id, "thread_id": "",
            "msg_type": m.msg_type, "chat_id": m.chat_id, "deleted": false, "updated": false,
            "create_time": "0", "update_time": "0",
            "sender": {"id": m.sender_open_id, "id_type": "open_id", "sender_type": "user", "tenant_key": "tenant_fake"},
            "body": {"content": m.content}, "mentions": [],
        })
    } else if let Some(m) = rest.messages.get(id).filter(|m| !m.from_user) {
        // A card sent by reference reads back as its entity's card now.
        let sent: Value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
        let entity = (sent["type"] == "card")
            .then(|| sent["data"]["card_id"].as_str())
            .flatten()
            .and_then(|c| rest.cards.get(c));
        let content = entity.map_or_else(|| m.content.clone(), |c| c.document.to_string());
        json!({
            "message_id": id, "root_id": m.root_id, "parent_id": m.reply_to, "thread_id": m.thread_id,
            "msg_type": m.msg_type, "chat_id": m.chat_id, "deleted": m.recalled, "updated": false,
            "create_time": "0", "update_time": "0",
            "sender": {"id": config.app_id, "id_type": "app_id", "sender_type": "app", "tenant_key": "tenant_fake"},
            "body": {"content": content}, "mentions": [],
        })
    } else {
        return Reply::err(StatusCode::BAD_REQUEST, CODE_NOT_FOUND, "message not found");
    };
    Reply::ok(json!({ "items": [item] }))
}

pub(super) fn user_name(state: &State, id: &str, req: &Req<'_>) -> Reply {
    let rest = &state.rest;
    if rest.contact_denied {
        return scope_missing("contact:user.base:readonly");
    }
    if req.query.get("user_id_type").map(String::as_str) != Some("open_id") {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            super::CODE_VALIDATION,
            "user_id_type must be open_id here",
        );
    }
    match rest.names.get(id) {
        Some(name) => Reply::ok(json!({"user": {"open_id": id, "name": name, "en_name": ""}})),
        None => Reply::err(StatusCode::BAD_REQUEST, 41050, "no user authority error"),
    }
}

fn scope_missing(scope: &str) -> Reply {
    let msg = format!(
        "Access denied. One of the following scopes is required: [{scope}]. 应用尚未开通所需的应用身份权限"
    );
    Reply::err(StatusCode::BAD_REQUEST, CODE_SCOPE_MISSING, &msg)
}

/// The pushed message's fields the fake keeps (`event.message` of a receive event).
pub(crate) fn pushed(message: &Value, sender_open_id: &str) -> PushedMessage {
    let text = |k: &str| message[k].as_str().unwrap_or_default().to_owned();
    PushedMessage {
        sender_open_id: sender_open_id.to_owned(),
        msg_type: text("message_type"),
        content: text("content"),
        parent_id: text("parent_id"),
        chat_id: text("chat_id"),
    }
}

impl FakeLark {
    /// The display name the contact API answers for `open_id`.
    pub fn set_user_name(&self, open_id: &str, name: &str) {
        self.state()
            .rest
            .names
            .insert(open_id.to_owned(), name.to_owned());
    }

    /// Takes the contact scope away (or gives it back): user names answer 99991672.
    pub fn deny_contact(&self, denied: bool) {
        self.state().rest.contact_denied = denied;
    }

    /// Takes the message-reading scope away (or gives it back).
    pub fn deny_message_read(&self, denied: bool) {
        self.state().rest.message_read_denied = denied;
    }
}

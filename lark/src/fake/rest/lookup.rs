//! Fake reading endpoints: `GET /open-apis/im/v1/messages/:id` (a user's message
//! as it was pushed, or one the app sent), `GET /open-apis/im/v1/messages` with
//! `container_id_type=chat` (a chat's messages, in either order, paged) and
//! `GET /open-apis/contact/v3/users/:id` (the names tests give with
//! [`crate::fake::FakeLark::set_user_name`]). Each answers Lark's scope error
//! when the test took its permission away.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{CODE_NOT_FOUND, Reply, Req};
use crate::fake::{FakeConfig, FakeLark, State};
use crate::rest::CODE_SCOPE_MISSING;

/// What the fake keeps of a message a user sent (pushed as an event).
#[derive(Debug, Clone, Default)]
pub(crate) struct PushedMessage {
    pub sender_open_id: String,
    pub msg_type: String,
    pub content: String,
    pub parent_id: String,
    pub chat_id: String,
    /// The event's mentions, as the message API shows them.
    pub mentions: Vec<Value>,
}

pub(super) fn get_message(config: &FakeConfig, state: &State, id: &str) -> Reply {
    if state.rest.message_read_denied {
        return scope_missing("im:message:readonly");
    }
    let created = state
        .rest
        .timeline
        .iter()
        .find(|(m, _)| m == id)
        .map_or_else(|| "0".to_owned(), |(_, at)| at.to_string());
    match item(config, state, id, &created) {
        Some(item) => Reply::ok(json!({ "items": [item] })),
        None => Reply::err(StatusCode::BAD_REQUEST, CODE_NOT_FOUND, "message not found"),
    }
}

/// `GET /open-apis/im/v1/messages?container_id_type=chat&container_id=…`:
/// `sort_type` `ByCreateTimeAsc` (the default) or `ByCreateTimeDesc`,
/// `page_size` 1–50 (default 20), `page_token` from the previous page.
pub(super) fn list_messages(config: &FakeConfig, state: &State, req: &Req<'_>) -> Reply {
    let q = |k: &str| req.query.get(k).map(String::as_str);
    if q("container_id_type") != Some("chat") {
        return Reply::validation("container_id_type must be chat (or thread)");
    }
    let Some(chat) = q("container_id").filter(|c| !c.is_empty()) else {
        return Reply::validation("container_id is required");
    };
    let page_size = match q("page_size").map(str::parse::<usize>) {
        None => 20,
        Some(Ok(n)) if (1..=50).contains(&n) => n,
        Some(_) => return Reply::validation("page_size must be between 1 and 50"),
    };
    let newest_first = match q("sort_type").unwrap_or("ByCreateTimeAsc") {
        "ByCreateTimeAsc" => false,
        "ByCreateTimeDesc" => true,
        _ => return Reply::validation("sort_type must be ByCreateTimeAsc or ByCreateTimeDesc"),
    };
    if state.rest.group_history_denied {
        return scope_missing("im:message.group_msg");
    }
    let mut all: Vec<Value> = state
        .rest
        .timeline
        .iter()
        .filter_map(|(id, at)| item(config, state, id, &at.to_string()))
        .filter(|m| m["chat_id"] == chat)
        .collect();
    if newest_first {
        all.reverse();
    }
    let start: usize = q("page_token").and_then(|t| t.parse().ok()).unwrap_or(0);
    let end = (start + page_size).min(all.len());
    let has_more = end < all.len();
    Reply::ok(json!({
        "has_more": has_more,
        "page_token": if has_more { end.to_string() } else { String::new() },
        "items": all.get(start..end).unwrap_or_default(),
    }))
}

/// Message `id` as the message API shows it (`created` its create time).
fn item(config: &FakeConfig, state: &State, id: &str, created: &str) -> Option<Value> {
    let rest = &state.rest;
    if let Some(m) = rest.pushed.get(id) {
        return Some(json!({
            "message_id": id, "root_id": "", "parent_id": m.parent_id, "thread_id": "",
            "msg_type": m.msg_type, "chat_id": m.chat_id, "deleted": false, "updated": false,
            "create_time": created, "update_time": created,
            "sender": {"id": m.sender_open_id, "id_type": "open_id", "sender_type": "user", "tenant_key": "tenant_fake"},
            "body": {"content": m.content}, "mentions": m.mentions,
        }));
    }
    let m = rest.messages.get(id).filter(|m| !m.from_user)?;
    // A card sent by reference reads back as its entity's card now.
    let sent: Value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
    let entity = (sent["type"] == "card")
        .then(|| sent["data"]["card_id"].as_str())
        .flatten()
        .and_then(|c| rest.cards.get(c));
    let content = entity.map_or_else(|| m.content.clone(), |c| c.document.to_string());
    Some(json!({
        "message_id": id, "root_id": m.root_id, "parent_id": m.reply_to, "thread_id": m.thread_id,
        "msg_type": m.msg_type, "chat_id": m.chat_id, "deleted": m.recalled, "updated": false,
        "create_time": created, "update_time": created,
        "sender": {"id": config.app_id, "id_type": "app_id", "sender_type": "app", "tenant_key": "tenant_fake"},
        "body": {"content": content}, "mentions": [],
    }))
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
        // An event's mention names its user by all three ids; the message API
        // by one, with its type.
        mentions: message["mentions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                json!({"key": m["key"], "id": m["id"]["open_id"], "id_type": "open_id",
                       "name": m["name"], "tenant_key": "tenant_fake"})
            })
            .collect(),
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

    /// Takes the scope to read a group's messages away (or gives it back):
    /// listing a chat's messages answers 99991672.
    pub fn deny_group_history(&self, denied: bool) {
        self.state().rest.group_history_denied = denied;
    }

    /// Takes the message-reading scope away (or gives it back).
    pub fn deny_message_read(&self, denied: bool) {
        self.state().rest.message_read_denied = denied;
    }
}

//! Fake IM endpoints: send, reply, patch, recall, reactions.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Reply, Req};
use crate::card::markdown::count_tables;
use crate::fake::{FakeConfig, State};

const RECEIVE_ID_TYPES: [&str; 5] = ["open_id", "user_id", "union_id", "email", "chat_id"];
const MSG_TYPES: [&str; 10] = [
    "text",
    "post",
    "image",
    "file",
    "audio",
    "media",
    "sticker",
    "interactive",
    "share_chat",
    "share_user",
];
const CODE_FORMAT: i64 = 230001;
/// Inferred code for acting on a recalled message.
const CODE_RECALLED: i64 = 230011;
/// Inferred code for content over the size limit.
const CODE_TOO_LONG: i64 = 230025;
const CODE_CARD_FAILED: i64 = 230099;
const CARD_MAX_BYTES: usize = 30 * 1024;
const TEXT_MAX_BYTES: usize = 150 * 1024;

#[derive(Debug, Clone)]
pub(crate) struct FakeMessage {
    pub chat_id: String,
    pub msg_type: String,
    pub content: String,
    pub root_id: String,
    pub thread_id: String,
    pub recalled: bool,
    /// Sent by a user (pushed as an event), not by the app.
    pub from_user: bool,
    /// The message this one replies to (empty for a plain send).
    pub reply_to: String,
}

/// Markdown strings anywhere in a card document.
fn markdown_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("tag").and_then(Value::as_str) == Some("markdown")
                && let Some(text) = map.get("content").and_then(Value::as_str)
            {
                out.push(text.to_owned());
            }
            map.values().for_each(|v| markdown_texts(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| markdown_texts(v, out)),
        _ => {}
    }
}

/// Every `element_id` anywhere in a card document.
fn element_ids<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(id) = map.get("element_id").and_then(Value::as_str) {
                out.push(id);
            }
            map.values().for_each(|v| element_ids(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| element_ids(v, out)),
        _ => {}
    }
}

/// Lark's rule for an element id: a letter, then letters, digits or `_`, at
/// most 20 characters.
fn valid_element_id(id: &str) -> bool {
    id.len() <= 20
        && id.starts_with(|c: char| c.is_ascii_alphabetic())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks a full card document as Lark would; `None` when acceptable.
pub(crate) fn check_card(config: &FakeConfig, card: &Value) -> Option<Reply> {
    if card["schema"] == "2.0" {
        let mut ids = Vec::new();
        element_ids(card, &mut ids);
        let mut seen = std::collections::HashSet::new();
        if let Some(bad) = ids
            .iter()
            .find(|id| !valid_element_id(id) || !seen.insert(**id))
        {
            // Inferred code: Lark states the rule (format, unique in the card).
            let msg = format!(
                "Failed to create card content, ext=ErrCode: 200861; ErrMsg: element_id {bad:?} is invalid or repeated"
            );
            return Some(Reply::err(StatusCode::BAD_REQUEST, CODE_CARD_FAILED, &msg));
        }
    }
    let mut texts = Vec::new();
    markdown_texts(card, &mut texts);
    let tables: usize = texts.iter().map(|t| count_tables(t)).sum();
    if tables > config.card_table_limit {
        let msg = "Failed to create card content, ext=ErrCode: 11310; ErrMsg: card table number over limit";
        return Some(Reply::err(StatusCode::BAD_REQUEST, CODE_CARD_FAILED, msg));
    }
    if card["schema"] == "2.0" && card["config"]["update_multi"] == false {
        return Some(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_FORMAT,
            "update_multi must be true in JSON 2.0",
        ));
    }
    None
}

/// A checked message body: its `msg_type` and, for a card entity sent by
/// reference, the entity's id (the entity is the new message's once it is sent).
struct Content {
    msg_type: String,
    card_id: Option<String>,
}

impl Content {
    /// The message `id` was created with this content.
    fn sent_as(&self, state: &mut State, id: &str) {
        if let Some(card) = self
            .card_id
            .as_ref()
            .and_then(|card_id| state.rest.cards.get_mut(card_id))
        {
            card.message_id = Some(id.to_owned());
        }
    }
}

/// Validates `msg_type` + `content` (a JSON string).
fn check_content(config: &FakeConfig, state: &mut State, req: &Req<'_>) -> Result<Content, Reply> {
    let msg_type = req.body["msg_type"].as_str().unwrap_or_default().to_owned();
    if !MSG_TYPES.contains(&msg_type.as_str()) {
        return Err(Reply::validation("field validation failed: msg_type"));
    }
    let Some(content) = req.body["content"].as_str() else {
        return Err(Reply::validation(
            "field validation failed: content must be a JSON string",
        ));
    };
    let Ok(parsed) = serde_json::from_str::<Value>(content) else {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_FORMAT,
            "invalid message content",
        ));
    };
    let limit = if msg_type == "text" {
        TEXT_MAX_BYTES
    } else {
        CARD_MAX_BYTES
    };
    if content.len() > limit {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_TOO_LONG,
            "message content too long",
        ));
    }
    if msg_type == "text" && !parsed["text"].is_string() {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_FORMAT,
            "invalid message content",
        ));
    }
    let mut card_id = None;
    if msg_type == "interactive" {
        if parsed["type"] == "card" {
            let id = parsed["data"]["card_id"].as_str().unwrap_or_default();
            match state.rest.cards.get(id) {
                None => {
                    return Err(Reply::err(
                        StatusCode::BAD_REQUEST,
                        CODE_CARD_FAILED,
                        "ErrCode: 11310; cardid is invalid",
                    ));
                }
                Some(card) if card.message_id.is_some() => {
                    return Err(Reply::err(
                        StatusCode::BAD_REQUEST,
                        CODE_CARD_FAILED,
                        "card entity already sent",
                    ));
                }
                Some(_) => card_id = Some(id.to_owned()),
            }
        } else if let Some(reply) = check_card(config, &parsed) {
            return Err(reply);
        }
    }
    Ok(Content { msg_type, card_id })
}

fn message_data(id: &str, msg: &FakeMessage) -> Value {
    json!({
        "message_id": id, "root_id": msg.root_id, "parent_id": msg.root_id, "thread_id": msg.thread_id,
        "msg_type": msg.msg_type, "chat_id": msg.chat_id, "deleted": false, "updated": false,
        "body": {"content": msg.content},
        "sender": {"id": "cli_fake_app", "id_type": "app_id", "sender_type": "app", "tenant_key": "tenant_fake"},
    })
}

/// Lark sends at most one message per `uuid` within an hour; a repeated request
/// answers with the message the first one created (inferred: the docs promise
/// "at most one", not what the repeat returns).
fn replay_uuid(state: &State, req: &Req<'_>) -> Option<Reply> {
    let uuid = req.body["uuid"].as_str().filter(|u| !u.is_empty())?;
    let id = state.rest.sent_uuids.get(uuid)?;
    let msg = state.rest.messages.get(id)?;
    Some(Reply::ok(message_data(id, msg)))
}

fn remember_uuid(state: &mut State, req: &Req<'_>, id: &str) {
    if let Some(uuid) = req.body["uuid"].as_str().filter(|u| !u.is_empty()) {
        state.rest.sent_uuids.insert(uuid.to_owned(), id.to_owned());
    }
}

pub(crate) fn send(config: &FakeConfig, state: &mut State, req: &Req<'_>) -> Reply {
    let id_type = req
        .query
        .get("receive_id_type")
        .map(String::as_str)
        .unwrap_or_default();
    if !RECEIVE_ID_TYPES.contains(&id_type) {
        return Reply::validation("field validation failed: receive_id_type");
    }
    let Some(receive_id) = req.body["receive_id"].as_str().filter(|s| !s.is_empty()) else {
        return Reply::validation("field validation failed: receive_id");
    };
    let chat_id = if id_type == "chat_id" {
        receive_id.to_owned()
    } else {
        format!("oc_dm_{receive_id}")
    };
    if !state
        .rest
        .admit(format!("chat:{chat_id}"), config.sends_per_chat)
    {
        return Reply::rate_limited();
    }
    if let Some(reply) = replay_uuid(state, req) {
        return reply;
    }
    let content = match check_content(config, state, req) {
        Ok(ok) => ok,
        Err(reply) => return reply,
    };
    let id = state.rest.next_id("om_");
    remember_uuid(state, req, &id);
    content.sent_as(state, &id);
    let msg = FakeMessage {
        chat_id,
        msg_type: content.msg_type,
        content: req.body["content"].as_str().unwrap_or_default().to_owned(),
        root_id: String::new(),
        thread_id: String::new(),
        recalled: false,
        from_user: false,
        reply_to: String::new(),
    };
    let data = message_data(&id, &msg);
    state.rest.add_sent(id, msg);
    Reply::ok(data)
}

pub(crate) fn reply(config: &FakeConfig, state: &mut State, target: &str, req: &Req<'_>) -> Reply {
    let Some(parent) = state.rest.messages.get(target).cloned() else {
        return Reply::not_found("message");
    };
    if parent.recalled {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_RECALLED,
            "The message was recalled",
        );
    }
    if !state
        .rest
        .admit(format!("chat:{}", parent.chat_id), config.sends_per_chat)
    {
        return Reply::rate_limited();
    }
    if let Some(reply) = replay_uuid(state, req) {
        return reply;
    }
    let content = match check_content(config, state, req) {
        Ok(ok) => ok,
        Err(reply) => return reply,
    };
    let in_thread = req.body["reply_in_thread"].as_bool().unwrap_or(false);
    let root_id = if parent.root_id.is_empty() {
        target.to_owned()
    } else {
        parent.root_id.clone()
    };
    let thread_id = match (in_thread, parent.thread_id.is_empty()) {
        (_, false) => parent.thread_id.clone(),
        (true, true) => state.rest.next_id("omt_"),
        (false, true) => String::new(),
    };
    if !thread_id.is_empty()
        && let Some(p) = state.rest.messages.get_mut(target)
    {
        p.thread_id = thread_id.clone();
    }
    let id = state.rest.next_id("om_");
    remember_uuid(state, req, &id);
    content.sent_as(state, &id);
    let msg = FakeMessage {
        chat_id: parent.chat_id,
        msg_type: content.msg_type,
        content: req.body["content"].as_str().unwrap_or_default().to_owned(),
        root_id,
        thread_id,
        recalled: false,
        from_user: false,
        reply_to: target.to_owned(),
    };
    let data = message_data(&id, &msg);
    state.rest.add_sent(id, msg);
    Reply::ok(data)
}

pub(crate) fn patch(config: &FakeConfig, state: &mut State, id: &str, req: &Req<'_>) -> Reply {
    let Some(msg) = state.rest.messages.get(id) else {
        return Reply::not_found("message");
    };
    if msg.recalled {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_RECALLED,
            "The message was recalled",
        );
    }
    if msg.from_user || msg.msg_type != "interactive" {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_FORMAT,
            "only interactive messages can be patched",
        );
    }
    if !state
        .rest
        .admit(format!("patch:{id}"), config.patches_per_message)
    {
        return Reply::rate_limited();
    }
    let Some(content) = req.body["content"].as_str() else {
        return Reply::validation("field validation failed: content must be a JSON string");
    };
    if content.len() > CARD_MAX_BYTES {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_TOO_LONG,
            "message content too long",
        );
    }
    let Ok(card) = serde_json::from_str::<Value>(content) else {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_FORMAT,
            "invalid message content",
        );
    };
    if let Some(reply) = check_card(config, &card) {
        return reply;
    }
    if let Some(msg) = state.rest.messages.get_mut(id) {
        msg.content = content.to_owned();
    }
    Reply::ok(json!({}))
}

pub(crate) fn recall(state: &mut State, id: &str) -> Reply {
    match state.rest.messages.get_mut(id) {
        None => Reply::not_found("message"),
        Some(msg) if msg.recalled => Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_RECALLED,
            "The message was recalled",
        ),
        Some(msg) => {
            msg.recalled = true;
            Reply::ok(json!({}))
        }
    }
}

pub(crate) fn add_reaction(state: &mut State, id: &str, req: &Req<'_>) -> Reply {
    if !state.rest.messages.contains_key(id) {
        return Reply::not_found("message");
    }
    let Some(emoji) = req.body["reaction_type"]["emoji_type"]
        .as_str()
        .filter(|s| !s.is_empty())
    else {
        return Reply::validation("field validation failed: reaction_type.emoji_type");
    };
    let reaction_id = state.rest.next_id("r_");
    state
        .rest
        .reactions
        .insert(reaction_id.clone(), id.to_owned());
    Reply::ok(json!({
        "reaction_id": reaction_id,
        "operator": {"operator_id": "cli_fake_app", "operator_type": "app"},
        "action_time": "0",
        "reaction_type": {"emoji_type": emoji},
    }))
}

pub(crate) fn remove_reaction(state: &mut State, id: &str, reaction_id: &str) -> Reply {
    match state.rest.reactions.get(reaction_id) {
        Some(message) if message == id => {
            state.rest.reactions.remove(reaction_id);
            Reply::ok(json!({"reaction_id": reaction_id}))
        }
        _ => Reply::not_found("reaction"),
    }
}

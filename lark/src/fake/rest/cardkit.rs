//! Fake CardKit endpoints: create, stream element content, settings, full update.
//!
//! The codes for a stale sequence, closed streaming mode and an unknown element are
//! inferred (the reference documents the rules, not the codes).

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::im::check_card;
use super::{Reply, Req};
use crate::fake::{FakeConfig, State};

const CODE_SEQUENCE: i64 = 300317;
const CODE_STREAMING_CLOSED: i64 = 300309;
const CODE_NO_ELEMENT: i64 = 300302;

#[derive(Debug, Clone)]
pub(crate) struct FakeCard {
    pub document: Value,
    pub last_sequence: i64,
    /// An entity can be sent only once.
    pub sent: bool,
}

impl FakeCard {
    fn streaming(&self) -> bool {
        self.document["config"]["streaming_mode"] == true
    }
}

fn parse_card(config: &FakeConfig, data: &Value) -> Result<Value, Reply> {
    let Some(text) = data.as_str() else {
        return Err(Reply::validation(
            "field validation failed: data must be a JSON string",
        ));
    };
    let Ok(card) = serde_json::from_str::<Value>(text) else {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            230099,
            "Failed to create card content: invalid JSON",
        ));
    };
    if card["schema"] != "2.0" {
        return Err(Reply::validation("card entities require schema 2.0"));
    }
    check_card(config, &card).map_or(Ok(card), Err)
}

/// Finds the card, applies the per-card rate limit and the sequence rule.
fn sequenced<'a>(
    config: &FakeConfig,
    state: &'a mut State,
    id: &str,
    req: &Req<'_>,
) -> Result<&'a mut FakeCard, Reply> {
    if !state.rest.cards.contains_key(id) {
        return Err(Reply::not_found("card"));
    }
    if !state
        .rest
        .admit(format!("card:{id}"), config.cardkit_ops_per_card)
    {
        return Err(Reply::rate_limited());
    }
    let Some(sequence) = req.body["sequence"].as_i64() else {
        return Err(Reply::validation("field validation failed: sequence"));
    };
    let card = state.rest.cards.get_mut(id).expect("checked above");
    if sequence <= card.last_sequence {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_SEQUENCE,
            "sequence number compare failed",
        ));
    }
    card.last_sequence = sequence;
    Ok(card)
}

pub(crate) fn create(config: &FakeConfig, state: &mut State, req: &Req<'_>) -> Reply {
    if req.body["type"] != "card_json" {
        return Reply::validation("field validation failed: type");
    }
    let document = match parse_card(config, &req.body["data"]) {
        Ok(card) => card,
        Err(reply) => return reply,
    };
    let id = state.rest.next_id("7");
    state.rest.cards.insert(
        id.clone(),
        FakeCard {
            document,
            last_sequence: 0,
            sent: false,
        },
    );
    Reply::ok(json!({"card_id": id}))
}

fn set_element_content(value: &mut Value, element_id: &str, content: &str) -> bool {
    match value {
        Value::Object(map) => {
            if map.get("element_id").and_then(Value::as_str) == Some(element_id) {
                map.insert("content".into(), Value::String(content.to_owned()));
                return true;
            }
            map.values_mut()
                .any(|v| set_element_content(v, element_id, content))
        }
        Value::Array(items) => items
            .iter_mut()
            .any(|v| set_element_content(v, element_id, content)),
        _ => false,
    }
}

pub(crate) fn stream_content(
    config: &FakeConfig,
    state: &mut State,
    id: &str,
    element: &str,
    req: &Req<'_>,
) -> Reply {
    let Some(content) = req.body["content"].as_str().map(str::to_owned) else {
        return Reply::validation("field validation failed: content");
    };
    let card = match sequenced(config, state, id, req) {
        Ok(card) => card,
        Err(reply) => return reply,
    };
    if !card.streaming() {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_STREAMING_CLOSED,
            "card streaming mode is closed",
        );
    }
    if !set_element_content(&mut card.document, element, &content) {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_NO_ELEMENT,
            "element not found",
        );
    }
    Reply::ok(json!({}))
}

pub(crate) fn settings(config: &FakeConfig, state: &mut State, id: &str, req: &Req<'_>) -> Reply {
    let Some(settings) = req.body["settings"]
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    else {
        return Reply::validation("field validation failed: settings must be a JSON string");
    };
    let card = match sequenced(config, state, id, req) {
        Ok(card) => card,
        Err(reply) => return reply,
    };
    if let Some(Value::Object(changes)) = settings.get("config") {
        for (key, value) in changes {
            card.document["config"][key] = value.clone();
        }
    }
    Reply::ok(json!({}))
}

pub(crate) fn update(config: &FakeConfig, state: &mut State, id: &str, req: &Req<'_>) -> Reply {
    let document = match parse_card(config, &req.body["card"]["data"]) {
        Ok(card) => card,
        Err(reply) => return reply,
    };
    match sequenced(config, state, id, req) {
        Ok(card) => {
            card.document = document;
            Reply::ok(json!({}))
        }
        Err(reply) => reply,
    }
}

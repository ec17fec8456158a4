//! Fake CardKit card entities (reference §3.3): create from a JSON 2.0 card, send
//! once by reference (`{"type":"card","data":{"card_id"}}`, checked in
//! [`super::im`]), stream an element's full text, change settings, replace the
//! whole card.
//!
//! The rules Lark states are enforced: JSON 2.0 only; `sequence` a positive
//! int32 that strictly increases per card, shared by every kind of update;
//! `uuid` at most 64 characters, and a repeated `uuid` on a card done only once
//! (answered as a success, nothing applied); streaming text needs
//! `streaming_mode`, which closes by itself after 10 minutes
//! ([`crate::fake::FakeConfig::streaming_timeout`]); at most 10 calls per second
//! per card; an entity lives 14 days. Updates of an entity not yet sent are
//! accepted (the reference does not say Lark refuses them) but counted, so a
//! test can check that the bot never makes one.
//!
//! The codes for a stale sequence, closed streaming mode and an unknown element
//! are inferred (the reference documents the rules, not the codes).

use std::collections::HashSet;
use std::time::Instant;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::im::check_card;
use super::{Reply, Req};
use crate::fake::{FakeConfig, State};

const CODE_SEQUENCE: i64 = crate::rest::CODE_CARDKIT_SEQUENCE;
const CODE_STREAMING_CLOSED: i64 = 300309;
const CODE_NO_ELEMENT: i64 = 300302;
/// Inferred: the entity is past its 14 days.
const CODE_EXPIRED: i64 = 300305;
const SEQUENCE_MAX: i64 = 2_147_483_647;
const UUID_MAX_CHARS: usize = 64;

#[derive(Debug, Clone)]
pub(crate) struct FakeCard {
    pub document: Value,
    pub last_sequence: i64,
    /// The message that shows it: an entity can be sent only once.
    pub message_id: Option<String>,
    created: Instant,
    /// When streaming mode was last turned on (it closes by itself).
    streaming_since: Option<Instant>,
    uuids: HashSet<String>,
    /// Updates applied, and how many of them came before the entity was sent.
    pub updates: u32,
    pub updates_before_send: u32,
}

/// A card entity as the fake holds it now ([`crate::fake::FakeLark::card_entity`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CardEntityView {
    pub card_id: String,
    pub document: Value,
    pub streaming: bool,
    pub last_sequence: i64,
    pub message_id: Option<String>,
    pub updates: u32,
    pub updates_before_send: u32,
}

impl FakeCard {
    fn new(document: Value) -> Self {
        let now = Instant::now();
        let streaming_since = (document["config"]["streaming_mode"] == true).then_some(now);
        FakeCard {
            document,
            last_sequence: 0,
            message_id: None,
            created: now,
            streaming_since,
            uuids: HashSet::new(),
            updates: 0,
            updates_before_send: 0,
        }
    }

    /// Streaming mode as it is now: it closes 10 minutes after it was turned on.
    fn streaming(&mut self, config: &FakeConfig) -> bool {
        if self
            .streaming_since
            .is_some_and(|since| since.elapsed() >= config.streaming_timeout)
        {
            self.streaming_since = None;
            self.document["config"]["streaming_mode"] = json!(false);
        }
        self.streaming_since.is_some()
    }

    /// The document's config changed: streaming mode may have been turned on
    /// (its 10 minutes start) or off.
    fn config_changed(&mut self, config: &FakeConfig) {
        let on = self.document["config"]["streaming_mode"] == true;
        let was_on = self
            .streaming_since
            .is_some_and(|since| since.elapsed() < config.streaming_timeout);
        self.streaming_since = match (on, was_on) {
            (false, _) => None,
            (true, true) => self.streaming_since,
            (true, false) => Some(Instant::now()),
        };
    }

    /// An update was applied.
    fn applied(&mut self) {
        self.updates += 1;
        if self.message_id.is_none() {
            self.updates_before_send += 1;
        }
    }

    pub(crate) fn view(&mut self, config: &FakeConfig, card_id: &str) -> CardEntityView {
        CardEntityView {
            card_id: card_id.to_owned(),
            streaming: self.streaming(config),
            document: self.document.clone(),
            last_sequence: self.last_sequence,
            message_id: self.message_id.clone(),
            updates: self.updates,
            updates_before_send: self.updates_before_send,
        }
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

/// What an update found: go on with the card, or the answer already given.
enum Admitted<'a> {
    Apply(&'a mut FakeCard),
    /// A repeated `uuid`: done once already.
    Repeat,
}

/// Finds the card and applies the per-card rate limit, the `uuid` rule, the
/// lifetime and the sequence rule.
fn sequenced<'a>(
    config: &FakeConfig,
    state: &'a mut State,
    id: &str,
    req: &Req<'_>,
) -> Result<Admitted<'a>, Reply> {
    if !state.rest.cards.contains_key(id) {
        return Err(Reply::not_found("card"));
    }
    if !state
        .rest
        .admit(format!("card:{id}"), config.cardkit_ops_per_card)
    {
        return Err(Reply::rate_limited());
    }
    let Some(sequence) = req.body["sequence"]
        .as_i64()
        .filter(|s| (1..=SEQUENCE_MAX).contains(s))
    else {
        return Err(Reply::validation(
            "field validation failed: sequence must be an int32 from 1",
        ));
    };
    let uuid = match req.body.get("uuid") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) if !u.is_empty() && u.chars().count() <= UUID_MAX_CHARS => {
            Some(u.clone())
        }
        Some(_) => return Err(Reply::validation("field validation failed: uuid")),
    };
    let card = state.rest.cards.get_mut(id).expect("checked above");
    if card.created.elapsed() >= config.card_entity_ttl {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_EXPIRED,
            "card entity expired",
        ));
    }
    if let Some(uuid) = uuid {
        if card.uuids.contains(&uuid) {
            return Ok(Admitted::Repeat);
        }
        card.uuids.insert(uuid);
    }
    if sequence <= card.last_sequence {
        return Err(Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_SEQUENCE,
            "sequence number compare failed",
        ));
    }
    card.last_sequence = sequence;
    Ok(Admitted::Apply(card))
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
    state.rest.cards.insert(id.clone(), FakeCard::new(document));
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
        Ok(Admitted::Apply(card)) => card,
        Ok(Admitted::Repeat) => return Reply::ok(json!({})),
        Err(reply) => return reply,
    };
    if !card.streaming(config) {
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
    card.applied();
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
        Ok(Admitted::Apply(card)) => card,
        Ok(Admitted::Repeat) => return Reply::ok(json!({})),
        Err(reply) => return reply,
    };
    if let Some(Value::Object(changes)) = settings.get("config") {
        for (key, value) in changes {
            card.document["config"][key] = value.clone();
        }
    }
    card.config_changed(config);
    card.applied();
    Reply::ok(json!({}))
}

pub(crate) fn update(config: &FakeConfig, state: &mut State, id: &str, req: &Req<'_>) -> Reply {
    if req.body["card"]["type"] != "card_json" {
        return Reply::validation("field validation failed: card.type");
    }
    let document = match parse_card(config, &req.body["card"]["data"]) {
        Ok(card) => card,
        Err(reply) => return reply,
    };
    match sequenced(config, state, id, req) {
        Ok(Admitted::Apply(card)) => {
            card.document = document;
            card.config_changed(config);
            card.applied();
            Reply::ok(json!({}))
        }
        Ok(Admitted::Repeat) => Reply::ok(json!({})),
        Err(reply) => reply,
    }
}

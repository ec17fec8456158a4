//! The fake's OpenAPI endpoints, with the checks and limits Lark applies.
//!
//! One entry point records every call and dispatches on method and path, so each
//! handler is a plain function of the locked state returning `(status, code, body)`.
//! Rate limits are sliding one-second windows answering HTTP 429 / 99991400.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::records::RestCall;
use super::{FakeConfig, FakeLark, State as FakeState};

mod cardkit;
mod im;
mod lookup;
mod resources;

pub use cardkit::CardEntityView;
pub(crate) use im::check_card;
pub use resources::FakeResource;

const CODE_TOKEN_INVALID: i64 = 99991663;
const CODE_RATE_LIMITED: i64 = 99991400;
const CODE_VALIDATION: i64 = 99992402;
const CODE_NOT_FOUND: i64 = 230_002_404; // inferred; real Lark's code for an unknown id varies

pub(super) fn router() -> axum::Router<FakeLark> {
    axum::Router::new().fallback(entry)
}

#[derive(Default)]
pub(crate) struct RestState {
    pub messages: HashMap<String, im::FakeMessage>,
    pub reactions: HashMap<String, String>,
    pub cards: HashMap<String, cardkit::FakeCard>,
    /// `(message_id, file_key)` → the file a user sent in that message.
    pub resources: HashMap<(String, String), FakeResource>,
    /// `uuid` of a send or reply → the message it created.
    pub sent_uuids: HashMap<String, String>,
    windows: HashMap<String, VecDeque<Instant>>,
    next: u64,
    /// Failures to answer the next authorised calls with (see `FakeLark::fail_next_calls`).
    pub(crate) failures: VecDeque<Injected>,
    /// Messages users sent (pushed as events), for `GET …/messages/:id`.
    pub(crate) pushed: HashMap<String, lookup::PushedMessage>,
    /// Every message (pushed or sent by the app) in the order it was made,
    /// for `GET …/messages?container_id=…`.
    pub(crate) timeline: Vec<(String, u128)>,
    /// The app lacks the scope to read a group's messages (`im:message.group_msg`).
    pub(crate) group_history_denied: bool,
    /// Display names by open_id, for the contact API.
    pub(crate) names: HashMap<String, String>,
    /// The app lacks the contact (user name) scope.
    pub(crate) contact_denied: bool,
    /// The app lacks the message-reading scope.
    pub(crate) message_read_denied: bool,
    /// The answer to every CardKit call, when set (see `FakeLark::refuse_cardkit`).
    pub(crate) cardkit_refusal: Option<Injected>,
}

/// An answer forced on a coming call.
#[derive(Debug, Clone)]
pub(crate) struct Injected {
    pub status: StatusCode,
    pub code: i64,
    pub msg: String,
}

impl RestState {
    fn injected_failure(&mut self) -> Option<Reply> {
        self.failures
            .pop_front()
            .map(|f| Reply::err(f.status, f.code, &f.msg))
    }

    /// Registers a message a user sent (pushed as an event), so replies and
    /// reactions can target it as on real Lark.
    /// Keeps what `GET …/messages/:id` answers for a pushed user message.
    pub(crate) fn remember_pushed(&mut self, id: &str, message: &Value, sender_open_id: &str) {
        let pushed = lookup::pushed(message, sender_open_id);
        if self.pushed.insert(id.to_owned(), pushed).is_none() {
            self.timeline.push((id.to_owned(), now_ms()));
        }
    }

    /// A message the app sent (or replied with).
    pub(crate) fn add_sent(&mut self, id: String, message: im::FakeMessage) {
        self.timeline.push((id.clone(), now_ms()));
        self.messages.insert(id, message);
    }

    pub(crate) fn remember_user_message(
        &mut self,
        id: &str,
        chat_id: &str,
        thread_id: &str,
        msg_type: &str,
    ) {
        self.messages
            .entry(id.to_owned())
            .or_insert(im::FakeMessage {
                chat_id: chat_id.to_owned(),
                msg_type: msg_type.to_owned(),
                content: String::new(),
                root_id: String::new(),
                thread_id: thread_id.to_owned(),
                recalled: false,
                from_user: true,
                reply_to: String::new(),
            });
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{:016x}", self.next)
    }

    /// Counts a call against `key`; false when that exceeds `limit` per second.
    fn admit(&mut self, key: String, limit: usize) -> bool {
        let now = Instant::now();
        let hits = self.windows.entry(key).or_default();
        while hits
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            hits.pop_front();
        }
        if hits.len() >= limit {
            return false;
        }
        hits.push_back(now);
        true
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// A handler's answer: HTTP status, Lark code, and the body.
pub(crate) struct Reply {
    status: StatusCode,
    code: i64,
    body: Body,
}

/// What a call answers: JSON, or (a downloaded resource) raw bytes.
enum Body {
    Json(Value),
    File {
        content_type: String,
        disposition: String,
        bytes: axum::body::Bytes,
    },
}

impl Reply {
    /// The Lark `code` of the answer.
    pub fn code(&self) -> i64 {
        self.code
    }

    pub fn ok(data: Value) -> Self {
        Self::flat(json!({"code": 0, "msg": "success", "data": data}))
    }

    /// A success whose fields are not wrapped in `data` (token, bot info).
    fn flat(body: Value) -> Self {
        Self {
            status: StatusCode::OK,
            code: 0,
            body: Body::Json(body),
        }
    }

    /// A file's bytes, as a resource download answers.
    pub fn file(content_type: &str, disposition: String, bytes: axum::body::Bytes) -> Self {
        Self {
            status: StatusCode::OK,
            code: 0,
            body: Body::File {
                content_type: content_type.to_owned(),
                disposition,
                bytes,
            },
        }
    }

    pub fn err(status: StatusCode, code: i64, msg: &str) -> Self {
        Self {
            status,
            code,
            body: Body::Json(json!({"code": code, "msg": msg, "data": {}})),
        }
    }

    pub fn validation(msg: &str) -> Self {
        Self::err(StatusCode::BAD_REQUEST, CODE_VALIDATION, msg)
    }

    pub fn not_found(what: &str) -> Self {
        Self::err(
            StatusCode::BAD_REQUEST,
            CODE_NOT_FOUND,
            &format!("{what} not found"),
        )
    }

    pub fn rate_limited() -> Self {
        Self::err(
            StatusCode::TOO_MANY_REQUESTS,
            CODE_RATE_LIMITED,
            "request trigger frequency limit",
        )
    }
}

/// Request context handed to handlers.
pub(crate) struct Req<'a> {
    pub query: HashMap<String, String>,
    pub body: &'a Value,
}

async fn entry(
    State(fake): State<FakeLark>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let raw_query = uri.query().unwrap_or("").to_owned();
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let query = reqwest::Url::parse(&format!("http://x/?{raw_query}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    let req = Req {
        query,
        body: &json_body,
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if method == Method::GET && segments.get(5) == Some(&"resources") {
        fake.downloads_released().await;
    }
    let mut state = fake.state();
    let reply = route(&fake, &mut state, &method, &segments, &headers, &req);
    let answer = match &reply.body {
        Body::Json(answer) => answer.clone(),
        Body::File { .. } => Value::Null,
    };
    state.records.calls.push(RestCall {
        method: method.to_string(),
        path: path.clone(),
        query: raw_query,
        body: json_body.clone(),
        status: reply.status.as_u16(),
        code: reply.code,
        answer,
        at: Instant::now(),
    });
    drop(state);
    fake.notify();
    match reply.body {
        Body::Json(body) => (reply.status, axum::Json(body)).into_response(),
        Body::File {
            content_type,
            disposition,
            bytes,
        } => (
            reply.status,
            [
                (axum::http::header::CONTENT_TYPE, content_type),
                (axum::http::header::CONTENT_DISPOSITION, disposition),
            ],
            bytes,
        )
            .into_response(),
    }
}

fn route(
    fake: &FakeLark,
    state: &mut FakeState,
    method: &Method,
    segments: &[&str],
    headers: &HeaderMap,
    req: &Req<'_>,
) -> Reply {
    if segments == ["open-apis", "auth", "v3", "tenant_access_token", "internal"]
        && method == Method::POST
    {
        return issue_token(fake, state, req);
    }
    if !authorized(state, headers) {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_TOKEN_INVALID,
            "Invalid access token for authorization. Please make a request with token attached.",
        );
    }
    let config = fake.config();
    if let Some(reply) = state.rest.injected_failure() {
        return reply;
    }
    if !state.rest.admit("app".into(), config.calls_per_app) {
        return Reply::rate_limited();
    }
    if segments.get(1) == Some(&"cardkit")
        && let Some(f) = &state.rest.cardkit_refusal
    {
        return Reply::err(f.status, f.code, &f.msg);
    }
    match (method.clone(), segments) {
        (Method::GET, ["open-apis", "bot", "v3", "info"]) => bot_info(config),
        (Method::POST, ["open-apis", "im", "v1", "messages"]) => im::send(config, state, req),
        (Method::POST, ["open-apis", "im", "v1", "messages", id, "reply"]) => {
            im::reply(config, state, id, req)
        }
        (Method::PATCH, ["open-apis", "im", "v1", "messages", id]) => {
            im::patch(config, state, id, req)
        }
        (Method::DELETE, ["open-apis", "im", "v1", "messages", id]) => im::recall(state, id),
        (Method::POST, ["open-apis", "im", "v1", "messages", id, "reactions"]) => {
            im::add_reaction(state, id, req)
        }
        (Method::DELETE, ["open-apis", "im", "v1", "messages", id, "reactions", rid]) => {
            im::remove_reaction(state, id, rid)
        }
        (Method::GET, ["open-apis", "im", "v1", "messages"]) => {
            lookup::list_messages(config, state, req)
        }
        (Method::GET, ["open-apis", "im", "v1", "messages", id]) => {
            lookup::get_message(config, state, id)
        }
        (Method::GET, ["open-apis", "contact", "v3", "users", id]) => {
            lookup::user_name(state, id, req)
        }
        (Method::GET, ["open-apis", "im", "v1", "messages", id, "resources", key]) => {
            resources::get(state, id, key, req)
        }
        (Method::POST, ["open-apis", "cardkit", "v1", "cards"]) => {
            cardkit::create(config, state, req)
        }
        (
            Method::PUT,
            [
                "open-apis",
                "cardkit",
                "v1",
                "cards",
                id,
                "elements",
                eid,
                "content",
            ],
        ) => cardkit::stream_content(config, state, id, eid, req),
        (Method::PATCH, ["open-apis", "cardkit", "v1", "cards", id, "settings"]) => {
            cardkit::settings(config, state, id, req)
        }
        (Method::PUT, ["open-apis", "cardkit", "v1", "cards", id]) => {
            cardkit::update(config, state, id, req)
        }
        _ => Reply::err(StatusCode::NOT_FOUND, 404, "404 page not found"),
    }
}

/// `GET /open-apis/bot/v3/info`: flat like the token call, the bot under `bot`.
fn bot_info(config: &FakeConfig) -> Reply {
    Reply::flat(json!({"code": 0, "msg": "ok", "bot": {
        "activate_status": 2, "app_name": "Fake Weft", "avatar_url": "",
        "ip_white_list": [], "open_id": config.bot_open_id,
    }}))
}

fn issue_token(fake: &FakeLark, state: &mut FakeState, req: &Req<'_>) -> Reply {
    let config = fake.config();
    if req.body["app_id"] != config.app_id.as_str()
        || req.body["app_secret"] != config.app_secret.as_str()
    {
        return Reply::err(StatusCode::BAD_REQUEST, 10014, "app secret invalid");
    }
    let now = Instant::now();
    state.tokens.retain(|_, expiry| *expiry > now);
    // Lark hands back the current token while it has more than 30 minutes left.
    let reusable = state
        .tokens
        .iter()
        .filter(|(_, expiry)| expiry.duration_since(now) > Duration::from_secs(1800))
        .max_by_key(|(_, expiry)| **expiry)
        .map(|(token, expiry)| (token.clone(), *expiry));
    let (token, expiry) = reusable.unwrap_or_else(|| {
        let token = format!("t-{}", uuid::Uuid::new_v4().simple());
        let expiry = now + config.token_ttl;
        state.tokens.insert(token.clone(), expiry);
        (token, expiry)
    });
    let expire = expiry.duration_since(now).as_secs();
    // The token response is flat: no `data` wrapper.
    Reply::flat(json!({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": expire}))
}

fn authorized(state: &FakeState, headers: &HeaderMap) -> bool {
    let Some(token) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    state
        .tokens
        .get(token)
        .is_some_and(|expiry| *expiry > Instant::now())
}

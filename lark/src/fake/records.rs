//! What the fake server saw, for tests to assert on.
//!
//! Everything is appended, never rewritten, except the outcome of a push attempt,
//! which moves from `Pending` to its result.

use serde_json::Value;

#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Successful WebSocket handshakes, ever.
    pub connections_opened: usize,
    /// Handshakes refused (bad ticket, limit, forced rejection).
    pub handshakes_rejected: usize,
    /// Discovery requests, answered or not.
    pub discoveries: usize,
    pub pings: Vec<PingRecord>,
    pub pushes: Vec<PushAttempt>,
    /// Acks the fake pretended to lose (see `FakeLark::lose_next_acks`).
    pub acks_lost: usize,
    /// Valid-looking acks that arrived after their attempt's deadline (the
    /// attempt is failed and the event redelivered, as Lark does).
    pub late_acks: usize,
    /// Frames that failed strict decoding, with the reason.
    pub bad_frames: Vec<String>,
    pub calls: Vec<RestCall>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingRecord {
    pub conn_id: u64,
    pub service: i32,
}

/// One delivery attempt of one event.
#[derive(Debug, Clone, PartialEq)]
pub struct PushAttempt {
    pub event_id: String,
    /// 1 for the first delivery, 2+ for redeliveries.
    pub attempt: u32,
    pub conn_id: Option<u64>,
    /// The frame-level `message_id` header of this attempt.
    pub message_id: String,
    pub fragments: usize,
    pub outcome: AttemptOutcome,
    /// When the fake handed the attempt's frames to the connection (just before
    /// they are written), for measuring the bot's ack and reaction times.
    pub pushed_at: std::time::Instant,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    Pending,
    Acked(AckRecord),
    Failed(FailReason),
}

#[derive(Debug, Clone, PartialEq)]
pub struct AckRecord {
    pub code: i64,
    pub biz_rt_ms: i64,
    /// The decoded `data` (base64 JSON), e.g. a card callback response.
    pub data: Option<Value>,
    /// When the fake read the ack off the socket.
    pub at: std::time::Instant,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FailReason {
    /// No valid ack within the ack deadline.
    Timeout,
    /// No live connection to deliver to.
    NoConnection,
    /// The client answered with a non-200 code.
    Code(i64),
    /// The ack was malformed (missing headers, no biz_rt, bad payload...).
    BadAck(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RestCall {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The JSON body, or `Null` when there was none or it was not JSON.
    pub body: Value,
    pub status: u16,
    pub code: i64,
    /// What the fake answered (`{"code","msg","data"}`); `Null` for a file.
    pub answer: Value,
    /// When the fake handled it.
    pub at: std::time::Instant,
}

impl Records {
    pub fn attempts_of(&self, event_id: &str) -> Vec<&PushAttempt> {
        self.pushes
            .iter()
            .filter(|p| p.event_id == event_id)
            .collect()
    }

    /// Whether the event was acked with code 200 on some attempt.
    pub fn acked(&self, event_id: &str) -> bool {
        self.attempts_of(event_id)
            .iter()
            .any(|p| matches!(&p.outcome, AttemptOutcome::Acked(a) if a.code == 200))
    }

    /// The decoded `data` of the event's accepted ack (a card callback's answer).
    pub fn ack_data(&self, event_id: &str) -> Option<&Value> {
        self.attempts_of(event_id)
            .into_iter()
            .find_map(|p| match &p.outcome {
                AttemptOutcome::Acked(a) if a.code == 200 => a.data.as_ref(),
                _ => None,
            })
    }

    /// What CardKit entity `card_id` showed after its create and after each
    /// update Lark took (a streamed element's text, settings, a whole new card),
    /// with when. Built from the calls, so it is there for any past moment.
    pub fn entity_documents(&self, card_id: &str) -> Vec<(std::time::Instant, Value)> {
        let mut out: Vec<(std::time::Instant, Value)> = Vec::new();
        let path = format!("/open-apis/cardkit/v1/cards/{card_id}");
        let parse = |v: &Value| {
            v.as_str()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
        };
        for call in self.calls.iter().filter(|c| c.status == 200) {
            let doc = if call.path == "/open-apis/cardkit/v1/cards" {
                if call.answer["data"]["card_id"] != card_id {
                    continue;
                }
                parse(&call.body["data"])
            } else if call.path == path {
                parse(&call.body["card"]["data"])
            } else if let Some(rest) = call.path.strip_prefix(&format!("{path}/")) {
                let Some((_, mut doc)) = out.last().cloned() else {
                    continue;
                };
                match rest.split('/').collect::<Vec<_>>().as_slice() {
                    ["settings"] => {
                        if let Some(Value::Object(config)) =
                            parse(&call.body["settings"]).map(|s| s["config"].clone())
                        {
                            for (k, v) in config {
                                doc["config"][k] = v;
                            }
                        }
                    }
                    ["elements", element, "content"] => {
                        set_content(&mut doc, element, &call.body["content"]);
                    }
                    _ => continue,
                }
                Some(doc)
            } else {
                continue;
            };
            if let Some(doc) = doc {
                out.push((call.at, doc));
            }
        }
        out
    }

    pub fn calls_to(&self, method: &str, path_prefix: &str) -> Vec<&RestCall> {
        self.calls
            .iter()
            .filter(|c| c.method == method && c.path.starts_with(path_prefix))
            .collect()
    }
}

/// Puts `content` into the element `element_id`, wherever it is in `doc`.
fn set_content(doc: &mut Value, element_id: &str, content: &Value) -> bool {
    match doc {
        Value::Object(map) => {
            if map.get("element_id").and_then(Value::as_str) == Some(element_id) {
                map.insert("content".into(), content.clone());
                return true;
            }
            map.values_mut()
                .any(|v| set_content(v, element_id, content))
        }
        Value::Array(items) => items
            .iter_mut()
            .any(|v| set_content(v, element_id, content)),
        _ => false,
    }
}

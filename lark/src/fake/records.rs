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

    pub fn calls_to(&self, method: &str, path_prefix: &str) -> Vec<&RestCall> {
        self.calls
            .iter()
            .filter(|c| c.method == method && c.path.starts_with(path_prefix))
            .collect()
    }
}

//! The Lark long connection (WebSocket event subscription) client.
//!
//! [`start`] spawns one task that discovers the endpoint, dials it, and keeps the
//! connection alive for as long as the [`CancellationToken`] is not cancelled:
//! pings on connect and every `PingInterval`, applies the server's `ClientConfig`,
//! reconnects with the server's jitter and intervals, and stops with a
//! [`WsError`] only on fatal errors (bad credentials, 403, connection limit).
//!
//! Lark redelivers any event not acked within 3 s. An ack is a promise that the
//! event will not be lost, so the caller decides when to make it: each event comes
//! with an [`EventAck`], and the ack goes out when the caller sends it (the gateway
//! does once the event is stored durably, one database insert — about a
//! millisecond). An event whose ack is dropped unsent is not acked, and Lark
//! redelivers it; an ack sent after its connection closed is dropped (Lark
//! redelivers then too). Deliveries travel through an unbounded channel and acks
//! through the connection's writer task, so nothing here waits for the caller.
//! `card.action.trigger` is different: its ack carries the callback response; it
//! is acked when the caller answers or when [`WsConfig::card_response_deadline`]
//! passes, whichever comes first.

mod client;
mod config;
mod discovery;
mod reassembly;
mod session;

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::credentials::AppCredentials;
use crate::event::{CardAction, CardActionResponse, EventEnvelope};
use crate::frame::Frame;

pub use config::ServerConfig;

/// Settings of the long connection. Server-supplied intervals are not here: they
/// come from discovery and pongs (see [`ServerConfig`]).
#[derive(Clone, Debug)]
pub struct WsConfig {
    pub credentials: AppCredentials,
    /// `https://open.feishu.cn`, `https://open.larksuite.com`, or a fake server.
    pub base_url: String,
    /// Timeout of one endpoint discovery request (a missing one once wedged the
    /// Python SDK for days).
    pub discovery_timeout: Duration,
    /// Timeout of the WebSocket dial and handshake.
    pub dial_timeout: Duration,
    /// Liveness watchdog: with no inbound frame for `PingInterval + pong_timeout`
    /// the connection is presumed half-open and is replaced.
    pub pong_timeout: Duration,
    /// How long a partial set of fragments is kept.
    pub fragment_ttl: Duration,
    /// How long a card callback waits for the caller's response before acking
    /// without one. Lark wants the answer within 3 s.
    pub card_response_deadline: Duration,
    /// Reconnect and ping settings used until the server sends its own (the SDK
    /// defaults: retry forever, 120 s interval, 30 s jitter, 120 s pings).
    pub initial_server_config: ServerConfig,
}

impl WsConfig {
    pub fn new(credentials: AppCredentials, base_url: impl Into<String>) -> Self {
        Self {
            credentials,
            base_url: base_url.into(),
            discovery_timeout: Duration::from_secs(15),
            dial_timeout: Duration::from_secs(15),
            pong_timeout: Duration::from_secs(30),
            fragment_ttl: Duration::from_secs(10),
            card_response_deadline: Duration::from_millis(2500),
            initial_server_config: ServerConfig::default(),
        }
    }
}

/// Something Lark pushed, handed to the caller.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "moved once per event; boxing buys nothing"
)]
pub enum Delivery {
    /// An event, acked when the caller sends its [`InboundEvent::ack`].
    Event(InboundEvent),
    /// A `card.action.trigger` callback awaiting [`CardActionDelivery::respond`].
    CardAction(CardActionDelivery),
}

#[derive(Debug)]
pub struct InboundEvent {
    pub envelope: EventEnvelope,
    /// The frame's `trace_id` header, for correlating with Lark support.
    pub trace_id: String,
    /// Send it once the event is safe (stored, or deliberately ignored).
    pub ack: EventAck,
}

/// The ack of one event, to be sent by whoever makes the event safe. Dropped
/// unsent, the event is not acked and Lark delivers it again.
#[must_use = "an event whose ack is never sent is redelivered"]
pub struct EventAck {
    frame: Frame,
    received: Instant,
    out: mpsc::UnboundedSender<Frame>,
}

/// What became of an ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckSent {
    /// Handed to the connection's writer.
    Queued,
    /// The connection the event came on has closed; Lark redelivers the event.
    ConnectionClosed,
}

impl EventAck {
    pub(crate) fn new(frame: Frame, received: Instant, out: mpsc::UnboundedSender<Frame>) -> Self {
        EventAck {
            frame,
            received,
            out,
        }
    }

    /// Acks the event (code 200), with `biz_rt` the time since it was read.
    pub fn send(self) -> AckSent {
        let frame = session::ack(self.frame, self.received, 200, None);
        match self.out.send(frame) {
            Ok(()) => AckSent::Queued,
            Err(_) => AckSent::ConnectionClosed,
        }
    }

    /// Time since the event's last frame was read off the connection.
    pub fn waited(&self) -> Duration {
        self.received.elapsed()
    }
}

impl std::fmt::Debug for EventAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventAck")
            .field("seq_id", &self.frame.seq_id)
            .field("waited", &self.received.elapsed())
            .finish()
    }
}

/// A card callback. Dropping it without responding acks with no response body.
#[derive(Debug)]
pub struct CardActionDelivery {
    pub envelope: EventEnvelope,
    pub action: CardAction,
    responder: oneshot::Sender<CardActionResponse>,
}

impl CardActionDelivery {
    /// Sends `response` back in the ack. Too late (after the deadline) is a no-op.
    pub fn respond(self, response: CardActionResponse) {
        let _ = self.responder.send(response);
    }
}

/// Why the long connection stopped for good.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("endpoint discovery refused: code {code}: {msg}")]
    DiscoveryRejected { code: i64, msg: String },
    #[error("handshake refused: status {status}: {msg}")]
    HandshakeRejected { status: i64, msg: String },
    #[error("connection limit reached for this app: {msg}")]
    ConnectionLimit { msg: String },
    #[error("gave up after {attempts} reconnect attempts")]
    GaveUp { attempts: u64 },
}

/// Starts the long connection. Deliveries arrive on the receiver; the task ends
/// with `Ok(())` when `cancel` fires, or with a fatal [`WsError`].
pub fn start(
    config: WsConfig,
    cancel: CancellationToken,
) -> (
    mpsc::UnboundedReceiver<Delivery>,
    JoinHandle<Result<(), WsError>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(client::run(config, tx, cancel));
    (rx, task)
}

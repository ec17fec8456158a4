//! A fake Lark server that speaks the real wire protocol.
//!
//! It implements what `shared/reference/lark.md` ("What a faithful fake Lark server
//! must do") lists: endpoint discovery with one-time tickets, handshake rejections,
//! strict proto2 frame decoding, ping/pong with `ClientConfig` changes, pushes split
//! into out-of-order fragments, cluster-mode delivery to one connection, redelivery
//! of unacked events, and the REST endpoints with their checks and rate limits.
//! Every call and delivery attempt is recorded in [`Records`] so tests can assert
//! on what a real Lark would have seen. Button clicks ([`FakeLark::click_button`])
//! arrive as `card.action.trigger` pushes, and the card in a callback's ack
//! replaces the clicked card. Files and images users send are served from what
//! the test registered ([`FakeLark::add_resource`]). CardKit card entities
//! follow Lark's rules (sent once by reference, strictly increasing `sequence`,
//! streaming mode, 10 calls/s per card) and read back as the messages that show
//! them ([`FakeLark::sent_messages`], [`FakeLark::card_entity`]). Knobs ([`FakeLark::set_discovery`],
//! [`FakeLark::silence_connections`], ...) inject the failures real Lark produces.
//!
//! Codes the reference does not pin down (e.g. for a stale ticket) are marked
//! "inferred" where they are produced.

mod card_action;
mod push;
mod records;
mod rest;
mod serve;
mod ws;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use card_action::{ClickError, card_action_event, sample_card_action};
pub use push::{FragmentOrder, PushOptions, sample_message_event};
pub use records::{
    AckRecord, AttemptOutcome, FailReason, PingRecord, PushAttempt, Records, RestCall,
};
pub use rest::{CardEntityView, FakeResource};

/// The `ClientConfig` the fake hands out (seconds, as on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ClientConfigJson {
    pub reconnect_count: i64,
    pub reconnect_interval: u64,
    pub reconnect_nonce: u64,
    pub ping_interval: u64,
}

#[derive(Debug, Clone)]
pub struct FakeConfig {
    pub app_id: String,
    pub app_secret: String,
    /// The bot's own `open_id`, answered by `GET /open-apis/bot/v3/info`.
    pub bot_open_id: String,
    /// Returned by discovery; test-sized by default.
    pub client_config: ClientConfigJson,
    pub ticket_ttl: Duration,
    /// Lark allows 50 connections per app.
    pub max_connections: usize,
    /// Lark redelivers what is not acked within 3 s.
    pub ack_timeout: Duration,
    /// Delay before each redelivery (real world: ~5 min, 1 h, 6 h).
    pub redelivery_delays: Vec<Duration>,
    /// Lifetime of tenant tokens.
    pub token_ttl: Duration,
    /// Reject cards with more markdown tables than this with 230099 / 11310.
    pub card_table_limit: usize,
    /// Per-second limits enforced with 429 / 99991400.
    pub sends_per_chat: usize,
    pub patches_per_message: usize,
    pub cardkit_ops_per_card: usize,
    pub calls_per_app: usize,
    /// A card entity's streaming mode closes by itself this long after it was
    /// turned on (Lark: 10 minutes).
    pub streaming_timeout: Duration,
    /// How long a card entity can be updated (Lark: 14 days).
    pub card_entity_ttl: Duration,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            app_id: "cli_fake_app".into(),
            app_secret: "fake_secret".into(),
            bot_open_id: "ou_fake_bot".into(),
            client_config: ClientConfigJson {
                reconnect_count: -1,
                reconnect_interval: 1,
                reconnect_nonce: 0,
                ping_interval: 5,
            },
            ticket_ttl: Duration::from_secs(30),
            max_connections: 50,
            ack_timeout: Duration::from_secs(3),
            redelivery_delays: vec![
                Duration::from_secs(300),
                Duration::from_secs(3600),
                Duration::from_secs(6 * 3600),
            ],
            token_ttl: Duration::from_secs(7200),
            card_table_limit: 5,
            sends_per_chat: 5,
            patches_per_message: 5,
            cardkit_ops_per_card: 10,
            calls_per_app: 50,
            streaming_timeout: Duration::from_secs(600),
            card_entity_ttl: Duration::from_secs(14 * 24 * 3600),
        }
    }
}

/// How discovery answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryBehaviour {
    Normal,
    /// `{"code":code,"msg":msg}` with HTTP 200 (1 and 1000040343 are retryable).
    Code {
        code: i64,
        msg: String,
    },
    /// A bare HTTP error status.
    HttpStatus(u16),
}

/// How WebSocket handshakes answer (when the ticket is fine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeBehaviour {
    Accept,
    /// Non-101 with `Handshake-Status`, `Handshake-Msg`, `Handshake-Autherrcode`.
    Reject {
        status: u16,
        msg: String,
        auth_code: i64,
    },
}

/// How to end live connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseKind {
    /// TCP dropped without a close frame.
    Abrupt,
    /// A WebSocket close frame, then TCP closed.
    CloseFrame,
}

/// A message the app sent, as the fake holds it now.
#[derive(Debug, Clone, PartialEq)]
pub struct SentMessage {
    pub message_id: String,
    pub chat_id: String,
    pub msg_type: String,
    /// The content document (a card, `{"text":…}`, …); for a card entity sent
    /// by reference, the entity's document as it is now.
    pub content: serde_json::Value,
    /// The CardKit entity the message shows, when it was sent by reference.
    pub card_id: Option<String>,
    /// The message it replies to; empty for a plain send.
    pub reply_to: String,
    pub thread_id: String,
    pub recalled: bool,
}

/// The wait helpers gave up.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {0:?} waiting for the fake Lark server")]
pub struct WaitTimeout(pub Duration);

/// A handle to a fake server; clones share it.
#[derive(Clone)]
pub struct FakeLark {
    inner: Arc<Inner>,
}

struct Inner {
    config: FakeConfig,
    state: Mutex<State>,
    changed: Notify,
    shutdown: CancellationToken,
    addr: Mutex<Option<SocketAddr>>,
    /// Downloads held now ([`FakeLark::hold_downloads`]).
    downloads_held: watch::Sender<usize>,
}

/// While alive, resource downloads wait (see [`FakeLark::hold_downloads`]).
#[must_use = "downloads are released when the hold is dropped"]
pub struct DownloadHold(FakeLark);

impl Drop for DownloadHold {
    fn drop(&mut self) {
        self.0.inner.downloads_held.send_modify(|n| *n -= 1);
    }
}

pub(crate) enum ConnCommand {
    Send(crate::frame::Frame),
    Close(CloseKind),
}

pub(crate) struct ConnEntry {
    pub tx: mpsc::UnboundedSender<ConnCommand>,
    pub service_id: i32,
    /// Black hole: no pongs and no pushes any more.
    pub silenced: bool,
}

pub(crate) struct PendingAck {
    pub event_id: String,
    /// `SeqID` → the headers sent on that fragment.
    pub fragments: HashMap<u64, Vec<crate::frame::Header>>,
    pub done: oneshot::Sender<Result<AckRecord, FailReason>>,
}

pub(crate) struct State {
    pub records: Records,
    pub discovery: DiscoveryBehaviour,
    pub handshake: HandshakeBehaviour,
    pub pong_config: Option<ClientConfigJson>,
    pub tickets: HashMap<String, Instant>,
    pub conns: HashMap<u64, ConnEntry>,
    pub next_id: u64,
    pub pending_acks: HashMap<String, PendingAck>,
    /// Frame `message_id`s of attempts whose ack deadline passed.
    pub timed_out: HashSet<String>,
    pub acks_to_lose: usize,
    pub tokens: HashMap<String, Instant>,
    pub rest: rest::RestState,
}

impl FakeLark {
    pub fn new(config: FakeConfig) -> Self {
        let state = State {
            records: Records::default(),
            discovery: DiscoveryBehaviour::Normal,
            handshake: HandshakeBehaviour::Accept,
            pong_config: None,
            tickets: HashMap::new(),
            conns: HashMap::new(),
            next_id: 1,
            pending_acks: HashMap::new(),
            timed_out: HashSet::new(),
            acks_to_lose: 0,
            tokens: HashMap::new(),
            rest: rest::RestState::default(),
        };
        Self {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(state),
                changed: Notify::new(),
                shutdown: CancellationToken::new(),
                addr: Mutex::new(None),
                downloads_held: watch::Sender::new(0),
            }),
        }
    }

    /// Binds `127.0.0.1:0` and serves in the background until [`Self::shutdown`].
    pub async fn spawn(config: FakeConfig) -> std::io::Result<Self> {
        Self::spawn_on(TcpListener::bind("127.0.0.1:0").await?, config)
    }

    /// Serves on `listener` in the background until [`Self::shutdown`]; the
    /// address is known when this returns (unlike with a spawned [`Self::serve`]).
    pub fn spawn_on(listener: TcpListener, config: FakeConfig) -> std::io::Result<Self> {
        let fake = Self::new(config);
        *fake.inner.addr.lock().expect("addr lock") = Some(listener.local_addr()?);
        let (server, shutdown) = (fake.clone(), fake.inner.shutdown.clone());
        tokio::spawn(async move { server.serve(listener, shutdown.cancelled_owned()).await });
        Ok(fake)
    }

    /// Serves on `listener` until `shutdown` completes.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        *self.inner.addr.lock().expect("addr lock") = Some(listener.local_addr()?);
        let app: Router = ws::router().merge(rest::router()).with_state(self.clone());
        let stop = self.inner.shutdown.clone();
        serve::serve(listener, app, async move {
            tokio::select! { _ = shutdown => {}, _ = stop.cancelled() => {} }
        })
        .await
    }

    /// `http://127.0.0.1:<port>`: the `base_url`/`domain` for clients.
    pub fn base_url(&self) -> String {
        let addr = self
            .inner
            .addr
            .lock()
            .expect("addr lock")
            .expect("fake server not serving yet");
        format!("http://{addr}")
    }

    pub fn config(&self) -> &FakeConfig {
        &self.inner.config
    }

    /// Stops the server and ends every connection.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.drop_connections(CloseKind::Abrupt);
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().expect("fake state lock")
    }

    /// Wakes [`Self::wait_until`] callers; call after recording something.
    pub(crate) fn notify(&self) {
        self.inner.changed.notify_waiters();
    }

    pub(crate) fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// A copy of everything recorded so far.
    pub fn records(&self) -> Records {
        self.state().records.clone()
    }

    /// Waits until `check` holds for the records, then returns a copy of them.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        check: impl Fn(&Records) -> bool,
    ) -> Result<Records, WaitTimeout> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let state = self.state();
                if check(&state.records) {
                    return Ok(state.records.clone());
                }
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(WaitTimeout(timeout));
            }
        }
    }

    /// What the app has sent (replies and new messages), oldest first, with each
    /// message's content as it is now (after patches; a card entity as its
    /// latest update made it).
    pub fn sent_messages(&self) -> Vec<SentMessage> {
        let state = self.state();
        let mut out: Vec<SentMessage> = state
            .rest
            .messages
            .iter()
            .filter(|(_, m)| !m.from_user)
            .map(|(id, m)| {
                let mut content: serde_json::Value =
                    serde_json::from_str(&m.content).unwrap_or(serde_json::Value::Null);
                let card_id = (content["type"] == "card")
                    .then(|| content["data"]["card_id"].as_str().map(str::to_owned))
                    .flatten();
                if let Some(card) = card_id.as_ref().and_then(|c| state.rest.cards.get(c)) {
                    content = card.document.clone();
                }
                SentMessage {
                    message_id: id.clone(),
                    chat_id: m.chat_id.clone(),
                    msg_type: m.msg_type.clone(),
                    content,
                    card_id,
                    reply_to: m.reply_to.clone(),
                    thread_id: m.thread_id.clone(),
                    recalled: m.recalled,
                }
            })
            .collect();
        out.sort_by(|a, b| a.message_id.cmp(&b.message_id));
        out
    }

    /// A CardKit card entity as the fake holds it now.
    pub fn card_entity(&self, card_id: &str) -> Option<CardEntityView> {
        let config = self.inner.config.clone();
        let mut state = self.state();
        state
            .rest
            .cards
            .get_mut(card_id)
            .map(|card| card.view(&config, card_id))
    }

    /// Answers every CardKit call with `code` / `msg` (e.g. 99991672, the app
    /// lacks the `cardkit:card:write` scope) from now on, or again normally
    /// (`None`).
    pub fn refuse_cardkit(&self, refusal: Option<(i64, &str)>) {
        self.state().rest.cardkit_refusal = refusal.map(|(code, msg)| rest::Injected {
            status: axum::http::StatusCode::BAD_REQUEST,
            code,
            msg: msg.to_owned(),
        });
    }

    /// Reactions currently on messages, as `(message_id, reaction_id)`.
    pub fn live_reactions(&self) -> Vec<(String, String)> {
        self.state()
            .rest
            .reactions
            .iter()
            .map(|(reaction, message)| (message.clone(), reaction.clone()))
            .collect()
    }

    /// Number of live (not yet closed) connections.
    pub fn live_connections(&self) -> usize {
        self.state().conns.len()
    }

    /// The ids of the live connections, lowest first.
    pub fn connection_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.state().conns.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    pub fn set_discovery(&self, behaviour: DiscoveryBehaviour) {
        self.state().discovery = behaviour;
    }

    pub fn set_handshake(&self, behaviour: HandshakeBehaviour) {
        self.state().handshake = behaviour;
    }

    /// Every later pong carries this `ClientConfig` (or none).
    pub fn set_pong_config(&self, config: Option<ClientConfigJson>) {
        self.state().pong_config = config;
    }

    /// Turns current connections into black holes: no pongs, no pushes. The
    /// sockets stay open, like a half-open connection after a NAT drop.
    pub fn silence_connections(&self) {
        for conn in self.state().conns.values_mut() {
            conn.silenced = true;
        }
    }

    /// Ends every live connection.
    pub fn drop_connections(&self, kind: CloseKind) {
        for conn in self.state().conns.values() {
            let _ = conn.tx.send(ConnCommand::Close(kind));
        }
    }

    /// Pretends the next `n` acks never arrived.
    pub fn lose_next_acks(&self, n: usize) {
        self.state().acks_to_lose = n;
    }

    /// Answers the next `n` authorised REST calls with `status` / `code` / `msg`
    /// (e.g. 429 / 99991400 for a rate limit, 500 for an outage); recorded as usual.
    pub fn fail_next_calls(&self, n: usize, status: u16, code: i64, msg: &str) {
        let status = axum::http::StatusCode::from_u16(status).expect("valid HTTP status");
        let failures = &mut self.state().rest.failures;
        failures.extend((0..n).map(|_| rest::Injected {
            status,
            code,
            msg: msg.to_owned(),
        }));
    }

    /// Ends an outage begun with [`Self::fail_next_calls`]: the failures not
    /// yet used are dropped.
    pub fn clear_failures(&self) {
        self.state().rest.failures.clear();
    }

    /// Makes `resource` the file or image with key `file_key` in user message
    /// `message_id`, served by `GET …/messages/:message_id/resources/:file_key`.
    /// Push the message's event with the same key in its `content`.
    pub fn add_resource(&self, message_id: &str, file_key: &str, resource: FakeResource) {
        self.state()
            .rest
            .resources
            .insert((message_id.to_owned(), file_key.to_owned()), resource);
    }

    /// Makes every "get message resource" call wait, unanswered, until the
    /// returned hold is dropped: a slow file store, or a user's file that takes
    /// long to fetch.
    pub fn hold_downloads(&self) -> DownloadHold {
        self.inner.downloads_held.send_modify(|n| *n += 1);
        DownloadHold(self.clone())
    }

    /// Returns once no [`DownloadHold`] is alive.
    pub(crate) async fn downloads_released(&self) {
        let mut held = self.inner.downloads_held.subscribe();
        let _ = held.wait_for(|n| *n == 0).await;
    }

    /// Invalidates every issued tenant token (as if they expired).
    pub fn revoke_tokens(&self) {
        self.state().tokens.clear();
    }
}

//! The Lark (Feishu) ingress (docs/lark.md, "Ingress"): the gateway's second front
//! door.
//!
//! Every gateway replica with `[lark] app_id` holds one long connection; Lark
//! spreads events over all of an app's connections, and redelivers anything not
//! acked in 3 s. Each event goes:
//!
//! 1. [`inbound::classify`] — pure rules: other apps, the bot's own messages,
//!    stale redeliveries (> 30 min), groups without a mention, `allowed_chats`;
//!    what is not for the bot is acked at once;
//! 2. the inbox ([`inbox`]): the event is stored in `lark_inbound` (one row per
//!    Lark message, shared by every replica, surviving restarts) and only then
//!    acked — so any number of replicas and redeliveries yield one reply, and no
//!    database error or crash after the ack loses the message ([`sweep`] takes
//!    over what a dead gateway held);
//! 3. the sender's Weft user and the conversation's session;
//! 4. a command, a stop word, the answer to the agent's open question
//!    ([`questions`]: a reply in the chat resumes the waiting run instead of
//!    starting another), changes asked for to its open plan ([`plans`], the
//!    same), or the ordinary send path ([`crate::sessions::submit`]:
//!    the same transaction, limits and idempotency as the HTTP API, with the Lark
//!    message id as the idempotency key and multitask `enqueue`), retried through
//!    database errors ([`held`]); then the row is marked handled.
//!
//! Messages of one conversation are handled one at a time in arrival order (a
//! place in the conversation's line, taken as the event comes off the
//! connection, [`turns`]); the reply card is the worker's job. Button
//! clicks (`card.action.trigger`) are approvals, answers to questions and
//! decisions on plans, answered in their ack ([`approve`], [`questions`],
//! [`plans`]).
//!
//! Nothing here waits in the dispatch loop, so no chat holds up another, nor
//! any click: a message waits for its chat's turn in its own task, then for one
//! of `lark.max_concurrent_messages` handler slots; a line longer than
//! `lark.queued_messages_per_chat` refuses (the chat is told the bot is busy,
//! once); clicks have their own slots, and one that finds none is answered at
//! once with "busy, try again".

pub(crate) mod admin;
mod approve;
mod commands;
mod handle;
mod held;
mod inbound;
mod inbox;
mod plans;
mod questions;
mod sweep;
mod turns;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use weft_config::LarkConfig;
use weft_lark::AppCredentials;
use weft_lark::event::EventEnvelope;
use weft_lark::rest::{RestClient, RestConfig};
use weft_lark::sender::{Names, RateAwareSender, RateLimits};
use weft_lark::text::Lang;
use weft_lark::ws::{self, Delivery, EventAck, InboundEvent, WsConfig, WsError};
use weft_shared::time::now_ms;
use weft_store::{InboundClaim, InboxEntry};

use crate::AppState;
use held::Held;
pub use inbound::BotIdentity;
use inbound::Incoming;
use inbox::Inbox;
use turns::{Busy, ChatLines};

/// How long inbound message ids are remembered (Lark redelivers for hours; the
/// design asks for at least 12).
const DEDUPE_KEEP: Duration = Duration::from_secs(24 * 3600);

/// The REST side of the bot, shared with the worker's card egress.
pub fn lark_sender(config: &LarkConfig) -> RateAwareSender {
    let credentials = AppCredentials::new(&config.app_id, config.app_secret.expose());
    let rest = RestClient::new(RestConfig::new(credentials, &config.base_url));
    RateAwareSender::new(
        rest,
        RateLimits {
            calls_per_app: config.calls_per_second,
            ..RateLimits::default()
        },
    )
}

/// Checks the app's credentials against Lark and learns the bot's `open_id`.
/// A bad secret fails here with Lark's own words, once, instead of a crash loop.
pub async fn identify(
    config: &LarkConfig,
    sender: &RateAwareSender,
) -> anyhow::Result<BotIdentity> {
    let info = sender.bot_info().await.with_context(|| {
        format!(
            "the Lark bot could not start: {} refused app {} or could not be reached (check lark.app_id, lark.app_secret / WEFT_LARK__APP_SECRET and lark.base_url)",
            config.base_url, config.app_id
        )
    })?;
    if info.activate_status != 2 {
        tracing::warn!(
            activate_status = info.activate_status,
            "the Lark app is not enabled for this tenant yet (publish a version and let an admin install it)"
        );
    }
    tracing::info!(bot.open_id = %info.open_id, bot.name = %info.app_name, "lark bot identified");
    Ok(BotIdentity {
        app_id: config.app_id.clone(),
        open_id: info.open_id,
    })
}

/// Starts the ingress when `[lark]` is configured (`sender` is the process's Lark
/// REST client): checks the credentials (an error here should stop start-up),
/// then connects and handles events until the gateway shuts down.
pub async fn start(
    state: AppState,
    sender: Option<RateAwareSender>,
) -> anyhow::Result<Option<JoinHandle<()>>> {
    let config = state.config().lark.clone();
    let Some(sender) = sender.filter(|_| config.enabled()) else {
        return Ok(None);
    };
    let me = identify(&config, &sender).await?;
    let credentials = AppCredentials::new(&config.app_id, config.app_secret.expose());
    let (deliveries, connection) = ws::start(
        WsConfig::new(credentials, &config.base_url),
        state.shutdown.child_token(),
    );
    tokio::spawn(purge_dedupe(state.clone()));
    let inbox = Inbox::start(
        state.store.clone(),
        Duration::from_millis(config.inbox_lease_ms),
        state.shutdown.child_token(),
    );
    let bot = Bot {
        sender,
        me,
        chats: Arc::new(ChatLines::new(config.queued_messages_per_chat)),
        names: Arc::default(),
        inbox,
        tenant: tenant_lang(&config),
        state,
    };
    Ok(Some(tokio::spawn(dispatch(bot, deliveries, connection))))
}

/// What handling an event needs; cheap to clone.
#[derive(Clone)]
pub(crate) struct Bot {
    pub(crate) state: AppState,
    pub(crate) sender: RateAwareSender,
    pub(crate) me: BotIdentity,
    chats: Arc<ChatLines>,
    /// Speakers' display names (see [`Names`]).
    names: Arc<Names>,
    inbox: Arc<Inbox>,
    /// The language of a chat whose message shows none (`[lark] language`).
    tenant: Lang,
}

/// The tenant's language, as `[lark] language` sets it (the workers' cards
/// read it the same way).
fn tenant_lang(config: &LarkConfig) -> Lang {
    Lang::tenant(Lang::parse(config.language.code()), &config.base_url)
}

/// A message for the bot, in line in its conversation, not stored yet.
struct Admitted {
    held: Held,
    /// Its inbox row.
    entry: InboxEntry,
}

/// What becomes of an event as it comes off the connection.
enum Admission {
    InLine(Admitted),
    /// Its conversation's line is full.
    Busy {
        incoming: Incoming,
        busy: Busy,
    },
    Ignored,
}

async fn dispatch(
    bot: Bot,
    mut deliveries: mpsc::UnboundedReceiver<Delivery>,
    connection: JoinHandle<Result<(), WsError>>,
) {
    let handlers = bot.state.config().lark.max_concurrent_messages;
    let slots = Arc::new(Semaphore::new(handlers));
    let click_slots = Arc::new(Semaphore::new(handlers));
    tokio::spawn(sweep::run(bot.clone(), slots.clone()));
    // Nothing in this loop waits: a chat's line or a full house must not hold
    // up the events behind it.
    while let Some(delivery) = deliveries.recv().await {
        let bot = bot.clone();
        match delivery {
            // A message takes its place in its conversation's line here, in
            // arrival order, not in its task: a task spawned later may well
            // start first.
            Delivery::Event(InboundEvent { envelope, ack, .. }) => match bot.admit(envelope) {
                Admission::InLine(message) => {
                    let slots = slots.clone();
                    tokio::spawn(async move { bot.on_message(message, ack, &slots).await });
                }
                Admission::Busy { incoming, busy } => {
                    // Refused on purpose (and said so): nothing to keep.
                    let _ = ack.send();
                    metrics::counter!("weft_lark_events_total", "outcome" => "busy").increment(1);
                    tracing::warn!(lark.message_id = %incoming.message_id, lark.chat_id = %incoming.chat.chat_id, "a lark chat has too many messages waiting; this one is not handled");
                    if busy.first {
                        tokio::spawn(async move { bot.tell_busy(&incoming).await });
                    }
                }
                Admission::Ignored => {
                    let _ = ack.send();
                }
            },
            Delivery::CardAction(action) => match click_slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    tokio::spawn(async move {
                        bot.on_card_action(action).await;
                        drop(slot);
                    });
                }
                Err(_) => {
                    metrics::counter!("weft_lark_card_actions_total", "outcome" => "busy")
                        .increment(1);
                    bot.answer_busy(action);
                }
            },
        }
    }
    match connection.await {
        Ok(Ok(())) => tracing::info!("lark long connection closed"),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "lark long connection stopped for good; the bot no longer receives messages")
        }
        Err(e) => tracing::error!(error = %e, "lark long connection task failed"),
    }
}

impl Bot {
    /// Classifies an event as it arrives; a message for the bot takes its
    /// place in its conversation's line.
    fn admit(&self, envelope: EventEnvelope) -> Admission {
        match inbound::classify(&envelope, &self.me, &self.state.config().lark, now_ms()) {
            inbound::Verdict::Handle(incoming) => match self.chats.join(&incoming.chat.key()) {
                Ok(turn) => {
                    let entry = InboxEntry {
                        message_id: incoming.message_id.clone(),
                        chat_key: incoming.chat.key(),
                        payload: serde_json::to_string(&envelope).expect("an envelope encodes"),
                        arrived_us: self.inbox.arrival(),
                        delivery: uuid::Uuid::new_v4().simple().to_string(),
                    };
                    Admission::InLine(Admitted {
                        held: Held {
                            turn,
                            event_id: envelope.header.event_id,
                            incoming,
                        },
                        entry,
                    })
                }
                Err(busy) => Admission::Busy { incoming, busy },
            },
            inbound::Verdict::Ignore(why) => {
                metrics::counter!("weft_lark_events_total", "outcome" => "ignored").increment(1);
                tracing::debug!(event.id = %envelope.header.event_id, why, "lark event ignored");
                Admission::Ignored
            }
        }
    }

    /// Stores a message, then acks it, then handles it in its turn. Stored by
    /// another delivery first, it is only acked.
    async fn on_message(&self, message: Admitted, ack: EventAck, slots: &Semaphore) {
        let Admitted { held, entry } = message;
        let Some(claim) = self.inbox.keep(entry).await else {
            // Shutting down before it was stored: unacked, Lark delivers it again.
            return;
        };
        metrics::histogram!("weft_lark_ack_seconds").record(ack.waited().as_secs_f64());
        if ack.send() == ws::AckSent::ConnectionClosed {
            tracing::debug!(event.id = %held.event_id, "lark connection closed before the ack; Lark redelivers (a duplicate)");
        }
        if claim == InboundClaim::Duplicate {
            metrics::counter!("weft_lark_events_total", "outcome" => "duplicate").increment(1);
            tracing::debug!(event.id = %held.event_id, lark.message_id = %held.incoming.message_id, "lark message seen before");
            return;
        }
        self.handle_held(held, slots).await;
    }
}

/// Forgets old inbound ids every ten minutes.
async fn purge_dedupe(state: AppState) {
    let mut every = tokio::time::interval(Duration::from_secs(600));
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let before = now_ms() - DEDUPE_KEEP.as_millis() as i64;
        match state.store.purge_lark_inbound(before).await {
            Ok(n) if n > 0 => tracing::debug!(purged = n, "old lark message ids forgotten"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging lark message ids failed"),
        }
    }
}

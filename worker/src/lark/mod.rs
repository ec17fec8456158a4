//! The Lark card egress (docs/lark.md, "Egress"): the worker that executes a run of a
//! Lark conversation streams its reply into a card.
//!
//! The card follows the run's **events** through the bus — replay, then live —
//! like any other client, not a side channel: a new attempt on another worker
//! replays the whole log and shows exactly what the old worker's card showed.
//! The cards' message ids are stored on the run (`runs.lark_cards`, written once
//! per card, never per update), and a card is created with a Lark `uuid` derived
//! from the run and page, so a worker that dies between creating a card and
//! recording it gets the same message back on retry: one card per run, whatever
//! crashes.
//!
//! A card is a CardKit card entity (created with its first content, sent once
//! by reference, its answer text streamed so Lark types it out, replaced whole
//! when more than the text changes), or — where CardKit is refused, or when the
//! reply has ended before its card is made — a plain card patched whole
//! ([`driver`]). Lark allows 10 CardKit calls per second per card, 5 patches
//! per second per message and 50 calls per second per app, so the driver keeps
//! only the newest view while it waits for the rate-aware sender (latest
//! content wins, nothing queues up); 429s and outages are retried with backoff.
//! A card Lark refuses (230099: too many tables, bad markdown) is re-rendered in
//! simpler forms — tables as text, then the whole reply as plain text — so the
//! user never sees "thinking…" forever. When the reply ends, the THINKING
//! reactions on its messages are removed.
//!
//! **Language.** A card speaks the chat's language: the one the run's newest
//! user message is written in (the worker reads it with the run's Lark
//! target), else the tenant's (`[lark] language`; see `weft_lark::text`).
//!
//! **One follower per card.** A follower belongs to one attempt. When the
//! attempt leaves the run to a person (approvals, questions, plans), its follower
//! *settles*: it shows everything the attempt published — the reply card turns
//! orange and an approval, question or plan card is sent — and from then on only watches, holding
//! no claim and no slot, for an end nobody else would show (a cancel while
//! waiting). The attempt that resumes the run starts a new follower, which
//! rebuilds the same view from the log and goes on patching the same card. A
//! follower told to leave drops a call still waiting for the rate limiter or a
//! retry (landing seconds later, it would overwrite the newer follower's card,
//! the final one too). In one process a new follower first waits until the
//! previous one of its run has stopped, then reads the run's cards again (the
//! old one may just have created the card); a follower that meets a later attempt's
//! `run_started` in the log stops there, so across processes too the old one
//! leaves the card to the new one ([`follow`]).

mod background;
mod driver;

pub(crate) use driver::open_for;
mod follow;
mod overdue;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use weft_config::LarkConfig;
use weft_lark::rest::LarkError;
use weft_lark::sender::{Names, RateAwareSender};
use weft_lark::text::Lang;
use weft_shared::bus::SharedBus;
use weft_shared::ids::RunId;
use weft_shared::retry::{Backoff, retry};
use weft_store::{LarkTarget, Store, StoreError};

use follow::Signals;

/// Refuses a worker without the `[lark]` settings once the database has Lark
/// conversations: a Lark run it claimed could never show its card, and its
/// chat would keep the 🤔 reaction and no answer.
pub(crate) async fn check_settings(store: &Store, configured: bool) -> anyhow::Result<()> {
    if !configured && store.has_lark_conversations().await? {
        anyhow::bail!(
            "this deployment has Lark conversations but this worker has no [lark] settings: \
             set lark.app_id and lark.app_secret (WEFT_LARK__APP_ID, WEFT_LARK__APP_SECRET) on every worker, \
             as on the gateways, or its Lark replies could never be sent"
        );
    }
    Ok(())
}

/// What the egress needs; cheap to clone.
#[derive(Clone)]
pub struct LarkEgress {
    sender: RateAwareSender,
    store: Store,
    bus: SharedBus,
    followers: Arc<Mutex<HashMap<RunId, Running>>>,
    /// The worker shuts down: followers that only watch a waiting run stop.
    shutdown: CancellationToken,
    /// The language of a chat whose messages do not show one.
    tenant: Lang,
    cardkit: Arc<CardKit>,
    /// Group members' names, for a group's background ([`background`]).
    names: Arc<Names>,
    /// The bot's own open_id, read once.
    bot: Arc<tokio::sync::OnceCell<String>>,
    warned: Arc<background::Warned>,
}

/// Whether CardKit takes this app's cards. An app without the
/// `cardkit:card:write` scope (or a Lark that refuses entities) would fail a
/// call on every card, so once refused, cards are plain for a while.
#[derive(Default)]
struct CardKit {
    refused_until: Mutex<Option<Instant>>,
}

impl CardKit {
    /// How long cards stay plain after CardKit refused one.
    const PAUSE: Duration = Duration::from_secs(600);

    fn allowed(&self) -> bool {
        let mut until = self.refused_until.lock().expect("cardkit lock");
        match *until {
            Some(t) if Instant::now() < t => false,
            Some(_) => {
                *until = None;
                true
            }
            None => true,
        }
    }

    fn refuse(&self, e: &LarkError) {
        let mut until = self.refused_until.lock().expect("cardkit lock");
        if until.is_none() {
            tracing::warn!(error = %e, pause_s = Self::PAUSE.as_secs(), "lark refused a CardKit card; sending plain cards for a while");
        }
        *until = Some(Instant::now() + Self::PAUSE);
    }
}

/// The tenant's language, as `[lark] language` sets it.
pub fn tenant_lang(config: &LarkConfig) -> Lang {
    Lang::tenant(Lang::parse(config.language.code()), &config.base_url)
}

/// A follower at work in this process.
struct Running {
    id: u64,
    leave: CancellationToken,
    /// Cancelled when the follower has made its last Lark call.
    finished: CancellationToken,
}

/// The executing attempt's handle on its run's card follower.
pub(crate) struct CardFollower {
    leave: CancellationToken,
    settle: CancellationToken,
}

impl CardFollower {
    /// This attempt gave the run up (another attempt goes on): stop after the
    /// Lark call in flight.
    pub(crate) fn abandon(&self) {
        self.leave.cancel();
    }

    /// The run now waits for approvals: show everything this attempt
    /// published (buttons included), then only watch for an end that no other
    /// attempt will show.
    pub(crate) fn settle(&self) {
        self.settle.cancel();
    }
}

impl LarkEgress {
    pub fn new(
        sender: RateAwareSender,
        store: Store,
        bus: SharedBus,
        shutdown: CancellationToken,
        tenant: Lang,
    ) -> Self {
        LarkEgress {
            sender,
            store,
            bus,
            followers: Arc::default(),
            shutdown,
            tenant,
            cardkit: Arc::default(),
            names: Arc::default(),
            bot: Arc::default(),
            warned: Arc::default(),
        }
    }

    /// Where `run` replies, when it belongs to a Lark conversation. Retried
    /// for up to a minute ([`Backoff::PATIENT`]): a run that went ahead without
    /// knowing its chat would answer into nothing.
    async fn target(&self, run: &RunId) -> Result<Option<LarkTarget>, StoreError> {
        retry(
            Backoff::PATIENT,
            "lark target",
            StoreError::is_transient,
            || self.store.lark_target(run),
        )
        .await
    }

    /// Starts the card follower of the attempt that just claimed `run`, when
    /// the run belongs to a Lark conversation. Call it before the attempt
    /// publishes anything: the log's end now tells this attempt's events apart
    /// from earlier ones. An error: whether the run has a chat could not be
    /// read, so nothing started; the attempt must not go on (its reply would
    /// have no card).
    pub(crate) async fn start(
        &self,
        tasks: &TaskTracker,
        run: &RunId,
    ) -> Result<Option<CardFollower>, StoreError> {
        self.start_from(tasks, run, None).await
    }

    /// [`Self::start`], the events read from `record` when given (a run
    /// whose event log is gone, told from the database: [`overdue`]).
    async fn start_from(
        &self,
        tasks: &TaskTracker,
        run: &RunId,
        record: Option<Vec<weft_shared::event::RunEvent>>,
    ) -> Result<Option<CardFollower>, StoreError> {
        let Some(target) = self.target(run).await? else {
            return Ok(None);
        };
        // From now on the run owes its chat a final card ([`overdue`]).
        if let Err(e) = self.store.lark_card_owed(run).await {
            tracing::warn!(run.id = %run, error = %e, "recording that the run owes a final lark card failed");
        }
        // Unknown (bus trouble): earlier attempts cannot be told apart, so the
        // follower does not watch for later ones either.
        let before = self.bus.last_seq(run).await.ok();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let me = Running {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            leave: CancellationToken::new(),
            finished: CancellationToken::new(),
        };
        let handle = CardFollower {
            leave: me.leave.clone(),
            settle: CancellationToken::new(),
        };
        // Cancelled when the task ends, however (a panic, a dropped task): a
        // successor must never wait forever.
        let finished = me.finished.clone().drop_guard();
        let (id, leave) = (me.id, me.leave.clone());
        let prior = self
            .followers
            .lock()
            .expect("followers lock")
            .insert(run.clone(), me);
        if let Some(prior) = &prior {
            prior.leave.cancel();
        }
        let (egress, run, settle) = (self.clone(), run.clone(), handle.settle.clone());
        // Inside the run's span (the caller's): the card's Lark calls join its trace.
        let span = tracing::info_span!("lark.card", run.id = %run);
        tasks.spawn(tracing::Instrument::instrument(
            async move {
                let mut target = target;
                if let Some(prior) = prior {
                    prior.finished.cancelled().await;
                    // The prior follower's last call may have created the card
                    // since `target` was read: read it again, or this one would
                    // create it "again" and get the old card back unchanged.
                    match egress.target(&run).await {
                        Ok(Some(now)) => target = now,
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(run.id = %run, error = %e, "reading the run's lark cards again failed; going on with what was read")
                        }
                    }
                }
                let signals = Signals {
                    leave,
                    settle,
                    shutdown: egress.shutdown.clone(),
                };
                egress
                    .clone()
                    .follow(run.clone(), target, before, signals, record)
                    .await;
                drop(finished);
                let mut followers = egress.followers.lock().expect("followers lock");
                if followers.get(&run).is_some_and(|f| f.id == id) {
                    followers.remove(&run);
                }
            },
            span,
        ));
        Ok(Some(handle))
    }

    /// Whether a follower of `run` works in this process.
    fn is_following(&self, run: &RunId) -> bool {
        self.followers
            .lock()
            .expect("followers lock")
            .contains_key(run)
    }

    /// The reply ended: the THINKING reactions on its messages come off.
    async fn end_reactions(&self, run: &RunId) {
        match self.store.take_lark_reactions(run).await {
            Ok(reactions) => {
                for (message, reaction) in reactions {
                    if let Err(e) = self.sender.remove_reaction(&message, &reaction).await {
                        tracing::warn!(run.id = %run, error = %e, "removing the THINKING reaction failed");
                    }
                }
            }
            Err(e) => {
                tracing::warn!(run.id = %run, error = %e, "reading the run's reactions failed")
            }
        }
    }
}

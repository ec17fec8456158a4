//! The Lark card egress (ARCHITECTURE §9): the worker that executes a run of a
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
//! Updates are full-card patches. Lark allows 5 per second per message and 50
//! per second per app, so the driver keeps only the newest view while it waits
//! for the rate-aware sender (latest content wins, nothing queues up); 429s and
//! outages are retried with backoff. A card Lark refuses (230099: too many
//! tables, bad markdown) is re-rendered in simpler forms — tables as text, then
//! the whole reply as plain text — so the user never sees "thinking…" forever.
//! When the reply ends, the THINKING reactions on its messages are removed.

mod view;

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use weft_lark::card::{MarkdownLimits, ReplyCard};
use weft_lark::rest::{ErrorClass, Fallback, LarkError, MessageContent, ReceiveIdType, ReplyMode};
use weft_lark::sender::RateAwareSender;
use weft_shared::bus::{AttachItem, SharedBus, attach};
use weft_shared::ids::RunId;
use weft_shared::store::{LarkTarget, Store, retrying};

use view::ReplyView;

/// How often a silent run's log is re-read (as the gateway's SSE does).
const IDLE: Duration = Duration::from_secs(15);
/// Retries of one card update after a retryable error before it is given up.
const MAX_RETRIES: u32 = 8;
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// What the egress needs; cheap to clone.
#[derive(Clone)]
pub struct LarkEgress {
    pub sender: RateAwareSender,
    pub store: Store,
    pub bus: SharedBus,
}

impl LarkEgress {
    /// Where `run` replies, when it belongs to a Lark conversation.
    pub(crate) async fn target(&self, run: &RunId) -> Option<LarkTarget> {
        match retrying("lark target", || self.store.lark_target(run)).await {
            Ok(target) => target,
            Err(e) => {
                tracing::warn!(run.id = %run, error = %e, "looking up the run's lark chat failed; no card");
                None
            }
        }
    }

    /// Streams `run`'s reply into its cards until the reply ends, or until
    /// `abandon` fires (this attempt gave the run up: the next one takes over).
    pub(crate) async fn follow(self, run: RunId, target: LarkTarget, abandon: CancellationToken) {
        let events = match attach(self.bus.clone(), run.clone(), 0, IDLE).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(run.id = %run, error = %e, "lark card cannot follow the run");
                return;
            }
        };
        let (views, latest) = watch::channel(ReplyView::default());
        let driver = Driver {
            egress: self.clone(),
            run: run.clone(),
            target,
            sent: Vec::new(),
            fallback: 0,
        };
        let driving = tokio::spawn(driver.drive(latest));
        let mut events = std::pin::pin!(events.take_until(abandon.clone().cancelled_owned()));
        let mut view = ReplyView::default();
        while let Some(item) = events.next().await {
            let AttachItem::Frame(frame) = item else {
                continue;
            };
            let Some(event) = frame.decode() else {
                continue;
            };
            view.apply(&event);
            views.send_replace(view.clone());
            if view.is_final() {
                break;
            }
        }
        drop(views);
        if !view.is_final() {
            driving.abort();
            return;
        }
        if driving.await.is_err() {
            tracing::warn!(run.id = %run, "lark card driver failed");
        }
        match self.store.take_lark_reactions(&run).await {
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

/// Sends views to Lark, newest first, until the final one is shown.
struct Driver {
    egress: LarkEgress,
    run: RunId,
    target: LarkTarget,
    /// What each card (by page) shows now.
    sent: Vec<Value>,
    /// 0: as rendered; 1: tables as text; 2: the whole reply as plain text.
    fallback: u8,
}

enum SyncError {
    /// Try again after the delay, with whatever view is newest then.
    Retry(LarkError),
    /// Lark will not take this update; later ones may differ.
    GiveUp(LarkError),
}

impl Driver {
    async fn drive(mut self, mut latest: watch::Receiver<ReplyView>) {
        let mut retries = 0u32;
        loop {
            let view = latest.borrow_and_update().clone();
            match self.sync(&view).await {
                Ok(()) => {
                    retries = 0;
                    if view.is_final() {
                        return;
                    }
                }
                Err(SyncError::Retry(e)) if retries < MAX_RETRIES => {
                    let delay = (BACKOFF_BASE * 2u32.pow(retries)).min(BACKOFF_CAP);
                    retries += 1;
                    tracing::warn!(run.id = %self.run, error = %e, delay_ms = delay.as_millis() as u64, "lark card update failed; retrying");
                    tokio::time::sleep(delay).await;
                    continue;
                }
                Err(SyncError::Retry(e) | SyncError::GiveUp(e)) => {
                    tracing::error!(run.id = %self.run, error = %e, "lark card update given up");
                    retries = 0;
                    if view.is_final() {
                        return;
                    }
                }
            }
            // The sender already paced us; wait for something new to show. The
            // reader drops its end after the final view (seen here first) or when
            // the attempt is abandoned.
            if latest.changed().await.is_err() {
                return;
            }
        }
    }

    /// Makes the cards show `view`: patches the changed pages, creates missing ones.
    async fn sync(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        loop {
            let pages = self.render(view.card());
            match self.push_pages(pages).await {
                Err(SyncError::GiveUp(e)) if refused_content(&e) && self.fallback < 2 => {
                    self.fallback += 1;
                    tracing::warn!(run.id = %self.run, error = %e, level = self.fallback, "lark refused the card; simplifying it");
                }
                other => return other,
            }
        }
    }

    fn render(&self, mut card: ReplyCard) -> Vec<Value> {
        let mut limits = MarkdownLimits::default();
        if self.fallback >= 1 {
            limits.max_tables = 0;
        }
        if self.fallback >= 2 {
            card.body = format!("```text\n{}\n```", card.body.replace("```", "'''"));
        }
        card.render(limits)
    }

    async fn push_pages(&mut self, pages: Vec<Value>) -> Result<(), SyncError> {
        for (page, card) in pages.into_iter().enumerate() {
            if self.sent.get(page) == Some(&card) {
                continue;
            }
            match self.target.cards.get(page).cloned() {
                Some(message) => self
                    .egress
                    .sender
                    .patch_card(&message, &card)
                    .await
                    .map_err(classify)?,
                None => self.create(page, &card).await?,
            }
            if page < self.sent.len() {
                self.sent[page] = card;
            } else {
                self.sent.push(card);
            }
        }
        Ok(())
    }

    /// Sends page `page` as a new card and records it on the run.
    async fn create(&mut self, page: usize, card: &Value) -> Result<(), SyncError> {
        let content = MessageContent::Interactive(card.clone());
        let chat = &self.target.chat;
        let uuid = format!("weft-{}-{page}", self.run.0.replace('-', ""));
        let sender = &self.egress.sender;
        let sent = match &self.target.reply_to {
            Some(message) => {
                let mode = if chat.thread_id.is_empty() {
                    ReplyMode::Inline
                } else {
                    ReplyMode::InThread
                };
                match sender
                    .reply_message_once(&chat.chat_id, message, &content, mode, &uuid)
                    .await
                {
                    Err(e) if e.class() == ErrorClass::Fallback(Fallback::ReplyTargetGone) => {
                        self.target.reply_to = None;
                        sender
                            .send_message_once(
                                ReceiveIdType::ChatId,
                                &chat.chat_id,
                                &content,
                                &uuid,
                            )
                            .await
                    }
                    other => other,
                }
            }
            None => {
                sender
                    .send_message_once(ReceiveIdType::ChatId, &chat.chat_id, &content, &uuid)
                    .await
            }
        }
        .map_err(classify)?;
        match self
            .egress
            .store
            .add_lark_card(&self.run, &self.target.cards, &sent.message_id)
            .await
        {
            Ok(cards) => self.target.cards = cards,
            Err(e) => {
                tracing::warn!(run.id = %self.run, error = %e, "recording the lark card failed");
                self.target.cards.push(sent.message_id.clone());
            }
        }
        // A card recorded by a racing attempt is patched to this content next time.
        if self.target.cards.get(page) != Some(&sent.message_id) {
            return Err(SyncError::Retry(LarkError::Decode {
                status: 0,
                detail: "another attempt recorded a card first".into(),
            }));
        }
        Ok(())
    }
}

fn classify(e: LarkError) -> SyncError {
    match e.class() {
        ErrorClass::Retryable => SyncError::Retry(e),
        _ => SyncError::GiveUp(e),
    }
}

/// Lark refused the card's content (not the request's target or rights).
fn refused_content(e: &LarkError) -> bool {
    matches!(
        e.class(),
        ErrorClass::Fallback(Fallback::CardRejected | Fallback::FormatRejected)
    )
}

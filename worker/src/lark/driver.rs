//! Sends a follower's views to Lark, newest first: the reply card's pages
//! ([`pages`]: CardKit card entities that type the answer out, or plain cards
//! patched whole where CardKit is refused), then the approval cards
//! ([`approvals`]: one per approval, asked with buttons and rewritten without
//! them once it is decided, expired or left open by a reply that ended), then
//! the question cards ([`questions`]: the same, for the agent's questions),
//! then the plan cards ([`plans`]: the same, for the plans of plan mode),
//! then the todo card ([`todos`]: one per reply that changes the list,
//! rewritten in place as it ticks over).
//!
//! **Fewer calls, newest content.** A card is created with its first content
//! (reasoning, text, a call), not as an empty "…" that a patch fills a moment
//! later; only a reply that shows nothing for [`EMPTY_CARD_AFTER`] gets the
//! empty card. After an update the next waits [`STREAM_INTERVAL`] — CardKit
//! types the new text out on the client in between, so a few updates a second
//! look like typing — and every update first waits for room in the app's
//! 50 calls/s and only then takes the newest view: when the app's budget is
//! spent elsewhere, a card's updates fold into one instead of queueing stale
//! ones, and a reply that ended meanwhile is sent as its final card at once.

mod approvals;
mod pages;
mod plans;
mod questions;
mod todos;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use weft_lark::card::ClickContext;
use weft_lark::rest::{
    ErrorClass, Fallback, LarkError, MessageContent, ReceiveIdType, ReplyMode, SentMessage,
};
use weft_lark::text::Lang;
use weft_shared::ids::RunId;
use weft_store::{LarkApprovalCard, LarkTarget};

use super::LarkEgress;
use super::view::ReplyView;
use pages::Page;

/// Retries of one card update after a retryable error before it is given up.
const MAX_RETRIES: u32 = 8;
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(10);
/// The least time between two updates of a reply in progress (its end goes at
/// once): ≤ 4 calls/s per card, inside Lark's 5 patches/s per message and 10
/// CardKit calls/s per card.
pub const STREAM_INTERVAL: Duration = Duration::from_millis(250);
/// How long a reply with nothing to show waits before its card shows "…".
pub const EMPTY_CARD_AFTER: Duration = Duration::from_secs(1);

pub(super) struct Driver {
    pub egress: LarkEgress,
    pub run: RunId,
    pub target: LarkTarget,
    /// The chat's language.
    pub lang: Lang,
    /// What each reply card (by page) shows now.
    pages: Vec<Page>,
    /// 0: as rendered; 1: tables as text; 2: the whole reply as plain text.
    fallback: u8,
    /// Approvals whose card this driver has sent, and the card's message.
    asked: HashMap<String, String>,
    /// Approvals whose card this driver has rewritten with their answer.
    answered: HashSet<String>,
    /// The run's approval cards as recorded (read when needed).
    approval_cards: Option<Vec<LarkApprovalCard>>,
    /// Questions whose card this driver has sent, and the card's message.
    questions_asked: HashMap<String, String>,
    /// Questions whose card this driver has rewritten with their answer.
    questions_answered: HashSet<String>,
    /// Plans whose card this driver has sent, and the card's message.
    plans_asked: HashMap<String, String>,
    /// Plans whose card this driver has rewritten with their decision.
    plans_decided: HashSet<String>,
    /// The run's todo card, once this driver sent (or found) it, and the
    /// list it shows.
    todo_message: Option<String>,
    todos_shown: todos::Shown,
    /// The log's last seq before this attempt: approvals, questions and plans
    /// announced up to it were asked (and answers shown) by an earlier
    /// attempt's follower; they are asked again (same `uuid`, same card) only
    /// if this attempt leaves them open.
    before: Option<u64>,
    /// The attempt left the run waiting.
    settle: CancellationToken,
    /// The follower is leaving: finish the call in flight, start no other.
    leave: CancellationToken,
}

enum SyncError {
    /// Try again after the delay, with whatever view is newest then.
    Retry(LarkError),
    /// Lark will not take this update; later ones may differ.
    GiveUp(LarkError),
}

impl Driver {
    pub fn new(
        egress: LarkEgress,
        run: RunId,
        target: LarkTarget,
        lang: Lang,
        before: Option<u64>,
        settle: CancellationToken,
        leave: CancellationToken,
    ) -> Self {
        let pages = target.cards.iter().map(Page::resumed).collect();
        Driver {
            egress,
            run,
            target,
            lang,
            pages,
            fallback: 0,
            asked: HashMap::new(),
            answered: HashSet::new(),
            approval_cards: None,
            questions_asked: HashMap::new(),
            questions_answered: HashSet::new(),
            plans_asked: HashMap::new(),
            plans_decided: HashSet::new(),
            todo_message: None,
            todos_shown: None,
            before,
            settle,
            leave,
        }
    }

    /// Shows every view it is handed until the final one is shown, the reader
    /// hangs up (after its last view is shown), or the follower leaves.
    pub async fn drive(mut self, mut latest: watch::Receiver<ReplyView>) {
        let started = Instant::now();
        let mut retries = 0u32;
        let mut last_sync: Option<Instant> = None;
        loop {
            if self.target.cards.is_empty() && !latest.borrow().has_content() {
                // Nothing worth a card yet; the first content usually comes soon.
                tokio::select! {
                    _ = self.leave.cancelled() => return,
                    _ = tokio::time::sleep_until(started + EMPTY_CARD_AFTER) => {}
                    changed = latest.changed() => if changed.is_ok() { continue },
                }
            }
            if let Some(at) = last_sync
                && !self.pace(&mut latest, at + STREAM_INTERVAL).await
            {
                return;
            }
            tokio::select! {
                _ = self.leave.cancelled() => return,
                _ = self.egress.sender.app_room() => {}
            }
            let view = latest.borrow_and_update().clone();
            last_sync = Some(Instant::now());
            // Leaving drops a call still waiting (for the rate limiter, or a
            // retry's backoff): landing seconds later, it would overwrite what
            // the follower that took over has shown since, the final card too.
            let leave = self.leave.clone();
            let synced = tokio::select! {
                biased;
                _ = leave.cancelled() => return,
                synced = self.sync(&view) => synced,
            };
            match synced {
                Ok(()) => {
                    retries = 0;
                    if view.is_final() {
                        self.shown().await;
                        return;
                    }
                }
                Err(SyncError::Retry(e)) if retries < MAX_RETRIES => {
                    let delay = (BACKOFF_BASE * 2u32.pow(retries)).min(BACKOFF_CAP);
                    retries += 1;
                    tracing::warn!(run.id = %self.run, error = %e, delay_ms = delay.as_millis() as u64, "lark card update failed; retrying");
                    tokio::select! {
                        _ = self.leave.cancelled() => return,
                        _ = tokio::time::sleep(delay) => continue,
                    }
                }
                Err(SyncError::GiveUp(e)) => {
                    tracing::error!(run.id = %self.run, error = %e, "lark card update given up");
                    retries = 0;
                    if view.is_final() {
                        // Lark refuses it: showing it again later would not help.
                        self.shown().await;
                        return;
                    }
                }
                Err(SyncError::Retry(e)) => {
                    // Lark kept failing: a later sweep shows the end if this was it.
                    tracing::error!(run.id = %self.run, error = %e, "lark card update given up after retries");
                    retries = 0;
                    if view.is_final() {
                        return;
                    }
                }
            }
            // Wait for something new to show.
            if latest.changed().await.is_err() {
                return;
            }
        }
    }

    /// The final card is shown: the run owes its chat nothing more.
    async fn shown(&self) {
        if let Err(e) = self.egress.store.lark_card_shown(&self.run).await {
            tracing::warn!(run.id = %self.run, error = %e, "recording the final lark card failed; a sweep may show it again");
        }
    }

    /// Waits until `until`, or less when the reply ends meanwhile (its end
    /// goes at once). False: the follower is leaving.
    async fn pace(&self, latest: &mut watch::Receiver<ReplyView>, until: Instant) -> bool {
        loop {
            if latest.borrow().is_final() {
                return true;
            }
            tokio::select! {
                _ = self.leave.cancelled() => return false,
                _ = tokio::time::sleep_until(until) => return true,
                changed = latest.changed() => if changed.is_err() { return true },
            }
        }
    }

    /// Makes the cards show `view`: the reply's pages, then its approvals,
    /// its questions, its plans and its todo list.
    async fn sync(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        loop {
            match self.push_pages(view).await {
                Err(SyncError::GiveUp(e)) if refused_content(&e) && self.fallback < 2 => {
                    self.fallback += 1;
                    tracing::warn!(run.id = %self.run, error = %e, level = self.fallback, "lark refused the card; simplifying it");
                }
                Err(e) => return Err(e),
                Ok(()) => break,
            }
        }
        self.sync_approvals(view).await?;
        self.sync_questions(view).await?;
        self.sync_plans(view).await?;
        self.sync_todos(view).await
    }

    /// Rewrites the card of a question or a plan as it now stands: on
    /// `recorded` (the message that shows it, known to this follower or read
    /// from the store), else on the card sent under `uuid` — its worker died
    /// between sending and recording, and the same `uuid` gets that message
    /// back. `metric`: the call's name in `weft_lark_calls_total`.
    async fn rewrite_card(
        &mut self,
        recorded: Option<String>,
        card: &serde_json::Value,
        uuid: &str,
        metric: &'static str,
    ) -> Result<(), SyncError> {
        let message = match recorded {
            Some(message) => message,
            None => {
                self.send(&MessageContent::Interactive(card.clone()), uuid)
                    .await
                    .map_err(classify)?
                    .message_id
            }
        };
        let patched = self
            .egress
            .sender
            .patch_card(&message, card)
            .instrument(lark_call("patch_card"))
            .await;
        counted(metric, patched).map_err(classify)?;
        Ok(())
    }

    /// A new message in the run's conversation: a reply to its newest Lark
    /// message (in the thread for topic threads), else a plain send.
    async fn send(
        &mut self,
        content: &MessageContent,
        uuid: &str,
    ) -> Result<SentMessage, LarkError> {
        let chat = &self.target.chat;
        let sender = &self.egress.sender;
        if let Some(message) = &self.target.reply_to {
            let mode = if chat.thread_id.is_empty() {
                ReplyMode::Inline
            } else {
                ReplyMode::InThread
            };
            match sender
                .reply_message_once(&chat.chat_id, message, content, mode, uuid)
                .instrument(lark_call("reply_message"))
                .await
            {
                Err(e) if e.class() == ErrorClass::Fallback(Fallback::ReplyTargetGone) => {
                    self.target.reply_to = None;
                }
                other => return counted("send", other),
            }
        }
        let sent = sender
            .send_message_once(ReceiveIdType::ChatId, &chat.chat_id, content, uuid)
            .instrument(lark_call("send_message"))
            .await;
        counted("send", sent)
    }
}

impl Driver {
    /// What this reply's approval, question and plan buttons carry back.
    fn click_context(&self, step: u32) -> serde_json::Map<String, serde_json::Value> {
        ClickContext {
            run: self.run.clone(),
            step,
            lang: self.lang,
        }
        .to_map()
    }
}

/// How long a wait that ends at `expires_at` is open for, from now (a card's
/// countdown).
pub(crate) fn open_for(expires_at: i64) -> Duration {
    Duration::from_millis((expires_at - weft_shared::time::now_ms()).max(0) as u64)
}

/// A span per Lark API call of the card (a child of `lark.card`).
fn lark_call(call: &'static str) -> tracing::Span {
    tracing::info_span!("lark.api", lark.call = call)
}

/// Counts a card's Lark call by kind and outcome (`weft_lark_card_calls_total`).
fn counted<T>(call: &'static str, result: Result<T, LarkError>) -> Result<T, LarkError> {
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) if e.class() == ErrorClass::Retryable => "retryable",
        Err(_) => "refused",
    };
    metrics::counter!("weft_lark_card_calls_total", "call" => call, "outcome" => outcome)
        .increment(1);
    result
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

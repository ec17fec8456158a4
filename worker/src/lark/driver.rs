//! Sends a follower's views to Lark, newest first: the reply card's pages as
//! full-card patches (new pages as new cards), then one approval card per open
//! approval. Approval cards are only ever created here — their answer arrives
//! through the click's ack (gateway `lark::approve`) — so the reply card and an
//! approval card never share Lark's per-message patch budget.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use weft_lark::card::{ApprovalAnswer, ApprovalCard, MarkdownLimits, ReplyCard};
use weft_lark::rest::{
    ErrorClass, Fallback, LarkError, MessageContent, ReceiveIdType, ReplyMode, SentMessage,
};
use weft_shared::ids::RunId;
use weft_shared::store::{LarkTarget, retrying};
use weft_shared::time::now_ms;

use super::LarkEgress;
use super::view::{ApprovalRequest, ReplyView};

/// Retries of one card update after a retryable error before it is given up.
const MAX_RETRIES: u32 = 8;
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// Keys of an approval button's callback value besides `approval_id` and
/// `decision`; the gateway's click handler reads them back.
pub const RUN_KEY: &str = "run_id";
pub const STEP_KEY: &str = "step";

pub(super) struct Driver {
    pub egress: LarkEgress,
    pub run: RunId,
    pub target: LarkTarget,
    /// What each card (by page) shows now.
    pub sent: Vec<Value>,
    /// 0: as rendered; 1: tables as text; 2: the whole reply as plain text.
    pub fallback: u8,
    /// Approvals whose card this driver has sent.
    pub asked: HashSet<String>,
    /// The log's last seq before this attempt: approvals announced up to it
    /// were asked by an earlier attempt's follower, and are asked again (same
    /// `uuid`, same card) only if this attempt leaves them open.
    pub before: Option<u64>,
    /// The attempt left the run waiting.
    pub settle: CancellationToken,
    /// The follower is leaving: finish the call in flight, start no other.
    pub leave: CancellationToken,
}

enum SyncError {
    /// Try again after the delay, with whatever view is newest then.
    Retry(LarkError),
    /// Lark will not take this update; later ones may differ.
    GiveUp(LarkError),
}

impl Driver {
    /// Shows every view it is handed until the final one is shown, the reader
    /// hangs up (after its last view is shown), or the follower leaves.
    pub async fn drive(mut self, mut latest: watch::Receiver<ReplyView>) {
        let mut retries = 0u32;
        loop {
            if self.leave.is_cancelled() {
                return;
            }
            let view = latest.borrow_and_update().clone();
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
                Err(SyncError::Retry(e) | SyncError::GiveUp(e)) => {
                    tracing::error!(run.id = %self.run, error = %e, "lark card update given up");
                    retries = 0;
                    if view.is_final() {
                        return;
                    }
                }
            }
            // The sender already paced us; wait for something new to show.
            if latest.changed().await.is_err() {
                return;
            }
        }
    }

    /// Makes the cards show `view`: the reply's pages, then its open approvals.
    async fn sync(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        loop {
            let pages = self.render(view.card());
            match self.push_pages(pages).await {
                Err(SyncError::GiveUp(e)) if refused_content(&e) && self.fallback < 2 => {
                    self.fallback += 1;
                    tracing::warn!(run.id = %self.run, error = %e, level = self.fallback, "lark refused the card; simplifying it");
                }
                Err(e) => return Err(e),
                Ok(()) => break,
            }
        }
        let settling = self.settle.is_cancelled();
        for request in view.open_approvals() {
            let inherited = self.before.is_some_and(|before| request.seq <= before);
            if !self.asked.contains(&request.approval_id) && (settling || !inherited) {
                self.ask(request).await?;
                self.asked.insert(request.approval_id.clone());
            }
        }
        Ok(())
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
                    .instrument(lark_call("patch_card"))
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
        let uuid = format!("weft-{}-{page}", self.run.0.replace('-', ""));
        let sent = self
            .send(&MessageContent::Interactive(card.clone()), &uuid)
            .await?;
        let store = &self.egress.store;
        let recorded = retrying("lark card", || {
            store.add_lark_card(&self.run, &self.target.cards, &sent.message_id)
        });
        match recorded.await {
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
        // After an earlier attempt, its follower may have sent this card (same
        // `uuid`) after we read the run's cards: Lark then answers with that
        // message and keeps its older content. Show ours.
        if self.before.is_some_and(|before| before > 0) {
            self.egress
                .sender
                .patch_card(&sent.message_id, card)
                .instrument(lark_call("patch_card"))
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// Sends the approval card of `request`, once: its `uuid` derives from the
    /// approval, so a follower of a later attempt that sends it again gets the
    /// same message back instead of a second set of buttons.
    async fn ask(&mut self, request: &ApprovalRequest) -> Result<(), SyncError> {
        let card = ApprovalCard {
            approval_id: request.approval_id.clone(),
            tool: request.name.clone(),
            args: request.args.clone(),
            context: Map::from_iter([
                (RUN_KEY.to_owned(), json!(self.run.0)),
                (STEP_KEY.to_owned(), json!(request.step)),
            ]),
            answer: ApprovalAnswer::Open {
                expires_in: Duration::from_millis((request.expires_at - now_ms()).max(0) as u64),
            },
        };
        let uuid: String = format!("weft-a-{}", request.approval_id)
            .chars()
            .take(50)
            .collect();
        self.send(&MessageContent::Interactive(card.render()), &uuid)
            .await?;
        Ok(())
    }

    /// A new message in the run's conversation: a reply to its newest Lark
    /// message (in the thread for topic threads), else a plain send.
    async fn send(
        &mut self,
        content: &MessageContent,
        uuid: &str,
    ) -> Result<SentMessage, SyncError> {
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
                other => return other.map_err(classify),
            }
        }
        sender
            .send_message_once(ReceiveIdType::ChatId, &chat.chat_id, content, uuid)
            .instrument(lark_call("send_message"))
            .await
            .map_err(classify)
    }
}

/// A span per Lark API call of the card (a child of `lark.card`).
fn lark_call(call: &'static str) -> tracing::Span {
    tracing::info_span!("lark.api", lark.call = call)
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

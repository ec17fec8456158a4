//! The reply card's pages. Each page is a CardKit card entity when Lark allows
//! it: created with its first content, recorded on the run, sent once by
//! reference, then updated — only its answer text changed: the element's text
//! is streamed (Lark types the new tail out); anything else (a call, the
//! reasoning, the end): the whole card is replaced. A reply that has already
//! ended when its card is made, or an app CardKit refuses
//! ([`super::super::CardKit`]), gets a plain card, patched whole.
//!
//! An entity's updates carry a `sequence` that must grow, across attempts and
//! workers too: it is the milliseconds since the entity was created (recorded
//! with it), which no update outpaces at ≤ 10 calls/s. Should another worker's
//! clock lag so far behind that Lark refuses a number, the next one jumps a
//! minute ahead.

use serde_json::Value;
use tracing::Instrument;
use weft_lark::card::{MarkdownLimits, ReplyCard, body_change};
use weft_lark::rest::{CODE_CARDKIT_SEQUENCE, CardEntity, ErrorClass, LarkError, MessageContent};
use weft_shared::time::now_ms;
use weft_store::{CardEntityRecord, LarkCard, retrying};

use super::{Driver, SyncError, classify, counted, lark_call, refused_content};
use crate::lark::view::ReplyView;

/// How far the sequence jumps after Lark refused one as stale.
const SEQUENCE_JUMP: u64 = 60_000;

/// What this driver knows about one reply card.
#[derive(Default)]
pub(super) struct Page {
    /// The document it shows, when known (not for a card taken over from an
    /// earlier attempt, until this driver updates it).
    shown: Option<Value>,
    /// The entity it streams through, with this driver's sequence counter.
    entity: Option<CardEntity>,
}

impl Page {
    pub fn resumed(card: &LarkCard) -> Page {
        Page {
            shown: None,
            entity: card
                .entity
                .as_ref()
                .map(|e| CardEntity::resume(e.card_id.clone(), 0)),
        }
    }
}

impl Driver {
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

    pub(super) async fn push_pages(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        let mut card = view.card(self.lang);
        // A question typed elsewhere: nobody in the chat saw it, so the card
        // shows it over its answer.
        if self.target.reply_to.is_none() && !self.target.text.trim().is_empty() {
            card.asked_elsewhere = Some(self.target.text.clone());
        }
        let docs = self.render(card);
        for (page, doc) in docs.into_iter().enumerate() {
            if self.pages.get(page).and_then(|p| p.shown.as_ref()) == Some(&doc) {
                continue;
            }
            match self.target.cards.get(page).cloned() {
                None => self.create(page, &doc, view.is_final()).await?,
                Some(card) => self.update(page, &card, &doc).await?,
            }
            self.page(page).shown = Some(doc);
        }
        Ok(())
    }

    /// What this driver knows of page `page`.
    fn page(&mut self, page: usize) -> &mut Page {
        if self.pages.len() <= page {
            self.pages.resize_with(page + 1, Page::default);
        }
        &mut self.pages[page]
    }

    /// The `uuid` page `page` is sent with, whichever attempt sends it.
    fn uuid(&self, page: usize) -> String {
        format!("weft-{}-{page}", self.run.0.replace('-', ""))
    }

    /// Sends page `page` as a new card and records it on the run.
    async fn create(&mut self, page: usize, doc: &Value, ended: bool) -> Result<(), SyncError> {
        if !ended && self.egress.cardkit.allowed() && self.create_entity(page, doc).await? {
            return Ok(());
        }
        let sent = self
            .send(&MessageContent::Interactive(doc.clone()), &self.uuid(page))
            .await
            .map_err(classify)?;
        self.record(page, LarkCard::plain(sent.message_id)).await
    }

    /// Creates page `page` as a CardKit entity, records it, sends it. False:
    /// CardKit refused; the caller sends a plain card.
    async fn create_entity(&mut self, page: usize, doc: &Value) -> Result<bool, SyncError> {
        let created = self
            .egress
            .sender
            .create_card(doc)
            .instrument(lark_call("create_card"))
            .await;
        let entity = match counted("create_entity", created) {
            Ok(entity) => entity,
            Err(e) if e.class() == ErrorClass::Retryable || refused_content(&e) => {
                return Err(classify(e));
            }
            Err(e) => {
                self.egress.cardkit.refuse(&e);
                return Ok(false);
            }
        };
        let record = LarkCard {
            message_id: None,
            entity: Some(CardEntityRecord {
                card_id: entity.card_id.clone(),
                created_ms: now_ms(),
            }),
        };
        self.record(page, record.clone()).await?;
        *self.page(page) = Page {
            shown: Some(doc.clone()),
            entity: Some(entity),
        };
        self.send_entity(page, &record, doc).await?;
        Ok(true)
    }

    /// Sends the entity of page `page` by reference (created, and maybe sent by
    /// an attempt that died before recording it: the same `uuid` gives the
    /// same message back), and records the message.
    async fn send_entity(
        &mut self,
        page: usize,
        record: &LarkCard,
        doc: &Value,
    ) -> Result<(), SyncError> {
        let entity = record.entity.as_ref().expect("an entity page");
        let content = MessageContent::CardRef(entity.card_id.clone());
        match self.send(&content, &self.uuid(page)).await {
            Ok(sent) => {
                let mut card = record.clone();
                card.message_id = Some(sent.message_id);
                self.record(page, card).await
            }
            Err(e) if e.class() == ErrorClass::Retryable => Err(SyncError::Retry(e)),
            Err(e) => {
                // Not by reference, then: a plain card instead of the entity.
                self.egress.cardkit.refuse(&e);
                let uuid = format!("{}p", self.uuid(page));
                let sent = self
                    .send(&MessageContent::Interactive(doc.clone()), &uuid)
                    .await
                    .map_err(classify)?;
                *self.page(page) = Page {
                    shown: Some(doc.clone()),
                    entity: None,
                };
                self.record(page, LarkCard::plain(sent.message_id)).await
            }
        }
    }

    /// Makes page `page`, recorded as `card`, show `doc`.
    async fn update(&mut self, page: usize, card: &LarkCard, doc: &Value) -> Result<(), SyncError> {
        let Some(entity) = &card.entity else {
            let message = card.message_id.clone().unwrap_or_default();
            let patched = self
                .egress
                .sender
                .patch_card(&message, doc)
                .instrument(lark_call("patch_card"))
                .await;
            return counted("patch", patched).map_err(classify);
        };
        if card.message_id.is_none() {
            // An earlier try created it and did not get to send it; what it
            // shows is not known, so the whole card is replaced after.
            self.page(page).shown = None;
            self.send_entity(page, card, doc).await?;
            if self
                .target
                .cards
                .get(page)
                .is_none_or(|c| c.entity.is_none())
            {
                return Ok(());
            }
        }
        let handle = self
            .page(page)
            .entity
            .get_or_insert_with(|| CardEntity::resume(entity.card_id.clone(), 0))
            .clone();
        handle.advance_to((now_ms() - entity.created_ms).clamp(1, i32::MAX as i64) as u64);
        let typed = self
            .page(page)
            .shown
            .as_ref()
            .and_then(|shown| body_change(shown, doc));
        let sender = &self.egress.sender;
        let result = match typed {
            Some(text) => {
                let streamed = sender
                    .stream_element_content(&handle, weft_lark::card::BODY_ELEMENT_ID, &text)
                    .instrument(lark_call("stream_card_content"))
                    .await;
                match counted("stream", streamed) {
                    // Streaming closed (Lark ends it after 10 minutes) or refused:
                    // the whole card turns it back on.
                    Err(e) if e.class() != ErrorClass::Retryable => {
                        tracing::debug!(run.id = %self.run, error = %e, "streaming refused; replacing the card");
                        self.replace(&handle, doc).await
                    }
                    other => other,
                }
            }
            None => self.replace(&handle, doc).await,
        };
        match result {
            Err(e) if e.code() == Some(CODE_CARDKIT_SEQUENCE) => {
                handle.advance_to(handle.last_sequence() + SEQUENCE_JUMP);
                Err(SyncError::Retry(e))
            }
            other => other.map_err(classify),
        }
    }

    async fn replace(&self, handle: &CardEntity, doc: &Value) -> Result<(), LarkError> {
        let updated = self
            .egress
            .sender
            .update_card(handle, doc)
            .instrument(lark_call("update_card"))
            .await;
        counted("update", updated)
    }

    /// Records `card` as page `page` of the run (compare-and-set with the
    /// cards this driver knows); another attempt's card recorded first wins.
    async fn record(&mut self, page: usize, card: LarkCard) -> Result<(), SyncError> {
        let known = self.target.cards.clone();
        let mut next = known.clone();
        if page < next.len() {
            next[page] = card.clone();
        } else {
            next.push(card.clone());
        }
        // The card must be on record before it is sent: an attempt that takes
        // the run over reads the record, and a card it does not find it would
        // create again — Lark hands back the first message for the same
        // `uuid`, still showing the first entity, which nobody updates then.
        let store = &self.egress.store;
        match retrying("lark card", || {
            store.set_lark_cards(&self.run, &known, &next)
        })
        .await
        {
            Ok(cards) => self.target.cards = cards,
            Err(e) => {
                tracing::warn!(run.id = %self.run, error = %e, "recording the lark card failed; not sending it yet");
                return Err(SyncError::Retry(LarkError::Decode {
                    status: 0,
                    detail: format!("recording the card failed: {e}"),
                }));
            }
        }
        if self.target.cards.get(page) != Some(&card) {
            // Shown by the racing attempt's card from now on.
            self.pages.truncate(page);
            return Err(SyncError::Retry(LarkError::Decode {
                status: 0,
                detail: "another attempt recorded a card first".into(),
            }));
        }
        Ok(())
    }
}

//! Approval cards: one per approval, asked with buttons (and recorded on the
//! approval, `approvals.lark_message_id`), and rewritten without them however
//! it ends — decided on the web, in the REPL or in Lark, expired — or when the
//! reply ends before anyone answered. A click in Lark has its card redrawn by
//! the gateway in the click's answer already; the rewrite that follows says the
//! same in the chat's language.
//!
//! The answer reaches this driver as `approval_decided`, published by the
//! attempt that resumes the run, so it is that attempt's follower that rewrites
//! the card; a later attempt replaying the log leaves earlier answers alone.
//! Approval cards are plain cards (the gateway answers clicks with the card
//! itself), patched through the same rate-aware sender.

use serde_json::Map;
use tracing::Instrument;
use weft_lark::card::{ApprovalAnswer, ApprovalCard};
use weft_lark::rest::MessageContent;
use weft_lark::text::say::Verdict;

use super::{Driver, SyncError, classify, counted, lark_call, open_for};
use crate::lark::view::{Approval, ApprovalShown, ReplyView};

impl Driver {
    /// Asks for the approvals `view` leaves open, and rewrites the cards of
    /// those it shows answered (or closed) for the first time.
    pub(super) async fn sync_approvals(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        let settling = self.settle.is_cancelled();
        let before = self.before;
        let inherited = |seq: u64| before.is_some_and(|before| seq <= before);
        for (request, shown) in view.approvals() {
            let id = &request.approval_id;
            let answer = match shown {
                ApprovalShown::Open => {
                    if !self.asked.contains_key(id) && (settling || !inherited(request.seq)) {
                        self.ask(request).await?;
                    }
                    continue;
                }
                _ if self.answered.contains(id) => continue,
                ApprovalShown::Answered(answer) if inherited(answer.seq) => continue,
                ApprovalShown::Answered(answer) => {
                    let by = answer.by.clone().unwrap_or_default();
                    match answer.decision {
                        Verdict::Approved => ApprovalAnswer::Approved {
                            by,
                            always: self.decided_always(id).await,
                        },
                        Verdict::Denied => ApprovalAnswer::Denied { by },
                        Verdict::Expired => ApprovalAnswer::Expired,
                    }
                }
                ApprovalShown::Closed => ApprovalAnswer::Closed,
            };
            let Some(message) = self.approval_message(id).await else {
                // Never asked in Lark (or not recorded yet): nothing to rewrite.
                continue;
            };
            let card = approval_card(request, answer, Map::new()).render_in(self.lang);
            let patched = self
                .egress
                .sender
                .patch_card(&message, &card)
                .instrument(lark_call("patch_card"))
                .await;
            counted("approval_patch", patched).map_err(classify)?;
            self.answered.insert(id.clone());
        }
        Ok(())
    }

    /// Sends the approval card of `request`, once: its `uuid` derives from the
    /// approval, so a follower of a later attempt that sends it again gets the
    /// same message back instead of a second set of buttons.
    async fn ask(&mut self, request: &Approval) -> Result<(), SyncError> {
        let context = self.click_context(request.step);
        let answer = ApprovalAnswer::Open {
            expires_in: open_for(request.expires_at),
        };
        let card = approval_card(request, answer, context).render_in(self.lang);
        let uuid: String = format!("weft-a-{}", request.approval_id)
            .chars()
            .take(50)
            .collect();
        let sent = self
            .send(&MessageContent::Interactive(card), &uuid)
            .await
            .map_err(classify)?;
        if let Err(e) = self
            .egress
            .store
            .record_lark_approval_card(&request.approval_id, &sent.message_id)
            .await
        {
            tracing::warn!(run.id = %self.run, error = %e, "recording the approval card failed");
        }
        self.asked
            .insert(request.approval_id.clone(), sent.message_id);
        Ok(())
    }

    /// The message of approval `id`'s card: sent by this driver, or recorded.
    async fn approval_message(&mut self, id: &str) -> Option<String> {
        if let Some(message) = self.asked.get(id) {
            return Some(message.clone());
        }
        self.recorded_card(id).await.map(|c| c.message_id)
    }

    /// Whether approval `id` was approved "always" (only the database knows).
    async fn decided_always(&mut self, id: &str) -> bool {
        self.approval_cards = None;
        self.recorded_card(id).await.is_some_and(|c| c.always)
    }

    async fn recorded_card(&mut self, id: &str) -> Option<weft_store::LarkApprovalCard> {
        let known = |cards: &Option<Vec<weft_store::LarkApprovalCard>>| {
            cards
                .as_ref()
                .and_then(|cards| cards.iter().find(|c| c.approval_id == id).cloned())
        };
        if let Some(card) = known(&self.approval_cards) {
            return Some(card);
        }
        match self.egress.store.lark_approval_cards(&self.run).await {
            Ok(cards) => self.approval_cards = Some(cards),
            Err(e) => {
                tracing::warn!(run.id = %self.run, error = %e, "reading the approval cards failed");
            }
        }
        known(&self.approval_cards)
    }
}

fn approval_card(
    request: &Approval,
    answer: ApprovalAnswer,
    context: Map<String, serde_json::Value>,
) -> ApprovalCard {
    ApprovalCard {
        approval_id: request.approval_id.clone(),
        tool: request.name.clone(),
        args: request.args.clone(),
        context,
        answer,
    }
}

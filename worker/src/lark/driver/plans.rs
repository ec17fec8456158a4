//! Plan cards (plan mode): one per plan the agent proposes, sent with Approve
//! and Reject buttons and the hint that a reply in the chat asks for changes,
//! and rewritten without buttons however it ends — approved or rejected by a
//! click, revised by a reply in the chat (a new plan, with a card of its own,
//! follows), decided on the web or in the REPL, expired — or when the reply
//! ends before anyone decided. As with questions, a click has its card redrawn
//! by the gateway in the click's answer already, and the decision reaches this
//! driver as `plan_decided`, published by the attempt that resumes the run, so
//! that attempt's follower rewrites the card.
//!
//! **Finding the card again** works as for questions (see [`super::questions`]):
//! the card's message is recorded on its plan (`plans.lark_message_id`) once
//! sent, and the card is sent under a Lark `uuid` derived from the plan, so a
//! worker that died between sending and recording leaves a follower that gets
//! the original message back and patches that.

use serde_json::{Map, Value};
use weft_lark::card::{PlanAnswer, PlanCard};
use weft_lark::rest::MessageContent;
use weft_shared::fold::PlanDecided;
use weft_store::PlanStatus;

use super::{Driver, SyncError, classify, open_for};
use crate::lark::view::{Plan, PlanShown, ReplyView};

impl Driver {
    /// Sends the cards of the plans `view` leaves open, and rewrites the cards
    /// of those it shows decided (or closed) for the first time.
    pub(super) async fn sync_plans(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        let settling = self.settle.is_cancelled();
        let before = self.before;
        let inherited = |seq: u64| before.is_some_and(|before| seq <= before);
        for (plan, shown) in view.plans() {
            let id = &plan.plan_id;
            let answer = match shown {
                PlanShown::Open => {
                    if !self.plans_asked.contains_key(id) && (settling || !inherited(plan.seq)) {
                        self.ask_plan(plan).await?;
                    }
                    continue;
                }
                _ if self.plans_decided.contains(id) => continue,
                PlanShown::Decided(decided) if inherited(decided.seq) => continue,
                PlanShown::Decided(decided) => decided_answer(decided),
                PlanShown::Closed => PlanAnswer::Closed,
            };
            let card = plan_card(plan, answer, Map::new()).render_in(self.lang);
            let recorded = match self.plans_asked.get(id) {
                Some(message) => Some(message.clone()),
                // Not sent by this follower: the one that did recorded it.
                None => self
                    .egress
                    .store
                    .lark_plan_card(id)
                    .await
                    .unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "reading a plan's card failed; finding it by its uuid");
                        None
                    }),
            };
            self.rewrite_card(recorded, &card, &uuid_of(id), "plan_patch")
                .await?;
            self.plans_decided.insert(id.clone());
        }
        Ok(())
    }

    /// Sends the card of `plan`, once (its `uuid` derives from the plan: a
    /// later attempt's follower sending it again gets the same message back).
    async fn ask_plan(&mut self, plan: &Plan) -> Result<(), SyncError> {
        let context = self.click_context(plan.step);
        let answer = PlanAnswer::Open {
            expires_in: open_for(plan.expires_at),
        };
        let card = plan_card(plan, answer, context).render_in(self.lang);
        let sent = self
            .send(&MessageContent::Interactive(card), &uuid_of(&plan.plan_id))
            .await
            .map_err(classify)?;
        if let Err(e) = self
            .egress
            .store
            .record_lark_plan_card(&plan.plan_id, &sent.message_id)
            .await
        {
            // Found again by its `uuid` (see the module docs).
            tracing::warn!(error = %e, "recording a plan's card failed");
        }
        self.plans_asked
            .insert(plan.plan_id.clone(), sent.message_id);
        Ok(())
    }
}

/// What a decided plan's card says.
fn decided_answer(decided: &PlanDecided) -> PlanAnswer {
    let by = decided.by.clone().unwrap_or_default();
    let comment = decided.comment.clone();
    match decided.status {
        PlanStatus::Approved => PlanAnswer::Approved { by, comment },
        PlanStatus::Rejected => PlanAnswer::Rejected { by, comment },
        PlanStatus::Revised => PlanAnswer::Revised {
            by,
            comment: comment.unwrap_or_default(),
        },
        PlanStatus::Expired | PlanStatus::Proposed => PlanAnswer::Expired,
    }
}

/// The Lark `uuid` of a plan's card (at most 50 characters).
fn uuid_of(plan_id: &str) -> String {
    format!("weft-p-{plan_id}").chars().take(50).collect()
}

fn plan_card(plan: &Plan, answer: PlanAnswer, context: Map<String, Value>) -> PlanCard {
    PlanCard {
        plan_id: plan.plan_id.clone(),
        markdown: plan.markdown.clone(),
        context,
        answer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_decision_reads_as_its_card_says_it() {
        let decided = |status, comment: Option<&str>| PlanDecided {
            status,
            comment: comment.map(str::to_owned),
            by: Some("Alice".into()),
            seq: 7,
        };
        assert_eq!(
            decided_answer(&decided(PlanStatus::Revised, Some("add a test first"))),
            PlanAnswer::Revised {
                by: "Alice".into(),
                comment: "add a test first".into()
            }
        );
        assert_eq!(
            decided_answer(&decided(PlanStatus::Approved, None)),
            PlanAnswer::Approved {
                by: "Alice".into(),
                comment: None
            }
        );
        assert_eq!(
            decided_answer(&decided(PlanStatus::Expired, None)),
            PlanAnswer::Expired
        );
        // Distinct from a question's card, and within Lark's 50 characters.
        let id = format!("pl_{}", "0".repeat(32));
        assert_eq!(uuid_of(&id), format!("weft-p-{id}"));
        assert!(uuid_of(&"x".repeat(80)).chars().count() == 50);
    }
}

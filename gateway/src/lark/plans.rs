//! Plans the agent proposes in plan mode (`/plan TASK`; docs/protocol.md,
//! "Plans"), decided from Lark: by a click on the plan card's Approve or
//! Reject, or by a plain reply in the chat, which asks for changes (a
//! revise, the reply's text its comment). Both decide through the run service
//! ([`weft_runs::Runs::decide_plan`]) as the Lark user — the account linked
//! to the identity, else `lark:<open_id>` — with the same rules as
//! `POST /v1/plans/{id}`: only the person whose message led to the run, or a
//! Weft admin, decides; the first decision stands; the run that waited goes
//! back to the queue and finishes (or plans again) in the same reply card.
//!
//! **Clicks** are answered in their ack like question clicks
//! ([`super::questions`]: a toast and, when there is an outcome to show, the
//! plan card redrawn without buttons).
//!
//! **A reply in the chat** revises the open plan instead of becoming a new
//! message for the agent ([`Bot::revise_in_chat`]), when the session's active
//! run waits on a plan that is the sender's (or the sender is an admin).
//! Commands and stop words keep their meaning (`stop` ends the run, plan and
//! all). A plan that expired or whose run ended meanwhile takes no decision,
//! and the message goes on as an ordinary one.
//!
//! **Durability** as for questions: the decision is recorded under the
//! message's id (`plans.decision_key` = `lark:<message id>`), so a message
//! handled again after a crash finds its decision ([`Bot::decided_before`])
//! and is done.

use serde_json::Map;
use weft_lark::card::{CardState, ClickContext, PlanAnswer, PlanCard, PlanChoice, PlanClick};
use weft_lark::event::{CardAction, CardActionResponse};
use weft_lark::text::{Lang, Text, say};
use weft_store::{
    Answerer, AuthUser, Plan, PlanDecision, PlanOutcome, PlanStatus, SessionRecord, StoreError,
    retrying,
};

use super::Bot;
use super::approve::toast;
use super::inbound::Incoming;
use super::questions::{ChatAnswer, answer_key};

impl Bot {
    /// Answers a click on a plan's Approve or Reject, in its ack.
    pub(super) async fn answer_plan_click(
        &self,
        action: &CardAction,
        click: PlanClick,
        lang: Lang,
    ) -> CardActionResponse {
        let clicker = match self.clicker(action, lang).await {
            Ok(user) => user,
            Err(answer) => return answer,
        };
        let by = self.display_name(&clicker).await;
        let decider = Answerer {
            user: &clicker.id,
            admin: clicker.is_admin(),
            name: &by,
        };
        let decision = match click.choice {
            PlanChoice::Approve => PlanDecision::Approve,
            PlanChoice::Reject => PlanDecision::Reject,
        };
        let outcome = self
            .state
            .runs
            .decide_plan(&click.plan_id, &decider, decision, None, None)
            .await;
        // The labels of approval clicks (`weft_lark_card_actions_total`).
        let (label, response) = match outcome {
            Ok(PlanOutcome::Decided { plan, .. }) => {
                let text = match plan.status {
                    PlanStatus::Approved => Text::ClickApproved,
                    _ => Text::ClickRejected,
                };
                (
                    "decided",
                    drawn(toast("success", lang.text(text)), &plan, lang),
                )
            }
            Ok(PlanOutcome::AlreadyDecided(plan)) => (
                "already_decided",
                drawn(toast("info", standing(&plan, lang)), &plan, lang),
            ),
            Ok(PlanOutcome::Expired { plan, .. }) => (
                "expired",
                drawn(
                    toast("warning", lang.text(Text::ClickPlanExpired)),
                    &plan,
                    lang,
                ),
            ),
            Ok(PlanOutcome::RunEnded(plan)) => (
                "run_ended",
                drawn(toast("info", lang.text(Text::ClickRunEnded)), &plan, lang),
            ),
            // Approve and reject take no comment: only a forged value.
            Ok(PlanOutcome::Invalid { why, .. }) => ("refused", toast("warning", why)),
            Err(StoreError::NotFound) => ("refused", self.plan_refusal(&click, lang).await),
            Err(e) => {
                tracing::warn!(plan.id = %click.plan_id, error = %e, "deciding a plan from lark failed");
                ("failed", toast("error", lang.text(Text::ClickTryAgain)))
            }
        };
        metrics::counter!("weft_lark_card_actions_total", "outcome" => label).increment(1);
        response
    }

    /// The clicker may not decide: say who may (or what stands). The card's
    /// buttons carry the run and step, so the plan is found without a lookup
    /// that ignores ownership.
    async fn plan_refusal(&self, click: &PlanClick, lang: Lang) -> CardActionResponse {
        let store = &self.state.store;
        let plan = match ClickContext::step_of(&click.context) {
            Some((run, step)) => store
                .step_plans(&run, step)
                .await
                .ok()
                .and_then(|list| list.into_iter().find(|p| p.id == click.plan_id)),
            _ => None,
        };
        let Some(plan) = plan else {
            return toast("error", lang.text(Text::ClickPlanGone));
        };
        if plan.status != PlanStatus::Proposed {
            return drawn(toast("info", standing(&plan, lang)), &plan, lang);
        }
        match store.get_user(&plan.user_id).await {
            Ok(owner) => toast(
                "warning",
                say::only_owner_decides(lang, &self.display_name(&owner).await),
            ),
            Err(_) => toast("warning", lang.text(Text::ClickNotYours)),
        }
    }

    /// The plan a message from `user` in `session` would revise: the newest
    /// open plan of the session's active run, when it is the sender's or the
    /// sender is an admin.
    pub(super) async fn open_plan(
        &self,
        session: &SessionRecord,
        user: &AuthUser,
    ) -> Result<Option<Plan>, StoreError> {
        let Some(active) = session.active_run_id.as_deref() else {
            return Ok(None);
        };
        let store = &self.state.store;
        let open = retrying("open plans", || store.session_plans(&session.id)).await?;
        Ok(open
            .into_iter()
            .rev()
            .find(|p| p.run_id.0 == active && (p.user_id == user.id || user.is_admin())))
    }

    /// Records `text`, typed in the chat by `user`, as changes asked for to
    /// `plan` (a revise); a reply the plan cannot take is told why.
    pub(super) async fn revise_in_chat(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        plan: &Plan,
        text: &str,
    ) -> anyhow::Result<ChatAnswer> {
        // "ok" tells a language, "👍" none: the plan's, else the tenant's.
        let lang = Lang::detect(text)
            .or_else(|| Lang::detect(&plan.markdown))
            .unwrap_or(self.tenant);
        let by = self.display_name(user).await;
        let decider = Answerer {
            user: &user.id,
            admin: user.is_admin(),
            name: &by,
        };
        let runs = &self.state.runs;
        // The message names the decision: handled again (a retry whose reply
        // was lost, or the inbox's sweep after a crash), it finds its own.
        let key = answer_key(incoming);
        let outcome = retrying("revising a plan", || {
            runs.decide_plan(
                &plan.id,
                &decider,
                PlanDecision::Revise,
                Some(text.to_owned()),
                Some(&key),
            )
        })
        .await;
        match outcome {
            Ok(PlanOutcome::Decided { .. }) => Ok(ChatAnswer::Taken),
            Ok(PlanOutcome::AlreadyDecided(p)) => {
                self.not_a_revision(incoming, &standing(&p, lang)).await?;
                Ok(ChatAnswer::Taken)
            }
            Ok(PlanOutcome::Invalid { why, .. }) => {
                self.not_a_revision(incoming, &say::not_a_revision(lang, &why))
                    .await?;
                Ok(ChatAnswer::Taken)
            }
            Ok(PlanOutcome::Expired { .. } | PlanOutcome::RunEnded(_))
            | Err(StoreError::NotFound) => Ok(ChatAnswer::NotAnAnswer),
            Err(e) => Err(anyhow::Error::new(e).context("revising a plan")),
        }
    }

    /// Whether `incoming` already decided a plan: a message handled again
    /// after a crash (the inbox's sweep), whose plan is decided and no longer
    /// open, is that decision — never a new message.
    pub(super) async fn decided_before(&self, incoming: &Incoming) -> Result<bool, StoreError> {
        let store = &self.state.store;
        let key = answer_key(incoming);
        Ok(
            retrying("a message's plan decision", || store.plan_decided_by(&key))
                .await?
                .is_some(),
        )
    }

    /// Tells the chat its reply did not revise the plan (or what stands).
    async fn not_a_revision(&self, incoming: &Incoming, text: &str) -> anyhow::Result<()> {
        self.notice(incoming, "Weft", CardState::AwaitingDecision, text)
            .await
    }
}

/// What stands: "Already approved by Alice.", or that it expired.
fn standing(plan: &Plan, lang: Lang) -> String {
    say::plan_already(lang, plan.status, plan.decided_by.as_deref())
}

/// `response` with the plan card redrawn as it stands, without buttons.
fn drawn(response: CardActionResponse, plan: &Plan, lang: Lang) -> CardActionResponse {
    let by = plan.decided_by.clone().unwrap_or_default();
    let comment = plan.comment.clone();
    let answer = match plan.status {
        PlanStatus::Approved => PlanAnswer::Approved { by, comment },
        PlanStatus::Rejected => PlanAnswer::Rejected { by, comment },
        PlanStatus::Revised => PlanAnswer::Revised {
            by,
            comment: comment.unwrap_or_default(),
        },
        PlanStatus::Expired => PlanAnswer::Expired,
        // Still proposed, yet its run ended: nobody will decide it.
        PlanStatus::Proposed => PlanAnswer::Closed,
    };
    let card = PlanCard {
        plan_id: plan.id.clone(),
        markdown: plan.markdown.clone(),
        context: Map::new(),
        answer,
    };
    response.with_card(card.render_in(lang))
}

#[cfg(test)]
mod tests {
    use weft_shared::ids::{RunId, SessionId, UserId};

    use super::*;

    fn plan(status: PlanStatus, by: Option<&str>, comment: Option<&str>) -> Plan {
        Plan {
            id: "pl_1".into(),
            run_id: RunId("r".into()),
            session_id: SessionId("s".into()),
            user_id: UserId("u".into()),
            step: 1,
            call_id: "plan_1".into(),
            markdown: "1. Read the code.".into(),
            status,
            comment: comment.map(str::to_owned),
            decided_by: by.map(str::to_owned),
            decision_key: None,
            announced: false,
            created_at: 0,
            expires_at: 0,
            decided_at: None,
        }
    }

    #[test]
    fn what_stands_is_said_and_drawn_without_buttons() {
        let revised = plan(PlanStatus::Revised, Some("Alice"), Some("add a test"));
        assert_eq!(
            standing(&revised, Lang::En),
            "Already decided: Alice asked for changes, and a new plan follows."
        );
        let response = drawn(toast("info", "x"), &revised, Lang::En);
        let card = &response.card.expect("a card")["data"];
        let text = card.to_string();
        assert!(
            text.contains("Alice asked for changes: add a test"),
            "{text}"
        );
        assert!(text.contains("1. Read the code."), "{text}");
        assert!(!text.contains("\"button\""), "{text}");
        // A run that ended while the plan waited: closed, without buttons.
        let open = plan(PlanStatus::Proposed, None, None);
        let closed = drawn(toast("info", "x"), &open, Lang::Zh).card.unwrap();
        assert!(closed.to_string().contains("回复已结束"), "{closed}");
        assert!(!closed.to_string().contains("\"button\""));
        let approved = plan(PlanStatus::Approved, Some("Alice"), None);
        assert_eq!(standing(&approved, Lang::Zh), "已经决定了：Alice 已批准。");
    }
}

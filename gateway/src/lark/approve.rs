//! Approval buttons (docs/protocol.md, "Approvals"; docs/lark.md, "Approvals in
//! Lark"); the buttons of question and plan cards are answered the same way,
//! in [`super::questions`] and [`super::plans`]. A click on an approval card
//! arrives as a `card.action.trigger` callback on the long connection and is
//! answered in its ack — Lark wants that within 3 s — with a toast and, when
//! there is a decision to show, the approval card redrawn with it and without
//! buttons (Lark puts that card in place of the clicked one).
//!
//! The click decides as the clicking Lark user — `lark:<open_id>`, or the
//! account linked to that identity — through the same store call, rules and
//! requeue as `POST /v1/approvals/{id}`: only the person whose message caused
//! the run (the run's user — in a group, that message's sender) or a Weft
//! admin decides; anyone else is told who may, and changes nothing. A second click, or Lark
//! redelivering the first, finds the decision standing and shows it.
//!
//! The card's buttons carry `run_id` and `step` next to the approval id (put
//! there by the worker's card driver), so a refused click can name the owner
//! without an approval lookup that ignores ownership.

use std::time::Duration;

use serde_json::Map;
use tokio::sync::oneshot;
use weft_lark::card::{
    ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalClick, ClickContext, PlanClick,
    QuestionClick,
};
use weft_lark::event::{CardAction, CardActionResponse};
use weft_lark::text::say::{self, Verdict};
use weft_lark::text::{Lang, Text};
use weft_lark::ws::CardActionDelivery;
use weft_store::{
    Approval, ApprovalStatus, AuthUser, DecideOutcome, Decision, Role, StoreError, retrying,
};

use super::Bot;

/// The answer must be in the ack within Lark's 3 s (the socket gives up on
/// waiting at 2.5 s); past this the click is acked with a "working on it".
const ANSWER_WITHIN: Duration = Duration::from_millis(2000);

impl Bot {
    /// Answers one click in its ack. The decision itself runs to the end even
    /// when the answer is late: a recorded decision always gets its requeue.
    pub(super) async fn on_card_action(&self, delivery: CardActionDelivery) {
        let (done, answer) = oneshot::channel();
        let (bot, action) = (self.clone(), delivery.action.clone());
        tokio::spawn(async move {
            let _ = done.send(bot.answer_click(&action).await);
        });
        let lang = self.click_lang(&delivery.action);
        let response = match tokio::time::timeout(ANSWER_WITHIN, answer).await {
            Ok(Ok(response)) => response,
            Ok(Err(_)) => toast("error", lang.text(Text::ClickTryAgain)),
            Err(_) => {
                metrics::counter!("weft_lark_card_actions_total", "outcome" => "late").increment(1);
                toast("info", lang.text(Text::ClickLate))
            }
        };
        delivery.respond(response);
    }

    /// The language of the clicked card: the chat's, as the worker drew it
    /// (`lang` in the button's value), else the tenant's.
    fn click_lang(&self, action: &CardAction) -> Lang {
        ClickContext::lang_of(&action.action.value).unwrap_or(self.tenant)
    }

    async fn answer_click(&self, action: &CardAction) -> CardActionResponse {
        let lang = self.click_lang(action);
        if let Some(click) = QuestionClick::parse(&action.action.value) {
            return self.answer_question_click(action, click, lang).await;
        }
        if let Some(click) = PlanClick::parse(&action.action.value) {
            return self.answer_plan_click(action, click, lang).await;
        }
        let Some(click) = ApprovalClick::parse(&action.action.value) else {
            metrics::counter!("weft_lark_card_actions_total", "outcome" => "unknown").increment(1);
            return toast("info", lang.text(Text::ClickUnknown));
        };
        let clicker = match self.clicker(action, lang).await {
            Ok(user) => user,
            Err(answer) => return answer,
        };
        let decision = match click.choice {
            ApprovalChoice::Approve => Decision::Approve,
            ApprovalChoice::Deny => Decision::Deny,
            ApprovalChoice::Always => Decision::Always,
        };
        // The person whose message caused the run decides, or a Weft admin.
        let by = self.display_name(&clicker).await;
        let outcome = self
            .state
            .runs
            .decide(
                &click.approval_id,
                &clicker.id,
                clicker.role == Role::Admin,
                &by,
                decision,
            )
            .await;
        let always = click.choice == ApprovalChoice::Always;
        let (label, response) = match outcome {
            Ok(DecideOutcome::Decided { approval, .. }) => {
                let text = match (approval.status, always) {
                    (ApprovalStatus::Approved, true) => say::approved_always(lang, &approval.name),
                    (ApprovalStatus::Approved, false) => lang.text(Text::ClickApproved).to_owned(),
                    _ => lang.text(Text::ClickDenied).to_owned(),
                };
                (
                    "decided",
                    answered(toast("success", text), &approval, always, lang),
                )
            }
            Ok(DecideOutcome::AlreadyDecided(approval)) => (
                "already_decided",
                answered(
                    toast("info", standing(&approval, lang)),
                    &approval,
                    false,
                    lang,
                ),
            ),
            Ok(DecideOutcome::Expired { approval, .. }) => {
                let text = lang.text(Text::ClickExpired);
                (
                    "expired",
                    answered(toast("warning", text), &approval, false, lang),
                )
            }
            Ok(DecideOutcome::RunEnded(approval)) => {
                let text = lang.text(Text::ClickRunEnded);
                (
                    "run_ended",
                    answered(toast("info", text), &approval, false, lang),
                )
            }
            Err(StoreError::NotFound) => ("refused", self.refusal(&click, lang).await),
            Err(e) => {
                tracing::warn!(approval.id = %click.approval_id, error = %e, "deciding an approval from lark failed");
                ("failed", toast("error", lang.text(Text::ClickTryAgain)))
            }
        };
        metrics::counter!("weft_lark_card_actions_total", "outcome" => label).increment(1);
        response
    }

    /// The Weft user who clicked (the account linked to the operator's Lark
    /// identity, else `lark:<open_id>`), or the answer that says why not.
    pub(super) async fn clicker(
        &self,
        action: &CardAction,
        lang: Lang,
    ) -> Result<AuthUser, CardActionResponse> {
        let open_id = action.operator.open_id.as_str();
        if open_id.is_empty() {
            return Err(toast("error", lang.text(Text::ClickNoUser)));
        }
        let store = &self.state.store;
        retrying("lark user", || store.lark_user(open_id))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "looking up the lark user of a click failed");
                toast("error", lang.text(Text::ClickTryAgain))
            })
    }

    /// The clicker does not own the approval: say who does (or what stands).
    async fn refusal(&self, click: &ApprovalClick, lang: Lang) -> CardActionResponse {
        let store = &self.state.store;
        let approval = match ClickContext::step_of(&click.context) {
            Some((run, step)) => store
                .step_approvals(&run, step)
                .await
                .ok()
                .and_then(|list| list.into_iter().find(|a| a.id == click.approval_id)),
            _ => None,
        };
        let Some(approval) = approval else {
            return toast("error", lang.text(Text::ClickGone));
        };
        if approval.status != ApprovalStatus::Pending {
            return answered(
                toast("info", standing(&approval, lang)),
                &approval,
                false,
                lang,
            );
        }
        match store.get_user(&approval.user_id).await {
            Ok(asker) => toast(
                "warning",
                say::only_owner_decides(lang, &self.display_name(&asker).await),
            ),
            Err(_) => toast("warning", lang.text(Text::ClickNotYours)),
        }
    }

    /// Answers a click that found every click slot taken, at once (nothing was decided).
    pub(super) fn answer_busy(&self, delivery: CardActionDelivery) {
        let lang = self.click_lang(&delivery.action);
        delivery.respond(toast("warning", lang.text(Text::ClickBusy)));
    }
}

pub(super) fn toast(kind: &str, text: impl Into<String>) -> CardActionResponse {
    CardActionResponse::toast(kind, text)
}

/// What stands: "Already approved by alice".
fn standing(approval: &Approval, lang: Lang) -> String {
    // Not decided (only called for decided ones): say what a lapse says.
    let verdict = approval.status.verdict().unwrap_or(Verdict::Expired);
    say::already(lang, verdict, approval.decided_by.as_deref())
}

/// `response` with the approval card redrawn as it stands, without buttons.
fn answered(
    response: CardActionResponse,
    approval: &Approval,
    always: bool,
    lang: Lang,
) -> CardActionResponse {
    let by = approval.decided_by.clone().unwrap_or_default();
    let answer = match approval.status {
        ApprovalStatus::Approved => ApprovalAnswer::Approved { by, always },
        ApprovalStatus::Denied => ApprovalAnswer::Denied { by },
        ApprovalStatus::Expired => ApprovalAnswer::Expired,
        ApprovalStatus::Pending => ApprovalAnswer::Closed,
    };
    let card = ApprovalCard {
        approval_id: approval.id.clone(),
        tool: approval.name.clone(),
        args: approval.args.clone(),
        context: Map::new(),
        answer,
    };
    response.with_card(card.render_in(lang))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_shared::ids::{RunId, SessionId, UserId};

    use super::*;

    fn approval(status: ApprovalStatus, by: Option<&str>) -> Approval {
        Approval {
            id: "ap_1".into(),
            run_id: RunId("r".into()),
            session_id: SessionId("s".into()),
            user_id: UserId("u".into()),
            step: 1,
            call_id: "c".into(),
            name: "current_time".into(),
            args: json!({}),
            status,
            decided_by: by.map(str::to_owned),
            announced: false,
            created_at: 0,
            expires_at: 0,
            decided_at: None,
        }
    }

    #[test]
    fn what_stands_is_said_and_drawn_without_buttons() {
        let denied = approval(ApprovalStatus::Denied, Some("alice"));
        assert_eq!(standing(&denied, Lang::En), "Already denied by alice.");
        assert_eq!(standing(&denied, Lang::Zh), "已经是：alice 已拒绝。");
        assert_eq!(
            standing(&approval(ApprovalStatus::Expired, None), Lang::En),
            "⌛ Already expired (counts as denied)."
        );
        let response = answered(
            toast("info", standing(&denied, Lang::En)),
            &denied,
            false,
            Lang::En,
        );
        let card = &response.card.expect("a card")["data"];
        assert_eq!(card["header"]["template"], "red");
        let text = card.to_string();
        assert!(text.contains("❌ denied by alice"), "{text}");
        assert!(!text.contains("\"button\""), "{text}");
        // A run that ended while waiting: closed, still without buttons.
        let open = approval(ApprovalStatus::Pending, None);
        let closed = answered(toast("info", "x"), &open, false, Lang::En)
            .card
            .unwrap();
        assert!(closed.to_string().contains("the reply ended"));
        assert!(!closed.to_string().contains("\"button\""));
        // In a Chinese chat the redrawn card is Chinese.
        let zh = answered(toast("info", "x"), &denied, false, Lang::Zh)
            .card
            .unwrap();
        assert!(zh.to_string().contains("alice 已拒绝"), "{zh}");
    }
}

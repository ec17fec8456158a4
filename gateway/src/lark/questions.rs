//! Questions the agent asks (`ask_user`; docs/protocol.md, "Questions"),
//! answered from Lark: by a click on an option's button of the question card
//! the worker sent, or by a plain reply in the chat. Both answer through the
//! run service ([`weft_runs::Runs::answer`]) as the Lark user — the account
//! linked to the identity, else `lark:<open_id>` — with the same rules as
//! `POST /v1/questions/{id}`: only the person whose message led to the run, or
//! a Weft admin, answers; the first answer stands; the run that waited goes
//! back to the queue and finishes in the same reply card.
//!
//! **Clicks** are answered in their ack like approval clicks ([`super::approve`]:
//! a toast and, when there is an outcome to show, the question card redrawn
//! without buttons).
//!
//! **A reply in the chat** answers the open question instead of becoming a new
//! message for the agent ([`Bot::answer_in_chat`]): when the session's active
//! run waits on a question that is the sender's (or the sender is an admin),
//! the text is read against it ([`reading`]) — option numbers, an option's
//! text, or the typed answer where one is taken. A reply that is no answer is
//! told why, and the question stays open; nothing is sent to the agent. A
//! question that expired or whose run ended meanwhile takes no answer, and the
//! message goes on as an ordinary one.
//!
//! **Durability.** Such a message is acked and kept in the inbox like any
//! other ([`super::inbox`]); the answer is the store's one transaction, and
//! the first answer stands, so a handler retried after a database error finds
//! its own answer standing and is done (it compares who answered what), and
//! the notices it sends are sent once per message by their `uuid`.

mod reading;

use serde_json::Map;
use weft_lark::card::{CardState, ClickContext, QuestionAnswer, QuestionCard, QuestionClick};
use weft_lark::event::{CardAction, CardActionResponse};
use weft_lark::text::{Lang, Text, say};
use weft_store::{
    AnswerOutcome, AuthUser, Question, QuestionStatus, SessionRecord, StoreError, retrying,
};

use super::Bot;
use super::approve::toast;
use super::inbound::Incoming;
use reading::Reading;
pub(super) use reading::names_option;

/// What a reply in the chat did to the open question (or plan,
/// [`super::plans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChatAnswer {
    /// It was (or tried to be) the answer: nothing more to do with it.
    Taken,
    /// The question (or plan) takes no answer any more: an ordinary message.
    NotAnAnswer,
}

impl Bot {
    /// Answers a click on an option's button, in its ack.
    pub(super) async fn answer_question_click(
        &self,
        action: &CardAction,
        click: QuestionClick,
        lang: Lang,
    ) -> CardActionResponse {
        let clicker = match self.clicker(action, lang).await {
            Ok(user) => user,
            Err(answer) => return answer,
        };
        let by = self.display_name(&clicker).await;
        let outcome = self
            .state
            .runs
            .answer(
                &click.question_id,
                &clicker.id,
                clicker.is_admin(),
                &by,
                vec![click.answer.clone()],
                None,
            )
            .await;
        // The labels of approval clicks (`weft_lark_card_actions_total`).
        let (label, response) = match outcome {
            Ok(AnswerOutcome::Answered { question, .. }) => (
                "decided",
                drawn(
                    toast("success", lang.text(Text::ClickAnswered)),
                    &question,
                    lang,
                ),
            ),
            Ok(AnswerOutcome::AlreadyAnswered(question)) => (
                "already_decided",
                drawn(toast("info", standing(&question, lang)), &question, lang),
            ),
            Ok(AnswerOutcome::Expired { question, .. }) => (
                "expired",
                drawn(
                    toast("warning", lang.text(Text::ClickQuestionExpired)),
                    &question,
                    lang,
                ),
            ),
            Ok(AnswerOutcome::RunEnded(question)) => (
                "run_ended",
                drawn(
                    toast("info", lang.text(Text::ClickQuestionRunEnded)),
                    &question,
                    lang,
                ),
            ),
            // A button is one of the options: only a forged or stale value.
            Ok(AnswerOutcome::Invalid { why, .. }) => ("refused", toast("warning", why)),
            Err(StoreError::NotFound) => ("refused", self.question_refusal(&click, lang).await),
            Err(e) => {
                tracing::warn!(question.id = %click.question_id, error = %e, "answering a question from lark failed");
                ("failed", toast("error", lang.text(Text::ClickTryAgain)))
            }
        };
        metrics::counter!("weft_lark_card_actions_total", "outcome" => label).increment(1);
        response
    }

    /// The clicker may not answer: say who may (or what stands). The card's
    /// buttons carry the run and step, so the question is found without a
    /// lookup that ignores ownership.
    async fn question_refusal(&self, click: &QuestionClick, lang: Lang) -> CardActionResponse {
        let store = &self.state.store;
        let question = match ClickContext::step_of(&click.context) {
            Some((run, step)) => store
                .step_questions(&run, step)
                .await
                .ok()
                .and_then(|list| list.into_iter().find(|q| q.id == click.question_id)),
            _ => None,
        };
        let Some(question) = question else {
            return toast("error", lang.text(Text::ClickQuestionGone));
        };
        if question.status != QuestionStatus::Pending {
            return drawn(toast("info", standing(&question, lang)), &question, lang);
        }
        match store.get_user(&question.user_id).await {
            Ok(owner) => toast(
                "warning",
                say::only_owner_answers(lang, &self.display_name(&owner).await),
            ),
            Err(_) => toast("warning", lang.text(Text::ClickNotYoursToAnswer)),
        }
    }

    /// The question a message from `user` in `session` would answer: the
    /// newest open question of the session's active run, when it is the
    /// sender's or the sender is an admin.
    pub(super) async fn open_question(
        &self,
        session: &SessionRecord,
        user: &AuthUser,
    ) -> Result<Option<Question>, StoreError> {
        let Some(active) = session.active_run_id.as_deref() else {
            return Ok(None);
        };
        let store = &self.state.store;
        let open = retrying("open questions", || store.session_questions(&session.id)).await?;
        Ok(open
            .into_iter()
            .rev()
            .find(|q| q.run_id.0 == active && (q.user_id == user.id || user.is_admin())))
    }

    /// Reads `text`, typed in the chat by `user`, as the answer to `question`
    /// and records it; a reply that is no answer is told why.
    pub(super) async fn answer_in_chat(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        question: &Question,
        text: &str,
    ) -> anyhow::Result<ChatAnswer> {
        // "2" tells no language: the question's, else the tenant's.
        let lang = Lang::detect(text)
            .or_else(|| Lang::detect(&question.question))
            .unwrap_or(self.tenant);
        let options = question.options.len();
        let answer = match reading::read(text, question) {
            Reading::Answer(answer) => answer,
            Reading::Problem(problem) => {
                let why = problem.say(lang);
                self.not_an_answer(incoming, &say::not_an_answer(lang, &why, options))
                    .await?;
                return Ok(ChatAnswer::Taken);
            }
        };
        let by = self.display_name(user).await;
        let runs = &self.state.runs;
        // The message names the answer: handled again (a retry whose reply was
        // lost, or the inbox's sweep after a crash), it finds its answer.
        let key = answer_key(incoming);
        let outcome = retrying("answering a question", || {
            runs.answer(
                &question.id,
                &user.id,
                user.is_admin(),
                &by,
                answer.clone(),
                Some(&key),
            )
        })
        .await;
        match outcome {
            Ok(AnswerOutcome::Answered { .. }) => Ok(ChatAnswer::Taken),
            Ok(AnswerOutcome::AlreadyAnswered(q)) => {
                self.not_an_answer(incoming, &standing(&q, lang)).await?;
                Ok(ChatAnswer::Taken)
            }
            Ok(AnswerOutcome::Invalid { why, .. }) => {
                self.not_an_answer(incoming, &say::not_an_answer(lang, &why, options))
                    .await?;
                Ok(ChatAnswer::Taken)
            }
            Ok(AnswerOutcome::Expired { .. } | AnswerOutcome::RunEnded(_))
            | Err(StoreError::NotFound) => Ok(ChatAnswer::NotAnAnswer),
            Err(e) => Err(anyhow::Error::new(e).context("answering a question")),
        }
    }

    /// Whether `incoming` already answered a question: a message handled
    /// again after a crash (the inbox's sweep), whose question is answered
    /// and no longer open, is that answer — never a new message.
    pub(super) async fn answered_before(&self, incoming: &Incoming) -> Result<bool, StoreError> {
        let store = &self.state.store;
        let key = answer_key(incoming);
        Ok(
            retrying("a message's answer", || store.question_answered_by(&key))
                .await?
                .is_some(),
        )
    }

    /// Tells the chat its reply did not answer the question (or what stands).
    async fn not_an_answer(&self, incoming: &Incoming, text: &str) -> anyhow::Result<()> {
        self.notice(incoming, "Weft", CardState::AwaitingAnswer, text)
            .await
    }
}

/// The key an answer (or a plan's revise) made by a chat message is
/// recorded under.
pub(super) fn answer_key(incoming: &Incoming) -> String {
    format!("lark:{}", incoming.message_id)
}

/// What stands: "Already answered by alice: blue", or that it expired.
fn standing(question: &Question, lang: Lang) -> String {
    match question.status {
        QuestionStatus::Answered => {
            say::already_answered(lang, question.answered_by.as_deref(), &question.answer)
        }
        QuestionStatus::Expired => lang.text(Text::ClickQuestionExpired).to_owned(),
        QuestionStatus::Pending => lang.text(Text::ClickQuestionRunEnded).to_owned(),
    }
}

/// `response` with the question card redrawn as it stands, without buttons.
fn drawn(response: CardActionResponse, question: &Question, lang: Lang) -> CardActionResponse {
    let answer = match question.status {
        QuestionStatus::Answered => QuestionAnswer::Answered {
            by: question.answered_by.clone().unwrap_or_default(),
            answer: question.answer.clone(),
        },
        QuestionStatus::Expired => QuestionAnswer::Expired,
        // Still pending, yet its run ended: nobody will answer it.
        QuestionStatus::Pending => QuestionAnswer::Closed,
    };
    let card = QuestionCard {
        question_id: question.id.clone(),
        question: question.question.clone(),
        options: question.options.clone(),
        multiple: question.multiple,
        allow_text: question.allow_text,
        context: Map::new(),
        answer,
    };
    response.with_card(card.render_in(lang))
}

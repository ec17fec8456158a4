//! Question cards: one per question the agent asks (`ask_user`), sent with its
//! options (buttons for a one-answer choice; otherwise how to reply in the
//! chat), and rewritten without buttons however it ends — answered by a click,
//! by a reply in the chat or on the web, expired — or when the reply ends
//! before anyone answered. As with approvals, a click has its card redrawn by
//! the gateway in the click's answer already, and the answer reaches this
//! driver as `question_answered`, published by the attempt that resumes the
//! run, so that attempt's follower rewrites the card.
//!
//! **Finding the card again.** The card's message is recorded on its question
//! (`questions.lark_message_id`, as approvals' are) once sent, and a follower
//! that did not send it (the resuming attempt's, on any worker) reads it back
//! and patches it. The card is also sent with a Lark `uuid` derived from the
//! question, and Lark sends at most one message per `uuid` within an hour,
//! answering a repeat with the message it sent: a worker that died between
//! sending and recording leaves a follower that sends under the same `uuid`,
//! gets the original message back and patches that.

use serde_json::{Map, Value};
use weft_lark::card::{QuestionAnswer, QuestionCard};
use weft_lark::rest::MessageContent;
use weft_store::QuestionStatus;

use super::{Driver, SyncError, classify, open_for};
use crate::lark::view::{Question, QuestionShown, ReplyView};

impl Driver {
    /// Asks the questions `view` leaves open, and rewrites the cards of those
    /// it shows answered (or closed) for the first time.
    pub(super) async fn sync_questions(&mut self, view: &ReplyView) -> Result<(), SyncError> {
        let settling = self.settle.is_cancelled();
        let before = self.before;
        let inherited = |seq: u64| before.is_some_and(|before| seq <= before);
        for (question, shown) in view.questions() {
            let id = &question.question_id;
            let answer = match shown {
                QuestionShown::Open => {
                    if !self.questions_asked.contains_key(id)
                        && (settling || !inherited(question.seq))
                    {
                        self.ask_question(question).await?;
                    }
                    continue;
                }
                _ if self.questions_answered.contains(id) => continue,
                QuestionShown::Answered(answered) if inherited(answered.seq) => continue,
                QuestionShown::Answered(answered) => match answered.status {
                    QuestionStatus::Answered => QuestionAnswer::Answered {
                        by: answered.by.clone().unwrap_or_default(),
                        answer: answered.answer.clone(),
                    },
                    QuestionStatus::Expired | QuestionStatus::Pending => QuestionAnswer::Expired,
                },
                QuestionShown::Closed => QuestionAnswer::Closed,
            };
            let card = question_card(question, answer, Map::new()).render_in(self.lang);
            let recorded = match self.questions_asked.get(id) {
                Some(message) => Some(message.clone()),
                // Not sent by this follower: the one that did recorded it.
                None => self
                    .egress
                    .store
                    .lark_question_card(id)
                    .await
                    .unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "reading a question's card failed; finding it by its uuid");
                        None
                    }),
            };
            self.rewrite_card(recorded, &card, &uuid_of(id), "question_patch")
                .await?;
            self.questions_answered.insert(id.clone());
        }
        Ok(())
    }

    /// Sends the card of `question`, once (its `uuid` derives from the
    /// question: a later attempt's follower sending it again gets the same
    /// message back).
    async fn ask_question(&mut self, question: &Question) -> Result<(), SyncError> {
        let context = self.click_context(question.step);
        let answer = QuestionAnswer::Open {
            expires_in: open_for(question.expires_at),
        };
        let card = question_card(question, answer, context).render_in(self.lang);
        let sent = self
            .send(
                &MessageContent::Interactive(card),
                &uuid_of(&question.question_id),
            )
            .await
            .map_err(classify)?;
        if let Err(e) = self
            .egress
            .store
            .record_lark_question_card(&question.question_id, &sent.message_id)
            .await
        {
            // Found again by its `uuid` (see the module docs).
            tracing::warn!(error = %e, "recording a question's card failed");
        }
        self.questions_asked
            .insert(question.question_id.clone(), sent.message_id);
        Ok(())
    }
}

/// The Lark `uuid` of a question's card (at most 50 characters).
fn uuid_of(question_id: &str) -> String {
    format!("weft-q-{question_id}").chars().take(50).collect()
}

fn question_card(
    question: &Question,
    answer: QuestionAnswer,
    context: Map<String, Value>,
) -> QuestionCard {
    QuestionCard {
        question_id: question.question_id.clone(),
        question: question.question.clone(),
        options: question.options.clone(),
        multiple: question.multiple,
        allow_text: question.allow_text,
        context,
        answer,
    }
}

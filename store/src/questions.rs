//! Questions the agent asks a person (`ask_user`, docs/protocol.md,
//! "Questions"): the second kind of wait beside approvals. How a step waits,
//! is suspended and resumed, and the race rule every answer follows, are in
//! `waits.rs`.

use sqlx::any::AnyRow;

use super::waits::{Asked, Owned, WaitKind};
use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::ids::{RunId, SessionId, UserId};

pub use weft_wire::states::QuestionStatus;

/// Longest answer kept, in characters (a typed answer is a chat message, not
/// a document).
pub const MAX_ANSWER_CHARS: usize = 4000;

#[derive(Debug, Clone, PartialEq)]
pub struct NewQuestion {
    pub id: String,
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
    pub multiple: bool,
    pub allow_text: bool,
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub id: String,
    pub run_id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub step: u32,
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
    pub multiple: bool,
    pub allow_text: bool,
    pub status: QuestionStatus,
    pub answer: Vec<String>,
    pub answered_by: Option<String>,
    /// What made the answer, when its front door named it (`lark:<message
    /// id>`).
    pub answer_key: Option<String>,
    pub announced: bool,
    pub created_at: i64,
    pub expires_at: i64,
    pub answered_at: Option<i64>,
}

const COLUMNS: &str = "id, run_id, session_id, user_id, step, call_id, question, options, multiple, allow_text, status, answer, answered_by, answer_key, announced, created_at, expires_at, answered_at";

fn strings(json: &str, what: &str) -> Result<Vec<String>> {
    serde_json::from_str(json).map_err(|e| StoreError::Other(format!("question {what}: {e}")))
}

impl WaitKind for Question {
    const TABLE: &'static str = "questions";
    const COLUMNS: &'static str = COLUMNS;

    fn from_row(row: &AnyRow) -> Result<Question> {
        Ok(Question {
            id: get_str(row, "id")?,
            run_id: RunId(get_str(row, "run_id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            user_id: UserId(get_str(row, "user_id")?),
            step: get_i64(row, "step")? as u32,
            call_id: get_str(row, "call_id")?,
            question: get_str(row, "question")?,
            options: strings(&get_str(row, "options")?, "options")?,
            multiple: get_i64(row, "multiple")? != 0,
            allow_text: get_i64(row, "allow_text")? != 0,
            status: get_str(row, "status")?.parse().map_err(|()| {
                StoreError::Other("a question status the store does not know".into())
            })?,
            answer: get_opt_str(row, "answer")?
                .map(|a| strings(&a, "answer"))
                .transpose()?
                .unwrap_or_default(),
            answered_by: get_opt_str(row, "answered_by")?,
            answer_key: get_opt_str(row, "answer_key")?,
            announced: get_i64(row, "announced")? != 0,
            created_at: get_i64(row, "created_at")?,
            expires_at: get_i64(row, "expires_at")?,
            answered_at: get_opt_i64(row, "answered_at")?,
        })
    }
}

impl Owned for Question {
    fn owner(&self) -> &UserId {
        &self.user_id
    }
}

impl Question {
    pub fn to_dto(&self) -> weft_wire::api::QuestionDto {
        use weft_wire::time::rfc3339;
        weft_wire::api::QuestionDto {
            id: self.id.clone(),
            run_id: self.run_id.0.clone(),
            session_id: self.session_id.0.clone(),
            step: self.step,
            call_id: self.call_id.clone(),
            question: self.question.clone(),
            options: self.options.clone(),
            multiple: self.multiple,
            allow_text: self.allow_text,
            status: self.status,
            answer: self.answer.clone(),
            answered_by: self.answered_by.clone(),
            created_at: rfc3339(self.created_at),
            expires_at: rfc3339(self.expires_at),
            answered_at: self.answered_at.map(rfc3339),
        }
    }

    /// `answer` as this question accepts it (trimmed), or why not: one answer
    /// unless `multiple`; each one of the options unless a typed answer is
    /// allowed (always, when there are no options).
    pub fn accept(&self, answer: Vec<String>) -> std::result::Result<Vec<String>, String> {
        let answer: Vec<String> = answer
            .into_iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if answer.is_empty() {
            return Err("the answer is empty".into());
        }
        if !self.multiple && answer.len() > 1 {
            return Err("this question takes one answer".into());
        }
        if let Some(long) = answer.iter().find(|a| a.chars().count() > MAX_ANSWER_CHARS) {
            return Err(format!(
                "an answer of {} characters is over the limit of {MAX_ANSWER_CHARS}",
                long.chars().count()
            ));
        }
        if !self.options.is_empty()
            && !self.allow_text
            && let Some(other) = answer.iter().find(|a| !self.options.contains(a))
        {
            return Err(format!(
                "{other:?} is not one of the options: {}",
                self.options
                    .iter()
                    .map(|o| format!("{o:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(answer)
    }
}

/// Who answers: the person (their session's owner, or an admin) and the
/// name others see.
#[derive(Debug, Clone, Copy)]
pub struct Answerer<'a> {
    pub user: &'a UserId,
    pub admin: bool,
    pub name: &'a str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AnswerOutcome {
    /// Recorded. `resume`: the run went back to the queue (enqueue its job).
    Answered { question: Question, resume: bool },
    /// Someone answered first: the first answer stands.
    AlreadyAnswered(Question),
    /// Too late: it expired (the model was told nobody answered).
    Expired { question: Question, resume: bool },
    /// The run ended (cancelled, deleted) before anyone answered.
    RunEnded(Question),
    /// Not an answer this question takes; the message says why.
    Invalid { question: Question, why: String },
}

impl Store {
    pub async fn step_questions(&self, run: &RunId, step: u32) -> Result<Vec<Question>> {
        self.step_waits(run, step).await
    }

    /// Every question a run asked, answered or not, in the order asked (what
    /// a reply shows again after a reload).
    pub async fn run_questions(&self, run: &RunId) -> Result<Vec<Question>> {
        self.run_waits(run).await
    }

    /// The open questions of a session (its owner's or an admin's view).
    pub async fn session_questions(&self, session: &SessionId) -> Result<Vec<Question>> {
        self.open_session_waits(session).await
    }

    /// A question by id, for `caller` (its session's owner, or an admin):
    /// anyone else gets `NotFound`, as for one that does not exist.
    pub async fn question(&self, id: &str, caller: &UserId, admin: bool) -> Result<Question> {
        self.wait_for(id, caller, admin).await
    }

    /// The question answered by what `key` names (`lark:<message id>`), if
    /// any: a message handled again after a crash is that answer, not a new
    /// message.
    pub async fn question_answered_by(&self, key: &str) -> Result<Option<Question>> {
        self.wait_keyed("answer_key", key).await
    }

    /// Record an answer; the first one stands. `caller` must own the session
    /// unless `admin`; anyone else gets `NotFound`. `key` names what made the
    /// answer, when its front door can (a Lark message): an answer already
    /// recorded under the same key is this one, `Answered` again.
    /// `traceparent`: the answering request's trace context, kept on the run
    /// (`resumed_by`).
    pub async fn answer_question(
        &self,
        id: &str,
        who: &Answerer<'_>,
        answer: Vec<String>,
        key: Option<&str>,
        traceparent: Option<&str>,
    ) -> Result<AnswerOutcome> {
        let mut taken = self.take_wait::<Question>(id, who.user, who.admin).await?;
        let question = taken.wait.clone();
        let now = taken.now;
        match question.status {
            QuestionStatus::Pending => {}
            QuestionStatus::Expired => {
                return Ok(AnswerOutcome::Expired {
                    question,
                    resume: false,
                });
            }
            QuestionStatus::Answered if key.is_some() && question.answer_key.as_deref() == key => {
                return Ok(AnswerOutcome::Answered {
                    question,
                    resume: false,
                });
            }
            QuestionStatus::Answered => return Ok(AnswerOutcome::AlreadyAnswered(question)),
        }
        if taken.run_status.is_none_or(|s| s.is_terminal()) {
            return Ok(AnswerOutcome::RunEnded(question));
        }
        let expired = question.expires_at <= now;
        let answer = if expired {
            Vec::new()
        } else {
            match question.accept(answer) {
                Ok(a) => a,
                Err(why) => return Ok(AnswerOutcome::Invalid { question, why }),
            }
        };
        let (new_status, by, stored) = if expired {
            (QuestionStatus::Expired, None, None)
        } else {
            (
                QuestionStatus::Answered,
                Some(who.name),
                Some(serde_json::Value::from(answer).to_string()),
            )
        };
        sqlx::query(
            "update questions set status = $1, answer = $2, answered_by = $3, answered_at = $4, answer_key = $5
             where id = $6",
        )
        .bind(new_status.as_str())
        .bind(stored)
        .bind(by)
        .bind(now)
        .bind(key.filter(|_| !expired))
        .bind(id)
        .execute(&mut *taken.tx)
        .await?;
        let (question, resume) = taken.settle(id, traceparent.filter(|_| !expired)).await?;
        Ok(if expired {
            AnswerOutcome::Expired { question, resume }
        } else {
            AnswerOutcome::Answered { question, resume }
        })
    }
}

impl Store {
    /// Records the Lark card that asks `question`.
    pub async fn record_lark_question_card(&self, question: &str, message_id: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update questions set lark_message_id = $1 where id = $2")
            .bind(message_id)
            .bind(question)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// The Lark card that asks `question`, once recorded.
    pub async fn lark_question_card(&self, question: &str) -> Result<Option<String>> {
        let row = sqlx::query("select lark_message_id from questions where id = $1")
            .bind(question)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row
            .map(|r| get_opt_str(&r, "lark_message_id"))
            .transpose()?
            .flatten())
    }
}

/// A step's questions, in the transaction that stores the step (`waits.rs`).
pub(super) async fn insert_questions(
    tx: &mut crate::TxConn,
    asked: &Asked<'_>,
    questions: &[NewQuestion],
) -> Result<()> {
    for q in questions {
        sqlx::query(
            "insert into questions (id, run_id, session_id, user_id, step, call_id, question, options, multiple, allow_text, status, created_at, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12)",
        )
        .bind(&q.id)
        .bind(&asked.run.0)
        .bind(asked.session)
        .bind(asked.user)
        .bind(asked.step as i64)
        .bind(&q.call_id)
        .bind(&q.question)
        .bind(serde_json::Value::from(q.options.clone()).to_string())
        .bind(i64::from(q.multiple))
        .bind(i64::from(q.allow_text))
        .bind(asked.now)
        .bind(q.expires_at)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

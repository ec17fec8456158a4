//! Questions the agent asks a person (`ask_user`): the run waits for the first
//! answer (docs/protocol.md, "Questions").

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::states::QuestionStatus;

/// A question the agent asked, waiting for (or given) its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuestionDto {
    pub id: String,
    pub run_id: String,
    pub session_id: String,
    pub step: u32,
    pub call_id: String,
    pub question: String,
    /// Choices offered; empty for a free answer.
    pub options: Vec<String>,
    /// Several options may be chosen.
    pub multiple: bool,
    /// A typed answer is accepted besides the options.
    pub allow_text: bool,
    pub status: QuestionStatus,
    /// The chosen options or the typed answer; empty until answered.
    pub answer: Vec<String>,
    /// Who answered (a username).
    pub answered_by: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub answered_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuestionList {
    pub questions: Vec<QuestionDto>,
}

/// One answer (a typed text or one option), or several options when the
/// question allows `multiple`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AnswerValue {
    One(String),
    Many(Vec<String>),
}

impl AnswerValue {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            AnswerValue::One(s) => vec![s],
            AnswerValue::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerQuestionRequest {
    pub answer: AnswerValue,
}

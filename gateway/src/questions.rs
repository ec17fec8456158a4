//! Questions the agent asked (docs/protocol.md, "Questions"): the open questions
//! of a session, one question, and its answer. An answer re-enqueues the
//! waiting run; the worker that claims it publishes `question_answered` and
//! carries on. Only the session's owner (or an admin) may answer; to anyone
//! else a question does not exist.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use weft_shared::api::{AnswerQuestionRequest, QuestionDto, QuestionList};
use weft_store::{AnswerOutcome, Question};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::sessions::parse_session_id;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/questions", get(list_questions))
        .route("/v1/runs/{id}/questions", get(run_questions))
        .route(
            "/v1/questions/{id}",
            get(get_question).post(answer_question),
        )
}

/// The session's questions waiting for an answer.
#[utoipa::path(get, path = "/v1/sessions/{id}/questions",
    responses((status = 200, body = QuestionList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_questions(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<QuestionList>> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    Ok(listed(&state.store.session_questions(&session).await?))
}

/// Every question a run asked, answered or not, in the order asked: what a
/// finished reply shows in place of its `ask_user` calls.
#[utoipa::path(get, path = "/v1/runs/{id}/questions",
    responses((status = 200, body = QuestionList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn run_questions(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<QuestionList>> {
    let run = crate::runs::parse_run_id(&id)?;
    state.store.get_run(&user.id, &run).await?;
    Ok(listed(&state.store.run_questions(&run).await?))
}

/// One question, answered or not.
#[utoipa::path(get, path = "/v1/questions/{id}",
    responses((status = 200, body = QuestionDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_question(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<QuestionDto>> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let q = state.store.question(&id, &user.id, user.is_admin()).await?;
    Ok(Json(q.to_dto()))
}

/// Answer a question: a text, one of its options, or several when it allows
/// `multiple`. The first answer stands: answering again, or after it
/// expired, is a 409 that says what stands; an answer the question does not
/// take (not one of its options, several for one) is a 422 that says why.
#[utoipa::path(post, path = "/v1/questions/{id}", request_body = AnswerQuestionRequest,
    responses((status = 200, body = QuestionDto),
        (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "already_answered, expired or run_ended", body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn answer_question(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<AnswerQuestionRequest>,
) -> ApiResult<Json<QuestionDto>> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let outcome = state
        .runs
        .answer(
            &id,
            &user.id,
            user.is_admin(),
            &user.username,
            req.answer.into_vec(),
            None,
        )
        .await?;
    match outcome {
        AnswerOutcome::Answered { question, .. } => Ok(Json(question.to_dto())),
        AnswerOutcome::AlreadyAnswered(q) => Err(ApiError::ConflictWith {
            code: "already_answered",
            message: format!(
                "already answered{}: {}",
                q.answered_by
                    .as_deref()
                    .map(|by| format!(" by {by}"))
                    .unwrap_or_default(),
                q.answer.join(", ")
            ),
        }),
        AnswerOutcome::Expired { .. } => Err(ApiError::ConflictWith {
            code: "expired",
            message: "this question expired; the agent was told nobody answered".into(),
        }),
        AnswerOutcome::RunEnded(_) => Err(ApiError::ConflictWith {
            code: "run_ended",
            message: "the run ended before an answer".into(),
        }),
        AnswerOutcome::Invalid { why, .. } => Err(ApiError::Validation(why)),
    }
}

fn listed(questions: &[Question]) -> Json<QuestionList> {
    Json(QuestionList {
        questions: questions.iter().map(Question::to_dto).collect(),
    })
}

//! Undo, redo, regenerate, edit and the alternatives of the newest turn, and the
//! long-conversation controls (`/compact`, the stored summary). The store does
//! the work in one transaction under the session's lock; everything is refused
//! (409 `run_active`) while a run is active in the session.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_shared::api::{AlternativeDto, AlternativeList, EditRequest, SummaryDto, TurnResult};
use weft_shared::ids::RunId;
use weft_shared::time::rfc3339;
use weft_store::TurnOutcome;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::sessions::parse_session_id;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/undo", post(undo))
        .route("/v1/sessions/{id}/redo", post(redo))
        .route("/v1/sessions/{id}/regenerate", post(regenerate))
        .route("/v1/sessions/{id}/edit", post(edit))
        .route("/v1/sessions/{id}/alternatives", get(alternatives))
        .route("/v1/sessions/{id}/alternatives/{run_id}", post(choose))
        .route("/v1/sessions/{id}/compact", post(compact))
        .route("/v1/sessions/{id}/summary", get(summary))
}

/// The HTTP answer to a turn operation; `nothing` names what there was none of.
async fn answer(
    state: &AppState,
    outcome: TurnOutcome,
    nothing: &'static str,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let limits = &state.config().limits;
    match outcome {
        TurnOutcome::Done { run } => Ok((StatusCode::OK, Json(TurnResult { run_id: run.0 }))),
        TurnOutcome::Started { run } => {
            state.runs.enqueue(run.clone()).await;
            Ok((StatusCode::ACCEPTED, Json(TurnResult { run_id: run.0 })))
        }
        TurnOutcome::RunActive { run } => Err(ApiError::RunActive(format!(
            "a run is active in this session ({run}); wait for it or cancel it first"
        ))),
        // Only the Lark bot asks for the asker's own turn.
        TurnOutcome::NotYours { .. } => Err(ApiError::Forbidden),
        TurnOutcome::Nothing => Err(ApiError::ConflictWith {
            code: nothing,
            message: nothing.replace('_', " "),
        }),
        TurnOutcome::TooManyActive => Err(ApiError::RateLimited {
            message: format!(
                "you already have {} active runs; wait for one to finish",
                limits.active_runs_per_user
            ),
            retry_after_secs: 5,
        }),
        TurnOutcome::RateLimited { retry_after_secs } => Err(ApiError::RateLimited {
            message: format!(
                "at most {} runs per minute",
                limits.runs_per_minute_per_user
            ),
            retry_after_secs,
        }),
    }
}

/// Remove the newest turn (your message and everything the agent did for it)
/// from the conversation; `redo` brings it back.
#[utoipa::path(post, path = "/v1/sessions/{id}/undo",
    responses((status = 200, body = TurnResult), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "run_active or nothing_to_undo", body = weft_shared::api::ErrorEnvelope)))]
pub async fn undo(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let outcome = state
        .store
        .undo_turn(&user.id, &parse_session_id(&id)?, None)
        .await?;
    answer(&state, outcome, "nothing_to_undo").await
}

/// Bring back the turn undone last (refused once something was said after it).
#[utoipa::path(post, path = "/v1/sessions/{id}/redo",
    responses((status = 200, body = TurnResult), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "run_active or nothing_to_redo", body = weft_shared::api::ErrorEnvelope)))]
pub async fn redo(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let outcome = state
        .store
        .redo_turn(&user.id, &parse_session_id(&id)?)
        .await?;
    answer(&state, outcome, "nothing_to_redo").await
}

/// Answer your last message again; the reply shown so far is kept as an
/// alternative (`GET …/alternatives`).
#[utoipa::path(post, path = "/v1/sessions/{id}/regenerate",
    responses((status = 202, body = TurnResult), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "run_active or nothing_to_regenerate", body = weft_shared::api::ErrorEnvelope),
        (status = 429, body = weft_shared::api::ErrorEnvelope)))]
pub async fn regenerate(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let session = parse_session_id(&id)?;
    state
        .check_session_choice(&user, &user.id, &session, None, None)
        .await?;
    let outcome = state
        .store
        .regenerate_turn(
            &user.id,
            &session,
            None,
            None,
            &weft_store::RunLimits::from(&state.config().limits),
        )
        .await?;
    answer(&state, outcome, "nothing_to_regenerate").await
}

/// Replace the text of your last message and answer it again.
#[utoipa::path(post, path = "/v1/sessions/{id}/edit", request_body = EditRequest,
    responses((status = 202, body = TurnResult), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "run_active or nothing_to_edit", body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn edit(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<EditRequest>,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let max = state.config().limits.message_chars as usize;
    if req.text.trim().is_empty() || req.text.chars().count() > max {
        return Err(ApiError::Validation(format!(
            "text must be 1 to {max} characters"
        )));
    }
    let session = parse_session_id(&id)?;
    state
        .check_session_choice(&user, &user.id, &session, None, None)
        .await?;
    let outcome = state
        .store
        .regenerate_turn(
            &user.id,
            &session,
            Some(&req.text),
            None,
            &weft_store::RunLimits::from(&state.config().limits),
        )
        .await?;
    answer(&state, outcome, "nothing_to_edit").await
}

/// The replies of the newest turn: the one shown and the ones it replaced.
#[utoipa::path(get, path = "/v1/sessions/{id}/alternatives",
    responses((status = 200, body = AlternativeList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn alternatives(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AlternativeList>> {
    let list = state
        .store
        .alternatives(&user.id, &parse_session_id(&id)?)
        .await?;
    Ok(Json(AlternativeList {
        alternatives: list
            .into_iter()
            .map(|a| AlternativeDto {
                run_id: a.run.0,
                reply: a.reply,
                user_text: a.user_text,
                shown: a.shown,
                created_at: rfc3339(a.created_at),
            })
            .collect(),
    }))
}

/// Show another reply of the newest turn.
#[utoipa::path(post, path = "/v1/sessions/{id}/alternatives/{run_id}",
    responses((status = 200, body = TurnResult), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, body = weft_shared::api::ErrorEnvelope)))]
pub async fn choose(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<TurnResult>)> {
    let run = RunId::parse(&run_id).ok_or(ApiError::NotFound)?;
    let outcome = state
        .store
        .choose_alternative(&user.id, &parse_session_id(&id)?, &run)
        .await?;
    answer(&state, outcome, "nothing_to_choose").await
}

/// Summarise the conversation's older turns before the next reply (`/compact`).
#[utoipa::path(post, path = "/v1/sessions/{id}/compact",
    responses((status = 202), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn compact(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    state.store.request_compact(&session).await?;
    Ok(StatusCode::ACCEPTED)
}

/// The stored summary of the session's older messages (404 when there is none).
#[utoipa::path(get, path = "/v1/sessions/{id}/summary",
    responses((status = 200, body = SummaryDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn summary(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<SummaryDto>> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    let s = state
        .store
        .session_summary(&session)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(SummaryDto {
        summary: s.text,
        messages: s.messages,
        model: s.model,
        created_at: rfc3339(s.created_at),
    }))
}

//! Runs over HTTP: status, event streams (re-attach), cancel (through the run
//! service, `weft_runs`), and waiting for a run's end (`wait: true`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use weft_shared::api::{RunDto, RunResult};
use weft_shared::bus::{AttachItem, attach};
use weft_shared::ids::{RunId, UserId};

use crate::AppState;
use crate::auth::Caller;
use crate::auth::PresentedToken;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::sse::{AfterQuery, IDLE, attach_to_run, resume_point};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/runs/{id}", get(get_run))
        .route("/v1/runs/{id}/events", get(events))
        .route("/v1/runs/{id}/cancel", post(cancel))
}

pub fn parse_run_id(id: &str) -> ApiResult<RunId> {
    RunId::parse(id).ok_or(ApiError::NotFound)
}

/// A run's status, attempt, usage and timing.
#[utoipa::path(get, path = "/v1/runs/{id}", responses((status = 200, body = RunDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_run(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RunDto>> {
    let run = state.store.get_run(&user.id, &parse_run_id(&id)?).await?;
    Ok(Json(run.to_dto()))
}

/// The run's events as SSE: replay after `Last-Event-ID` (or `?after=`), then live.
#[utoipa::path(get, path = "/v1/runs/{id}/events", params(AfterQuery),
    responses((status = 200, content_type = "text/event-stream", body = weft_shared::event::RunEventMessage),
        (status = 400, description = "Last-Event-ID or after is not an integer from 0 to 2^53 - 1", body = weft_shared::api::ErrorEnvelope),
        (status = 410, body = weft_shared::api::ErrorEnvelope)))]
pub async fn events(
    State(state): State<AppState>,
    Caller(user): Caller,
    PresentedToken(token_hash): PresentedToken,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AfterQuery>,
) -> ApiResult<Response> {
    let after = resume_point(&headers, q.after)?;
    attach_to_run(&state, &user.id, token_hash, &parse_run_id(&id)?, after).await
}

/// Cancel a run (idempotent). Its partial text is kept as the reply.
#[utoipa::path(post, path = "/v1/runs/{id}/cancel", responses((status = 202, body = RunDto)))]
pub async fn cancel(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<RunDto>)> {
    let id = parse_run_id(&id)?;
    state.runs.cancel(&user.id, &id, "user").await?;
    let run = state.store.get_run(&user.id, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(run.to_dto())))
}

/// Wait for a run to end and return its reply (`wait: true`, `/v1/chat`).
pub async fn wait_for_result(
    state: &AppState,
    user: &UserId,
    run_id: &RunId,
) -> ApiResult<RunResult> {
    let frames = attach(state.bus.clone(), run_id.clone(), 0, IDLE)
        .await
        .map_err(ApiError::internal)?;
    let mut frames = std::pin::pin!(frames.take_until(state.shutdown.clone().cancelled_owned()));
    loop {
        let rec = match frames.next().await {
            Some(AttachItem::Frame(f)) if f.is_terminal() => break,
            Some(AttachItem::Frame(_)) => continue,
            Some(AttachItem::Idle) => state.store.get_run(user, run_id).await?,
            None => {
                return Err(ApiError::Unavailable(
                    "the server is shutting down; fetch the run later".into(),
                ));
            }
        };
        if rec.status.is_terminal() {
            break;
        }
    }
    let rec = state.store.get_run(user, run_id).await?;
    let content = state.store.run_answer(&rec).await?;
    Ok(RunResult {
        run_id: rec.id.0.clone(),
        message_id: rec.final_message_id.clone(),
        session_id: rec.session_id.0.clone(),
        status: rec.status,
        content,
        model: rec.model.clone(),
        usage: rec.usage,
        error: rec.error.clone(),
    })
}

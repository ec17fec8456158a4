//! Runs: status, event streams (re-attach), cancel — and the helpers the send
//! paths share (enqueue, announce a cancel, wait for the end).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use weft_shared::api::{RunDto, RunResult};
use weft_shared::bus::{AttachItem, attach};
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::{MessageId, RunId, UserId};
use weft_shared::job::RunJob;
use weft_shared::store::{ActiveRun, CancelOutcome};

use crate::AppState;
use crate::auth::Caller;
use crate::auth::PresentedToken;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::sse::{AfterQuery, IDLE, attach_to_run, resume_point, terminal_from_record};

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
    if let CancelOutcome::Cancelled { run, followup } = state
        .store
        .cancel_run(&user.id, &id, "user", &state.config().limits.run_limits())
        .await?
    {
        announce_cancel(&state, &run).await;
        if let Some(next) = followup {
            enqueue(&state, next).await;
        }
    }
    let run = state.store.get_run(&user.id, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(run.to_dto())))
}

/// Tell the world a run was cancelled: its worker (which then emits `cancelled`),
/// or — for a run no worker had claimed — its stream directly.
pub async fn announce_cancel(state: &AppState, run: &ActiveRun) {
    if !run.was_queued {
        if let Err(e) = state.bus.request_cancel(&run.id).await {
            tracing::warn!(run.id = %run.id, error = %e, "publishing cancel failed; the worker sees it at its next heartbeat");
        }
        return;
    }
    let Ok(rec) = state.store.get_run_unscoped(&run.id).await else {
        return;
    };
    let seq = state.bus.last_seq(&run.id).await.unwrap_or(0) + 1;
    if let Some(ev) = terminal_from_record(&rec, seq) {
        let _ = state.bus.publish(&run.id, &Frame::encode(&ev)).await;
        let _ = state
            .bus
            .retire(
                &run.id,
                std::time::Duration::from_secs(state.config().events.retention_secs),
            )
            .await;
    }
}

/// Runs deleted with their session or user while active end `cancelled`
/// (`by: "deleted"`). A running run's worker is told to stop and emits the
/// terminal event itself (it alone numbers the run's events; its end finds the
/// row gone); for any other run nobody would, so it is published here. Either
/// way the log is retired now, so it expires even if that worker dies first.
pub async fn end_deleted_runs(state: &AppState, runs: &[ActiveRun]) {
    let retention = std::time::Duration::from_secs(state.config().events.retention_secs);
    for run in runs {
        if run.was_queued {
            let seq = state.bus.last_seq(&run.id).await.unwrap_or(0) + 1;
            let ev = RunEvent {
                run_id: run.id.clone(),
                seq,
                ts: weft_shared::time::now_ms(),
                kind: EventKind::Cancelled {
                    by: "deleted".into(),
                },
            };
            if let Err(e) = state.bus.publish(&run.id, &Frame::encode(&ev)).await {
                tracing::warn!(run.id = %run.id, error = %e, "publishing the end of a deleted run failed");
            }
        } else if let Err(e) = state.bus.request_cancel(&run.id).await {
            tracing::warn!(run.id = %run.id, error = %e, "publishing cancel failed; the worker sees it at its next heartbeat");
        }
        if let Err(e) = state.bus.retire(&run.id, retention).await {
            tracing::warn!(run.id = %run.id, error = %e, "retiring a deleted run's log failed");
        }
    }
}

/// Enqueue a run's job; a failure is not fatal (the reaper re-enqueues queued runs).
pub async fn enqueue(state: &AppState, run_id: RunId) {
    metrics::counter!("weft_runs_created_total").increment(1);
    if let Err(e) = state.queue.enqueue(traced_job(&run_id)).await {
        tracing::warn!(run.id = %run_id, error = %e, "enqueue failed; the reaper will enqueue the run");
    }
}

/// Enqueue an existing run again (a decided approval): no new run is counted.
pub async fn requeue(state: &AppState, run_id: RunId) {
    if let Err(e) = state.queue.enqueue(traced_job(&run_id)).await {
        tracing::warn!(run.id = %run_id, error = %e, "enqueue failed; the reaper will enqueue the run");
    }
}

/// A job carrying the current request's trace context: the worker continues
/// the run's trace (stored with the run) and links the request that resumed it.
fn traced_job(run_id: &RunId) -> RunJob {
    RunJob {
        traceparent: weft_shared::telemetry::current_traceparent(),
        ..RunJob::new(run_id.clone())
    }
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
    let content = match &rec.final_message_id {
        Some(id) => state
            .store
            .get_message(&MessageId(id.clone()))
            .await?
            .map(|m| m.content)
            .unwrap_or_default(),
        None => String::new(),
    };
    Ok(RunResult {
        run_id: rec.id.0.clone(),
        message_id: rec.final_message_id.clone(),
        session_id: rec.session_id.0.clone(),
        status: rec.status.as_str().into(),
        content,
        model: rec.model.clone(),
        usage: rec.usage,
        error: rec.error.clone(),
    })
}

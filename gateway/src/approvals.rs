//! Approvals (docs/protocol.md, "Approvals"): the pending tool calls of a session
//! and the decision on one. A decision re-enqueues the waiting run; the worker that
//! claims it publishes `approval_decided` and carries on. Only the session's
//! owner (or an admin) may decide; to anyone else an approval does not exist.

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_shared::api::{ApprovalDecision, ApprovalDto, ApprovalList, DecideApprovalRequest};
use weft_store::{Approval, DecideOutcome, Decision};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::sessions::parse_session_id;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/approvals", get(list_approvals))
        .route("/v1/approvals/{id}", post(decide_approval))
}

/// The session's tool calls waiting for a decision.
#[utoipa::path(get, path = "/v1/sessions/{id}/approvals",
    responses((status = 200, body = ApprovalList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_approvals(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ApprovalList>> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    let approvals = state.store.session_approvals(&session).await?;
    Ok(Json(ApprovalList {
        approvals: approvals.iter().map(Approval::to_dto).collect(),
    }))
}

/// Approve or deny a waiting tool call (`always`: approve, and allow the tool
/// for the rest of the session). Deciding twice, or after it expired, is a 409
/// that says what stands.
#[utoipa::path(post, path = "/v1/approvals/{id}", request_body = DecideApprovalRequest,
    responses((status = 200, body = ApprovalDto),
        (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "already_decided, expired or run_ended", body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn decide_approval(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<DecideApprovalRequest>,
) -> ApiResult<Json<ApprovalDto>> {
    let decision = match req.decision {
        ApprovalDecision::Approve => Decision::Approve,
        ApprovalDecision::Deny => Decision::Deny,
        ApprovalDecision::Always => Decision::Always,
    };
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let outcome = state
        .runs
        .decide(&id, &user.id, user.is_admin(), &user.username, decision)
        .await?;
    match outcome {
        DecideOutcome::Decided { approval, .. } => Ok(Json(approval.to_dto())),
        DecideOutcome::AlreadyDecided(approval) => Err(ApiError::ConflictWith {
            code: "already_decided",
            message: match &approval.decided_by {
                Some(by) => format!("already {} by {by}", approval.status.as_str()),
                None => format!("already {}", approval.status.as_str()),
            },
        }),
        DecideOutcome::Expired { .. } => Err(ApiError::ConflictWith {
            code: "expired",
            message: "this approval expired and counts as denied".into(),
        }),
        DecideOutcome::RunEnded(_) => Err(ApiError::ConflictWith {
            code: "run_ended",
            message: "the run ended before a decision".into(),
        }),
    }
}

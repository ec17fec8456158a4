//! Plans the agent proposed in plan mode (docs/protocol.md, "Plans"): the open
//! plans of a session, a run's plans, one plan, and its decision; and the
//! tasks a run delegated (the other run-scoped read a reload needs). A decision
//! re-enqueues the waiting run; the worker that claims it publishes
//! `plan_decided` and carries on (approved: with every tool; revised: a new
//! plan) or ends the run (rejected). Only the session's owner (or an admin)
//! may decide; to anyone else a plan does not exist.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use weft_shared::api::{DecidePlanRequest, PlanDto, PlanList};
use weft_store::{Answerer, Plan, PlanOutcome};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::sessions::parse_session_id;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/plans", get(list_plans))
        .route("/v1/runs/{id}/plans", get(run_plans))
        .route("/v1/runs/{id}/delegations", get(run_delegations))
        .route("/v1/plans/{id}", get(get_plan).post(decide_plan))
}

/// The session's plans waiting for a decision.
#[utoipa::path(get, path = "/v1/sessions/{id}/plans",
    responses((status = 200, body = PlanList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_plans(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanList>> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    Ok(listed(&state.store.session_plans(&session).await?))
}

/// Every plan a run proposed, whatever became of it, in the order proposed:
/// what a finished reply shows again after a reload.
#[utoipa::path(get, path = "/v1/runs/{id}/plans",
    responses((status = 200, body = PlanList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn run_plans(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanList>> {
    let run = crate::runs::parse_run_id(&id)?;
    state.store.get_run(&user.id, &run).await?;
    Ok(listed(&state.store.run_plans(&run).await?))
}

/// Every task a run handed to other agents (`delegate`), in the order
/// made, with its child's session and run: what a finished reply shows again
/// after a reload (docs/protocol.md, "Delegation").
#[utoipa::path(get, path = "/v1/runs/{id}/delegations",
    responses((status = 200, body = weft_shared::api::DelegationList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn run_delegations(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<weft_shared::api::DelegationList>> {
    let run = crate::runs::parse_run_id(&id)?;
    state.store.get_run(&user.id, &run).await?;
    let delegations = state.store.run_delegations(&run).await?;
    Ok(Json(weft_shared::api::DelegationList {
        delegations: delegations.iter().map(|d| d.to_dto()).collect(),
    }))
}

/// One plan, decided or not.
#[utoipa::path(get, path = "/v1/plans/{id}",
    responses((status = 200, body = PlanDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_plan(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanDto>> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let p = state.store.plan(&id, &user.id, user.is_admin()).await?;
    Ok(Json(p.to_dto()))
}

/// Decide a plan: `approve` (the run carries it out with every tool),
/// `reject` (the run ends, the plan its reply) or `revise` with a comment
/// saying what to change (the agent proposes a new plan). The first decision
/// stands: deciding again, or after it expired, is a 409 that names what
/// stands; a revise without a comment is a 422.
#[utoipa::path(post, path = "/v1/plans/{id}", request_body = DecidePlanRequest,
    responses((status = 200, body = PlanDto),
        (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, description = "already_decided, expired or run_ended", body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn decide_plan(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<DecidePlanRequest>,
) -> ApiResult<Json<PlanDto>> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let who = Answerer {
        user: &user.id,
        admin: user.is_admin(),
        name: &user.username,
    };
    let outcome = state
        .runs
        .decide_plan(&id, &who, req.decision, req.comment, None)
        .await?;
    match outcome {
        PlanOutcome::Decided { plan, .. } => Ok(Json(plan.to_dto())),
        PlanOutcome::AlreadyDecided(p) => Err(ApiError::ConflictWith {
            code: "already_decided",
            message: format!(
                "already {}{}",
                p.status.as_str(),
                p.decided_by
                    .as_deref()
                    .map(|by| format!(" by {by}"))
                    .unwrap_or_default()
            ),
        }),
        PlanOutcome::Expired { .. } => Err(ApiError::ConflictWith {
            code: "expired",
            message: "this plan expired undecided; the run ended with it as its reply".into(),
        }),
        PlanOutcome::RunEnded(_) => Err(ApiError::ConflictWith {
            code: "run_ended",
            message: "the run ended before a decision".into(),
        }),
        PlanOutcome::Invalid { why, .. } => Err(ApiError::Validation(why)),
    }
}

fn listed(plans: &[Plan]) -> Json<PlanList> {
    Json(PlanList {
        plans: plans.iter().map(Plan::to_dto).collect(),
    })
}

//! `PUT /v1/admin/users/{id}/lark`: link a Lark identity to an account (the API
//! twin of `weft admin user link-lark`).

use axum::extract::{Path, State};
use axum::routing::put;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weft_shared::api::UserDto;
use weft_shared::ids::UserId;
use weft_store::LinkOutcome;

use crate::AppState;
use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/admin/users/{id}/lark", put(link))
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct LinkLarkRequest {
    /// The Lark sender's `open_id` (`ou_…`).
    pub open_id: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct LinkedLark {
    pub user: UserDto,
    pub open_id: String,
    /// Sessions of the auto-created `lark:<open_id>` user that moved to this user.
    pub moved_sessions: u64,
}

/// Link a Lark identity to a user (admin only): that person's Lark messages are
/// then theirs, and their earlier Lark sessions move over.
#[utoipa::path(put, path = "/v1/admin/users/{id}/lark", request_body = LinkLarkRequest,
    responses((status = 200, body = LinkedLark), (status = 404, body = weft_shared::api::ErrorEnvelope),
              (status = 409, body = weft_shared::api::ErrorEnvelope), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn link(
    State(state): State<AppState>,
    Admin(_admin): Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<LinkLarkRequest>,
) -> ApiResult<Json<LinkedLark>> {
    let id = UserId::parse(&id).ok_or(ApiError::NotFound)?;
    let open_id = req.open_id.trim();
    if open_id.is_empty()
        || open_id.len() > 100
        || !open_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(ApiError::Validation(
            "open_id must be a Lark open_id such as ou_…".into(),
        ));
    }
    match state.store.link_lark(&id, open_id).await? {
        LinkOutcome::Linked { moved_sessions } => Ok(Json(LinkedLark {
            user: state.store.get_user(&id).await?.to_dto(),
            open_id: open_id.to_owned(),
            moved_sessions,
        })),
        LinkOutcome::TakenBy(other) => Err(ApiError::Conflict(format!(
            "{open_id} is already linked to {other:?}"
        ))),
    }
}

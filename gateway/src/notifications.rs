//! `/v1/me/notifications` (docs/schedules.md, "Notifications"): the caller's
//! inbox — scheduled runs that ended or wait for them — and marking it read.
//! The web page's bell polls the unread count.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use weft_shared::api::{MarkReadRequest, NotificationDto, NotificationList};
use weft_shared::time::rfc3339;
use weft_store::NotificationRecord;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, page_limit};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me/notifications", get(list_notifications))
        .route("/v1/me/notifications/read", post(mark_notifications_read))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationsQuery {
    /// Only those not read yet.
    #[serde(default)]
    pub unread: bool,
    /// 1–200 (default 50).
    pub limit: Option<i64>,
}

/// The caller's notifications, newest first, and the unread count.
#[utoipa::path(get, path = "/v1/me/notifications", params(NotificationsQuery),
    responses((status = 200, body = NotificationList)))]
pub async fn list_notifications(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiQuery(q): ApiQuery<NotificationsQuery>,
) -> ApiResult<Json<NotificationList>> {
    let limit = page_limit(q.limit, 50, 200)?;
    let (list, unread) = state.store.notifications(&user.id, q.unread, limit).await?;
    Ok(Json(NotificationList {
        notifications: list.iter().map(to_dto).collect(),
        unread,
    }))
}

/// Mark notifications read: the ids given (others' are ignored), or all.
#[utoipa::path(post, path = "/v1/me/notifications/read", request_body = MarkReadRequest,
    responses((status = 204)))]
pub async fn mark_notifications_read(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<MarkReadRequest>,
) -> ApiResult<StatusCode> {
    state
        .store
        .mark_notifications_read(&user.id, req.ids.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

fn to_dto(n: &NotificationRecord) -> NotificationDto {
    NotificationDto {
        id: n.id.clone(),
        kind: n.kind,
        title: n.title.clone(),
        body: n.body.clone(),
        session_id: n.session_id.clone(),
        run_id: n.run_id.clone(),
        schedule_id: n.schedule_id.clone(),
        created_at: rfc3339(n.created_at),
        read_at: n.read_at.map(rfc3339),
    }
}

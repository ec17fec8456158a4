//! A session's todo list (docs/protocol.md, "Todos"): what the agent keeps with
//! `todo_update`, as it stands. Only the session's owner (or an admin) reads it.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use weft_shared::api::TodoList;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::sessions::parse_session_id;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/sessions/{id}/todos", get(session_todos))
}

/// The session's todo list as it stands (undone turns' changes left out).
#[utoipa::path(get, path = "/v1/sessions/{id}/todos",
    responses((status = 200, body = TodoList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn session_todos(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<TodoList>> {
    let session = parse_session_id(&id)?;
    state.store.get_session(&user.id, &session).await?;
    let held = state.store.session_todos(&session).await?;
    Ok(Json(match held {
        Some(v) => TodoList {
            items: v.items,
            updated_at: Some(weft_shared::time::rfc3339(v.updated_at)),
        },
        None => TodoList {
            items: Vec::new(),
            updated_at: None,
        },
    }))
}

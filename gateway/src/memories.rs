//! Memory over HTTP (docs/memory.md): the signed-in person's own memories —
//! list (by kind, or ranked against `q`), add, change, pin, delete, forget
//! everything, export, and their switch. Every route is the caller's alone:
//! another person's memory id is 404, and no route lets an admin read anyone
//! else's (an admin deletes them only with the user).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use axum::{Json, Router};
use weft_shared::api::{
    CreateMemory, MemoriesForgotten, MemoryDto, MemoryKind, MemoryList, MemorySwitch, PatchMemory,
};
use weft_shared::remember;
use weft_store::{AuthUser, Memory, MemoryChange, NewMemory};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/me/memories",
            get(list_memories)
                .post(add_memory)
                .delete(forget_everything),
        )
        .route("/v1/me/memories/export", get(export_memories))
        .route(
            "/v1/me/memories/{id}",
            patch(update_memory).delete(delete_memory),
        )
        .route("/v1/me/memory", patch(switch_memory))
}

/// `GET /v1/me/memories` filters.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemoryQuery {
    /// Only memories of this kind.
    kind: Option<MemoryKind>,
    /// Only memories sharing words with this text, best match first.
    q: Option<String>,
}

fn checked(text: &str) -> ApiResult<&str> {
    remember::check(text).map_err(|e| ApiError::Validation(e.to_string()))
}

async fn listing(state: &AppState, user: &AuthUser, q: &MemoryQuery) -> ApiResult<MemoryList> {
    let mut memories = state.store.memories(&user.id, q.kind).await?;
    if let Some(query) = q.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        memories = weft_knowledge::recall::related(&memories, |m| &m.text, query, memories.len())
            .into_iter()
            .cloned()
            .collect();
    }
    Ok(MemoryList {
        memories: memories.iter().map(Memory::to_dto).collect(),
        enabled: state.store.memory_enabled(&user.id).await?,
        available: state.config().memory.enabled,
    })
}

/// Your memories: pinned first, then the most recently changed (best match
/// first with `q`), and whether memory is on.
#[utoipa::path(get, path = "/v1/me/memories", params(MemoryQuery),
    responses((status = 200, body = MemoryList), (status = 400, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_memories(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiQuery(q): ApiQuery<MemoryQuery>,
) -> ApiResult<Json<MemoryList>> {
    Ok(Json(listing(&state, &user, &q).await?))
}

/// Everything the assistant remembers about you, as a JSON file.
#[utoipa::path(get, path = "/v1/me/memories/export", responses((status = 200, body = MemoryList)))]
pub async fn export_memories(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Response> {
    let list = listing(&state, &user, &MemoryQuery::default()).await?;
    let mut resp = Json(list).into_response();
    resp.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"weft-memories.json\""),
    );
    Ok(resp)
}

/// Remember something (by hand: its source is `manual`). 422 for an empty or
/// over-long text or one that looks like a secret; 413 past `memory.max_per_user`.
#[utoipa::path(post, path = "/v1/me/memories", request_body = CreateMemory,
    responses((status = 201, body = MemoryDto), (status = 413, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn add_memory(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateMemory>,
) -> ApiResult<(StatusCode, Json<MemoryDto>)> {
    let text = checked(&req.text)?;
    let memory = state
        .store
        .add_memory(
            &user.id,
            &NewMemory {
                kind: req.kind,
                text,
                pinned: req.pinned,
                source_session_id: None,
                source_message_id: None,
                max_per_user: state.config().memory.max_per_user,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(memory.to_dto())))
}

/// Change a memory's text, kind or pin.
#[utoipa::path(patch, path = "/v1/me/memories/{id}", request_body = PatchMemory,
    responses((status = 200, body = MemoryDto), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn update_memory(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PatchMemory>,
) -> ApiResult<Json<MemoryDto>> {
    let text = req.text.as_deref().map(checked).transpose()?;
    let change = MemoryChange {
        text,
        kind: req.kind,
        pinned: req.pinned,
    };
    let memory = state.store.update_memory(&user.id, &id, &change).await?;
    Ok(Json(memory.to_dto()))
}

/// Forget one memory: gone from the next run's prompt.
#[utoipa::path(delete, path = "/v1/me/memories/{id}",
    responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_memory(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.store.delete_memory(&user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Forget everything: every memory of yours, at once.
#[utoipa::path(delete, path = "/v1/me/memories", responses((status = 200, body = MemoriesForgotten)))]
pub async fn forget_everything(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<MemoriesForgotten>> {
    let deleted = state.store.delete_memories(&user.id).await?;
    Ok(Json(MemoriesForgotten { deleted }))
}

/// Turn your memory on or off. Off: nothing is remembered or recalled, and
/// what is kept stays until you delete it.
#[utoipa::path(patch, path = "/v1/me/memory", request_body = MemorySwitch,
    responses((status = 200, body = MemorySwitch)))]
pub async fn switch_memory(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<MemorySwitch>,
) -> ApiResult<Json<MemorySwitch>> {
    state
        .store
        .set_memory_enabled(&user.id, req.enabled)
        .await?;
    Ok(Json(req))
}

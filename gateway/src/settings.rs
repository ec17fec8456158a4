//! Config reload and the web settings (admins only; docs/configuration.md, "Config
//! reload"): `POST /v1/admin/reload` reads the config again here and on every
//! replica; `GET/PUT /v1/admin/settings` show and save the sections the web UI
//! edits (models, limits, tool policies and web tools, MCP servers), secrets
//! masked. Validation and the "needs a restart" check come before anything
//! changes: a refused reload or save changes nothing anywhere.

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_config::{Change, ReloadError};
use weft_shared::api::{ConfigChangeDto, ReloadResponse, SaveSettingsRequest, SettingsDto};
use weft_store::reload;

use crate::AppState;
use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/admin/reload", post(reload_config))
        .route("/v1/admin/settings", get(settings).put(save_settings))
}

fn refused(e: ReloadError) -> ApiError {
    match e {
        ReloadError::Invalid(why) => ApiError::Validation(why),
        e @ ReloadError::NeedsRestart(_) => ApiError::ConflictWith {
            code: "needs_restart",
            message: e.to_string(),
        },
    }
}

fn answer(state: &AppState, changes: Vec<Change>) -> Json<ReloadResponse> {
    Json(ReloadResponse {
        changes: changes
            .into_iter()
            .map(|c| ConfigChangeDto {
                key: c.key,
                change: c.change,
            })
            .collect(),
        version: state.live.version(),
    })
}

/// Reads the config again — the file, the environment and the saved
/// settings — validates it, and applies it here and (within 2 s) on every
/// replica. Runs in flight keep the config they started with. 422 names what
/// is wrong and 409 `needs_restart` what only a restart changes; either way
/// nothing changed.
#[utoipa::path(post, path = "/v1/admin/reload", responses(
    (status = 200, body = ReloadResponse),
    (status = 422, body = weft_shared::api::ErrorEnvelope),
    (status = 409, body = weft_shared::api::ErrorEnvelope),
))]
pub async fn reload_config(
    State(state): State<AppState>,
    Admin(admin): Admin,
) -> ApiResult<Json<ReloadResponse>> {
    let changes = reload::reload(&state.store, &state.live, &admin.username)
        .await
        .map_err(refused)?;
    refresh_agents(&state).await;
    log_changes(&admin.username, &changes);
    Ok(answer(&state, changes))
}

/// The settings the web UI edits, as this replica runs them; secrets masked.
#[utoipa::path(get, path = "/v1/admin/settings", responses((status = 200, body = SettingsDto)))]
pub async fn settings(
    State(state): State<AppState>,
    _admin: Admin,
) -> ApiResult<Json<SettingsDto>> {
    let saved = state.store.config_settings().await?;
    Ok(Json(SettingsDto {
        settings: reload::settings_view(&state.live),
        version: saved.as_ref().map_or(0, |s| s.version),
        updated_by: saved.as_ref().and_then(|s| s.updated_by.clone()),
        updated_at: saved.map(|s| weft_shared::time::rfc3339(s.updated_at)),
    }))
}

/// Saves sections of the settings (each replaced whole) over the file and the
/// environment, and applies them everywhere as a reload does. A secret sent
/// back as `••••••` keeps its value.
#[utoipa::path(put, path = "/v1/admin/settings", request_body = SaveSettingsRequest, responses(
    (status = 200, body = ReloadResponse),
    (status = 422, body = weft_shared::api::ErrorEnvelope),
    (status = 409, body = weft_shared::api::ErrorEnvelope),
))]
pub async fn save_settings(
    State(state): State<AppState>,
    Admin(admin): Admin,
    ApiJson(req): ApiJson<SaveSettingsRequest>,
) -> ApiResult<Json<ReloadResponse>> {
    let changes = reload::save_settings(&state.store, &state.live, req.settings, &admin.username)
        .await
        .map_err(refused)?;
    log_changes(&admin.username, &changes);
    Ok(answer(&state, changes))
}

/// The gateway's copy of the agent ids, after the file's agents were written.
async fn refresh_agents(state: &AppState) {
    crate::agents::reload(&state.store, &state.agents).await;
}

fn log_changes(by: &str, changes: &[Change]) {
    tracing::info!(by, changes = %Change::list(changes), "config reloaded");
}

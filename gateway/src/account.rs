//! Tokens and passwords: your own tokens (API tokens and web/login sessions,
//! told apart by `kind`), changing your own password, and (admin) user
//! management, including a user's tokens. Any change of password revokes
//! credentials at once: an admin reset every API and login token of the user (a
//! reset is what one does to a compromised account), the user's own change their
//! other login sessions (keeping the one they are using and their API tokens,
//! which they list and revoke themselves).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{delete, get, patch, post};
use axum::{Json, Router};
use weft_shared::api::{
    ChangePasswordRequest, CreateTokenRequest, CreateUserRequest, CreatedToken, LimitsDto,
    TokenList, UpdateUserRequest, UserDto, UserList,
};
use weft_shared::auth::{new_token, token_hash};
use weft_shared::ids::{TokenId, UserId};
use weft_store::{PasswordChange, Role, TokenKind, TokenRecord};

use crate::AppState;
use crate::auth::{
    Admin, Caller, admit_sign_in, limiter_unavailable, presented_token, validate_password,
};
use crate::client::ClientOrigin;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/tokens", get(list_tokens).post(create_token))
        .route("/v1/tokens/{id}", delete(delete_token))
        .route("/v1/me/password", post(change_password))
        .route("/v1/admin/users", get(list_users).post(create_user))
        .route(
            "/v1/admin/users/{id}",
            patch(update_user).delete(delete_user),
        )
        .route("/v1/admin/users/{id}/tokens", get(list_user_tokens))
        .route(
            "/v1/admin/users/{id}/tokens/{token_id}",
            delete(delete_user_token),
        )
        .route("/v1/admin/limits", get(limits))
}

fn token_list(tokens: &[TokenRecord], current: Option<&str>) -> TokenList {
    TokenList {
        tokens: tokens.iter().map(|t| t.to_dto(current)).collect(),
    }
}

/// Your tokens, of every `kind`: personal API tokens (`api`), web and
/// `/v1/auth/login` sessions (`login`, with `expires_at`; `current` marks the one
/// this request uses), and for the bootstrap admin `bootstrap`. Secrets are never
/// shown again.
#[utoipa::path(get, path = "/v1/tokens", responses((status = 200, body = TokenList)))]
pub async fn list_tokens(
    State(state): State<AppState>,
    Caller(user): Caller,
    origin: ClientOrigin,
    headers: HeaderMap,
) -> ApiResult<Json<TokenList>> {
    let tokens = state.store.list_tokens(&user.id).await?;
    let current = presented_token(&headers, origin.https).map(token_hash);
    Ok(Json(token_list(&tokens, current.as_deref())))
}

/// Create a personal API token; the secret is in this response only.
#[utoipa::path(post, path = "/v1/tokens", request_body = CreateTokenRequest, responses((status = 201, body = CreatedToken)))]
pub async fn create_token(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateTokenRequest>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    let name = req.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::Validation(
            "name must be 1 to 100 characters".into(),
        ));
    }
    let secret = new_token();
    let rec = state
        .store
        .create_token(&user.id, name, TokenKind::Api, &token_hash(&secret))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            id: rec.id.0,
            name: rec.name,
            token: secret,
        }),
    ))
}

/// Revoke one of your tokens: an API token, or sign a web session out.
#[utoipa::path(delete, path = "/v1/tokens/{id}", responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_token(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = TokenId::parse(&id).ok_or(ApiError::NotFound)?;
    state.store.delete_token(&user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Change your own password. `current` must be right (wrong guesses count
/// against the sign-in limiter of your username); your other login sessions are
/// signed out, the token of this request and your API tokens stay.
#[utoipa::path(post, path = "/v1/me/password", request_body = ChangePasswordRequest,
    responses((status = 204, description = "changed; other login sessions revoked"),
        (status = 401, body = weft_shared::api::ErrorEnvelope),
        (status = 422, description = "the current password is wrong, or the new one is not 8 to 1024 characters", body = weft_shared::api::ErrorEnvelope),
        (status = 429, description = "too many wrong current passwords; see Retry-After", body = weft_shared::api::ErrorEnvelope)))]
pub async fn change_password(
    State(state): State<AppState>,
    Caller(user): Caller,
    origin: ClientOrigin,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ChangePasswordRequest>,
) -> ApiResult<StatusCode> {
    validate_password(&req.new)?;
    admit_sign_in(&state, &user.username, origin.ip).await?;
    let limiter = &state.login_limiter;
    let hash = state.store.password_hash(&user.id).await?;
    let ok = match state.passwords.verify(req.current, Some(hash)).await {
        Ok(ok) => ok,
        Err(e) => {
            if let Err(refund) = limiter.refund(&user.username, origin.ip).await {
                tracing::warn!(error = %refund, "refunding a password attempt failed");
            }
            return Err(e);
        }
    };
    if !ok {
        // A wrong current password keeps its charge.
        return Err(ApiError::Validation(
            "the current password is not correct".into(),
        ));
    }
    limiter
        .succeeded(&user.username, origin.ip)
        .await
        .map_err(limiter_unavailable)?;
    let new_hash = state.passwords.hash(req.new).await?;
    let keep = presented_token(&headers, origin.https)
        .map(token_hash)
        .unwrap_or_default();
    state
        .store
        .set_password(&user.id, &new_hash, PasswordChange::BySelf { keep: &keep })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A user's tokens of every kind (admin only; secrets are never shown).
#[utoipa::path(get, path = "/v1/admin/users/{id}/tokens", responses((status = 200, body = TokenList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_user_tokens(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> ApiResult<Json<TokenList>> {
    let id = UserId::parse(&id).ok_or(ApiError::NotFound)?;
    state.store.get_user(&id).await?;
    let tokens = state.store.list_tokens(&id).await?;
    Ok(Json(token_list(&tokens, None)))
}

/// Revoke one of a user's tokens, of any kind (admin only).
#[utoipa::path(delete, path = "/v1/admin/users/{id}/tokens/{token_id}", responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_user_token(
    State(state): State<AppState>,
    _admin: Admin,
    Path((id, token_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let id = UserId::parse(&id).ok_or(ApiError::NotFound)?;
    let token = TokenId::parse(&token_id).ok_or(ApiError::NotFound)?;
    state.store.delete_token(&id, &token).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn parse_role(role: &str) -> ApiResult<Role> {
    role.parse()
        .map_err(|_| ApiError::Validation("role must be \"admin\" or \"user\"".into()))
}

/// Checked before the password is hashed (the store checks again).
fn validate_username(name: &str) -> ApiResult<()> {
    weft_shared::auth::check_new_username(name).map_err(ApiError::Validation)
}

/// All users (admin only).
#[utoipa::path(get, path = "/v1/admin/users", responses((status = 200, body = UserList)))]
pub async fn list_users(State(state): State<AppState>, _admin: Admin) -> ApiResult<Json<UserList>> {
    let users = state.store.list_users().await?;
    Ok(Json(UserList {
        users: users.iter().map(|u| u.to_dto()).collect(),
    }))
}

/// Create a user (admin only).
#[utoipa::path(post, path = "/v1/admin/users", request_body = CreateUserRequest, responses((status = 201, body = UserDto), (status = 409, body = weft_shared::api::ErrorEnvelope)))]
pub async fn create_user(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(req): ApiJson<CreateUserRequest>,
) -> ApiResult<(StatusCode, Json<UserDto>)> {
    validate_username(&req.username)?;
    validate_password(&req.password)?;
    let role = parse_role(&req.role)?;
    let hash = state.passwords.hash(req.password).await?;
    let user = state.store.create_user(&req.username, &hash, role).await?;
    Ok((StatusCode::CREATED, Json(user.to_dto())))
}

/// Change a user's password or role (admin only). A new password revokes all the
/// user's API and login tokens.
#[utoipa::path(patch, path = "/v1/admin/users/{id}", request_body = UpdateUserRequest, responses((status = 200, body = UserDto)))]
pub async fn update_user(
    State(state): State<AppState>,
    Admin(me): Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateUserRequest>,
) -> ApiResult<Json<UserDto>> {
    let id = UserId::parse(&id).ok_or(ApiError::NotFound)?;
    let role = req.role.as_deref().map(parse_role).transpose()?;
    if id == me.id && role == Some(Role::User) {
        return Err(ApiError::Validation(
            "you cannot remove your own admin role".into(),
        ));
    }
    let hash = match req.password {
        Some(p) => {
            validate_password(&p)?;
            Some(state.passwords.hash(p).await?)
        }
        None => None,
    };
    let user = state.store.update_user(&id, hash.as_deref(), role).await?;
    Ok(Json(user.to_dto()))
}

/// Delete a user and everything they own (admin only).
#[utoipa::path(delete, path = "/v1/admin/users/{id}", responses((status = 204)))]
pub async fn delete_user(
    State(state): State<AppState>,
    Admin(me): Admin,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = UserId::parse(&id).ok_or(ApiError::NotFound)?;
    if id == me.id {
        return Err(ApiError::Validation("you cannot delete yourself".into()));
    }
    let ended = state.store.delete_user(&id).await?;
    state.runs.end_deleted(&ended).await;
    Ok(StatusCode::NO_CONTENT)
}

/// The limits in force (admin only, read-only).
#[utoipa::path(get, path = "/v1/admin/limits", responses((status = 200, body = LimitsDto)))]
pub async fn limits(State(state): State<AppState>, _admin: Admin) -> Json<LimitsDto> {
    let cfg = state.config();
    let l = &cfg.limits;
    Json(LimitsDto {
        body_bytes: l.body_bytes,
        message_chars: l.message_chars,
        attachments_bytes: l.attachments_bytes,
        images_per_message: cfg.attachments.images_per_message,
        image_bytes: cfg.attachments.image_bytes,
        documents_per_message: cfg.attachments.documents_per_message,
        document_bytes: cfg.attachments.document_bytes,
        active_runs_per_user: l.active_runs_per_user,
        runs_per_minute_per_user: l.runs_per_minute_per_user,
        streams_per_user: l.streams_per_user,
        streams_per_run: l.streams_per_run,
        queued_messages_per_session: l.queued_messages_per_session,
        storage_bytes_per_user: l.storage_bytes_per_user,
        tool_call_timeout_secs: cfg.tools.call_timeout_secs,
        tool_output_cap_bytes: cfg.tools.output_cap_bytes,
        approval_ttl_secs: cfg.tools.approval_ttl_secs,
        max_steps: cfg.worker.max_steps,
    })
}

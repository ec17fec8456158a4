//! Authentication: bearer tokens (CLI, scripts) and the web UI's session cookie.
//! Both resolve through one lookup (the SHA-256 of the secret). A cookie-
//! authenticated write must carry a JSON content type or `X-Weft-Csrf`, which a
//! cross-site form cannot send. Sign-in attempts are limited per username and per
//! client address (`login_limit`) and password checks are bounded (`passwords`).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_shared::api::{LoginRequest, LoginResponse, UserDto};
use weft_shared::auth::{MAX_USERNAME_CHARS, new_token, token_hash};
use weft_shared::store::{AuthUser, TokenKind};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;

pub const COOKIE: &str = "weft_session";
const CSRF_HEADER: &str = "x-weft-csrf";

/// The authenticated caller.
pub struct Caller(pub AuthUser);

/// An admin caller.
pub struct Admin(pub AuthUser);

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

pub fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

/// The token a request authenticates with: the bearer token, else the cookie
/// (the order [`Caller`] resolves them in).
pub fn presented_token(headers: &HeaderMap) -> Option<&str> {
    bearer(headers).or_else(|| cookie_token(headers))
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn has_csrf_proof(headers: &HeaderMap) -> bool {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    json || headers.contains_key(CSRF_HEADER)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (token, via_cookie) = match bearer(&parts.headers) {
            Some(t) => (t, false),
            None => (
                cookie_token(&parts.headers).ok_or(ApiError::Unauthorized)?,
                true,
            ),
        };
        if via_cookie && is_write(&parts.method) && !has_csrf_proof(&parts.headers) {
            return Err(ApiError::InvalidRequest(
                "cookie-authenticated writes need Content-Type: application/json or an X-Weft-Csrf header".into(),
            ));
        }
        let user = state.store.authenticate(&token_hash(token)).await?;
        user.map(Caller).ok_or(ApiError::Unauthorized)
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Caller(user) = Caller::from_request_parts(parts, state).await?;
        if !user.is_admin() {
            return Err(ApiError::Forbidden);
        }
        Ok(Admin(user))
    }
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/auth/login", post(login))
        .route("/v1/auth/logout", post(logout))
        .route("/v1/me", get(me))
}

fn session_cookie(token: &str, secure: bool, max_age: u64) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}"
    ))
    .expect("cookie is ASCII")
}

fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// Sign in with username and password; returns a token and sets the session cookie.
#[utoipa::path(post, path = "/v1/auth/login", request_body = LoginRequest,
    responses((status = 200, body = LoginResponse),
        (status = 401, body = weft_shared::api::ErrorEnvelope),
        (status = 422, description = "username empty or longer than 64 characters", body = weft_shared::api::ErrorEnvelope),
        (status = 429, description = "too many attempts for this username or address; see Retry-After", body = weft_shared::api::ErrorEnvelope),
        (status = 503, description = "too many passwords being checked at once; see Retry-After", body = weft_shared::api::ErrorEnvelope)))]
pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<LoginRequest>,
) -> ApiResult<Response> {
    let username = login_username(&req.username)?;
    let keys = [format!("user:{username}"), format!("addr:{}", addr.ip())];
    state
        .login_limiter
        .admit(&keys)
        .map_err(|limited| ApiError::RateLimited {
            message: "too many failed sign-in attempts; try again later".into(),
            retry_after_secs: limited.retry_after_secs,
        })?;
    let user = match check_password(&state, username, req.password).await {
        Ok(Some(user)) => user,
        // A wrong password keeps its charge.
        Ok(None) => return Err(ApiError::Unauthorized),
        Err(e) => {
            state.login_limiter.refund(&keys);
            return Err(e);
        }
    };
    state.login_limiter.clear(&keys);
    let token = new_token();
    state
        .store
        .create_token(&user.id, "login", TokenKind::Login, &token_hash(&token))
        .await?;
    let body = LoginResponse {
        token: token.clone(),
        user: user.to_dto(),
    };
    let mut resp = Json(body).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        session_cookie(&token, behind_tls(&headers), 30 * 24 * 3600),
    );
    Ok(resp)
}

/// A username as typed at sign-in: 1 to [`MAX_USERNAME_CHARS`] characters, checked
/// before the limiter so a flood of junk names neither grows its map nor counts
/// against a real account's address.
fn login_username(name: &str) -> ApiResult<&str> {
    if (1..=MAX_USERNAME_CHARS).contains(&name.chars().count()) {
        Ok(name)
    } else {
        Err(ApiError::Validation(format!(
            "username must be 1 to {MAX_USERNAME_CHARS} characters"
        )))
    }
}

/// The user, when `password` is theirs. An error means the password was not checked.
async fn check_password(
    state: &AppState,
    username: &str,
    password: String,
) -> ApiResult<Option<AuthUser>> {
    let (user, hash) = state.store.user_credentials(username).await?.unzip();
    let ok = state.passwords.verify(password, hash).await?;
    Ok(user.filter(|_| ok))
}

/// Sign out: revokes the token presented (bearer and/or session cookie, of any
/// kind: a personal API token stops working too) and clears the cookie. Idempotent:
/// an unknown or already revoked token also answers 204.
#[utoipa::path(post, path = "/v1/auth/logout", responses((status = 204, description = "the presented token is revoked")))]
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    for token in [bearer(&headers), cookie_token(&headers)]
        .into_iter()
        .flatten()
    {
        state.store.revoke_token(&token_hash(token)).await?;
    }
    let mut resp = axum::http::StatusCode::NO_CONTENT.into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        session_cookie("", behind_tls(&headers), 0),
    );
    Ok(resp)
}

/// The current user.
#[utoipa::path(get, path = "/v1/me", responses((status = 200, body = UserDto), (status = 401, body = weft_shared::api::ErrorEnvelope)))]
pub async fn me(Caller(user): Caller) -> Json<UserDto> {
    Json(user.to_dto())
}

/// Passwords: 8..=1024 characters.
pub fn validate_password(p: &str) -> ApiResult<()> {
    let n = p.chars().count();
    if !(8..=1024).contains(&n) {
        return Err(ApiError::Validation(
            "password must be 8 to 1024 characters".into(),
        ));
    }
    Ok(())
}

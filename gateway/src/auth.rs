//! Authentication: bearer tokens (CLI, scripts) and the web UI's session cookie.
//! Both resolve through one lookup (the SHA-256 of the secret). A cookie-
//! authenticated write must carry a JSON content type or `X-Weft-Csrf`, which a
//! cross-site form cannot send. Sign-in attempts are limited per username and per
//! client address (`weft_shared::login_limit`: a limit per address, a backoff per
//! account) and password checks are bounded (`passwords`).
//!
//! Over HTTPS (as a trusted proxy says, `client`) the cookie is
//! `__Host-weft_session` and `Secure`: browsers accept a `__Host-` cookie only
//! when it is Secure, host-only and `Path=/`, so a sibling subdomain cannot plant
//! one. Over plain HTTP (a laptop) it is `weft_session`, which browsers would
//! refuse with the prefix. Each scheme reads only its own name.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_shared::api::{LoginRequest, LoginResponse, StorageDto, UserDto};
use weft_shared::auth::{MAX_USERNAME_CHARS, new_token, token_hash};
use weft_shared::login_limit::{Admission, LimitedBy, LimiterError};
use weft_store::{AuthUser, TokenKind};

use crate::AppState;
use crate::client::ClientOrigin;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;

pub const COOKIE: &str = "weft_session";
/// The cookie's name over HTTPS.
pub const HOST_COOKIE: &str = "__Host-weft_session";
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

fn cookie_name(https: bool) -> &'static str {
    if https { HOST_COOKIE } else { COOKIE }
}

/// The session cookie of the request's scheme.
pub fn cookie_token(headers: &HeaderMap, https: bool) -> Option<&str> {
    let name = cookie_name(https);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The token a request authenticates with: the bearer token, else the cookie
/// (the order [`Caller`] resolves them in).
pub fn presented_token(headers: &HeaderMap, https: bool) -> Option<&str> {
    bearer(headers).or_else(|| cookie_token(headers, https))
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

/// The token a request authenticates with: the bearer, else the session cookie.
fn presented<'h>(parts: &'h Parts, state: &AppState) -> Option<(&'h str, bool)> {
    if let Some(t) = bearer(&parts.headers) {
        return Some((t, false));
    }
    let origin =
        ClientOrigin::from_parts(&parts.extensions, &parts.headers, &state.trusted_proxies);
    cookie_token(&parts.headers, origin.https).map(|t| (t, true))
}

/// The hash of the token the request presented (bearer or cookie), so a
/// long-lived stream can re-check that it still authenticates its user.
pub struct PresentedToken(pub String);

impl FromRequestParts<AppState> for PresentedToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (token, _) = presented(parts, state).ok_or(ApiError::Unauthorized)?;
        Ok(PresentedToken(token_hash(token)))
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (token, via_cookie) = presented(parts, state).ok_or(ApiError::Unauthorized)?;
        if via_cookie && is_write(&parts.method) && !has_csrf_proof(&parts.headers) {
            return Err(ApiError::InvalidRequest(
                "cookie-authenticated writes need Content-Type: application/json or an X-Weft-Csrf header".into(),
            ));
        }
        let user = state.store.authenticate(&token_hash(token)).await?;
        let user = user.ok_or(ApiError::Unauthorized)?;
        // For the extractors after this one (a send's body takes upload memory
        // from its user's share).
        parts.extensions.insert(user.clone());
        Ok(Caller(user))
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

fn session_cookie(token: &str, https: bool, max_age: u64) -> HeaderValue {
    let name = cookie_name(https);
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}"
    ))
    .expect("cookie is ASCII")
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
    origin: ClientOrigin,
    ApiJson(req): ApiJson<LoginRequest>,
) -> ApiResult<Response> {
    let username = login_username(&req.username)?;
    let limiter = &state.login_limiter;
    admit_sign_in(&state, username, origin.ip).await?;
    let user = match check_password(&state, username, req.password).await {
        Ok(Some(user)) => user,
        // A wrong password keeps its charge.
        Ok(None) => return Err(ApiError::Unauthorized),
        Err(e) => {
            if let Err(refund) = limiter.refund(username, origin.ip).await {
                tracing::warn!(error = %refund, "refunding a sign-in attempt failed");
            }
            return Err(e);
        }
    };
    limiter
        .succeeded(username, origin.ip)
        .await
        .map_err(limiter_unavailable)?;
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
        session_cookie(&token, origin.https, 30 * 24 * 3600),
    );
    Ok(resp)
}

/// A username as typed at sign-in: 1 to [`MAX_USERNAME_CHARS`] characters, checked
/// before the limiter so a flood of junk names neither grows its map nor counts
/// against a real account's address.
/// The sign-in limiter could not be asked (Redis down): refuse, briefly.
pub(crate) fn limiter_unavailable(e: LimiterError) -> ApiError {
    tracing::warn!(error = %e, "sign-in limiter unreachable");
    ApiError::Overloaded {
        message: "sign-in is unavailable right now; try again shortly".into(),
        retry_after_secs: 5,
    }
}

/// Charges one password attempt on `account` from `ip` before it is checked, or
/// refuses it (sign-in, and the current password of a password change).
pub(crate) async fn admit_sign_in(
    state: &AppState,
    account: &str,
    ip: std::net::IpAddr,
) -> ApiResult<()> {
    match state
        .login_limiter
        .admit(account, ip)
        .await
        .map_err(limiter_unavailable)?
    {
        Admission::Admitted => Ok(()),
        Admission::Limited {
            retry_after_secs,
            by,
        } => {
            let message = match by {
                LimitedBy::Address => {
                    "too many sign-in attempts from this address; try again later"
                }
                LimitedBy::Account => {
                    "too many failed sign-ins for this account; wait before trying again"
                }
            };
            Err(ApiError::RateLimited {
                message: message.into(),
                retry_after_secs,
            })
        }
    }
}

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
pub async fn logout(
    State(state): State<AppState>,
    origin: ClientOrigin,
    headers: HeaderMap,
) -> ApiResult<Response> {
    for token in [bearer(&headers), cookie_token(&headers, origin.https)]
        .into_iter()
        .flatten()
    {
        state.store.revoke_token(&token_hash(token)).await?;
    }
    let mut resp = axum::http::StatusCode::NO_CONTENT.into_response();
    resp.headers_mut()
        .insert(header::SET_COOKIE, session_cookie("", origin.https, 0));
    Ok(resp)
}

/// The current user, with their attachment storage against the quota.
#[utoipa::path(get, path = "/v1/me", responses((status = 200, body = UserDto), (status = 401, body = weft_shared::api::ErrorEnvelope)))]
pub async fn me(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<UserDto>> {
    let usage = state.store.storage_use(&user.id, &[]).await?;
    let limit = state.config().limits.storage_bytes_per_user;
    Ok(Json(UserDto {
        storage: Some(StorageDto {
            used_bytes: usage.used_bytes,
            limit_bytes: (limit > 0).then_some(limit),
        }),
        ..user.to_dto()
    }))
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

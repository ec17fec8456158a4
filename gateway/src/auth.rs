//! Authentication: bearer tokens (CLI, scripts) and the web UI's session cookie.
//! Both resolve through one lookup (the SHA-256 of the secret). A cookie-
//! authenticated write must carry a JSON content type or `X-Weft-Csrf`, which a
//! cross-site form cannot send. Failed logins are rate-limited per username and
//! per client address.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use weft_shared::api::{LoginRequest, LoginResponse, UserDto};
use weft_shared::auth::{hash_password, new_token, token_hash, verify_password};
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

/// Failed-login counter: at most `MAX_FAILURES` per key per window.
#[derive(Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

const MAX_FAILURES: usize = 10;
const WINDOW: Duration = Duration::from_secs(300);

impl LoginLimiter {
    fn retry_after(&self, keys: &[String]) -> Option<u64> {
        let mut map = self.failures.lock().expect("limiter lock");
        let now = Instant::now();
        keys.iter()
            .filter_map(|k| {
                let q = map.get_mut(k)?;
                while q.front().is_some_and(|t| now.duration_since(*t) > WINDOW) {
                    q.pop_front();
                }
                (q.len() >= MAX_FAILURES).then(|| (WINDOW - now.duration_since(q[0])).as_secs() + 1)
            })
            .max()
    }

    fn fail(&self, keys: &[String]) {
        let mut map = self.failures.lock().expect("limiter lock");
        if map.len() > 100_000 {
            map.clear(); // bounded memory under a spray of usernames
        }
        for k in keys {
            map.entry(k.clone()).or_default().push_back(Instant::now());
        }
    }

    fn succeed(&self, keys: &[String]) {
        let mut map = self.failures.lock().expect("limiter lock");
        for k in keys {
            map.remove(k);
        }
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
    responses((status = 200, body = LoginResponse), (status = 401, body = weft_shared::api::ErrorEnvelope), (status = 429, body = weft_shared::api::ErrorEnvelope)))]
pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<LoginRequest>,
) -> ApiResult<Response> {
    let keys = [
        format!("user:{}", req.username),
        format!("addr:{}", addr.ip()),
    ];
    if let Some(secs) = state.login_limiter.retry_after(&keys) {
        return Err(ApiError::RateLimited {
            message: "too many failed sign-in attempts; try again later".into(),
            retry_after_secs: secs,
        });
    }
    let creds = state.store.user_credentials(&req.username).await?;
    let password = req.password.clone();
    let verified = match creds {
        Some((user, hash)) => {
            let ok = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
                .await
                .map_err(ApiError::internal)?;
            ok.then_some(user)
        }
        None => {
            // Same cost for unknown usernames, so timing does not reveal which exist.
            let _ =
                tokio::task::spawn_blocking(move || verify_password(&password, dummy_hash())).await;
            None
        }
    };
    let Some(user) = verified else {
        state.login_limiter.fail(&keys);
        return Err(ApiError::Unauthorized);
    };
    state.login_limiter.succeed(&keys);
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

/// A real argon2id hash to verify against when the username is unknown.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password("not a real password").unwrap_or_default())
}

/// Hash a password off the async runtime.
pub async fn hash_password_blocking(password: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
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

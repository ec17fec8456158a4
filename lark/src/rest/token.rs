//! The tenant access token cache.
//!
//! One token is shared by every call. It is refreshed ahead of expiry (3 min early,
//! like the Go and Node SDKs) under a lock, so concurrent callers trigger a single
//! fetch. When Lark still calls a token invalid, [`TokenCache::invalidate`] drops it
//! only if nobody has replaced it already.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;

use super::error::LarkError;
use crate::credentials::AppCredentials;

const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";
const REFRESH_EARLY: Duration = Duration::from_secs(180);

pub(crate) struct TokenCache {
    current: Mutex<Option<Cached>>,
}

struct Cached {
    value: String,
    refresh_at: Instant,
}

/// The token endpoint answers flat, not inside `data`.
#[derive(Deserialize)]
struct TokenResponse {
    code: i64,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    tenant_access_token: String,
    #[serde(default)]
    expire: u64,
}

impl TokenCache {
    pub(crate) fn new() -> Self {
        Self {
            current: Mutex::new(None),
        }
    }

    pub(crate) async fn get(
        &self,
        http: &reqwest::Client,
        base_url: &str,
        credentials: &AppCredentials,
    ) -> Result<String, LarkError> {
        let mut current = self.current.lock().await;
        if let Some(cached) = current.as_ref().filter(|c| c.refresh_at > Instant::now()) {
            return Ok(cached.value.clone());
        }
        let response = http
            .post(format!("{base_url}{TOKEN_PATH}"))
            .json(&json!({
                "app_id": credentials.app_id,
                "app_secret": credentials.secret().expose(),
            }))
            .send()
            .await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        let parsed: TokenResponse = serde_json::from_str(&text).map_err(|e| LarkError::Decode {
            status,
            detail: e.to_string(),
        })?;
        if parsed.code != 0 || parsed.tenant_access_token.is_empty() {
            return Err(LarkError::Api {
                status,
                code: parsed.code,
                msg: parsed.msg,
            });
        }
        let lifetime = Duration::from_secs(parsed.expire);
        let early = REFRESH_EARLY.min(lifetime / 2);
        tracing::debug!(
            expire_s = parsed.expire,
            "lark tenant access token refreshed"
        );
        let value = parsed.tenant_access_token;
        *current = Some(Cached {
            value: value.clone(),
            refresh_at: Instant::now() + lifetime - early,
        });
        Ok(value)
    }

    /// Forgets `stale` unless it was already replaced.
    pub(crate) async fn invalidate(&self, stale: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.value == stale) {
            *current = None;
        }
    }
}

//! The Lark OpenAPI (REST) client.
//!
//! One [`RestClient`] per app, cheap to clone. Every call carries the cached tenant
//! token; when Lark answers 99991663/99991664/99991671 the token is refreshed and
//! the call retried exactly once (as the Go SDK does), with the same `uuid` so a
//! send cannot be duplicated. Other failures are returned as [`LarkError`] with an
//! [`ErrorClass`]; retrying with backoff is the caller's (or [`crate::sender`]'s) job.

mod bot;
mod cardkit;
mod error;
mod messages;
mod token;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::credentials::AppCredentials;

pub use bot::BotInfo;
pub use cardkit::CardEntity;
pub use error::{
    CODE_CARD_CONTENT_FAILED, CODE_RATE_LIMITED, ErrorClass, Fallback, LarkError,
    TOKEN_INVALID_CODES,
};
pub use messages::{MessageContent, Reaction, ReceiveIdType, ReplyMode, SentMessage};

#[derive(Clone, Debug)]
pub struct RestConfig {
    pub credentials: AppCredentials,
    /// `https://open.feishu.cn`, `https://open.larksuite.com`, or a fake server.
    pub base_url: String,
    /// Timeout of each HTTP request.
    pub timeout: Duration,
}

impl RestConfig {
    pub fn new(credentials: AppCredentials, base_url: impl Into<String>) -> Self {
        Self {
            credentials,
            base_url: base_url.into(),
            timeout: Duration::from_secs(15),
        }
    }
}

#[derive(Clone)]
pub struct RestClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base_url: String,
    credentials: AppCredentials,
    tokens: token::TokenCache,
}

#[derive(Deserialize)]
struct Envelope {
    code: i64,
    #[serde(default)]
    msg: String,
    /// `data` for most calls; a few (bot info) answer flat, with their own field.
    #[serde(flatten)]
    fields: serde_json::Map<String, Value>,
}

/// One API request, described before it is sent (so it can be sent twice).
pub(crate) struct Call<'a> {
    pub method: Method,
    pub path: String,
    pub query: &'a [(&'a str, &'a str)],
    pub body: Option<Value>,
}

impl RestClient {
    pub fn new(config: RestConfig) -> Self {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("weft-lark/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("reqwest client builds");
        Self {
            inner: Arc::new(Inner {
                http,
                base_url: config.base_url.trim_end_matches('/').to_owned(),
                credentials: config.credentials,
                tokens: token::TokenCache::new(),
            }),
        }
    }

    /// A tenant access token, from cache when still fresh.
    pub async fn tenant_token(&self) -> Result<String, LarkError> {
        let inner = &self.inner;
        inner
            .tokens
            .get(&inner.http, &inner.base_url, &inner.credentials)
            .await
    }

    /// Sends `call`, refreshing the token and retrying once if Lark rejects it;
    /// the answer is typed from its `data`.
    pub(crate) async fn send<T: DeserializeOwned + Default>(
        &self,
        call: Call<'_>,
    ) -> Result<T, LarkError> {
        self.send_reading(call, "data").await
    }

    /// [`Self::send`], typing the answer from its top-level `field`.
    pub(crate) async fn send_reading<T: DeserializeOwned + Default>(
        &self,
        call: Call<'_>,
        field: &str,
    ) -> Result<T, LarkError> {
        let token = self.tenant_token().await?;
        match self.send_once(&call, &token, field).await {
            Err(LarkError::Api { code, .. }) if TOKEN_INVALID_CODES.contains(&code) => {
                tracing::info!(code, path = %call.path, "lark token rejected; refreshing and retrying once");
                self.inner.tokens.invalidate(&token).await;
                let token = self.tenant_token().await?;
                self.send_once(&call, &token, field).await
            }
            other => other,
        }
    }

    async fn send_once<T: DeserializeOwned + Default>(
        &self,
        call: &Call<'_>,
        token: &str,
        field: &str,
    ) -> Result<T, LarkError> {
        let url = reqwest::Url::parse_with_params(
            &format!("{}{}", self.inner.base_url, call.path),
            call.query,
        )
        .map_err(|e| LarkError::Decode {
            status: 0,
            detail: format!("bad URL: {e}"),
        })?;
        let mut request = self
            .inner
            .http
            .request(call.method.clone(), url)
            .bearer_auth(token);
        if let Some(body) = &call.body {
            request = request
                .header("Content-Type", "application/json; charset=utf-8")
                .body(body.to_string());
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        let decode = |e: serde_json::Error| LarkError::Decode {
            status,
            detail: e.to_string(),
        };
        // Errors come with `data: {}`, so look at `code` before typing `data`.
        let mut envelope: Envelope = serde_json::from_str(&text).map_err(decode)?;
        if envelope.code != 0 || status == 429 {
            return Err(LarkError::Api {
                status,
                code: envelope.code,
                msg: envelope.msg,
            });
        }
        match envelope.fields.remove(field) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(data) => serde_json::from_value(data).map_err(decode),
        }
    }
}

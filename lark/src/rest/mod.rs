//! The Lark OpenAPI (REST) client.
//!
//! One [`RestClient`] per app, cheap to clone. Every call carries the cached tenant
//! token; when Lark answers 99991663/99991664/99991671 the token is refreshed and
//! the call retried exactly once (as the Go SDK does), with the same `uuid` so a
//! send cannot be duplicated. Other failures are returned as [`LarkError`] with an
//! [`ErrorClass`]; retrying with backoff is the caller's (or [`crate::sender`]'s) job.
//!
//! Most calls answer JSON (`{"code","msg","data"}`); downloading a file a user
//! sent answers its raw bytes ([`resources`]), read only up to what the caller
//! will take.

mod bot;
mod cardkit;
mod error;
mod lookup;
mod messages;
mod resources;
mod token;

use std::future::Future;
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
    CODE_CARD_CONTENT_FAILED, CODE_CARDKIT_SEQUENCE, CODE_RATE_LIMITED, CODE_SCOPE_MISSING,
    ErrorClass, Fallback, LarkError, TOKEN_INVALID_CODES,
};
pub use lookup::{FetchedBody, FetchedMention, FetchedMessage, FetchedSender};
pub use messages::{MessageContent, Reaction, ReceiveIdType, ReplyMode, SentMessage};
pub use resources::{Resource, ResourceType};

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
        let call = &call;
        self.with_token(&call.path, |token| async move {
            self.send_once(call, &token, field).await
        })
        .await
    }

    /// Runs `attempt` with the tenant token; when Lark calls the token invalid,
    /// refreshes it and runs `attempt` once more.
    pub(crate) async fn with_token<T, F, Fut>(&self, path: &str, attempt: F) -> Result<T, LarkError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, LarkError>>,
    {
        let token = self.tenant_token().await?;
        match attempt(token.clone()).await {
            Err(LarkError::Api { code, .. }) if TOKEN_INVALID_CODES.contains(&code) => {
                tracing::info!(
                    code,
                    path,
                    "lark token rejected; refreshing and retrying once"
                );
                self.inner.tokens.invalidate(&token).await;
                attempt(self.tenant_token().await?).await
            }
            other => other,
        }
    }

    /// The HTTP request of `call`, authorised with `token`.
    pub(crate) fn request(
        &self,
        call: &Call<'_>,
        token: &str,
    ) -> Result<reqwest::RequestBuilder, LarkError> {
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
        Ok(request)
    }

    async fn send_once<T: DeserializeOwned + Default>(
        &self,
        call: &Call<'_>,
        token: &str,
        field: &str,
    ) -> Result<T, LarkError> {
        let request = self.request(call, token)?;
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

/// The error a refused call's body describes (`{"code","msg"}`), or why the body
/// could not be read as one.
pub(crate) fn error_from_body(status: u16, text: &str) -> LarkError {
    match serde_json::from_str::<Envelope>(text) {
        Ok(envelope) if envelope.code != 0 => LarkError::Api {
            status,
            code: envelope.code,
            msg: envelope.msg,
        },
        Ok(_) => LarkError::Decode {
            status,
            detail: "an error status with code 0".into(),
        },
        Err(e) => LarkError::Decode {
            status,
            detail: e.to_string(),
        },
    }
}

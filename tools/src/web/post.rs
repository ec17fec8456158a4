//! A POST to a URL a person gave (a webhook channel's), through the same
//! [`Guard`] as `web_fetch`: the URL and every address its name resolves to
//! vetted, the connection made to exactly those addresses, redirects not
//! followed (a 3xx is an answer, not an invitation), no proxy. The admin's
//! `tools.web_fetch.allow_hosts` is the one way to an internal receiver.

use std::sync::Arc;
use std::time::Duration;

use url::Url;
use weft_config::WebFetchConfig;

use super::fetch::describe_send_error;
use super::guard::Guard;
use super::resolve::{NameResolver, SystemResolver, VettedResolver};

/// A client for guarded POSTs.
pub struct GuardedPost {
    guard: Arc<Guard>,
    client: reqwest::Client,
}

/// A POST's answer: its status and the start of its body (for the error a
/// failed delivery records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub status: u16,
    pub body_start: String,
}

/// Characters of an answer's body kept for its error message.
const BODY_START_CHARS: usize = 200;

impl GuardedPost {
    /// A client whose whole exchange (connect, send, answer) takes at most `timeout`.
    pub fn new(cfg: &WebFetchConfig, timeout: Duration) -> Result<GuardedPost, String> {
        GuardedPost::with_resolver(cfg, timeout, Arc::new(SystemResolver))
    }

    pub fn with_resolver(
        cfg: &WebFetchConfig,
        timeout: Duration,
        resolver: Arc<dyn NameResolver>,
    ) -> Result<GuardedPost, String> {
        let guard = Arc::new(Guard::new(cfg, resolver));
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(VettedResolver(guard.clone())))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("Weft-webhook/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("could not build the webhook HTTP client: {e}"))?;
        Ok(GuardedPost { guard, client })
    }

    /// POSTs `body` (JSON) with `headers` to `url`. Any answer, whatever its
    /// status, is `Ok`.
    pub async fn post_json(
        &self,
        url: &Url,
        headers: &[(&str, String)],
        body: String,
    ) -> Result<Posted, PostError> {
        self.guard
            .check_url(url)
            .map_err(|r| PostError::Refused(r.to_string()))?;
        if let Some(host) = url.host_str() {
            self.guard.resolve(host).await.map_err(|r| match r {
                super::Refusal::Unresolved { .. } => PostError::Transport(r.to_string()),
                r => PostError::Refused(r.to_string()),
            })?;
        }
        let mut req = self
            .client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| PostError::Transport(describe_send_error(&e, "posting to", url, 0)))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        Ok(Posted {
            status,
            body_start: text.chars().take(BODY_START_CHARS).collect(),
        })
    }
}

/// Why a POST got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// The guard refused the URL or its addresses: trying again will not help.
    Refused(String),
    /// The network failed (unresolvable, refused, timed out): worth another try.
    Transport(String),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Refused(e) | PostError::Transport(e) => f.write_str(e),
        }
    }
}

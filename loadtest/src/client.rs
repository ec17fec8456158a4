//! The Weft HTTP API as a virtual user uses it: sign in, create a session, send a
//! message with `stream: true`, re-attach to a run, read the messages back. Bodies
//! are the `weft_shared::api` types, so the load tester cannot drift from the
//! gateway.
//!
//! A [`Gateways`] is one or more gateway base URLs; a client that loses its
//! connection moves to the next one, as a browser behind a load balancer would.
//! A [`WeftTarget`] is those gateways and the token to run as.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::{Response, StatusCode};
use weft_shared::api::{
    ApprovalDecision, CreateSessionRequest, CreateUserRequest, DecideApprovalRequest, LoginRequest,
    LoginResponse, MessageDto, MessageList, RunDto, SendMessageRequest, SessionDto,
};

/// Gateway base URLs, shared by every virtual user.
#[derive(Clone)]
pub struct Gateways {
    urls: Arc<Vec<String>>,
    next: Arc<AtomicUsize>,
}

impl Gateways {
    pub fn new(urls: Vec<String>) -> anyhow::Result<Gateways> {
        if urls.is_empty() {
            bail!("at least one --gateway URL is needed");
        }
        for u in &urls {
            let host = u
                .trim_start_matches("http://")
                .split(['/', ':'])
                .next()
                .unwrap_or("");
            if !matches!(host, "127.0.0.1" | "localhost" | "[") && !host.starts_with("127.") {
                bail!("{u}: the load tester only sends traffic to loopback addresses");
            }
        }
        Ok(Gateways {
            urls: Arc::new(
                urls.into_iter()
                    .map(|u| u.trim_end_matches('/').to_owned())
                    .collect(),
            ),
            next: Arc::default(),
        })
    }

    /// A starting gateway for a new user (round robin).
    pub fn pick(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.urls.len()
    }

    pub fn url(&self, i: usize) -> &str {
        &self.urls[i % self.urls.len()]
    }

    pub fn len(&self) -> usize {
        self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }
}

/// Where and as whom to run.
#[derive(Clone)]
pub struct WeftTarget {
    pub gateways: Gateways,
    /// An admin token (users are created and sign in) or, with `shared_token`, a
    /// user token every virtual user sends.
    pub token: String,
    pub shared_token: bool,
    /// Distinct accounts the virtual users are spread over.
    pub accounts: usize,
}

/// One HTTP client for the whole run: connection pools are per host, and a pool per
/// user would measure our own TLS-less handshakes rather than the gateway.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .build()
        .expect("a plain HTTP client builds")
}

/// A signed-in user on one gateway.
#[derive(Clone)]
pub struct WeftClient {
    pub http: reqwest::Client,
    pub gateways: Gateways,
    pub current: usize,
    pub token: String,
}

impl WeftClient {
    pub fn base(&self) -> &str {
        self.gateways.url(self.current)
    }

    /// Move to the next gateway (after a connection failure).
    pub fn fail_over(&mut self) {
        self.current = (self.current + 1) % self.gateways.len();
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base()))
            .bearer_auth(&self.token)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base()))
            .bearer_auth(&self.token)
    }

    /// `POST /v1/me/memories`.
    pub async fn add_memory(&self, text: &str, pinned: bool) -> anyhow::Result<()> {
        let body = serde_json::json!({"text": text, "pinned": pinned});
        let _: serde_json::Value =
            ok_json(self.post("/v1/me/memories").json(&body).send().await?).await?;
        Ok(())
    }

    pub async fn create_session(&self) -> anyhow::Result<SessionDto> {
        let body = CreateSessionRequest {
            title: Some("loadtest".into()),
            ..Default::default()
        };
        ok_json(self.post("/v1/sessions").json(&body).send().await?).await
    }

    /// `POST /v1/sessions/{id}/messages` with `stream: true`: the raw response, whose
    /// body is the run's SSE when the status is 200.
    pub async fn send_streaming(
        &self,
        session: &str,
        text: &str,
        idempotency_key: &str,
    ) -> reqwest::Result<Response> {
        let body = SendMessageRequest {
            text: text.to_owned(),
            attachments: Vec::new(),
            model: None,
            agent: None,
            mode: None,
            multitask: Default::default(),
            stream: true,
            wait: false,
            plan: false,
        };
        self.post(&format!("/v1/sessions/{session}/messages"))
            .header("idempotency-key", idempotency_key)
            .json(&body)
            .send()
            .await
    }

    /// `GET /v1/runs/{id}/events` after `last` (`Last-Event-ID`).
    pub async fn attach(&self, run: &str, last: u64) -> reqwest::Result<Response> {
        let mut req = self.get(&format!("/v1/runs/{run}/events"));
        if last > 0 {
            req = req.header("last-event-id", last.to_string());
        }
        req.send().await
    }

    pub async fn cancel(&self, run: &str) -> anyhow::Result<()> {
        self.post(&format!("/v1/runs/{run}/cancel")).send().await?;
        Ok(())
    }

    /// `GET /v1/runs/{id}`.
    pub async fn run(&self, id: &str) -> anyhow::Result<RunDto> {
        ok_json(self.get(&format!("/v1/runs/{id}")).send().await?).await
    }

    /// `POST /v1/approvals/{id}`: the raw response (200 with the approval, or 409
    /// saying what stands).
    pub async fn decide(
        &self,
        approval: &str,
        decision: ApprovalDecision,
    ) -> reqwest::Result<Response> {
        self.post(&format!("/v1/approvals/{approval}"))
            .json(&DecideApprovalRequest { decision })
            .send()
            .await
    }

    pub async fn session(&self, id: &str) -> anyhow::Result<SessionDto> {
        ok_json(self.get(&format!("/v1/sessions/{id}")).send().await?).await
    }

    /// Every message of a session, oldest first (pages are bounded: ≤ 1000).
    pub async fn all_messages(&self, session: &str) -> anyhow::Result<Vec<MessageDto>> {
        let mut pages: Vec<Vec<MessageDto>> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let mut url = format!("/v1/sessions/{session}/messages?limit=200");
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page: MessageList = ok_json(self.get(&url).send().await?).await?;
            pages.push(page.messages);
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }
}

/// Create `n` users named `{prefix}-{i}` with the admin token and sign each in.
pub async fn sign_in_users(
    http: &reqwest::Client,
    gateways: &Gateways,
    admin_token: &str,
    prefix: &str,
    n: usize,
) -> anyhow::Result<Vec<WeftClient>> {
    let base = gateways.url(0);
    let password = format!("pw-{}", uuid::Uuid::new_v4());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let username = format!("{prefix}-{i}");
        let create = CreateUserRequest {
            username: username.clone(),
            password: password.clone(),
            role: "user".into(),
        };
        let r = http
            .post(format!("{base}/v1/admin/users"))
            .bearer_auth(admin_token)
            .json(&create)
            .send()
            .await
            .context("creating a load-test user")?;
        if !r.status().is_success() && r.status() != StatusCode::CONFLICT {
            bail!(
                "creating user {username}: {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
        }
        let login = LoginRequest {
            username,
            password: password.clone(),
        };
        let r = http
            .post(format!("{base}/v1/auth/login"))
            .json(&login)
            .send()
            .await?;
        let LoginResponse { token, .. } = ok_json(r).await.context("signing in")?;
        out.push(WeftClient {
            http: http.clone(),
            gateways: gateways.clone(),
            current: gateways.pick(),
            token,
        });
    }
    Ok(out)
}

/// Parse a 2xx JSON body, or fail with the status and body.
pub async fn ok_json<T: serde::de::DeserializeOwned>(r: Response) -> anyhow::Result<T> {
    let status = r.status();
    if !status.is_success() {
        bail!("{status}: {}", r.text().await.unwrap_or_default());
    }
    Ok(r.json().await?)
}

/// A short name for an HTTP failure, for the errors-by-kind table.
pub fn error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_connect() {
        "connect"
    } else if e.is_timeout() {
        "timeout"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else {
        "http"
    }
}

//! Typed HTTP calls to a gateway (docs/protocol.md, "HTTP API") and the mapping of
//! failures to [`ClientError`]s a person can act on: unreachable, bad token,
//! gateway too old.

use std::time::Duration;

use reqwest::multipart::{Form, Part};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use weft_wire::api::{
    CreateSessionRequest, ErrorEnvelope, Health, LoginRequest, LoginResponse, MessageList,
    ModelList, RunDto, SendMessageRequest, SessionDto, SessionList, UserDto,
};

use crate::attach::Upload;
use crate::config::Connection;
use crate::error::{ClientError, Result};

/// Our version, sent as the user agent and compared in "too old" errors.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A gateway and the credentials to use there.
#[derive(Clone)]
pub struct Gateway {
    http: reqwest::Client,
    conn: Connection,
}

impl Gateway {
    pub fn new(conn: Connection) -> Result<Gateway> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10));
        if conn.gateway.starts_with("http://") {
            // Loading and parsing the system's root certificates costs tens of
            // milliseconds at start-up; a plain-HTTP gateway never needs them.
            builder = builder.tls_certs_only([]);
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Local(format!("HTTP client: {e}")))?;
        Ok(Gateway { http, conn })
    }

    pub fn url(&self) -> &str {
        &self.conn.gateway
    }

    /// `host:port` of the gateway, for the status line.
    pub fn host(&self) -> &str {
        let rest = self
            .conn
            .gateway
            .split_once("://")
            .map_or(self.conn.gateway.as_str(), |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }

    pub fn has_token(&self) -> bool {
        self.conn.token.is_some()
    }

    fn request(&self, method: Method, path: &str) -> Result<RequestBuilder> {
        let rb = self
            .http
            .request(method, format!("{}{path}", self.conn.gateway));
        match &self.conn.token {
            Some(t) => Ok(rb.bearer_auth(t)),
            None if path.starts_with("/v1/") && path != "/v1/auth/login" => {
                Err(ClientError::NoToken {
                    url: self.conn.gateway.clone(),
                })
            }
            None => Ok(rb),
        }
    }

    /// Send and turn transport failures and error statuses into [`ClientError`]s.
    pub async fn execute(&self, rb: RequestBuilder, path: &str) -> Result<Response> {
        let resp = rb.send().await.map_err(|e| self.transport(e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        Err(self.status_error(resp, path).await)
    }

    pub fn transport(&self, e: reqwest::Error) -> ClientError {
        let mut detail = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            detail = s.to_string();
            src = s.source();
        }
        ClientError::Unreachable {
            url: self.conn.gateway.clone(),
            detail,
        }
    }

    async fn status_error(&self, resp: Response, path: &str) -> ClientError {
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        let envelope = crate::clean::decode::<ErrorEnvelope>(&body).ok();
        match (status, envelope) {
            (StatusCode::UNAUTHORIZED, e) => ClientError::Unauthorized {
                url: self.conn.gateway.clone(),
                message: e.map_or_else(|| "401 Unauthorized".into(), |e| e.error.message),
            },
            (StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED, None) => {
                ClientError::GatewayTooOld {
                    url: self.conn.gateway.clone(),
                    path: path.to_string(),
                    ours: VERSION.into(),
                }
            }
            (_, Some(e)) => ClientError::Api {
                status: status.as_u16(),
                code: e.error.code,
                message: e.error.message,
            },
            (_, None) => ClientError::Api {
                status: status.as_u16(),
                code: "http".into(),
                message: format!("HTTP {status} from {path}"),
            },
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<T> {
        let mut rb = self.request(method, path)?.timeout(REQUEST_TIMEOUT);
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = self.execute(rb, path).await?;
        let body = resp
            .text()
            .await
            .map_err(|e| ClientError::Local(format!("unexpected answer from {path}: {e}")))?;
        crate::clean::decode(&body)
            .map_err(|e| ClientError::Local(format!("unexpected answer from {path}: {e}")))
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.json(Method::GET, path, None::<&()>).await
    }

    pub async fn health(&self) -> Result<Health> {
        self.get("/health").await
    }

    pub async fn login(&self, username: &str, password: &str) -> Result<LoginResponse> {
        let req = LoginRequest {
            username: username.into(),
            password: password.into(),
        };
        self.json(Method::POST, "/v1/auth/login", Some(&req)).await
    }

    /// A long-lived personal API token for this client.
    pub async fn create_token(&self, name: &str) -> Result<weft_wire::api::CreatedToken> {
        self.json(
            Method::POST,
            "/v1/tokens",
            Some(&weft_wire::api::CreateTokenRequest { name: name.into() }),
        )
        .await
    }

    /// Revoke the token this client presents.
    pub async fn logout(&self) -> Result<()> {
        let path = "/v1/auth/logout";
        self.execute(
            self.request(Method::POST, path)?.timeout(REQUEST_TIMEOUT),
            path,
        )
        .await
        .map(drop)
    }

    /// The same gateway, presenting another token.
    pub fn with_token(&self, token: &str) -> Gateway {
        Gateway {
            http: self.http.clone(),
            conn: Connection {
                gateway: self.conn.gateway.clone(),
                token: Some(token.into()),
            },
        }
    }

    pub async fn me(&self) -> Result<UserDto> {
        self.get("/v1/me").await
    }

    pub async fn models(&self) -> Result<ModelList> {
        self.get("/v1/models").await
    }

    /// `GET /v1/mcp` (admins only).
    pub async fn mcp(&self) -> Result<weft_wire::api::McpStatusList> {
        self.get("/v1/mcp").await
    }

    pub async fn sessions(&self, limit: u32) -> Result<SessionList> {
        self.get(&format!("/v1/sessions?limit={limit}")).await
    }

    pub async fn session(&self, id: &str) -> Result<SessionDto> {
        self.get(&format!("/v1/sessions/{id}")).await
    }

    pub async fn create_session(&self, req: &CreateSessionRequest) -> Result<SessionDto> {
        self.json(Method::POST, "/v1/sessions", Some(req)).await
    }

    pub async fn update_session(
        &self,
        id: &str,
        req: &weft_wire::api::UpdateSessionRequest,
    ) -> Result<SessionDto> {
        self.json(Method::PATCH, &format!("/v1/sessions/{id}"), Some(req))
            .await
    }

    /// `DELETE path`, its answer's body dropped.
    async fn delete(&self, path: &str) -> Result<()> {
        self.execute(
            self.request(Method::DELETE, path)?.timeout(REQUEST_TIMEOUT),
            path,
        )
        .await
        .map(drop)
    }

    pub async fn delete_session(&self, id: &str) -> Result<()> {
        let path = format!("/v1/sessions/{id}");
        self.delete(&path).await
    }

    pub async fn messages(&self, session: &str, limit: u32) -> Result<MessageList> {
        self.get(&format!("/v1/sessions/{session}/messages?limit={limit}"))
            .await
    }

    /// The session's todo list as it stands (`todo_update`).
    pub async fn todos(&self, session: &str) -> Result<weft_wire::api::TodoList> {
        self.get(&format!("/v1/sessions/{session}/todos")).await
    }

    pub async fn knowledge_bases(&self) -> Result<weft_wire::api::KnowledgeBaseList> {
        self.get("/v1/knowledge").await
    }

    pub async fn create_knowledge_base(
        &self,
        req: &weft_wire::api::CreateKnowledgeBase,
    ) -> Result<weft_wire::api::KnowledgeBaseDto> {
        self.json(Method::POST, "/v1/knowledge", Some(req)).await
    }

    pub async fn knowledge_documents(
        &self,
        base: &str,
    ) -> Result<weft_wire::api::KnowledgeDocumentList> {
        self.get(&format!("/v1/knowledge/{base}/documents")).await
    }

    /// `POST …/documents` with one file part; uploads of large files get
    /// minutes, not the usual 30 s.
    pub async fn upload_knowledge(
        &self,
        base: &str,
        file: &crate::attach::Upload,
    ) -> Result<weft_wire::api::KnowledgeUploadResult> {
        let path = format!("/v1/knowledge/{base}/documents");
        let form = Form::new().part(
            "file",
            Part::bytes(file.bytes.clone()).file_name(file.name.clone()),
        );
        let rb = self
            .request(Method::POST, &path)?
            .timeout(Duration::from_secs(600))
            .multipart(form);
        let body = self
            .execute(rb, &path)
            .await?
            .text()
            .await
            .map_err(|e| self.transport(e))?;
        crate::clean::decode(&body)
            .map_err(|e| ClientError::Local(format!("unexpected answer from {path}: {e}")))
    }

    pub async fn search_knowledge(
        &self,
        base: &str,
        req: &weft_wire::api::KnowledgeSearch,
    ) -> Result<weft_wire::api::KnowledgeSearchResults> {
        self.json(
            Method::POST,
            &format!("/v1/knowledge/{base}/search"),
            Some(req),
        )
        .await
    }

    /// Deletes a base (`doc` none) or one of its documents.
    pub async fn delete_knowledge(&self, base: &str, doc: Option<&str>) -> Result<()> {
        let path = match doc {
            Some(doc) => format!("/v1/knowledge/{base}/documents/{doc}"),
            None => format!("/v1/knowledge/{base}"),
        };
        self.delete(&path).await
    }

    /// `GET /v1/me/memories`: your memories (pinned first, then the most
    /// recently changed) and your switch; with `query`, only those sharing
    /// words with it, best first.
    pub async fn memories(&self, query: Option<&str>) -> Result<weft_wire::api::MemoryList> {
        let path = match query {
            Some(q) => with_query("/v1/me/memories", &[("q", q)]),
            None => "/v1/me/memories".to_string(),
        };
        self.get(&path).await
    }

    /// `DELETE /v1/me/memories/{id}`: forget one of yours.
    pub async fn delete_memory(&self, id: &str) -> Result<()> {
        let path = format!("/v1/me/memories/{id}");
        self.delete(&path).await
    }

    /// `PATCH /v1/me/memory`: turn your memory on or off.
    pub async fn switch_memory(&self, enabled: bool) -> Result<weft_wire::api::MemorySwitch> {
        self.json(
            Method::PATCH,
            "/v1/me/memory",
            Some(&weft_wire::api::MemorySwitch { enabled }),
        )
        .await
    }

    /// `GET /v1/schedules`: yours, oldest first, each with its newest fire.
    pub async fn schedules(&self) -> Result<weft_wire::api::ScheduleList> {
        self.get("/v1/schedules").await
    }

    pub async fn schedule(&self, id: &str) -> Result<weft_wire::api::ScheduleDto> {
        self.get(&format!("/v1/schedules/{id}")).await
    }

    pub async fn create_schedule(
        &self,
        req: &weft_wire::api::CreateScheduleRequest,
    ) -> Result<weft_wire::api::ScheduleDto> {
        self.json(Method::POST, "/v1/schedules", Some(req)).await
    }

    pub async fn update_schedule(
        &self,
        id: &str,
        req: &weft_wire::api::UpdateScheduleRequest,
    ) -> Result<weft_wire::api::ScheduleDto> {
        self.json(Method::PATCH, &format!("/v1/schedules/{id}"), Some(req))
            .await
    }

    pub async fn delete_schedule(&self, id: &str) -> Result<()> {
        self.delete(&format!("/v1/schedules/{id}")).await
    }

    /// `POST /v1/schedules/{id}/run`: one fire now; the answer is that fire.
    pub async fn run_schedule(&self, id: &str) -> Result<weft_wire::api::FireDto> {
        self.json(
            Method::POST,
            &format!("/v1/schedules/{id}/run"),
            None::<&()>,
        )
        .await
    }

    /// `GET /v1/schedules/{id}/fires`: newest first.
    pub async fn schedule_fires(&self, id: &str, limit: u32) -> Result<weft_wire::api::FireList> {
        self.get(&format!("/v1/schedules/{id}/fires?limit={limit}"))
            .await
    }

    /// `POST /v1/schedules/preview`: a trigger's next times in a timezone.
    pub async fn preview_schedule(
        &self,
        req: &weft_wire::api::PreviewRequest,
    ) -> Result<weft_wire::api::PreviewResponse> {
        self.json(Method::POST, "/v1/schedules/preview", Some(req))
            .await
    }

    /// `GET /v1/channels`: yours, oldest first, each with its newest delivery.
    pub async fn channels(&self) -> Result<weft_wire::api::ChannelList> {
        self.get("/v1/channels").await
    }

    /// `POST /v1/channels`: a webhook made without a secret answers with the
    /// one it was given, this once.
    pub async fn create_channel(
        &self,
        req: &weft_wire::api::CreateChannelRequest,
    ) -> Result<weft_wire::api::ChannelDto> {
        self.json(Method::POST, "/v1/channels", Some(req)).await
    }

    pub async fn update_channel(
        &self,
        id: &str,
        req: &weft_wire::api::UpdateChannelRequest,
    ) -> Result<weft_wire::api::ChannelDto> {
        self.json(Method::PATCH, &format!("/v1/channels/{id}"), Some(req))
            .await
    }

    pub async fn delete_channel(&self, id: &str) -> Result<()> {
        self.delete(&format!("/v1/channels/{id}")).await
    }

    /// `POST /v1/channels/{id}/test`: the answer is the test's delivery, pending.
    pub async fn test_channel(&self, id: &str) -> Result<weft_wire::api::DeliveryDto> {
        self.json(
            Method::POST,
            &format!("/v1/channels/{id}/test"),
            None::<&()>,
        )
        .await
    }

    /// `GET /v1/channels/{id}/deliveries`: newest first.
    pub async fn channel_deliveries(
        &self,
        id: &str,
        limit: u32,
    ) -> Result<weft_wire::api::DeliveryList> {
        self.get(&format!("/v1/channels/{id}/deliveries?limit={limit}"))
            .await
    }

    pub async fn run(&self, id: &str) -> Result<RunDto> {
        self.get(&format!("/v1/runs/{id}")).await
    }

    pub async fn cancel(&self, run: &str) -> Result<RunDto> {
        self.json(Method::POST, &format!("/v1/runs/{run}/cancel"), None::<&()>)
            .await
    }

    pub async fn agents(&self) -> Result<weft_wire::api::AgentList> {
        self.get("/v1/agents").await
    }

    pub async fn skills(&self) -> Result<weft_wire::api::SkillList> {
        self.get("/v1/skills").await
    }

    /// `POST /v1/sessions/{id}/{what}` for `undo`, `redo`, `regenerate`.
    pub async fn turn(&self, session: &str, what: &str) -> Result<weft_wire::api::TurnResult> {
        self.json(
            Method::POST,
            &format!("/v1/sessions/{session}/{what}"),
            Some(&serde_json::json!({})),
        )
        .await
    }

    pub async fn edit(&self, session: &str, text: &str) -> Result<weft_wire::api::TurnResult> {
        self.json(
            Method::POST,
            &format!("/v1/sessions/{session}/edit"),
            Some(&serde_json::json!({ "text": text })),
        )
        .await
    }

    pub async fn compact(&self, session: &str) -> Result<()> {
        let path = format!("/v1/sessions/{session}/compact");
        let rb = self
            .request(Method::POST, &path)?
            .timeout(REQUEST_TIMEOUT)
            .json(&serde_json::json!({}));
        self.execute(rb, &path).await.map(drop)
    }

    pub async fn decide_approval(&self, approval: &str, decision: &str) -> Result<()> {
        let path = format!("/v1/approvals/{approval}");
        let rb = self
            .request(Method::POST, &path)?
            .timeout(REQUEST_TIMEOUT)
            .json(&serde_json::json!({ "decision": decision }));
        self.execute(rb, &path).await.map(drop)
    }

    /// Answer a question the agent asked (`POST /v1/questions/{id}`).
    pub async fn answer_question(&self, question: &str, answer: &[String]) -> Result<()> {
        let path = format!("/v1/questions/{question}");
        let rb = self
            .request(Method::POST, &path)?
            .timeout(REQUEST_TIMEOUT)
            .json(&serde_json::json!({ "answer": answer }));
        self.execute(rb, &path).await.map(drop)
    }

    /// Decide a proposed plan: `approve`, `reject` or `revise` (with a comment).
    pub async fn decide_plan(
        &self,
        plan: &str,
        decision: weft_wire::states::PlanDecision,
        comment: Option<&str>,
    ) -> Result<()> {
        let path = format!("/v1/plans/{plan}");
        let rb = self
            .request(Method::POST, &path)?
            .timeout(REQUEST_TIMEOUT)
            .json(&weft_wire::api::DecidePlanRequest {
                decision,
                comment: comment.map(str::to_string),
            });
        self.execute(rb, &path).await.map(drop)
    }

    /// `POST …/messages` with `stream: true`; the answer is the new run's SSE. The
    /// idempotency key makes a re-sent request (after a drop before the first
    /// event) attach to the same run instead of creating a second one.
    ///
    /// With files the body is `multipart/form-data`: a `json` part with the
    /// request and one part per file (the gateway types them by their bytes, so
    /// no part declares a type).
    pub async fn send_streaming(
        &self,
        session: &str,
        req: &SendMessageRequest,
        files: &[Upload],
        idempotency_key: &str,
    ) -> Result<Response> {
        let path = format!("/v1/sessions/{session}/messages");
        let rb = self
            .request(Method::POST, &path)?
            .header("idempotency-key", idempotency_key)
            .header("accept", "text/event-stream");
        let rb = if files.is_empty() {
            rb.json(req)
        } else {
            let json = serde_json::to_string(req)
                .map_err(|e| ClientError::Local(format!("encoding the message: {e}")))?;
            let json = Part::text(json)
                .mime_str("application/json")
                .map_err(|e| ClientError::Local(e.to_string()))?;
            let form = files
                .iter()
                .fold(Form::new().part("json", json), |form, f| {
                    form.part(
                        "file",
                        Part::bytes(f.bytes.clone()).file_name(f.name.clone()),
                    )
                });
            rb.multipart(form)
        };
        self.execute(rb, &path).await
    }

    /// `GET /v1/knowledge/{id}/events`: the base's documents as they change.
    pub async fn knowledge_events(&self, base: &str) -> Result<Response> {
        let path = format!("/v1/knowledge/{base}/events");
        let rb = self
            .request(Method::GET, &path)?
            .header("accept", "text/event-stream");
        self.execute(rb, &path).await
    }

    /// `GET /v1/runs/{id}/events` resuming after `after` (`Last-Event-ID`).
    pub async fn run_events(&self, run: &str, after: u64) -> Result<Response> {
        let path = format!("/v1/runs/{run}/events");
        let rb = self
            .request(Method::GET, &path)?
            .header("last-event-id", after.to_string())
            .header("accept", "text/event-stream");
        self.execute(rb, &path).await
    }
}

/// `path?key=value&…`, each value percent-encoded (free text, such as a
/// search, goes into a query string whole).
fn with_query(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse("http://query.invalid/").expect("a valid URL");
    url.query_pairs_mut().extend_pairs(pairs);
    match url.query() {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_values_are_encoded() {
        assert_eq!(
            super::with_query("/v1/me/memories", &[("q", "tea & 咖啡?#x")]),
            "/v1/me/memories?q=tea+%26+%E5%92%96%E5%95%A1%3F%23x"
        );
        assert_eq!(super::with_query("/p", &[]), "/p");
    }
}

//! `POST /v1/chat`: a compatibility shortcut for scripts and simple clients. It
//! creates the session when none is given, sends the message (multitask
//! `enqueue`), and answers with the run's SSE (`stream: true`) or its result.

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::handler::Handler;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use weft_shared::api::{ChatRequest, CreateSessionRequest, Multitask, SendMessageRequest};

use crate::AppState;
use crate::auth::Caller;
use crate::auth::PresentedToken;
use crate::error::{ApiError, ApiResult};
use crate::sessions::{create_session, idempotency_key, parse_session_id, send_message};
use crate::uploads::SendBody;

/// `upload_limit`: see `sessions::router`.
pub fn router(upload_limit: usize) -> Router<AppState> {
    Router::new().route(
        "/v1/chat",
        post(chat.layer(DefaultBodyLimit::max(upload_limit))),
    )
}

const CHANNELS: &[&str] = &["api", "web", "cli", "lark"];

/// Send one message, creating the session when `session_id` is absent.
#[utoipa::path(post, path = "/v1/chat", request_body = ChatRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "makes retries safe (1 to 200 printable ASCII characters)")),
    responses((status = 200, description = "`wait`/default: the run's result; `stream: true`: its events", content((weft_shared::api::RunResult = "application/json"), (weft_shared::event::RunEventMessage = "text/event-stream"))), (status = 202, body = weft_shared::api::SendAccepted)))]
pub async fn chat(
    State(state): State<AppState>,
    Caller(user): Caller,
    token: PresentedToken,
    headers: HeaderMap,
    SendBody {
        req,
        files,
        room: _room,
    }: SendBody<ChatRequest>,
) -> ApiResult<Response> {
    // Checked first: a refused key must not leave a new, empty session behind.
    let key = idempotency_key(&headers)?;
    let text = match (&req.message, &req.messages) {
        (Some(m), _) => m.clone(),
        (None, Some(msgs)) => msgs
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.clone())
            .ok_or_else(|| ApiError::Validation("messages has no user message".into()))?,
        (None, None) if !files.is_empty() => String::new(),
        (None, None) => return Err(ApiError::Validation("give message or messages".into())),
    };
    let channel = req.channel.as_deref().unwrap_or("api");
    if !CHANNELS.contains(&channel) {
        return Err(ApiError::Validation(format!(
            "channel must be one of {}",
            CHANNELS.join(", ")
        )));
    }
    let session = match req.session_id.as_deref() {
        Some(id) => parse_session_id(id)?,
        None => {
            let created = create_session(
                &state,
                &user,
                CreateSessionRequest {
                    title: None,
                    model: req.model.clone(),
                    agent: None,
                    mode: None,
                },
                channel,
            )
            .await?;
            parse_session_id(&created.id)?
        }
    };
    let send = SendMessageRequest {
        text,
        attachments: Vec::new(),
        model: req.model,
        agent: None,
        mode: None,
        multitask: Multitask::Enqueue,
        stream: req.stream,
        wait: !req.stream,
        plan: false,
    };
    send_message(&state, &user, token, session, send, files, key).await
}

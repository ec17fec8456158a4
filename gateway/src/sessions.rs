//! Sessions and messages: CRUD, history, sending (with `stream`/`wait`,
//! `Idempotency-Key` and the three `multitask` policies) and the session stream.

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use weft_shared::api::{
    CreateSessionRequest, MessageList, SendAccepted, SendMessageRequest, SessionDto, SessionList,
    UpdateSessionRequest,
};
use weft_shared::ids::{MessageId, RunId, SessionId, UserId};
use weft_store::{AuthUser, NewMessage, RunStatus, SessionCursor};

use crate::AppState;
use crate::auth::Caller;
use crate::auth::PresentedToken;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, page_limit};
use crate::runs::wait_for_result;
use crate::sse::{AfterQuery, Opener, attach_to_run, resume_point, run_events};
use crate::storage_quota;
use crate::uploads::{self, SendBody, Upload};
use weft_runs::Sent;

/// `upload_limit`: the body limit of a send, which may carry attachments
/// (see `uploads::send_body_limit`); every other route keeps `limits.body_bytes`.
pub fn router(upload_limit: usize) -> Router<AppState> {
    Router::new()
        .route("/v1/sessions", get(list).post(create))
        .route(
            "/v1/sessions/{id}",
            get(get_one).patch(update).delete(remove),
        )
        .route(
            "/v1/sessions/{id}/messages",
            get(messages).post(send.layer(DefaultBodyLimit::max(upload_limit))),
        )
        .route("/v1/sessions/{id}/stream", get(stream))
}

pub fn parse_session_id(id: &str) -> ApiResult<SessionId> {
    SessionId::parse(id).ok_or(ApiError::NotFound)
}

/// Titles: at most 200 characters.
fn validate_title(t: &str) -> ApiResult<()> {
    if t.chars().count() > 200 {
        return Err(ApiError::Validation(
            "title must be at most 200 characters".into(),
        ));
    }
    Ok(())
}

/// Create a session.
#[utoipa::path(post, path = "/v1/sessions", request_body = CreateSessionRequest, responses((status = 201, body = SessionDto)))]
pub async fn create(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateSessionRequest>,
) -> ApiResult<(StatusCode, Json<SessionDto>)> {
    let s = create_session(&state, &user, req, "api").await?;
    Ok((StatusCode::CREATED, Json(s)))
}

pub async fn create_session(
    state: &AppState,
    user: &AuthUser,
    req: CreateSessionRequest,
    source: &str,
) -> ApiResult<SessionDto> {
    let title = req.title.unwrap_or_default();
    validate_title(&title)?;
    let agent = state.resolve_agent(user, req.agent.as_deref().or(req.mode.as_deref()))?;
    let model = model_for(state, user, &agent, req.model.as_deref()).await?;
    let s = state
        .store
        .create_session(&user.id, title.trim(), &model, &agent, source)
        .await?;
    Ok(s.to_dto())
}

/// The model of a new session (or schedule) of `agent`: the one asked for;
/// else the agent's own, if it names one that exists and is open to the user;
/// else the user's default.
pub async fn model_for(
    state: &AppState,
    user: &AuthUser,
    agent: &str,
    asked: Option<&str>,
) -> ApiResult<String> {
    Ok(match asked {
        Some(m) => state.resolve_model(user, Some(m))?,
        None => match state
            .store
            .get_agent(agent)
            .await
            .ok()
            .and_then(|a| a.spec.model)
        {
            Some(m) => state
                .resolve_model(user, Some(&m))
                .or_else(|_| state.resolve_model(user, None))?,
            None => state.resolve_model(user, None)?,
        },
    })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Case-insensitive title search.
    pub q: Option<String>,
    /// Page size, 1–100 (default 30).
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

/// Your sessions, newest first, with title search.
#[utoipa::path(get, path = "/v1/sessions", params(ListQuery), responses((status = 200, body = SessionList)))]
pub async fn list(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<SessionList>> {
    let limit = page_limit(q.limit, 30, 100)?;
    let cursor = match q.cursor.as_deref() {
        Some(c) => Some(
            SessionCursor::parse(c)
                .ok_or_else(|| ApiError::InvalidRequest("invalid cursor".into()))?,
        ),
        None => None,
    };
    let (sessions, next) = state
        .store
        .list_sessions(&user.id, q.q.as_deref(), limit, cursor.as_ref())
        .await?;
    Ok(Json(SessionList {
        sessions: sessions.iter().map(|s| s.to_dto()).collect(),
        next_cursor: next.map(|c| c.encode()),
    }))
}

/// One session, with its active run (or null).
#[utoipa::path(get, path = "/v1/sessions/{id}", responses((status = 200, body = SessionDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<SessionDto>> {
    Ok(Json(
        state
            .store
            .get_session(&user.id, &parse_session_id(&id)?)
            .await?
            .to_dto(),
    ))
}

/// Rename a session, change its model or agent, or the knowledge bases it
/// searches besides its agent's.
#[utoipa::path(patch, path = "/v1/sessions/{id}", request_body = UpdateSessionRequest, responses((status = 200, body = SessionDto)))]
pub async fn update(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateSessionRequest>,
) -> ApiResult<Json<SessionDto>> {
    let id = parse_session_id(&id)?;
    if let Some(t) = &req.title {
        validate_title(t)?;
    }
    let model = state.model_override(&user, req.model.as_deref())?;
    let agent = state.agent_override(&user, req.agent.as_deref().or(req.mode.as_deref()))?;
    let bases = match &req.knowledge {
        Some(meant) => Some(knowledge_bases_meant(&state, &user, meant).await?),
        None => None,
    };
    let mut s = state
        .store
        .update_session(
            &user.id,
            &id,
            req.title.as_deref().map(str::trim),
            model.as_deref(),
            agent.as_deref(),
        )
        .await?;
    if let Some(bases) = bases {
        s = state
            .store
            .set_session_knowledge(&user.id, &id, &bases)
            .await?;
    }
    Ok(Json(s.to_dto()))
}

/// The ids of the knowledge bases `user` means by `meant` (ids or names); a
/// name or id they cannot open is 422 naming it.
pub(crate) async fn knowledge_bases_meant(
    state: &AppState,
    user: &AuthUser,
    meant: &[String],
) -> ApiResult<Vec<String>> {
    if meant.len() > 20 {
        return Err(ApiError::Validation(
            "a session searches at most 20 knowledge bases besides its agent's".into(),
        ));
    }
    let mut ids = Vec::with_capacity(meant.len());
    for m in meant {
        match state.store.knowledge_base_meant(user, m.trim()).await {
            Ok(base) => ids.push(base.id),
            Err(weft_store::StoreError::NotFound) => {
                return Err(ApiError::Validation(format!(
                    "knowledge: no knowledge base {m:?} is open to you"
                )));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ids)
}

/// Delete a session. Its active run ends `cancelled` (`by: "deleted"`): attached
/// streams get that terminal event and close, and the run's event log retires.
#[utoipa::path(delete, path = "/v1/sessions/{id}", responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn remove(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = parse_session_id(&id)?;
    state.store.get_session(&user.id, &id).await?;
    let files = state.store.session_blobs(&id).await?;
    let ended = state.store.delete_session(&user.id, &id).await?;
    state.runs.end_deleted(&ended).await;
    // Files no other message names go with the session (an upload of the same
    // bytes in the last moment keeps them: see `store::attachments`).
    let now = weft_shared::time::now_ms();
    for sha in files {
        uploads::sweep(&state, &sha, now).await;
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct MessagesQuery {
    /// Page size, 1–200 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page: older messages.
    pub cursor: Option<String>,
}

/// The most recent messages (oldest→newest within the page); `cursor` pages back.
#[utoipa::path(get, path = "/v1/sessions/{id}/messages", params(MessagesQuery), responses((status = 200, body = MessageList)))]
pub async fn messages(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<MessagesQuery>,
) -> ApiResult<Json<MessageList>> {
    let id = parse_session_id(&id)?;
    let limit = page_limit(q.limit, 50, 200)?;
    if q.cursor
        .as_deref()
        .is_some_and(|c| !weft_store::valid_cursor(c))
    {
        return Err(ApiError::InvalidRequest("invalid cursor".into()));
    }
    let (msgs, next) = state
        .store
        .list_messages(&user.id, &id, limit, q.cursor.as_deref())
        .await?;
    Ok(Json(MessageList {
        messages: msgs.iter().map(|m| m.to_dto()).collect(),
        next_cursor: next,
    }))
}

/// Send a message. `stream: true` answers with the new run's SSE; `wait: true`
/// with its result; otherwise 202. A retried request with the same
/// `Idempotency-Key` never creates a second message or run.
///
/// Files go in `attachments` (base64), or the body is `multipart/form-data`: a
/// `json` part with this body and one part per file. Over an attachment limit
/// is 413 naming it; a file whose type is not taken, or whose bytes contradict
/// its declared type, 422.
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", request_body = SendMessageRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "makes retries safe")),
    responses((status = 202, body = SendAccepted), (status = 200, description = "`wait: true`: the run's result; `stream: true`: its events", content((weft_shared::api::RunResult = "application/json"), (weft_shared::event::RunEventMessage = "text/event-stream"))),
              (status = 409, body = weft_shared::api::ErrorEnvelope), (status = 429, body = weft_shared::api::ErrorEnvelope)))]
pub async fn send(
    State(state): State<AppState>,
    Caller(user): Caller,
    token: PresentedToken,
    Path(id): Path<String>,
    headers: HeaderMap,
    SendBody {
        req,
        files,
        room: _room,
    }: SendBody<SendMessageRequest>,
) -> ApiResult<Response> {
    let session = parse_session_id(&id)?;
    let key = idempotency_key(&headers)?;
    send_message(&state, &user, token, session, req, files, key).await
}

/// The longest `Idempotency-Key`, in characters.
const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;

/// The request's `Idempotency-Key`, when it sent one: 1 to 200 printable ASCII
/// characters (spaces inside allowed; a tab or any other control character, or a
/// byte outside ASCII, is 400). Every route that takes the header reads it here.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .map_err(|_| ApiError::InvalidRequest("Idempotency-Key must be ASCII".into()))?
        .trim();
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(ApiError::InvalidRequest(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters"
        )));
    }
    if !key.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
        return Err(ApiError::InvalidRequest(
            "Idempotency-Key must be printable ASCII (no tabs or control characters)".into(),
        ));
    }
    Ok(Some(key.to_string()))
}

pub use weft_runs::Submitted;

/// Where a message comes from, beyond its text.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub idempotency_key: Option<String>,
    /// A shared conversation (a Lark group) whose session another member owns:
    /// who owns it, and the speaker's name there. None: the sender's own session.
    pub shared: Option<Shared>,
    /// The Lark message it came from.
    pub lark_message_id: Option<String>,
    /// Files received outside the JSON body (multipart parts, Lark resources).
    pub files: Vec<Upload>,
}

/// A message into a session someone else owns (see [`Origin::shared`]).
#[derive(Debug, Clone)]
pub struct Shared {
    pub owner: UserId,
    pub speaker_name: String,
}

/// Validate and send; shared by the messages endpoint and `/v1/chat`.
pub async fn send_message(
    state: &AppState,
    user: &AuthUser,
    PresentedToken(token_hash): PresentedToken,
    session: SessionId,
    req: SendMessageRequest,
    files: Vec<Upload>,
    key: Option<String>,
) -> ApiResult<Response> {
    let (stream, wait) = (req.stream, req.wait);
    let origin = Origin {
        idempotency_key: key,
        shared: None,
        lark_message_id: None,
        files,
    };
    // A refused stream must not leave an accepted message behind: admit first.
    let permit = stream
        .then(|| state.streams.admit(&user.id, None))
        .transpose()?;
    let (run_id, message_id) = match submit(state, user, &session, req, origin).await? {
        Submitted::Run { run_id, message_id } => (run_id, message_id),
        Submitted::Queued {
            message_id,
            active_run_id,
        } => return Ok(queued(session, message_id, active_run_id)),
    };
    if let Some(mut permit) = permit {
        // Just created (or found again by its idempotency key): if it has already
        // ended, attaching replays its whole log all the same.
        permit.attach_run(&run_id);
        let opener = Opener {
            permit,
            user: user.id.clone(),
            token_hash,
        };
        return run_events(state, opener, &run_id, false, 0).await;
    }
    if wait {
        return Ok(Json(wait_for_result(state, &user.id, &run_id).await?).into_response());
    }
    let run = state.store.get_run(&user.id, &run_id).await?;
    let body = SendAccepted {
        run_id: Some(run_id.0),
        message_id: message_id.0,
        status: run.status,
        active_run_id: None,
        session_id: session.0,
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// A message from any of the gateway's doors (the API, the Lark bot): who may
/// use which model and agent, and its files, checked and stored here; then the
/// run service sends it (`weft_runs::Runs::send`, the one path that creates runs
/// from messages).
pub async fn submit(
    state: &AppState,
    owner: &AuthUser,
    session: &SessionId,
    mut req: SendMessageRequest,
    mut origin: Origin,
) -> ApiResult<Submitted> {
    let user = &owner.id;
    let session_owner = origin.shared.as_ref().map_or(user, |s| &s.owner);
    let mut uploads = std::mem::take(&mut origin.files);
    uploads.extend(uploads::from_json(std::mem::take(&mut req.attachments))?);
    state.runs.check_text(&req.text, !uploads.is_empty())?;
    let model = state.model_override(owner, req.model.as_deref())?;
    let agent = state.agent_override(owner, req.agent.as_deref().or(req.mode.as_deref()))?;
    state
        .check_session_choice(
            owner,
            session_owner,
            session,
            model.as_deref(),
            agent.as_deref(),
        )
        .await?;
    // The session must exist before any file is stored for it.
    if !uploads.is_empty() {
        state.store.get_session(session_owner, session).await?;
    }
    storage_quota::precheck(state, user, &uploads).await?;
    let accepted = uploads::accept(state, uploads).await?;
    let sent = state
        .runs
        .send(NewMessage {
            user: user.clone(),
            session_owner: session_owner.clone(),
            author_name: origin.shared.as_ref().map(|s| s.speaker_name.clone()),
            session: session.clone(),
            text: req.text,
            attachments: accepted.files.clone(),
            model,
            agent,
            multitask: req.multitask,
            idempotency_key: origin.idempotency_key,
            lark_message_id: origin.lark_message_id,
            plan: req.plan,
        })
        .await;
    // A refused (or replayed) send wrote no attachment rows: its files go again.
    if !matches!(sent, Ok(Sent { written: true, .. })) {
        uploads::forget(state, &accepted).await;
    }
    Ok(sent?.submitted)
}

fn queued(session: SessionId, message_id: MessageId, active: Option<String>) -> Response {
    let body = SendAccepted {
        run_id: None,
        message_id: message_id.0,
        status: RunStatus::Queued,
        active_run_id: active,
        session_id: session.0,
    };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

/// Attach to the session's active run (replay + live); 204 when there is none.
#[utoipa::path(get, path = "/v1/sessions/{id}/stream", params(AfterQuery),
    responses((status = 200, content_type = "text/event-stream", body = weft_shared::event::RunEventMessage), (status = 204),
        (status = 400, description = "Last-Event-ID or after is not an integer from 0 to 2^53 - 1", body = weft_shared::api::ErrorEnvelope)))]
pub async fn stream(
    State(state): State<AppState>,
    Caller(user): Caller,
    PresentedToken(token_hash): PresentedToken,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AfterQuery>,
) -> ApiResult<Response> {
    let after = resume_point(&headers, q.after)?;
    let s = state
        .store
        .get_session(&user.id, &parse_session_id(&id)?)
        .await?;
    let Some(run_id) = s.active_run_id.as_deref().and_then(RunId::parse) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    attach_to_run(&state, &user.id, token_hash, &run_id, after).await
}

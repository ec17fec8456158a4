//! HTTP API bodies (docs/protocol.md, "HTTP API"). The gateway serialises these,
//! the CLI, the load tester and the web UI's types read them; `utoipa` derives the
//! OpenAPI description from the same structs, so the spec cannot drift from the
//! code.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

mod agents;
mod delegations;
mod knowledge;
mod memory;
mod plans;
mod questions;
#[macro_use]
mod schedules;
mod channels;
mod settings;
mod todos;
mod tools;

pub use agents::*;
pub use channels::*;
pub use delegations::*;
pub use knowledge::*;
pub use memory::*;
pub use plans::*;
pub use questions::*;
pub use schedules::*;
pub use settings::*;
pub use todos::*;
pub use tools::*;

/// `{"error":{"code","message"}}` — the one error envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// snake_case machine-readable code, e.g. `run_active`.
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsageDto {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub reasoning: u64,
    /// Estimated tokens of the context the model was last sent, and its model's
    /// window (0 when unknown): how full the conversation is.
    #[serde(default)]
    pub context_tokens: u64,
    #[serde(default)]
    pub context_window: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LoginResponse {
    pub token: String,
    pub user: UserDto,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserDto {
    pub id: String,
    pub username: String,
    pub role: crate::states::Role,
    pub created_at: String,
    /// The user's attachment storage; only in `GET /v1/me`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageDto>,
}

/// Attachment storage against the quota (`limits.storage_bytes_per_user`): the
/// distinct files the user's messages carry, each counted once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StorageDto {
    pub used_bytes: u64,
    /// `null`: no quota.
    pub limit_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UserList {
    pub users: Vec<UserDto>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreateUserRequest {
    pub username: String,
    pub password: String,
    #[serde(default = "default_role")]
    pub role: String,
}

fn default_role() -> String {
    "user".into()
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct UpdateUserRequest {
    pub password: Option<String>,
    pub role: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenDto {
    pub id: String,
    pub name: String,
    /// `api` (a personal API token), `login` (a web or `/v1/auth/login` session)
    /// or `bootstrap` (`WEFT_ADMIN_TOKEN`).
    pub kind: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    /// Login sessions expire; API and bootstrap tokens do not.
    pub expires_at: Option<String>,
    /// This is the token the request was made with.
    pub current: bool,
}

/// `POST /v1/me/password`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChangePasswordRequest {
    pub current: String,
    pub new: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenDto>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreateTokenRequest {
    pub name: String,
}

/// The secret is shown once, here.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreatedToken {
    pub id: String,
    pub name: String,
    pub token: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelDto {
    pub id: String,
    pub provider: String,
    pub default: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ModelList {
    pub models: Vec<ModelDto>,
}

// `GET /v1/modes`: the agents under their older name, "modes" (a wire alias).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModeDto {
    pub id: String,
    pub description: String,
    pub default: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ModeList {
    pub modes: Vec<ModeDto>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct CreateSessionRequest {
    pub title: Option<String>,
    pub model: Option<String>,
    /// The agent (`GET /v1/agents`); `mode` is the older name for it.
    #[serde(default)]
    pub agent: Option<String>,
    pub mode: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct UpdateSessionRequest {
    pub title: Option<String>,
    pub model: Option<String>,
    /// The agent (`GET /v1/agents`); `mode` is the older name for it.
    #[serde(default)]
    pub agent: Option<String>,
    pub mode: Option<String>,
    /// Knowledge bases this session searches besides its agent's, by id or by
    /// name (your own base of that name first, else a shared one); `[]` clears.
    #[serde(default)]
    pub knowledge: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionDto {
    pub id: String,
    pub title: String,
    pub model: String,
    /// The session's agent (`GET /v1/agents`).
    pub agent: String,
    /// The same id under its older name.
    pub mode: String,
    /// `web`, `api`, `cli` or `lark`.
    pub source: String,
    pub active_run_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Knowledge bases (ids) this session searches besides its agent's.
    #[serde(default)]
    pub knowledge: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionDto>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolCallDto {
    pub id: String,
    pub name: String,
    pub args: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MessageDto {
    pub id: String,
    pub session_id: String,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    pub run_id: Option<String>,
    pub step: Option<u32>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDto>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Files sent with a user message, in the order they were attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentDto>,
    /// Who sent a user message (absent on messages stored before speakers were
    /// recorded, and on assistant and tool messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_id: Option<String>,
    /// The sender's name in a shared conversation (a Lark group), e.g. "Alice";
    /// absent in one-person sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_name: Option<String>,
    /// The sources an assistant reply cites as `[n]` (knowledge searches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
    /// What the model reasoned before this assistant message (its thinking,
    /// one paragraph per block); absent when it showed none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Its run proposed plans (plan mode): `GET /v1/runs/{run_id}/plans`
    /// lists them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan: bool,
}

/// An image or a document sent with a message; `GET /v1/files/{id}` returns its bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AttachmentDto {
    pub id: String,
    pub name: String,
    pub kind: AttachmentKind,
    /// The type found in the bytes (never the name's or the client's claim).
    pub mime: String,
    pub bytes: u64,
    /// Set when a document's text could not be read (damaged, or too costly to
    /// read): why, e.g. "reading it took longer than 20 s". The model was told
    /// the same; the file itself is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// PNG, JPEG, GIF or WebP: sent to vision models as an image.
    Image,
    /// PDF, DOCX, XLSX, PPTX or text: the model reads its text.
    Document,
}

/// A file in a JSON send. Over `multipart/form-data` each file is a part of its own instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AttachmentUpload {
    /// The file's name as the user sees it (`shot.png`).
    pub name: String,
    /// Base64 of the bytes, with or without a `data:<type>;base64,` prefix.
    pub data: String,
    /// The type the client believes it is; the bytes decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MessageList {
    pub messages: Vec<MessageDto>,
    pub next_cursor: Option<String>,
}

/// What to do when a message arrives while the session has an active run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Multitask {
    /// Wait; when the active run ends, all waiting messages become one follow-up run.
    #[default]
    Enqueue,
    /// Cancel the active run (its partial output is kept) and start a new one.
    Interrupt,
    /// Refuse with 409 `run_active`.
    Reject,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct SendMessageRequest {
    pub text: String,
    /// Images and documents (at most `images_per_message` and
    /// `documents_per_message`, `attachments_bytes` in all; see `/v1/admin/limits`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentUpload>,
    pub model: Option<String>,
    /// Switch the session to this agent first; `mode` is the older name for it.
    #[serde(default)]
    pub agent: Option<String>,
    pub mode: Option<String>,
    #[serde(default)]
    pub multitask: Multitask,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub wait: bool,
    /// Plan mode: the agent researches with read-only tools and proposes a
    /// plan; nothing is carried out before a person approves it
    /// (`plan_proposed`, `POST /v1/plans/{id}`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan: bool,
}

/// 202 body of a send: a run was created (`status` is the run's), or the message
/// was queued behind `active_run_id` (`status` = `queued`, no `run_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SendAccepted {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub message_id: String,
    pub status: crate::states::RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_run_id: Option<String>,
    pub session_id: String,
}

/// 200 body of `wait: true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunResult {
    pub run_id: String,
    pub message_id: Option<String>,
    pub session_id: String,
    pub status: crate::states::RunStatus,
    pub content: String,
    pub model: String,
    pub usage: UsageDto,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunDto {
    pub id: String,
    pub session_id: String,
    pub status: crate::states::RunStatus,
    pub attempt: u32,
    pub model: String,
    pub usage: UsageDto,
    pub ttft_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub error: Option<ErrorBody>,
    pub final_message_id: Option<String>,
    pub created_at: String,
}

/// `POST /v1/chat`: a compatibility shortcut that creates the session when absent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChatRequest {
    pub message: Option<String>,
    /// OpenAI-style messages; the last `user` message is sent.
    pub messages: Option<Vec<ChatRequestMessage>>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    #[serde(default)]
    pub stream: bool,
    /// Where the session is said to come from (`api` by default).
    pub channel: Option<String>,
    /// Files for the message sent, as on `POST /v1/sessions/{id}/messages`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentUpload>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChatRequestMessage {
    pub role: String,
    pub content: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LimitsDto {
    pub body_bytes: u64,
    pub message_chars: u64,
    pub attachments_bytes: u64,
    pub images_per_message: u32,
    pub image_bytes: u64,
    pub documents_per_message: u32,
    pub document_bytes: u64,
    pub active_runs_per_user: u64,
    pub runs_per_minute_per_user: u64,
    /// Open event streams per user and per run (per gateway).
    pub streams_per_user: u64,
    pub streams_per_run: u64,
    /// Messages that may wait behind a session's running reply.
    pub queued_messages_per_session: u64,
    /// Bytes of distinct attachments one user may store (0: no quota).
    pub storage_bytes_per_user: u64,
    /// Per tool call, seconds.
    pub tool_call_timeout_secs: u64,
    /// Tool output the model sees before it pages with `read_output`.
    pub tool_output_cap_bytes: u64,
    /// How long an approval waits before it counts as denied.
    pub approval_ttl_secs: u64,
    /// Agent steps per run.
    pub max_steps: u32,
}

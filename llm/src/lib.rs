//! weft-llm: the model side of an agent step, independent of runs and sessions.
//!
//! A [`Provider`] streams exactly one attempt of one LLM call. Retrying transient
//! failures (and telling clients about it) is the worker's job, so the retry policy
//! lives in one place for every provider; providers only classify errors
//! ([`LlmError::Transient`] vs [`LlmError::Fatal`]) and surface `retry-after`.
//!
//! Providers: [`openai::OpenAiProvider`] (any OpenAI-compatible server),
//! [`anthropic::AnthropicProvider`] and the in-process [`mock::MockProvider`].
//!
//! `mockscript` parses the `@mock.*` directives shared by the in-process `mock`
//! provider and the load tester's mock LLM server, so both behave identically.

use std::time::Duration;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

pub mod anthropic;
mod classify;
pub mod embeddings;
pub mod mock;
pub mod mockscript;
pub mod openai;
pub mod retry;
mod sse;
pub mod tokens;

pub use classify::{classify_status, parse_retry_after};
pub use sse::http_client;
pub use weft_wire::reasoning::Reasoning;

/// One message of the context sent to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
        /// Images sent with the text, in order; only vision-capable models get them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
        /// The model's reasoning before this turn, block by block. Anthropic signs
        /// each thinking block and wants the blocks of a turn that called tools back
        /// unchanged in the next request of the same turn ([`Reasoning`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
    },
    Tool {
        call_id: String,
        name: String,
        content: String,
    },
}

/// An image sent with a user message. `data` is standard padded base64 of the bytes,
/// shared so a context rebuilt every step does not copy it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// The media type, e.g. `image/png` (Anthropic takes jpeg, png, gif and webp).
    pub mime: String,
    pub data: std::sync::Arc<str>,
}

/// A complete tool call requested by the model (arguments fully assembled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON arguments; an unparsable argument string is kept as a JSON string.
    pub args: serde_json::Value,
}

/// A tool the model may call (JSON-schema parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The provider-side model name (e.g. `gpt-4o-mini`).
    pub model: String,
    /// Shared, not copied: the worker sends the same conversation in every
    /// step and every retry, and appends to it after the call (`Arc::make_mut`
    /// finds it unshared then).
    pub messages: std::sync::Arc<Vec<ChatMessage>>,
    pub tools: std::sync::Arc<Vec<ToolSpec>>,
    pub max_tokens: Option<u32>,
    /// Extended thinking's budget in tokens (Anthropic's `thinking.budget_tokens`,
    /// at least 1,024 and below `max_tokens`); `None` leaves thinking off.
    /// Providers without such a switch ignore it.
    pub thinking_budget: Option<u32>,
    /// 1-based attempt of this step within the worker's retry loop. Only the in-process
    /// mock uses it (for `@mock.fail … times=k`).
    pub attempt: u32,
}

/// Token usage of one LLM call.
///
/// `input` counts every prompt token, cached ones included (OpenAI's `prompt_tokens`;
/// for Anthropic `input_tokens + cache_read + cache_creation`), so `cache_read ≤ input`.
/// `output` counts every generated token, reasoning included, so `reasoning ≤ output`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub reasoning: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.reasoning += other.reasoning;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

/// What one streamed LLM call yields, in order. A well-formed stream ends with
/// exactly one `Finished`; tool calls are yielded whole, once their arguments are complete.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Thinking(String),
    /// A whole reasoning block, after the `Thinking` pieces of its text: what is
    /// sent back with the turn ([`Reasoning`]). Only providers with signed
    /// blocks (Anthropic) yield it.
    Reasoned(Reasoning),
    ToolCall(ToolCall),
    Finished {
        stop: StopReason,
        usage: Usage,
    },
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// Worth retrying: timeouts, connection errors, 408/409/429/5xx, overloaded,
    /// a stream cut before its end marker.
    #[error("transient: {reason}")]
    Transient {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Not worth retrying: 4xx other than the above, malformed responses, bad config.
    #[error("{reason}")]
    Fatal { reason: String, status: Option<u16> },
}

pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// One provider (OpenAI-compatible, Anthropic, mock). Streams one attempt of one call.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError>;
}

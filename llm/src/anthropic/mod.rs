//! Anthropic's Messages API, streamed over SSE (`llm-wire.md` §2).
//!
//! Differences from the OpenAI wire that this module absorbs: the system prompt is a
//! top-level field, tool results are `tool_result` blocks in a user turn, events are
//! named (`event:` lines) and end with `message_stop` rather than `[DONE]`, usage
//! counts cache reads apart from `input_tokens`, and errors can arrive mid-stream as
//! `event: error` after HTTP 200 (`overloaded_error` is then transient, like a 529).

mod decode;
mod request;

use std::time::Duration;

use crate::{ChatRequest, EventStream, LlmError, Provider};
use crate::{http_client, sse};

use decode::EventDecoder;

/// The `anthropic-version` header this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Anthropic requires `max_tokens`; this is sent when a request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// How to reach one Anthropic model.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// Base URL without the version path, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Sent as `x-api-key` when present.
    pub api_key: Option<String>,
    /// The model name sent when a request does not name one.
    pub model_name: String,
    pub connect_timeout: Duration,
    /// The longest silence tolerated: waiting for headers and between events.
    pub idle_timeout: Duration,
    /// Mark the prompt for Anthropic's cache (`cache_control`): the tools and
    /// system prompt, and everything up to the newest message, so the next step
    /// or turn reads that prefix from the cache ([`request`]).
    pub prompt_cache: bool,
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model_name", &self.model_name)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("prompt_cache", &self.prompt_cache)
            .finish()
    }
}

#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    client: reqwest::Client,
    url: String,
}

impl AnthropicProvider {
    /// A provider with its own connection pool.
    pub fn new(config: AnthropicConfig) -> Self {
        let client = http_client(config.connect_timeout);
        Self::with_client(config, client)
    }

    /// A provider sharing `client` (and its connection pool) with others.
    pub fn with_client(config: AnthropicConfig, client: reqwest::Client) -> Self {
        let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        AnthropicProvider {
            config,
            client,
            url,
        }
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let body = request::body(&req, &self.config.model_name, self.config.prompt_cache);
        let mut http = self
            .client
            .post(&self.url)
            .header("anthropic-version", API_VERSION)
            .header("accept", "text/event-stream")
            .json(&body);
        if let Some(key) = &self.config.api_key {
            http = http.header("x-api-key", key);
        }
        let response = sse::send(http, self.config.idle_timeout).await?;
        Ok(sse::drive(
            response,
            self.config.idle_timeout,
            EventDecoder::default(),
        ))
    }
}

//! Any OpenAI-compatible Chat Completions server (OpenAI, DeepSeek, Qwen, Ollama,
//! vLLM), streamed over SSE.
//!
//! One [`OpenAiProvider`] per configured model, each holding a `reqwest::Client`
//! (pass one shared [`crate::http_client`] to [`OpenAiProvider::with_client`] to pool
//! connections across models). The wire details and dialect differences this code
//! absorbs are in `llm-wire.md` §1 and §3: tool calls fragmented or whole,
//! `reasoning_content` or `reasoning`, usage on any chunk, integer error codes, and
//! `[DONE]` or EOF after a `finish_reason` as the end.

mod decode;
mod request;

use std::time::Duration;

use crate::{ChatRequest, EventStream, LlmError, Provider};
use crate::{http_client, sse};

use decode::ChunkDecoder;

/// How to reach one OpenAI-compatible model.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when present.
    pub api_key: Option<String>,
    /// The model name sent when a request does not name one.
    pub model_name: String,
    pub connect_timeout: Duration,
    /// The longest silence tolerated: waiting for headers and between stream chunks.
    pub idle_timeout: Duration,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model_name", &self.model_name)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    client: reqwest::Client,
    url: String,
}

impl OpenAiProvider {
    /// A provider with its own connection pool.
    pub fn new(config: OpenAiConfig) -> Self {
        let client = http_client(config.connect_timeout);
        Self::with_client(config, client)
    }

    /// A provider sharing `client` (and its connection pool) with others.
    pub fn with_client(config: OpenAiConfig, client: reqwest::Client) -> Self {
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        OpenAiProvider {
            config,
            client,
            url,
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let body = request::body(&req, &self.config);
        let mut http = self
            .client
            .post(&self.url)
            .header("accept", "text/event-stream")
            .json(&body);
        if let Some(key) = &self.config.api_key {
            http = http.bearer_auth(key);
        }
        let response = sse::send(http, self.config.idle_timeout).await?;
        Ok(sse::drive(
            response,
            self.config.idle_timeout,
            ChunkDecoder::default(),
        ))
    }
}

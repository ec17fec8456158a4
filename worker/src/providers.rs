//! Model id → provider, built once from `[[models]]`. API keys are read from the
//! environment variable each model names (`api_key_env`), never from the file.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use weft_config::{ModelConfig, ProviderKind};
use weft_llm::anthropic::{AnthropicConfig, AnthropicProvider};
use weft_llm::mock::MockProvider;
use weft_llm::openai::{OpenAiConfig, OpenAiProvider};
use weft_llm::{ChatMessage, ChatRequest, LlmError, Provider, StreamEvent, Usage};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest silence between two chunks of a streaming response.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The API key from the environment variable the model names, if it names one.
fn api_key(m: &ModelConfig) -> anyhow::Result<Option<String>> {
    weft_config::api_key_from_env(&format!("model {:?}", m.id), m.api_key_env.as_deref())
        .map_err(anyhow::Error::msg)
}

#[derive(Clone)]
pub struct ModelEntry {
    pub config: ModelConfig,
    pub provider: Arc<dyn Provider>,
}

impl ModelEntry {
    /// The name the provider knows the model by.
    pub fn wire_name(&self) -> String {
        self.config
            .model
            .clone()
            .unwrap_or_else(|| self.config.id.clone())
    }

    /// A call beside a run (a summary, a memory extraction): `instructions`
    /// and one `input`, no tools; its whole text and usage, or an error
    /// (a stream that fails midway, or no answer within `within`).
    pub async fn side_call(
        &self,
        instructions: &str,
        input: String,
        max_tokens: u32,
        within: Duration,
    ) -> Result<(String, Usage), LlmError> {
        let req = ChatRequest {
            model: self.wire_name(),
            messages: vec![
                ChatMessage::System {
                    content: instructions.into(),
                },
                ChatMessage::User {
                    content: input,
                    images: Vec::new(),
                },
            ]
            .into(),
            tools: Default::default(),
            max_tokens: Some(max_tokens),
            thinking_budget: None,
            attempt: 1,
        };
        let call = async {
            let mut stream = self.provider.stream(req).await?;
            let (mut text, mut usage) = (String::new(), Usage::default());
            while let Some(ev) = stream.next().await {
                match ev? {
                    StreamEvent::Text(t) => text.push_str(&t),
                    StreamEvent::Finished { usage: u, .. } => usage = u,
                    _ => {}
                }
            }
            Ok((text, usage))
        };
        tokio::time::timeout(within, call)
            .await
            .unwrap_or_else(|_| {
                Err(LlmError::Transient {
                    reason: format!("no answer within {} s", within.as_secs()),
                    retry_after: None,
                })
            })
    }
}

#[derive(Clone, Default)]
pub struct Providers {
    models: HashMap<String, ModelEntry>,
    /// The first of the models given: the default.
    default: Option<String>,
}

impl Providers {
    pub fn from_config(models: &[ModelConfig]) -> anyhow::Result<Providers> {
        let mut out = HashMap::new();
        for m in models {
            let provider: Arc<dyn Provider> = match m.provider {
                ProviderKind::Mock => Arc::new(MockProvider::new().with_window(m.context_window)),
                ProviderKind::Openai => Arc::new(OpenAiProvider::new(OpenAiConfig {
                    base_url: m
                        .base_url
                        .clone()
                        .unwrap_or_else(|| "https://api.openai.com/v1".into()),
                    api_key: api_key(m)?,
                    model_name: m.model.clone().unwrap_or_else(|| m.id.clone()),
                    connect_timeout: CONNECT_TIMEOUT,
                    idle_timeout: IDLE_TIMEOUT,
                })),
                ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(AnthropicConfig {
                    base_url: m
                        .base_url
                        .clone()
                        .unwrap_or_else(|| "https://api.anthropic.com".into()),
                    api_key: api_key(m)?,
                    model_name: m.model.clone().unwrap_or_else(|| m.id.clone()),
                    connect_timeout: CONNECT_TIMEOUT,
                    idle_timeout: IDLE_TIMEOUT,
                    prompt_cache: m.prompt_cache.unwrap_or(true),
                })),
            };
            out.insert(
                m.id.clone(),
                ModelEntry {
                    config: m.clone(),
                    provider,
                },
            );
        }
        Ok(Providers {
            models: out,
            default: models.first().map(|m| m.id.clone()),
        })
    }

    pub fn get(&self, id: &str) -> Option<&ModelEntry> {
        self.models.get(id)
    }

    /// The default model's id (the first one configured with `default`).
    pub fn default_id(&self) -> Option<&str> {
        self.default.as_deref()
    }
}

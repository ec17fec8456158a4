//! `[[models]]`: the configured LLM endpoints.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Openai,
    Anthropic,
    Mock,
}

impl ProviderKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Mock => "mock",
        }
    }
}

/// One `[[models]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelConfig {
    /// The id clients choose (`gpt-4o-mini`, `deepseek`, `mock`).
    pub id: String,
    pub provider: ProviderKind,
    /// Provider base URL (e.g. `https://api.openai.com/v1`).
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Provider-side model name, when it differs from `id`.
    pub model: Option<String>,
    #[serde(default)]
    pub default: bool,
    pub max_tokens: Option<u32>,
}

impl ModelConfig {
    pub fn mock() -> ModelConfig {
        ModelConfig {
            id: "mock".into(),
            provider: ProviderKind::Mock,
            base_url: None,
            api_key_env: None,
            model: None,
            default: true,
            max_tokens: None,
        }
    }
}

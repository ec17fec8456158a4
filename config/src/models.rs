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

/// The API key in the environment variable `var` (a config's `api_key_env`),
/// if one is named; `what` names the config entry in the error.
pub fn api_key_from_env(what: &str, var: Option<&str>) -> Result<Option<String>, String> {
    match var {
        Some(var) => std::env::var(var)
            .map(Some)
            .map_err(|_| format!("{what}: environment variable {var} (api_key_env) is not set")),
        None => Ok(None),
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
    /// Anthropic extended thinking: the tokens the model may reason with before
    /// it answers (`thinking.budget_tokens`, at least 1,024 and below
    /// `max_tokens` when that is set). Unset: thinking stays off. Anthropic
    /// models only; OpenAI-compatible servers that reason do so unasked.
    #[serde(default)]
    pub thinking_budget: Option<u32>,
    /// Anthropic prompt caching (`cache_control` on the instructions and the
    /// conversation so far): each step and turn reads what the last one sent from
    /// the cache, billed at a tenth of the input price. Default on; `false` turns
    /// it off (the cache's writes cost a quarter more than plain input, which a
    /// model used for one-off prompts may not earn back). Anthropic models only.
    #[serde(default)]
    pub prompt_cache: Option<bool>,
    /// Tokens the model reads at most; default per provider (OpenAI-compatible
    /// 128k, Anthropic 200k, the mock 32k).
    #[serde(default)]
    pub context_window: Option<u32>,
    /// Whether the model sees images. Default: Anthropic and the mock yes,
    /// OpenAI-compatible servers no (many of them refuse image parts with a 400);
    /// set `vision = true` for `gpt-4o` and the like. A model without vision gets
    /// a note naming each image instead.
    #[serde(default)]
    pub vision: Option<bool>,
    /// Usernames that may use this model (see [`super::access`]); with
    /// `allowed_roles` both empty, everyone may.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Roles (`admin`, `user`) that may use this model.
    #[serde(default)]
    pub allowed_roles: Vec<String>,
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
            thinking_budget: None,
            prompt_cache: None,
            context_window: None,
            vision: None,
            allowed_users: Vec::new(),
            allowed_roles: Vec::new(),
        }
    }

    /// Why this model's provider-specific settings (thinking, cache) cannot work.
    pub fn provider_problem(&self) -> Option<String> {
        let id = &self.id;
        if self.prompt_cache.is_some() && self.provider != ProviderKind::Anthropic {
            return Some(format!(
                "model {id:?}: prompt_cache is for Anthropic models (OpenAI-compatible servers cache by themselves)"
            ));
        }
        let budget = self.thinking_budget?;
        if self.provider != ProviderKind::Anthropic {
            return Some(format!(
                "model {id:?}: thinking_budget is for Anthropic models (provider = \"anthropic\")"
            ));
        }
        if budget < 1024 {
            return Some(format!(
                "model {id:?}: thinking_budget must be at least 1024 (Anthropic's minimum), not {budget}"
            ));
        }
        match self.max_tokens {
            Some(max) if max <= budget => Some(format!(
                "model {id:?}: max_tokens ({max}) must be greater than thinking_budget ({budget}): \
                 the budget is part of the tokens the model may write"
            )),
            _ => None,
        }
    }

    /// Whether `who` may use this model.
    pub fn allows_user(&self, who: super::access::Requester<'_>) -> bool {
        super::access::allows(&self.allowed_users, &self.allowed_roles, who)
    }

    /// Whether this model is limited to some users or roles.
    pub fn is_restricted(&self) -> bool {
        super::access::restricted(&self.allowed_users, &self.allowed_roles)
    }

    /// Whether images go to this model (see [`ModelConfig::vision`]).
    pub fn sees_images(&self) -> bool {
        self.vision.unwrap_or(match self.provider {
            ProviderKind::Openai => false,
            ProviderKind::Anthropic | ProviderKind::Mock => true,
        })
    }

    /// The context window in force for this model.
    pub fn window(&self) -> u32 {
        self.context_window.unwrap_or(match self.provider {
            ProviderKind::Openai => 128_000,
            ProviderKind::Anthropic => 200_000,
            ProviderKind::Mock => 32_000,
        })
    }
}

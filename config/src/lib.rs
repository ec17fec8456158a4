//! Layered configuration: defaults → `weft.toml` (`--config` / `WEFT_CONFIG`) →
//! `WEFT_*` environment (`__` nests: `WEFT_LIMITS__BODY_BYTES`; `WEFT_<KEY>_FILE`
//! reads a setting from a file, see `secret_files`) → command-line flags.
//! Then the admins' settings saved from the web (`config_settings` in the
//! database) over all of it. Validated completely before it is used
//! ([`Config::validate`]), at start-up and on every reload ([`live`]); secrets
//! are wrapped in [`Secret`] so `Debug` output and logs never show them.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

pub mod access;
pub mod agents;
mod attachments;
mod email;
mod files;
mod http;
mod knowledge;
mod lark;
pub mod live;
pub mod masking;
mod mcp;
mod memory;
mod models;
mod schedules;
mod secret_files;
mod tools;
mod web;
mod worker;

pub use access::Requester;
pub use agents::AgentConfig;
pub use attachments::AttachmentsConfig;
pub use email::EmailConfig;
pub use files::FilesConfig;
pub use http::{HttpConfig, Limits, LoginConfig, parse_proxy};
pub use knowledge::{EmbeddingModelConfig, KnowledgeConfig, MAX_TOP_K, valid_base_name};
pub use lark::{LarkConfig, LarkLanguage};
pub use live::{Change, LiveConfig, ReloadError};
pub use mcp::{McpPathGrant, McpSandbox, McpServerConfig};
pub use memory::{MAX_MEMORY_CHARS, MemoryConfig};
pub use models::{ModelConfig, ProviderKind, api_key_from_env};
pub use schedules::SchedulesConfig;
pub use tools::{
    AllowHost, MAX_CALL_TIMEOUT_SECS, SearchBackendKind, ToolPolicy, ToolsConfig, WebFetchConfig,
    WebSearchConfig,
};
pub use worker::{ContextConfig, EventsConfig, WorkerConfig};

/// An IANA timezone name, checked: the settings' `default_timezone`, a user's
/// timezone and a schedule's all go through here, so they fail alike.
pub fn parse_timezone(name: &str) -> Result<chrono_tz::Tz, String> {
    name.trim().parse().map_err(|_| {
        format!(
            "{name:?} is not an IANA timezone (e.g. Asia/Shanghai, Europe/Berlin, UTC; case matters)"
        )
    })
}

/// A string that never prints.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Address to listen on; each command has its own default (`up`: 127.0.0.1:8900,
    /// `serve`: 0.0.0.0:8900).
    pub listen: Option<String>,
    /// Serve `/metrics` and `/health` on this address of their own (e.g.
    /// `0.0.0.0:9900`; `--metrics-listen`). A gateway (`up`, `serve`) then answers
    /// 404 for `/metrics` on `listen`, so a proxy or Ingress in front of the API
    /// never exposes them; a worker has no other listener.
    pub metrics_listen: Option<String>,
    /// `sqlite:…` (embedded) or `postgres://…` (distributed). Default: SQLite in `data_dir`.
    pub database_url: Option<Secret>,
    /// Postgres connections each process keeps at most (gateways and workers
    /// alike; size Postgres' `max_connections` for all processes together).
    pub database_max_connections: u32,
    /// `redis://…`; absent ⇒ in-process queue and bus.
    pub redis_url: Option<Secret>,
    /// Prefix of every Redis key, so tests and tenants can share one Redis.
    pub redis_prefix: String,
    /// Where embedded mode keeps `weft.db`. Default `~/.local/share/weft`.
    pub data_dir: Option<PathBuf>,
    /// Reverse proxies (IPs or CIDRs, e.g. `10.0.0.0/8`) whose `X-Forwarded-For`
    /// and `X-Forwarded-Proto` are believed. From any other peer those headers are
    /// ignored: the client is the TCP peer and the request is plain HTTP. Feeds the
    /// sign-in limiter, logs and the session cookie's `Secure` flag.
    pub trusted_proxies: Vec<String>,
    /// Sign-in attempt limits.
    pub login: LoginConfig,
    /// When set (at least [`MIN_ADMIN_TOKEN_CHARS`] characters), the server ensures
    /// an admin user `admin` that this bearer token authenticates; when unset, any
    /// earlier bootstrap token is revoked at start-up.
    pub admin_token: Option<Secret>,
    /// `text` (default) or `json` logs.
    pub log_format: String,
    pub limits: Limits,
    /// Attachment limits, storage and the document budget.
    pub attachments: AttachmentsConfig,
    /// How untrusted documents are read (a limited child process per file).
    pub files: FilesConfig,
    /// Knowledge bases: document limits, chunk sizes, search.
    pub knowledge: KnowledgeConfig,
    /// What the assistant remembers about each person.
    pub memory: MemoryConfig,
    /// Prompts agents run on their own, on a cron, an interval or once.
    pub schedules: SchedulesConfig,
    /// The SMTP server email channels send through.
    pub email: EmailConfig,
    /// Connection timeouts and the connection cap of the HTTP server.
    pub http: HttpConfig,
    pub worker: WorkerConfig,
    pub events: EventsConfig,
    /// Configured models; empty ⇒ the built-in `mock` demo model.
    pub models: Vec<ModelConfig>,
    /// Embedding models for knowledge search (`[[embedding_models]]`).
    pub embedding_models: Vec<EmbeddingModelConfig>,
    /// The Lark (Feishu) bot; on when `app_id` is set.
    pub lark: LarkConfig,
    /// Tool timeouts, output caps, approval policies and the web tools.
    pub tools: ToolsConfig,
    /// MCP servers whose tools the agent may use (`[[mcp_servers]]`).
    pub mcp_servers: Vec<McpServerConfig>,
    /// Agents (`[[agents]]`); the built-in `agent` and `chat` always exist.
    pub agents: Vec<AgentConfig>,
    /// Long conversations: summaries of older turns.
    pub context: ContextConfig,
    /// Skill folders (each with a `SKILL.md`); default `<data_dir>/skills`.
    pub skills_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: None,
            metrics_listen: None,
            database_url: None,
            database_max_connections: 32,
            redis_url: None,
            redis_prefix: "weft:".into(),
            data_dir: None,
            trusted_proxies: Vec::new(),
            login: LoginConfig::default(),
            admin_token: None,
            log_format: "text".into(),
            limits: Limits::default(),
            attachments: AttachmentsConfig::default(),
            files: FilesConfig::default(),
            knowledge: KnowledgeConfig::default(),
            memory: MemoryConfig::default(),
            schedules: SchedulesConfig::default(),
            email: EmailConfig::default(),
            http: HttpConfig::default(),
            worker: WorkerConfig::default(),
            events: EventsConfig::default(),
            models: Vec::new(),
            embedding_models: Vec::new(),
            lark: LarkConfig::default(),
            tools: ToolsConfig::default(),
            mcp_servers: Vec::new(),
            agents: Vec::new(),
            context: ContextConfig::default(),
            skills_dir: None,
        }
    }
}

/// The shortest `WEFT_ADMIN_TOKEN` accepted: it authenticates an admin over the
/// network, so it must not be guessable.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// The example tokens shipped in `deploy/` (the k8s example overlay; compose's
/// `.env.example` carried it before `make-secrets`): long enough, and public. A deployment that kept one is refused.
const EXAMPLE_ADMIN_TOKENS: &[&str] = &["change-me-admin-token-0123456789abcdef0123456789"];

/// Words that mark a value someone was meant to replace.
const PLACEHOLDER_WORDS: &[&str] = &[
    "changeme",
    "replaceme",
    "example",
    "placeholder",
    "yourtoken",
    "goeshere",
    "xxxxxxxx",
];

/// The fewest distinct characters a token may have: 32 random hex digits have
/// about 14 (fewer than 10 about once in 10,000 draws; `openssl rand -hex 32`, 64
/// digits, practically never), 32 random base64 characters about 25.
const MIN_DISTINCT_TOKEN_CHARS: usize = 10;

/// Why `token` is not fit to be `WEFT_ADMIN_TOKEN` beyond its length, if it is not:
/// one of the shipped examples, a placeholder (`change-me…`, `…example…`), a
/// repeated pattern or too few distinct characters.
fn admin_token_weakness(token: &str) -> Option<&'static str> {
    if EXAMPLE_ADMIN_TOKENS.contains(&token) {
        return Some("it is the example value from deploy/");
    }
    let letters: String = token
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if PLACEHOLDER_WORDS.iter().any(|w| letters.contains(w)) {
        return Some("it looks like a placeholder (change-me, example, …)");
    }
    let chars: Vec<char> = token.chars().collect();
    let periodic =
        (1..=chars.len() / 2).any(|p| (p..chars.len()).all(|i| chars[i] == chars[i - p]));
    if periodic {
        return Some("it repeats a pattern");
    }
    let distinct: std::collections::HashSet<char> = chars.iter().copied().collect();
    if distinct.len() < MIN_DISTINCT_TOKEN_CHARS {
        return Some("it has too few distinct characters");
    }
    None
}

/// Which backends a process uses, decided by the URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// SQLite file + in-process queue and bus (one process).
    Embedded { database_url: String },
    /// Postgres + Redis (any number of gateways and workers).
    Distributed {
        database_url: String,
        redis_url: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    #[error("configuration: {0}")]
    Invalid(String),
}

impl Config {
    /// Defaults → file (if any) → `WEFT_*` env.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_with(file, None)
    }

    /// [`Self::load`] with the admins' settings from the database (the web
    /// settings: `models`, `limits`, `tools`, `mcp_servers`, …) over
    /// everything else: what an admin saved there wins over the file and the
    /// environment.
    pub fn load_with(
        file: Option<&Path>,
        settings: Option<&serde_json::Value>,
    ) -> Result<Config, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::Invalid(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            fig = fig.merge(Toml::file(path));
        }
        fig = fig
            .merge(
                Env::prefixed("WEFT_")
                    .split("__")
                    .ignore(&["config", "gateway", "token"])
                    .filter(|k| !secret_files::is_file_variable(k.as_str())),
            )
            .merge(Serialized::defaults(secret_files::from_files(
                std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            )?));
        if let Some(settings) = settings {
            fig = fig.merge(Serialized::defaults(settings));
        }
        let cfg: Config = fig.extract().map_err(Box::new)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// A sandboxed MCP server must not be granted Weft's own state: its data
    /// dir (the SQLite database, attachments, skills), its attachment store or
    /// the secrets mount.
    fn check_mcp_grants(&self) -> Result<(), ConfigError> {
        let mut hidden = vec![
            ("Weft's data dir", self.data_dir()),
            ("the secrets mount", PathBuf::from("/run/secrets")),
        ];
        if let Some(store) = self
            .attachments
            .store
            .as_deref()
            .filter(|s| s.starts_with('/'))
        {
            hidden.push(("the attachment store", PathBuf::from(store)));
        }
        for server in &self.mcp_servers {
            for (what, path) in &hidden {
                if let Some(grant) = server.grant_overlapping(path) {
                    return Err(ConfigError::Invalid(format!(
                        "mcp_servers: server {:?}: paths: {:?} would show the server {what} ({})",
                        server.name,
                        grant.path,
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if let Some(token) = &self.admin_token
            && token.expose().chars().count() < MIN_ADMIN_TOKEN_CHARS
        {
            return bad(format!(
                "admin_token (WEFT_ADMIN_TOKEN) must be at least {MIN_ADMIN_TOKEN_CHARS} characters; generate one with `openssl rand -hex 32`"
            ));
        }
        if let Some(why) = self
            .admin_token
            .as_ref()
            .and_then(|t| admin_token_weakness(t.expose()))
        {
            return bad(format!(
                "admin_token (WEFT_ADMIN_TOKEN) is refused: {why}; generate one with `openssl rand -hex 32`"
            ));
        }
        if self.worker.concurrency == 0 {
            return bad("worker.concurrency must be at least 1".into());
        }
        if self.worker.job_concurrency == 0 {
            return bad("worker.job_concurrency must be at least 1".into());
        }
        if self.worker.job_lease_ms < 300 || self.worker.job_poll_ms == 0 {
            return bad(
                "worker.job_lease_ms must be at least 300 and worker.job_poll_ms at least 1".into(),
            );
        }
        self.tools.validate().map_err(ConfigError::Invalid)?;
        self.files.validate().map_err(ConfigError::Invalid)?;
        self.knowledge.validate().map_err(ConfigError::Invalid)?;
        self.memory.validate().map_err(ConfigError::Invalid)?;
        self.schedules.validate().map_err(ConfigError::Invalid)?;
        self.email.validate().map_err(ConfigError::Invalid)?;
        self.knowledge
            .validate_embeddings(&self.embedding_models)
            .map_err(ConfigError::Invalid)?;
        mcp::validate(&self.mcp_servers).map_err(ConfigError::Invalid)?;
        self.check_mcp_grants()?;
        agents::validate(&self.agents).map_err(ConfigError::Invalid)?;
        if !(10..=95).contains(&self.context.threshold_percent)
            || !(5..self.context.threshold_percent).contains(&self.context.recent_percent)
        {
            return bad(
                "context.threshold_percent must be 10 to 95 and context.recent_percent 5 to below it"
                    .into(),
            );
        }
        if self.worker.max_run_secs == 0 {
            return bad("worker.max_run_secs must be at least 1".into());
        }
        if self.worker.max_attempts == 0 {
            return bad("worker.max_attempts must be at least 1".into());
        }
        if self.events.max_bytes_per_run < 4096 {
            return bad("events.max_bytes_per_run must be at least 4096".into());
        }
        if self.events.memory_budget_bytes < self.events.max_bytes_per_run {
            return bad(
                "events.memory_budget_bytes must be at least events.max_bytes_per_run".into(),
            );
        }
        if self.worker.stale_after_ms <= self.worker.heartbeat_ms {
            return bad("worker.stale_after_ms must exceed worker.heartbeat_ms".into());
        }
        let mut seen = std::collections::HashSet::new();
        for m in &self.models {
            if !seen.insert(m.id.as_str()) {
                return bad(format!("model id {:?} is configured twice", m.id));
            }
            if m.provider != ProviderKind::Mock
                && m.base_url.is_none()
                && m.provider != ProviderKind::Openai
            {
                return bad(format!("model {:?} needs base_url", m.id));
            }
            if let Some(problem) = m.provider_problem() {
                return bad(problem);
            }
            access::validate(
                &format!("model {:?}", m.id),
                &m.allowed_users,
                &m.allowed_roles,
            )
            .map_err(ConfigError::Invalid)?;
        }
        if self.models.iter().filter(|m| m.default).count() > 1 {
            return bad("more than one model is marked default".into());
        }
        self.lark.validate()?;
        self.http.validate()?;
        self.login.validate()?;
        if let Some(bad_entry) = self
            .trusted_proxies
            .iter()
            .find(|p| parse_proxy(p).is_none())
        {
            return bad(format!(
                "trusted_proxies: {bad_entry:?} is not an IP address or CIDR (like 10.0.0.0/8)"
            ));
        }
        self.mode()?;
        Ok(())
    }

    /// The models served, the default first; the mock when none is configured.
    pub fn effective_models(&self) -> Vec<ModelConfig> {
        if self.models.is_empty() {
            return vec![ModelConfig::mock()];
        }
        let mut models = self.models.clone();
        if !models.iter().any(|m| m.default) {
            models[0].default = true;
        }
        models.sort_by_key(|m| !m.default);
        models
    }

    /// Where skill folders are read from.
    pub fn skills_dir(&self) -> PathBuf {
        self.skills_dir
            .clone()
            .unwrap_or_else(|| self.data_dir().join("skills"))
    }

    pub fn data_dir(&self) -> PathBuf {
        if let Some(d) = &self.data_dir {
            return d.clone();
        }
        let base = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("weft")
    }

    /// Decide the mode from the URLs; mixed combinations are refused.
    pub fn mode(&self) -> Result<Mode, ConfigError> {
        let db = match &self.database_url {
            Some(u) => u.expose().to_string(),
            None => format!(
                "sqlite://{}?mode=rwc",
                self.data_dir().join("weft.db").display()
            ),
        };
        let is_pg = db.starts_with("postgres://") || db.starts_with("postgresql://");
        let is_sqlite = db.starts_with("sqlite:");
        if !is_pg && !is_sqlite {
            return Err(ConfigError::Invalid(
                "database_url must start with sqlite: or postgres://".into(),
            ));
        }
        match (&self.redis_url, is_pg) {
            (None, false) => Ok(Mode::Embedded { database_url: db }),
            (Some(r), true) => Ok(Mode::Distributed {
                database_url: db,
                redis_url: r.expose().to_string(),
            }),
            (Some(_), false) => Err(ConfigError::Invalid(
                "a Redis queue needs a shared Postgres database: a SQLite file cannot be seen by other hosts (set database_url to postgres://… or drop redis_url)".into(),
            )),
            (None, true) => Err(ConfigError::Invalid(
                "a Postgres database needs redis_url for the queue and event bus (or use sqlite: for embedded mode)".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests;

//! Layered configuration: defaults → `weft.toml` (`--config` / `WEFT_CONFIG`) →
//! `WEFT_*` environment (`__` nests: `WEFT_LIMITS__BODY_BYTES`) → command-line flags.
//! Validated once at start-up ([`Config::validate`]); secrets are wrapped in
//! [`Secret`] so `Debug` output and logs never show them.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

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
    /// Connection timeouts and the connection cap of the HTTP server.
    pub http: HttpConfig,
    pub worker: WorkerConfig,
    pub events: EventsConfig,
    /// Configured models; empty ⇒ the built-in `mock` demo model.
    pub models: Vec<ModelConfig>,
    /// The Lark (Feishu) bot; on when `app_id` is set.
    pub lark: LarkConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: None,
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
            http: HttpConfig::default(),
            worker: WorkerConfig::default(),
            events: EventsConfig::default(),
            models: Vec::new(),
            lark: LarkConfig::default(),
        }
    }
}

/// The Lark / Feishu bot (`[lark]`, env `WEFT_LARK__<KEY>`). Gateways hold the
/// long connection (ingress); workers stream reply cards (egress): both need it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LarkConfig {
    /// The self-built app's id (`cli_…`). Empty ⇒ the bot is off.
    pub app_id: String,
    /// The app secret (`WEFT_LARK__APP_SECRET`).
    pub app_secret: Secret,
    /// `https://open.feishu.cn` (Feishu), `https://open.larksuite.com` (Lark).
    pub base_url: String,
    /// In groups, answer only when the bot is @mentioned.
    pub require_mention: bool,
    /// Chat ids (`oc_…`) the bot answers in; empty ⇒ every chat the app is in.
    pub allowed_chats: Vec<String>,
    /// Lark API calls per second this process may make (Lark allows 50 per app:
    /// with several workers, give each its share).
    pub calls_per_second: u32,
}

impl Default for LarkConfig {
    fn default() -> Self {
        LarkConfig {
            app_id: String::new(),
            app_secret: Secret::default(),
            base_url: "https://open.feishu.cn".into(),
            require_mention: true,
            allowed_chats: Vec::new(),
            calls_per_second: 50,
        }
    }
}

impl LarkConfig {
    pub fn enabled(&self) -> bool {
        !self.app_id.is_empty()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled() {
            return Ok(());
        }
        let bad = |m: String| Err(ConfigError::Invalid(format!("lark.{m}")));
        if self.app_secret.expose().is_empty() {
            return bad(
                "app_secret is required when lark.app_id is set (or WEFT_LARK__APP_SECRET)".into(),
            );
        }
        let Some((scheme, rest)) = self.base_url.split_once("://") else {
            return bad(format!("base_url {:?} is not a URL", self.base_url));
        };
        let host = rest.split(['/', '?']).next().unwrap_or("");
        let host = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match scheme {
            "https" => {}
            "http" if loopback => {}
            _ => {
                return bad(format!(
                    "base_url must use https:// (plain http only for a loopback host), got {:?}",
                    self.base_url
                ));
            }
        }
        if self.calls_per_second == 0 {
            return bad("calls_per_second must be at least 1".into());
        }
        Ok(())
    }
}

/// The shortest `WEFT_ADMIN_TOKEN` accepted: it authenticates an admin over the
/// network, so it must not be guessable.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// Per-request and per-user limits (`[limits]`). 0 disables a per-user limit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Largest accepted request body.
    pub body_bytes: u64,
    /// Longest accepted message text, in characters.
    pub message_chars: u64,
    /// Largest total of a message's attachments.
    pub attachments_bytes: u64,
    /// Runs a user may have queued/running/waiting at once.
    pub active_runs_per_user: u64,
    /// Runs a user may start per rolling minute (every run counts: sends,
    /// interrupts and follow-ups alike).
    pub runs_per_minute_per_user: u64,
    /// Event streams (SSE attaches and streaming sends) one user may hold open at
    /// once in one gateway process; beyond it 429 `rate_limited`.
    pub streams_per_user: u64,
    /// Event streams of one run open at once in one gateway process; beyond it 429.
    pub streams_per_run: u64,
    /// Messages that may wait behind a session's active run (`multitask:
    /// "enqueue"`); past it a send is 429 and nothing is stored.
    pub queued_messages_per_session: u64,
    /// How long an `Idempotency-Key` is remembered; older keys are purged (and a
    /// retry after that creates a new message).
    pub idempotency_key_retention_secs: u64,
}

impl Limits {
    /// The per-user run limits every path that creates a run checks.
    pub fn run_limits(&self) -> crate::store::RunLimits {
        crate::store::RunLimits {
            active_per_user: self.active_runs_per_user,
            per_minute_per_user: self.runs_per_minute_per_user,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 1 << 20,
            message_chars: 65_536,
            attachments_bytes: 20 << 20,
            active_runs_per_user: 4,
            runs_per_minute_per_user: 60,
            streams_per_user: 32,
            streams_per_run: 8,
            queued_messages_per_session: 20,
            idempotency_key_retention_secs: 24 * 3600,
        }
    }
}

/// The HTTP server's transport limits (`[http]`, env `WEFT_HTTP__<KEY>`). Slow
/// or idle clients must not hold connections for ever; SSE responses are
/// long-lived by design and no timeout here applies to them (the header timeout
/// covers reading a request's headers, the body timeout reading its body).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct HttpConfig {
    /// A request's headers must have arrived this long after its first byte (or
    /// after a keep-alive connection went idle), else the connection is closed.
    pub header_read_timeout_ms: u64,
    /// A request's body must have arrived this long after its headers, else the
    /// request fails with 408 `request_timeout`.
    pub body_timeout_ms: u64,
    /// Connections one gateway process serves at once (open SSE streams count).
    /// A connection beyond it is answered 503 `unavailable` + `Retry-After` and closed.
    pub max_connections: usize,
    /// How often an open event stream re-checks the token that opened it: a
    /// revoked token or a deleted user ends the stream.
    pub stream_recheck_ms: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            header_read_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            max_connections: 4096,
            stream_recheck_ms: 15_000,
        }
    }
}

impl HttpConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(format!("http.{m} must be at least 1")));
        if self.header_read_timeout_ms == 0 {
            return bad("header_read_timeout_ms");
        }
        if self.body_timeout_ms == 0 {
            return bad("body_timeout_ms");
        }
        if self.max_connections == 0 {
            return bad("max_connections");
        }
        if self.stream_recheck_ms == 0 {
            return bad("stream_recheck_ms");
        }
        Ok(())
    }
}

/// Sign-in attempt limits (`[login]`, env `WEFT_LOGIN__<KEY>`), shared by every
/// gateway through Redis in distributed mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LoginConfig {
    /// Sign-in attempts one client address may make per window; then 429.
    pub attempts_per_address: u32,
    /// The window of `attempts_per_address`, and how long an account's failures
    /// are remembered after its last attempt.
    pub window_secs: u64,
    /// Failed attempts an account may have before each further attempt must wait
    /// (a backoff, never a lock: a correct password gets in once it has passed).
    pub free_failures_per_account: u32,
    /// The first wait; it doubles with every further failure.
    pub backoff_base_ms: u64,
    /// The longest wait between two attempts on one account.
    pub backoff_max_ms: u64,
    /// Keys (accounts and addresses) one gateway remembers in embedded mode; the
    /// least recently used is forgotten first.
    pub max_tracked_keys: usize,
}

impl Default for LoginConfig {
    fn default() -> Self {
        LoginConfig {
            attempts_per_address: 10,
            window_secs: 300,
            free_failures_per_account: 5,
            backoff_base_ms: 1_000,
            backoff_max_ms: 60_000,
            max_tracked_keys: 100_000,
        }
    }
}

impl LoginConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(format!("login.{m}")));
        if self.attempts_per_address == 0 {
            return bad("attempts_per_address must be at least 1");
        }
        if self.window_secs == 0 {
            return bad("window_secs must be at least 1");
        }
        if self.backoff_base_ms == 0 || self.backoff_max_ms < self.backoff_base_ms {
            return bad("backoff_base_ms must be at least 1 and at most backoff_max_ms");
        }
        if self.max_tracked_keys == 0 {
            return bad("max_tracked_keys must be at least 1");
        }
        Ok(())
    }
}

/// Parse one `trusted_proxies` entry: an IP (a /32 or /128) or a CIDR.
pub fn parse_proxy(entry: &str) -> Option<ipnet::IpNet> {
    let entry = entry.trim();
    entry.parse::<ipnet::IpNet>().ok().or_else(|| {
        entry
            .parse::<std::net::IpAddr>()
            .ok()
            .map(ipnet::IpNet::from)
    })
}

/// How workers execute runs (`[worker]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerConfig {
    /// Runs one worker process executes at once.
    pub concurrency: usize,
    /// How often a running run's heartbeat is refreshed.
    pub heartbeat_ms: u64,
    /// A running run whose heartbeat is older than this is presumed orphaned.
    pub stale_after_ms: u64,
    /// A queued run not claimed for this long is enqueued again (lost job).
    pub requeue_after_ms: u64,
    /// How often the reaper looks for orphaned and lost runs.
    pub reaper_interval_ms: u64,
    /// How often the reaper purges expired login tokens and idempotency keys
    /// older than `limits.idempotency_key_retention_secs`.
    pub purge_interval_ms: u64,
    /// Attempts before a run fails for good.
    pub max_attempts: u32,
    /// Text/thinking deltas are coalesced for this long before publishing (0 = off).
    pub coalesce_ms: u64,
    /// LLM calls per run before it stops.
    pub max_steps: u32,
    /// On shutdown, running runs get this long to finish before they are released.
    pub shutdown_grace_ms: u64,
    /// Messages of history sent to the model.
    pub hot_size: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 256,
            heartbeat_ms: 10_000,
            stale_after_ms: 30_000,
            requeue_after_ms: 15_000,
            reaper_interval_ms: 5_000,
            purge_interval_ms: 60_000,
            max_attempts: 3,
            coalesce_ms: 25,
            max_steps: 25,
            shutdown_grace_ms: 10_000,
            hot_size: 20,
        }
    }
}

/// Run event log (`[events]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EventsConfig {
    /// How long a run's event log is kept after the run ends.
    pub retention_secs: u64,
    /// Upper bound of events kept per run.
    pub max_len: u64,
    /// Bytes of events one run may publish (per attempt); past it the run fails
    /// with `event_log_full`, keeping the text so far. Bounds one reply's share of
    /// Redis or memory, whatever the model (or `@mock.tokens`) produces.
    pub max_bytes_per_run: u64,
    /// Embedded mode: bytes all event logs in memory may take together. Past it
    /// the logs of finished runs are dropped first (oldest first), then the
    /// oldest running ones; their clients read the messages instead.
    pub memory_budget_bytes: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            retention_secs: 24 * 3600,
            max_len: 100_000,
            max_bytes_per_run: 8 << 20,
            memory_budget_bytes: 256 << 20,
        }
    }
}

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
        fig = fig.merge(
            Env::prefixed("WEFT_")
                .split("__")
                .ignore(&["config", "gateway", "token"]),
        );
        let cfg: Config = fig.extract().map_err(Box::new)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if let Some(token) = &self.admin_token {
            if token.expose().chars().count() < MIN_ADMIN_TOKEN_CHARS {
                return bad(format!(
                    "admin_token (WEFT_ADMIN_TOKEN) must be at least {MIN_ADMIN_TOKEN_CHARS} characters; generate one with `openssl rand -hex 32`"
                ));
            }
        }
        if self.worker.concurrency == 0 {
            return bad("worker.concurrency must be at least 1".into());
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
mod tests {
    use super::*;

    #[test]
    fn defaults_are_embedded_with_the_mock_model() {
        let cfg = Config::default();
        assert!(matches!(cfg.mode().unwrap(), Mode::Embedded { .. }));
        let models = cfg.effective_models();
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].id, "mock");
        assert!(models[0].default);
    }

    #[test]
    fn mixed_modes_are_refused() {
        let cfg = Config {
            redis_url: Some(Secret("redis://127.0.0.1".into())),
            ..Config::default()
        };
        assert!(
            cfg.mode()
                .unwrap_err()
                .to_string()
                .contains("shared Postgres")
        );
        let cfg = Config {
            database_url: Some(Secret("postgres://x/y".into())),
            ..Config::default()
        };
        assert!(cfg.mode().is_err());
    }

    #[test]
    fn lark_needs_https_except_on_loopback() {
        let lark = |base_url: &str| Config {
            lark: LarkConfig {
                app_id: "cli_x".into(),
                app_secret: Secret("s".into()),
                base_url: base_url.into(),
                ..LarkConfig::default()
            },
            ..Config::default()
        };
        assert!(lark("https://open.feishu.cn").validate().is_ok());
        assert!(lark("http://127.0.0.1:3000").validate().is_ok());
        assert!(lark("http://[::1]:3000").validate().is_ok());
        assert!(lark("http://localhost:1").validate().is_ok());
        let err = lark("http://open.feishu.cn").validate().unwrap_err();
        assert!(err.to_string().contains("https://"), "{err}");
        let mut no_secret = lark("https://open.feishu.cn");
        no_secret.lark.app_secret = Secret::default();
        assert!(
            no_secret
                .validate()
                .unwrap_err()
                .to_string()
                .contains("app_secret")
        );
        assert!(Config::default().validate().is_ok(), "off by default");
    }

    #[test]
    fn short_admin_tokens_are_refused() {
        let with = |t: &str| Config {
            admin_token: Some(Secret(t.into())),
            ..Config::default()
        };
        let err = with("hunter2").validate().unwrap_err().to_string();
        assert!(err.contains("at least 32 characters"), "{err}");
        assert!(with(&"x".repeat(32)).validate().is_ok());
    }

    #[test]
    fn secrets_do_not_print() {
        let cfg = Config {
            admin_token: Some(Secret("hunter2".into())),
            ..Config::default()
        };
        assert!(!format!("{cfg:?}").contains("hunter2"));
    }
}

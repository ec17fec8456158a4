//! `[limits]`, `[http]` and `[login]`: what one request, one user and one
//! connection may cost.

use serde::{Deserialize, Serialize};

use super::ConfigError;

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
    /// Bytes of attachments one user may store: the distinct files their
    /// messages carry (a file attached twice counts once; deleting a session
    /// frees its files). A message that would pass it is 413 and stores nothing.
    pub storage_bytes_per_user: u64,
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
            storage_bytes_per_user: 1 << 30,
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
    /// A connection serving no request for this long — since it was accepted or
    /// since its last response — is closed: a request's head must have arrived by
    /// then, over HTTP/1 or HTTP/2 (a socket that sends nothing, or only the
    /// HTTP/2 preface, is closed too).
    pub header_read_timeout_ms: u64,
    /// A request's body must have arrived this long after its headers, else the
    /// request fails with 408 `request_timeout`.
    pub body_timeout_ms: u64,
    /// Connections one gateway process serves at once (open SSE streams count).
    /// A connection beyond it is answered 503 `unavailable` + `Retry-After` and closed.
    pub max_connections: usize,
    /// Connections one client address may hold open at once in one gateway
    /// process (IPv6: per /64); beyond it 503 like `max_connections`. Counted by
    /// the TCP peer: behind a reverse proxy that is the proxy, so peers in
    /// `trusted_proxies` are not counted (the proxy limits its clients). 0: no
    /// per-address cap.
    pub max_connections_per_address: usize,
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
            max_connections_per_address: 256,
            stream_recheck_ms: 15_000,
        }
    }
}

impl HttpConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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

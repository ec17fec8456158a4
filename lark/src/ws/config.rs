//! The server-controlled connection settings (`ClientConfig`).
//!
//! Discovery returns them and any pong may change them; values on the wire are
//! seconds. Honouring them matters: a hard-coded 120 s reconnect against a server
//! asking for 5 s meant minutes of downtime in another bot.

use std::time::Duration;

use serde::Deserialize;

/// Current reconnect and ping settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// `None` retries forever (`ReconnectCount` < 0).
    pub reconnect_count: Option<u64>,
    pub reconnect_interval: Duration,
    /// Upper bound of the random delay before the first reconnect attempt.
    pub reconnect_nonce: Duration,
    pub ping_interval: Duration,
}

impl Default for ServerConfig {
    /// The SDKs' defaults before any config arrives.
    fn default() -> Self {
        Self {
            reconnect_count: None,
            reconnect_interval: Duration::from_secs(120),
            reconnect_nonce: Duration::from_secs(30),
            ping_interval: Duration::from_secs(120),
        }
    }
}

/// `ClientConfig` as JSON; absent fields leave the current value alone.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ClientConfigWire {
    pub reconnect_count: Option<i64>,
    pub reconnect_interval: Option<u64>,
    pub reconnect_nonce: Option<u64>,
    pub ping_interval: Option<u64>,
}

impl ServerConfig {
    pub(crate) fn apply(&mut self, wire: &ClientConfigWire) {
        if let Some(count) = wire.reconnect_count {
            self.reconnect_count = u64::try_from(count).ok();
        }
        if let Some(s) = wire.reconnect_interval {
            self.reconnect_interval = Duration::from_secs(s);
        }
        if let Some(s) = wire.reconnect_nonce {
            self.reconnect_nonce = Duration::from_secs(s);
        }
        // A zero ping interval would turn the ping loop into a busy loop.
        if let Some(s) = wire.ping_interval.filter(|s| *s > 0) {
            self.ping_interval = Duration::from_secs(s);
        }
    }
}

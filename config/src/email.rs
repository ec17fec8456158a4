//! `[email]`: the SMTP server email channels send through (docs/schedules.md
//! "Channels"). Off until an admin sets `smtp_url`.

use serde::{Deserialize, Serialize};

use super::Secret;

/// Email settings (`[email]`, env `WEFT_EMAIL__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EmailConfig {
    /// The SMTP server, as a URL: `smtp://host:25` (plain, or STARTTLS
    /// with `?tls=required`), `smtps://user:password@host:465` (TLS).
    /// Empty: email channels cannot be made.
    pub smtp_url: Secret,
    /// The sender, e.g. `Weft <weft@example.com>`.
    pub from: String,
    /// Time for one message's whole SMTP exchange, in ms.
    pub timeout_ms: u64,
}

impl Default for EmailConfig {
    fn default() -> Self {
        EmailConfig {
            smtp_url: Secret::default(),
            from: "Weft <weft@localhost>".into(),
            timeout_ms: 10_000,
        }
    }
}

impl EmailConfig {
    /// Whether email channels can be used.
    pub fn enabled(&self) -> bool {
        !self.smtp_url.expose().trim().is_empty()
    }

    pub fn validate(&self) -> Result<(), String> {
        let url = self.smtp_url.expose().trim();
        let known = url.starts_with("smtp://") || url.starts_with("smtps://");
        if !url.is_empty() && !known {
            return Err("email.smtp_url must start with smtp:// or smtps://".into());
        }
        if self.enabled() && !self.from.contains('@') {
            return Err(format!(
                "email.from must be an address, e.g. `Weft <weft@example.com>` (got {:?})",
                self.from
            ));
        }
        if !(1_000..=120_000).contains(&self.timeout_ms) {
            return Err("email.timeout_ms must be between 1000 and 120000".into());
        }
        Ok(())
    }
}

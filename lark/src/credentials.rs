//! App credentials, with the secret kept out of `Debug` output and logs.

use std::fmt;

/// A self-built app's id and secret.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: String,
    app_secret: AppSecret,
}

/// The app secret; `Debug` prints a placeholder so it can never reach a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct AppSecret(String);

impl AppSecret {
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AppSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AppSecret(***)")
    }
}

impl AppCredentials {
    pub fn new(app_id: impl Into<String>, app_secret: impl Into<String>) -> Self {
        Self {
            app_id: app_id.into(),
            app_secret: AppSecret::new(app_secret),
        }
    }

    pub fn secret(&self) -> &AppSecret {
        &self.app_secret
    }
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("app_secret", &self.app_secret)
            .finish()
    }
}

//! Where the client finds its gateway and token.
//!
//! Precedence: `--gateway`/`--token` flags, then `WEFT_GATEWAY`/`WEFT_TOKEN` (clap
//! merges those two), then `~/.config/weft/config.toml` (respecting
//! `XDG_CONFIG_HOME`), then `http://127.0.0.1:8900`. The file is written with mode
//! 0600 because it holds a bearer token, and atomically so a crash never leaves a
//! half-written token behind. A token from the file is only sent to the gateway
//! it was stored with: pointing `--gateway` elsewhere must not leak it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ClientError, Result};

pub const DEFAULT_GATEWAY: &str = "http://127.0.0.1:8900";

/// The contents of `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileConfig {
    pub gateway: Option<String>,
    pub token: Option<String>,
    /// `[update]`: where `weft update` looks for releases and whose signature it
    /// trusts. Kept here so `weft login`/`logout` rewriting the file keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateSection>,
}

/// `[update]` in `config.toml`; each key overrides what the binary was built with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateSection {
    /// The release folder: `<url>/weft-manifest.json` is the latest release,
    /// `<url>/<VERSION>/weft-manifest.json` each one.
    pub url: Option<String>,
    /// The minisign public key release manifests must be signed with (the
    /// `RW…` line of a `minisign.pub`).
    pub public_key: Option<String>,
}

/// A gateway URL and the token to present there. `Debug` hides the token.
#[derive(Clone)]
pub struct Connection {
    pub gateway: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("gateway", &self.gateway)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

/// `$XDG_CONFIG_HOME/weft/config.toml`, else `~/.config/weft/config.toml`.
pub fn config_path() -> Option<PathBuf> {
    let base = non_empty_env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("weft").join("config.toml"))
}

/// `$XDG_STATE_HOME/weft`, else `~/.local/state/weft`: REPL history lives here.
pub fn state_dir() -> Option<PathBuf> {
    let base = non_empty_env("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".local").join("state")))?;
    Some(base.join("weft"))
}

fn non_empty_env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

pub fn load(path: &Path) -> Result<FileConfig> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text)
            .map_err(|e| ClientError::Local(format!("{} is not valid: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(e) => Err(ClientError::Local(format!(
            "reading {}: {e}",
            path.display()
        ))),
    }
}

/// Write the file with mode 0600 (directory 0700), replacing it atomically.
pub fn save(path: &Path, cfg: &FileConfig) -> Result<()> {
    let text = toml::to_string(cfg).map_err(|e| ClientError::Local(e.to_string()))?;
    let dir = path
        .parent()
        .ok_or_else(|| ClientError::Local(format!("{} has no parent directory", path.display())))?;
    create_private_dir(dir)?;
    let tmp = dir.join(format!(".config.toml.{}", std::process::id()));
    write_private(&tmp, &text)?;
    std::fs::rename(&tmp, path)
        .map_err(|e| ClientError::Local(format!("writing {}: {e}", path.display())))
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ClientError::Local(format!("creating {}: {e}", dir.display())))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ClientError::Local(format!("creating {}: {e}", dir.display())))
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .map_err(|e| ClientError::Local(format!("writing {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

/// `http://host:port` without a trailing slash; a bare `host:port` gets `http://`.
pub fn normalise_gateway(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    if url.is_empty() {
        return Err(ClientError::Usage("the gateway URL is empty".into()));
    }
    let url = if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ClientError::Usage(format!(
            "the gateway URL must start with http:// or https:// (got {url})"
        )));
    }
    Ok(url)
}

/// Combine flags/env (already merged by clap) with the file.
pub fn resolve(gateway: Option<&str>, token: Option<&str>) -> Result<Connection> {
    let file = match config_path() {
        Some(p) => load(&p)?,
        None => FileConfig::default(),
    };
    resolve_with(gateway, token, &file)
}

pub fn resolve_with(
    gateway: Option<&str>,
    token: Option<&str>,
    file: &FileConfig,
) -> Result<Connection> {
    let file_gateway = file.gateway.as_deref().map(normalise_gateway).transpose()?;
    let gateway = match gateway.filter(|g| !g.is_empty()) {
        Some(g) => normalise_gateway(g)?,
        None => file_gateway
            .clone()
            .unwrap_or_else(|| DEFAULT_GATEWAY.to_string()),
    };
    let same_gateway = file_gateway.as_deref().unwrap_or(DEFAULT_GATEWAY) == gateway;
    let token = match token.filter(|t| !t.is_empty()) {
        Some(t) => Some(t.to_string()),
        None if same_gateway => file.token.clone().filter(|t| !t.is_empty()),
        None => None,
    };
    Ok(Connection { gateway, token })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_token_is_not_sent_to_another_gateway() {
        let file = FileConfig {
            gateway: Some("http://a:1/".into()),
            token: Some("weft_x".into()),
            ..FileConfig::default()
        };
        let c = resolve_with(None, None, &file).unwrap();
        assert_eq!(
            (c.gateway.as_str(), c.token.as_deref()),
            ("http://a:1", Some("weft_x"))
        );
        let c = resolve_with(Some("b:2"), None, &file).unwrap();
        assert_eq!((c.gateway.as_str(), c.token), ("http://b:2", None));
        let c = resolve_with(Some("http://b:2"), Some("t"), &file).unwrap();
        assert_eq!(c.token.as_deref(), Some("t"));
    }

    #[test]
    fn save_is_private_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("weft-cfg-{}", uuid::Uuid::new_v4()));
        let path = dir.join("weft").join("config.toml");
        let cfg = FileConfig {
            gateway: Some("http://h:1".into()),
            token: Some("weft_t".into()),
            update: Some(UpdateSection {
                url: Some("https://releases.example/weft".into()),
                public_key: None,
            }),
        };
        save(&path, &cfg).unwrap();
        assert_eq!(load(&path).unwrap(), cfg);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}

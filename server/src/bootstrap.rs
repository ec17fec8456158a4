//! Accounts a fresh deployment needs: the bootstrap admin token, and on `weft up`'s
//! first start an admin with a generated password plus a logged-in local client.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use weft_shared::auth;
use weft_shared::config::Config;
use weft_shared::store::{Role, Store, TokenKind};

/// `WEFT_ADMIN_TOKEN` set: it authenticates user `admin` (and replaces any older
/// one). Unset: no bootstrap token stays valid — one set before would otherwise
/// work for ever.
pub async fn admin_token(store: &Store, cfg: &Config) -> anyhow::Result<()> {
    match &cfg.admin_token {
        Some(token) => {
            let unusable = auth::hash_password(&auth::new_token())?;
            store
                .ensure_bootstrap_admin(&auth::token_hash(token.expose()), &unusable)
                .await?;
        }
        None => {
            if store.revoke_bootstrap_tokens().await? > 0 {
                tracing::info!(
                    "WEFT_ADMIN_TOKEN is unset: the previous bootstrap token is revoked"
                );
            }
        }
    }
    Ok(())
}

/// `weft up` on a fresh data dir: an admin with a generated password (printed once
/// and kept in `<data_dir>/initial-admin-password`), and a token in the client
/// config so `weft` works here without a login step.
pub async fn first_boot(store: &Store, cfg: &Config, addr: SocketAddr) -> anyhow::Result<()> {
    if !store.list_users().await?.is_empty() {
        return Ok(());
    }
    let password = auth::new_token()[5..25].to_string();
    let hash = auth::hash_password(&password)?;
    let admin = match store.create_user("admin", &hash, Role::Admin).await {
        Ok(u) => u,
        Err(_) => return Ok(()), // created meanwhile (WEFT_ADMIN_TOKEN)
    };
    let dir = cfg.data_dir();
    weft_shared::private_fs::create_private_dir(&dir)?;
    let file = dir.join("initial-admin-password");
    write_private(&file, &format!("{password}\n"))?;
    eprintln!(
        "\n  First start: created user `admin` with password {password}\n  (also saved in {})\n",
        file.display()
    );
    let token = auth::new_token();
    store
        .create_token(
            &admin.id,
            "weft up (this machine)",
            TokenKind::Api,
            &auth::token_hash(&token),
        )
        .await?;
    if let Some(path) = client_config_path().filter(|p| !p.exists()) {
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        write_private(
            &path,
            &format!(
                "gateway = \"http://{host}:{}\"\ntoken = \"{token}\"\n",
                addr.port()
            ),
        )?;
    }
    Ok(())
}

/// `$XDG_CONFIG_HOME/weft/config.toml` (or `~/.config/…`): the terminal client's.
pub fn client_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("weft").join("config.toml"))
}

/// Writes a file only its owner can read (`0600`), in a `0700` directory.
fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        weft_shared::private_fs::create_private_dir(dir)?;
    }
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(contents.as_bytes())?;
    }
    #[cfg(not(unix))]
    std::fs::write(path, contents)?;
    Ok(())
}

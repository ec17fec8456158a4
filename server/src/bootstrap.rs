//! Accounts a fresh deployment needs: the bootstrap admin token, and on `weft up`'s
//! first start an admin with a generated password plus a logged-in local client.
//!
//! The generated password goes to a `0600` file in the data dir, and onto stderr
//! only when stderr is a terminal: a container's or a service manager's stderr
//! is collected into logs that other people (and log shippers) read.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use weft_config::Config;
use weft_shared::auth;
use weft_store::{Role, Store, TokenKind};

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

/// `weft up` on a fresh data dir: an admin with a generated password (kept in
/// `<data_dir>/initial-admin-password`, shown on a terminal), and a token in the
/// client config so `weft` works here without a login step.
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
    let stderr = if std::io::stderr().is_terminal() {
        Stderr::Terminal
    } else {
        Stderr::Collected
    };
    eprintln!("{}", first_boot_notice(stderr, &password, &file));
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

/// Where stderr goes: to a person at a terminal, or into collected logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stderr {
    Terminal,
    Collected,
}

/// What the first start tells about the new admin: the password itself only to a
/// terminal; logs get where to read it.
fn first_boot_notice(stderr: Stderr, password: &str, file: &Path) -> String {
    match stderr {
        Stderr::Terminal => format!(
            "\n  First start: created user `admin` with password {password}\n  (also saved in {})\n",
            file.display()
        ),
        Stderr::Collected => format!(
            "\n  First start: created user `admin`; its password is in {} (readable by this\n  account only). Sign in, change it, then delete the file.\n",
            file.display()
        ),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_shown_on_a_terminal_only() {
        let file = Path::new("/data/initial-admin-password");
        let logged = first_boot_notice(Stderr::Collected, "s3cret-pass", file);
        assert!(!logged.contains("s3cret-pass"), "{logged}");
        assert!(logged.contains("/data/initial-admin-password"), "{logged}");
        let shown = first_boot_notice(Stderr::Terminal, "s3cret-pass", file);
        assert!(shown.contains("s3cret-pass"), "{shown}");
    }
}

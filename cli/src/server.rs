//! Server-side commands: `up`, `serve`, `worker`, `migrate`, `admin`. Nothing here
//! runs for client commands, so `weft -p` and `weft --help` stay fast.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use weft_shared::bus::{MemoryBus, RedisBus, SharedBus};
use weft_shared::config::{Config, Mode, Secret};
use weft_shared::login_limit::{MemoryLoginAttempts, RedisLoginAttempts, SharedLoginAttempts};
use weft_shared::queue::{MemoryQueue, RedisQueue, SharedQueue};
use weft_shared::store::{Role, Store, TokenKind};

/// Flags shared by every server command (they override `weft.toml` and `WEFT_*`).
#[derive(Debug, Clone, Default, Args)]
pub struct ServerArgs {
    /// Config file (TOML). Also `WEFT_CONFIG`.
    #[arg(long, env = "WEFT_CONFIG")]
    pub config: Option<PathBuf>,
    /// `sqlite:…` or `postgres://…`. Also `WEFT_DATABASE_URL`.
    #[arg(long)]
    pub database_url: Option<String>,
    /// `redis://…`; with it, the queue and event bus are shared. Also `WEFT_REDIS_URL`.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// Where embedded mode keeps its SQLite database. Also `WEFT_DATA_DIR`.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ListenArgs {
    /// Address to listen on (e.g. 127.0.0.1:8900). Also `WEFT_LISTEN`.
    #[arg(long)]
    pub listen: Option<String>,
    /// Port to listen on (keeps the default host).
    #[arg(long, conflicts_with = "listen")]
    pub port: Option<u16>,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user; the password is read from the terminal or, with --password-stdin, from stdin.
    Add {
        username: String,
        #[arg(long, default_value = "user", value_parser = ["user", "admin"])]
        role: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Link a Lark (Feishu) identity to an account: messages from OPEN_ID (`ou_…`)
    /// are then that user's, and the sessions of the auto-created `lark:OPEN_ID`
    /// user move to them (visible in the web UI and `weft sessions list`).
    LinkLark {
        username: String,
        /// The sender's open_id, as Lark shows it (`ou_…`).
        open_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token for a user and print it (shown once).
    Create {
        username: String,
        #[arg(long, default_value = "cli")]
        name: String,
    },
}

pub fn load_config(
    args: &ServerArgs,
    listen: Option<&ListenArgs>,
    default_host: &str,
) -> anyhow::Result<Config> {
    let mut cfg = Config::load(args.config.as_deref())?;
    if let Some(u) = &args.database_url {
        cfg.database_url = Some(Secret(u.clone()));
    }
    if let Some(u) = &args.redis_url {
        cfg.redis_url = Some(Secret(u.clone()));
    }
    if let Some(d) = &args.data_dir {
        cfg.data_dir = Some(d.clone());
    }
    if let Some(l) = listen {
        if let Some(addr) = &l.listen {
            cfg.listen = Some(addr.clone());
        } else if let Some(port) = l.port {
            cfg.listen = Some(format!("{default_host}:{port}"));
        }
    }
    if cfg.listen.is_none() {
        cfg.listen = Some(format!("{default_host}:8900"));
    }
    cfg.validate()?;
    Ok(cfg)
}

/// The three handles for the configured mode.
pub struct Backends {
    pub store: Store,
    pub bus: SharedBus,
    pub queue: SharedQueue,
    /// Sign-in counts: in this process (embedded) or in Redis (distributed).
    pub login_attempts: SharedLoginAttempts,
    pub mode: Mode,
}

pub async fn connect(cfg: &Config) -> anyhow::Result<Backends> {
    let mode = cfg.mode()?;
    match &mode {
        Mode::Embedded { database_url } => {
            let store = Store::connect(database_url)
                .await
                .with_context(|| format!("opening {}", redact(database_url)))?;
            store.migrate().await?;
            Ok(Backends {
                store,
                bus: Arc::new(
                    MemoryBus::new(cfg.events.max_len as usize)
                        .with_budget(cfg.events.memory_budget_bytes),
                ),
                queue: Arc::new(MemoryQueue::default()),
                login_attempts: Arc::new(MemoryLoginAttempts::new(&cfg.login)),
                mode,
            })
        }
        Mode::Distributed {
            database_url,
            redis_url,
        } => {
            let store = Store::connect_with(database_url, cfg.database_max_connections)
                .await
                .with_context(|| format!("connecting to {}", redact(database_url)))?;
            store.migrate().await?;
            let bus = RedisBus::connect(redis_url, &cfg.redis_prefix, cfg.events.max_len)
                .await
                .with_context(|| format!("connecting to {}", redact(redis_url)))?;
            let queue = RedisQueue::connect(redis_url, &cfg.redis_prefix).await?;
            let login_attempts =
                RedisLoginAttempts::connect(redis_url, &cfg.redis_prefix, &cfg.login).await?;
            Ok(Backends {
                store,
                bus: Arc::new(bus),
                queue: Arc::new(queue),
                login_attempts: Arc::new(login_attempts),
                mode,
            })
        }
    }
}

/// A URL with its password (if any) hidden.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// ctrl-c or SIGTERM.
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        t.cancel();
    });
    token
}

/// `WEFT_ADMIN_TOKEN` set: it authenticates user `admin` (and replaces any older
/// one). Unset: no bootstrap token stays valid — one set before would otherwise
/// work for ever.
async fn bootstrap_admin(store: &Store, cfg: &Config) -> anyhow::Result<()> {
    match &cfg.admin_token {
        Some(token) => {
            let unusable = weft_shared::auth::hash_password(&weft_shared::auth::new_token())?;
            store
                .ensure_bootstrap_admin(&weft_shared::auth::token_hash(token.expose()), &unusable)
                .await?;
        }
        None => {
            let n = store.revoke_bootstrap_tokens().await?;
            if n > 0 {
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
async fn first_boot(store: &Store, cfg: &Config, addr: SocketAddr) -> anyhow::Result<()> {
    if !store.list_users().await?.is_empty() {
        return Ok(());
    }
    let password = weft_shared::auth::new_token()[5..25].to_string();
    let hash = weft_shared::auth::hash_password(&password)?;
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
    let token = weft_shared::auth::new_token();
    store
        .create_token(
            &admin.id,
            "weft up (this machine)",
            TokenKind::Api,
            &weft_shared::auth::token_hash(&token),
        )
        .await?;
    if let Some(path) = client_config_path() {
        if !path.exists() {
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
    }
    Ok(())
}

pub fn client_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("weft").join("config.toml"))
}

fn write_private(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
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

async fn bind(cfg: &Config) -> anyhow::Result<TcpListener> {
    let addr = cfg.listen.clone().unwrap_or_default();
    TcpListener::bind(&addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

/// `weft up`: gateway and worker in one process.
pub async fn up(cfg: Config) -> anyhow::Result<()> {
    let cfg = Arc::new(cfg);
    let b = connect(&cfg).await?;
    bootstrap_admin(&b.store, &cfg).await?;
    let listener = bind(&cfg).await?;
    let addr = listener.local_addr()?;
    if matches!(b.mode, Mode::Embedded { .. }) {
        first_boot(&b.store, &cfg, addr).await?;
    }
    let shutdown = shutdown_on_signals();
    let lark = lark_sender(&cfg);
    let deps = weft_worker::WorkerDeps {
        store: b.store.clone(),
        bus: b.bus.clone(),
        queue: b.queue.clone(),
        config: cfg.clone(),
        lark: lark.clone(),
    };
    let embedded = matches!(b.mode, Mode::Embedded { .. });
    let state = weft_gateway::AppState::new(
        b.store.clone(),
        b.bus,
        b.queue,
        cfg.clone(),
        shutdown.clone(),
    )
    .with_login_attempts(b.login_attempts);
    let lark_ingress = weft_gateway::lark::start(state.clone(), lark).await?;
    let worker = tokio::spawn(weft_worker::run(deps, shutdown.clone(), embedded));
    let mode = if embedded { "embedded" } else { "distributed" };
    eprintln!(
        "weft {} ({mode}) listening on http://{addr}",
        weft_shared::VERSION
    );
    tracing::info!(%addr, mode, "weft up");
    weft_gateway::serve(listener, state).await?;
    shutdown.cancel();
    worker.await??;
    if let Some(ingress) = lark_ingress {
        let _ = ingress.await;
    }
    b.store.close().await;
    Ok(())
}

/// `weft serve`: gateway only (distributed mode).
pub async fn serve(cfg: Config) -> anyhow::Result<()> {
    if matches!(cfg.mode()?, Mode::Embedded { .. }) {
        anyhow::bail!(
            "`weft serve` runs without workers, so it needs the shared queue: set --redis-url and a postgres --database-url (or use `weft up` for one process)"
        );
    }
    let cfg = Arc::new(cfg);
    let b = connect(&cfg).await?;
    bootstrap_admin(&b.store, &cfg).await?;
    let listener = bind(&cfg).await?;
    let addr = listener.local_addr()?;
    let shutdown = shutdown_on_signals();
    let state = weft_gateway::AppState::new(b.store.clone(), b.bus, b.queue, cfg.clone(), shutdown)
        .with_login_attempts(b.login_attempts);
    let lark_ingress = weft_gateway::lark::start(state.clone(), lark_sender(&cfg)).await?;
    eprintln!(
        "weft {} gateway listening on http://{addr}",
        weft_shared::VERSION
    );
    weft_gateway::serve(listener, state).await?;
    if let Some(ingress) = lark_ingress {
        let _ = ingress.await;
    }
    b.store.close().await;
    Ok(())
}

/// The Lark REST client with its rate limits, when `[lark]` is configured; one
/// per process, shared by the ingress and the card egress so both count against
/// the same per-app budget.
fn lark_sender(cfg: &Config) -> Option<weft_lark::sender::RateAwareSender> {
    cfg.lark
        .enabled()
        .then(|| weft_gateway::lark::lark_sender(&cfg.lark))
}

/// `weft worker`: worker only (distributed mode), with `/metrics` and `/health` on
/// `metrics_listen` when given.
pub async fn worker(cfg: Config, metrics_listen: Option<String>) -> anyhow::Result<()> {
    if matches!(cfg.mode()?, Mode::Embedded { .. }) {
        anyhow::bail!(
            "`weft worker` needs the shared queue: set --redis-url and a postgres --database-url (or use `weft up` for one process)"
        );
    }
    let cfg = Arc::new(cfg);
    let b = connect(&cfg).await?;
    let shutdown = shutdown_on_signals();
    if let Some(addr) = metrics_listen {
        let listener = TcpListener::bind(&addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        eprintln!(
            "weft worker metrics on http://{}/metrics",
            listener.local_addr()?
        );
        tokio::spawn(weft_gateway::serve_metrics(listener, shutdown.clone()));
    }
    eprintln!(
        "weft {} worker started (concurrency {})",
        weft_shared::VERSION,
        cfg.worker.concurrency
    );
    let deps = weft_worker::WorkerDeps {
        store: b.store.clone(),
        bus: b.bus,
        queue: b.queue,
        config: cfg.clone(),
        lark: lark_sender(&cfg),
    };
    weft_worker::run(deps, shutdown, false).await?;
    b.store.close().await;
    Ok(())
}

/// `weft migrate`.
pub async fn migrate(cfg: Config) -> anyhow::Result<()> {
    let url = match cfg.mode()? {
        Mode::Embedded { database_url } | Mode::Distributed { database_url, .. } => database_url,
    };
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    eprintln!("migrations applied to {}", redact(&url));
    Ok(())
}

/// `weft admin …`.
pub async fn admin(cfg: Config, cmd: AdminCommand) -> anyhow::Result<()> {
    let url = match cfg.mode()? {
        Mode::Embedded { database_url } | Mode::Distributed { database_url, .. } => database_url,
    };
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    match cmd {
        AdminCommand::User(UserCommand::Add {
            username,
            role,
            password_stdin,
        }) => {
            if !(1..=weft_shared::auth::MAX_USERNAME_CHARS).contains(&username.chars().count()) {
                anyhow::bail!(
                    "username must be 1 to {} characters",
                    weft_shared::auth::MAX_USERNAME_CHARS
                );
            }
            let password = if password_stdin {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
                line.trim_end_matches(['\r', '\n']).to_string()
            } else {
                rpassword::prompt_password(format!("password for {username}: "))?
            };
            if password.chars().count() < 8 {
                anyhow::bail!("password must be at least 8 characters");
            }
            let role: Role = role
                .parse()
                .map_err(|_| anyhow::anyhow!("role must be user or admin"))?;
            let hash = weft_shared::auth::hash_password(&password)?;
            let user = store
                .create_user(&username, &hash, role)
                .await
                .map_err(|e| match e {
                    weft_shared::store::StoreError::Conflict(_) => {
                        anyhow::anyhow!("user {username:?} already exists")
                    }
                    other => other.into(),
                })?;
            println!("{}\t{}\t{}", user.id, user.username, user.role.as_str());
        }
        AdminCommand::User(UserCommand::LinkLark { username, open_id }) => {
            let (user, _) = store
                .user_credentials(&username)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no user {username:?}"))?;
            match store.link_lark(&user.id, &open_id).await? {
                weft_shared::store::LinkOutcome::Linked { moved_sessions } => println!(
                    "linked {open_id} to {username} ({moved_sessions} Lark sessions moved over)"
                ),
                weft_shared::store::LinkOutcome::TakenBy(other) => {
                    anyhow::bail!("{open_id} is already linked to {other:?}")
                }
            }
        }
        AdminCommand::User(UserCommand::List) => {
            for u in store.list_users().await? {
                println!("{}\t{}\t{}", u.id, u.username, u.role.as_str());
            }
        }
        AdminCommand::Token(TokenCommand::Create { username, name }) => {
            let (user, _) = store
                .user_credentials(&username)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no user {username:?}"))?;
            let token = weft_shared::auth::new_token();
            store
                .create_token(
                    &user.id,
                    &name,
                    TokenKind::Api,
                    &weft_shared::auth::token_hash(&token),
                )
                .await?;
            println!("{token}");
        }
    }
    store.close().await;
    Ok(())
}

//! Server-side commands: `up`, `serve`, `worker`, `migrate`, `admin`. Nothing here
//! runs for client commands, so `weft -p` and `weft --help` stay fast.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use weft_config::live::Flags;
use weft_config::{Config, LiveConfig, Secret};
use weft_server::Server;
use weft_store::{Role, Store, TokenKind};

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

/// The flag of the long-running roles (`up`, `serve`, `worker`).
#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve `/metrics` and `/health` on this address of their own (e.g.
    /// 0.0.0.0:9900); the API's `/metrics` is then 404. Also `WEFT_METRICS_LISTEN`.
    #[arg(long)]
    pub metrics_listen: Option<String>,
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
    /// Make every running gateway and worker read its config again (within
    /// 2 s): this checks the config it would read here first and changes
    /// nothing if that is invalid. `POST /v1/admin/reload` does the same and
    /// answers with what changed; so does `kill -HUP` of a weft process.
    Reload,
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

/// The config of a server command: `weft.toml` (`--config`), the
/// environment, then the command line's flags over them. The flags come back
/// too: a reload reads the file and the environment again and applies the
/// same flags over them.
pub fn load_config(
    args: &ServerArgs,
    listen: Option<&ListenArgs>,
    metrics: Option<&MetricsArgs>,
    default_host: &str,
) -> anyhow::Result<LiveConfig> {
    let flags = command_line(args, listen, metrics, default_host);
    let mut cfg = Config::load(args.config.as_deref())?;
    flags(&mut cfg);
    cfg.validate()?;
    Ok(LiveConfig::new(cfg, args.config.clone(), flags))
}

fn command_line(
    args: &ServerArgs,
    listen: Option<&ListenArgs>,
    metrics: Option<&MetricsArgs>,
    default_host: &str,
) -> Flags {
    let args = args.clone();
    let listen = listen.cloned();
    let metrics_listen = metrics.and_then(|m| m.metrics_listen.clone());
    let default_host = default_host.to_owned();
    Arc::new(move |cfg: &mut Config| {
        if let Some(u) = &args.database_url {
            cfg.database_url = Some(Secret(u.clone()));
        }
        if let Some(u) = &args.redis_url {
            cfg.redis_url = Some(Secret(u.clone()));
        }
        if let Some(d) = &args.data_dir {
            cfg.data_dir = Some(d.clone());
        }
        if let Some(l) = &listen {
            if let Some(addr) = &l.listen {
                cfg.listen = Some(addr.clone());
            } else if let Some(port) = l.port {
                cfg.listen = Some(format!("{default_host}:{port}"));
            }
        }
        if cfg.listen.is_none() {
            cfg.listen = Some(format!("{default_host}:8900"));
        }
        if let Some(m) = &metrics_listen {
            cfg.metrics_listen = Some(m.clone());
        }
    })
}

/// `SIGHUP` reads the config again (as `POST /v1/admin/reload` does) and
/// makes every replica do the same; the outcome is logged.
fn reload_on_sighup(server: &Server) {
    #[cfg(unix)]
    {
        let (store, live) = (server.store().clone(), server.live().clone());
        tokio::spawn(async move {
            let Ok(mut hup) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            else {
                tracing::warn!("no SIGHUP handler: reload with POST /v1/admin/reload");
                return;
            };
            while hup.recv().await.is_some() {
                match weft_store::reload::reload(&store, &live, "SIGHUP").await {
                    Ok(changes) => {
                        tracing::info!(changes = %weft_config::Change::list(&changes), "SIGHUP: config reloaded");
                    }
                    Err(e) => tracing::error!(error = %e, "SIGHUP: config not reloaded"),
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = server;
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

async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

/// The `metrics_listen` listener, when configured.
async fn bind_metrics(cfg: &Config) -> anyhow::Result<Option<TcpListener>> {
    match &cfg.metrics_listen {
        Some(addr) => Ok(Some(bind(addr).await?)),
        None => Ok(None),
    }
}

/// Says where the metrics are (before the ready line, which tests wait for).
fn announce_metrics(role: &str, running: &weft_server::Running) {
    if let Some(addr) = running.metrics {
        eprintln!("weft {role} metrics on http://{addr}/metrics");
    }
}

/// `weft up`: gateway and worker in one process.
pub async fn up(live: LiveConfig) -> anyhow::Result<()> {
    let cfg = live.get();
    let listener = bind(cfg.listen.as_deref().unwrap_or_default()).await?;
    let metrics = bind_metrics(&cfg).await?;
    let server = Server::open_live(live).await?;
    reload_on_sighup(&server);
    let addr = listener.local_addr()?;
    let mode = if server.embedded() {
        "embedded"
    } else {
        "distributed"
    };
    let running = server.up(listener, metrics, shutdown_on_signals()).await?;
    announce_metrics("up", &running);
    eprintln!(
        "weft {} ({mode}) listening on http://{addr}",
        weft_shared::VERSION
    );
    tracing::info!(%addr, mode, "weft up");
    running.wait().await
}

/// `weft serve`: gateway only (distributed mode).
pub async fn serve(live: LiveConfig) -> anyhow::Result<()> {
    let cfg = live.get();
    weft_server::require_distributed(&cfg, "serve")?;
    let listener = bind(cfg.listen.as_deref().unwrap_or_default()).await?;
    let addr = listener.local_addr()?;
    let metrics = bind_metrics(&cfg).await?;
    let server = Server::open_live(live).await?;
    reload_on_sighup(&server);
    let running = server
        .gateway(listener, metrics, shutdown_on_signals())
        .await?;
    announce_metrics("gateway", &running);
    eprintln!(
        "weft {} gateway listening on http://{addr}",
        weft_shared::VERSION
    );
    running.wait().await
}

/// `weft worker`: worker only (distributed mode), with `/metrics` and `/health` on
/// `metrics_listen` when given.
pub async fn worker(live: LiveConfig) -> anyhow::Result<()> {
    let cfg = live.get();
    weft_server::require_distributed(&cfg, "worker")?;
    let metrics = bind_metrics(&cfg).await?;
    let concurrency = cfg.worker.concurrency;
    let server = Server::open_live(live).await?;
    reload_on_sighup(&server);
    let running = server.worker(metrics, shutdown_on_signals()).await?;
    announce_metrics("worker", &running);
    eprintln!(
        "weft {} worker started (concurrency {concurrency})",
        weft_shared::VERSION
    );
    running.wait().await
}

/// `weft migrate`.
pub async fn migrate(cfg: Config) -> anyhow::Result<()> {
    let url = weft_server::migrate(&cfg).await?;
    eprintln!("migrations applied to {url}");
    Ok(())
}

/// `weft admin …`.
pub async fn admin(live: LiveConfig, cmd: AdminCommand) -> anyhow::Result<()> {
    let cfg = live.get();
    let store = Store::connect(&weft_server::database_url(&cfg)?).await?;
    store.migrate().await?;
    match cmd {
        AdminCommand::User(UserCommand::Add {
            username,
            role,
            password_stdin,
        }) => {
            weft_shared::auth::check_new_username(&username).map_err(anyhow::Error::msg)?;
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
                    weft_store::StoreError::Conflict(_) => {
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
                weft_store::LinkOutcome::Linked { moved_sessions } => println!(
                    "linked {open_id} to {username} ({moved_sessions} Lark sessions moved over)"
                ),
                weft_store::LinkOutcome::TakenBy(other) => {
                    anyhow::bail!("{open_id} is already linked to {other:?}")
                }
            }
        }
        AdminCommand::Reload => {
            // What the replicas will read: this file and environment with the
            // saved settings over them (each replica checks its own again).
            let saved = store.config_settings().await?;
            Config::load_with(live.file(), saved.as_ref().map(|s| &s.document))?;
            let version = store
                .bump_config_version("weft admin reload", live.file_hash().as_deref())
                .await?;
            println!(
                "config version {version}: every gateway and worker reads its config again within 2 s \
                 (each logs what changed, or why it keeps its config)"
            );
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

//! The composition root: which backends a process uses, the accounts a fresh
//! deployment needs, and how the roles are put together — `up` (gateway and
//! worker in one process), `serve` (gateway) and `worker`. The `weft` binary,
//! the load tester's in-process server and any embedding program call this, so
//! there is one wiring, not one per caller: a setting added here (a memory
//! budget, a shared sign-in counter, the Lark sender) reaches all of them.
//!
//! Signals are the caller's business: every role takes a `CancellationToken`
//! and returns a [`Running`] whose [`Running::wait`] ends after a clean drain.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use weft_config::{Config, LiveConfig};
use weft_store::Store;

pub mod backends;
pub mod bootstrap;

pub use backends::{Backends, database_url, redact};

/// The `[files]` limits of one document's extraction.
pub fn extract_limits(cfg: &Config) -> weft_files::Limits {
    weft_files::Limits {
        timeout: cfg.files.timeout(),
        memory_bytes: cfg.files.extract_memory_bytes,
    }
}

/// A process's configuration and connected backends, before any role starts.
pub struct Server {
    /// The config as the process started; what is built at start reads it.
    cfg: Arc<Config>,
    /// The config reloaded live (`weft_store::reload`), for what follows it.
    live: LiveConfig,
    backends: Backends,
    /// Reads untrusted documents (uploads, Lark files, web_fetch bodies).
    extractor: weft_files::Extractor,
    /// Knowledge search, one per process: gateway and worker share its copy
    /// of the bases' vectors.
    retriever: weft_knowledge::Retriever,
}

/// A started role. Dropping it leaves the role running; cancel the token given
/// at start and [`wait`](Running::wait) to stop it.
pub struct Running {
    /// The API's address (gateway roles; a worker has none).
    pub addr: Option<SocketAddr>,
    /// Where `/metrics` and `/health` are served on their own (`--metrics-listen`).
    pub metrics: Option<SocketAddr>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Until the role has drained and closed its backends.
    pub async fn wait(self) -> anyhow::Result<()> {
        self.task.await.context("server task panicked")?
    }
}

impl Server {
    /// Connects and migrates the backends and seeds the configured agents. The
    /// bootstrap admin token is the business of the roles that serve people
    /// ([`Server::up`], [`Server::gateway`]): a worker has no use for it, so one
    /// started without `WEFT_ADMIN_TOKEN` must not revoke it.
    pub async fn open(cfg: Config) -> anyhow::Result<Server> {
        Self::open_live(LiveConfig::fixed(cfg)).await
    }

    /// [`Server::open`] with a config that reloads (`weft serve --config …`):
    /// the admins' saved settings from the database go over it first, and
    /// every role started follows reloads from any replica.
    pub async fn open_live(live: LiveConfig) -> anyhow::Result<Server> {
        let cfg = live.get();
        let backends = Backends::connect(&cfg).await?;
        // Saved web settings apply from the start (a reload that fails here
        // leaves the file's config: the process still starts).
        match backends.store.config_settings().await? {
            Some(saved) => {
                if let Err(e) = live.reload(Some(&saved.document)) {
                    tracing::error!(error = %e, "the saved settings do not apply to this config; starting without them");
                }
                live.set_version(saved.version);
            }
            None => live.set_version(0),
        }
        let cfg = live.get();
        if !backends.embedded() {
            warn_cluster_defaults(&cfg);
        }
        backends.store.seed_agents(&cfg.agents).await?;
        let extractor = weft_files::Extractor::this_binary(extract_limits(&cfg))
            .context("locating this binary for `weft extract`")?;
        let retriever = weft_knowledge::Retriever::new(backends.store.clone(), live.clone());
        Ok(Server {
            cfg,
            live,
            backends,
            extractor,
            retriever,
        })
    }

    /// The live config (reload it with `weft_store::reload::reload`).
    pub fn live(&self) -> &LiveConfig {
        &self.live
    }

    /// Follows reloads from other replicas until `shutdown` (see
    /// `weft_store::reload::follow`).
    fn follow_reloads(&self, shutdown: &CancellationToken) {
        tokio::spawn(weft_store::reload::follow(
            self.backends.store.clone(),
            self.live.clone(),
            shutdown.child_token(),
        ));
    }

    /// Read documents with `extractor` instead of `weft extract` children of
    /// this binary: for a program that embeds Weft and has no `extract`
    /// subcommand of its own.
    pub fn with_extractor(mut self, extractor: weft_files::Extractor) -> Server {
        self.extractor = extractor;
        self
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.cfg
    }

    pub fn store(&self) -> &Store {
        &self.backends.store
    }

    /// SQLite with the in-process bus and queue (else Postgres and Redis).
    pub fn embedded(&self) -> bool {
        self.backends.embedded()
    }

    /// What a role that serves people does first: apply `admin_token` (set: it
    /// authenticates `admin`; unset: any earlier bootstrap token is revoked).
    async fn bootstrap_admin(&self) -> anyhow::Result<()> {
        bootstrap::admin_token(&self.backends.store, &self.cfg).await
    }

    /// The Lark REST client with its rate limits, when `[lark]` is configured; one
    /// per process, shared by the ingress and the card egress so both count
    /// against the same per-app budget.
    fn lark_sender(&self) -> Option<weft_lark::sender::RateAwareSender> {
        self.cfg
            .lark
            .enabled()
            .then(|| weft_gateway::lark::lark_sender(&self.cfg.lark))
    }

    fn gateway_state(
        &self,
        metrics: &Metrics,
        shutdown: CancellationToken,
    ) -> weft_gateway::AppState {
        let b = &self.backends;
        let at = match metrics {
            Some(_) => weft_gateway::MetricsAt::OwnListener,
            None => weft_gateway::MetricsAt::Api,
        };
        weft_gateway::AppState::new(
            b.store.clone(),
            b.bus.clone(),
            b.queue.clone(),
            self.live.clone(),
            b.blobs.clone(),
            self.extractor.clone(),
            shutdown,
        )
        .with_retriever(self.retriever.clone())
        .with_login_attempts(b.login_attempts.clone())
        .with_metrics_at(at)
    }

    fn worker_deps(
        &self,
        lark: Option<weft_lark::sender::RateAwareSender>,
    ) -> weft_worker::WorkerDeps {
        let b = &self.backends;
        weft_worker::WorkerDeps {
            store: b.store.clone(),
            bus: b.bus.clone(),
            queue: b.queue.clone(),
            live: self.live.clone(),
            blobs: b.blobs.clone(),
            extractor: self.extractor.clone(),
            retriever: self.retriever.clone(),
            lark,
        }
    }

    /// Gateway and worker in one process (`weft up`): the web UI, the API, the
    /// Lark bot when configured, and runs executed here. Embedded, on a fresh
    /// database, it first creates the admin ([`bootstrap::first_boot`]).
    pub async fn up(
        self,
        listener: TcpListener,
        metrics: Metrics,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Running> {
        let addr = listener.local_addr()?;
        self.bootstrap_admin().await?;
        if self.embedded() {
            bootstrap::first_boot(&self.backends.store, &self.cfg, addr).await?;
        }
        let lark = self.lark_sender();
        self.follow_reloads(&shutdown);
        let state = self.gateway_state(&metrics, shutdown.clone());
        let metrics = serve_metrics(metrics, &shutdown)?;
        let ingress = weft_gateway::lark::start(state.clone(), lark.clone()).await?;
        let embedded = self.embedded();
        let worker = tokio::spawn(weft_worker::run(
            self.worker_deps(lark),
            shutdown.clone(),
            embedded,
        ));
        let store = self.backends.store.clone();
        let task = tokio::spawn(async move {
            let served = weft_gateway::serve(listener, state).await;
            shutdown.cancel();
            let worked = worker.await.context("worker task panicked")?;
            if let Some(ingress) = ingress {
                let _ = ingress.await;
            }
            store.close().await;
            served?;
            worked
        });
        Ok(Running {
            addr: Some(addr),
            metrics,
            task,
        })
    }

    /// The gateway alone (`weft serve`, distributed mode): the API, the web UI
    /// and the Lark ingress; runs go to the shared queue.
    pub async fn gateway(
        self,
        listener: TcpListener,
        metrics: Metrics,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Running> {
        require_distributed(&self.cfg, "serve")?;
        let addr = listener.local_addr()?;
        self.bootstrap_admin().await?;
        self.follow_reloads(&shutdown);
        let state = self.gateway_state(&metrics, shutdown.clone());
        let metrics = serve_metrics(metrics, &shutdown)?;
        let ingress = weft_gateway::lark::start(state.clone(), self.lark_sender()).await?;
        let store = self.backends.store.clone();
        let task = tokio::spawn(async move {
            let served = weft_gateway::serve(listener, state).await;
            if let Some(ingress) = ingress {
                let _ = ingress.await;
            }
            store.close().await;
            served.map_err(Into::into)
        });
        Ok(Running {
            addr: Some(addr),
            metrics,
            task,
        })
    }

    /// A worker alone (`weft worker`, distributed mode), with `/metrics` and
    /// `/health` on `metrics` when given. It leaves the bootstrap token alone:
    /// workers need no `WEFT_ADMIN_TOKEN`.
    pub async fn worker(
        self,
        metrics: Metrics,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Running> {
        require_distributed(&self.cfg, "worker")?;
        self.follow_reloads(&shutdown);
        let metrics = serve_metrics(metrics, &shutdown)?;
        let deps = self.worker_deps(self.lark_sender());
        let store = self.backends.store.clone();
        let task = tokio::spawn(async move {
            let worked = weft_worker::run(deps, shutdown, false).await;
            store.close().await;
            worked
        });
        Ok(Running {
            addr: None,
            metrics,
            task,
        })
    }
}

/// Defaults that suit one machine but not a cluster of 1,000+ users (the
/// sizing in BENCHMARKS.md and deploy/README.md): said once at start-up.
fn warn_cluster_defaults(cfg: &Config) {
    const HOUR: u64 = 3600;
    if cfg.events.retention_secs > HOUR {
        tracing::warn!(
            events.retention_secs = cfg.events.retention_secs,
            "event logs stay in Redis this long after a run ends: Redis memory is runs/s × ~58 KB × retention, \
             165 GB at 1,000 users with 24 h; set events.retention_secs = 600 (WEFT_EVENTS__RETENTION_SECS) unless clients re-attach later than that"
        );
    }
    if cfg.worker.concurrency == weft_config::WorkerConfig::default().concurrency {
        tracing::warn!(
            worker.concurrency = cfg.worker.concurrency,
            "each worker runs at most this many runs at once (the default); at 1,000 users that is fewer than the runs in flight: \
             give each worker 512 (WEFT_WORKER__CONCURRENCY) or run more workers (deploy/README.md, Sizing)"
        );
    }
}

/// A listener of its own for `/metrics` and `/health` (`--metrics-listen`), or none.
pub type Metrics = Option<TcpListener>;

/// Serves `/metrics` and `/health` on `metrics` until `shutdown`.
fn serve_metrics(
    metrics: Metrics,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<SocketAddr>> {
    let Some(listener) = metrics else {
        return Ok(None);
    };
    let addr = listener.local_addr()?;
    tokio::spawn(weft_gateway::serve_metrics(listener, shutdown.clone()));
    Ok(Some(addr))
}

/// `serve` and `worker` share work through Postgres and Redis; alone, in
/// embedded mode, they would take messages nobody runs (or wait for ever).
pub fn require_distributed(cfg: &Config, role: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        matches!(cfg.mode()?, weft_config::Mode::Distributed { .. }),
        "`weft {role}` needs the shared queue: set --redis-url and a postgres --database-url (or use `weft up` for one process)"
    );
    Ok(())
}

/// `weft migrate`: applies the migrations and says where.
pub async fn migrate(cfg: &Config) -> anyhow::Result<String> {
    let url = database_url(cfg)?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    store.close().await;
    Ok(redact(&url))
}

//! weft-gateway: the stateless HTTP/SSE front door. Authenticates, validates,
//! writes the send transaction, enqueues run jobs and streams run events. It never
//! calls an LLM; any number of gateways can serve the same runs.
//!
//! Each HTTP area is a module with `fn router() -> Router<AppState>`; [`router`]
//! merges them. [`serve`] takes an already-bound listener and a shutdown token, so
//! tests bind port 0 and stop it cleanly.

mod access;
mod account;
pub mod agents;
mod approvals;
mod auth;
mod channels;
mod chat;
mod client;
mod error;
mod extract;
mod files;
mod headers;
mod knowledge;
pub mod lark;
mod memories;
mod meta;
mod notifications;
mod observe;
mod openapi;
mod passwords;
mod plans;
mod questions;
mod runs;
mod schedules;
mod sessions;
mod settings;
mod sse;
mod storage_quota;
mod stream_limit;
mod todos;
mod transport;
mod turns;
mod uploads;
mod web;

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::serve::{ListenerExt, TapIo};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use weft_config::{Config, LiveConfig, ModelConfig};
use weft_shared::bus::SharedBus;
use weft_shared::login_limit::{MemoryLoginAttempts, SharedLoginAttempts};
use weft_shared::queue::SharedQueue;
use weft_store::Store;

pub use error::ApiError;
pub use openapi::spec as openapi_spec;

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// Sends, cancels, decides and ends runs (the one run service).
    pub runs: weft_runs::Runs,
    pub bus: SharedBus,
    pub queue: SharedQueue,
    /// The config, reloaded live (`weft_store::reload`): read it with
    /// [`AppState::config`] for each request; what is built from it at start
    /// (listeners, pools, the stream and memory limits) needs a restart.
    pub live: LiveConfig,
    pub metrics: PrometheusHandle,
    /// Whether the API listener serves `/metrics` too.
    pub metrics_at: MetricsAt,
    /// Sign-in attempts per address and per account (in Redis when distributed).
    pub login_limiter: SharedLoginAttempts,
    /// Every argon2 hash and check goes through here (bounded memory and CPU).
    pub passwords: Arc<passwords::PasswordGate>,
    /// Whose `X-Forwarded-*` headers are believed.
    pub trusted_proxies: Arc<client::TrustedProxies>,
    /// Open event streams per user and per run.
    pub streams: Arc<stream_limit::StreamLimits>,
    /// Fires on shutdown: open streams end so clients re-attach elsewhere.
    pub shutdown: CancellationToken,
    /// The agents sessions may name (reloaded every few seconds).
    pub agents: agents::SharedAgentIds,
    /// Attachment bytes.
    pub blobs: weft_shared::blobs::Blobs,
    /// Memory for attachment uploads in flight (`attachments.gateway_upload_memory_bytes`),
    /// a share of it per user (`attachments.upload_memory_per_user_bytes`).
    pub upload_room: weft_shared::memory_room::SharedRoom,
    /// Where documents are read: `weft extract` children, never this process.
    pub extractor: weft_files::Extractor,
    /// Knowledge search (lexical, and vectors when an embedding model is set).
    pub retriever: weft_knowledge::Retriever,
}

impl AppState {
    pub fn new(
        store: Store,
        bus: SharedBus,
        queue: SharedQueue,
        live: LiveConfig,
        blobs: weft_shared::blobs::Blobs,
        extractor: weft_files::Extractor,
        shutdown: CancellationToken,
    ) -> AppState {
        let config = live.get();
        let login_limiter: SharedLoginAttempts = Arc::new(MemoryLoginAttempts::new(&config.login));
        let trusted_proxies = Arc::new(client::TrustedProxies::from_config(&config));
        let streams = Arc::new(stream_limit::StreamLimits::new(
            config.limits.streams_per_user,
            config.limits.streams_per_run,
        ));
        let store_for_search = store.clone();
        let state = AppState {
            runs: weft_runs::Runs::new(store.clone(), bus.clone(), queue.clone(), live.clone()),
            store,
            bus,
            queue,
            metrics: metrics_handle(),
            metrics_at: MetricsAt::Api,
            login_limiter,
            passwords: Arc::new(passwords::PasswordGate::for_this_machine()),
            trusted_proxies,
            streams,
            agents: Arc::new(std::sync::RwLock::new(agents::AgentIds::seeded(
                &config.agents,
            ))),
            blobs,
            upload_room: weft_shared::memory_room::SharedRoom::new(
                config.attachments.gateway_upload_memory_bytes,
                config.attachments.upload_memory_per_user(),
            ),
            extractor,
            retriever: weft_knowledge::Retriever::new(store_for_search, live.clone()),
            live,
            shutdown,
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            agents::spawn_refresh(&state);
        }
        state
    }

    /// The config now (keep the `Arc` for the request at hand).
    pub fn config(&self) -> Arc<Config> {
        self.live.get()
    }

    /// The models served now, the default first (`Config::effective_models`);
    /// who may choose which: `access`.
    pub fn models(&self) -> Arc<[ModelConfig]> {
        self.live.current().models.clone()
    }

    /// Search knowledge with `retriever` (shared with the worker in one
    /// process, so both use one copy of a base's vectors).
    pub fn with_retriever(mut self, retriever: weft_knowledge::Retriever) -> AppState {
        self.retriever = retriever;
        self
    }

    /// Share sign-in counts through `attempts` (Redis, in distributed mode).
    pub fn with_login_attempts(mut self, attempts: SharedLoginAttempts) -> AppState {
        self.login_limiter = attempts;
        self
    }

    /// Serve `/metrics` on a listener of its own only ([`serve_metrics`]).
    pub fn with_metrics_at(mut self, at: MetricsAt) -> AppState {
        self.metrics_at = at;
        self
    }
}

/// Where a gateway serves `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsAt {
    /// On the API listener (without `--metrics-listen`).
    Api,
    /// Only on a listener of its own (`--metrics-listen`): the API's `/metrics` is
    /// 404, so whatever exposes the API (a proxy, an Ingress routing `/`) cannot
    /// expose the metrics with it.
    OwnListener,
}

/// One Prometheus recorder per process (tests start several gateways in one).
fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                    60.0, 300.0,
                ])
                .expect("static buckets")
                .build_recorder();
            let handle = recorder.handle();
            // Another recorder may already be installed (embedding apps); then ours renders empty.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

pub fn router(state: AppState) -> Router {
    let body_limit = state.config().limits.body_bytes as usize;
    let upload_limit = uploads::send_body_limit(&state.config());
    let trusted = state.trusted_proxies.clone();
    let metrics = match state.metrics_at {
        MetricsAt::Api => axum::routing::get(meta::metrics),
        MetricsAt::OwnListener => axum::routing::get(|| async { ApiError::NotFound }),
    };
    let routes = Router::new()
        .route("/metrics", metrics)
        .merge(meta::router())
        .merge(openapi::router())
        .merge(auth::router())
        .merge(account::router())
        .merge(memories::router())
        .merge(settings::router())
        .merge(sessions::router(upload_limit))
        .merge(runs::router())
        .merge(approvals::router())
        .merge(todos::router())
        .merge(schedules::router())
        .merge(channels::router())
        .merge(notifications::router())
        .merge(plans::router())
        .merge(questions::router())
        .merge(agents::router())
        .merge(agents::skills_router())
        .merge(turns::router())
        .merge(chat::router(upload_limit))
        .merge(files::router())
        .merge(knowledge::router(&state))
        .merge(lark::admin::router())
        // A known path with another method: the one envelope too (axum keeps
        // its `Allow` header).
        .method_not_allowed_fallback(|method: axum::http::Method| async move {
            ApiError::MethodNotAllowed(method.to_string())
        })
        .fallback(web::serve);
    observe::requests(
        headers::secure(routes).layer(DefaultBodyLimit::max(body_limit)),
        trusted,
    )
    .with_state(state)
}

/// `/health` and `/metrics` alone: a worker's (it has no API), or a gateway's
/// with `--metrics-listen`.
pub async fn serve_metrics(
    listener: TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let handle = metrics_handle();
    let routes = Router::new()
        .route("/health", axum::routing::get(meta::health))
        .route(
            "/metrics",
            axum::routing::get(move || {
                let handle = handle.clone();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4",
                        )],
                        handle.render(),
                    )
                }
            }),
        );
    axum::serve(no_delay(listener), headers::secure(routes))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// Accepted connections with Nagle's algorithm off. axum leaves it on, and a small
/// SSE frame written while the previous one is unacknowledged then waits for the
/// client's delayed ACK: we measured 40 ms on about 1 event in 20.
fn no_delay(listener: TcpListener) -> TapIo<TcpListener, fn(&mut TcpStream)> {
    fn set(tcp: &mut TcpStream) {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
    }
    listener.tap_io(set as fn(&mut TcpStream))
}

/// Serve until `shutdown` fires; open SSE streams end then (clients re-attach).
/// Connection timeouts and the connection cap are `transport`'s.
pub async fn serve(listener: TcpListener, state: AppState) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    let http = state.config().http.clone();
    let proxies = state.trusted_proxies.clone();
    transport::serve(listener, router(state), &http, proxies, shutdown).await
}

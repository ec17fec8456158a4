//! A live embedded Weft in the test process: gateway and worker, SQLite in a temp
//! dir, the in-process `mock` model, per-user limits off; with `[lark]`
//! configured, the Lark ingress and card egress too, as `weft up` wires them.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use weft_shared::bus::MemoryBus;
use weft_shared::config::{Config, Secret};
use weft_shared::queue::MemoryQueue;
use weft_shared::store::Store;

pub const ADMIN: &str = "weft_loadtest_admin_token_0123456789";

/// A running embedded Weft; stops when dropped.
pub struct Weft {
    /// The gateway's base URL (the `lark` test reaches Weft through the fake only).
    #[allow(dead_code)]
    pub url: String,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for Weft {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts Weft with the test defaults, then `configure`'s changes.
pub async fn start_weft(configure: impl FnOnce(&mut Config)) -> Weft {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        data_dir: Some(dir.path().to_path_buf()),
        admin_token: Some(Secret(ADMIN.into())),
        ..Config::default()
    };
    cfg.limits.active_runs_per_user = 0;
    cfg.limits.runs_per_minute_per_user = 0;
    // The attach scenario holds many streams of one user on a few runs.
    cfg.limits.streams_per_user = 0;
    cfg.limits.streams_per_run = 0;
    configure(&mut cfg);
    let cfg = Arc::new(cfg);
    let db = match cfg.mode().unwrap() {
        weft_shared::config::Mode::Embedded { database_url } => database_url,
        other => panic!("expected embedded mode, got {other:?}"),
    };
    let store = Store::connect(&db).await.unwrap();
    store.migrate().await.unwrap();
    let unusable = weft_shared::auth::hash_password(&weft_shared::auth::new_token()).unwrap();
    store
        .ensure_bootstrap_admin(&weft_shared::auth::token_hash(ADMIN), &unusable)
        .await
        .unwrap();
    let bus: weft_shared::bus::SharedBus = Arc::new(MemoryBus::new(cfg.events.max_len as usize));
    let queue: weft_shared::queue::SharedQueue = Arc::new(MemoryQueue::default());
    let shutdown = CancellationToken::new();
    let lark = cfg
        .lark
        .enabled()
        .then(|| weft_gateway::lark::lark_sender(&cfg.lark));
    let deps = weft_worker::WorkerDeps {
        store: store.clone(),
        bus: bus.clone(),
        queue: queue.clone(),
        config: cfg.clone(),
        lark: lark.clone(),
    };
    tokio::spawn(weft_worker::run(deps, shutdown.clone(), true));
    let state = weft_gateway::AppState::new(store, bus, queue, cfg, shutdown.clone());
    weft_gateway::lark::start(state.clone(), lark)
        .await
        .expect("the lark bot starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(weft_gateway::serve(listener, state));
    Weft {
        url,
        shutdown,
        _dir: dir,
    }
}

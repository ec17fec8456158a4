//! A live embedded Weft in the test process: gateway and worker, SQLite in a temp
//! dir, the in-process `mock` model, per-user limits off; with `[lark]`
//! configured, the Lark ingress and card egress too — wired by `weft-server`,
//! exactly as `weft up` is.

use tokio_util::sync::CancellationToken;
use weft_config::{Config, Secret};

pub const ADMIN: &str = "weft_loadtest_admin_token_0123456789";

/// A running embedded Weft; stops when dropped.
pub struct Weft {
    /// The gateway's base URL (the `lark` test reaches Weft through the fake only).
    #[allow(dead_code)]
    pub url: String,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Weft {
    /// Its SQLite database, read-only.
    #[allow(dead_code)]
    pub fn database_url(&self) -> String {
        format!(
            "sqlite://{}?mode=ro",
            self._dir.path().join("weft.db").display()
        )
    }
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
    let shutdown = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = weft_server::Server::open(cfg).await.expect("weft opens");
    assert!(server.embedded(), "the load tests run embedded");
    server
        .up(listener, None, shutdown.clone())
        .await
        .expect("weft starts (and the lark bot, when configured)");
    Weft {
        url,
        shutdown,
        _dir: dir,
    }
}

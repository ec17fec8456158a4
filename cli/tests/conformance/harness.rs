//! Test harness: starts the real `weft` binary (embedded, or `serve` + `worker`
//! against real Postgres and Redis), with a fresh database and a unique Redis key
//! prefix per test, and talks to it over real HTTP and SSE.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

pub const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/test";
pub const REDIS: &str = "redis://127.0.0.1:6379";
pub const ADMIN_TOKEN: &str = "weft_conformance_admin_token_0123456789";

/// The Python with the SDKs and test servers (`mcp`, `moto`, `boto3`) the suite
/// drives; `scripts/test` makes it.
pub fn python() -> String {
    std::env::var("WEFT_PYTHON").expect(
        "set WEFT_PYTHON to the Python scripts/test prepares (~/.cache/weft-venv/bin/python, with mcp, moto and boto3)",
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Distributed,
}

#[path = "../../../shared/tests/support/eventually.rs"]
mod polling;
pub use polling::{POLL, eventually, eventually_with};

/// One test's isolated world: a temp dir, and for distributed mode a fresh
/// Postgres database and Redis prefix, dropped at the end.
pub struct Env {
    pub backend: Backend,
    pub dir: tempfile::TempDir,
    pub db_name: String,
    pub prefix: String,
    pub extra: Vec<(String, String)>,
}

impl Env {
    pub async fn new(backend: Backend, extra: &[(&str, &str)]) -> Env {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let db_name = format!("weft_t_{}", &id[..16]);
        if backend == Backend::Distributed {
            let pool = sqlx::PgPool::connect(PG_ADMIN)
                .await
                .expect("postgres at 127.0.0.1:5432 (database test)");
            sqlx::query(sqlx::AssertSqlSafe(format!("create database {db_name}")))
                .execute(&pool)
                .await
                .expect("create test database");
            pool.close().await;
        }
        Env {
            backend,
            dir: tempfile::tempdir().unwrap(),
            prefix: format!("weft_t_{}:", &id[..16]),
            db_name,
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn db_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:5432/{}", self.db_name)
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("RUST_LOG", "info,sqlx=warn")
            .env("WEFT_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("WEFT_REDIS_PREFIX", &self.prefix)
            // Several processes per test, tests in parallel: stay well under
            // Postgres' 100 connections.
            .env("WEFT_DATABASE_MAX_CONNECTIONS", "8")
            // Fast leases so crash tests finish in seconds.
            .env("WEFT_WORKER__HEARTBEAT_MS", "200")
            .env("WEFT_WORKER__STALE_AFTER_MS", "1500")
            .env("WEFT_WORKER__REQUEUE_AFTER_MS", "1000")
            .env("WEFT_WORKER__REAPER_INTERVAL_MS", "250")
            .env("WEFT_WORKER__SHUTDOWN_GRACE_MS", "500");
        if self.backend == Backend::Distributed {
            cmd.env("WEFT_DATABASE_URL", self.db_url())
                .env("WEFT_REDIS_URL", REDIS);
        } else {
            cmd.env("WEFT_DATA_DIR", self.dir.path().join("data"));
        }
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    /// Delete this test's Redis keys (what a flush does to this test's world).
    pub async fn flush_redis(&self) {
        let client = redis::Client::open(REDIS).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query_async(&mut conn)
            .await
            .unwrap();
        if !keys.is_empty() {
            let _: () = redis::cmd("DEL")
                .arg(&keys)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if self.backend != Backend::Distributed {
            return;
        }
        let db = self.db_name.clone();
        let prefix = self.prefix.clone();
        // Drop runs inside a tokio runtime: do the async cleanup on a plain thread.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                if let Ok(pool) = sqlx::PgPool::connect(PG_ADMIN).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "drop database if exists {db} with (force)"
                    )))
                    .execute(&pool)
                    .await;
                }
                if let Ok(client) = redis::Client::open(REDIS)
                    && let Ok(mut c) = client.get_multiplexed_async_connection().await
                {
                    let keys: Vec<String> = redis::cmd("KEYS")
                        .arg(format!("{prefix}*"))
                        .query_async(&mut c)
                        .await
                        .unwrap_or_default();
                    if !keys.is_empty() {
                        let _: Result<(), _> =
                            redis::cmd("DEL").arg(&keys).query_async(&mut c).await;
                    }
                }
            });
        })
        .join();
    }
}

/// A running `weft` process; killed when dropped. Its stderr is kept for failures.
pub struct Proc {
    child: Child,
    pub log: Arc<Mutex<Vec<String>>>,
    pub addr: Option<String>,
}

impl Proc {
    pub fn spawn(mut cmd: Command, ready_marker: &str) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weft");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        let marker = ready_marker.to_string();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains(&marker)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(line.clone());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(_) => panic!(
                "weft did not become ready; stderr:\n{}",
                log.lock().unwrap().join("\n")
            ),
        };
        let addr = line.split("http://").nth(1).map(|s| s.trim().to_string());
        Proc { child, log, addr }
    }

    /// SIGTERM (what an orchestrator sends to drain a process).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success(), "kill -TERM failed");
    }

    /// The exit code once the process has ended, waiting at most `within`.
    pub async fn exit_code(&mut self, within: Duration) -> Option<i32> {
        let Proc { child, log, .. } = self;
        eventually_with(
            within,
            POLL,
            "the process to exit",
            || format!("stderr:\n{}", log.lock().unwrap().join("\n")),
            async || match child.try_wait().expect("try_wait") {
                Some(status) => Ok(status.code()),
                None => Err("still running"),
            },
        )
        .await
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }

    pub fn logs(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Where the process serves `/metrics`, from the line it prints at start
    /// (`--metrics-listen` or `WEFT_METRICS_LISTEN`).
    pub fn metrics_url(&self) -> String {
        let logs = self.logs();
        let addr = logs
            .lines()
            .find_map(|l| l.split_once("metrics on http://").map(|(_, a)| a.trim()))
            .unwrap_or_else(|| panic!("no metrics address printed:\n{logs}"));
        format!("http://{addr}")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running Weft (one process embedded; gateway + worker distributed).
pub struct App {
    pub env: Env,
    pub gateway: Proc,
    pub workers: Vec<Proc>,
    pub base: String,
    pub http: reqwest::Client,
}

impl App {
    pub async fn start(backend: Backend) -> App {
        App::start_with(backend, &[]).await
    }

    pub async fn start_with(backend: Backend, extra: &[(&str, &str)]) -> App {
        let env = Env::new(backend, extra).await;
        App::start_in(env, true)
    }

    /// Start the processes of `env` (distributed: optionally without a worker).
    pub fn start_in(env: Env, with_worker: bool) -> App {
        let (gateway, workers) = match env.backend {
            Backend::Embedded => (
                Proc::spawn(
                    env.command(&["up", "--listen", "127.0.0.1:0"]),
                    "listening on http://",
                ),
                Vec::new(),
            ),
            Backend::Distributed => {
                let gw = Proc::spawn(
                    env.command(&["serve", "--listen", "127.0.0.1:0"]),
                    "listening on http://",
                );
                let workers = if with_worker {
                    vec![App::spawn_worker(&env)]
                } else {
                    Vec::new()
                };
                (gw, workers)
            }
        };
        let base = format!("http://{}", gateway.addr.clone().expect("gateway address"));
        App {
            env,
            gateway,
            workers,
            base,
            http: reqwest::Client::new(),
        }
    }

    /// What the gateway and the workers logged so far.
    pub fn logs(&self) -> String {
        let mut out = self.gateway.logs();
        for w in &self.workers {
            out.push_str(&w.logs());
        }
        out
    }

    pub fn spawn_worker(env: &Env) -> Proc {
        Proc::spawn(env.command(&["worker"]), "worker started")
    }

    /// Restart the gateway process (embedded: the whole Weft) on the same data.
    pub fn restart_gateway(&mut self) {
        self.gateway.kill();
        let args: &[&str] = match self.env.backend {
            Backend::Embedded => &["up", "--listen", "127.0.0.1:0"],
            Backend::Distributed => &["serve", "--listen", "127.0.0.1:0"],
        };
        self.gateway = Proc::spawn(self.env.command(args), "listening on http://");
        self.base = format!("http://{}", self.gateway.addr.clone().unwrap());
    }

    /// [`App::restart_gateway`] with a changed command (another environment).
    pub fn restart_gateway_with(&mut self, change: impl FnOnce(&mut Command)) {
        self.gateway.kill();
        let args: &[&str] = match self.env.backend {
            Backend::Embedded => &["up", "--listen", "127.0.0.1:0"],
            Backend::Distributed => &["serve", "--listen", "127.0.0.1:0"],
        };
        let mut cmd = self.env.command(args);
        change(&mut cmd);
        self.gateway = Proc::spawn(cmd, "listening on http://");
        self.base = format!("http://{}", self.gateway.addr.clone().unwrap());
    }

    /// A connection to this test's database, beside the running processes
    /// (embedded: the SQLite file, which WAL lets another connection write).
    pub async fn database(&self) -> sqlx::AnyPool {
        sqlx::any::install_default_drivers();
        let url = match self.env.backend {
            Backend::Distributed => self.env.db_url(),
            Backend::Embedded => {
                let path = self.env.dir.path().join("data").join("weft.db");
                format!("sqlite://{}", path.display())
            }
        };
        sqlx::pool::PoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .expect("the test's database")
    }

    /// A count read straight from the test's database.
    pub async fn count_rows(&self, sql: &str) -> i64 {
        let pool = self.database().await;
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_one(&pool)
            .await
            .unwrap();
        pool.close().await;
        n
    }

    /// A statement run straight on the test's database.
    pub async fn execute_sql(&self, sql: &str) {
        let pool = self.database().await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, self.url(path)).bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, token, Some(body))
            .await
    }

    /// A new user and a bearer token for them.
    pub async fn user(&self, name: &str) -> String {
        let (s, _) = self
            .post(
                "/v1/admin/users",
                ADMIN_TOKEN,
                json!({"username": name, "password": "password-123", "role": "user"}),
            )
            .await;
        assert_eq!(s, 201, "create user");
        self.login(name).await
    }

    /// A fresh login token for a user made by [`App::user`].
    pub async fn login(&self, name: &str) -> String {
        let (s, v) = self
            .post(
                "/v1/auth/login",
                "",
                json!({"username": name, "password": "password-123"}),
            )
            .await;
        assert_eq!(s, 200, "login: {v}");
        v["token"].as_str().unwrap().to_string()
    }

    pub async fn session(&self, token: &str) -> String {
        let (s, v) = self.post("/v1/sessions", token, json!({})).await;
        assert_eq!(s, 201, "create session: {v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// Send with `stream: true`; returns the open event stream.
    pub async fn send_stream(&self, token: &str, session: &str, text: &str) -> Sse {
        let resp = self
            .http
            .post(self.url(&format!("/v1/sessions/{session}/messages")))
            .bearer_auth(token)
            .json(&json!({"text": text, "stream": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "stream send");
        Sse::new(resp)
    }

    /// Send in the background (202); returns the run id.
    pub async fn send(&self, token: &str, session: &str, text: &str) -> String {
        let (s, v) = self
            .post(
                &format!("/v1/sessions/{session}/messages"),
                token,
                json!({"text": text}),
            )
            .await;
        assert_eq!(s, 202, "send: {v}");
        v["run_id"].as_str().expect("run_id").to_string()
    }

    pub async fn attach(&self, token: &str, run: &str, last_event_id: Option<u64>) -> Sse {
        let mut req = self
            .http
            .get(self.url(&format!("/v1/runs/{run}/events")))
            .bearer_auth(token);
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200, "attach");
        Sse::new(resp)
    }

    /// Poll the run until it is terminal.
    pub async fn wait_run(&self, token: &str, run: &str, within: Duration) -> Value {
        /// What a run that never ended showed, with every process's log
        /// (rendered only when the test fails).
        struct Unfinished<'a>(Value, &'a App);
        impl std::fmt::Debug for Unfinished<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}\n{}", self.0, self.1.logs())
            }
        }
        eventually(within, &format!("run {run} finished"), async || {
            let (s, v) = self.get(&format!("/v1/runs/{run}"), token).await;
            assert_eq!(s, 200, "{v}");
            match v["status"].as_str() {
                Some("succeeded" | "failed" | "cancelled") => Ok(v),
                _ => Err(Unfinished(v, self)),
            }
        })
        .await
    }

    pub async fn messages(&self, token: &str, session: &str) -> Vec<Value> {
        let (s, v) = self
            .get(&format!("/v1/sessions/{session}/messages?limit=200"), token)
            .await;
        assert_eq!(s, 200, "{v}");
        v["messages"].as_array().unwrap().clone()
    }
}

pub use crate::sse::*;

/// `text` without the terminal's colour codes (the log's field names carry them).
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

//! The processes a benchmark starts itself: the mock LLM server, then either one
//! `weft up` (embedded: SQLite + in-process queue) or `weft serve` gateways and
//! `weft worker`s against a fresh Postgres database and a Redis key prefix of its
//! own (distributed). It also owns the chaos levers: SIGKILL a worker, delete its
//! own Redis keys (SCAN + DEL over its prefix — never FLUSHDB/FLUSHALL on a Redis
//! others share), restart a gateway. Everything binds to 127.0.0.1.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::procs::{Proc, ProcSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Embedded,
    Distributed,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Embedded => "embedded",
            Mode::Distributed => "distributed",
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct StackOpts {
    pub weft_bin: PathBuf,
    pub mode: Mode,
    /// OpenAI-wire base URL of the mock LLM (`http://127.0.0.1:P/v1`); `None` uses
    /// weft's in-process `mock` model.
    pub llm_base_url: Option<String>,
    pub gateways: usize,
    pub workers: usize,
    /// Extra `WEFT_*` settings (worker concurrency, reaper timings…).
    pub env: Vec<(String, String)>,
    pub dir: PathBuf,
    pub postgres_admin_url: String,
    pub redis_url: String,
}

pub struct Stack {
    pub mode: Mode,
    pub dir: PathBuf,
    pub admin_token: String,
    /// `weft up` (embedded) or `weft serve` processes.
    pub gateways: Vec<Proc>,
    pub workers: Vec<Proc>,
    database: Option<(String, String)>,
    /// Where the processes keep their data (SQLite file or Postgres URL).
    database_url: Option<String>,
    redis: Option<(String, String)>,
}

impl Stack {
    pub async fn start(o: &StackOpts) -> anyhow::Result<Stack> {
        std::fs::create_dir_all(&o.dir)?;
        let tag = format!(
            "lt{}_{}",
            std::process::id(),
            uuid::Uuid::new_v4()
                .simple()
                .to_string()
                .get(..8)
                .unwrap_or("x")
        );
        let admin_token = format!("lt-admin-{}", uuid::Uuid::new_v4());
        let mut env = vec![
            ("WEFT_ADMIN_TOKEN".to_owned(), admin_token.clone()),
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER".into(), "0".into()),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER".into(), "0".into()),
            // The attach scenario holds thousands of streams for a handful of runs.
            ("WEFT_LIMITS__STREAMS_PER_USER".into(), "0".into()),
            ("WEFT_LIMITS__STREAMS_PER_RUN".into(), "0".into()),
            ("WEFT_HTTP__MAX_CONNECTIONS".into(), "65536".into()),
            ("RUST_LOG".into(), "warn".into()),
            // `weft up` writes a client config on first boot: keep it out of $HOME.
            (
                "XDG_CONFIG_HOME".into(),
                o.dir.join("config").display().to_string(),
            ),
        ];
        env.extend(o.env.iter().cloned());
        let mut base_args: Vec<String> = Vec::new();
        if let Some(url) = &o.llm_base_url {
            let cfg = o.dir.join("weft.toml");
            std::fs::write(
                &cfg,
                format!(
                    "[[models]]\nid = \"mock-http\"\nprovider = \"openai\"\nbase_url = \"{url}\"\ndefault = true\n"
                ),
            )?;
            base_args.extend(["--config".into(), cfg.display().to_string()]);
        }
        let spec = |name: &str, cmd: &str, extra: &[String], marker: &str| ProcSpec {
            name: name.to_owned(),
            program: o.weft_bin.clone(),
            args: std::iter::once(cmd.to_owned())
                .chain(base_args.iter().cloned())
                .chain(extra.iter().cloned())
                .collect(),
            env: env.clone(),
            cwd: Some(o.dir.clone()),
            ready_marker: Some(marker.to_owned()),
        };
        let mut stack = Stack {
            mode: o.mode,
            dir: o.dir.clone(),
            admin_token,
            gateways: Vec::new(),
            workers: Vec::new(),
            database: None,
            database_url: None,
            redis: None,
        };
        match o.mode {
            Mode::Embedded => {
                let data = o.dir.join(format!("data-{tag}"));
                let args = [
                    "--data-dir".into(),
                    data.display().to_string(),
                    "--listen".into(),
                    "127.0.0.1:0".into(),
                ];
                let p = start_pinned(spec("weft-up", "up", &args, "listening on http://"), &o.dir)
                    .await?;
                stack.gateways.push(p);
                stack.database_url = Some(format!(
                    "sqlite://{}?mode=ro",
                    data.join("weft.db").display()
                ));
            }
            Mode::Distributed => {
                let db_url = create_database(&o.postgres_admin_url, &tag).await?;
                stack.database = Some((o.postgres_admin_url.clone(), tag.clone()));
                stack.database_url = Some(db_url.clone());
                let prefix = format!("{tag}:");
                stack.redis = Some((o.redis_url.clone(), prefix.clone()));
                let urls = [
                    "--database-url".to_owned(),
                    db_url,
                    "--redis-url".into(),
                    o.redis_url.clone(),
                ];
                let with_prefix =
                    |s: &mut ProcSpec| s.env.push(("WEFT_REDIS_PREFIX".into(), prefix.clone()));
                for i in 0..o.gateways.max(1) {
                    let mut args = urls.to_vec();
                    args.extend(["--listen".into(), "127.0.0.1:0".into()]);
                    let mut s = spec(
                        &format!("gateway{i}"),
                        "serve",
                        &args,
                        "listening on http://",
                    );
                    with_prefix(&mut s);
                    stack.gateways.push(start_pinned(s, &o.dir).await?);
                }
                for i in 0..o.workers.max(1) {
                    let mut s = spec(&format!("worker{i}"), "worker", &urls, "worker started");
                    with_prefix(&mut s);
                    stack.workers.push(Proc::start(s, &o.dir).await?);
                }
            }
        }
        Ok(stack)
    }

    /// The database the stack's processes use (SQLite read-only), for checks.
    pub fn database_url(&self) -> Option<&str> {
        self.database_url.as_deref()
    }

    pub fn gateway_urls(&self) -> Vec<String> {
        self.gateways
            .iter()
            .filter_map(|g| g.addr.as_ref().map(|a| format!("http://{a}")))
            .collect()
    }

    /// (name, pid) of every process, for [`crate::procs::ProcWatch`].
    pub fn pids(&self) -> Vec<(String, u32)> {
        self.gateways
            .iter()
            .chain(&self.workers)
            .filter_map(|p| Some((p.spec.name.clone(), p.pid()?)))
            .collect()
    }

    /// SIGKILL worker `i` (embedded: the whole `weft up`) and start it again.
    pub async fn kill_worker(&mut self, i: usize, down_for: Duration) -> anyhow::Result<String> {
        let dir = self.dir.clone();
        let p = if self.workers.is_empty() {
            &mut self.gateways[0]
        } else {
            let n = self.workers.len();
            &mut self.workers[i % n]
        };
        p.kill().await;
        tokio::time::sleep(down_for).await;
        p.restart(&dir).await?;
        Ok(format!("SIGKILLed {} and started it again", p.spec.name))
    }

    /// Delete every key under this stack's Redis prefix (SCAN + DEL). Distributed only.
    pub async fn flush_redis(&self) -> anyhow::Result<Option<u64>> {
        let Some((url, prefix)) = &self.redis else {
            return Ok(None);
        };
        Ok(Some(delete_prefix(url, prefix).await?))
    }

    /// SIGTERM gateway `i`, wait, start it again on the same address.
    pub async fn restart_gateway(
        &mut self,
        i: usize,
        down_for: Duration,
    ) -> anyhow::Result<String> {
        let dir = self.dir.clone();
        let n = self.gateways.len();
        let g = &mut self.gateways[i % n];
        g.stop(Duration::from_secs(10)).await;
        tokio::time::sleep(down_for).await;
        g.restart(&dir).await?;
        Ok(format!("restarted {}", g.spec.name))
    }

    /// Stop everything and remove the database and Redis keys it created.
    pub async fn shutdown(mut self) {
        for p in self.gateways.iter_mut().chain(self.workers.iter_mut()) {
            p.stop(Duration::from_secs(5)).await;
        }
        if let Some((url, prefix)) = &self.redis
            && let Err(e) = delete_prefix(url, prefix).await
        {
            tracing::warn!(error = %e, "cleaning Redis keys");
        }
        if let Some((admin, name)) = &self.database
            && let Err(e) = drop_database(admin, name).await
        {
            tracing::warn!(error = %e, "dropping the benchmark database");
        }
    }
}

/// Start a process that listens on `127.0.0.1:0`, then pin its spec to the address
/// it got, so a restart comes back on the same URL.
async fn start_pinned(spec: ProcSpec, dir: &Path) -> anyhow::Result<Proc> {
    let mut p = Proc::start(spec, dir).await?;
    if let Some(addr) = p.addr.clone() {
        for a in p.spec.args.iter_mut() {
            if a == "127.0.0.1:0" {
                *a = addr.clone();
            }
        }
    }
    Ok(p)
}

/// `name` is ours (`lt<pid>_<hex>`, `weft_sat_<hex>`), never user input, so formatting it into the
/// statement is safe.
pub(crate) async fn create_database(admin_url: &str, name: &str) -> anyhow::Result<String> {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(admin_url)
        .await
        .with_context(|| "connecting to Postgres to create the benchmark database")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("create database {name}")))
        .execute(&mut c)
        .await?;
    let base = admin_url.rsplit_once('/').map_or(admin_url, |(b, _)| b);
    Ok(format!("{base}/{name}"))
}

pub(crate) async fn drop_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(admin_url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "drop database if exists {name} with (force)"
    )))
    .execute(&mut c)
    .await?;
    Ok(())
}

/// SCAN MATCH `prefix*` and DEL in batches; returns how many keys went.
pub async fn delete_prefix(url: &str, prefix: &str) -> anyhow::Result<u64> {
    anyhow::ensure!(
        prefix.len() >= 4
            && prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "refusing to delete keys under an unusual prefix {prefix:?}"
    );
    let client = redis::Client::open(url)?;
    let mut con = client.get_multiplexed_async_connection().await?;
    let mut cursor: u64 = 0;
    let mut deleted = 0u64;
    for _ in 0..100_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await?;
        if !keys.is_empty() {
            let n: u64 = redis::cmd("DEL").arg(&keys).query_async(&mut con).await?;
            deleted += n;
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    Ok(deleted)
}

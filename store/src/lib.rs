//! The system of record. One query set serves Postgres and SQLite through sqlx's
//! `Any` driver: ids are TEXT (uuidv7), timestamps BIGINT unix ms, JSON is TEXT and
//! flags are BIGINT 0/1, so the same SQL runs on both. The few dialect differences
//! (row locks, `begin immediate`) live in [`Store::begin`] and [`Dialect`].
//!
//! No code outside this module writes SQL. Constraint violations are mapped to
//! [`StoreError`] variants here, once, so handlers branch on outcomes rather than
//! on error strings.

mod agents;
mod approvals;
mod attachments;
mod channels;
mod config_settings;
mod delegations;
mod jobs;
mod knowledge;
mod lark;
mod lark_cards;
mod lark_inbox;
mod mcp_status;
mod memories;
mod messages;
mod notifications;
mod plans;
mod purge;
mod questions;
mod recovery;
pub mod reload;
mod revisions;
mod run_end;
mod runs;
mod schedules;
mod send;
mod session_writes;
mod sessions;
mod skills;
mod storage_quota;
mod summaries;
mod todos;
mod tool_outputs;
mod turns;
mod user_limits;
mod users;
mod waits;
mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyConnection, AnyPool, Row};

pub(crate) use writer::TxConn;
use writer::WriteTx;

use weft_shared::retry::{Backoff, retry};

pub use agents::{AgentOrigin, AgentRecord, builtin_agents};
pub use approvals::{Approval, ApprovalStatus, DecideOutcome, Decision, NewApproval};
pub use attachments::{Attachment, NewAttachment};
pub use channels::{ChannelRecord, DELIVERY_CHARS, DeliveryRecord, DeliveryWork};
pub use config_settings::ConfigSettings;
pub use delegations::{Delegation, DelegationStatus, NewDelegation};
pub use jobs::{ClaimedJob, Enqueued, JobEnd, JobRecord, JobState, LAPSED, LapsedJob, NewJob};
pub use knowledge::{
    BaseChange, BaseVectors, ChunkHit, ChunkVectors, ChunkWindow, DocumentLimits, IndexedChunk,
    IndexedDocument, KnowledgeBase, KnowledgeDocument, NewChunk, NewDocument, VectorScan,
    valid_base_name,
};
pub use lark::{InboundClaim, LarkChat, LarkTarget, LinkOutcome, ReactionRecord, lark_username};
pub use lark_cards::{CardEntityRecord, LarkApprovalCard, LarkCard};
pub use lark_inbox::{InboxEntry, InboxState, InboxWriter, LeasedInbound, MAX_KEEP_BATCH};
pub use memories::{Kept, Learned, Memory, MemoryChange, NewMemory, PendingTurn};
pub use messages::{HistoryState, Message, StepCheckpoint, ToolResult, valid_cursor};
pub use notifications::NotificationRecord;
pub use plans::{NewPlan, Plan, PlanDecision, PlanOutcome, PlanStatus, accept_comment};
pub use purge::Purged;
pub use questions::{
    AnswerOutcome, Answerer, MAX_ANSWER_CHARS, NewQuestion, Question, QuestionStatus,
};
pub use runs::{
    ActiveRun, CancelOutcome, ClaimOutcome, ClaimedRun, FinishOutcome, RunEnd, RunRecord, RunStatus,
};
pub use schedules::{FireRecord, FireSettings, Fired, NewSchedule, ScheduleRecord, ScheduleUpdate};
pub use send::{NewMessage, NewRun, SendOutcome, SendRequest, auto_title};
pub use sessions::{SessionCursor, SessionRecord};
pub use skills::merge_skills;
pub use storage_quota::StorageUse;
pub use summaries::Summary;
pub use todos::{
    MAX_TODO_ITEMS, MAX_TODO_TEXT, TodoPatch, TodoUpdate, TodoVersion, apply_todo_patch,
};
pub use turns::{Alternative, TurnOutcome};
pub use user_limits::RunLimits;
pub use users::{AuthUser, PasswordChange, Role, TokenKind, TokenRecord};
pub use waits::{Announced, NewWaits, PendingStep, WaitOutcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Sqlite,
}

impl Dialect {
    /// A subquery of the strings in the JSON array bound as `$n` (for `… in
    /// (…)` over a list of ids, one parameter whatever its length; `any`
    /// alone has no SQLite form and the `Any` driver binds no arrays).
    pub(crate) fn each_text(self, n: u8) -> String {
        match self {
            Dialect::Postgres => format!("select jsonb_array_elements_text(${n}::jsonb)"),
            Dialect::Sqlite => format!("select value from json_each(${n})"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// The caller may see it but not change it (a shared knowledge base, for
    /// one who is not its owner or an admin).
    #[error("not allowed")]
    Forbidden,
    /// A uniqueness rule said no (e.g. a username that exists).
    #[error("conflict: {}", .0.as_str())]
    Conflict(Conflict),
    /// The value breaks a rule of what may be stored (a new username outside the
    /// safe set); the message says which.
    #[error("{0}")]
    Invalid(String),
    /// Storing it would pass a limit; which, and by how much.
    #[error("over a limit: {0:?}")]
    OverLimit(OverLimit),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("database: {0}")]
    Other(String),
}

impl StoreError {
    /// The database failed (not an answer such as not found): trying again may
    /// succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Db(_) | StoreError::Other(_))
    }
}

/// A limit a write would pass, with the figures that say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverLimit {
    /// `knowledge.max_documents_per_base`: the base holds `held` documents.
    Documents { held: u64, limit: u64 },
    /// `limits.storage_bytes_per_user`: the user stores `used` bytes, and the
    /// write would add `adding`.
    Storage { used: u64, adding: u64, limit: u64 },
    /// `memory.max_per_user`: the person keeps `held` memories.
    Memories { held: u64, limit: u64 },
    /// `schedules.max_per_user`: the person has `held` schedules.
    Schedules { held: u64, limit: u64 },
    /// `schedules.max_channels_per_user`: the person has `held` channels.
    Channels { held: u64, limit: u64 },
}

/// Which uniqueness rule said no: callers branch on the kind, never on a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    UsernameTaken,
    TokenExists,
    /// The session already has an active run (the partial unique index).
    RunActive,
    /// Built-in agents cannot be deleted or renamed.
    BuiltinAgent,
    /// Two sends with one idempotency key raced; the loser reads the winner's.
    IdempotencyKeyRace,
    /// The Lark chat got its session from another message first.
    LarkChatBound,
    /// The owner has a knowledge base of that name.
    KnowledgeBaseExists,
    /// The owner has a channel of that name.
    ChannelNameTaken,
}

impl Conflict {
    pub fn as_str(self) -> &'static str {
        match self {
            Conflict::UsernameTaken => "username_taken",
            Conflict::TokenExists => "token_exists",
            Conflict::RunActive => "run_active",
            Conflict::BuiltinAgent => "builtin_agent",
            Conflict::IdempotencyKeyRace => "idempotency_key_race",
            Conflict::LarkChatBound => "lark_chat_bound",
            Conflict::KnowledgeBaseExists => "knowledge_base_exists",
            Conflict::ChannelNameTaken => "channel_name_taken",
        }
    }
}

impl StoreError {
    /// Map a unique violation to `Conflict(what)`; anything else stays a database error.
    fn unique(err: sqlx::Error, what: Conflict) -> StoreError {
        if let sqlx::Error::Database(db) = &err
            && db.is_unique_violation()
        {
            return StoreError::Conflict(what);
        }
        StoreError::Db(err)
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// SQLite only: the writer, one connection of its own that every write
    /// runs on, one at a time, queued on this lock ([`Store::begin`],
    /// [`Store::writer`]; the Lark inbox's batches hold the lock as a gate
    /// and run on a connection they keep). SQLite allows one writer anyway, and a
    /// writer that finds the lock taken sleeps in SQLite's busy handler (1 ms,
    /// 2 ms, 5 ms … 100 ms steps) instead of being woken when the lock frees,
    /// which left the machine idle under load. Never lent by the pool, it pays
    /// none of the pool's ping hops, and its page cache survives from one write to
    /// the next. `None` inside once [`Store::close`] ran.
    writer: Option<Arc<tokio::sync::Mutex<Option<AnyConnection>>>>,
    /// Signalled when this process enqueues a background job (see [`jobs`]).
    jobs_enqueued: Arc<tokio::sync::Notify>,
    /// Recurring jobs this process armed, and when they fall due (see
    /// [`Store::rearm_kind_job`]).
    armed: Arc<std::sync::Mutex<std::collections::HashMap<String, i64>>>,
    /// Whether knowledge vectors have pgvector's column (found once; see
    /// `knowledge::vectors`).
    vector_index: Arc<tokio::sync::OnceCell<bool>>,
    /// Vector sizes whose HNSW index this process made sure of.
    hnsw_sizes: Arc<std::sync::Mutex<std::collections::HashSet<usize>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dialect", &self.dialect)
            .finish()
    }
}

static PG_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");
static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");

impl Store {
    /// Connect (creating a SQLite file and its folder when needed), with at most
    /// 32 Postgres connections.
    pub async fn connect(url: &str) -> Result<Store> {
        Store::connect_with(url, 32).await
    }

    /// [`Store::connect`] with at most `pg_connections` Postgres connections
    /// (`database_max_connections`; SQLite always uses 4).
    pub async fn connect_with(url: &str, pg_connections: u32) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let dialect = if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else {
            Dialect::Postgres
        };
        let (pool, writer) = match dialect {
            Dialect::Sqlite => {
                let url = &creating_sqlite_file(url);
                if let Some(path) = sqlite_path(url) {
                    prepare_sqlite_file(std::path::Path::new(&path), url.contains("mode=rwc"))?;
                }
                // WAL lets readers run beside the writer; writes run on a
                // connection of their own, one at a time (see `writer`), so
                // SQLITE_BUSY cannot happen mid-transaction. Every statement is
                // a hop to a connection's own thread and back (two thread
                // wake-ups), and sqlx's pool adds a ping hop when it lends a
                // connection (off here: a SQLite connection in this process
                // cannot have gone away) and another when it takes one back;
                // the writer, never lent, pays neither. Three pooled
                // connections for reads keep the threads busier than more
                // would (fewer park/unpark cycles, issue 23's profile).
                //
                // No `mmap_size`: a connection drops its page cache whenever
                // another one committed, and with the file memory-mapped it
                // also unmapped and mapped it again, at every read after a
                // write. The `munmap`s (TLB shootdowns across both cores) cost
                // more than the pages' `pread` copies: 13–20 % of the CPU per
                // run at 50 users (BENCHMARKS.md, Analysis, 2026-12-07).
                let pool = AnyPoolOptions::new()
                    .max_connections(3)
                    .test_before_acquire(false)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            use sqlx::Executor;
                            conn.execute("pragma journal_mode = wal").await?;
                            conn.execute("pragma synchronous = normal").await?;
                            conn.execute("pragma busy_timeout = 10000").await?;
                            conn.execute("pragma foreign_keys = on").await?;
                            Ok(())
                        })
                    })
                    .connect(url)
                    .await?;
                // Opened by the pool (so with its settings), then kept out of it.
                let writer = pool.acquire().await?.detach();
                (pool, Some(Arc::new(tokio::sync::Mutex::new(Some(writer)))))
            }
            Dialect::Postgres => {
                // sqlx pings a connection (a round trip to the server) before
                // lending it, by default: a run borrows about fifteen times, and
                // the pings cost the gateway and the worker 14–19 % of their CPU
                // per run (BENCHMARKS.md, Analysis, 2026-12-07). Only one that sat
                // idle for over a second is pinged now: under load none is, and
                // after a quiet spell (when a restart of the server may have gone
                // unseen) a dead one is still found before it is used. A
                // connection that broke while busy fails its statement as before,
                // and the pool drops it.
                let pool = AnyPoolOptions::new()
                    .max_connections(pg_connections.max(1))
                    .acquire_timeout(Duration::from_secs(10))
                    .test_before_acquire(false)
                    .before_acquire(|conn, meta| {
                        Box::pin(async move {
                            if meta.idle_for > Duration::from_secs(1) {
                                use sqlx::Connection;
                                conn.ping().await?;
                            }
                            Ok(true)
                        })
                    })
                    .connect(url)
                    .await?;
                (pool, None)
            }
        };
        Ok(Store {
            pool,
            dialect,
            writer,
            jobs_enqueued: Arc::default(),
            armed: Arc::default(),
            vector_index: Arc::default(),
            hnsw_sizes: Arc::default(),
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub async fn migrate(&self) -> Result<()> {
        let migrator = match self.dialect {
            Dialect::Postgres => &PG_MIGRATIONS,
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
        };
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Other(format!("migrating: {e}")))?;
        if self.dialect == Dialect::Postgres {
            self.migrate_vectors().await?;
        }
        Ok(())
    }

    /// Readiness probe.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    pub async fn close(&self) {
        if let Some(writer) = &self.writer
            && let Some(conn) = writer.lock().await.take()
        {
            use sqlx::Connection;
            let _ = conn.close().await;
        }
        self.pool.close().await;
    }

    /// Delete `user`'s row `id` of `table` (one with `id` and `user_id`
    /// columns): `NotFound` when there is none, or it is someone else's.
    async fn delete_owned(
        &self,
        table: &'static str,
        user: &weft_wire::ids::UserId,
        id: &str,
    ) -> Result<()> {
        let mut w = self.writer().await?;
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "delete from {table} where id = $1 and user_id = $2"
        )))
        .bind(id)
        .bind(&user.0)
        .execute(&mut *w)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// `for update` where the database has row locks; SQLite's `begin immediate`
    /// already holds the whole-database write lock.
    fn lock_suffix(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => " for update",
            Dialect::Sqlite => "",
        }
    }
}

/// Retries `op` on database errors (a refused connection, a pool timeout) on
/// [`Backoff::DATABASE`] (250 ms, 500 ms, 1 s); answers such as not found or a
/// conflict return at once. For work nobody else will retry: an event Lark was
/// already acked for, a run's reply card. (A load test lost 8 of 200 Lark messages
/// to pool timeouts before this.)
pub async fn retrying<T, F, Fut>(what: &str, op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    retry(Backoff::DATABASE, what, StoreError::is_transient, op).await
}

/// The file path of a `sqlite:` URL, if it names one.
fn sqlite_path(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (!path.is_empty() && path != ":memory:").then(|| path.to_string())
}

/// Make the database file's folder (`0700`) and, when the URL lets SQLite create
/// it, the file itself (`0600`) before SQLite does, so neither is ever readable by
/// other local accounts; tighten an existing file and its `-wal`/`-shm` to `0600`.
fn prepare_sqlite_file(path: &std::path::Path, create: bool) -> Result<()> {
    use weft_shared::private_fs::{create_private_dir, ensure_private_file, restrict_to_owner};
    let failed = |what: &std::path::Path, e: std::io::Error| {
        StoreError::Other(format!("preparing {}: {e}", what.display()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(|e| failed(dir, e))?;
    }
    if create {
        ensure_private_file(path).map_err(|e| failed(path, e))?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        restrict_to_owner(&file).map_err(|e| failed(&file, e))?;
    }
    Ok(())
}

/// A file URL without a `mode` opens read-write but fails when the file does not
/// exist yet (`weft migrate --database-url sqlite:///new.db`): create it then.
fn creating_sqlite_file(url: &str) -> String {
    if sqlite_path(url).is_none() || url.contains("mode=") {
        return url.to_string();
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}mode=rwc")
}

fn get_str(row: &AnyRow, col: &str) -> Result<String> {
    Ok(row.try_get::<String, _>(col)?)
}

fn get_opt_str(row: &AnyRow, col: &str) -> Result<Option<String>> {
    Ok(row.try_get::<Option<String>, _>(col)?)
}

fn get_i64(row: &AnyRow, col: &str) -> Result<i64> {
    Ok(row.try_get::<i64, _>(col)?)
}

fn get_opt_i64(row: &AnyRow, col: &str) -> Result<Option<i64>> {
    Ok(row.try_get::<Option<i64>, _>(col)?)
}

/// Parse an enum column stored as text.
fn get_enum<T: FromStr>(row: &AnyRow, col: &str) -> Result<T> {
    let s = get_str(row, col)?;
    s.parse()
        .map_err(|_| StoreError::Other(format!("unexpected {col} value {s:?}")))
}

#[cfg(test)]
mod tests;

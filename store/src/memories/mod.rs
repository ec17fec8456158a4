//! Memories (docs/memory.md): what the assistant remembers about each person.
//!
//! Every query names the user: there is no way to read or change a memory
//! without being its person (an admin deletes them only with the user, by the
//! foreign key). Each write bumps that user's `memory_rev` in the same
//! transaction; the claim returns it ([`ClaimedRun::memory_rev`](super::ClaimedRun)),
//! so a worker reads a person's memories again only when one changed.
//!
//! A person's count is checked in the transaction that adds one, after
//! locking their user row (Postgres; SQLite's writer lock does it), so two
//! adds at once cannot both pass `memory.max_per_user`.

mod learned;

pub use learned::{Kept, Learned, PendingTurn};
pub(crate) use learned::{mark_used, used_json};

use sqlx::any::AnyRow;

use super::{
    OverLimit, Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str,
};
use weft_wire::api::{MemoryDto, MemoryKind, MemoryRef, MemorySource};
use weft_wire::ids::UserId;
use weft_wire::time::now_ms;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub id: String,
    pub user_id: UserId,
    pub kind: MemoryKind,
    pub text: String,
    pub pinned: bool,
    /// The person's profile: the one fact the extraction keeps up to date.
    pub profile: bool,
    pub source_session_id: Option<String>,
    pub source_message_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_used_at: Option<i64>,
}

impl Memory {
    /// How a run's `memory_used` event names it.
    pub fn to_ref(&self) -> MemoryRef {
        MemoryRef {
            id: self.id.clone(),
            kind: self.kind,
            text: self.text.clone(),
        }
    }

    pub fn to_dto(&self) -> MemoryDto {
        MemoryDto {
            id: self.id.clone(),
            kind: self.kind,
            text: self.text.clone(),
            pinned: self.pinned,
            profile: self.profile,
            source: match &self.source_session_id {
                Some(session_id) => MemorySource::Conversation {
                    session_id: session_id.clone(),
                    message_id: self.source_message_id.clone(),
                },
                None => MemorySource::Manual,
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
            last_used_at: self.last_used_at,
        }
    }
}

/// A memory to keep.
#[derive(Debug, Clone)]
pub struct NewMemory<'a> {
    pub kind: MemoryKind,
    pub text: &'a str,
    pub pinned: bool,
    /// The session (and message) it came from; none for one added by hand.
    pub source_session_id: Option<&'a str>,
    pub source_message_id: Option<&'a str>,
    /// `memory.max_per_user`.
    pub max_per_user: u64,
}

/// What may change in a memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryChange<'a> {
    pub text: Option<&'a str>,
    pub kind: Option<MemoryKind>,
    pub pinned: Option<bool>,
}

const COLUMNS: &str = "id, user_id, kind, text, pinned, profile, source_session_id, source_message_id, created_at, updated_at, last_used_at";

fn memory(row: &AnyRow) -> Result<Memory> {
    Ok(Memory {
        id: get_str(row, "id")?,
        user_id: UserId(get_str(row, "user_id")?),
        kind: get_enum(row, "kind")?,
        text: get_str(row, "text")?,
        pinned: get_i64(row, "pinned")? != 0,
        profile: get_i64(row, "profile")? != 0,
        source_session_id: get_opt_str(row, "source_session_id")?,
        source_message_id: get_opt_str(row, "source_message_id")?,
        created_at: get_i64(row, "created_at")?,
        updated_at: get_i64(row, "updated_at")?,
        last_used_at: get_opt_i64(row, "last_used_at")?,
    })
}

pub(super) async fn bump<'e, E>(db: E, user: &UserId) -> Result<()>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query("update users set memory_rev = memory_rev + 1 where id = $1")
        .bind(&user.0)
        .execute(db)
        .await?;
    Ok(())
}

impl Store {
    /// Locks the person's row (Postgres; SQLite's writer lock holds it
    /// already) so their count stays true until the transaction ends; how
    /// many memories they keep.
    async fn lock_person(&self, tx: &mut super::WriteTx, user: &UserId) -> Result<u64> {
        let locked = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from users where id = $1{}",
            self.lock_suffix()
        )))
        .bind(&user.0)
        .fetch_optional(&mut **tx)
        .await?;
        if locked.is_none() {
            return Err(StoreError::NotFound);
        }
        let held = sqlx::query("select count(*) as n from memories where user_id = $1")
            .bind(&user.0)
            .fetch_one(&mut **tx)
            .await?;
        Ok(get_i64(&held, "n")?.max(0) as u64)
    }

    /// Keep a memory for `user` (the one with the same text if there is one);
    /// [`OverLimit::Memories`] past `max_per_user`.
    pub async fn add_memory(&self, user: &UserId, new: &NewMemory<'_>) -> Result<Memory> {
        let mut tx = self.begin().await?;
        let held = self.lock_person(&mut tx, user).await?;
        // The same words kept again (a `remember` call redone after its
        // worker died, a person repeating themselves) are the memory they
        // already are.
        let same = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from memories where user_id = $1 and text = $2 limit 1"
        )))
        .bind(&user.0)
        .bind(new.text)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = same {
            return memory(&row);
        }
        if held >= new.max_per_user {
            return Err(StoreError::OverLimit(OverLimit::Memories {
                held,
                limit: new.max_per_user,
            }));
        }
        let now = now_ms();
        let source = new.source_session_id.map(|s| (s, new.source_message_id));
        let id = insert(&mut tx, user, new.kind, new.text, new.pinned, source, now).await?;
        let m = Memory {
            id,
            user_id: user.clone(),
            kind: new.kind,
            text: new.text.to_owned(),
            pinned: new.pinned,
            profile: false,
            source_session_id: new.source_session_id.map(str::to_owned),
            source_message_id: new.source_message_id.map(str::to_owned),
            created_at: now,
            updated_at: now,
            last_used_at: None,
        };
        bump(&mut *tx, user).await?;
        tx.commit().await?;
        Ok(m)
    }

    /// The person's memories: pinned first, then the most recently changed.
    pub async fn memories(&self, user: &UserId, kind: Option<MemoryKind>) -> Result<Vec<Memory>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from memories where user_id = $1 and ($2 = '' or kind = $2)
             order by pinned desc, updated_at desc, id desc"
        )))
        .bind(&user.0)
        .bind(kind.map_or("", MemoryKind::as_str))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(memory).collect()
    }

    /// One of the person's memories (404 for anyone else's).
    pub async fn memory(&self, user: &UserId, id: &str) -> Result<Memory> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from memories where id = $1 and user_id = $2"
        )))
        .bind(id)
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(memory)
            .transpose()?
            .ok_or(StoreError::NotFound)
    }

    pub async fn update_memory(
        &self,
        user: &UserId,
        id: &str,
        change: &MemoryChange<'_>,
    ) -> Result<Memory> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "update memories set text = coalesce($1, text), kind = coalesce($2, kind),
                 pinned = coalesce($3, pinned), updated_at = $4
             where id = $5 and user_id = $6",
        )
        .bind(change.text)
        .bind(change.kind.map(MemoryKind::as_str))
        .bind(change.pinned.map(i64::from))
        .bind(now_ms())
        .bind(id)
        .bind(&user.0)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        bump(&mut *tx, user).await?;
        tx.commit().await?;
        self.memory(user, id).await
    }

    pub async fn delete_memory(&self, user: &UserId, id: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from memories where id = $1 and user_id = $2")
            .bind(id)
            .bind(&user.0)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        bump(&mut *tx, user).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Forget everything the person told; how many memories went.
    pub async fn delete_memories(&self, user: &UserId) -> Result<u64> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from memories where user_id = $1")
            .bind(&user.0)
            .execute(&mut *tx)
            .await?;
        bump(&mut *tx, user).await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }

    /// The person's switch (`users.memory_enabled`).
    pub async fn memory_enabled(&self, user: &UserId) -> Result<bool> {
        let row = sqlx::query("select memory_enabled from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        Ok(get_i64(&row, "memory_enabled")? != 0)
    }

    pub async fn set_memory_enabled(&self, user: &UserId, enabled: bool) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("update users set memory_enabled = $1 where id = $2")
            .bind(i64::from(enabled))
            .bind(&user.0)
            .execute(&mut *tx)
            .await?;
        bump(&mut *tx, user).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The memories a run's prompt carried (empty: none, or memory was off).
    pub async fn run_memories_used(&self, run: &weft_wire::ids::RunId) -> Result<Vec<String>> {
        let row = sqlx::query("select memories_used from runs where id = $1")
            .bind(&run.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        match get_opt_str(&row, "memories_used")? {
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| StoreError::Other(format!("runs.memories_used: {e}"))),
            None => Ok(Vec::new()),
        }
    }
}

/// Inserts a memory (no count check, no revision bump: the caller's).
pub(super) async fn insert(
    tx: &mut super::WriteTx,
    user: &UserId,
    kind: MemoryKind,
    text: &str,
    pinned: bool,
    source: Option<(&str, Option<&str>)>,
    now: i64,
) -> Result<String> {
    let id = format!("mem_{}", uuid::Uuid::now_v7().simple());
    sqlx::query(
        "insert into memories (id, user_id, kind, text, pinned, source_session_id, source_message_id, created_at, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(&user.0)
    .bind(kind.as_str())
    .bind(text)
    .bind(i64::from(pinned))
    .bind(source.map(|s| s.0))
    .bind(source.and_then(|s| s.1))
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

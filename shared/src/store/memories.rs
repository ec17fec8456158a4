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

use sqlx::any::AnyRow;

use super::{
    OverLimit, Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str,
};
use crate::api::{MemoryDto, MemoryKind, MemoryRef, MemorySource};
use crate::ids::{RunId, SessionId, UserId};
use crate::time::now_ms;

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

async fn bump<'e, E>(db: E, user: &UserId) -> Result<()>
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
        .fetch_optional(&mut ***tx)
        .await?;
        if locked.is_none() {
            return Err(StoreError::NotFound);
        }
        let held = sqlx::query("select count(*) as n from memories where user_id = $1")
            .bind(&user.0)
            .fetch_one(&mut ***tx)
            .await?;
        Ok(get_i64(&held, "n")?.max(0) as u64)
    }

    /// Keep a memory for `user`; [`OverLimit::Memories`] past `max_per_user`.
    pub async fn add_memory(&self, user: &UserId, new: &NewMemory<'_>) -> Result<Memory> {
        let mut tx = self.begin().await?;
        let held = self.lock_person(&mut tx, user).await?;
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
        bump(&mut **tx, user).await?;
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
        .execute(&mut **tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        bump(&mut **tx, user).await?;
        tx.commit().await?;
        self.memory(user, id).await
    }

    pub async fn delete_memory(&self, user: &UserId, id: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from memories where id = $1 and user_id = $2")
            .bind(id)
            .bind(&user.0)
            .execute(&mut **tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        bump(&mut **tx, user).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Forget everything the person told; how many memories went.
    pub async fn delete_memories(&self, user: &UserId) -> Result<u64> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from memories where user_id = $1")
            .bind(&user.0)
            .execute(&mut **tx)
            .await?;
        bump(&mut **tx, user).await?;
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
            .execute(&mut **tx)
            .await?;
        bump(&mut **tx, user).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The memories a run's prompt carried (empty: none, or memory was off).
    pub async fn run_memories_used(&self, run: &crate::ids::RunId) -> Result<Vec<String>> {
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

/// A finished turn of a person waiting for the `memory.extract` job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTurn {
    pub run_id: RunId,
    pub finished_at: i64,
    /// What the person said in it (their messages, oldest first: id, text).
    pub said: Vec<(String, String)>,
    /// The assistant's reply.
    pub reply: String,
}

/// What one extraction learned, to keep in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Learned {
    pub add: Vec<(MemoryKind, String)>,
    /// New texts of existing memories (merged or superseded).
    pub update: Vec<(String, String)>,
    pub forget: Vec<String>,
    /// The profile's new text.
    pub profile: Option<String>,
}

/// What [`Store::keep_learned`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    pub added: usize,
    pub updated: usize,
    pub forgotten: usize,
    pub profile: bool,
}

impl Store {
    /// The person's newest `limit` turns in `session` waiting for extraction,
    /// oldest first.
    pub async fn pending_memory_turns(
        &self,
        session: &SessionId,
        user: &UserId,
        limit: usize,
    ) -> Result<Vec<PendingTurn>> {
        // Their own words only: in a Lark group a turn may also carry others'.
        // The messages are found through the session's index: no index has
        // user messages by run, and without `session_id` this read every
        // message of the instance once per turn (in the throughput bench,
        // extractions then took a third of the runs/s and stalled first
        // tokens for a second).
        let rows = sqlx::query(
            "select r.id, r.finished_at, f.content as reply, m.id as message_id, m.content as said
             from (select id, turn_of, user_id, finished_at, final_message_id from runs
                   where session_id = $1 and user_id = $2 and memory_pending = 1
                   order by finished_at desc limit $3) r
             left join messages f on f.id = r.final_message_id
             left join messages m on m.session_id = $1 and m.run_id = coalesce(r.turn_of, r.id)
                 and m.role = 'user' and coalesce(m.author_id, r.user_id) = r.user_id
             order by r.finished_at, r.id, m.ord",
        )
        .bind(&session.0)
        .bind(&user.0)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        let mut turns: Vec<PendingTurn> = Vec::new();
        for row in &rows {
            let run_id = RunId(get_str(row, "id")?);
            if turns.last().is_none_or(|t| t.run_id != run_id) {
                turns.push(PendingTurn {
                    run_id,
                    finished_at: get_opt_i64(row, "finished_at")?.unwrap_or_default(),
                    said: Vec::new(),
                    reply: get_opt_str(row, "reply")?.unwrap_or_default(),
                });
            }
            if let (Some(id), Some(text)) =
                (get_opt_str(row, "message_id")?, get_opt_str(row, "said")?)
            {
                let turn = turns.last_mut().expect("pushed above");
                turn.said.push((id, text));
            }
        }
        Ok(turns)
    }

    /// Keeps what an extraction of the person's turns in `session` learned
    /// and marks those turns done, in one transaction: `read` (the turns it
    /// read) and every older turn still waiting (past its input cap). A job
    /// that dies before this stores nothing; after it, the turns are not
    /// read again. Adds past `max_per_user` are dropped; updates and forgets
    /// touch only this person's unpinned memories (pinned ones are the
    /// person's choice), the profile is the one it keeps.
    pub async fn keep_learned(
        &self,
        user: &UserId,
        session: &SessionId,
        learned: &Learned,
        read: &[PendingTurn],
        max_per_user: u64,
    ) -> Result<Kept> {
        let mut tx = self.begin().await?;
        let held = self.lock_person(&mut tx, user).await?;
        let now = now_ms();
        let mut kept = Kept::default();
        let source_message = read
            .iter()
            .rev()
            .find_map(|t| t.said.last())
            .map(|(id, _)| id.as_str());
        let room = max_per_user.saturating_sub(held) as usize;
        for (kind, text) in learned.add.iter().take(room) {
            insert(
                &mut tx,
                user,
                *kind,
                text,
                false,
                Some((&session.0, source_message)),
                now,
            )
            .await?;
            kept.added += 1;
        }
        for (id, text) in &learned.update {
            let done = sqlx::query(
                "update memories set text = $1, updated_at = $2
                 where id = $3 and user_id = $4 and pinned = 0 and profile = 0",
            )
            .bind(text)
            .bind(now)
            .bind(id)
            .bind(&user.0)
            .execute(&mut **tx)
            .await?;
            kept.updated += done.rows_affected() as usize;
        }
        for id in &learned.forget {
            let done = sqlx::query(
                "delete from memories where id = $1 and user_id = $2 and pinned = 0 and profile = 0",
            )
            .bind(id)
            .bind(&user.0)
            .execute(&mut **tx)
            .await?;
            kept.forgotten += done.rows_affected() as usize;
        }
        if let Some(text) = &learned.profile {
            let done = sqlx::query(
                "update memories set text = $1, updated_at = $2 where user_id = $3 and profile = 1",
            )
            .bind(text)
            .bind(now)
            .bind(&user.0)
            .execute(&mut **tx)
            .await?;
            if done.rows_affected() == 0 {
                let id = insert(
                    &mut tx,
                    user,
                    MemoryKind::Fact,
                    text,
                    true,
                    Some((&session.0, source_message)),
                    now,
                )
                .await?;
                sqlx::query("update memories set profile = 1 where id = $1")
                    .bind(&id)
                    .execute(&mut **tx)
                    .await?;
            }
            kept.profile = true;
        }
        if !read.is_empty() {
            // `id in ($1, $2, …)`: the Any driver binds no arrays.
            let list = (1..=read.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!("update runs set memory_pending = 0 where id in ({list})");
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for turn in read {
                query = query.bind(&turn.run_id.0);
            }
            query.execute(&mut **tx).await?;
        }
        if let Some(oldest) = read.iter().map(|t| t.finished_at).min() {
            self.clear_pending_in(&mut tx, session, user, Some(oldest))
                .await?;
        }
        if kept != Kept::default() {
            bump(&mut **tx, user).await?;
        }
        tx.commit().await?;
        Ok(kept)
    }

    /// Marks every turn of the person in `session` as done without reading
    /// it: memory turned off meanwhile, or the extraction gave up.
    pub async fn clear_memory_pending(&self, session: &SessionId, user: &UserId) -> Result<()> {
        let mut tx = self.begin().await?;
        self.clear_pending_in(&mut tx, session, user, None).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Clears the waiting turns that ended before `before` (all: `None`).
    async fn clear_pending_in(
        &self,
        tx: &mut super::WriteTx,
        session: &SessionId,
        user: &UserId,
        before: Option<i64>,
    ) -> Result<()> {
        sqlx::query(
            "update runs set memory_pending = 0
             where session_id = $1 and user_id = $2 and memory_pending = 1 and finished_at < $3",
        )
        .bind(&session.0)
        .bind(&user.0)
        .bind(before.unwrap_or(i64::MAX))
        .execute(&mut ***tx)
        .await?;
        Ok(())
    }
}

/// `runs.memories_used` for `ids` (none: leave the column as it is).
pub(super) fn used_json(ids: &[String]) -> Result<Option<String>> {
    if ids.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(ids)
        .map(Some)
        .map_err(|e| StoreError::Other(format!("runs.memories_used: {e}")))
}

/// How stale a memory's `last_used_at` may be before a run that uses it
/// moves it: an hour. Moving it on every use rewrote every recalled row per
/// run, and in the throughput scenario (20 memories recalled per run) that
/// write volume — WAL pages, checkpoints, the file's mapping growing — was
/// most of what memory cost (BENCHMARKS.md, "Memory").
const LAST_USED_STEP_MS: i64 = 3_600_000;

/// Moves the `last_used_at` of the person's memories `ids` to `now` when it
/// is older than [`LAST_USED_STEP_MS`], in one statement of the transaction
/// that ends the run that used them (the recall itself writes nothing: it
/// was twenty-one writes before the first token). Using a memory does not
/// bump the person's revision: it changes no prompt.
pub(super) async fn mark_used(
    tx: &mut super::WriteTx,
    user: &UserId,
    ids: &[String],
    now: i64,
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    // `id in ($3, $4, …)`: the Any driver binds no arrays.
    let list = (0..ids.len())
        .map(|i| format!("${}", i + 3))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "update memories set last_used_at = $1 where user_id = $2 and id in ({list})
           and (last_used_at is null or last_used_at < $1 - {LAST_USED_STEP_MS})"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(&user.0);
    for id in ids {
        query = query.bind(id);
    }
    query.execute(&mut ***tx).await?;
    Ok(())
}

/// Inserts a memory (no count check, no revision bump: the caller's).
async fn insert(
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
    .execute(&mut ***tx)
    .await?;
    Ok(id)
}

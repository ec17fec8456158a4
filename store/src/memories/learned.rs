//! What the `memory.extract` job reads and keeps (docs/memory.md, "Learning
//! from conversations"), and the record of the memories a run used, written
//! with the run's end.

use super::{bump, insert};
use crate::{Result, Store, StoreError, WriteTx, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::MemoryKind;
use weft_wire::ids::{RunId, SessionId, UserId};
use weft_wire::time::now_ms;

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
            .execute(&mut *tx)
            .await?;
            kept.updated += done.rows_affected() as usize;
        }
        for id in &learned.forget {
            let done = sqlx::query(
                "delete from memories where id = $1 and user_id = $2 and pinned = 0 and profile = 0",
            )
            .bind(id)
            .bind(&user.0)
            .execute(&mut *tx)
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
            .execute(&mut *tx)
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
                    .execute(&mut *tx)
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
            query.execute(&mut *tx).await?;
        }
        if let Some(oldest) = read.iter().map(|t| t.finished_at).min() {
            self.clear_pending_in(&mut tx, session, user, Some(oldest))
                .await?;
        }
        if kept != Kept::default() {
            bump(&mut *tx, user).await?;
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
        tx: &mut WriteTx,
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
        .execute(&mut **tx)
        .await?;
        Ok(())
    }
}

/// `runs.memories_used` for `ids` (none: leave the column as it is).
pub(crate) fn used_json(ids: &[String]) -> Result<Option<String>> {
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
pub(crate) async fn mark_used(
    tx: &mut WriteTx,
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
    query.execute(&mut **tx).await?;
    Ok(())
}

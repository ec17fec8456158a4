//! Per-user storage quotas (`limits.storage_bytes_per_user`, 0 disables): how
//! many bytes of attachments a user stores, and whether a message's files fit.
//!
//! A user's usage is the sum of the *distinct* files (by sha256) their messages
//! carry and the documents of the knowledge bases they own: a file sent twice,
//! or one another user sent too, is stored once and counts once for each user
//! who attached it. Extracted text and chunks are not counted. Deleting a
//! session (or the user), a document or a base deletes its rows, which frees
//! the quota at once, whether or not the bytes are swept yet. A knowledge
//! document counts against its base owner's quota, checked the same two ways
//! (the transaction that adds it locks the base's row, then the owner's).
//!
//! The gateway checks before it stores anything (a message that cannot fit is
//! refused with nothing written); the send transaction checks again, exactly,
//! after locking the user's row (on Postgres; SQLite serialises writers), so
//! parallel sends through any number of gateways cannot pass the quota
//! together. The user's row is the last lock the transaction takes, as for the
//! run limits (`user_limits`).

use std::collections::HashSet;

use super::attachments::NewAttachment;
use super::{Result, Store, get_i64, get_str};
use weft_wire::ids::UserId;

/// A user's storage and what a message would add to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageUse {
    /// Bytes of the distinct files the user's messages carry.
    pub used_bytes: u64,
    /// Bytes of the message's files the user does not store yet.
    pub adding_bytes: u64,
}

impl StorageUse {
    /// Whether it fits `limit` (0: no limit).
    pub fn fits(&self, limit: u64) -> bool {
        limit == 0 || self.used_bytes + self.adding_bytes <= limit
    }
}

/// The files (`sha256`, `bytes`) user `$1` stores: their messages'
/// attachments and their knowledge bases' documents.
const STORED: &str = "select sha256, bytes from attachments where user_id = $1
     union all
     select d.sha256, d.bytes from knowledge_documents d
     join knowledge_bases b on b.id = d.base_id where b.owner_id = $1";

/// `user`'s usage, and what the files (sha256, bytes) would add.
pub(crate) async fn storage_use<C>(
    conn: &mut C,
    user: &UserId,
    files: &[(&str, u64)],
) -> Result<StorageUse>
where
    for<'c> &'c mut C: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select cast(coalesce(sum(bytes), 0) as bigint) as used
         from (select sha256, max(bytes) as bytes from ({STORED}) f group by sha256) owned"
    )))
    .bind(&user.0)
    .fetch_one(&mut *conn)
    .await?;
    let used_bytes = get_i64(&row, "used")? as u64;
    let mut new: Vec<(&str, u64)> = Vec::new();
    for &(sha, bytes) in files {
        if !new.iter().any(|(s, _)| *s == sha) {
            new.push((sha, bytes));
        }
    }
    let mut owned = HashSet::new();
    // A message carries a handful of files: one bounded IN list.
    if !new.is_empty() {
        let marks: Vec<String> = (2..=new.len() + 1).map(|i| format!("${i}")).collect();
        let sql = format!(
            "select distinct sha256 from ({STORED}) f where sha256 in ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&user.0);
        for (sha, _) in &new {
            q = q.bind(*sha);
        }
        for r in q.fetch_all(&mut *conn).await? {
            owned.insert(get_str(&r, "sha256")?);
        }
    }
    let adding_bytes = new
        .iter()
        .filter(|(sha, _)| !owned.contains(*sha))
        .map(|(_, bytes)| bytes)
        .sum();
    Ok(StorageUse {
        used_bytes,
        adding_bytes,
    })
}

/// Inside the send transaction: lock the user (Postgres) and count `files`
/// against `limit`; `Some` with the usage when they do not fit.
pub(super) async fn check_storage(
    tx: &mut crate::TxConn,
    lock_suffix: &str,
    user: &UserId,
    files: &[NewAttachment],
    limit: u64,
) -> Result<Option<StorageUse>> {
    if limit == 0 || files.is_empty() {
        return Ok(None);
    }
    lock_user(tx, lock_suffix, user).await?;
    let files: Vec<(&str, u64)> = files.iter().map(|f| (f.sha256.as_str(), f.bytes)).collect();
    let usage = storage_use(tx, user, &files).await?;
    Ok((!usage.fits(limit)).then_some(usage))
}

/// Locks `user`'s row (Postgres, where `lock_suffix` is not empty; SQLite
/// serialises writers) before counting their runs or storage. A statement of
/// its own: a read-committed statement that waited for the lock would count
/// with the snapshot it started with.
///
/// `for no key update`, not `for update`: it serialises the checks that count
/// under it all the same, but does not conflict with the key-share lock that
/// inserting a row which references the user takes. A schedule's fire inserts
/// its new session before its send counts the runs; with `for update` two such
/// fires of one owner each held a key share and waited for the other's to go
/// (Postgres' "deadlock detected", found by the store test of batched fires).
pub(crate) async fn lock_user(
    tx: &mut crate::TxConn,
    lock_suffix: &str,
    user: &UserId,
) -> Result<()> {
    if !lock_suffix.is_empty() {
        sqlx::query("select id from users where id = $1 for no key update")
            .bind(&user.0)
            .fetch_optional(&mut *tx)
            .await?;
    }
    Ok(())
}

impl Store {
    /// `user`'s storage, and what files (sha256, bytes) would add to it (a
    /// check before anything is stored; the send transaction checks again).
    pub async fn storage_use(&self, user: &UserId, files: &[(&str, u64)]) -> Result<StorageUse> {
        let mut conn = self.pool.acquire().await?;
        storage_use(&mut *conn, user, files).await
    }
}

//! Attachments: which message carries which stored file, under which name, and
//! the registry of stored hashes that decides when a file's bytes may go.
//!
//! An upload registers its hash (`register_blob`, which refreshes `touched_at`)
//! *before* it writes the bytes, and the send transaction then inserts the
//! `attachments` rows. The sweeper deletes a hash only inside a transaction that
//! holds the hash's `blobs` row and finds it untouched for the grace period and
//! named by no attachment: an upload of the same bytes meanwhile either touched
//! the row first (so the sweeper keeps it) or waits on the row lock and registers
//! it anew after the sweeper committed, then writes the bytes again. Bytes are
//! never deleted under a message that names them.

use std::collections::HashMap;

use sqlx::any::AnyRow;

use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::{AttachmentDto, AttachmentKind};
use weft_wire::ids::{FileId, MessageId, SessionId, UserId};
use weft_wire::time::now_ms;

/// A file checked and stored by the gateway, ready to be attached to a message.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttachment {
    pub name: String,
    pub kind: AttachmentKind,
    pub mime: String,
    pub bytes: u64,
    pub sha256: String,
    /// Characters of a document's extracted text.
    pub text_chars: Option<u64>,
    /// Why a document's text could not be read (it has none stored).
    pub unreadable: Option<String>,
}

/// An attachment row.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub id: FileId,
    pub message_id: MessageId,
    pub session_id: SessionId,
    pub name: String,
    pub kind: AttachmentKind,
    pub mime: String,
    pub bytes: u64,
    pub sha256: String,
    pub text_chars: Option<u64>,
    /// Why a document's text could not be read.
    pub unreadable: Option<String>,
}

impl Attachment {
    fn from_row(row: &AnyRow) -> Result<Attachment> {
        let kind = match get_str(row, "kind")?.as_str() {
            "image" => AttachmentKind::Image,
            "document" => AttachmentKind::Document,
            other => return Err(StoreError::Other(format!("unexpected kind {other:?}"))),
        };
        Ok(Attachment {
            id: FileId(get_str(row, "id")?),
            message_id: MessageId(get_str(row, "message_id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            name: get_str(row, "name")?,
            kind,
            mime: get_str(row, "mime")?,
            bytes: get_i64(row, "bytes")? as u64,
            sha256: get_str(row, "sha256")?,
            text_chars: get_opt_i64(row, "text_chars")?.map(|n| n as u64),
            unreadable: get_opt_str(row, "unreadable")?,
        })
    }

    pub fn to_dto(&self) -> AttachmentDto {
        AttachmentDto {
            id: self.id.0.clone(),
            name: self.name.clone(),
            kind: self.kind,
            mime: self.mime.clone(),
            bytes: self.bytes,
            unreadable: self.unreadable.clone(),
        }
    }
}

const COLUMNS: &str =
    "id, message_id, session_id, name, kind, mime, bytes, sha256, text_chars, unreadable, position";

fn kind_str(k: AttachmentKind) -> &'static str {
    match k {
        AttachmentKind::Image => "image",
        AttachmentKind::Document => "document",
    }
}

/// Insert a message's attachments (inside the send transaction).
pub(super) async fn insert_attachments(
    tx: &mut crate::TxConn,
    user: &UserId,
    session: &SessionId,
    message: &MessageId,
    files: &[NewAttachment],
    now: i64,
) -> Result<()> {
    for (position, f) in files.iter().enumerate() {
        sqlx::query(
            "insert into attachments (id, message_id, session_id, user_id, position, name, kind, mime, bytes, sha256, text_chars, unreadable, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(&FileId::new().0)
        .bind(&message.0)
        .bind(&session.0)
        .bind(&user.0)
        .bind(position as i64)
        .bind(&f.name)
        .bind(kind_str(f.kind))
        .bind(&f.mime)
        .bind(f.bytes as i64)
        .bind(&f.sha256)
        .bind(f.text_chars.map(|n| n as i64))
        .bind(f.unreadable.as_deref())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

impl Store {
    /// Register a hash about to be written (or written again); returns the
    /// `touched_at` it now carries.
    pub async fn register_blob(&self, sha: &str, bytes: u64) -> Result<i64> {
        let now = now_ms();
        let mut w = self.writer().await?;
        sqlx::query(
            "insert into blobs (sha256, bytes, touched_at) values ($1, $2, $3)
             on conflict (sha256) do update set touched_at = excluded.touched_at",
        )
        .bind(sha)
        .bind(bytes as i64)
        .bind(now)
        .execute(&mut *w)
        .await?;
        Ok(now)
    }

    /// The attachments of `messages`, by message, in attachment order.
    pub async fn attachments_of(
        &self,
        messages: &[&MessageId],
    ) -> Result<HashMap<MessageId, Vec<Attachment>>> {
        let mut out: HashMap<MessageId, Vec<Attachment>> = HashMap::new();
        // Bounded IN lists: a page of history is at most a few hundred messages.
        for chunk in messages.chunks(200) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "select {COLUMNS} from attachments where message_id in ({}) order by message_id, position",
                marks.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for m in chunk {
                q = q.bind(&m.0);
            }
            for row in q.fetch_all(&self.pool).await? {
                let a = Attachment::from_row(&row)?;
                out.entry(a.message_id.clone()).or_default().push(a);
            }
        }
        Ok(out)
    }

    /// One attachment of `user` (others' do not exist: 404).
    pub async fn get_attachment(&self, user: &UserId, id: &FileId) -> Result<Attachment> {
        self.attachment_where(id, "user_id", &user.0).await
    }

    /// An attachment of `session` (the agent reading a document of its own conversation).
    pub async fn session_attachment(&self, session: &str, id: &FileId) -> Result<Attachment> {
        self.attachment_where(id, "session_id", session).await
    }

    /// Attachment `id` if its `scope` column (`user_id`, `session_id`) is `value`.
    async fn attachment_where(
        &self,
        id: &FileId,
        scope: &'static str,
        value: &str,
    ) -> Result<Attachment> {
        let sql = format!("select {COLUMNS} from attachments where id = $1 and {scope} = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id.0)
            .bind(value)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        Attachment::from_row(&row)
    }

    /// Hashes the session's messages name (collect before deleting the session,
    /// then [`Store::sweep_blob`] each).
    pub async fn session_blobs(&self, session: &SessionId) -> Result<Vec<String>> {
        let rows = sqlx::query("select distinct sha256 from attachments where session_id = $1")
            .bind(&session.0)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| get_str(r, "sha256")).collect()
    }

    /// Hashes no attachment and no knowledge document names that nobody
    /// touched since `touched_before`.
    pub async fn orphan_blobs(&self, touched_before: i64, limit: i64) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "select sha256 from blobs b where touched_at <= $1
               and not exists (select 1 from attachments a where a.sha256 = b.sha256)
               and not exists (select 1 from knowledge_documents k where k.sha256 = b.sha256)
             order by touched_at limit $2",
        )
        .bind(touched_before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| get_str(r, "sha256")).collect()
    }

    /// Delete `sha` if no attachment or knowledge document names it and nobody touched it after
    /// `touched_before`: `delete_bytes` runs while the hash's row is held, and the
    /// row goes only when it succeeded. Returns whether the hash was deleted.
    pub async fn sweep_blob<F, Fut, E>(
        &self,
        sha: &str,
        touched_before: i64,
        delete_bytes: F,
    ) -> Result<bool>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut tx = self.begin().await?;
        let held = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select touched_at from blobs where sha256 = $1{}",
            self.lock_suffix()
        )))
        .bind(sha)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(held) = held else {
            return Ok(false);
        };
        if get_i64(&held, "touched_at")? > touched_before {
            return Ok(false);
        }
        let named = sqlx::query(
            "select 1 as one from attachments where sha256 = $1
             union all select 1 as one from knowledge_documents where sha256 = $1
             limit 1",
        )
        .bind(sha)
        .fetch_optional(&mut *tx)
        .await?;
        if named.is_some() {
            return Ok(false);
        }
        delete_bytes()
            .await
            .map_err(|e| StoreError::Other(format!("deleting file {sha}: {e}")))?;
        sqlx::query("delete from blobs where sha256 = $1")
            .bind(sha)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }
}

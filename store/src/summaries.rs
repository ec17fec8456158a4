//! Summaries of long conversations (docs/agent.md, "Long conversations"): one per
//! session, covering its shown messages up to an order key, written by the worker
//! that needed it and reused by every later run until the unsummarised part grows
//! too long. Messages are never rewritten; only the model's view changes.

use super::{Result, Store, get_i64, get_str};
use weft_wire::ids::SessionId;
use weft_wire::time::now_ms;

#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The last message (order key) it covers.
    pub upto_ord: String,
    pub text: String,
    /// How many messages it covers in all.
    pub messages: u64,
    pub model: String,
    pub created_at: i64,
}

impl Store {
    pub async fn session_summary(&self, session: &SessionId) -> Result<Option<Summary>> {
        let row = sqlx::query(
            "select upto_ord, summary, messages, model, created_at from session_summaries where session_id = $1",
        )
        .bind(&session.0)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(Summary {
                upto_ord: get_str(&r, "upto_ord")?,
                text: get_str(&r, "summary")?,
                messages: get_i64(&r, "messages")? as u64,
                model: get_str(&r, "model")?,
                created_at: get_i64(&r, "created_at")?,
            })
        })
        .transpose()
    }

    /// Store a newer summary (one covering less than the stored one is ignored:
    /// two runs may have summarised at once).
    pub async fn put_summary(&self, session: &SessionId, s: &Summary) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query(
            "insert into session_summaries (session_id, upto_ord, summary, messages, model, created_at)
             values ($1, $2, $3, $4, $5, $6)
             on conflict (session_id) do update set upto_ord = excluded.upto_ord, summary = excluded.summary,
                 messages = excluded.messages, model = excluded.model, created_at = excluded.created_at
             where session_summaries.upto_ord < excluded.upto_ord",
        )
        .bind(&session.0)
        .bind(&s.upto_ord)
        .bind(&s.text)
        .bind(s.messages as i64)
        .bind(&s.model)
        .bind(now_ms())
        .execute(&mut *w)
        .await?;
        Ok(())
    }

    /// Forget the summary (its messages changed: an undo or an edit reached
    /// into them).
    pub async fn drop_summary(&self, session: &SessionId) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("delete from session_summaries where session_id = $1")
            .bind(&session.0)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// `/compact`: the next run summarises all but the latest turn first.
    pub async fn request_compact(&self, session: &SessionId) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update sessions set compact_requested = 1 where id = $1")
            .bind(&session.0)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// Whether a compaction was asked for; clears the request. Every run asks,
    /// so the common answer (no) is a read: only a set flag costs a write.
    pub async fn take_compact_request(&self, session: &SessionId) -> Result<bool> {
        let asked = sqlx::query("select compact_requested from sessions where id = $1")
            .bind(&session.0)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| get_i64(&r, "compact_requested"))
            .transpose()?
            .unwrap_or(0);
        if asked == 0 {
            return Ok(false);
        }
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update sessions set compact_requested = 0 where id = $1 and compact_requested = 1",
        )
        .bind(&session.0)
        .execute(&mut *w)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

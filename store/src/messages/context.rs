//! What a run's context reads: the session's history state and its messages,
//! each saying whether it has files, so their attachments are read only for
//! those that have some.

use sqlx::any::AnyRow;

use super::Message;
use crate::{Result, Store, get_i64, get_opt_str, get_str};
use weft_wire::ids::SessionId;

/// What a reader of a session's history checks its copy against (migration
/// 0017), with the session's summary and `/compact` request: one query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryState {
    pub compact_requested: bool,
    /// Bumped by every change to messages already written.
    pub history_rev: i64,
    pub summary: Option<crate::Summary>,
}

/// The context reads' columns: a message's and whether it has files.
const CONTEXT_COLUMNS: &str = concat!(
    message_columns!(),
    ", case when exists (select 1 from attachments a where a.message_id = messages.id) then 1 else 0 end as has_files"
);

/// A session's [`HistoryState`]: its columns, from [`STATE_FROM`] (`$1`: the
/// session).
const STATE_COLUMNS: &str = "s.compact_requested, s.history_rev, m.upto_ord, m.summary, m.messages, m.model, m.created_at as summary_at";
const STATE_FROM: &str =
    "sessions s left join session_summaries m on m.session_id = s.id where s.id = $1";

impl HistoryState {
    fn from_row(row: &AnyRow) -> Result<HistoryState> {
        let summary = match get_opt_str(row, "upto_ord")? {
            Some(upto_ord) => Some(crate::Summary {
                upto_ord,
                text: get_str(row, "summary")?,
                messages: get_i64(row, "messages")? as u64,
                model: get_str(row, "model")?,
                created_at: get_i64(row, "summary_at")?,
            }),
            None => None,
        };
        Ok(HistoryState {
            compact_requested: get_i64(row, "compact_requested")? != 0,
            history_rev: get_i64(row, "history_rev")?,
            summary,
        })
    }
}

impl Store {
    /// The context window of a run: the last `hot` messages that are not still
    /// waiting behind it, oldest first, never starting with an orphaned tool result.
    pub async fn context_messages(&self, session: &SessionId, hot: usize) -> Result<Vec<Message>> {
        self.context_after(session, None, hot).await
    }

    /// The model's view after a summary: shown, unqueued messages after `after`
    /// (an order key; `None`: from the start), the newest `limit` of them, oldest
    /// first, never starting with a tool result.
    pub async fn context_after(
        &self,
        session: &SessionId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        let sql = format!(
            "select {CONTEXT_COLUMNS} from messages where session_id = $1 and queued = 0 and hidden = 0 and ord > $2 order by ord desc limit $3"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&session.0)
            .bind(after.unwrap_or_default())
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await?;
        // Only user messages carry files: the tool results dropped below have none.
        let mut msgs = self.with_attachments(&rows).await?;
        msgs.reverse();
        let first_non_tool = msgs
            .iter()
            .position(|m| m.role != "tool")
            .unwrap_or(msgs.len());
        msgs.drain(..first_non_tool);
        Ok(msgs)
    }

    /// The session's [`HistoryState`]; `None` when the session is gone.
    pub async fn history_state(&self, session: &SessionId) -> Result<Option<HistoryState>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {STATE_COLUMNS} from {STATE_FROM}"
        )))
        .bind(&session.0)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(HistoryState::from_row).transpose()
    }

    /// What a reader holding a copy of the session's history needs, in one
    /// read: the session's [`HistoryState`] and the shown, unqueued messages
    /// after `after` (the copy's summary boundary, an order key) written after
    /// the session's write `seq` (the copy's newest), in conversation order,
    /// attachments filled. The messages are good only while the state's
    /// `history_rev` and summary boundary are the copy's. `None` when the
    /// session is gone.
    pub async fn history_since(
        &self,
        session: &SessionId,
        after: Option<&str>,
        seq: i64,
    ) -> Result<Option<(HistoryState, Vec<Message>)>> {
        // One statement, not two (a run's reads are hops to a pooled
        // connection and back): the state's row joined to each new message's,
        // or alone with the message's columns null when there is none.
        // Filtered on `seq` first and sorted by `ord` here: with `order by
        // ord` SQLite's planner walked `messages_session_ord` from `$3`, every
        // message of the session, each run, instead of the few rows past
        // `seq` (`messages_session_seq`); a run in a 500-turn session cost
        // 10.3 ms of CPU against 2.7 ms in a 10-turn one (BENCHMARKS.md,
        // issue 23).
        let sql = format!(
            "select * from (select {STATE_COLUMNS} from {STATE_FROM}) state
             left join (select {CONTEXT_COLUMNS} from messages
                 where session_id = $1 and seq > $2 and queued = 0 and hidden = 0 and ord > $3) new
             on 1 = 1"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&session.0)
            .bind(seq)
            .bind(after.unwrap_or_default())
            .fetch_all(&self.pool)
            .await?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let state = HistoryState::from_row(first)?;
        let new: Vec<AnyRow> = rows
            .into_iter()
            .filter(|r| get_opt_str(r, "id").is_ok_and(|id| id.is_some()))
            .collect();
        let mut msgs = self.with_attachments(&new).await?;
        msgs.sort_by(|a, b| a.ord.cmp(&b.ord));
        Ok(Some((state, msgs)))
    }

    /// Messages of `rows` ([`CONTEXT_COLUMNS`]) with their files: read only
    /// for those that have some.
    async fn with_attachments(&self, rows: &[AnyRow]) -> Result<Vec<Message>> {
        let mut msgs = Vec::with_capacity(rows.len());
        let mut with_files = Vec::new();
        for row in rows {
            let msg = Message::from_row(row)?;
            if get_i64(row, "has_files")? != 0 {
                with_files.push(msg.id.clone());
            }
            msgs.push(msg);
        }
        self.attach_files(&mut msgs, &with_files).await?;
        Ok(msgs)
    }
}

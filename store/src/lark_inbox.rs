//! The Lark inbox (issue 21, migration 0014): every message event for the bot is
//! stored here, whole, before Lark gets its ack, and stays `pending` until the
//! gateway that holds its lease has handled it. The row is also the dedupe record
//! (one per Lark `message_id`, shared by every replica, kept 24 h), so a
//! redelivery — to the same gateway or another — finds it and does nothing.
//!
//! The lease is what lets a pending row outlive its gateway: the holder renews
//! the leases of all its pending rows in one statement every few seconds
//! ([`Store::renew_lark_leases`]); a gateway that dies stops renewing, and once a
//! lease has run out any gateway's sweep takes the row over
//! ([`Store::lease_lark_inbound`]). A sweep takes a conversation's rows in the
//! order they arrived and never while another gateway holds a live lease in the
//! same conversation, so one conversation is never handled on two gateways at
//! once.
//!
//! The live path keeps the same order. Lark gives each event to one random
//! connection, so with two gateways a picture and the text sent 2 ms after it
//! land on different ones as often as not; the picture's download took a
//! second, the text's run started at once and was answered first (CI saw it,
//! 2026-12-05). Checking at insert time cannot help: the two inserts commit
//! concurrently and neither sees the other (that is what happened). So before
//! a message is handled, [`Store::lark_turn_waits`] asks whether a pending
//! message of its conversation that arrived before it is in anyone else's
//! hands (or no one's); it waits while one is. Arrival stamps come from each
//! gateway's clock, so the order across gateways is as good as their clocks
//! (NTP: a few ms); ties go by message id, so it is a total order and two
//! gateways never wait for each other. One indexed read per message. Times are the callers' clocks (unix ms); leases of tens of seconds
//! tolerate the skew of NTP-synced hosts.

use super::{InboundClaim, Result, Store, get_i64, get_opt_str, get_str};
use weft_wire::time::now_ms;

/// Rows in one insert: 8 parameters each, far under both databases' limits.
pub const MAX_KEEP_BATCH: usize = 200;

/// Where a Lark message is in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxState {
    /// Stored (and acked), not yet handled.
    Pending,
    /// The send path, the command or the refusal notice is done.
    Handled,
    /// Handling gave up (an error retrying cannot fix; the log says which).
    Failed,
}

impl InboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            InboxState::Pending => "pending",
            InboxState::Handled => "handled",
            InboxState::Failed => "failed",
        }
    }
}

/// One message event to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxEntry {
    pub message_id: String,
    /// Its conversation (`LarkChat::key`).
    pub chat_key: String,
    /// The event envelope as JSON.
    pub payload: String,
    /// When this gateway read it (µs, strictly increasing per gateway).
    pub arrived_us: i64,
    /// Unique per delivery (see the migration).
    pub delivery: String,
}

/// A pending row a sweep took over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasedInbound {
    pub message_id: String,
    pub chat_key: String,
    pub payload: String,
    /// When it was first stored (unix ms).
    pub received_at: i64,
    pub arrived_us: i64,
    /// Times taken, this one included (the first holder's insert is 1).
    pub attempts: i64,
}

impl Store {
    /// Stores `entries` as pending rows leased to `owner` until `lease_until`,
    /// in one statement; see [`InboxWriter::keep`] (this takes a connection
    /// from the pool for the one call).
    pub async fn keep_lark_inbound(
        &self,
        entries: &[InboxEntry],
        owner: &str,
        lease_until: i64,
    ) -> Result<Vec<InboundClaim>> {
        self.inbox_writer().keep(entries, owner, lease_until).await
    }

    /// The inbox writer's handle: a connection of its own, so storing a
    /// message before its ack never queues for the pool behind the handlers of
    /// the messages before it (a burst of 200 keeps every connection busy).
    pub fn inbox_writer(&self) -> InboxWriter {
        InboxWriter {
            store: self.clone(),
            conn: None,
        }
    }

    /// Extends the lease of every pending row `owner` holds; returns how many.
    pub async fn renew_lark_leases(&self, owner: &str, lease_until: i64) -> Result<u64> {
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update lark_inbound set lease_until = $1 where lease_owner = $2 and state = 'pending'",
        )
        .bind(lease_until)
        .bind(owner)
        .execute(&mut *w)
        .await?;
        Ok(done.rows_affected())
    }

    /// Takes over up to `limit` pending rows whose lease ran out before `now`,
    /// leased to `owner` until `lease_until`, oldest arrival first. A
    /// conversation in which another owner holds a live lease is left alone,
    /// so its messages stay with one gateway, in order. Sweeps are serialised
    /// (an advisory lock on Postgres, the write lock on SQLite) so two cannot
    /// split one conversation between them.
    pub async fn lease_lark_inbound(
        &self,
        owner: &str,
        now: i64,
        lease_until: i64,
        limit: i64,
    ) -> Result<Vec<LeasedInbound>> {
        let mut tx = self.begin().await?;
        if self.dialect == super::Dialect::Postgres {
            // A key of our own (any constant): one sweep at a time, across
            // gateways, until this transaction ends.
            sqlx::query("select count(*) from (select pg_advisory_xact_lock(2021051400021)) l")
                .execute(&mut *tx)
                .await?;
        }
        let rows = sqlx::query(
            "update lark_inbound set lease_owner = $1, lease_until = $2, attempts = attempts + 1
             where message_id in (
                 select i.message_id from lark_inbound i
                 where i.state = 'pending' and i.lease_until < $3
                   and not exists (
                       select 1 from lark_inbound o
                       where o.state = 'pending' and o.chat_key = i.chat_key
                         and o.lease_until >= $3 and o.lease_owner <> $1)
                 order by i.arrived_us
                 limit $4)
             returning message_id, chat_key, payload, received_at, arrived_us, attempts",
        )
        .bind(owner)
        .bind(lease_until)
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut out = rows
            .iter()
            .map(|row| {
                Ok(LeasedInbound {
                    message_id: get_str(row, "message_id")?,
                    chat_key: get_opt_str(row, "chat_key")?.unwrap_or_default(),
                    payload: get_opt_str(row, "payload")?.unwrap_or_default(),
                    received_at: get_i64(row, "received_at")?,
                    arrived_us: get_i64(row, "arrived_us")?,
                    attempts: get_i64(row, "attempts")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        out.sort_by_key(|r| r.arrived_us);
        Ok(out)
    }

    /// Whether message `message_id` must wait before it is handled: a pending
    /// message of its conversation arrived before it (by arrival stamp, then
    /// id) and is held by someone other than `owner`, or by nobody (its lease
    /// ran out at `now`: a sweep owes it). `owner`'s own earlier rows do not
    /// count: they are in its line, and one a sweep handed it may sit behind
    /// this one there. `false` for a row that is not pending.
    pub async fn lark_turn_waits(&self, message_id: &str, owner: &str, now: i64) -> Result<bool> {
        let row = sqlx::query(
            "select count(*) as n from lark_inbound m
             join lark_inbound o on o.chat_key = m.chat_key
             where m.message_id = $1 and m.state = 'pending'
               and o.state = 'pending' and o.message_id <> m.message_id
               and (o.arrived_us < m.arrived_us
                    or (o.arrived_us = m.arrived_us and o.message_id < m.message_id))
               and (coalesce(o.lease_owner, '') <> $2 or o.lease_until < $3)",
        )
        .bind(message_id)
        .bind(owner)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(get_i64(&row, "n")? > 0)
    }

    /// Gives up `owner`'s lease on a pending row, so the next sweep takes it.
    pub async fn release_lark_inbound(&self, message_id: &str, owner: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query(
            "update lark_inbound set lease_owner = null, lease_until = 0
             where message_id = $1 and lease_owner = $2 and state = 'pending'",
        )
        .bind(message_id)
        .bind(owner)
        .execute(&mut *w)
        .await?;
        Ok(())
    }

    /// A pending row is done (`Handled` or `Failed`); its payload goes, the row
    /// stays as the dedupe record. Finishing a finished row changes nothing.
    pub async fn finish_lark_inbound(&self, message_id: &str, state: InboxState) -> Result<()> {
        debug_assert!(state != InboxState::Pending);
        let mut w = self.writer().await?;
        sqlx::query(
            "update lark_inbound set state = $1, payload = null, lease_owner = null, lease_until = 0
             where message_id = $2 and state = 'pending'",
        )
        .bind(state.as_str())
        .bind(message_id)
        .execute(&mut *w)
        .await?;
        Ok(())
    }

    /// Pending rows, whoever holds them.
    pub async fn lark_inbox_pending(&self) -> Result<i64> {
        let row = sqlx::query("select count(*) as n from lark_inbound where state = 'pending'")
            .fetch_one(&self.pool)
            .await?;
        get_i64(&row, "n")
    }

    /// Where message `message_id` is in the inbox, if it is there.
    pub async fn lark_inbox_state(&self, message_id: &str) -> Result<Option<InboxState>> {
        let row = sqlx::query("select state from lark_inbound where message_id = $1")
            .bind(message_id)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(match get_str(&row, "state")?.as_str() {
            "pending" => InboxState::Pending,
            "handled" => InboxState::Handled,
            "failed" => InboxState::Failed,
            other => {
                return Err(super::StoreError::Other(format!(
                    "lark_inbound.state {other:?}"
                )));
            }
        }))
    }
}

/// Stores inbox rows on a connection it keeps (taken from the pool on first
/// use, and again after an error, which may have broken it).
pub struct InboxWriter {
    store: Store,
    conn: Option<sqlx::pool::PoolConnection<sqlx::Any>>,
}

impl InboxWriter {
    /// Stores `entries` as pending rows leased to `owner` until `lease_until`,
    /// in one statement. Each answer, in order, is `New` (stored now, or by an
    /// earlier try of this same delivery whose answer was lost) or `Duplicate`
    /// (another delivery of that message was stored first: leave it to its holder).
    pub async fn keep(
        &mut self,
        entries: &[InboxEntry],
        owner: &str,
        lease_until: i64,
    ) -> Result<Vec<InboundClaim>> {
        assert!(entries.len() <= MAX_KEEP_BATCH, "batch too large");
        // One row per message in one statement (Postgres refuses to touch a row
        // twice); a second delivery in the same batch is a duplicate.
        let mut seen = std::collections::HashSet::new();
        let firsts: Vec<&InboxEntry> = entries
            .iter()
            .filter(|e| seen.insert(e.message_id.as_str()))
            .collect();
        if firsts.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<String> = (0..firsts.len())
            .map(|i| {
                let p: Vec<String> = (1..=8).map(|k| format!("${}", i * 8 + k)).collect();
                format!("({}, 'pending', 1)", p.join(", "))
            })
            .collect();
        let sql = format!(
            "insert into lark_inbound (message_id, received_at, chat_key, payload, arrived_us, delivery, lease_owner, lease_until, state, attempts)
             values {}
             on conflict (message_id) do update set delivery = excluded.delivery
                 where lark_inbound.delivery = excluded.delivery
             returning message_id",
            rows.join(", ")
        );
        let now = now_ms();
        // Batches of one are the common case: only theirs is worth caching.
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).persistent(firsts.len() == 1);
        for e in &firsts {
            query = query
                .bind(&e.message_id)
                .bind(now)
                .bind(&e.chat_key)
                .bind(&e.payload)
                .bind(e.arrived_us)
                .bind(&e.delivery)
                .bind(owner)
                .bind(lease_until);
        }
        let kept = {
            let _gate = self.store.write_gate().await;
            let conn = match &mut self.conn {
                Some(conn) => conn,
                None => self.conn.insert(self.store.pool.acquire().await?),
            };
            let kept = query.fetch_all(&mut **conn).await;
            if kept.is_err() {
                // Back to the pool, which tests it before lending it again.
                self.conn = None;
            }
            kept?
        };
        let mut ours = std::collections::HashSet::new();
        for row in &kept {
            ours.insert(get_str(row, "message_id")?);
        }
        let mut answered = std::collections::HashSet::new();
        Ok(entries
            .iter()
            .map(|e| {
                if ours.contains(&e.message_id) && answered.insert(e.message_id.as_str()) {
                    InboundClaim::New
                } else {
                    InboundClaim::Duplicate
                }
            })
            .collect())
    }
}

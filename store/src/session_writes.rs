//! Writes that keep a session's runs and waiting messages consistent, run inside
//! the caller's transaction: the send, a run's end, a cancel and the reaper share
//! them. Messages that wait behind an active run (double texting) have
//! `queued = 1` and no run; when no run is active they become one follow-up run —
//! if the user's run limits allow it (`user_limits`); otherwise they keep waiting
//! and the reaper tries again.

use super::messages::order_key;
use super::runs::ACTIVE;
use super::user_limits::{LimitCheck, RunLimits, check_run_limits};
use super::{Conflict, Result, StoreError, get_i64, get_opt_str, get_str};
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};

/// Ends an active run as `cancelled` (by `by`: a person, an interrupt, its
/// parent). A delegated run's delegation records the end too, and its parent
/// goes back to the queue to go on without it: that parent, to enqueue (see
/// `delegations.rs`).
pub(super) async fn end_as_cancelled(
    tx: &mut crate::TxConn,
    lock_suffix: &str,
    id: &RunId,
    by: &str,
    now: i64,
) -> Result<Option<RunId>> {
    sqlx::query("update runs set status = 'cancelled', cancel_requested = 1, cancelled_by = $1, finished_at = $2 where id = $3")
        .bind(by)
        .bind(now)
        .bind(&id.0)
        .execute(&mut *tx)
        .await?;
    super::delegations::settle_child(
        tx,
        lock_suffix,
        id,
        super::delegations::DelegationStatus::Cancelled,
        "",
        now,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn insert_run(
    tx: &mut crate::TxConn,
    id: &RunId,
    session: &SessionId,
    user: &UserId,
    model: &str,
    agent: &str,
    traceparent: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "insert into runs (id, session_id, user_id, status, model, agent, enqueued_at, created_at, traceparent)
         values ($1, $2, $3, 'queued', $4, $5, $6, $6, $7)",
    )
    .bind(&id.0)
    .bind(&session.0)
    .bind(&user.0)
    .bind(model)
    .bind(agent)
    .bind(now)
    .bind(traceparent)
    .execute(&mut *tx)
    .await
    .map_err(|e| StoreError::unique(e, Conflict::RunActive))?;
    Ok(())
}

pub(super) async fn attach_queued(
    tx: &mut crate::TxConn,
    session: &SessionId,
    run: &RunId,
) -> Result<u64> {
    let waiting = sqlx::query("select id from messages where session_id = $1 and queued = 1")
        .bind(&session.0)
        .fetch_all(&mut *tx)
        .await?;
    if !waiting.is_empty() {
        rewrite_history(tx, session).await?;
    }
    for row in &waiting {
        let id = MessageId(get_str(row, "id")?);
        sqlx::query("update messages set run_id = $1, queued = 0, ord = $2 where id = $3")
            .bind(&run.0)
            .bind(order_key(Some(run), "user", 0, &id))
            .bind(&id.0)
            .execute(&mut *tx)
            .await?;
    }
    Ok(waiting.len() as u64)
}

/// If messages wait in the session, no run is active and the user is within
/// `limits`, they become one new run (`lock` is the dialect's row-lock suffix).
pub(super) async fn create_followup(
    tx: &mut crate::TxConn,
    lock: &str,
    limits: &RunLimits,
    session: &SessionId,
    now: i64,
) -> Result<Option<RunId>> {
    // The session's row before counting: after waiting for it (another reaper, a
    // send), the counts must see what its holder committed, or the insert below
    // fails on `runs_one_active`.
    if !lock_session(tx, lock, session).await? {
        return Ok(None);
    }
    let waiting =
        sqlx::query("select count(*) as n from messages where session_id = $1 and queued = 1")
            .bind(&session.0)
            .fetch_one(&mut *tx)
            .await?;
    followup_for_waiting(tx, lock, limits, session, now, get_i64(&waiting, "n")?).await
}

/// [`create_followup`] when the caller already counted the `waiting` messages.
pub(super) async fn followup_for_waiting(
    tx: &mut crate::TxConn,
    lock: &str,
    limits: &RunLimits,
    session: &SessionId,
    now: i64,
    waiting: i64,
) -> Result<Option<RunId>> {
    if waiting == 0 {
        return Ok(None);
    }
    let active = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select id from runs where session_id = $1 and status in {ACTIVE}"
    )))
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    if active.is_some() {
        return Ok(None);
    }
    // Locked before the user's row (`user_limits`): the order every send takes.
    let s = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select user_id, model, agent from sessions where id = $1{lock}"
    )))
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(s) = s else { return Ok(None) };
    // The run is its first waiting message's speaker's (in a shared Lark
    // conversation not always the owner's): their limits, their instructions.
    let first = sqlx::query(
        "select author_id from messages where session_id = $1 and queued = 1 order by ord limit 1",
    )
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    let user = match first
        .map(|r| get_opt_str(&r, "author_id"))
        .transpose()?
        .flatten()
    {
        Some(author) => UserId(author),
        None => UserId(get_str(&s, "user_id")?),
    };
    if check_run_limits(tx, lock, &user, limits, now).await? != LimitCheck::Within {
        // Not lost: the messages keep waiting for the reaper or the next send.
        tracing::info!(session.id = %session, "follow-up run deferred: the user is at a run limit");
        return Ok(None);
    }
    let id = RunId::new();
    insert_run(
        tx,
        &id,
        session,
        &user,
        &get_str(&s, "model")?,
        &get_str(&s, "agent")?,
        None,
        now,
    )
    .await?;
    attach_queued(tx, session, &id).await?;
    Ok(Some(id))
}

/// Bump the session's `updated_at` and count the messages waiting in it, in one
/// statement (a run's end holds SQLite's single writer: every round trip counts).
pub(super) async fn touch_session_counting_waiting(
    tx: &mut crate::TxConn,
    session: &SessionId,
    now: i64,
) -> Result<i64> {
    let row = sqlx::query(
        "update sessions set updated_at = $1, msg_seq = msg_seq + 1 where id = $2
         returning (select count(*) from messages m where m.session_id = $2 and m.queued = 1) as waiting",
    )
    .bind(now)
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    row.map_or(Ok(0), |r| get_i64(&r, "waiting"))
}

/// The session's timestamp and write count, bumped by a transaction that
/// wrote its messages. Deferred: as the transaction's last write, on SQLite
/// it goes in the same hop as the commit (`writer`'s module doc).
pub(super) fn touch_session(tx: &mut crate::TxConn, session: &SessionId, now: i64) -> Result<()> {
    tx.defer(
        sqlx::query("update sessions set updated_at = $1, msg_seq = msg_seq + 1 where id = $2")
            .bind(now)
            .bind(session.0.clone()),
    )
}

/// Count a transaction's message inserts in the session's `msg_seq`
/// (migration 0017); the transaction holds the session's row.
pub(super) async fn count_writes(tx: &mut crate::TxConn, session: &SessionId) -> Result<()> {
    sqlx::query("update sessions set msg_seq = msg_seq + 1 where id = $1")
        .bind(&session.0)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// A change to messages already written (migration 0017): readers' copies of
/// the session's history are stale. Takes the session's row (on Postgres the
/// update locks it): `false` when the session is gone.
pub(super) async fn rewrite_history(tx: &mut crate::TxConn, session: &SessionId) -> Result<bool> {
    let done = sqlx::query("update sessions set history_rev = history_rev + 1 where id = $1")
        .bind(&session.0)
        .execute(&mut *tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Lock a session's row (Postgres; SQLite's writer lock covers it). Transactions
/// that touch a session's runs take its row first, then run rows, then the user's
/// row, as the send does, so they cannot deadlock. `false`: the session is gone.
pub(super) async fn lock_session(
    tx: &mut crate::TxConn,
    lock: &str,
    session: &SessionId,
) -> Result<bool> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select id from sessions where id = $1{lock}"
    )))
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.is_some())
}

//! A kind of wait read and taken the same way whatever its table: a step's
//! waits, a run's, a session's open ones, one by id or by the key its front
//! door recorded, and one taken under its run's row (the race rule,
//! `super`) to change its fate.

use super::{Tx, lock_run, requeue_waiting};
use crate::{Result, Store, StoreError, get_str};
use weft_wire::ids::RunId;
use weft_wire::states::RunStatus;
use weft_wire::time::now_ms;

/// A kind of wait: its table, and a row of it read back.
pub(crate) trait WaitKind: Sized {
    const TABLE: &'static str;
    const COLUMNS: &'static str;
    /// The status of a wait still open.
    const OPEN: &'static str = "pending";
    fn from_row(row: &sqlx::any::AnyRow) -> Result<Self>;
}

impl Store {
    /// The waits of `K` a step asked for, in the order asked.
    pub(crate) async fn step_waits<K: WaitKind>(&self, run: &RunId, step: u32) -> Result<Vec<K>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {} from {} where run_id = $1 and step = $2 order by created_at, id",
            K::COLUMNS,
            K::TABLE
        )))
        .bind(&run.0)
        .bind(step as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(K::from_row).collect()
    }

    /// Every wait of `K` a run made, whatever became of it, in the order made.
    pub(crate) async fn run_waits<K: WaitKind>(&self, run: &RunId) -> Result<Vec<K>> {
        self.waits_where("run_id = $1 order by step, created_at, id", &run.0)
            .await
    }

    /// The open waits of `K` of a session (its owner's or an admin's view).
    pub(crate) async fn open_session_waits<K: WaitKind>(
        &self,
        session: &weft_wire::ids::SessionId,
    ) -> Result<Vec<K>> {
        self.waits_where(
            &format!(
                "session_id = $1 and status = '{}' order by created_at, id",
                K::OPEN
            ),
            &session.0,
        )
        .await
    }

    /// The waits of `K` that `filter` (with `$1` bound to `key`) picks.
    async fn waits_where<K: WaitKind>(&self, filter: &str, key: &str) -> Result<Vec<K>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {} from {} where {filter}",
            K::COLUMNS,
            K::TABLE
        )))
        .bind(key)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(K::from_row).collect()
    }
}

/// A wait taken to change its fate (a decision, an answer): its transaction,
/// with the run's row locked first (the race rule), the run's status (`None`:
/// the run is gone) and the wait as it stands under that lock.
pub(crate) struct Taken<K> {
    pub tx: crate::WriteTx,
    pub run: RunId,
    pub run_status: Option<RunStatus>,
    pub wait: K,
    pub now: i64,
}

impl Store {
    /// Takes the wait `id` of `K` for `caller` — its session's owner, or an
    /// admin; to anyone else it does not exist (`NotFound`).
    pub(crate) async fn take_wait<K: WaitKind>(
        &self,
        id: &str,
        caller: &weft_wire::ids::UserId,
        admin: bool,
    ) -> Result<Taken<K>> {
        let mut tx = self.begin().await?;
        let found = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select run_id, user_id from {} where id = $1",
            K::TABLE
        )))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        if !admin && get_str(&found, "user_id")? != caller.0 {
            return Err(StoreError::NotFound);
        }
        let run = RunId(get_str(&found, "run_id")?);
        let run_status = lock_run(&mut tx, self.lock_suffix(), &run).await?;
        let wait = load::<K>(&mut tx, id).await?;
        Ok(Taken {
            tx,
            run,
            run_status,
            wait,
            now: now_ms(),
        })
    }

    /// A wait of `K` by id, for `caller` (its session's owner, or an admin):
    /// anyone else gets `NotFound`, as for one that does not exist.
    pub(crate) async fn wait_for<K: WaitKind + Owned>(
        &self,
        id: &str,
        caller: &weft_wire::ids::UserId,
        admin: bool,
    ) -> Result<K> {
        let wait: K = self
            .waits_where("id = $1", id)
            .await?
            .pop()
            .ok_or(StoreError::NotFound)?;
        if !admin && wait.owner() != caller {
            return Err(StoreError::NotFound);
        }
        Ok(wait)
    }

    /// The wait of `K` a front door's key recorded (`lark:<message id>`) in
    /// `column`, if any.
    pub(crate) async fn wait_keyed<K: WaitKind>(
        &self,
        column: &str,
        key: &str,
    ) -> Result<Option<K>> {
        Ok(self
            .waits_where(&format!("{column} = $1"), key)
            .await?
            .pop())
    }
}

/// Who a wait belongs to: the person whose message led to its run.
pub(crate) trait Owned {
    fn owner(&self) -> &weft_wire::ids::UserId;
}

impl<K> Taken<K> {
    /// Records the decider's trace context on the run (`resumed_by`), puts a
    /// waiting run back on the queue and commits; the wait as it now stands,
    /// and whether the run was requeued (enqueue its job).
    pub(crate) async fn settle(mut self, id: &str, traceparent: Option<&str>) -> Result<(K, bool)>
    where
        K: WaitKind,
    {
        if let Some(traceparent) = traceparent {
            sqlx::query("update runs set resumed_by = $1 where id = $2")
                .bind(traceparent)
                .bind(&self.run.0)
                .execute(&mut *self.tx)
                .await?;
        }
        let resume = requeue_waiting(&mut self.tx, &self.run, self.now).await?;
        // The person acted on it (here or on another channel): the inbox's
        // "waits for you" of this run is read.
        sqlx::query(
            "update notifications set read_at = $1
             where run_id = $2 and read_at is null and kind in ('schedule_waiting', 'run_waiting')",
        )
        .bind(self.now)
        .bind(&self.run.0)
        .execute(&mut *self.tx)
        .await?;
        let wait = load::<K>(&mut self.tx, id).await?;
        self.tx.commit().await?;
        Ok((wait, resume))
    }
}

/// One wait of `K`, read in `tx` (after its run's row was locked).
pub(crate) async fn load<K: WaitKind>(tx: &mut Tx, id: &str) -> Result<K> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select {} from {} where id = $1",
        K::COLUMNS,
        K::TABLE
    )))
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    K::from_row(&row)
}

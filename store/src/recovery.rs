//! Recovery: the reaper's queries (stale leases, lost jobs, stranded waiting
//! messages), giving runs back to the queue, and the queue-depth gauge.
//!
//! Several queries here repeat the partial index's own condition
//! (`status in ('queued', 'running')`) next to a narrower one: SQLite only uses a
//! partial index when the query states its condition.

use super::runs::ACTIVE;
use super::session_writes::create_followup;
use super::user_limits::RunLimits;
use super::{Result, Store, get_i64, get_str};
use weft_wire::ids::{RunId, SessionId};
use weft_wire::time::now_ms;

impl Store {
    /// Runs the reaper must (re-)enqueue: running with a stale heartbeat, queued
    /// and not picked up for a while (lost job), and follow-ups for sessions whose
    /// waiting messages were stranded by a run that ended without its worker, or
    /// deferred because the user was at a run limit (still checked: `limits`).
    pub async fn reap(
        &self,
        stale_before: i64,
        requeue_before: i64,
        limits: &RunLimits,
    ) -> Result<Vec<RunId>> {
        let now = now_ms();
        let rows = sqlx::query(
            // Two arms, each repeating the partial index's own condition so that
            // SQLite uses it (with an `or`, or without the repeat, it scans every run).
            "select id from runs where status = 'running' and status in ('queued', 'running') and heartbeat_at < $1
             union all
             select id from runs where status = 'queued' and status in ('queued', 'running') and enqueued_at < $2
             limit 1000",
        )
        .bind(stale_before)
        .bind(requeue_before)
        .fetch_all(&self.pool)
        .await?;
        let mut ids = rows
            .iter()
            .map(|r| get_str(r, "id").map(RunId))
            .collect::<Result<Vec<_>>>()?;
        if !ids.is_empty() {
            let mut tx = self.begin().await?;
            for id in &ids {
                sqlx::query("update runs set enqueued_at = $1 where id = $2 and status = 'queued'")
                    .bind(now)
                    .bind(&id.0)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
        let stranded = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select distinct m.session_id from messages m where m.queued = 1 and m.created_at < $1
             and not exists (select 1 from runs r where r.session_id = m.session_id and r.status in {ACTIVE}) limit 100"
        )))
        .bind(requeue_before)
        .fetch_all(&self.pool)
        .await?;
        for row in stranded {
            let session = SessionId(get_str(&row, "session_id")?);
            let mut tx = self.begin().await?;
            if let Some(id) =
                create_followup(&mut tx, self.lock_suffix(), limits, &session, now).await?
            {
                ids.push(id);
            }
            tx.commit().await?;
        }
        Ok(ids)
    }

    /// Give a running run back to the queue (graceful shutdown past its deadline).
    pub async fn release_run(&self, id: &RunId, worker: &str) -> Result<bool> {
        let mut w = self.writer().await?;
        let done = sqlx::query("update runs set status = 'queued', worker_id = null, enqueued_at = $1 where id = $2 and worker_id = $3 and status = 'running'")
            .bind(now_ms())
            .bind(&id.0)
            .bind(worker)
            .execute(&mut *w)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Embedded start-up: this is the only worker, so every `running` run belongs
    /// to a process that died. Put them back in the queue.
    pub async fn requeue_all_running(&self) -> Result<u64> {
        let mut w = self.writer().await?;
        let done = sqlx::query("update runs set status = 'queued', worker_id = null, enqueued_at = $1 where status = 'running'")
            .bind(now_ms())
            .execute(&mut *w)
            .await?;
        Ok(done.rows_affected())
    }

    /// Number of runs waiting for a worker (queue-depth gauge).
    pub async fn queued_runs(&self) -> Result<i64> {
        let row = sqlx::query("select count(*) as n from runs where status = 'queued' and status in ('queued', 'running')")
            .fetch_one(&self.pool)
            .await?;
        get_i64(&row, "n")
    }
}

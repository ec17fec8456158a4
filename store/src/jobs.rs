//! Background jobs (issue 24, migration 0019): durable work that is not a run —
//! a document's ingestion, a memory extraction, a schedule's delivery — in one
//! shape. Runs have their own table, queue and claim because they stream to
//! people; a job only has to happen, once it is asked for, even when the worker
//! doing it dies.
//!
//! - **Dedupe**: a job is unique by `(kind, key)`. The key names the work (a
//!   document's id, a finished run's id, a schedule and its fire time), so asking
//!   for the same work twice — a retried request, two replicas — finds the first
//!   row, in whatever state it is.
//! - **Claim**: a worker takes one due row by compare-and-set: `queued` with
//!   `run_after` passed, or `running` with a lease that ran out (its worker died),
//!   and bumps `attempt`. On Postgres the candidate is picked with `for update
//!   skip locked`, so concurrent claimers take different rows instead of queueing
//!   on one; on SQLite the write lock already makes claims one at a time.
//! - **Lease**: the holder renews it while it works; every write it makes is
//!   guarded by (owner, attempt), so a holder whose lease was taken over (or whose
//!   job was cancelled) writes nothing more and learns so from the answer.
//! - **End**: `succeeded`; `failed` with an error; or a retry — back to `queued`
//!   with a later `run_after` until `max_attempts` is spent. A job whose worker
//!   died `max_attempts` times is failed by a runner's sweep ([`Store::fail_lapsed_jobs`]).
//!
//! Nothing here is per-kind: the worker's `jobs` module maps kinds to code.
//! There is no queue message: workers poll the due index (one indexed read per
//! idle poll), and a job enqueued in this process wakes this process's runner at
//! once ([`Store::jobs_enqueued`]).

use std::str::FromStr;

use super::{Result, Store, StoreError, WriteTx, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::job::JobKind;
use weft_wire::time::now_ms;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

impl FromStr for JobState {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Self, ()> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or(())
    }
}

/// A job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob<'a> {
    pub kind: &'a str,
    /// What makes this piece of work the same as another (see the module doc).
    pub key: &'a str,
    /// The kind's input, JSON.
    pub payload: &'a str,
    /// Not before this time (unix ms); `0` is now.
    pub run_after: i64,
    /// Claims before the job fails for good (at least 1).
    pub max_attempts: u32,
}

/// What enqueueing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    pub id: String,
    /// False when `(kind, key)` was there already; `state` is then its state.
    pub created: bool,
    pub state: JobState,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub id: String,
    pub kind: String,
    pub key: String,
    pub payload: String,
    pub state: JobState,
    pub attempt: i64,
    pub max_attempts: i64,
    pub run_after: i64,
    pub lease_owner: Option<String>,
    pub lease_until: i64,
    /// The kind's own account of how far it got (JSON), kept across attempts.
    pub progress: Option<String>,
    /// Why the last attempt did not succeed.
    pub error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

/// A job a worker now holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub id: String,
    pub kind: String,
    pub key: String,
    pub payload: String,
    /// 1 on the first claim; a takeover after a lapsed lease bumps it.
    pub attempt: i64,
    pub max_attempts: i64,
    pub progress: Option<String>,
    /// When it was due (unix ms): the claim's lateness is the queue's lag.
    pub run_after: i64,
}

/// How an attempt ended, as its holder reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    Succeeded,
    /// A transient failure: queued again for `retry_at` (unix ms) while
    /// attempts remain, else failed with `error`.
    Retry {
        retry_at: i64,
        error: String,
    },
    /// A failure no retry can fix.
    Failed {
        error: String,
    },
    /// The holder stops (shutting down): queued again at once, and this
    /// attempt does not count.
    Released,
    /// Done, and more of the same work arrived meanwhile: queued again for
    /// `run_after`, its attempts back to none (a recurring job).
    Again {
        run_after: i64,
    },
    /// Something the job needs is down (a provider outage): queued again for
    /// `retry_at` with `error` shown, and this attempt does not count — an
    /// outage of any length never uses up a job's attempts.
    Postponed {
        retry_at: i64,
        error: String,
    },
}

/// A job failed because its worker stopped during each of its attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LapsedJob {
    pub kind: String,
    pub key: String,
    pub payload: String,
}

/// The most recurring jobs a process remembers arming (past it, those
/// already due are forgotten, then all).
const MAX_ARMED: usize = 10_000;

/// The error of a [`LapsedJob`].
pub const LAPSED: &str = "the worker running it stopped during each of its attempts";

const COLUMNS: &str = "id, kind, key, payload, state, attempt, max_attempts, run_after, lease_owner, \
                       lease_until, progress, error, created_at, finished_at";

impl Store {
    /// Wakes this process's job runner when a job is enqueued here (workers in
    /// other processes find it at their next poll).
    pub fn jobs_enqueued(&self) -> &tokio::sync::Notify {
        &self.jobs_enqueued
    }

    /// Enqueue `job` unless `(kind, key)` is there already.
    pub async fn enqueue_job(&self, job: &NewJob<'_>) -> Result<Enqueued> {
        let mut tx = self.begin().await?;
        let out = self.insert_job(&mut tx, job).await?;
        tx.commit().await?;
        Ok(out)
    }

    /// Enqueue the job `job` of a kind (its key, payload and attempts as the
    /// kind says), not before `run_after` (unix ms; `0` is now).
    pub async fn enqueue<J: JobKind>(&self, job: &J, run_after: i64) -> Result<Enqueued> {
        let mut tx = self.begin().await?;
        let out = self.insert_kind_job(&mut tx, job, run_after).await?;
        tx.commit().await?;
        Ok(out)
    }

    /// [`Store::enqueue`] inside a transaction of another store module.
    pub(crate) async fn insert_kind_job<J: JobKind>(
        &self,
        tx: &mut WriteTx,
        job: &J,
        run_after: i64,
    ) -> Result<Enqueued> {
        let payload = serde_json::to_string(job)
            .map_err(|e| StoreError::Other(format!("encoding a {} job: {e}", J::KIND)))?;
        self.insert_job(
            tx,
            &NewJob {
                kind: J::KIND,
                key: &job.key(),
                payload: &payload,
                run_after,
                max_attempts: J::MAX_ATTEMPTS,
            },
        )
        .await
    }

    /// [`Store::enqueue_job`] inside a transaction of another store module, so the
    /// job exists exactly when the row it works on does (a document and its
    /// ingestion, a fire and its delivery).
    pub(crate) async fn insert_job(&self, tx: &mut WriteTx, job: &NewJob<'_>) -> Result<Enqueued> {
        if job.max_attempts == 0 {
            return Err(StoreError::Invalid(
                "a job needs at least one attempt".into(),
            ));
        }
        let now = now_ms();
        let id = format!("job_{}", uuid::Uuid::now_v7().simple());
        let inserted = sqlx::query(
            "insert into jobs (id, kind, key, payload, state, max_attempts, run_after, created_at, updated_at)
             values ($1, $2, $3, $4, 'queued', $5, $6, $7, $7)
             on conflict (kind, key) do nothing",
        )
        .bind(&id)
        .bind(job.kind)
        .bind(job.key)
        .bind(job.payload)
        .bind(i64::from(job.max_attempts))
        .bind(job.run_after)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        if inserted.rows_affected() == 1 {
            self.jobs_enqueued.notify_one();
            return Ok(Enqueued {
                id,
                created: true,
                state: JobState::Queued,
            });
        }
        let row = sqlx::query("select id, state from jobs where kind = $1 and key = $2")
            .bind(job.kind)
            .bind(job.key)
            .fetch_one(&mut **tx)
            .await?;
        Ok(Enqueued {
            id: get_str(&row, "id")?,
            created: false,
            state: super::get_enum(&row, "state")?,
        })
    }

    /// Arms the recurring job `job` (its kind's key) to run at `run_after`,
    /// inside a transaction of another store module: a new row, or a
    /// finished one (succeeded, failed, cancelled) queued again with its
    /// attempts back to none. One that is queued keeps its time — so the work
    /// asked for within its wait is done once, together — and one that is
    /// running is left alone (the kind looks again when it ends; see
    /// `memory.extract`).
    ///
    /// A job this process armed that is not due yet is queued still (nothing
    /// claims it before it is due), so arming it again is skipped without a
    /// statement: a conversation's turns within the wait cost the finishing
    /// transaction one upsert, not one each (it was one more statement per
    /// run under SQLite's single writer, and cost the side-by-side bench a
    /// tenth of its runs/s).
    pub(crate) async fn rearm_kind_job<J: JobKind>(
        &self,
        tx: &mut WriteTx,
        job: &J,
        run_after: i64,
    ) -> Result<()> {
        let now = now_ms();
        let name = format!("{}/{}", J::KIND, job.key());
        {
            let mut armed = self.armed.lock().expect("armed lock");
            if armed.get(&name).is_some_and(|due| *due > now) {
                return Ok(());
            }
            if armed.len() >= MAX_ARMED {
                armed.retain(|_, due| *due > now);
                if armed.len() >= MAX_ARMED {
                    armed.clear();
                }
            }
            armed.insert(name, run_after);
        }
        let payload = serde_json::to_string(job)
            .map_err(|e| StoreError::Other(format!("encoding a {} job: {e}", J::KIND)))?;
        sqlx::query(
            "insert into jobs (id, kind, key, payload, state, max_attempts, run_after, created_at, updated_at)
             values ($1, $2, $3, $4, 'queued', $5, $6, $7, $7)
             on conflict (kind, key) do update set state = 'queued', payload = excluded.payload,
                 attempt = 0, max_attempts = excluded.max_attempts, run_after = excluded.run_after,
                 lease_owner = null, lease_until = 0, progress = null, error = null, finished_at = null,
                 updated_at = excluded.updated_at
             where jobs.state in ('succeeded', 'failed', 'cancelled')",
        )
        .bind(format!("job_{}", uuid::Uuid::now_v7().simple()))
        .bind(J::KIND)
        .bind(job.key())
        .bind(payload)
        .bind(i64::from(J::MAX_ATTEMPTS))
        .bind(run_after)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        if run_after <= now {
            self.jobs_enqueued.notify_one();
        }
        Ok(())
    }

    /// The job `(kind, key)`, if there is one.
    pub async fn job(&self, kind: &str, key: &str) -> Result<Option<JobRecord>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from jobs where kind = $1 and key = $2"
        )))
        .bind(kind)
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(job_record).transpose()
    }

    /// Takes one due job of `kinds` for `owner`, leased until `lease_until`:
    /// the oldest due first. `None` when nothing is due.
    pub async fn claim_job(
        &self,
        kinds: &[&str],
        owner: &str,
        now: i64,
        lease_until: i64,
    ) -> Result<Option<ClaimedJob>> {
        if kinds.is_empty() {
            return Ok(None);
        }
        // `kind in ($4, $5, …)`: the Any driver binds no arrays.
        let list = (0..kinds.len())
            .map(|i| format!("${}", i + 4))
            .collect::<Vec<_>>()
            .join(", ");
        let skip_locked = match self.dialect {
            super::Dialect::Postgres => " for update skip locked",
            super::Dialect::Sqlite => "",
        };
        let sql = format!(
            "update jobs set state = 'running', lease_owner = $1, lease_until = $2,
                    attempt = attempt + 1, updated_at = $3
             where id = (
                 select id from jobs
                 where kind in ({list})
                   and ((state = 'queued' and run_after <= $3)
                        or (state = 'running' and lease_until < $3 and attempt < max_attempts))
                 order by run_after, id
                 limit 1{skip_locked})
               and (state = 'queued' or (state = 'running' and lease_until < $3))
             returning id, kind, key, payload, attempt, max_attempts, progress, run_after"
        );
        let mut tx = self.begin().await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(owner)
            .bind(lease_until)
            .bind(now);
        for kind in kinds {
            query = query.bind(*kind);
        }
        let row = query.fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ClaimedJob {
            id: get_str(&row, "id")?,
            kind: get_str(&row, "kind")?,
            key: get_str(&row, "key")?,
            payload: get_str(&row, "payload")?,
            attempt: get_i64(&row, "attempt")?,
            max_attempts: get_i64(&row, "max_attempts")?,
            progress: get_opt_str(&row, "progress")?,
            run_after: get_i64(&row, "run_after")?,
        }))
    }

    /// Extends `owner`'s lease of attempt `attempt` to `lease_until`, storing
    /// `progress` when given. False when the job is no longer theirs (taken over
    /// or cancelled): the holder stops.
    pub async fn renew_job(
        &self,
        id: &str,
        owner: &str,
        attempt: i64,
        lease_until: i64,
        progress: Option<&str>,
    ) -> Result<bool> {
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update jobs set lease_until = $1, progress = coalesce($2, progress), updated_at = $3
             where id = $4 and lease_owner = $5 and attempt = $6 and state = 'running'",
        )
        .bind(lease_until)
        .bind(progress)
        .bind(now_ms())
        .bind(id)
        .bind(owner)
        .bind(attempt)
        .execute(&mut *w)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends `owner`'s attempt as `end` says. False when the job was no longer
    /// theirs (nothing is written then).
    pub async fn end_job(&self, id: &str, owner: &str, attempt: i64, end: &JobEnd) -> Result<bool> {
        let now = now_ms();
        // `$1` now, `$2` id, `$3` owner, `$4` attempt; then each end's own values.
        let held = "where id = $2 and lease_owner = $3 and attempt = $4 and state = 'running'";
        let set = match end {
            JobEnd::Succeeded => "state = 'succeeded', error = null, finished_at = $1",
            JobEnd::Retry { .. } => {
                "state = case when attempt < max_attempts then 'queued' else 'failed' end,
                 finished_at = case when attempt < max_attempts then null else $1 end,
                 run_after = $5, error = $6"
            }
            JobEnd::Failed { .. } => "state = 'failed', error = $5, finished_at = $1",
            JobEnd::Released => "state = 'queued', run_after = $1, attempt = attempt - 1",
            JobEnd::Again { .. } => "state = 'queued', run_after = $5, error = null, attempt = 0",
            JobEnd::Postponed { .. } => {
                "state = 'queued', run_after = $5, error = $6, attempt = attempt - 1"
            }
        };
        let sql = format!(
            "update jobs set {set}, lease_owner = null, lease_until = 0, updated_at = $1 {held}"
        );
        let mut w = self.writer().await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now)
            .bind(id)
            .bind(owner)
            .bind(attempt);
        if let JobEnd::Retry { retry_at, .. }
        | JobEnd::Postponed { retry_at, .. }
        | JobEnd::Again {
            run_after: retry_at,
        } = end
        {
            query = query.bind(*retry_at);
        }
        match end {
            JobEnd::Retry { error, .. }
            | JobEnd::Failed { error }
            | JobEnd::Postponed { error, .. } => query = query.bind(error.as_str()),
            JobEnd::Succeeded | JobEnd::Released | JobEnd::Again { .. } => {}
        }
        let done = query.execute(&mut *w).await?;
        Ok(done.rows_affected() == 1)
    }

    /// Cancels the job `(kind, key)` unless it already ended; a worker running
    /// it stops at its next renewal. True when this call cancelled it.
    pub async fn cancel_job(&self, kind: &str, key: &str) -> Result<bool> {
        let mut w = self.writer().await?;
        let now = now_ms();
        let done = sqlx::query(
            "update jobs set state = 'cancelled', lease_owner = null, lease_until = 0,
                    finished_at = $1, updated_at = $1
             where kind = $2 and key = $3 and state in ('queued', 'running')",
        )
        .bind(now)
        .bind(kind)
        .bind(key)
        .execute(&mut *w)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Fails the jobs of `kinds` whose worker died holding their last attempt
    /// (a lease that ran out before `now` with no attempts left), and returns
    /// them, so the runner can tell each kind its work was given up.
    pub async fn fail_lapsed_jobs(&self, kinds: &[&str], now: i64) -> Result<Vec<LapsedJob>> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let list = (0..kinds.len())
            .map(|i| format!("${}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "update jobs set state = 'failed', lease_owner = null, lease_until = 0,
                    error = '{LAPSED}', finished_at = $1, updated_at = $1
             where state = 'running' and lease_until < $1 and attempt >= max_attempts
               and kind in ({list})
             returning kind, key, payload"
        );
        let mut w = self.writer().await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(now);
        for kind in kinds {
            query = query.bind(*kind);
        }
        let rows = query.fetch_all(&mut *w).await?;
        rows.iter()
            .map(|row| {
                Ok(LapsedJob {
                    kind: get_str(row, "kind")?,
                    key: get_str(row, "key")?,
                    payload: get_str(row, "payload")?,
                })
            })
            .collect()
    }

    /// Embedded start-up: every running job belonged to the process that
    /// stopped, so their leases end now and the runner takes them over at
    /// once (or fails those with no attempt left).
    pub async fn lapse_all_job_leases(&self) -> Result<u64> {
        let mut w = self.writer().await?;
        let done = sqlx::query("update jobs set lease_until = 0 where state = 'running'")
            .execute(&mut *w)
            .await?;
        Ok(done.rows_affected())
    }

    /// Deletes jobs that ended before `before` (unix ms): their outcome lives in
    /// the rows they worked on; the job row only kept the key from running twice.
    pub async fn purge_ended_jobs(&self, before: i64) -> Result<u64> {
        let mut w = self.writer().await?;
        let done =
            sqlx::query("delete from jobs where finished_at is not null and finished_at < $1")
                .bind(before)
                .execute(&mut *w)
                .await?;
        Ok(done.rows_affected())
    }
}

fn job_record(row: &sqlx::any::AnyRow) -> Result<JobRecord> {
    Ok(JobRecord {
        id: get_str(row, "id")?,
        kind: get_str(row, "kind")?,
        key: get_str(row, "key")?,
        payload: get_str(row, "payload")?,
        state: super::get_enum(row, "state")?,
        attempt: get_i64(row, "attempt")?,
        max_attempts: get_i64(row, "max_attempts")?,
        run_after: get_i64(row, "run_after")?,
        lease_owner: get_opt_str(row, "lease_owner")?,
        lease_until: get_i64(row, "lease_until")?,
        progress: get_opt_str(row, "progress")?,
        error: get_opt_str(row, "error")?,
        created_at: get_i64(row, "created_at")?,
        finished_at: get_opt_i64(row, "finished_at")?,
    })
}

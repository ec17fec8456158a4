//! Runs: creation (the send transaction), claiming, heartbeats, completion, cancel,
//! follow-ups and the reaper's queries.
//!
//! The session row is the serialisation point for sends (locked `for update` on
//! Postgres; SQLite's `begin immediate` serialises all writers). The
//! `runs_one_active` partial unique index is the backstop: whatever races, a
//! session never has two active runs. Claims are compare-and-set updates, so a
//! duplicate job delivery can never run a run twice at once.

use std::str::FromStr;

use sqlx::any::AnyRow;

use super::messages::{insert_step_message, order_key};
use super::{Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str};
use crate::api::{ErrorBody, Multitask, RunDto, UsageDto};
use crate::ids::{MessageId, RunId, SessionId, UserId};
use crate::time::{now_ms, rfc3339};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Queued,
    Running,
    WaitingApproval,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingApproval => "waiting_approval",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl FromStr for RunStatus {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Self, ()> {
        Ok(match s {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting_approval" => RunStatus::WaitingApproval,
            "succeeded" => RunStatus::Succeeded,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            _ => return Err(()),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub status: RunStatus,
    pub model: String,
    pub mode: String,
    pub attempt: u32,
    pub usage: UsageDto,
    pub ttft_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub error: Option<ErrorBody>,
    pub cancelled_by: Option<String>,
    pub final_message_id: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const RUN_COLUMNS: &str = "id, session_id, user_id, status, model, mode, attempt, usage_input, usage_output, usage_cache_read, usage_reasoning, ttft_ms, duration_ms, error_code, error_message, cancelled_by, final_message_id, created_at, finished_at";

impl RunRecord {
    fn from_row(row: &AnyRow) -> Result<RunRecord> {
        let error = match (
            get_opt_str(row, "error_code")?,
            get_opt_str(row, "error_message")?,
        ) {
            (Some(code), msg) => Some(ErrorBody {
                code,
                message: msg.unwrap_or_default(),
            }),
            _ => None,
        };
        Ok(RunRecord {
            id: RunId(get_str(row, "id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            user_id: UserId(get_str(row, "user_id")?),
            status: get_enum(row, "status")?,
            model: get_str(row, "model")?,
            mode: get_str(row, "mode")?,
            attempt: get_i64(row, "attempt")? as u32,
            usage: UsageDto {
                input: get_i64(row, "usage_input")? as u64,
                output: get_i64(row, "usage_output")? as u64,
                cache_read: get_i64(row, "usage_cache_read")? as u64,
                reasoning: get_i64(row, "usage_reasoning")? as u64,
            },
            ttft_ms: get_opt_i64(row, "ttft_ms")?.map(|v| v as u64),
            duration_ms: get_opt_i64(row, "duration_ms")?.map(|v| v as u64),
            error,
            cancelled_by: get_opt_str(row, "cancelled_by")?,
            final_message_id: get_opt_str(row, "final_message_id")?,
            created_at: get_i64(row, "created_at")?,
            finished_at: get_opt_i64(row, "finished_at")?,
        })
    }

    pub fn to_dto(&self) -> RunDto {
        RunDto {
            id: self.id.0.clone(),
            session_id: self.session_id.0.clone(),
            status: self.status.as_str().into(),
            attempt: self.attempt,
            model: self.model.clone(),
            usage: self.usage,
            ttft_ms: self.ttft_ms,
            duration_ms: self.duration_ms,
            error: self.error.clone(),
            final_message_id: self.final_message_id.clone(),
            created_at: rfc3339(self.created_at),
        }
    }
}

/// A send, already validated by the gateway.
#[derive(Debug, Clone)]
pub struct SendRequest {
    pub user: UserId,
    pub session: SessionId,
    pub text: String,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub multitask: Multitask,
    pub idempotency_key: Option<String>,
    /// 0 disables.
    pub active_runs_per_user: u64,
    /// 0 disables.
    pub runs_per_minute_per_user: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub run_id: RunId,
    pub message_id: MessageId,
}

/// A run that a cancel or an interrupt just ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveRun {
    pub id: RunId,
    /// No worker had claimed it: nobody else will emit its terminal event.
    pub was_queued: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    Started {
        run: NewRun,
        interrupted: Option<ActiveRun>,
    },
    Queued {
        message_id: MessageId,
        active_run_id: RunId,
    },
    /// The idempotency key was seen before: nothing new was written.
    Replayed {
        message_id: MessageId,
        run_id: Option<RunId>,
    },
    Rejected {
        active_run_id: RunId,
    },
    TooManyActive,
    RateLimited {
        retry_after_secs: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRun {
    pub id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub model: String,
    pub mode: String,
    pub attempt: u32,
    pub cancel_requested: bool,
    pub started_at: i64,
    pub created_at: i64,
    /// Seq high-water mark recorded by earlier attempts.
    pub last_seq: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClaimOutcome {
    Claimed(ClaimedRun),
    /// Claimed, but the attempt budget is spent: the run is now `failed`.
    Exhausted(ClaimedRun),
    /// Another live worker owns it, or it already ended: drop the job.
    NotClaimable,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FinishOutcome {
    Finished {
        message_id: Option<MessageId>,
        followup: Option<RunId>,
    },
    /// Another worker took the run over; this one writes nothing.
    Lost,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CancelOutcome {
    Cancelled {
        run: ActiveRun,
        followup: Option<RunId>,
    },
    NotActive(RunStatus),
}

/// How a run ends, as the worker reports it.
#[derive(Debug, Clone)]
pub enum RunEnd {
    Succeeded {
        content: String,
        step: u32,
    },
    Failed {
        error: ErrorBody,
        partial: String,
        step: u32,
    },
    Cancelled {
        partial: String,
        step: u32,
    },
}

pub(super) const ACTIVE: &str = "('queued', 'running', 'waiting_approval')";

impl Store {
    pub async fn get_run(&self, user: &UserId, id: &RunId) -> Result<RunRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {RUN_COLUMNS} from runs where id = $1 and user_id = $2"
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        RunRecord::from_row(&row)
    }

    /// A run by id alone (workers and internal paths; never for user-facing reads).
    pub async fn get_run_unscoped(&self, id: &RunId) -> Result<RunRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {RUN_COLUMNS} from runs where id = $1"
        )))
        .bind(&id.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        RunRecord::from_row(&row)
    }

    /// Compare-and-set claim: `queued → running`, or take over a `running` run whose
    /// heartbeat is older than `stale_before`. Bumps `attempt`.
    pub async fn claim_run(
        &self,
        id: &RunId,
        worker: &str,
        stale_before: i64,
        max_attempts: u32,
    ) -> Result<ClaimOutcome> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        let row = sqlx::query(
            "update runs set status = 'running', attempt = attempt + 1, worker_id = $2, heartbeat_at = $3,
                 started_at = coalesce(started_at, $3)
             where id = $1 and (status = 'queued' or (status = 'running' and heartbeat_at < $4))
             returning id, session_id, user_id, model, mode, attempt, cancel_requested, started_at, created_at, last_seq",
        )
        .bind(&id.0)
        .bind(worker)
        .bind(now)
        .bind(stale_before)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(ClaimOutcome::NotClaimable);
        };
        let claimed = ClaimedRun {
            id: RunId(get_str(&row, "id")?),
            session_id: SessionId(get_str(&row, "session_id")?),
            user_id: UserId(get_str(&row, "user_id")?),
            model: get_str(&row, "model")?,
            mode: get_str(&row, "mode")?,
            attempt: get_i64(&row, "attempt")? as u32,
            cancel_requested: get_i64(&row, "cancel_requested")? != 0,
            started_at: get_i64(&row, "started_at")?,
            created_at: get_i64(&row, "created_at")?,
            last_seq: get_i64(&row, "last_seq")? as u64,
        };
        if claimed.attempt > max_attempts {
            return Ok(ClaimOutcome::Exhausted(claimed));
        }
        Ok(ClaimOutcome::Claimed(claimed))
    }

    /// Refresh the lease. `false` means this worker no longer owns a running run
    /// (taken over, cancelled or deleted): it must stop.
    pub async fn heartbeat(&self, id: &RunId, worker: &str, seq: u64) -> Result<bool> {
        let _gate = self.write_gate().await;
        let done = sqlx::query(
            "update runs set heartbeat_at = $1, last_seq = case when last_seq > $4 then last_seq else $4 end
             where id = $2 and worker_id = $3 and status = 'running'",
        )
            .bind(now_ms())
            .bind(&id.0)
            .bind(worker)
            .bind(seq as i64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// End a run in one transaction: final message, status, totals, and the
    /// follow-up run for messages that waited behind it (ARCHITECTURE §4 step 5).
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_run(
        &self,
        run: &ClaimedRun,
        worker: &str,
        end: &RunEnd,
        usage: UsageDto,
        ttft_ms: Option<u64>,
    ) -> Result<FinishOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let duration = (now - run.started_at).max(0);
        let (status, error, text, step) = match end {
            RunEnd::Succeeded { content, step } => ("succeeded", None, content, *step),
            RunEnd::Failed {
                error,
                partial,
                step,
            } => ("failed", Some(error), partial, *step),
            RunEnd::Cancelled { partial, step } => ("cancelled", None, partial, *step),
        };
        // The reply first (inside the transaction: if the run turns out not to be
        // ours any more, the rollback takes it back), so one update sets everything.
        let message_id = if matches!(end, RunEnd::Succeeded { .. }) || !text.is_empty() {
            Some(
                insert_step_message(
                    &mut tx,
                    &run.session_id,
                    &run.id,
                    step,
                    "assistant",
                    text,
                    "",
                    None,
                    None,
                    now,
                )
                .await?,
            )
        } else {
            None
        };
        // A cancel may already have marked the run `cancelled` (to free the session at once).
        let owned = sqlx::query(
            "update runs set status = $1, finished_at = coalesce(finished_at, $2), duration_ms = $3, ttft_ms = $4,
                 usage_input = $5, usage_output = $6, usage_cache_read = $7, usage_reasoning = $8,
                 error_code = $9, error_message = $10, heartbeat_at = $2, final_message_id = $13
             where id = $11 and worker_id = $12 and (status = 'running' or (status = 'cancelled' and $1 = 'cancelled'))",
        )
        .bind(status)
        .bind(now)
        .bind(duration)
        .bind(ttft_ms.map(|v| v as i64))
        .bind(usage.input as i64)
        .bind(usage.output as i64)
        .bind(usage.cache_read as i64)
        .bind(usage.reasoning as i64)
        .bind(error.map(|e| e.code.clone()))
        .bind(error.map(|e| e.message.clone()))
        .bind(&run.id.0)
        .bind(worker)
        .bind(message_id.as_ref().map(|m| m.0.clone()))
        .execute(&mut **tx)
        .await?;
        if owned.rows_affected() == 0 {
            return Ok(FinishOutcome::Lost);
        }
        let waiting = touch_session_counting_waiting(&mut tx, &run.session_id, now).await?;
        let followup = followup_for_waiting(&mut tx, &run.session_id, now, waiting).await?;
        tx.commit().await?;
        Ok(FinishOutcome::Finished {
            message_id,
            followup,
        })
    }

    /// Mark a run whose attempts are spent as failed (the claim already bumped it).
    pub async fn fail_exhausted(
        &self,
        run: &ClaimedRun,
        error: &ErrorBody,
    ) -> Result<Option<RunId>> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        sqlx::query("update runs set status = 'failed', finished_at = $1, error_code = $2, error_message = $3, duration_ms = $1 - started_at where id = $4")
            .bind(now)
            .bind(&error.code)
            .bind(&error.message)
            .bind(&run.id.0)
            .execute(&mut **tx)
            .await?;
        let followup = create_followup(&mut tx, &run.session_id, now).await?;
        tx.commit().await?;
        Ok(followup)
    }

    /// Cancel a user's run. An active run is marked `cancelled` at once (the
    /// session is free for the next message); its worker, told over the bus,
    /// keeps the partial text and emits `cancelled`.
    pub async fn cancel_run(&self, user: &UserId, id: &RunId, by: &str) -> Result<CancelOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select status, session_id from runs where id = $1 and user_id = $2{}",
            self.lock_suffix()
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let status: RunStatus = get_enum(&row, "status")?;
        if status.is_terminal() {
            return Ok(CancelOutcome::NotActive(status));
        }
        let session = SessionId(get_str(&row, "session_id")?);
        end_as_cancelled(&mut tx, id, by, now).await?;
        // Nobody will execute a queued run: messages waiting behind it move on now.
        // A running run's worker creates the follow-up when it has saved its text.
        let followup = if status == RunStatus::Queued {
            create_followup(&mut tx, &session, now).await?
        } else {
            None
        };
        tx.commit().await?;
        Ok(CancelOutcome::Cancelled {
            run: ActiveRun {
                id: id.clone(),
                was_queued: status == RunStatus::Queued,
            },
            followup,
        })
    }

    /// Runs the reaper must (re-)enqueue: running with a stale heartbeat, queued
    /// and not picked up for a while (lost job), and follow-ups for sessions whose
    /// waiting messages were stranded by a run that ended without its worker.
    pub async fn reap(&self, stale_before: i64, requeue_before: i64) -> Result<Vec<RunId>> {
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
                    .execute(&mut **tx)
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
            if let Some(id) = create_followup(&mut tx, &session, now).await? {
                ids.push(id);
            }
            tx.commit().await?;
        }
        Ok(ids)
    }

    /// Give a running run back to the queue (graceful shutdown past its deadline).
    pub async fn release_run(&self, id: &RunId, worker: &str) -> Result<bool> {
        let _gate = self.write_gate().await;
        let done = sqlx::query("update runs set status = 'queued', worker_id = null, enqueued_at = $1 where id = $2 and worker_id = $3 and status = 'running'")
            .bind(now_ms())
            .bind(&id.0)
            .bind(worker)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Embedded start-up: this is the only worker, so every `running` run belongs
    /// to a process that died. Put them back in the queue.
    pub async fn requeue_all_running(&self) -> Result<u64> {
        let _gate = self.write_gate().await;
        let done = sqlx::query("update runs set status = 'queued', worker_id = null, enqueued_at = $1 where status = 'running'")
            .bind(now_ms())
            .execute(&self.pool)
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

pub(super) async fn end_as_cancelled(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &RunId,
    by: &str,
    now: i64,
) -> Result<()> {
    sqlx::query("update runs set status = 'cancelled', cancel_requested = 1, cancelled_by = $1, finished_at = $2 where id = $3")
        .bind(by)
        .bind(now)
        .bind(&id.0)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub(super) async fn insert_run(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &RunId,
    session: &SessionId,
    user: &UserId,
    model: &str,
    mode: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "insert into runs (id, session_id, user_id, status, model, mode, enqueued_at, created_at)
         values ($1, $2, $3, 'queued', $4, $5, $6, $6)",
    )
    .bind(&id.0)
    .bind(&session.0)
    .bind(&user.0)
    .bind(model)
    .bind(mode)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| StoreError::unique(e, "run_active"))?;
    Ok(())
}

pub(super) async fn attach_queued(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &SessionId,
    run: &RunId,
) -> Result<u64> {
    let waiting = sqlx::query("select id from messages where session_id = $1 and queued = 1")
        .bind(&session.0)
        .fetch_all(&mut **tx)
        .await?;
    for row in &waiting {
        let id = MessageId(get_str(row, "id")?);
        sqlx::query("update messages set run_id = $1, queued = 0, ord = $2 where id = $3")
            .bind(&run.0)
            .bind(order_key(Some(run), "user", 0, &id))
            .bind(&id.0)
            .execute(&mut **tx)
            .await?;
    }
    Ok(waiting.len() as u64)
}

/// If messages wait in the session and no run is active, they become one new run.
pub(super) async fn create_followup(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &SessionId,
    now: i64,
) -> Result<Option<RunId>> {
    let waiting =
        sqlx::query("select count(*) as n from messages where session_id = $1 and queued = 1")
            .bind(&session.0)
            .fetch_one(&mut **tx)
            .await?;
    followup_for_waiting(tx, session, now, get_i64(&waiting, "n")?).await
}

/// [`create_followup`] when the caller already counted the `waiting` messages.
async fn followup_for_waiting(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
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
    .fetch_optional(&mut **tx)
    .await?;
    if active.is_some() {
        return Ok(None);
    }
    let s = sqlx::query("select user_id, model, mode from sessions where id = $1")
        .bind(&session.0)
        .fetch_optional(&mut **tx)
        .await?;
    let Some(s) = s else { return Ok(None) };
    let id = RunId::new();
    insert_run(
        tx,
        &id,
        session,
        &UserId(get_str(&s, "user_id")?),
        &get_str(&s, "model")?,
        &get_str(&s, "mode")?,
        now,
    )
    .await?;
    attach_queued(tx, session, &id).await?;
    Ok(Some(id))
}

/// Bump the session's `updated_at` and count the messages waiting in it, in one
/// statement (a run's end holds SQLite's single writer: every round trip counts).
async fn touch_session_counting_waiting(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &SessionId,
    now: i64,
) -> Result<i64> {
    let row = sqlx::query(
        "update sessions set updated_at = $1 where id = $2
         returning (select count(*) from messages m where m.session_id = $2 and m.queued = 1) as waiting",
    )
    .bind(now)
    .bind(&session.0)
    .fetch_optional(&mut **tx)
    .await?;
    row.map_or(Ok(0), |r| get_i64(&r, "waiting"))
}

pub(super) async fn touch_session(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &SessionId,
    now: i64,
) -> Result<()> {
    sqlx::query("update sessions set updated_at = $1 where id = $2")
        .bind(now)
        .bind(&session.0)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

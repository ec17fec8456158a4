//! Runs: their records, claiming, heartbeats and cancel; their end is in
//! `run_end`. The send
//! transaction is in `send`, the writes it shares with a run's end in
//! `session_writes`, the reaper's queries in `recovery`.
//!
//! The session row is the serialisation point for sends (locked `for update` on
//! Postgres; SQLite's `begin immediate` serialises all writers). Every
//! transaction that writes a session's runs locks in one order — the session's
//! row, then run rows, then the user's row (run limits, `user_limits`) — so
//! none can deadlock with another. The
//! `runs_one_active` partial unique index is the backstop: whatever races, a
//! session never has two active runs. Claims are compare-and-set updates, so a
//! duplicate job delivery can never run a run twice at once.

use sqlx::any::AnyRow;

use super::session_writes::{create_followup, end_as_cancelled, lock_session};
use super::user_limits::RunLimits;
use super::{Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::{Citation, ErrorBody, RunDto, UsageDto};
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};
use weft_wire::reasoning::Reasoning;
use weft_wire::time::{now_ms, rfc3339};

pub use weft_wire::states::RunStatus;

#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub status: RunStatus,
    pub model: String,
    pub agent: String,
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

const RUN_COLUMNS: &str = "id, session_id, user_id, status, model, agent, attempt, usage_input, usage_output, usage_cache_read, usage_reasoning, context_tokens, context_window, ttft_ms, duration_ms, error_code, error_message, cancelled_by, final_message_id, created_at, finished_at";

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
            agent: get_str(row, "agent")?,
            attempt: get_i64(row, "attempt")? as u32,
            usage: UsageDto {
                input: get_i64(row, "usage_input")? as u64,
                output: get_i64(row, "usage_output")? as u64,
                cache_read: get_i64(row, "usage_cache_read")? as u64,
                reasoning: get_i64(row, "usage_reasoning")? as u64,
                context_tokens: get_i64(row, "context_tokens")? as u64,
                context_window: get_i64(row, "context_window")? as u64,
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
            status: self.status,
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

/// A run that a cancel or an interrupt just ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveRun {
    pub id: RunId,
    /// No worker had claimed it: nobody else will emit its terminal event.
    pub was_queued: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRun {
    pub id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub model: String,
    pub agent: String,
    pub attempt: u32,
    pub cancel_requested: bool,
    pub started_at: i64,
    pub created_at: i64,
    /// Seq high-water mark recorded by earlier attempts.
    pub last_seq: u64,
    /// The W3C trace context of the request that created the run.
    pub traceparent: Option<String>,
    /// The trace context of the request that decided the run's last approval
    /// (`runs.resumed_by`): a resumed stretch links to it.
    pub resumed_by: Option<String>,
    /// The step whose tool calls waited for approvals, when the run resumes
    /// after them (read by the claim: a fresh run has none).
    pub pending_step: Option<super::PendingStep>,
    /// The store's `prompt` revision at the claim: what a worker kept of agents,
    /// instructions and skills at this revision or later is current
    /// (`store::revisions`).
    pub prompt_rev: i64,
    /// The knowledge bases (ids) the run's session searches besides its
    /// agent's, read by the claim.
    pub session_knowledge: Vec<String>,
    /// The user's memory revision at the claim (`store::memories`): what a
    /// worker kept of their memories at this revision is current. `None`:
    /// the person turned memory off.
    pub memory_rev: Option<i64>,
    /// Learn from this turn once it succeeds: the `memory.extract` job of its
    /// session and person runs this long after its end. Not read by the claim
    /// but set by the worker, which knows the agent and the config (see
    /// `worker::agent::memory`).
    pub remember_after: Option<std::time::Duration>,
    /// The memories the run's prompt carried (set by the worker's recall):
    /// recorded by the transaction that ends the run, off the first token's
    /// path (see `store::memories`).
    pub memories_used: Vec<String>,
    /// The session has kept a todo list (`todo_update`) at some point: the
    /// worker reads the list as it stands and shows it to the model.
    pub has_todos: bool,
    /// Sent in plan mode (`plans.rs`).
    pub plan: bool,
    /// Plan mode, before a plan was approved: only read-only tools, and the
    /// run ends its planning with a plan proposed.
    pub planning: bool,
    /// The run that delegated this one (`delegations.rs`): its end settles
    /// the delegation and resumes the parent.
    pub parent_run_id: Option<RunId>,
    /// 0 for a run a person sent; a delegated run is one deeper than its
    /// parent.
    pub depth: u32,
    /// The schedule whose fire made this run: nobody is watching, so the
    /// session's `always` grants do not apply (`store::schedules`).
    pub schedule_id: Option<String>,
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
        /// The run that delegated this one, back on the queue now that this
        /// one ended (enqueue it).
        parent: Option<RunId>,
    },
    /// Another worker took the run over; this one writes nothing.
    Lost,
    /// The run was deleted with its session or user while it ran: nothing is
    /// written, and the worker ends its stream as `cancelled`.
    Deleted,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CancelOutcome {
    Cancelled {
        run: ActiveRun,
        followup: Option<RunId>,
        /// The run that delegated this one, back on the queue (enqueue it).
        parent: Option<RunId>,
    },
    NotActive(RunStatus),
}

/// How a run ends, as the worker reports it.
#[derive(Debug, Clone)]
pub enum RunEnd {
    Succeeded {
        content: String,
        step: u32,
        /// The sources `content` cites as `[n]`, stored with it.
        citations: Vec<Citation>,
        /// The model's reasoning before the answer, stored with it.
        reasoning: Vec<Reasoning>,
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

pub(super) const ACTIVE: &str =
    "('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_agents')";

/// A run is yours (`$2`) when you started it or it is in your session: in a
/// shared Lark conversation the session's owner sees and stops the runs of the
/// others who speak there, and each speaker their own.
const YOURS: &str = "(user_id = $2 or exists (select 1 from sessions s where s.id = runs.session_id and s.user_id = $2))";

impl Store {
    pub async fn get_run(&self, user: &UserId, id: &RunId) -> Result<RunRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {RUN_COLUMNS} from runs where id = $1 and {YOURS}"
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        RunRecord::from_row(&row)
    }

    /// A run by id alone (workers and internal paths; never for user-facing reads).
    /// The stored answer of ended run `rec` (its final message), or nothing.
    pub async fn run_answer(&self, rec: &RunRecord) -> Result<String> {
        let Some(id) = &rec.final_message_id else {
            return Ok(String::new());
        };
        Ok(self
            .get_message(&weft_wire::ids::MessageId(id.clone()))
            .await?
            .map(|m| m.content)
            .unwrap_or_default())
    }

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
        let mut w = self.writer().await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "update runs set status = 'running', attempt = attempt + 1, worker_id = $2, heartbeat_at = $3,
                 started_at = coalesce(started_at, $3)
             where id = $1 and (status = 'queued' or (status = 'running' and heartbeat_at < $4))
             returning id, session_id, user_id, model, agent, attempt, cancel_requested, started_at, created_at, last_seq,
                 traceparent, pending_step, resumed_by, parent_run_id, depth, schedule_id, {},
                 (select s.knowledge from sessions s where s.id = runs.session_id) as session_knowledge,
                 case when exists (select 1 from todo_lists t where t.session_id = runs.session_id)
                      then 1 else 0 end as has_todos,
                 plan, case when plan = 0 then 0
                      when exists (select 1 from plans p where p.run_id = runs.id and p.status = 'approved') then 0
                      else 1 end as planning,
                 (select case when u.memory_enabled = 1 then u.memory_rev else -1 end from users u where u.id = runs.user_id) as memory_rev",
            super::revisions::PROMPT_REV
        )))
        .bind(&id.0)
        .bind(worker)
        .bind(now)
        .bind(stale_before)
        .fetch_optional(&mut *w)
        .await?;
        let Some(row) = row else {
            return Ok(ClaimOutcome::NotClaimable);
        };
        let claimed = ClaimedRun {
            id: RunId(get_str(&row, "id")?),
            session_id: SessionId(get_str(&row, "session_id")?),
            user_id: UserId(get_str(&row, "user_id")?),
            model: get_str(&row, "model")?,
            agent: get_str(&row, "agent")?,
            attempt: get_i64(&row, "attempt")? as u32,
            cancel_requested: get_i64(&row, "cancel_requested")? != 0,
            started_at: get_i64(&row, "started_at")?,
            created_at: get_i64(&row, "created_at")?,
            last_seq: get_i64(&row, "last_seq")? as u64,
            traceparent: get_opt_str(&row, "traceparent")?,
            pending_step: super::waits::parse_pending_step(get_opt_str(&row, "pending_step")?)?,
            resumed_by: get_opt_str(&row, "resumed_by")?,
            prompt_rev: get_i64(&row, "prompt_rev")?,
            session_knowledge: match get_opt_str(&row, "session_knowledge")? {
                Some(json) => serde_json::from_str(&json)
                    .map_err(|e| StoreError::Other(format!("sessions.knowledge: {e}")))?,
                None => Vec::new(),
            },
            // -1 when the person's switch is off.
            memory_rev: get_opt_i64(&row, "memory_rev")?.filter(|r| *r >= 0),
            remember_after: None,
            memories_used: Vec::new(),
            has_todos: get_i64(&row, "has_todos")? != 0,
            plan: get_i64(&row, "plan")? != 0,
            planning: get_i64(&row, "planning")? != 0,
            parent_run_id: get_opt_str(&row, "parent_run_id")?.map(RunId),
            depth: get_i64(&row, "depth")? as u32,
            schedule_id: get_opt_str(&row, "schedule_id")?,
        };
        if claimed.attempt > max_attempts {
            return Ok(ClaimOutcome::Exhausted(claimed));
        }
        Ok(ClaimOutcome::Claimed(claimed))
    }

    /// Refresh the lease. `false` means this worker no longer owns a running run
    /// (taken over, cancelled or deleted): it must stop.
    pub async fn heartbeat(&self, id: &RunId, worker: &str, seq: u64) -> Result<bool> {
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update runs set heartbeat_at = $1, last_seq = case when last_seq > $4 then last_seq else $4 end
             where id = $2 and worker_id = $3 and status = 'running'",
        )
            .bind(now_ms())
            .bind(&id.0)
            .bind(worker)
            .bind(seq as i64)
            .execute(&mut *w)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Cancel a user's run. An active run is marked `cancelled` at once (the
    /// session is free for the next message); its worker, told over the bus,
    /// keeps the partial text and emits `cancelled`. A follow-up for messages
    /// waiting behind a queued run is created only within the user's `limits`.
    pub async fn cancel_run(
        &self,
        user: &UserId,
        id: &RunId,
        by: &str,
        limits: &RunLimits,
    ) -> Result<CancelOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        // The session's row first, then the run's (the send's order).
        let session = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select session_id from runs where id = $1 and {YOURS}"
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        lock_session(
            &mut tx,
            self.lock_suffix(),
            &SessionId(get_str(&session, "session_id")?),
        )
        .await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select status, session_id from runs where id = $1 and {YOURS}{}",
            self.lock_suffix()
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let status: RunStatus = get_enum(&row, "status")?;
        if status.is_terminal() {
            return Ok(CancelOutcome::NotActive(status));
        }
        let session = SessionId(get_str(&row, "session_id")?);
        // A delegated run cancelled on its own: its parent goes on without it.
        let parent = end_as_cancelled(&mut tx, self.lock_suffix(), id, by, now).await?;
        // Nobody will execute a queued run: messages waiting behind it move on now.
        // A running run's worker creates the follow-up when it has saved its text.
        // (A run waiting for approval has no worker either.)
        let followup = if status != RunStatus::Running {
            create_followup(&mut tx, self.lock_suffix(), limits, &session, now).await?
        } else {
            None
        };
        tx.commit().await?;
        Ok(CancelOutcome::Cancelled {
            run: ActiveRun {
                id: id.clone(),
                was_queued: status != RunStatus::Running,
            },
            followup,
            parent,
        })
    }
}

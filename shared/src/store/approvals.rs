//! Approvals (human in the loop, docs/protocol.md, "Approvals").
//!
//! Every transaction that changes a waiting run's fate takes the run's row first
//! (`update runs …` or `select … for update`): the worker suspending it, a
//! decision, an expiry. So a decision that lands while the worker is still
//! suspending is never missed — whichever commits second sees the other and the
//! run goes back to the queue.

use sqlx::any::AnyRow;

use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use crate::api::ToolCallDto;
use crate::ids::{RunId, SessionId, UserId};
use crate::time::now_ms;

pub use crate::states::ApprovalStatus;

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
    /// Approve, and let this tool run without asking for the rest of the session.
    Always,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: String,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub id: String,
    pub run_id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
    pub status: ApprovalStatus,
    pub decided_by: Option<String>,
    pub announced: bool,
    pub created_at: i64,
    pub expires_at: i64,
    pub decided_at: Option<i64>,
}

impl Approval {
    fn from_row(row: &AnyRow) -> Result<Approval> {
        Ok(Approval {
            id: get_str(row, "id")?,
            run_id: RunId(get_str(row, "run_id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            user_id: UserId(get_str(row, "user_id")?),
            step: get_i64(row, "step")? as u32,
            call_id: get_str(row, "call_id")?,
            name: get_str(row, "name")?,
            args: serde_json::from_str(&get_str(row, "args")?)
                .map_err(|e| StoreError::Other(format!("approval args: {e}")))?,
            status: get_str(row, "status")?.parse().map_err(|()| {
                StoreError::Other("an approval status the store does not know".into())
            })?,
            decided_by: get_opt_str(row, "decided_by")?,
            announced: get_i64(row, "announced")? != 0,
            created_at: get_i64(row, "created_at")?,
            expires_at: get_i64(row, "expires_at")?,
            decided_at: get_opt_i64(row, "decided_at")?,
        })
    }
}

impl Approval {
    pub fn to_dto(&self) -> crate::api::ApprovalDto {
        use crate::time::rfc3339;
        crate::api::ApprovalDto {
            id: self.id.clone(),
            run_id: self.run_id.0.clone(),
            session_id: self.session_id.0.clone(),
            step: self.step,
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            args: self.args.clone(),
            status: self.status,
            decided_by: self.decided_by.clone(),
            created_at: rfc3339(self.created_at),
            expires_at: rfc3339(self.expires_at),
            decided_at: self.decided_at.map(rfc3339),
        }
    }
}

const COLUMNS: &str = "id, run_id, session_id, user_id, step, call_id, name, args, status, decided_by, announced, created_at, expires_at, decided_at";

/// The step whose calls wait: its streamed text and all of its calls.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingStep {
    pub step: u32,
    pub content: String,
    pub tool_calls: Vec<ToolCallDto>,
}

/// After the worker hands a run over to its approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// `waiting_approval`, no owner.
    Waiting,
    /// Everything was decided meanwhile: the run is `queued` again (enqueue it).
    Decided,
    /// This worker no longer owns the run.
    Lost,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DecideOutcome {
    /// Recorded. `resume`: the run went back to the queue (enqueue its job).
    Decided { approval: Approval, resume: bool },
    /// Someone decided first: the first decision stands.
    AlreadyDecided(Approval),
    /// Too late: it expired (and counts as denied).
    Expired { approval: Approval, resume: bool },
    /// The run ended (cancelled, deleted) before anyone decided.
    RunEnded(Approval),
}

impl Store {
    /// Store a step's approvals and the step itself while this worker owns the
    /// run. `false`: ownership was lost.
    pub async fn request_approvals(
        &self,
        run: &RunId,
        worker: &str,
        pending: &PendingStep,
        approvals: &[NewApproval],
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let step_json =
            serde_json::to_string(pending).map_err(|e| StoreError::Other(e.to_string()))?;
        let owner = sqlx::query(
            "update runs set pending_step = $1, heartbeat_at = $2
             where id = $3 and worker_id = $4 and status = 'running'
             returning session_id, user_id",
        )
        .bind(&step_json)
        .bind(now)
        .bind(&run.0)
        .bind(worker)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(owner) = owner else {
            return Ok(false);
        };
        let session = get_str(&owner, "session_id")?;
        let user = get_str(&owner, "user_id")?;
        for ap in approvals {
            sqlx::query(
                "insert into approvals (id, run_id, session_id, user_id, step, call_id, name, args, status, created_at, expires_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)",
            )
            .bind(&ap.id)
            .bind(&run.0)
            .bind(&session)
            .bind(&user)
            .bind(pending.step as i64)
            .bind(&ap.call_id)
            .bind(&ap.name)
            .bind(ap.args.to_string())
            .bind(now)
            .bind(ap.expires_at)
            .execute(&mut **tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Release the run to its approvals: `waiting_approval` with no owner, or
    /// straight back to `queued` when nothing is pending any more. The attempt
    /// count starts again: waiting is progress, not a crash.
    pub async fn wait_for_approvals(
        &self,
        run: &RunId,
        worker: &str,
        seq: u64,
    ) -> Result<WaitOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let owned = sqlx::query(
            "update runs set status = 'waiting_approval', worker_id = null, attempt = 0,
                 last_seq = case when last_seq > $1 then last_seq else $1 end
             where id = $2 and worker_id = $3 and status = 'running'",
        )
        .bind(seq as i64)
        .bind(&run.0)
        .bind(worker)
        .execute(&mut **tx)
        .await?;
        if owned.rows_affected() == 0 {
            return Ok(WaitOutcome::Lost);
        }
        let open = open_or_unannounced(&mut tx, run).await?;
        let outcome = if open.pending == 0 || open.unannounced > 0 {
            sqlx::query("update runs set status = 'queued', enqueued_at = $1 where id = $2")
                .bind(now)
                .bind(&run.0)
                .execute(&mut **tx)
                .await?;
            WaitOutcome::Decided
        } else {
            WaitOutcome::Waiting
        };
        tx.commit().await?;
        Ok(outcome)
    }

    pub async fn step_approvals(&self, run: &RunId, step: u32) -> Result<Vec<Approval>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from approvals where run_id = $1 and step = $2 order by created_at, id"
        )))
        .bind(&run.0)
        .bind(step as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Approval::from_row).collect()
    }

    pub async fn mark_announced(&self, ids: &[String]) -> Result<()> {
        let _gate = self.write_gate().await;
        for id in ids {
            sqlx::query("update approvals set announced = 1 where id = $1")
                .bind(id)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// The pending approvals of a session (its owner's or an admin's view).
    pub async fn session_approvals(&self, session: &SessionId) -> Result<Vec<Approval>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from approvals where session_id = $1 and status = 'pending' order by created_at, id"
        )))
        .bind(&session.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Approval::from_row).collect()
    }

    /// Tools the session allows without asking (`always`).
    pub async fn session_tool_grants(&self, session: &SessionId) -> Result<Vec<String>> {
        let rows = sqlx::query("select tool from session_tool_grants where session_id = $1")
            .bind(&session.0)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| get_str(r, "tool")).collect()
    }

    /// Record a decision. `caller` must own the session unless `admin`; anyone
    /// else gets `NotFound`, as for an approval that does not exist.
    /// `traceparent`: the deciding request's trace context, kept on the run
    /// (`resumed_by`) for the stretch that resumes it to link to.
    pub async fn decide_approval(
        &self,
        id: &str,
        caller: &UserId,
        admin: bool,
        decided_by: &str,
        decision: Decision,
        traceparent: Option<&str>,
    ) -> Result<DecideOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let found = sqlx::query("select run_id, user_id from approvals where id = $1")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        if !admin && get_str(&found, "user_id")? != caller.0 {
            return Err(StoreError::NotFound);
        }
        let run = RunId(get_str(&found, "run_id")?);
        // The run's row first: see the module docs.
        let status = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select status from runs where id = $1{}",
            self.lock_suffix()
        )))
        .bind(&run.0)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| get_str(&r, "status"))
        .transpose()?;
        let approval = load(&mut tx, id).await?;
        let active = matches!(
            status.as_deref(),
            Some("queued" | "running" | "waiting_approval")
        );
        match approval.status {
            ApprovalStatus::Pending => {}
            ApprovalStatus::Expired => {
                return Ok(DecideOutcome::Expired {
                    approval,
                    resume: false,
                });
            }
            ApprovalStatus::Approved | ApprovalStatus::Denied => {
                return Ok(DecideOutcome::AlreadyDecided(approval));
            }
        }
        if !active {
            return Ok(DecideOutcome::RunEnded(approval));
        }
        let expired = approval.expires_at <= now;
        let (new_status, by) = match (expired, decision) {
            (true, _) => (ApprovalStatus::Expired, None),
            (false, Decision::Deny) => (ApprovalStatus::Denied, Some(decided_by)),
            (false, Decision::Approve | Decision::Always) => {
                (ApprovalStatus::Approved, Some(decided_by))
            }
        };
        sqlx::query(
            "update approvals set status = $1, decided_by = $2, decided_at = $3 where id = $4",
        )
        .bind(new_status.as_str())
        .bind(by)
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await?;
        if decision == Decision::Always && !expired {
            sqlx::query(
                "insert into session_tool_grants (session_id, tool, granted_by, created_at)
                 values ($1, $2, $3, $4) on conflict (session_id, tool) do nothing",
            )
            .bind(&approval.session_id.0)
            .bind(&approval.name)
            .bind(decided_by)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        }
        if let Some(traceparent) = traceparent {
            sqlx::query("update runs set resumed_by = $1 where id = $2")
                .bind(traceparent)
                .bind(&run.0)
                .execute(&mut **tx)
                .await?;
        }
        let resume = requeue_waiting(&mut tx, &run, now).await?;
        let approval = load(&mut tx, id).await?;
        tx.commit().await?;
        Ok(if expired {
            DecideOutcome::Expired { approval, resume }
        } else {
            DecideOutcome::Decided { approval, resume }
        })
    }

    /// Pending approvals past their time become `expired` (a denial); their runs
    /// go back to the queue. Returns the runs to enqueue.
    pub async fn expire_approvals(&self, now: i64) -> Result<Vec<RunId>> {
        let runs = sqlx::query(
            "select distinct run_id from approvals where status = 'pending' and expires_at <= $1",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        let mut resumed = Vec::new();
        for row in runs {
            let run = RunId(get_str(&row, "run_id")?);
            let mut tx = self.begin().await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "select status from runs where id = $1{}",
                self.lock_suffix()
            )))
            .bind(&run.0)
            .fetch_optional(&mut **tx)
            .await?;
            sqlx::query(
                "update approvals set status = 'expired', decided_at = $1
                 where run_id = $2 and status = 'pending' and expires_at <= $1",
            )
            .bind(now)
            .bind(&run.0)
            .execute(&mut **tx)
            .await?;
            if requeue_waiting(&mut tx, &run, now).await? {
                resumed.push(run);
            }
            tx.commit().await?;
        }
        Ok(resumed)
    }
}

struct Open {
    pending: i64,
    unannounced: i64,
}

async fn open_or_unannounced(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    run: &RunId,
) -> Result<Open> {
    let row = sqlx::query(
        "select
             coalesce(sum(case when status = 'pending' then 1 else 0 end), 0) as pending,
             coalesce(sum(case when status <> 'pending' and announced = 0 then 1 else 0 end), 0) as unannounced
         from approvals where run_id = $1 and step = (select max(step) from approvals where run_id = $1)",
    )
    .bind(&run.0)
    .fetch_one(&mut **tx)
    .await?;
    Ok(Open {
        pending: get_i64(&row, "pending")?,
        unannounced: get_i64(&row, "unannounced")?,
    })
}

/// A waiting run goes back to the queue so a worker announces the decision and
/// goes on (or waits again for the rest).
async fn requeue_waiting(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    run: &RunId,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "update runs set status = 'queued', enqueued_at = $1 where id = $2 and status = 'waiting_approval'",
    )
    .bind(now)
    .bind(&run.0)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn load(tx: &mut sqlx::Transaction<'static, sqlx::Any>, id: &str) -> Result<Approval> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select {COLUMNS} from approvals where id = $1"
    )))
    .bind(id)
    .fetch_one(&mut **tx)
    .await?;
    Approval::from_row(&row)
}

/// `runs.pending_step` (JSON) as the step it names.
pub(super) fn parse_pending_step(json: Option<String>) -> Result<Option<PendingStep>> {
    json.map(|j| {
        serde_json::from_str(&j).map_err(|e| StoreError::Other(format!("pending_step: {e}")))
    })
    .transpose()
}

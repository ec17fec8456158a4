//! Approvals (human in the loop, docs/protocol.md, "Approvals"): one kind of
//! wait. How a step waits, is suspended and resumed, and the race rule every
//! decision follows, are in `waits.rs`.

use sqlx::any::AnyRow;

use super::waits::{Asked, WaitKind};
use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::ids::{RunId, SessionId, UserId};

pub use weft_wire::states::ApprovalStatus;

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

impl WaitKind for Approval {
    const TABLE: &'static str = "approvals";
    const COLUMNS: &'static str = COLUMNS;

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
    pub fn to_dto(&self) -> weft_wire::api::ApprovalDto {
        use weft_wire::time::rfc3339;
        weft_wire::api::ApprovalDto {
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
    pub async fn step_approvals(&self, run: &RunId, step: u32) -> Result<Vec<Approval>> {
        self.step_waits(run, step).await
    }

    /// The pending approvals of a session (its owner's or an admin's view).
    pub async fn session_approvals(&self, session: &SessionId) -> Result<Vec<Approval>> {
        self.open_session_waits(session).await
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
        let mut taken = self.take_wait::<Approval>(id, caller, admin).await?;
        let approval = taken.wait.clone();
        let now = taken.now;
        let active = taken.run_status.is_some_and(|s| !s.is_terminal());
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
        .execute(&mut *taken.tx)
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
            .execute(&mut *taken.tx)
            .await?;
        }
        let (approval, resume) = taken.settle(id, traceparent).await?;
        Ok(if expired {
            DecideOutcome::Expired { approval, resume }
        } else {
            DecideOutcome::Decided { approval, resume }
        })
    }
}

/// A step's approvals, in the transaction that stores the step (`waits.rs`).
pub(super) async fn insert_approvals(
    tx: &mut crate::TxConn,
    asked: &Asked<'_>,
    approvals: &[NewApproval],
) -> Result<()> {
    for ap in approvals {
        sqlx::query(
            "insert into approvals (id, run_id, session_id, user_id, step, call_id, name, args, status, created_at, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)",
        )
        .bind(&ap.id)
        .bind(&asked.run.0)
        .bind(asked.session)
        .bind(asked.user)
        .bind(asked.step as i64)
        .bind(&ap.call_id)
        .bind(&ap.name)
        .bind(ap.args.to_string())
        .bind(asked.now)
        .bind(ap.expires_at)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

//! Plans (plan mode, docs/protocol.md, "Plans"): the third kind of wait beside
//! approvals and questions. A run in plan mode researches with read-only tools
//! and ends its planning by proposing a plan (its step's text); the run waits
//! for the first decision. How a step waits, is suspended and resumed, and the
//! race rule every decision follows, are in `waits.rs`.

use sqlx::any::AnyRow;

use super::questions::Answerer;
use super::waits::{Asked, Owned, WaitKind};
use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::MAX_PLAN_COMMENT_CHARS;
use weft_wire::ids::{RunId, SessionId, UserId};

pub use weft_wire::states::{PlanDecision, PlanStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct NewPlan {
    pub id: String,
    /// The `propose_plan` call the decision answers.
    pub call_id: String,
    pub markdown: String,
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub id: String,
    pub run_id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub step: u32,
    pub call_id: String,
    pub markdown: String,
    pub status: PlanStatus,
    pub comment: Option<String>,
    pub decided_by: Option<String>,
    /// What made the decision, when its front door named it (`lark:<message
    /// id>`).
    pub decision_key: Option<String>,
    pub announced: bool,
    pub created_at: i64,
    pub expires_at: i64,
    pub decided_at: Option<i64>,
}

const COLUMNS: &str = "id, run_id, session_id, user_id, step, call_id, markdown, status, comment, decided_by, decision_key, announced, created_at, expires_at, decided_at";

impl WaitKind for Plan {
    const TABLE: &'static str = "plans";
    const COLUMNS: &'static str = COLUMNS;
    const OPEN: &'static str = "proposed";

    fn from_row(row: &AnyRow) -> Result<Plan> {
        Ok(Plan {
            id: get_str(row, "id")?,
            run_id: RunId(get_str(row, "run_id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            user_id: UserId(get_str(row, "user_id")?),
            step: get_i64(row, "step")? as u32,
            call_id: get_str(row, "call_id")?,
            markdown: get_str(row, "markdown")?,
            status: get_str(row, "status")?
                .parse()
                .map_err(|()| StoreError::Other("a plan status the store does not know".into()))?,
            comment: get_opt_str(row, "comment")?,
            decided_by: get_opt_str(row, "decided_by")?,
            decision_key: get_opt_str(row, "decision_key")?,
            announced: get_i64(row, "announced")? != 0,
            created_at: get_i64(row, "created_at")?,
            expires_at: get_i64(row, "expires_at")?,
            decided_at: get_opt_i64(row, "decided_at")?,
        })
    }
}

impl Owned for Plan {
    fn owner(&self) -> &UserId {
        &self.user_id
    }
}

impl Plan {
    pub fn to_dto(&self) -> weft_wire::api::PlanDto {
        use weft_wire::time::rfc3339;
        weft_wire::api::PlanDto {
            id: self.id.clone(),
            run_id: self.run_id.0.clone(),
            session_id: self.session_id.0.clone(),
            step: self.step,
            markdown: self.markdown.clone(),
            status: self.status,
            comment: self.comment.clone(),
            decided_by: self.decided_by.clone(),
            created_at: rfc3339(self.created_at),
            expires_at: rfc3339(self.expires_at),
            decided_at: self.decided_at.map(rfc3339),
        }
    }
}

/// A decision's comment as kept (trimmed, empty as none), or why it is not
/// one: a revise must say what to change; no comment may pass
/// [`MAX_PLAN_COMMENT_CHARS`].
pub fn accept_comment(
    decision: PlanDecision,
    comment: Option<String>,
) -> std::result::Result<Option<String>, String> {
    let comment = comment
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty());
    if let Some(c) = &comment
        && c.chars().count() > MAX_PLAN_COMMENT_CHARS
    {
        return Err(format!(
            "a comment of {} characters is over the limit of {MAX_PLAN_COMMENT_CHARS}",
            c.chars().count()
        ));
    }
    if decision == PlanDecision::Revise && comment.is_none() {
        return Err("a revise needs a comment that says what to change".into());
    }
    Ok(comment)
}

#[derive(Debug, Clone, PartialEq)]
pub enum PlanOutcome {
    /// Recorded. `resume`: the run went back to the queue (enqueue its job).
    Decided { plan: Plan, resume: bool },
    /// Someone decided first: the first decision stands.
    AlreadyDecided(Plan),
    /// Too late: it expired (the run ended with it as its reply).
    Expired { plan: Plan, resume: bool },
    /// The run ended (cancelled, deleted) before anyone decided.
    RunEnded(Plan),
    /// Not a decision this plan takes; the message says why.
    Invalid { plan: Plan, why: String },
}

impl Store {
    pub async fn step_plans(&self, run: &RunId, step: u32) -> Result<Vec<Plan>> {
        self.step_waits(run, step).await
    }

    /// Every plan a run proposed, in the order proposed.
    pub async fn run_plans(&self, run: &RunId) -> Result<Vec<Plan>> {
        self.run_waits(run).await
    }

    /// The open plans of a session (its owner's or an admin's view).
    pub async fn session_plans(&self, session: &SessionId) -> Result<Vec<Plan>> {
        self.open_session_waits(session).await
    }

    /// A plan by id, for `caller` (its session's owner, or an admin): anyone
    /// else gets `NotFound`, as for one that does not exist.
    pub async fn plan(&self, id: &str, caller: &UserId, admin: bool) -> Result<Plan> {
        self.wait_for(id, caller, admin).await
    }

    /// The plan decided by what `key` names (`lark:<message id>`), if any: a
    /// message handled again after a crash is that decision, not a new message.
    pub async fn plan_decided_by(&self, key: &str) -> Result<Option<Plan>> {
        self.wait_keyed("decision_key", key).await
    }

    /// Record a decision; the first one stands. `who` must own the session
    /// unless an admin; anyone else gets `NotFound`. `key` names what made the
    /// decision where the front door can (a Lark message): a decision already
    /// recorded under the same key is this one, `Decided` again.
    pub async fn decide_plan(
        &self,
        id: &str,
        who: &Answerer<'_>,
        decision: PlanDecision,
        comment: Option<String>,
        key: Option<&str>,
        traceparent: Option<&str>,
    ) -> Result<PlanOutcome> {
        let mut taken = self.take_wait::<Plan>(id, who.user, who.admin).await?;
        let plan = taken.wait.clone();
        let now = taken.now;
        match plan.status {
            PlanStatus::Proposed => {}
            PlanStatus::Expired => {
                return Ok(PlanOutcome::Expired {
                    plan,
                    resume: false,
                });
            }
            _ if key.is_some() && plan.decision_key.as_deref() == key => {
                return Ok(PlanOutcome::Decided {
                    plan,
                    resume: false,
                });
            }
            _ => return Ok(PlanOutcome::AlreadyDecided(plan)),
        }
        if taken.run_status.is_none_or(|s| s.is_terminal()) {
            return Ok(PlanOutcome::RunEnded(plan));
        }
        let expired = plan.expires_at <= now;
        let comment = if expired {
            None
        } else {
            match accept_comment(decision, comment) {
                Ok(c) => c,
                Err(why) => return Ok(PlanOutcome::Invalid { plan, why }),
            }
        };
        let new_status = if expired {
            PlanStatus::Expired
        } else {
            decision.status()
        };
        sqlx::query(
            "update plans set status = $1, comment = $2, decided_by = $3, decided_at = $4, decision_key = $5
             where id = $6",
        )
        .bind(new_status.as_str())
        .bind(comment)
        .bind((!expired).then_some(who.name))
        .bind(now)
        .bind(key.filter(|_| !expired))
        .bind(id)
        .execute(&mut *taken.tx)
        .await?;
        let (plan, resume) = taken.settle(id, traceparent.filter(|_| !expired)).await?;
        Ok(if expired {
            PlanOutcome::Expired { plan, resume }
        } else {
            PlanOutcome::Decided { plan, resume }
        })
    }

    /// Records the Lark card that shows `plan`.
    pub async fn record_lark_plan_card(&self, plan: &str, message_id: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update plans set lark_message_id = $1 where id = $2")
            .bind(message_id)
            .bind(plan)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// The Lark card that shows `plan`, once recorded.
    pub async fn lark_plan_card(&self, plan: &str) -> Result<Option<String>> {
        let row = sqlx::query("select lark_message_id from plans where id = $1")
            .bind(plan)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row
            .map(|r| get_opt_str(&r, "lark_message_id"))
            .transpose()?
            .flatten())
    }
}

/// A step's plan, in the transaction that stores the step (`waits.rs`).
pub(super) async fn insert_plans(
    tx: &mut crate::TxConn,
    asked: &Asked<'_>,
    plans: &[NewPlan],
) -> Result<()> {
    for p in plans {
        sqlx::query(
            "insert into plans (id, run_id, session_id, user_id, step, call_id, markdown, status, created_at, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, 'proposed', $8, $9)",
        )
        .bind(&p.id)
        .bind(&asked.run.0)
        .bind(asked.session)
        .bind(asked.user)
        .bind(asked.step as i64)
        .bind(&p.call_id)
        .bind(&p.markdown)
        .bind(asked.now)
        .bind(p.expires_at)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

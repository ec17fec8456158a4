//! Waits: a run suspended on people or on other runs (issue 24). A step may
//! wait for four kinds of answer — approvals of its `confirm` calls
//! (`approvals.rs`), answers to the questions the agent asked (`questions.rs`,
//! `ask_user`), the decision on a plan it proposed (`plans.rs`, plan mode) and
//! the end of the runs it delegated to other agents (`delegations.rs`,
//! `delegate`). All kinds share one protocol, written here once:
//!
//! 1. **Store**: while the worker still owns the run, the step (its text and
//!    every call, `runs.pending_step`) and its waits are written in one
//!    transaction ([`Store::store_waits`]); only then are they announced, so an
//!    answer as quick as the event finds its row.
//! 2. **Suspend**: the worker hands the run over ([`Store::suspend_run`]):
//!    `waiting_input` when a question or a plan is open, else `waiting_approval`
//!    when an approval is, else `waiting_agents`, with no owner — or straight back to `queued` when everything was answered
//!    meanwhile. The attempt count starts again: waiting is progress, not a
//!    crash.
//! 3. **Answer**: each decision, answer or expiry records itself and puts a
//!    waiting run back on the queue ([`requeue_waiting`]); the worker that
//!    claims it announces what was answered (`approval_decided`,
//!    `question_answered`, `plan_decided`, `agent_end`: the run's log keeps one
//!    writer and gapless seqs)
//!    and waits again while anything is open, or goes on with the step.
//!
//! **The race rule.** Every transaction that changes a waiting run's fate takes
//! the run's row first ([`lock_run`], or an `update runs …`): the worker
//! suspending it, a decision, an answer, an expiry, a delegated run's end. So
//! an answer that lands
//! while the worker is still suspending is never missed — whichever commits
//! second sees the other, and the run goes back to the queue.

use super::approvals::insert_approvals;
use super::delegations::insert_delegations;
use super::plans::insert_plans;
use super::questions::insert_questions;
use super::{Result, Store, StoreError, get_i64, get_opt_str, get_str};
use crate::{NewApproval, NewDelegation, NewPlan, NewQuestion};
use weft_wire::api::ToolCallDto;
use weft_wire::ids::RunId;
use weft_wire::states::RunStatus;
use weft_wire::time::now_ms;

mod kind;

pub(super) use kind::{Owned, WaitKind};

type Tx = crate::TxConn;

/// The step whose calls wait: its streamed text and all of its calls.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingStep {
    pub step: u32,
    pub content: String,
    pub tool_calls: Vec<ToolCallDto>,
    /// The model's reasoning before the calls, sent back with them when the
    /// step resumes (absent in steps stored before migration 0031).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<weft_wire::reasoning::Reasoning>,
}

/// What a step waits for, of each kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewWaits {
    pub approvals: Vec<NewApproval>,
    pub questions: Vec<NewQuestion>,
    pub plans: Vec<NewPlan>,
    pub delegations: Vec<NewDelegation>,
}

/// Answered waits a resuming worker published, of each kind (ids).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Announced {
    pub approvals: Vec<String>,
    pub questions: Vec<String>,
    pub plans: Vec<String>,
    pub delegations: Vec<String>,
}

/// After the worker hands a run over to its waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// `waiting_approval`, `waiting_input` or `waiting_agents`, no owner.
    Waiting,
    /// Everything was answered meanwhile: the run is `queued` again (enqueue
    /// it).
    Decided,
    /// This worker no longer owns the run.
    Lost,
}

impl Store {
    /// Store a step and what it waits for while this worker owns the run.
    /// `false`: ownership was lost.
    pub async fn store_waits(
        &self,
        run: &RunId,
        worker: &str,
        pending: &PendingStep,
        waits: &NewWaits,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let step_json =
            serde_json::to_string(pending).map_err(|e| StoreError::Other(e.to_string()))?;
        let owner = sqlx::query(
            "update runs set pending_step = $1, heartbeat_at = $2
             where id = $3 and worker_id = $4 and status = 'running'
             returning session_id, user_id, depth, schedule_id",
        )
        .bind(&step_json)
        .bind(now)
        .bind(&run.0)
        .bind(worker)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(owner) = owner else {
            return Ok(false);
        };
        let session = get_str(&owner, "session_id")?;
        let user = get_str(&owner, "user_id")?;
        let asked = Asked {
            run,
            session: &session,
            user: &user,
            step: pending.step,
            now,
        };
        insert_approvals(&mut tx, &asked, &waits.approvals).await?;
        insert_questions(&mut tx, &asked, &waits.questions).await?;
        insert_plans(&mut tx, &asked, &waits.plans).await?;
        let depth = get_i64(&owner, "depth")?;
        insert_delegations(&mut tx, &asked, depth, &waits.delegations).await?;
        if let Some(body) = waiting_words(waits) {
            let key = format!("{}:{}:wait", run.0, pending.step);
            match get_opt_str(&owner, "schedule_id")? {
                Some(_) => {
                    self.notify_scheduled(
                        &mut tx,
                        run,
                        weft_wire::api::NotificationKind::ScheduleWaiting,
                        &key,
                        &body,
                        now,
                    )
                    .await?
                }
                None => {
                    self.notify_run_waiting(&mut tx, run, &key, &body, now)
                        .await?
                }
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Release the run to its waits: `waiting_input` (a question or a plan is
    /// open), `waiting_approval` (an approval is) or `waiting_agents` (only
    /// delegated runs are), with no owner; or straight back to `queued` when
    /// nothing is open any more or an answer is still to be announced.
    pub async fn suspend_run(&self, run: &RunId, worker: &str, seq: u64) -> Result<WaitOutcome> {
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
        .execute(&mut *tx)
        .await?;
        if owned.rows_affected() == 0 {
            return Ok(WaitOutcome::Lost);
        }
        // Counted only now, with the row taken: folding the count into the
        // update above would read the waits from before an answer that holds
        // the row and commits while that update waits for it (Postgres re-checks
        // the row, not a subquery's snapshot), and the run would wait for an
        // answer already given. Hence the second write below.
        let open = open_waits(&mut tx, run).await?;
        let outcome = if open.pending == 0 || open.unannounced > 0 {
            sqlx::query("update runs set status = 'queued', enqueued_at = $1 where id = $2")
                .bind(now)
                .bind(&run.0)
                .execute(&mut *tx)
                .await?;
            WaitOutcome::Decided
        } else {
            let status = if open.questions > 0 {
                RunStatus::WaitingInput
            } else if open.approvals > 0 {
                RunStatus::WaitingApproval
            } else {
                RunStatus::WaitingAgents
            };
            if status != RunStatus::WaitingApproval {
                sqlx::query("update runs set status = $1 where id = $2")
                    .bind(status.as_str())
                    .bind(&run.0)
                    .execute(&mut *tx)
                    .await?;
            }
            WaitOutcome::Waiting
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// Open approvals, questions and plans past their time become `expired`;
    /// their runs go back to the queue. Returns the runs to enqueue.
    pub async fn expire_waits(&self, now: i64) -> Result<Vec<RunId>> {
        let runs = sqlx::query(
            "select run_id from approvals where status = 'pending' and expires_at <= $1
             union
             select run_id from questions where status = 'pending' and expires_at <= $1
             union
             select run_id from plans where status = 'proposed' and expires_at <= $1",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        let mut resumed = Vec::new();
        for row in runs {
            let run = RunId(get_str(&row, "run_id")?);
            let mut tx = self.begin().await?;
            lock_run(&mut tx, self.lock_suffix(), &run).await?;
            sqlx::query(
                "update approvals set status = 'expired', decided_at = $1
                 where run_id = $2 and status = 'pending' and expires_at <= $1",
            )
            .bind(now)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "update questions set status = 'expired', answered_at = $1
                 where run_id = $2 and status = 'pending' and expires_at <= $1",
            )
            .bind(now)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "update plans set status = 'expired', decided_at = $1
                 where run_id = $2 and status = 'proposed' and expires_at <= $1",
            )
            .bind(now)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
            if requeue_waiting(&mut tx, &run, now).await? {
                resumed.push(run);
            }
            tx.commit().await?;
        }
        Ok(resumed)
    }
}

/// Who and what a step's new waits belong to.
pub(super) struct Asked<'a> {
    pub run: &'a RunId,
    pub session: &'a str,
    pub user: &'a str,
    pub step: u32,
    pub now: i64,
}

/// The run's row, locked (Postgres) before anything about its waits changes:
/// see the module docs. Its status, `None` when the run is gone.
pub(super) async fn lock_run(
    tx: &mut Tx,
    lock_suffix: &str,
    run: &RunId,
) -> Result<Option<RunStatus>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select status from runs where id = $1{lock_suffix}"
    )))
    .bind(&run.0)
    .fetch_optional(&mut *tx)
    .await?;
    row.map(|r| {
        get_str(&r, "status")?
            .parse::<RunStatus>()
            .map_err(|()| StoreError::Other("a run status the store does not know".into()))
    })
    .transpose()
}

struct Open {
    /// Waits of the newest step still open.
    pending: i64,
    /// Of them, questions and plans (the run waits for input).
    questions: i64,
    /// Of them, approvals.
    approvals: i64,
    /// Answered, and not announced yet.
    unannounced: i64,
}

/// The newest waiting step's waits, of every kind.
async fn open_waits(tx: &mut Tx, run: &RunId) -> Result<Open> {
    let row = sqlx::query(
        "with w as (
             select step, status, announced, 0 as question, 1 as approval from approvals where run_id = $1
             union all
             select step, status, announced, 1 as question, 0 as approval from questions where run_id = $1
             union all
             select step, case when status = 'proposed' then 'pending' else status end,
                 announced, 1 as question, 0 as approval from plans where run_id = $1
             union all
             select step, case when status = 'running' then 'pending' else status end,
                 announced, 0 as question, 0 as approval from delegations where run_id = $1
         )
         select
             coalesce(sum(case when status = 'pending' then 1 else 0 end), 0) as pending,
             coalesce(sum(case when status = 'pending' then question else 0 end), 0) as questions,
             coalesce(sum(case when status = 'pending' then approval else 0 end), 0) as approvals,
             coalesce(sum(case when status <> 'pending' and announced = 0 then 1 else 0 end), 0) as unannounced
         from w where step = (select max(step) from w)",
    )
    .bind(&run.0)
    .fetch_one(&mut *tx)
    .await?;
    Ok(Open {
        pending: get_i64(&row, "pending")?,
        questions: get_i64(&row, "questions")?,
        approvals: get_i64(&row, "approvals")?,
        unannounced: get_i64(&row, "unannounced")?,
    })
}

/// A waiting run goes back to the queue so a worker announces what was
/// answered and goes on (or waits again for the rest). `true`: it was waiting.
pub(super) async fn requeue_waiting(tx: &mut Tx, run: &RunId, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "update runs set status = 'queued', enqueued_at = $1
         where id = $2 and status in ('waiting_approval', 'waiting_input', 'waiting_agents')",
    )
    .bind(now)
    .bind(&run.0)
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// `runs.pending_step` (JSON) as the step it names.
pub(super) fn parse_pending_step(json: Option<String>) -> Result<Option<PendingStep>> {
    json.map(|j| {
        serde_json::from_str(&j).map_err(|e| StoreError::Other(format!("pending_step: {e}")))
    })
    .transpose()
}

impl Store {
    /// Marks answered waits announced (the resuming worker published them).
    pub async fn mark_announced(&self, done: &Announced) -> Result<()> {
        if done.approvals.is_empty()
            && done.questions.is_empty()
            && done.plans.is_empty()
            && done.delegations.is_empty()
        {
            return Ok(());
        }
        let mut w = self.writer().await?;
        for (table, ids) in [
            ("approvals", &done.approvals),
            ("questions", &done.questions),
            ("plans", &done.plans),
            ("delegations", &done.delegations),
        ] {
            for id in ids {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "update {table} set announced = 1 where id = $1"
                )))
                .bind(id)
                .execute(&mut *w)
                .await?;
            }
        }
        Ok(())
    }
}

/// What a scheduled run's owner is asked for, in words (none: it only waits
/// for the runs it delegated).
fn waiting_words(waits: &NewWaits) -> Option<String> {
    if !waits.approvals.is_empty() {
        let names: Vec<&str> = waits.approvals.iter().map(|a| a.name.as_str()).collect();
        return Some(format!("waits for your approval: {}", names.join(", ")));
    }
    if let Some(q) = waits.questions.first() {
        return Some(format!("asks you: {}", q.question));
    }
    if !waits.plans.is_empty() {
        return Some("proposes a plan for you to decide on".into());
    }
    None
}

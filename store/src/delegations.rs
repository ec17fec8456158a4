//! Delegations (`delegate`, docs/protocol.md, "Delegation"): the fourth kind of
//! wait beside approvals, questions and plans, and the only one another run
//! answers rather than a person. A step that delegates stores, in the one
//! transaction that stores the step ([`Store::store_waits`]), each task as a
//! run of its own: a child session of the same person (not listed with their
//! conversations; deleted with its parent's), the task as its user message, a
//! `queued` run that names its parent and its depth. The parent waits as
//! `waiting_agents`, holding no worker. A child's end — in the transaction that
//! ends it (finish, exhausted attempts, cancel, deletion) — settles its
//! delegation and puts the parent back on the queue, taking the parent's row
//! first (the race rule of `waits.rs`). A child lost before it was enqueued is
//! a queued run like any other: the reaper enqueues it.
//!
//! Lock order: a child's end holds the child's session and run, then takes
//! the parent's run; a cancel of the parent commits first and cancels its
//! children in transactions of their own ([`Store::cancel_children`]), so the
//! two never wait for each other.

use sqlx::any::AnyRow;

use super::messages::{NEXT_SEQ, order_key};
use super::runs::ACTIVE;
use super::send::auto_title;
use super::session_writes::{end_as_cancelled, insert_run, lock_session, touch_session};
use super::waits::{Asked, Owned, WaitKind, lock_run, requeue_waiting};
use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use crate::runs::ActiveRun;
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};
use weft_wire::time::now_ms;

pub use weft_wire::states::DelegationStatus;

type Tx = crate::TxConn;

/// The longest child answer kept for its parent, in characters (it goes back
/// to the parent's model as the call's result).
pub const MAX_RESULT_CHARS: usize = 60_000;

/// A task to hand to another agent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDelegation {
    pub id: String,
    /// The `delegate` call the child's answer is the result of.
    pub call_id: String,
    /// The agent that does the task.
    pub agent: String,
    pub task: String,
    /// The model of the child's session and run.
    pub model: String,
    /// The child's session and run, named by the worker (as it names the
    /// other waits) so it can announce them once stored.
    pub child_session: SessionId,
    pub child_run: RunId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    pub id: String,
    /// The delegating run.
    pub run_id: RunId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub step: u32,
    pub call_id: String,
    pub agent: String,
    pub task: String,
    pub child_session_id: SessionId,
    pub child_run_id: RunId,
    pub status: DelegationStatus,
    /// The child's answer, or what went wrong; once it ended.
    pub result: Option<String>,
    pub announced: bool,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, run_id, session_id, user_id, step, call_id, agent, task, child_session_id, child_run_id, status, result, announced, created_at, finished_at";

impl WaitKind for Delegation {
    const TABLE: &'static str = "delegations";
    const COLUMNS: &'static str = COLUMNS;
    const OPEN: &'static str = "running";

    fn from_row(row: &AnyRow) -> Result<Delegation> {
        Ok(Delegation {
            id: get_str(row, "id")?,
            run_id: RunId(get_str(row, "run_id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            user_id: UserId(get_str(row, "user_id")?),
            step: get_i64(row, "step")? as u32,
            call_id: get_str(row, "call_id")?,
            agent: get_str(row, "agent")?,
            task: get_str(row, "task")?,
            child_session_id: SessionId(get_str(row, "child_session_id")?),
            child_run_id: RunId(get_str(row, "child_run_id")?),
            status: get_str(row, "status")?.parse().map_err(|()| {
                StoreError::Other("a delegation status the store does not know".into())
            })?,
            result: get_opt_str(row, "result")?,
            announced: get_i64(row, "announced")? != 0,
            created_at: get_i64(row, "created_at")?,
            finished_at: get_opt_i64(row, "finished_at")?,
        })
    }
}

impl Delegation {
    pub fn to_dto(&self) -> weft_wire::api::DelegationDto {
        use weft_wire::time::rfc3339;
        weft_wire::api::DelegationDto {
            id: self.id.clone(),
            run_id: self.run_id.0.clone(),
            session_id: self.session_id.0.clone(),
            step: self.step,
            call_id: self.call_id.clone(),
            agent: self.agent.clone(),
            task: self.task.clone(),
            child_session_id: self.child_session_id.0.clone(),
            child_run_id: self.child_run_id.0.clone(),
            status: self.status,
            created_at: rfc3339(self.created_at),
            finished_at: self.finished_at.map(rfc3339),
        }
    }
}

impl Owned for Delegation {
    fn owner(&self) -> &UserId {
        &self.user_id
    }
}

/// The children of a step that delegates, made with it (`store_waits`):
/// `depth` is the delegating run's.
pub(super) async fn insert_delegations(
    tx: &mut Tx,
    asked: &Asked<'_>,
    depth: i64,
    list: &[NewDelegation],
) -> Result<()> {
    let user = UserId(asked.user.to_string());
    for d in list {
        let (session, run) = (&d.child_session, &d.child_run);
        // Titled as a session is by its first message.
        let title = auto_title(&d.task);
        sqlx::query(
            "insert into sessions (id, user_id, title, title_lower, model, agent, source, created_at, updated_at, parent_session_id)
             values ($1, $2, $3, $4, $5, $6, 'delegate', $7, $7, $8)",
        )
        .bind(&session.0)
        .bind(&user.0)
        .bind(&title)
        .bind(title.to_lowercase())
        .bind(&d.model)
        .bind(&d.agent)
        .bind(asked.now)
        .bind(asked.session)
        .execute(&mut *tx)
        .await?;
        insert_run(tx, run, session, &user, &d.model, &d.agent, None, asked.now).await?;
        sqlx::query("update runs set parent_run_id = $1, depth = $2 where id = $3")
            .bind(&asked.run.0)
            .bind(depth + 1)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
        let message = MessageId::new();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "insert into messages (id, session_id, role, content, run_id, queued, created_at, ord, author_id, seq)
             values ($1, $2, 'user', $3, $4, 0, $5, $6, $7, {NEXT_SEQ})"
        )))
        .bind(&message.0)
        .bind(&session.0)
        .bind(&d.task)
        .bind(&run.0)
        .bind(asked.now)
        .bind(order_key(Some(run), "user", 0, &message))
        .bind(&user.0)
        .execute(&mut *tx)
        .await?;
        touch_session(tx, session, asked.now)?;
        sqlx::query(
            "insert into delegations (id, run_id, session_id, user_id, step, call_id, agent, task,
                 child_session_id, child_run_id, status, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'running', $11)",
        )
        .bind(&d.id)
        .bind(&asked.run.0)
        .bind(asked.session)
        .bind(asked.user)
        .bind(asked.step as i64)
        .bind(&d.call_id)
        .bind(&d.agent)
        .bind(&d.task)
        .bind(&session.0)
        .bind(&run.0)
        .bind(asked.now)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// A delegated run ended as `status` (`result`: its answer, or what went
/// wrong): its delegation records it — the first end recorded stands — and
/// its parent, if it was waiting, goes back to the queue (the parent's row
/// taken first). The parent to enqueue, if any. Nothing for a run nobody
/// delegated.
pub(super) async fn settle_child(
    tx: &mut Tx,
    lock_suffix: &str,
    child: &RunId,
    status: DelegationStatus,
    result: &str,
    now: i64,
) -> Result<Option<RunId>> {
    let Some(row) = sqlx::query("select run_id from delegations where child_run_id = $1")
        .bind(&child.0)
        .fetch_optional(&mut *tx)
        .await?
    else {
        return Ok(None);
    };
    let parent = RunId(get_str(&row, "run_id")?);
    lock_run(tx, lock_suffix, &parent).await?;
    let kept: String = result.chars().take(MAX_RESULT_CHARS).collect();
    let settled = sqlx::query(
        "update delegations set status = $1, result = $2, finished_at = $3
         where child_run_id = $4 and status = 'running'",
    )
    .bind(status.as_str())
    .bind(kept)
    .bind(now)
    .bind(&child.0)
    .execute(&mut *tx)
    .await?;
    if settled.rows_affected() == 0 {
        return Ok(None);
    }
    Ok(requeue_waiting(tx, &parent, now).await?.then_some(parent))
}

impl Store {
    /// The delegations a step made, in the order made.
    pub async fn step_delegations(&self, run: &RunId, step: u32) -> Result<Vec<Delegation>> {
        self.step_waits(run, step).await
    }

    /// Every delegation a run made, in the order made.
    pub async fn run_delegations(&self, run: &RunId) -> Result<Vec<Delegation>> {
        self.run_waits(run).await
    }

    /// The delegation whose child is `run`, if `run` was delegated.
    pub async fn delegation_of(&self, run: &RunId) -> Result<Option<Delegation>> {
        self.wait_keyed("child_run_id", &run.0).await
    }

    /// Cancel what `parent` delegated that is still active, and what those
    /// delegated in turn (`by`: who cancelled the parent). Each child in a
    /// transaction of its own, after the parent's cancel committed (see the
    /// module docs on lock order). The runs that ended, for their announcement.
    pub async fn cancel_children(&self, parent: &RunId, by: &str) -> Result<Vec<ActiveRun>> {
        let mut ended = Vec::new();
        let mut parents = vec![parent.clone()];
        while let Some(parent) = parents.pop() {
            let children = sqlx::query(sqlx::AssertSqlSafe(format!(
                "select id, session_id from runs where parent_run_id = $1 and status in {ACTIVE}"
            )))
            .bind(&parent.0)
            .fetch_all(&self.pool)
            .await?;
            for row in children {
                let (child, session) = (
                    RunId(get_str(&row, "id")?),
                    SessionId(get_str(&row, "session_id")?),
                );
                let mut tx = self.begin().await?;
                let now = now_ms();
                lock_session(&mut tx, self.lock_suffix(), &session).await?;
                let Some(status) = lock_run(&mut tx, self.lock_suffix(), &child).await? else {
                    continue;
                };
                if status.is_terminal() {
                    continue;
                }
                // Its parent is cancelled: nothing to resume.
                end_as_cancelled(&mut tx, self.lock_suffix(), &child, by, now).await?;
                tx.commit().await?;
                ended.push(ActiveRun {
                    id: child.clone(),
                    was_queued: status != weft_wire::states::RunStatus::Running,
                });
                parents.push(child);
            }
        }
        Ok(ended)
    }
}

//! Schedules and their fires (migration 0035, docs/schedules.md).
//!
//! **Exactly once per (schedule, fire time).** A fire is one transaction:
//! take the due schedule's row (`for update skip locked` on Postgres, so two
//! schedulers take different schedules instead of queueing on one; SQLite's
//! `begin immediate` serialises every writer), re-check that it is still due,
//! insert its `schedule_fires` row — unique by `(schedule_id, fire_at)` —
//! create the run through the send transaction's own code
//! ([`Store::send_in`](super::Store)), and move `next_fire_at` on. A process
//! killed anywhere before the commit leaves nothing; after it, the run is an
//! ordinary queued run (the reaper enqueues one whose job was lost). Clocks that
//! disagree only move *when* a fire is claimed, never how often: the row lock,
//! the re-check of `next_fire_at` and the unique key decide, not the clock.
//!
//! **Late fires.** A fire claimed more than [`MISFIRE_GRACE_MS`] after its time
//! was missed (the cluster was down): `misfire = skip` records it as `missed`,
//! `run_once` runs once for the latest missed time. Either way the next time is
//! the first one after now, so a week of downtime is one row, not 10,080.
//!
//! **Batches.** A schedule that starts a new session per fire (most) is fired
//! with others: one transaction takes up to a batch of due rows (`order by
//! next_fire_at limit n for update skip locked`, so concurrent batches take
//! disjoint sets instead of racing for the same rows) and fires each as above.
//! One commit and one connection per batch instead of per fire: at a burst of
//! fires the claims no longer queue for connections behind the runs they
//! start. Such a fire locks nothing that exists but its owner's row (the run
//! limits); a batch takes those in user order, so batches never deadlock and a
//! send — session row, then user row — never waits on a batch that waits on
//! it. A schedule into a session of its own (a Lark chat's, a chosen one)
//! would lock that session too, so it fires in a transaction of its own.
//! Failing batches fall back to one transaction per fire.
//!
//! **Run limits.** A fire over its owner's run limits is not made yet: what it
//! wrote is taken back (the claim, its new session) and the next pass tries
//! again ([`Fired::deferred`]), as a message over the limits waits rather than
//! being dropped.
//!
//! **Overlap.** While the schedule's previous run is still active, `overlap =
//! skip` records the fire as `skipped`; `queue` sends anyway — into a session
//! target the message waits behind the active run (double texting's
//! `enqueue`), a new session starts at once.

use sqlx::any::AnyRow;

use super::user_limits::RunLimits;
use super::{OverLimit, Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_shared::schedule_time::Timing;
use weft_wire::api::{FireOutcome, Misfire, Overlap, Trigger};
use weft_wire::ids::{RunId, SessionId, UserId};
use weft_wire::states::RunStatus;

mod fire;

/// A fire claimed later than this after its time was missed (`misfire`).
pub const MISFIRE_GRACE_MS: i64 = 60_000;
/// The most missed times a `run_once` misfire walks to find the latest.
const MISFIRE_WALK: usize = 100_000;

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRecord {
    pub id: String,
    pub user_id: UserId,
    pub name: String,
    pub agent: String,
    pub model: String,
    pub prompt: String,
    pub trigger: Trigger,
    pub timezone: String,
    pub enabled: bool,
    /// `None`: a new session per fire.
    pub session_id: Option<SessionId>,
    pub misfire: Misfire,
    pub overlap: Overlap,
    pub next_fire_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The newest fire, when listed.
    pub last_fire: Option<FireRecord>,
    /// The channels (ids) its notifications are delivered to.
    pub deliver: Vec<String>,
}

impl ScheduleRecord {
    /// The schedule's trigger in its timezone (stored ones always parse).
    pub fn timing(&self) -> Result<Timing> {
        Timing::new(&self.trigger, &self.timezone, self.created_at)
            .map_err(|e| StoreError::Other(format!("schedule {}: {e}", self.id)))
    }
}

/// One fire as stored, with its run's status while the run exists.
#[derive(Debug, Clone, PartialEq)]
pub struct FireRecord {
    pub schedule_id: String,
    pub fire_at: i64,
    pub fired_at: i64,
    pub manual: bool,
    pub outcome: FireOutcome,
    pub run_id: Option<RunId>,
    pub session_id: Option<SessionId>,
    pub run_status: Option<RunStatus>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub user_id: UserId,
    pub name: String,
    pub agent: String,
    pub model: String,
    pub prompt: String,
    pub trigger: Trigger,
    pub timezone: String,
    pub enabled: bool,
    pub session_id: Option<SessionId>,
    pub misfire: Misfire,
    pub overlap: Overlap,
    /// Channel ids, each the owner's (checked here).
    pub deliver: Vec<String>,
}

/// A change; `None` keeps a field. `session_id: Some(None)` is a new session per fire.
#[derive(Debug, Clone, Default)]
pub struct ScheduleUpdate {
    pub name: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    pub trigger: Option<Trigger>,
    pub timezone: Option<String>,
    pub enabled: Option<bool>,
    pub session_id: Option<Option<SessionId>>,
    pub misfire: Option<Misfire>,
    pub overlap: Option<Overlap>,
    pub deliver: Option<Vec<String>>,
}

/// What a fire's send is checked against (the live configuration's limits).
#[derive(Debug, Clone)]
pub struct FireSettings {
    pub limits: RunLimits,
    pub queued_messages_per_session: u64,
    pub storage_bytes_per_user: u64,
}

/// A fire that happened: the run to enqueue, if one was created.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired {
    pub schedule_id: String,
    pub user_id: UserId,
    pub fire_at: i64,
    pub outcome: FireOutcome,
    pub run_id: Option<RunId>,
    pub session_id: Option<SessionId>,
    /// Not made: the owner is at their run limits (`active_runs_per_user`,
    /// `runs_per_minute_per_user`). Nothing was written and the schedule is
    /// still due, so the next pass tries again — a fire waits for room
    /// rather than being lost (past [`MISFIRE_GRACE_MS`] it is late, and
    /// `misfire` decides).
    pub deferred: bool,
}

const COLUMNS: &str = "s.id, s.user_id, s.name, s.agent, s.model, s.prompt, s.trigger, s.timezone, s.enabled, s.session_id, s.misfire, s.overlap, s.next_fire_at, s.created_at, s.updated_at";

/// The newest fire of each listed schedule, joined.
const LAST_FIRE: &str = "left join schedule_fires f on f.schedule_id = s.id and f.fire_at = (select max(fire_at) from schedule_fires m where m.schedule_id = s.id)
     left join runs r on r.id = f.run_id";

/// The fire columns of a read that locks a schedule row alone (no join).
const NO_FIRE: &str = "null as f_schedule, null as fire_at, null as fired_at, null as manual, null as outcome, null as f_run, null as f_session, null as detail, null as run_status";

const FIRE_COLUMNS: &str = "f.schedule_id as f_schedule, f.fire_at, f.fired_at, f.manual, f.outcome, f.run_id as f_run, f.session_id as f_session, f.detail, r.status as run_status";

impl Store {
    /// Make a schedule, its first fire time from now; refused past `max_per_user`.
    pub async fn create_schedule(
        &self,
        new: &NewSchedule,
        max_per_user: u64,
    ) -> Result<ScheduleRecord> {
        let now = weft_wire::time::now_ms();
        let timing = Timing::new(&new.trigger, &new.timezone, now)
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        let next = new.enabled.then(|| timing.next_after(now)).flatten();
        let id = format!("sch_{}", uuid::Uuid::now_v7().simple());
        let mut tx = self.begin().await?;
        // The person's row first: two creates of one person take turns, so
        // the count below cannot be passed by a race.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from users where id = $1{}",
            self.lock_suffix()
        )))
        .bind(&new.user_id.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let held: i64 = sqlx::query_scalar("select count(*) from schedules where user_id = $1")
            .bind(&new.user_id.0)
            .fetch_one(&mut *tx)
            .await?;
        if max_per_user > 0 && held as u64 >= max_per_user {
            return Err(StoreError::OverLimit(OverLimit::Schedules {
                held: held as u64,
                limit: max_per_user,
            }));
        }
        sqlx::query(
            "insert into schedules (id, user_id, name, agent, model, prompt, trigger, timezone, enabled, session_id, misfire, overlap, next_fire_at, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)",
        )
        .bind(&id)
        .bind(&new.user_id.0)
        .bind(&new.name)
        .bind(&new.agent)
        .bind(&new.model)
        .bind(&new.prompt)
        .bind(trigger_json(&new.trigger))
        .bind(&new.timezone)
        .bind(i64::from(new.enabled))
        .bind(new.session_id.as_ref().map(|s| s.0.clone()))
        .bind(new.misfire.as_str())
        .bind(new.overlap.as_str())
        .bind(next)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        self.set_schedule_channels(&mut tx, &new.user_id, &id, &new.deliver)
            .await?;
        tx.commit().await?;
        self.get_schedule(&new.user_id, &id).await
    }

    /// A person's schedules, oldest first, each with its newest fire.
    pub async fn list_schedules(&self, user: &UserId) -> Result<Vec<ScheduleRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS}, {FIRE_COLUMNS} from schedules s {LAST_FIRE} where s.user_id = $1 order by s.created_at, s.id"
        )))
        .bind(&user.0)
        .fetch_all(&self.pool)
        .await?;
        let mut list = rows.iter().map(schedule_from).collect::<Result<Vec<_>>>()?;
        self.fill_deliver(&mut list).await?;
        Ok(list)
    }

    /// One of the person's schedules (`NotFound` for anyone else's).
    pub async fn get_schedule(&self, user: &UserId, id: &str) -> Result<ScheduleRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS}, {FIRE_COLUMNS} from schedules s {LAST_FIRE} where s.id = $1 and s.user_id = $2"
        )))
        .bind(id)
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        let mut one = [schedule_from(&row)?];
        self.fill_deliver(&mut one).await?;
        let [s] = one;
        Ok(s)
    }

    /// Each schedule's `deliver`, in one read.
    async fn fill_deliver(&self, list: &mut [ScheduleRecord]) -> Result<()> {
        let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
        let pairs = self.schedule_channel_ids(&ids).await?;
        for s in list.iter_mut() {
            s.deliver = pairs
                .iter()
                .filter(|(sch, _)| *sch == s.id)
                .map(|(_, ch)| ch.clone())
                .collect();
        }
        Ok(())
    }

    /// Change a schedule. A new trigger or timezone, or enabling it, sets the
    /// next fire time from now; pausing clears it.
    pub async fn update_schedule(
        &self,
        user: &UserId,
        id: &str,
        change: &ScheduleUpdate,
    ) -> Result<ScheduleRecord> {
        let mut tx = self.begin().await?;
        let mut s = self.locked_schedule(&mut tx, user, id).await?;
        let retime = change.trigger.is_some()
            || change.timezone.is_some()
            || (change.enabled == Some(true) && !s.enabled);
        if let Some(v) = &change.name {
            s.name = v.clone();
        }
        if let Some(v) = &change.agent {
            s.agent = v.clone();
        }
        if let Some(v) = &change.model {
            s.model = v.clone();
        }
        if let Some(v) = &change.prompt {
            s.prompt = v.clone();
        }
        if let Some(v) = &change.trigger {
            s.trigger = v.clone();
        }
        if let Some(v) = &change.timezone {
            s.timezone = v.clone();
        }
        if let Some(v) = change.enabled {
            s.enabled = v;
        }
        if let Some(v) = &change.session_id {
            s.session_id = v.clone();
        }
        if let Some(v) = change.misfire {
            s.misfire = v;
        }
        if let Some(v) = change.overlap {
            s.overlap = v;
        }
        let now = weft_wire::time::now_ms();
        let timing = s.timing().map_err(|e| StoreError::Invalid(e.to_string()))?;
        if !s.enabled {
            s.next_fire_at = None;
        } else if retime {
            s.next_fire_at = timing.next_after(now);
        }
        sqlx::query(
            "update schedules set name = $1, agent = $2, model = $3, prompt = $4, trigger = $5, timezone = $6, enabled = $7,
                 session_id = $8, misfire = $9, overlap = $10, next_fire_at = $11, updated_at = $12
             where id = $13",
        )
        .bind(&s.name)
        .bind(&s.agent)
        .bind(&s.model)
        .bind(&s.prompt)
        .bind(trigger_json(&s.trigger))
        .bind(&s.timezone)
        .bind(i64::from(s.enabled))
        .bind(s.session_id.as_ref().map(|v| v.0.clone()))
        .bind(s.misfire.as_str())
        .bind(s.overlap.as_str())
        .bind(s.next_fire_at)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if let Some(deliver) = &change.deliver {
            self.set_schedule_channels(&mut tx, user, id, deliver)
                .await?;
        }
        tx.commit().await?;
        self.get_schedule(user, id).await
    }

    /// Delete a schedule and its history (its runs and sessions stay).
    pub async fn delete_schedule(&self, user: &UserId, id: &str) -> Result<()> {
        self.delete_owned("schedules", user, id).await
    }

    /// A schedule's fires, newest first.
    pub async fn schedule_fires(
        &self,
        user: &UserId,
        id: &str,
        limit: i64,
    ) -> Result<Vec<FireRecord>> {
        self.get_schedule(user, id).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {FIRE_COLUMNS} from schedule_fires f left join runs r on r.id = f.run_id
             where f.schedule_id = $1 order by f.fire_at desc limit $2"
        )))
        .bind(id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| fire_from(r).map(|f| f.expect("a fire row")))
            .collect()
    }

    /// `user`'s schedule `id`, its row locked for `tx` (`NotFound` for anyone else's).
    async fn locked_schedule(
        &self,
        tx: &mut crate::TxConn,
        user: &UserId,
        id: &str,
    ) -> Result<ScheduleRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS}, {NO_FIRE} from schedules s where s.id = $1 and s.user_id = $2{}",
            self.lock_suffix()
        )))
        .bind(id)
        .bind(&user.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        schedule_from(&row)
    }
}

fn trigger_json(t: &Trigger) -> String {
    serde_json::to_string(t).expect("a trigger serialises")
}

fn parse<T: std::str::FromStr>(row: &AnyRow, col: &str) -> Result<T> {
    let s = get_str(row, col)?;
    s.parse()
        .map_err(|_| StoreError::Other(format!("unexpected {col} value {s:?}")))
}

fn schedule_from(row: &AnyRow) -> Result<ScheduleRecord> {
    let trigger = get_str(row, "trigger")?;
    Ok(ScheduleRecord {
        id: get_str(row, "id")?,
        user_id: UserId(get_str(row, "user_id")?),
        name: get_str(row, "name")?,
        agent: get_str(row, "agent")?,
        model: get_str(row, "model")?,
        prompt: get_str(row, "prompt")?,
        trigger: serde_json::from_str(&trigger)
            .map_err(|e| StoreError::Other(format!("stored trigger {trigger:?}: {e}")))?,
        timezone: get_str(row, "timezone")?,
        enabled: get_i64(row, "enabled")? != 0,
        session_id: get_opt_str(row, "session_id")?.map(SessionId),
        misfire: parse(row, "misfire")?,
        overlap: parse(row, "overlap")?,
        next_fire_at: get_opt_i64(row, "next_fire_at")?,
        created_at: get_i64(row, "created_at")?,
        updated_at: get_i64(row, "updated_at")?,
        last_fire: fire_from(row)?,
        deliver: Vec::new(),
    })
}

fn fire_from(row: &AnyRow) -> Result<Option<FireRecord>> {
    let Some(schedule_id) = get_opt_str(row, "f_schedule")? else {
        return Ok(None);
    };
    Ok(Some(FireRecord {
        schedule_id,
        fire_at: get_i64(row, "fire_at")?,
        fired_at: get_i64(row, "fired_at")?,
        manual: get_i64(row, "manual")? != 0,
        outcome: parse(row, "outcome")?,
        run_id: get_opt_str(row, "f_run")?.map(RunId),
        session_id: get_opt_str(row, "f_session")?.map(SessionId),
        run_status: get_opt_str(row, "run_status")?
            .map(|s| {
                s.parse()
                    .map_err(|_| StoreError::Other(format!("run status {s:?}")))
            })
            .transpose()?,
        detail: get_opt_str(row, "detail")?,
    }))
}

//! Firing a schedule: the one transaction that claims a fire and creates its
//! run (the rules are in the module docs of `store::schedules`).

use super::super::runs::ACTIVE;
use super::super::send::{SendOutcome, SendRequest};
use super::super::{Dialect, NewMessage, Result, Store, StoreError};
use super::{
    COLUMNS, FireSettings, Fired, MISFIRE_GRACE_MS, MISFIRE_WALK, NO_FIRE, ScheduleRecord,
    schedule_from,
};
use weft_wire::api::{FireOutcome, Misfire, Multitask, Overlap};
use weft_wire::ids::{SessionId, UserId};
use weft_wire::time::now_ms;

impl Store {
    /// Schedules due at `now` (one indexed read), earliest first; with
    /// `targeted_only` those that send into a session of their own (the
    /// ones [`Store::fire_due_batch`] leaves to [`Store::fire_due`]).
    pub async fn due_schedules(
        &self,
        now: i64,
        limit: i64,
        targeted_only: bool,
    ) -> Result<Vec<String>> {
        let targeted = if targeted_only {
            " and session_id is not null"
        } else {
            ""
        };
        let ids = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "select id from schedules where enabled = 1 and next_fire_at is not null and next_fire_at <= $1{targeted}
             order by next_fire_at limit $2"
        )))
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids)
    }

    /// The earliest next fire time of any enabled schedule (the scheduler
    /// sleeps until it, or its poll interval, whichever is first).
    pub async fn next_schedule_due(&self) -> Result<Option<i64>> {
        let next: Option<i64> = sqlx::query_scalar(
            "select min(next_fire_at) from schedules where enabled = 1 and next_fire_at is not null",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(next)
    }

    /// Fire schedule `id` if it is still due at `now` (see the module docs).
    /// `None` when another scheduler took it first or it is no longer due.
    pub async fn fire_due(
        &self,
        id: &str,
        now: i64,
        settings: &FireSettings,
    ) -> Result<Option<Fired>> {
        let mut tx = self.begin().await?;
        let Some(row) = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS}, {NO_FIRE}
             from schedules s where s.id = $1 and s.enabled = 1 and s.next_fire_at is not null and s.next_fire_at <= $2{}",
            self.skip_locked()
        )))
        .bind(id)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let fired = self
            .fire_claimed(&mut tx, &schedule_from(&row)?, now, settings)
            .await?;
        tx.commit().await?;
        Ok(fired)
    }

    /// Fire up to `limit` due schedules that each start a new session, in one
    /// transaction (see the module docs, "Batches"), passing over `passed`
    /// (the ones deferred earlier in the same pass). Empty when none is due
    /// that another scheduler has not taken.
    pub async fn fire_due_batch(
        &self,
        now: i64,
        limit: i64,
        passed: &[String],
        settings: &FireSettings,
    ) -> Result<Vec<Fired>> {
        let mut tx = self.begin().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS}, {NO_FIRE}
             from schedules s where s.enabled = 1 and s.next_fire_at is not null and s.next_fire_at <= $1
               and s.session_id is null and s.id not in ({})
             order by s.next_fire_at limit $2{}",
            self.dialect.each_text(3),
            self.skip_locked()
        )))
        .bind(now)
        .bind(limit)
        .bind(serde_json::to_string(passed).expect("ids serialise"))
        .fetch_all(&mut *tx)
        .await?;
        let mut schedules = rows.iter().map(schedule_from).collect::<Result<Vec<_>>>()?;
        // Each fire locks its owner's row (the run limits) and nothing else
        // that exists: taken in one order by every batch, no two wait on
        // each other, and a send (session, then user) never waits on a batch
        // that waits on it.
        schedules.sort_by(|a, b| a.user_id.0.cmp(&b.user_id.0));
        let mut fired = Vec::with_capacity(schedules.len());
        for schedule in &schedules {
            fired.extend(
                self.fire_claimed(&mut tx, schedule, now_ms(), settings)
                    .await?,
            );
        }
        tx.commit().await?;
        Ok(fired)
    }

    fn skip_locked(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => " for update skip locked",
            Dialect::Sqlite => "",
        }
    }

    /// Act on the due `schedule`, whose row `tx` holds: its fire (or its
    /// missed fire), then its next time. A deferred fire leaves no trace.
    async fn fire_claimed(
        &self,
        tx: &mut crate::TxConn,
        schedule: &ScheduleRecord,
        now: i64,
        settings: &FireSettings,
    ) -> Result<Option<Fired>> {
        let due = schedule.next_fire_at.expect("selected by next_fire_at");
        let timing = schedule.timing()?;
        let late = now - due > MISFIRE_GRACE_MS;
        let fire_at = if late {
            timing.latest_due(due, now, MISFIRE_WALK)
        } else {
            due
        };
        let fired = if late && schedule.misfire == Misfire::Skip {
            let fired = Fired {
                schedule_id: schedule.id.clone(),
                user_id: schedule.user_id.clone(),
                fire_at,
                outcome: FireOutcome::Missed,
                run_id: None,
                session_id: None,
                deferred: false,
            };
            let detail =
                (fire_at != due).then(|| format!("missed since {}", weft_wire::time::rfc3339(due)));
            insert_fire(tx, &fired, now, false, detail.as_deref()).await?;
            Some(fired)
        } else {
            match self
                .fire_in(tx, schedule, fire_at, now, false, settings)
                .await?
            {
                // Still due: tried again on the next pass.
                Some(fired) if fired.deferred => return Ok(Some(fired)),
                other => other,
            }
        };
        let next = timing.next_after(now.max(fire_at));
        sqlx::query("update schedules set next_fire_at = $1 where id = $2")
            .bind(next)
            .bind(&schedule.id)
            .execute(&mut *tx)
            .await?;
        Ok(fired)
    }

    /// "Run now": a fire at `now` that leaves the schedule's times alone.
    pub async fn fire_now(
        &self,
        user: &UserId,
        id: &str,
        now: i64,
        settings: &FireSettings,
    ) -> Result<Fired> {
        let mut tx = self.begin().await?;
        let schedule = self.locked_schedule(&mut tx, user, id).await?;
        let fired = self
            .fire_in(&mut tx, &schedule, now, now, true, settings)
            .await?
            .ok_or_else(|| {
                StoreError::Invalid(
                    "a fire of this schedule was claimed this very millisecond; try again".into(),
                )
            })?;
        tx.commit().await?;
        Ok(fired)
    }

    /// Claim the fire `(schedule, fire_at)` and act on it in `tx`. `None` when
    /// that fire exists already.
    async fn fire_in(
        &self,
        tx: &mut crate::TxConn,
        schedule: &ScheduleRecord,
        fire_at: i64,
        now: i64,
        manual: bool,
        settings: &FireSettings,
    ) -> Result<Option<Fired>> {
        // The claim: nothing else of this fire is written unless this row is new.
        let claimed = sqlx::query(
            "insert into schedule_fires (schedule_id, fire_at, fired_at, manual, outcome) values ($1, $2, $3, $4, 'started')
             on conflict (schedule_id, fire_at) do nothing",
        )
        .bind(&schedule.id)
        .bind(fire_at)
        .bind(now)
        .bind(i64::from(manual))
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            return Ok(None);
        }
        let mut fired = Fired {
            schedule_id: schedule.id.clone(),
            user_id: schedule.user_id.clone(),
            fire_at,
            outcome: FireOutcome::Started,
            run_id: None,
            session_id: None,
            deferred: false,
        };
        let previous_active: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "select f.run_id from schedule_fires f join runs r on r.id = f.run_id
             where f.schedule_id = $1 and r.status in {ACTIVE} limit 1"
        )))
        .bind(&schedule.id)
        .fetch_optional(&mut *tx)
        .await?;
        let mut detail = None;
        if previous_active.is_some() && schedule.overlap == Overlap::Skip {
            fired.outcome = FireOutcome::Skipped;
            detail = previous_active.map(|r| format!("run {r} was still active"));
        } else {
            let session = match &schedule.session_id {
                Some(s) => s.clone(),
                None => self.fire_session(tx, schedule, fire_at, now).await?,
            };
            fired.session_id = Some(session.clone());
            let req = SendRequest {
                message: NewMessage {
                    user: schedule.user_id.clone(),
                    session_owner: schedule.user_id.clone(),
                    author_name: None,
                    session,
                    text: schedule.prompt.clone(),
                    attachments: Vec::new(),
                    model: Some(schedule.model.clone()),
                    agent: Some(schedule.agent.clone()),
                    // Never `interrupt`: a refusal below must have written
                    // nothing (the fire's row is kept, the send's work is not).
                    multitask: match schedule.overlap {
                        Overlap::Skip => Multitask::Reject,
                        Overlap::Queue => Multitask::Enqueue,
                    },
                    idempotency_key: None,
                    lark_message_id: None,
                    plan: false,
                },
                limits: settings.limits,
                queued_messages_per_session: settings.queued_messages_per_session,
                storage_bytes_per_user: settings.storage_bytes_per_user,
                traceparent: None,
            };
            match self.send_in(tx, &req).await {
                Ok(SendOutcome::Started { run, .. }) => {
                    sqlx::query("update runs set schedule_id = $1 where id = $2")
                        .bind(&schedule.id)
                        .bind(&run.run_id.0)
                        .execute(&mut *tx)
                        .await?;
                    fired.run_id = Some(run.run_id);
                }
                Ok(SendOutcome::Queued { .. }) => fired.outcome = FireOutcome::Queued,
                Ok(SendOutcome::TooManyActive | SendOutcome::RateLimited { .. }) if !manual => {
                    fired.outcome = FireOutcome::Refused;
                    fired.deferred = true;
                }
                Ok(refused) => {
                    fired.outcome = FireOutcome::Refused;
                    detail = Some(refusal_words(&refused));
                }
                Err(StoreError::NotFound) => {
                    fired.outcome = FireOutcome::Refused;
                    detail = Some("the target session no longer exists".into());
                }
                Err(e) => return Err(e),
            }
            if fired.outcome == FireOutcome::Refused {
                // A session made for this fire holds nothing: it goes.
                if schedule.session_id.is_none()
                    && let Some(made) = fired.session_id.take()
                {
                    sqlx::query("delete from sessions where id = $1")
                        .bind(&made.0)
                        .execute(&mut *tx)
                        .await?;
                }
                fired.session_id = None;
            }
            if fired.deferred {
                // Not made yet: the claim goes too (the send wrote nothing).
                sqlx::query("delete from schedule_fires where schedule_id = $1 and fire_at = $2")
                    .bind(&schedule.id)
                    .bind(fire_at)
                    .execute(&mut *tx)
                    .await?;
                return Ok(Some(fired));
            }
        }
        sqlx::query(
            "update schedule_fires set outcome = $1, run_id = $2, session_id = $3, detail = $4 where schedule_id = $5 and fire_at = $6",
        )
        .bind(fired.outcome.as_str())
        .bind(fired.run_id.as_ref().map(|r| r.0.clone()))
        .bind(fired.session_id.as_ref().map(|s| s.0.clone()))
        .bind(detail)
        .bind(&schedule.id)
        .bind(fire_at)
        .execute(&mut *tx)
        .await?;
        Ok(Some(fired))
    }

    /// A new session for one fire, titled by the schedule and its time.
    async fn fire_session(
        &self,
        tx: &mut crate::TxConn,
        schedule: &ScheduleRecord,
        fire_at: i64,
        now: i64,
    ) -> Result<SessionId> {
        let id = SessionId::new();
        let when = schedule
            .timing()
            .map(|t| t.local(fire_at))
            .unwrap_or_else(|_| weft_wire::time::rfc3339(fire_at));
        let title: String = format!("{} · {}", schedule.name, when.get(..16).unwrap_or(&when))
            .chars()
            .take(120)
            .collect();
        sqlx::query("insert into sessions (id, user_id, title, title_lower, model, agent, source, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, 'schedule', $7, $7)")
            .bind(&id.0)
            .bind(&schedule.user_id.0)
            .bind(&title)
            .bind(title.to_lowercase())
            .bind(&schedule.model)
            .bind(&schedule.agent)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        Ok(id)
    }
}

async fn insert_fire(
    tx: &mut crate::TxConn,
    fired: &Fired,
    now: i64,
    manual: bool,
    detail: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "insert into schedule_fires (schedule_id, fire_at, fired_at, manual, outcome, detail) values ($1, $2, $3, $4, $5, $6)
         on conflict (schedule_id, fire_at) do nothing",
    )
    .bind(&fired.schedule_id)
    .bind(fired.fire_at)
    .bind(now)
    .bind(i64::from(manual))
    .bind(fired.outcome.as_str())
    .bind(detail)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

fn refusal_words(outcome: &SendOutcome) -> String {
    match outcome {
        SendOutcome::TooManyActive => {
            "the owner has as many active runs as limits.active_runs_per_user allows".into()
        }
        SendOutcome::RateLimited { retry_after_secs } => {
            format!("limits.runs_per_minute_per_user reached (free again in {retry_after_secs} s)")
        }
        SendOutcome::Rejected { active_run_id } => {
            format!(
                "the target session's run {} was still active",
                active_run_id.0
            )
        }
        SendOutcome::QueueFull { active_run_id } => format!(
            "limits.queued_messages_per_session messages already wait behind run {}",
            active_run_id.0
        ),
        SendOutcome::OverStorage(_) => "the owner's storage is full".into(),
        other => format!("{other:?}"),
    }
}

//! A run's end: the transaction that writes its reply, totals and status and
//! makes the follow-up run for messages that waited behind it, and the end of
//! a run whose attempts are spent.

use crate::delegations::{DelegationStatus, settle_child};
use crate::messages::{StepMessage, defer_step_message, reasoning_json, step_message_id};
use crate::runs::{ClaimedRun, FinishOutcome, RunEnd};
use crate::session_writes::{
    create_followup, followup_for_waiting, lock_session, touch_session,
    touch_session_counting_waiting,
};
use crate::user_limits::RunLimits;
use crate::{Dialect, Result, StoreError, get_i64, get_opt_str};
use weft_wire::api::{ErrorBody, NotificationKind, UsageDto};
use weft_wire::ids::{MessageId, RunId};
use weft_wire::job::ExtractMemories;
use weft_wire::time::now_ms;

impl crate::Store {
    /// End a run in one transaction: final message, status, totals, and the
    /// follow-up run for messages that waited behind it (docs/runs.md, "One chat
    /// turn, in full", step 5), if the user's `limits` allow it now.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_run(
        &self,
        run: &ClaimedRun,
        worker: &str,
        end: &RunEnd,
        usage: UsageDto,
        ttft_ms: Option<u64>,
        limits: &RunLimits,
    ) -> Result<FinishOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        // Deleted with its session (or user) meanwhile: there is nowhere to write
        // the reply. Locked (session, then run: the send's order), so a concurrent
        // delete either waits for this end or has already won.
        // `Some(waiting)` on SQLite, whose `begin immediate` holds the whole
        // database: one statement asks both and counts the messages waiting
        // behind the run (nothing in this transaction queues one), so the
        // session's touch can go with the commit. On Postgres the touch
        // counts them, under the session's lock.
        let (exists, waiting) = match self.dialect {
            Dialect::Postgres => {
                let lock = self.lock_suffix();
                let exists = lock_session(&mut tx, lock, &run.session_id).await?
                    && sqlx::query(sqlx::AssertSqlSafe(format!(
                        "select id from runs where id = $1{lock}"
                    )))
                    .bind(&run.id.0)
                    .fetch_optional(&mut *tx)
                    .await?
                    .is_some();
                (exists, None)
            }
            Dialect::Sqlite => match sqlx::query(
                "select (select count(*) from messages m where m.session_id = $1 and m.queued = 1) as waiting
                 from sessions s, runs r where s.id = $1 and r.id = $2",
            )
            .bind(&run.session_id.0)
            .bind(&run.id.0)
            .fetch_optional(&mut *tx)
            .await?
            {
                Some(row) => (true, Some(get_i64(&row, "waiting")?)),
                None => (false, None),
            },
        };
        if !exists {
            return Ok(FinishOutcome::Deleted);
        }
        let duration = (now - run.started_at).max(0);
        let remember = run
            .remember_after
            .filter(|_| matches!(end, RunEnd::Succeeded { .. }));
        let (status, error, text, step) = match end {
            RunEnd::Succeeded { content, step, .. } => ("succeeded", None, content, *step),
            RunEnd::Failed {
                error,
                partial,
                step,
            } => ("failed", Some(error), partial, *step),
            RunEnd::Cancelled { partial, step } => ("cancelled", None, partial, *step),
        };
        // The reply first (inside the transaction: if the run turns out not to be
        // ours any more, the rollback takes it back), so one update sets
        // everything. Deferred: on SQLite it goes in the update's hop, and the
        // update reads back which reply row stands (this one, or an earlier
        // attempt's).
        let reply = matches!(end, RunEnd::Succeeded { .. }) || !text.is_empty();
        if reply {
            let reasoning = match end {
                RunEnd::Succeeded { reasoning, .. } => reasoning_json(reasoning)?,
                _ => None,
            };
            let reply = StepMessage {
                role: "assistant",
                content: text,
                call_id: "",
                name: None,
                tool_calls: None,
                reasoning: reasoning.as_deref(),
            };
            defer_step_message(&mut tx, &run.session_id, &run.id, step, reply, now)?;
        }
        // A cancel may already have marked the run `cancelled` (to free the session at once).
        let owned = sqlx::query(sqlx::AssertSqlSafe(format!(
            "update runs set status = $1, finished_at = coalesce(finished_at, $2), duration_ms = $3, ttft_ms = $4,
                 usage_input = $5, usage_output = $6, usage_cache_read = $7, usage_reasoning = $8,
                 error_code = $9, error_message = $10, heartbeat_at = $2,
                 final_message_id = case when $13 = 1 then {} end,
                 context_tokens = $14, context_window = $15, memory_pending = $16,
                 memories_used = coalesce($17, memories_used)
             where id = $11 and worker_id = $12 and (status = 'running' or (status = 'cancelled' and $1 = 'cancelled'))
             returning final_message_id",
            step_message_id("$11", "$18", "'assistant'", "''")
        )))
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
        .bind(i64::from(reply))
        .bind(usage.context_tokens as i64)
        .bind(usage.context_window as i64)
        .bind(i64::from(remember.is_some()))
        .bind(crate::memories::used_json(&run.memories_used)?)
        .bind(i64::from(step))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(owned) = owned else {
            return Ok(FinishOutcome::Lost);
        };
        let message_id = get_opt_str(&owned, "final_message_id")?.map(MessageId);
        if let (RunEnd::Succeeded { citations, .. }, Some(id)) = (end, &message_id)
            && !citations.is_empty()
        {
            let json = serde_json::to_string(citations)
                .map_err(|e| StoreError::Other(format!("citations: {e}")))?;
            sqlx::query("update messages set citations = $1 where id = $2")
                .bind(json)
                .bind(&id.0)
                .execute(&mut *tx)
                .await?;
        }
        crate::memories::mark_used(&mut tx, &run.user_id, &run.memories_used, now).await?;
        if let Some(after) = remember {
            let job = ExtractMemories {
                session_id: run.session_id.0.clone(),
                user_id: run.user_id.0.clone(),
                model: run.model.clone(),
            };
            self.rearm_kind_job(&mut tx, &job, now + after.as_millis() as i64)
                .await?;
        }
        let parent = match &run.parent_run_id {
            Some(_) => {
                let (status, result) = match end {
                    RunEnd::Succeeded { content, .. } => (DelegationStatus::Succeeded, content),
                    RunEnd::Failed { error, .. } => (
                        DelegationStatus::Failed,
                        &format!("{}: {}", error.code, error.message),
                    ),
                    RunEnd::Cancelled { partial, .. } => (DelegationStatus::Cancelled, partial),
                };
                settle_child(&mut tx, self.lock_suffix(), &run.id, status, result, now).await?
            }
            None => None,
        };
        if run.schedule_id.is_some() {
            let body = match end {
                RunEnd::Succeeded { content, .. } => format!("succeeded: {content}"),
                RunEnd::Failed { error, .. } => format!("failed: {}", error.message),
                RunEnd::Cancelled { .. } => "cancelled".to_string(),
            };
            self.notify_scheduled(
                &mut tx,
                &run.id,
                NotificationKind::ScheduleFinished,
                &format!("{}:end", run.id.0),
                &body,
                now,
            )
            .await?;
        }
        let waiting = match waiting {
            Some(waiting) => {
                touch_session(&mut tx, &run.session_id, now)?;
                waiting
            }
            None => touch_session_counting_waiting(&mut tx, &run.session_id, now).await?,
        };
        let followup = followup_for_waiting(
            &mut tx,
            self.lock_suffix(),
            limits,
            &run.session_id,
            now,
            waiting,
        )
        .await?;
        tx.commit().await?;
        Ok(FinishOutcome::Finished {
            message_id,
            followup,
            parent,
        })
    }

    /// Mark a run whose attempts are spent as failed (the claim already bumped
    /// it). The runs to enqueue: the follow-up for messages waiting behind
    /// it, and the run that delegated it.
    pub async fn fail_exhausted(
        &self,
        run: &ClaimedRun,
        error: &ErrorBody,
        limits: &RunLimits,
    ) -> Result<Vec<RunId>> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        lock_session(&mut tx, self.lock_suffix(), &run.session_id).await?;
        sqlx::query("update runs set status = 'failed', finished_at = $1, error_code = $2, error_message = $3, duration_ms = $1 - started_at where id = $4")
            .bind(now)
            .bind(&error.code)
            .bind(&error.message)
            .bind(&run.id.0)
            .execute(&mut *tx)
            .await?;
        let parent = settle_child(
            &mut tx,
            self.lock_suffix(),
            &run.id,
            DelegationStatus::Failed,
            &format!("{}: {}", error.code, error.message),
            now,
        )
        .await?;
        if run.schedule_id.is_some() {
            self.notify_scheduled(
                &mut tx,
                &run.id,
                NotificationKind::ScheduleFinished,
                &format!("{}:end", run.id.0),
                &format!("failed: {}", error.message),
                now,
            )
            .await?;
        }
        let followup =
            create_followup(&mut tx, self.lock_suffix(), limits, &run.session_id, now).await?;
        tx.commit().await?;
        Ok(followup.into_iter().chain(parent).collect())
    }
}

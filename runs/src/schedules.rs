//! Firing schedules: the store claims each fire and creates its run in one
//! transaction (`weft_shared::store` schedules module); this enqueues the runs
//! those transactions made, counts the fires, and measures their lateness.
//! Workers call [`Runs::fire_due`] from their scheduler loop; the API's "run
//! now" calls [`Runs::fire_now`].

use futures::StreamExt;
use weft_shared::api::FireOutcome;
use weft_shared::ids::UserId;
use weft_shared::store::{FireSettings, Fired, Result};
use weft_shared::time::now_ms;

use crate::Runs;

/// Due schedules read per pass.
const BATCH: i64 = 500;

impl Runs {
    fn fire_settings(&self) -> FireSettings {
        let config = self.live.get();
        FireSettings {
            limits: config.limits.run_limits(),
            queued_messages_per_session: config.limits.queued_messages_per_session,
            storage_bytes_per_user: config.limits.storage_bytes_per_user,
        }
    }

    /// Fire every schedule due now, `schedules.fire_concurrency` at a time;
    /// returns how many fires this process claimed. Another process's claim
    /// of the same schedule is skipped, not waited for.
    pub async fn fire_due(&self) -> Result<usize> {
        let now = now_ms();
        let due = self.store.due_schedules(now, BATCH).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let settings = self.fire_settings();
        let concurrency = self.live.get().schedules.fire_concurrency;
        let results: Vec<Result<Option<Fired>>> = futures::stream::iter(due)
            .map(|id| {
                let settings = &settings;
                async move { self.store.fire_due(&id, now_ms(), settings).await }
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        let mut claimed = 0;
        for result in results {
            match result {
                Ok(Some(fired)) => {
                    claimed += usize::from(!fired.deferred);
                    self.after_fire(&fired).await;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "a schedule's fire failed; it is tried again on the next pass")
                }
            }
        }
        Ok(claimed)
    }

    /// "Run now": one fire of `user`'s schedule `id`, outside its trigger.
    pub async fn fire_now(&self, user: &UserId, id: &str) -> Result<Fired> {
        let fired = self
            .store
            .fire_now(user, id, now_ms(), &self.fire_settings())
            .await?;
        self.after_fire(&fired).await;
        Ok(fired)
    }

    async fn after_fire(&self, fired: &Fired) {
        if fired.deferred {
            metrics::counter!("weft_schedule_fires_total", "outcome" => "deferred").increment(1);
            tracing::debug!(schedule.id = %fired.schedule_id, "fire deferred: its owner is at their run limits");
            return;
        }
        metrics::counter!("weft_schedule_fires_total", "outcome" => fired.outcome.as_str())
            .increment(1);
        if fired.outcome != FireOutcome::Missed {
            let late = (now_ms() - fired.fire_at).max(0) as f64 / 1000.0;
            metrics::histogram!("weft_schedule_fire_lateness_seconds").record(late);
        }
        tracing::info!(schedule.id = %fired.schedule_id, outcome = fired.outcome.as_str(),
            run.id = fired.run_id.as_ref().map(|r| r.0.as_str()).unwrap_or(""), "schedule fired");
        if let Some(run) = &fired.run_id {
            self.enqueue(run.clone()).await;
        }
    }
}

//! Firing schedules: the store claims each fire and creates its run in one
//! transaction (`weft_store` schedules module); this enqueues the runs
//! those transactions made, counts the fires, and measures their lateness.
//! Workers call [`Runs::fire_due`] from their scheduler loop; the API's "run
//! now" calls [`Runs::fire_now`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::StreamExt;
use weft_shared::api::FireOutcome;
use weft_shared::ids::UserId;
use weft_shared::time::now_ms;
use weft_store::{FireSettings, Fired, Result};

use crate::Runs;

/// Schedules into a session of their own read per pass (one transaction each).
const TARGETED: i64 = 500;
/// Schedules into new sessions claimed per transaction: one commit per 32
/// fires, yet a batch holds its owners' rows for only some tens of ms.
const BATCH: i64 = 32;

impl Runs {
    fn fire_settings(&self) -> FireSettings {
        let config = self.live.get();
        FireSettings {
            limits: weft_store::RunLimits::from(&config.limits),
            queued_messages_per_session: config.limits.queued_messages_per_session,
            storage_bytes_per_user: config.limits.storage_bytes_per_user,
        }
    }

    /// Fire every schedule due now; returns how many fires this process
    /// claimed. Schedules into new sessions go in batches,
    /// `schedules.fire_concurrency` transactions at once on Postgres, each
    /// claiming rows no other holds (one at a time on SQLite); those into a session of their own (or all, when a
    /// batch failed) one transaction each, as many at once. Another
    /// process's claim of the same schedule is skipped, not waited for.
    pub async fn fire_due(&self) -> Result<usize> {
        let settings = self.fire_settings();
        let concurrency = self.live.get().schedules.fire_concurrency;
        // SQLite runs one write transaction at a time (the store's writer):
        // parallel batches would only queue for it, and each, having read the
        // skip list before it waited, would claim and defer the same schedule
        // over the run limits again (eight deferrals a pass instead of one).
        let batches = match self.store.dialect() {
            weft_store::Dialect::Sqlite => 1,
            weft_store::Dialect::Postgres => concurrency,
        };
        // Deferred this pass (the owner at their run limits): still due, not
        // claimed again until the next pass.
        let passed = Mutex::new(Vec::<String>::new());
        let claimed = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let batches = (0..batches).map(|_| async {
            loop {
                let skip = passed.lock().expect("not poisoned").clone();
                let fired = match self
                    .store
                    .fire_due_batch(now_ms(), BATCH, &skip, &settings)
                    .await
                {
                    Ok(fired) if fired.is_empty() => return,
                    Ok(fired) => fired,
                    Err(e) => {
                        tracing::warn!(error = %e, "a batch of fires failed; firing them one by one");
                        failed.store(true, Ordering::Relaxed);
                        return;
                    }
                };
                for f in &fired {
                    if f.deferred {
                        passed.lock().expect("not poisoned").push(f.schedule_id.clone());
                    } else {
                        claimed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                futures::future::join_all(fired.iter().map(|f| self.after_fire(f))).await;
            }
        });
        futures::future::join_all(batches).await;

        let now = now_ms();
        let due = self
            .store
            .due_schedules(now, TARGETED, !failed.load(Ordering::Relaxed))
            .await?;
        let results: Vec<Result<Option<Fired>>> = futures::stream::iter(due)
            .map(|id| {
                let settings = &settings;
                async move { self.store.fire_due(&id, now_ms(), settings).await }
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        let mut claimed = claimed.into_inner();
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

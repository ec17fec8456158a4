//! The scheduler loop, in every worker: fire the schedules that are due
//! (`weft_runs::Runs::fire_due`; the store makes each fire happen once however
//! many workers run this), then sleep until the next one is due or
//! `schedules.poll_ms` passes, whichever is first. Idle, it costs one indexed
//! read per pass (`schedules_due`); a schedule made or changed elsewhere is
//! seen on the next pass, so fire lateness is at most about `poll_ms` plus the
//! fire's own transaction.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use weft_shared::time::now_ms;

use crate::Inner;

pub(crate) async fn run(inner: Arc<Inner>, stop: CancellationToken) {
    loop {
        let poll_ms = inner.deps.config().schedules.poll_ms as i64;
        let wait_ms = match inner.runs.fire_due().await {
            Err(e) => {
                tracing::warn!(error = %e, "looking for due schedules failed");
                poll_ms
            }
            Ok(_) => match inner.deps.store.next_schedule_due().await {
                Ok(Some(next)) => (next - now_ms()).clamp(0, poll_ms),
                Ok(None) => poll_ms,
                Err(_) => poll_ms,
            },
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
        }
    }
}

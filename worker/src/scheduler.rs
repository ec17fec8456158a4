//! The scheduler loop, in every worker: when a schedule is due, fire the due
//! ones (`weft_runs::Runs::fire_due`; the store makes each fire happen once
//! however many workers run this), then sleep until the next one is due or
//! `schedules.poll_ms` passes, whichever is first. Idle, a pass costs one
//! indexed read (`next_schedule_due`) and no transaction; a schedule made or
//! changed elsewhere is seen on the next pass, so fire lateness is at most
//! about `poll_ms` plus the fire's own transaction.
//!
//! A fire over its owner's run limits is deferred and stays due
//! (`store::schedules`, "Run limits"), as does one another scheduler holds. A
//! pass that leaves a schedule due that was due when it began therefore waits
//! the whole `poll_ms` before trying again: until 2026-12-07 the wait was the
//! time to the earliest due schedule, zero for a deferred one, and the loop
//! spun through fire passes (each opening `schedules.fire_concurrency` write
//! transactions) for as long as the owner's runs were active.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use weft_shared::time::now_ms;

use crate::Inner;

pub(crate) async fn run(inner: Arc<Inner>, stop: CancellationToken) {
    loop {
        let poll_ms = inner.deps.config().schedules.poll_ms as i64;
        let wait_ms = match pass(&inner).await {
            Err(e) => {
                tracing::warn!(error = %e, "looking for due schedules failed");
                poll_ms
            }
            Ok((began, next)) => wait_ms(began, next, now_ms(), poll_ms),
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
        }
    }
}

/// One pass: fire what is due, if anything is. When it began, and the earliest
/// due time after it.
async fn pass(inner: &Inner) -> anyhow::Result<(i64, Option<i64>)> {
    let began = now_ms();
    let next = inner.deps.store.next_schedule_due().await?;
    if next.is_none_or(|next| next > began) {
        return Ok((began, next));
    }
    inner.runs.fire_due().await?;
    Ok((began, inner.deps.store.next_schedule_due().await?))
}

/// How long to sleep after a pass that began at `began` and left `next` as the
/// earliest due time: until then, at most `poll_ms`, and the whole `poll_ms`
/// when `next` was due before the pass began (it was deferred or is another
/// scheduler's; see the module docs).
fn wait_ms(began: i64, next: Option<i64>, now: i64, poll_ms: i64) -> i64 {
    match next {
        Some(next) if next > began => (next - now).clamp(0, poll_ms),
        _ => poll_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::wait_ms;

    #[test]
    fn a_pass_waits_for_the_next_due_time_but_never_spins_on_a_deferred_one() {
        // Nothing scheduled: the poll interval.
        assert_eq!(wait_ms(1_000, None, 1_010, 1_000), 1_000);
        // Due 300 ms from now: until then.
        assert_eq!(wait_ms(1_000, Some(1_310), 1_010, 1_000), 300);
        // Due after the poll interval: the poll interval.
        assert_eq!(wait_ms(1_000, Some(9_000), 1_010, 1_000), 1_000);
        // Became due during the pass (after it began): at once.
        assert_eq!(wait_ms(1_000, Some(1_005), 1_010, 1_000), 0);
        // Due before the pass began and still due after it (deferred at the
        // run limits, or held by another scheduler): the poll interval, not 0.
        assert_eq!(wait_ms(1_000, Some(900), 1_010, 1_000), 1_000);
        assert_eq!(wait_ms(1_000, Some(1_000), 1_010, 1_000), 1_000);
    }
}

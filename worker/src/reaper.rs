//! The reaper: a periodic, idempotent sweep in every worker. It re-enqueues runs
//! whose worker died (stale heartbeat), queued runs whose job was lost (Redis
//! flushed, a crash between enqueue and claim), and follow-ups stranded behind a
//! run that ended without its worker. It only enqueues; the claim decides, so any
//! number of reapers may run at once. Every `purge_interval_ms` it also purges
//! expired login tokens and old idempotency keys (`Store::purge_expired`), and
//! attachment files no message names any more. And it
//! expires unanswered approvals (they count as denied) and resumes their runs,
//! and shows the final Lark card of runs that ended without it
//! (`lark/overdue.rs`).
//! Ended background jobs are purged a week after they ended (their key kept the
//! same work from running twice for that long).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use weft_shared::time::now_ms;

use crate::Inner;

pub(crate) async fn run(inner: Arc<Inner>, shutdown: CancellationToken, orphan_all_at_start: bool) {
    let cfg = inner.deps.config().worker.clone();
    let every = Duration::from_millis(cfg.reaper_interval_ms);
    let mut first = true;
    let mut next_purge = 0;
    let limits = weft_store::RunLimits::from(&inner.deps.config().limits);
    loop {
        let now = now_ms();
        if now >= next_purge {
            next_purge = now + cfg.purge_interval_ms as i64;
            purge(&inner, now).await;
        }
        // At start-up in embedded mode every queued run's in-process job died with
        // the previous process (its running runs were put back to `queued` before
        // this process claimed anything: `requeue_orphans`).
        let (stale_before, requeue_before) = if first && orphan_all_at_start {
            (now - cfg.stale_after_ms as i64, now + 1)
        } else {
            (
                now - cfg.stale_after_ms as i64,
                now - cfg.requeue_after_ms as i64,
            )
        };
        first = false;
        match inner
            .deps
            .store
            .reap(stale_before, requeue_before, &limits)
            .await
        {
            Ok(ids) => {
                if !ids.is_empty() {
                    tracing::info!(runs = ids.len(), "reaper re-enqueued runs");
                    metrics::counter!("weft_runs_reaped_total").increment(ids.len() as u64);
                }
                for run_id in ids {
                    inner.runs.requeue(run_id).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "reaper sweep failed"),
        }
        // Unanswered approvals count as denied once they expire, unanswered
        // questions as "no answer"; their runs go on.
        match inner.deps.store.expire_waits(now).await {
            Ok(ids) => {
                for run_id in ids {
                    inner.runs.requeue(run_id).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "expiring approvals and questions failed"),
        }
        // Lark runs that ended without their final card (their worker died
        // in between) get it from the event log.
        if let Some(lark) = &inner.lark {
            lark.finish_overdue(&inner.tasks, Duration::from_millis(cfg.stale_after_ms))
                .await;
        }
        if let Ok(n) = inner.deps.store.queued_runs().await {
            metrics::gauge!("weft_queue_depth").set(n as f64);
        }
        // The queue's own count (Redis): jobs no worker has fetched yet. Far
        // below `weft_queue_depth` means jobs were lost (the reaper re-enqueues
        // them); both high means workers are short.
        match inner.deps.queue.depth().await {
            Ok(Some(n)) => metrics::gauge!("weft_queue_redis_depth").set(n as f64),
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "reading the queue depth failed"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// How long an ended background job's row (and so its dedupe key) is kept.
const ENDED_JOB_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

async fn purge(inner: &Inner, now: i64) {
    sweep_files(inner, now).await;
    if let Err(e) = inner
        .deps
        .store
        .purge_ended_jobs(now - ENDED_JOB_RETENTION_MS)
        .await
    {
        tracing::warn!(error = %e, "purging ended background jobs failed");
    }
    let retention_ms = inner.deps.config().limits.idempotency_key_retention_secs as i64 * 1000;
    match inner
        .deps
        .store
        .purge_expired(now, now - retention_ms)
        .await
    {
        Ok(p) if p.login_tokens + p.idempotency_keys > 0 => tracing::info!(
            login_tokens = p.login_tokens,
            idempotency_keys = p.idempotency_keys,
            "purged expired rows"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "purging expired rows failed"),
    }
}

/// How long a stored file may wait for the message that names it: an upload is
/// registered, written, then named by the send transaction, well within this.
const FILE_GRACE_MS: i64 = 3600 * 1000;

/// Files no message names (their sessions or users were deleted, or the send
/// that stored them failed half-way), an hour after anyone last uploaded them.
async fn sweep_files(inner: &Inner, now: i64) {
    let store = &inner.deps.store;
    let before = now - FILE_GRACE_MS;
    let orphans = match store.orphan_blobs(before, 500).await {
        Ok(o) => o,
        Err(e) => return tracing::warn!(error = %e, "listing unused files failed"),
    };
    let mut removed = 0;
    for sha in orphans {
        let blobs = &inner.deps.blobs;
        match store.sweep_blob(&sha, before, || blobs.delete(&sha)).await {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "removing an unused file failed"),
        }
    }
    if removed > 0 {
        tracing::info!(files = removed, "removed files no message names");
    }
}

/// Embedded mode's start: this is the only worker, so every `running` run
/// belongs to the previous process; back to `queued` with them. It must happen
/// before this process claims anything: done in the reaper's first sweep (after
/// a purge, while jobs were already being claimed), it could put a run this
/// process had just claimed back on the queue, and the run was claimed again
/// beside its live attempt (a reply printed twice).
pub(crate) async fn requeue_orphans(inner: &Inner) {
    match inner.deps.store.requeue_all_running().await {
        Ok(n) if n > 0 => tracing::info!(runs = n, "runs of the previous process requeued"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "requeueing orphaned runs failed"),
    }
    // Its background jobs too: taken over now rather than when their leases run out.
    match inner.deps.store.lapse_all_job_leases().await {
        Ok(n) if n > 0 => tracing::info!(
            jobs = n,
            "background jobs of the previous process taken over"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "taking over background jobs failed"),
    }
}

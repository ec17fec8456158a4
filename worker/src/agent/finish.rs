//! The end of an attempt: persist and announce the run's end, or give the run
//! back (shutdown) so another worker resumes it.

use std::time::{Duration, Instant};

use weft_llm::Usage;
use weft_shared::api::UsageDto;
use weft_shared::event::EventKind;
use weft_shared::ids::MessageId;
use weft_store::{ClaimedRun, FinishOutcome, RunEnd, RunStatus, retrying};

use super::Execution;
use crate::Inner;
use crate::context::window::ContextUse;
use crate::emitter::Emitter;

/// The run's usage as the wire reports it.
pub(super) fn usage_dto(u: Usage, context: ContextUse) -> UsageDto {
    UsageDto {
        input: u.input,
        output: u.output,
        cache_read: u.cache_read,
        reasoning: u.reasoning,
        context_tokens: context.tokens,
        context_window: context.window,
    }
}

/// What `finish` reports besides the end itself.
pub(super) struct Totals {
    pub usage: Usage,
    pub context: ContextUse,
    pub ttft_ms: Option<u64>,
    pub started: Instant,
}

/// Persist the end of the run, then announce it; start the follow-up run if any.
pub(super) async fn finish(
    inner: &Inner,
    run: &ClaimedRun,
    em: &mut Emitter,
    end: RunEnd,
    totals: &Totals,
) -> Execution {
    em.flush().await;
    inner
        .failure_point(crate::failure::FailurePoint::BeforeFinish)
        .await;
    let usage = usage_dto(totals.usage, totals.context);
    let (store, limits) = (
        &inner.deps.store,
        weft_store::RunLimits::from(&inner.deps.config().limits),
    );
    let finish_run = || store.finish_run(run, &inner.id, &end, usage, totals.ttft_ms, &limits);
    let outcome = match finish_run().await {
        Ok(o) => o,
        Err(e) => match after_a_failed_finish(inner, run, &end, finish_run).await {
            Some(o) => o,
            None => {
                tracing::error!(run.id = %run.id, error = %e, "finishing run failed; leaving it to the reaper");
                return Execution::Abandoned;
            }
        },
    };
    let retention = Duration::from_secs(inner.deps.config().events.retention_secs);
    let (message_id, followup, parent) = match outcome {
        FinishOutcome::Finished {
            message_id,
            followup,
            parent,
        } => (message_id, followup, parent),
        FinishOutcome::Lost => return Execution::Abandoned,
        FinishOutcome::Deleted => {
            // Deleted with its session or user: nothing to save, but attached
            // clients must see the end, and the log must expire.
            em.emit(EventKind::Cancelled {
                by: "deleted".into(),
            })
            .await;
            em.retire(retention).await;
            metrics::counter!("weft_runs_finished_total", "status" => "cancelled").increment(1);
            return Execution::Ended;
        }
    };
    if let RunEnd::Succeeded { citations, .. } = &end
        && !citations.is_empty()
    {
        em.emit(EventKind::Citations {
            items: citations.clone(),
        })
        .await;
    }
    let duration_ms = totals.started.elapsed().as_millis() as u64;
    let (kind, status) = match end {
        RunEnd::Succeeded { .. } => (
            EventKind::Done {
                message_id: message_id.unwrap_or_default(),
                model: run.model.clone(),
                usage,
                ttft_ms: totals.ttft_ms,
                duration_ms,
            },
            "succeeded",
        ),
        RunEnd::Failed { error, .. } => (EventKind::Error(error), "failed"),
        RunEnd::Cancelled { .. } => {
            let by = inner
                .deps
                .store
                .get_run_unscoped(&run.id)
                .await
                .ok()
                .and_then(|r| r.cancelled_by)
                .unwrap_or_else(|| "user".into());
            (EventKind::Cancelled { by }, "cancelled")
        }
    };
    em.emit(kind).await;
    em.retire(retention).await;
    metrics::counter!("weft_runs_finished_total", "status" => status).increment(1);
    metrics::histogram!("weft_run_duration_seconds").record(totals.started.elapsed().as_secs_f64());
    if let Some(ttft) = totals.ttft_ms {
        metrics::histogram!("weft_run_ttft_seconds").record(ttft as f64 / 1000.0);
    }
    // Messages that waited behind it, and the run that delegated it.
    for next in followup.into_iter().chain(parent) {
        inner.runs.requeue(next).await;
    }
    Execution::Ended
}

/// A finish that failed with a database error may still have committed (the
/// answer lost with the connection): then the run already shows this end and
/// its reply, and nobody else would announce it — its clients and its Lark card
/// would wait for an end that never comes. Else, while the run is still this
/// attempt's, the finish is tried again (retried through database errors).
async fn after_a_failed_finish<F, Fut>(
    inner: &Inner,
    run: &ClaimedRun,
    end: &RunEnd,
    finish_run: F,
) -> Option<FinishOutcome>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = weft_store::Result<FinishOutcome>>,
{
    let store = &inner.deps.store;
    let now = retrying("reading a run after its finish failed", || {
        store.get_run_unscoped(&run.id)
    })
    .await
    .ok()?;
    let ended_as = match end {
        RunEnd::Succeeded { .. } => RunStatus::Succeeded,
        RunEnd::Failed { .. } => RunStatus::Failed,
        RunEnd::Cancelled { .. } => RunStatus::Cancelled,
    };
    match now.status {
        s if s == ended_as => Some(FinishOutcome::Finished {
            message_id: now.final_message_id.map(MessageId),
            followup: None,
            // Back on the queue with that commit: the reaper enqueues it.
            parent: None,
        }),
        RunStatus::Running => retrying("finishing the run", finish_run).await.ok(),
        _ => None,
    }
}

/// Give the run back so another worker resumes it (shutdown past its grace, or
/// a panic in this attempt).
pub(crate) async fn release(inner: &Inner, run: &weft_shared::ids::RunId) {
    match inner.deps.store.release_run(run, &inner.id).await {
        Ok(true) => inner.runs.requeue(run.clone()).await,
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(run.id = %run, error = %e, "releasing run failed; the reaper will pick it up")
        }
    }
}

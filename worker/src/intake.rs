//! Intake: a run job arrives, the run is claimed (or dropped), and its attempt
//! is started under panic isolation with its heartbeat and Lark card; a run
//! whose attempts are spent is failed here. Split from `lib.rs` (issue 24).

use std::sync::Arc;
use std::time::Duration;

use weft_shared::api::ErrorBody;
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::RunId;
use weft_shared::job::RunJob;
use weft_shared::queue::JobHandler;
use weft_shared::telemetry;
use weft_shared::time::now_ms;
use weft_store::{ClaimOutcome, ClaimedRun};

use crate::{Inner, RunStop, agent, heartbeat};

pub(crate) struct Handler(pub(crate) Arc<Inner>);

#[async_trait::async_trait]
impl JobHandler for Handler {
    async fn handle(&self, job: RunJob) {
        let inner = self.0.clone();
        let Ok(slot) = inner.slots.clone().acquire_owned().await else {
            return;
        };
        let picked = now_ms();
        if job.enqueued_at > 0 {
            metrics::histogram!("weft_queue_wait_seconds")
                .record((picked - job.enqueued_at).max(0) as f64 / 1000.0);
        }
        let cfg = &inner.deps.config().worker;
        // A run this process is still executing is never taken over, not even
        // from itself: its lease can look stale when heartbeats were lost (a
        // terminated database connection), and a second attempt beside the live
        // one would run its steps twice and leave a half-drawn Lark card. Only
        // this process knows the first attempt is alive, so the check lives here
        // and not in the claim's SQL; a run released back to `queued` (a
        // decided approval) is still claimed at once.
        let executing = inner
            .running
            .lock()
            .expect("running lock")
            .contains_key(&job.run_id);
        let stale_before = if executing {
            i64::MIN
        } else {
            inner.stale_before()
        };
        let claim = inner
            .deps
            .store
            .claim_run(&job.run_id, &inner.id, stale_before, cfg.max_attempts)
            .await;
        tracing::debug!(run.id = %job.run_id, queue_wait_ms = picked - job.enqueued_at, claim_ms = now_ms() - picked, "job picked up");
        match claim {
            Ok(ClaimOutcome::Claimed(run)) => {
                // Executing from the claim on: starting the Lark card can take
                // seconds when the database is slow, long enough for the lease
                // to look stale and the run's job to come back here.
                let stop = Arc::new(RunStop::new());
                inner
                    .running
                    .lock()
                    .expect("running lock")
                    .insert(run.id.clone(), stop.clone());
                let span = run_span(&run, job.traceparent.as_deref());
                let card =
                    tracing::Instrument::instrument(inner.follow_in_lark(&run.id), span.clone())
                        .await;
                let card = match card {
                    Ok(card) => card,
                    Err(e) => {
                        // Its reply would reach no chat: another attempt, once
                        // the database answers, shows it.
                        span.in_scope(|| tracing::warn!(error = %e, "the run's lark chat could not be read; releasing the run"));
                        agent::release(&inner, &run.id).await;
                        forget_running(&inner, &run.id, &stop);
                        return;
                    }
                };
                let task_inner = inner.clone();
                inner.tasks.spawn(async move {
                    let _slot = slot;
                    metrics::gauge!("weft_runs_executing").increment(1.0);
                    let (seq_tx, seq_rx) = tokio::sync::oneshot::channel();
                    let beat = tokio::spawn(heartbeat(
                        task_inner.clone(),
                        run.id.clone(),
                        stop.clone(),
                        seq_rx,
                    ));
                    let id = run.id.clone();
                    // A panic fails this attempt, never the worker: the lease
                    // stops, the run goes back to the queue and is retried like
                    // any other failure (until `max_attempts`).
                    let execution = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
                        tracing::Instrument::instrument(
                            agent::execute(task_inner.clone(), run, stop.clone(), seq_tx),
                            span.clone(),
                        ),
                    ))
                    .await;
                    beat.abort();
                    let execution = match execution {
                        Ok(e) => e,
                        Err(panic) => {
                            let what = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            tracing::error!(run.id = %id, panic = %what, "run attempt panicked; retrying it");
                            metrics::counter!("weft_run_panics_total").increment(1);
                            agent::release(&task_inner, &id).await;
                            agent::Execution::Abandoned
                        }
                    };
                    span.in_scope(|| tracing::info!(outcome = ?execution, "run attempt over"));
                    match (execution, card) {
                        (agent::Execution::Abandoned, Some(card)) => card.abandon(),
                        // Buttons up; then the card only watches the waiting run.
                        (agent::Execution::Waiting, Some(card)) => card.settle(),
                        (agent::Execution::Ended, _) | (_, None) => {}
                    }
                    forget_running(&task_inner, &id, &stop);
                    metrics::gauge!("weft_runs_executing").decrement(1.0);
                });
            }
            Ok(ClaimOutcome::Exhausted(run)) => match inner.follow_in_lark(&run.id).await {
                Ok(_) => exhausted(&inner, run).await,
                // Failing it now would show no card: its lease lapses and the
                // reaper brings it back once the database answers.
                Err(e) => {
                    tracing::warn!(run.id = %run.id, error = %e, "the run's lark chat could not be read; leaving the exhausted run to the reaper")
                }
            },
            Ok(ClaimOutcome::NotClaimable) => {}
            Err(e) => {
                tracing::warn!(run.id = %job.run_id, error = %e, "claim failed; the reaper will retry")
            }
        }
    }
}

/// This attempt is over: `run` leaves the running map, unless a later attempt
/// of it (released and claimed again before this one ended) holds the entry.
fn forget_running(inner: &Inner, run: &RunId, stop: &Arc<RunStop>) {
    let mut running = inner.running.lock().expect("running lock");
    if running.get(run).is_some_and(|s| Arc::ptr_eq(s, stop)) {
        running.remove(run);
    }
}

/// The span of one attempt at `run`: a child of the request that created the
/// run (its stored `traceparent`), whichever worker runs it and however often it
/// resumes; a stretch resumed after approvals links to the request that
/// decided (`resumed_by`, stored with the decision: the job that resumes the
/// run may be the worker's own, when the decision came while it was handing
/// the run to the database), else to the job's context when it is another.
fn run_span(run: &ClaimedRun, job_traceparent: Option<&str>) -> tracing::Span {
    let span = tracing::info_span!(
        parent: None,
        "run",
        run.id = %run.id,
        session.id = %run.session_id,
        attempt = run.attempt,
        model = %run.model,
        trace_id = tracing::field::Empty,
    );
    let parent = run.traceparent.as_deref().or(job_traceparent);
    telemetry::join_trace(&span, parent, None);
    let decided = run.pending_step.as_ref().and(run.resumed_by.as_deref());
    if let Some(resumer) = decided.or(job_traceparent)
        && parent != Some(resumer)
    {
        telemetry::link_trace(&span, resumer);
    }
    span
}

/// The attempt budget is spent: fail the run and say so on its stream.
async fn exhausted(inner: &Inner, run: ClaimedRun) {
    let error = ErrorBody {
        code: "attempts_exhausted".into(),
        message: format!(
            "the run failed {} times (its worker kept dying)",
            run.attempt - 1
        ),
    };
    match inner
        .deps
        .store
        .fail_exhausted(
            &run,
            &error,
            &weft_store::RunLimits::from(&inner.deps.config().limits),
        )
        .await
    {
        Ok(next) => {
            let seq = inner
                .deps
                .bus
                .last_seq(&run.id)
                .await
                .unwrap_or(0)
                .max(run.last_seq)
                + 1;
            let ev = RunEvent {
                run_id: run.id.clone(),
                seq,
                ts: now_ms(),
                kind: EventKind::Error(error),
            };
            let _ = inner.deps.bus.publish(&run.id, &Frame::encode(&ev)).await;
            let _ = inner
                .deps
                .bus
                .retire(
                    &run.id,
                    Duration::from_secs(inner.deps.config().events.retention_secs),
                )
                .await;
            metrics::counter!("weft_runs_finished_total", "status" => "failed").increment(1);
            // Messages that waited behind it, and the run that delegated it.
            for run in next {
                inner.runs.requeue(run).await;
            }
        }
        Err(e) => tracing::error!(run.id = %run.id, error = %e, "failing an exhausted run failed"),
    }
}

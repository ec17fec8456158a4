//! Human in the loop (docs/protocol.md, "Approvals"). A step with `confirm` calls suspends the
//! run instead of holding a worker: the pending step and its approvals are
//! stored, `approval_required` is published, and the run becomes
//! `waiting_approval` with no owner. Every decision re-enqueues it; the worker
//! that claims it announces the decisions (`approval_decided`, so the run's log
//! keeps one writer and gapless seqs) and either waits again (some still
//! pending) or runs the step's calls — approved ones run, denied and expired
//! ones go back to the model as errors it can react to.

use weft_llm::ToolCall;
use weft_shared::event::EventKind;
use weft_shared::store::{ApprovalStatus, NewApproval, PendingStep, WaitOutcome};
use weft_shared::time::now_ms;

use super::toolrun::Disposition;
use super::{Attempt, Flow, Leave, call_dto};

pub(super) async fn suspend(
    a: &mut Attempt<'_>,
    text: String,
    disposed: Vec<(ToolCall, Disposition)>,
) -> Flow {
    let ttl_ms = a.cfg.tools.approval_ttl_secs as i64 * 1000;
    let expires_at = now_ms() + ttl_ms;
    let approvals: Vec<NewApproval> = disposed
        .iter()
        .filter(|(_, d)| *d == Disposition::Confirm)
        .map(|(c, _)| NewApproval {
            id: format!("ap_{}", uuid::Uuid::now_v7().simple()),
            call_id: c.id.clone(),
            name: c.name.clone(),
            args: c.args.clone(),
            expires_at,
        })
        .collect();
    let pending = PendingStep {
        step: a.step,
        content: text,
        tool_calls: disposed.iter().map(|(c, _)| call_dto(c)).collect(),
    };
    // Stored before they are announced, so a decision as quick as the event
    // finds its approval.
    match a
        .inner
        .deps
        .store
        .request_approvals(&a.run.id, &a.inner.id, &pending, &approvals)
        .await
    {
        Ok(true) => {}
        Ok(false) => return Flow::Leave(Leave::Abandon),
        Err(e) => {
            tracing::error!(error = %e, "storing approvals failed; leaving the run to the reaper");
            return Flow::Leave(Leave::Abandon);
        }
    }
    for ap in &approvals {
        a.em.emit(EventKind::ApprovalRequired {
            step: a.step,
            approval_id: ap.id.clone(),
            call_id: ap.call_id.clone(),
            name: ap.name.clone(),
            args: ap.args.clone(),
            expires_at: ap.expires_at,
        })
        .await;
    }
    metrics::counter!("weft_approvals_requested_total").increment(approvals.len() as u64);
    wait(a).await
}

/// Hand the run to the database as `waiting_approval` (or straight back to the
/// queue when every approval was decided meanwhile).
async fn wait(a: &mut Attempt<'_>) -> Flow {
    a.em.flush().await;
    match a
        .inner
        .deps
        .store
        .wait_for_approvals(&a.run.id, &a.inner.id, a.em.seq())
        .await
    {
        Ok(WaitOutcome::Waiting) => Flow::Leave(Leave::Waiting),
        Ok(WaitOutcome::Decided) => {
            a.inner.runs.requeue(a.run.id.clone()).await;
            Flow::Leave(Leave::Waiting)
        }
        Ok(WaitOutcome::Lost) => Flow::Leave(Leave::Abandon),
        Err(e) => {
            tracing::error!(error = %e, "suspending for approval failed; leaving the run to the reaper");
            Flow::Leave(Leave::Abandon)
        }
    }
}

/// The run was claimed with a step waiting for approvals.
pub(super) async fn resume(a: &mut Attempt<'_>, pending: PendingStep) -> Flow {
    let store = &a.inner.deps.store;
    let approvals = match store.step_approvals(&a.run.id, pending.step).await {
        Ok(list) => list,
        Err(e) => {
            tracing::error!(error = %e, "loading approvals failed; leaving the run to the reaper");
            return Flow::Leave(Leave::Abandon);
        }
    };
    let mut announced = Vec::new();
    for ap in approvals.iter().filter(|ap| !ap.announced) {
        let Some(decision) = ap.status.verdict() else {
            continue;
        };
        a.em.emit(EventKind::ApprovalDecided {
            step: pending.step,
            approval_id: ap.id.clone(),
            call_id: ap.call_id.clone(),
            name: ap.name.clone(),
            decision,
            by: ap.decided_by.clone(),
        })
        .await;
        announced.push(ap.id.clone());
    }
    a.em.flush().await;
    if let Err(e) = store.mark_announced(&announced).await {
        // A later resume announces them again: a repeat, never a loss.
        tracing::warn!(error = %e, "marking approvals announced failed");
    }
    if approvals
        .iter()
        .any(|ap| ap.status == ApprovalStatus::Pending)
    {
        return wait(a).await;
    }
    let runner = match a.runner().await {
        Ok(r) => r,
        Err(flow) => return flow,
    };
    let calls: Vec<ToolCall> = pending
        .tool_calls
        .into_iter()
        .map(|c| ToolCall {
            id: c.id,
            name: c.name,
            args: c.args,
        })
        .collect();
    // An approval stands for the one call it showed: same id, tool and
    // arguments. (Ids are unique in a step stored since issue 20; one stored
    // before may repeat an id, and then only its first call can match.)
    let disposed = runner.dispose_step(calls, |call| {
        let ap = approvals
            .iter()
            .find(|ap| ap.call_id == call.id && ap.name == call.name && ap.args == call.args)?;
        Some(match ap.status {
            ApprovalStatus::Approved => Ok(()),
            ApprovalStatus::Denied => Err(format!(
                "error: the user{} denied this call of {}; it did not run",
                ap.decided_by
                    .as_deref()
                    .map(|u| format!(" ({u})"))
                    .unwrap_or_default(),
                call.name
            )),
            ApprovalStatus::Expired | ApprovalStatus::Pending => Err(format!(
                "error: nobody approved this call of {} in time; it did not run",
                call.name
            )),
        })
    });
    a.run_tools(&runner, pending.content, disposed).await
}

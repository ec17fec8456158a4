//! What changes a run's fate after it was sent: cancel, an approval's decision,
//! a question's answer, a plan's decision, the end of runs deleted with their session or user. Each is the store's one
//! transaction (which takes the run's row first) followed by what the world must
//! hear: the worker holding the run is told to stop, or, for a run no worker
//! holds, its terminal event is published here, since nobody else would.

use std::time::Duration;

use weft_shared::api::ErrorBody;
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::{MessageId, RunId, UserId};
use weft_shared::time::now_ms;
use weft_store::{
    ActiveRun, AnswerOutcome, Answerer, CancelOutcome, DecideOutcome, Decision, PlanDecision,
    PlanOutcome, RunRecord, RunStatus, StoreError,
};

use crate::Runs;

impl Runs {
    /// Cancel `run` of `owner`'s (idempotent); `by` says who (`user`, `lark`).
    /// Its partial text is kept as the reply, and messages queued behind it
    /// become the next run.
    pub async fn cancel(
        &self,
        owner: &UserId,
        run: &RunId,
        by: &str,
    ) -> Result<CancelOutcome, StoreError> {
        let limits = weft_store::RunLimits::from(&self.live.get().limits);
        let outcome = self.store.cancel_run(owner, run, by, &limits).await?;
        if let CancelOutcome::Cancelled {
            run,
            followup,
            parent,
        } = &outcome
        {
            self.announce_cancel(run).await;
            for next in followup.iter().chain(parent) {
                self.enqueue(next.clone()).await;
            }
            self.cancel_children(&run.id).await;
        }
        Ok(outcome)
    }

    /// What `run` delegated ends with it (`cancelled` by `parent`), and
    /// what those delegated in turn: each told to its worker or its stream.
    pub async fn cancel_children(&self, run: &RunId) {
        match self.store.cancel_children(run, "parent").await {
            Ok(children) => {
                for child in &children {
                    self.announce_cancel(child).await;
                }
            }
            Err(e) => {
                // The children run on and end by themselves; their parent,
                // ended, takes nothing from them.
                tracing::warn!(run.id = %run, error = %e, "cancelling the runs it delegated failed");
            }
        }
    }

    /// Tell the world a run was cancelled: its worker (which then emits
    /// `cancelled`), or — for a run no worker had claimed — its stream directly.
    pub async fn announce_cancel(&self, run: &ActiveRun) {
        if !run.was_queued {
            if let Err(e) = self.bus.request_cancel(&run.id).await {
                tracing::warn!(run.id = %run.id, error = %e, "publishing cancel failed; the worker sees it at its next heartbeat");
            }
            return;
        }
        let Ok(rec) = self.store.get_run_unscoped(&run.id).await else {
            return;
        };
        let seq = self.bus.last_seq(&run.id).await.unwrap_or(0) + 1;
        if let Some(ev) = terminal_event(&rec, seq) {
            let _ = self.bus.publish(&run.id, &Frame::encode(&ev)).await;
            let _ = self.bus.retire(&run.id, self.retention()).await;
        }
    }

    /// Runs deleted with their session or user while active end `cancelled`
    /// (`by: "deleted"`). A running run's worker is told to stop and emits the
    /// terminal event itself (it alone numbers the run's events; its end finds
    /// the row gone); for any other run nobody would, so it is published here.
    /// Either way the log is retired now, so it expires even if that worker
    /// dies first.
    pub async fn end_deleted(&self, runs: &[ActiveRun]) {
        let retention = self.retention();
        for run in runs {
            if run.was_queued {
                let seq = self.bus.last_seq(&run.id).await.unwrap_or(0) + 1;
                let ev = RunEvent {
                    run_id: run.id.clone(),
                    seq,
                    ts: now_ms(),
                    kind: EventKind::Cancelled {
                        by: "deleted".into(),
                    },
                };
                if let Err(e) = self.bus.publish(&run.id, &Frame::encode(&ev)).await {
                    tracing::warn!(run.id = %run.id, error = %e, "publishing the end of a deleted run failed");
                }
            } else if let Err(e) = self.bus.request_cancel(&run.id).await {
                tracing::warn!(run.id = %run.id, error = %e, "publishing cancel failed; the worker sees it at its next heartbeat");
            }
            if let Err(e) = self.bus.retire(&run.id, retention).await {
                tracing::warn!(run.id = %run.id, error = %e, "retiring a deleted run's log failed");
            }
        }
    }

    /// Decide a waiting tool call for `decider` (the person whose message
    /// caused the run, or an admin; `by` is the name others see). The first
    /// decision stands; a decision (or a late click on an expired approval)
    /// that moved the run puts it back on the queue, whichever door it came by.
    pub async fn decide(
        &self,
        approval_id: &str,
        decider: &UserId,
        is_admin: bool,
        by: &str,
        decision: Decision,
    ) -> Result<DecideOutcome, StoreError> {
        let outcome = self
            .store
            .decide_approval(
                approval_id,
                decider,
                is_admin,
                by,
                decision,
                weft_shared::telemetry::current_traceparent().as_deref(),
            )
            .await?;
        match &outcome {
            DecideOutcome::Decided { approval, resume } => {
                metrics::counter!("weft_approvals_decided_total", "decision" => approval.status.as_str())
                    .increment(1);
                if *resume {
                    self.requeue(approval.run_id.clone()).await;
                }
            }
            DecideOutcome::Expired { approval, resume } if *resume => {
                self.requeue(approval.run_id.clone()).await;
            }
            _ => {}
        }
        Ok(outcome)
    }

    /// Answer a question the agent asked, for `answerer` (the person whose
    /// message caused the run, or an admin; `by` is the name others see). The
    /// first answer stands; one that moved the run puts it back on the queue,
    /// whichever door it came by (the API, a Lark card, a reply in the chat).
    /// `key` names what made the answer where the door can (`lark:<message
    /// id>`): the same answer made again (a message handled again) is the one
    /// recorded.
    pub async fn answer(
        &self,
        question_id: &str,
        answerer: &UserId,
        is_admin: bool,
        by: &str,
        answer: Vec<String>,
        key: Option<&str>,
    ) -> Result<AnswerOutcome, StoreError> {
        let outcome = self
            .store
            .answer_question(
                question_id,
                &Answerer {
                    user: answerer,
                    admin: is_admin,
                    name: by,
                },
                answer,
                key,
                weft_shared::telemetry::current_traceparent().as_deref(),
            )
            .await?;
        match &outcome {
            AnswerOutcome::Answered { question, resume }
            | AnswerOutcome::Expired { question, resume } => {
                metrics::counter!("weft_questions_answered_total", "status" => question.status.as_str())
                    .increment(1);
                if *resume {
                    self.requeue(question.run_id.clone()).await;
                }
            }
            _ => {}
        }
        Ok(outcome)
    }

    /// Decide a plan the agent proposed (plan mode), for `decider` (the
    /// person whose message caused the run, or an admin; `by` is the name
    /// others see). The first decision stands; one that moved the run puts it
    /// back on the queue, whichever door it came by (the API, a Lark card or
    /// reply, the REPL). `key` as for [`Runs::answer`].
    pub async fn decide_plan(
        &self,
        plan_id: &str,
        decider: &Answerer<'_>,
        decision: PlanDecision,
        comment: Option<String>,
        key: Option<&str>,
    ) -> Result<PlanOutcome, StoreError> {
        let outcome = self
            .store
            .decide_plan(
                plan_id,
                decider,
                decision,
                comment,
                key,
                weft_shared::telemetry::current_traceparent().as_deref(),
            )
            .await?;
        match &outcome {
            PlanOutcome::Decided { plan, resume } | PlanOutcome::Expired { plan, resume } => {
                metrics::counter!("weft_plans_decided_total", "status" => plan.status.as_str())
                    .increment(1);
                if *resume {
                    self.requeue(plan.run_id.clone()).await;
                }
            }
            _ => {}
        }
        Ok(outcome)
    }

    fn retention(&self) -> Duration {
        Duration::from_secs(self.live.get().events.retention_secs)
    }
}

/// The terminal event of an ended run, from its database row (None while it is
/// still active): what a stream shows for a run whose log says nothing more.
pub fn terminal_event(run: &RunRecord, seq: u64) -> Option<RunEvent> {
    let kind = match run.status {
        RunStatus::Succeeded => EventKind::Done {
            message_id: MessageId(run.final_message_id.clone().unwrap_or_default()),
            model: run.model.clone(),
            usage: run.usage,
            ttft_ms: run.ttft_ms,
            duration_ms: run.duration_ms.unwrap_or(0),
        },
        RunStatus::Failed => EventKind::Error(run.error.clone().unwrap_or(ErrorBody {
            code: "failed".into(),
            message: "the run failed".into(),
        })),
        RunStatus::Cancelled => EventKind::Cancelled {
            by: run.cancelled_by.clone().unwrap_or_else(|| "user".into()),
        },
        _ => return None,
    };
    Some(RunEvent {
        run_id: run.id.clone(),
        seq,
        ts: now_ms(),
        kind,
    })
}

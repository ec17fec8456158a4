//! Final cards that were never shown. A run's card follower lives in the
//! worker that executes the run, so a worker killed after the run ended but
//! before the card showed that end (a moment of a few Lark calls) leaves the
//! card as it was — "thinking…", or half an answer — and no attempt will come
//! to finish it: the run is over. The run remembers that it owes a final card
//! (`runs.lark_card_due`, set when an attempt starts following it, cleared when
//! the end is shown), and every worker's reaper claims runs that ended
//! [`overdue_after`] ago still owing one, and replays their event log into the
//! same card (the cards are on the run; one created but not recorded comes back
//! by its `uuid`). Where the log is gone — `weft up`'s events live in its
//! memory and die with it — the card is told from the database instead: the
//! run's stored answer and how it ended. After [`GIVE_UP`] the debt is dropped.

use std::time::Duration;

use tokio_util::task::TaskTracker;
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::ids::{MessageId, RunId};
use weft_shared::states::RunStatus;
use weft_shared::store::StoreError;

use super::LarkEgress;

/// How long after its end a run's final card is looked for no more.
const GIVE_UP: Duration = Duration::from_secs(3600);
/// Runs claimed per sweep.
const PER_SWEEP: u32 = 20;

/// A run's end not shown this long after it (and since it was last claimed) is
/// overdue: twice the time after which a silent worker counts as dead, so a
/// follower still retrying Lark calls in a live worker is left to finish.
pub(crate) fn overdue_after(stale_after: Duration) -> Duration {
    stale_after * 2
}

impl LarkEgress {
    /// Shows the end of runs whose final card is overdue (one reaper tick).
    pub(crate) async fn finish_overdue(&self, tasks: &TaskTracker, stale_after: Duration) {
        let claimed = self
            .store
            .claim_overdue_lark_cards(
                overdue_after(stale_after).as_millis() as i64,
                GIVE_UP.as_millis() as i64,
                PER_SWEEP,
            )
            .await;
        let (runs, given_up) = match claimed {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "looking for overdue lark cards failed");
                return;
            }
        };
        if given_up > 0 {
            tracing::warn!(
                runs = given_up,
                "lark runs ended an hour ago without their final card; given up"
            );
        }
        for run in runs {
            if self.is_following(&run) {
                continue;
            }
            tracing::warn!(run.id = %run, "lark run ended without its final card (its worker stopped?); showing it from the event log");
            metrics::counter!("weft_lark_cards_finished_late_total").increment(1);
            let record = match self.bus.last_seq(&run).await {
                Ok(n) if n > 0 => None,
                _ => match self.record_of(&run).await {
                    Ok(events) => Some(events),
                    Err(e) => {
                        tracing::warn!(run.id = %run, error = %e, "reading the ended run failed; the next sweep tries again");
                        continue;
                    }
                },
            };
            if let Err(e) = self.start_from(tasks, &run, record).await {
                tracing::warn!(run.id = %run, error = %e, "finishing the run's lark card failed; the next sweep tries again");
            }
        }
    }
}

impl LarkEgress {
    /// The events of ended `run` as the database tells them: its stored
    /// answer, then how it ended.
    async fn record_of(&self, run: &RunId) -> Result<Vec<RunEvent>, StoreError> {
        let rec = self.store.get_run_unscoped(run).await?;
        let answer = self.store.run_answer(&rec).await?;
        let ts = rec.finished_at.unwrap_or(rec.created_at);
        let end =
            match rec.status {
                RunStatus::Succeeded => EventKind::Done {
                    message_id: MessageId(rec.final_message_id.clone().unwrap_or_default()),
                    model: rec.model.clone(),
                    usage: rec.usage,
                    ttft_ms: rec.ttft_ms,
                    duration_ms: rec.duration_ms.unwrap_or_default(),
                },
                RunStatus::Cancelled => EventKind::Cancelled {
                    by: rec.cancelled_by.clone().unwrap_or_default(),
                },
                _ => EventKind::Error(rec.error.clone().unwrap_or_else(|| {
                    weft_shared::api::ErrorBody {
                        code: "internal".into(),
                        message: "the run failed".into(),
                    }
                })),
            };
        let mut kinds = Vec::new();
        if !answer.is_empty() {
            kinds.push(EventKind::Text {
                step: 0,
                delta: answer,
            });
        }
        kinds.push(end);
        Ok(kinds
            .into_iter()
            .enumerate()
            .map(|(i, kind)| RunEvent {
                run_id: run.clone(),
                seq: i as u64 + 1,
                ts,
                kind,
            })
            .collect())
    }
}

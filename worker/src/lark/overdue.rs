//! Final cards that were never shown. A run's card follower lives in the
//! worker that executes the run, so a worker killed after the run ended but
//! before the card showed that end (a moment of a few Lark calls) leaves the
//! card as it was — "thinking…", or half an answer — and no attempt will come
//! to finish it: the run is over. The run remembers that it owes a final card
//! (`runs.lark_card_due`, set when an attempt starts following it, cleared when
//! the end is shown), and every worker's reaper claims runs that ended
//! [`overdue_after`] ago still owing one, and replays their event log into the
//! same card (the cards are on the run; one created but not recorded comes back
//! by its `uuid`). The log is completed from the database: the worker records
//! a run's end before it publishes it, so a worker killed in between leaves a
//! log without its end; and where the log is gone — `weft up`'s events live in
//! its memory and die with it — the run's stored answer stands for it. After [`GIVE_UP`] the debt is dropped.

use std::time::Duration;

use tokio_util::task::TaskTracker;
use weft_shared::api::ErrorBody;
use weft_shared::bus::READ_PAGE;
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::ids::{MessageId, RunId};
use weft_shared::states::RunStatus;
use weft_store::{RunRecord, StoreError};

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
            let record = match self.record_of(&run).await {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!(run.id = %run, error = %e, "reading the ended run failed; the next sweep tries again");
                    continue;
                }
            };
            let record = Some(record);
            if let Err(e) = self.start_from(tasks, &run, record).await {
                tracing::warn!(run.id = %run, error = %e, "finishing the run's lark card failed; the next sweep tries again");
            }
        }
    }
}

impl LarkEgress {
    /// The events of ended `run` to show: its event log, ending as the
    /// database says it ended. The worker records the end before it
    /// publishes it, so a worker killed in between leaves a log without its
    /// last event (and a restarted `weft up`, no log at all: then the
    /// database's stored answer stands for it).
    async fn record_of(&self, run: &RunId) -> Result<Vec<RunEvent>, StoreError> {
        let mut log = Vec::new();
        let mut after = 0;
        loop {
            let page = match self.bus.read(run, after, READ_PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(run.id = %run, error = %e, "reading the run's event log failed; telling its end from the database");
                    log.clear();
                    break;
                }
            };
            let full = page.len() >= READ_PAGE;
            for frame in page {
                after = frame.seq;
                if let Some(event) = frame.decode() {
                    log.push(event);
                }
            }
            if !full {
                break;
            }
        }
        let rec = self.store.get_run_unscoped(run).await?;
        let answer = if log.is_empty() {
            self.store.run_answer(&rec).await?
        } else {
            String::new()
        };
        Ok(completed(log, run, &rec, answer))
    }
}

/// `log` ending as `rec` says the run ended: as it is when it has its end,
/// else with that end after it (and, for a log that is gone, `answer` — the
/// stored reply — as its one step's text).
fn completed(
    mut log: Vec<RunEvent>,
    run: &RunId,
    rec: &RunRecord,
    answer: String,
) -> Vec<RunEvent> {
    if log.last().is_some_and(|e| e.kind.is_terminal()) {
        return log;
    }
    let ts = rec.finished_at.unwrap_or(rec.created_at);
    let mut seq = log.last().map_or(0, |e| e.seq);
    let mut push = |kind| {
        seq += 1;
        log.push(RunEvent {
            run_id: run.clone(),
            seq,
            ts,
            kind,
        });
    };
    if !answer.is_empty() {
        push(EventKind::Text {
            step: 0,
            delta: answer,
        });
    }
    push(match rec.status {
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
        _ => EventKind::Error(rec.error.clone().unwrap_or_else(|| ErrorBody {
            code: "internal".into(),
            message: "the run failed".into(),
        })),
    });
    log
}

#[cfg(test)]
mod tests {
    use weft_shared::api::UsageDto;
    use weft_shared::fold::RunFold;
    use weft_shared::ids::{SessionId, UserId};

    use super::*;

    fn rec(status: RunStatus) -> RunRecord {
        RunRecord {
            id: RunId("r".into()),
            session_id: SessionId("s".into()),
            user_id: UserId("u".into()),
            status,
            model: "mock".into(),
            agent: "agent".into(),
            attempt: 1,
            usage: UsageDto::default(),
            ttft_ms: Some(3),
            duration_ms: Some(40),
            error: None,
            cancelled_by: None,
            final_message_id: Some("m".into()),
            created_at: 1,
            finished_at: Some(2),
        }
    }

    fn text(seq: u64, delta: &str) -> RunEvent {
        RunEvent {
            run_id: RunId("r".into()),
            seq,
            ts: 1,
            kind: EventKind::Text {
                step: 1,
                delta: delta.into(),
            },
        }
    }

    fn fold(events: &[RunEvent]) -> RunFold {
        let mut f = RunFold::default();
        for e in events {
            f.apply(e);
        }
        f
    }

    #[test]
    fn a_log_cut_before_its_end_ends_as_the_database_says() {
        let run = RunId("r".into());
        let log = vec![text(1, "All "), text(2, "done.")];
        let shown = completed(log, &run, &rec(RunStatus::Succeeded), String::new());
        assert_eq!(shown.len(), 3);
        assert_eq!(shown[2].seq, 3);
        let f = fold(&shown);
        assert!(f.succeeded());
        assert_eq!(f.text(), "All done.");
        // Cancelled while it streamed: the partial text stays.
        let f = fold(&completed(
            vec![text(1, "Half")],
            &run,
            &rec(RunStatus::Cancelled),
            String::new(),
        ));
        assert!(matches!(
            f.outcome,
            Some(weft_shared::fold::Outcome::Cancelled { .. })
        ));
        assert_eq!(f.text(), "Half");
    }

    #[test]
    fn a_whole_log_is_left_alone_and_a_gone_one_is_the_stored_answer() {
        let run = RunId("r".into());
        let whole = completed(
            vec![text(1, "x")],
            &run,
            &rec(RunStatus::Failed),
            String::new(),
        );
        let whole_again = completed(
            whole.clone(),
            &run,
            &rec(RunStatus::Succeeded),
            String::new(),
        );
        assert_eq!(whole_again, whole, "it has its end already");
        let gone = completed(
            Vec::new(),
            &run,
            &rec(RunStatus::Succeeded),
            "The answer.".into(),
        );
        let f = fold(&gone);
        assert!(f.succeeded());
        assert_eq!(f.text(), "The answer.");
    }
}

//! One card follower: reads its run's events (replay, then live), folds them
//! into a [`ReplyView`] and hands each new view to the [`Driver`].
//!
//! A follower serves one attempt and moves through three phases:
//!
//! * **following** — every event is shown, until the reply ends;
//! * **settling** — the attempt left the run waiting for people: the events
//!   it published (up to the log's end at that moment) are shown, open
//!   approvals, questions and plans included, then
//! * **watching** — nothing more is shown unless the run ends without another
//!   attempt (cancelled, deleted, failed by the gateway or the reaper: nobody
//!   else would update the card then). The next attempt's `run_started` ends
//!   the watch: that attempt's own follower has the card from there on.
//!
//! In every phase a later attempt's `run_started` hands the card over at once.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use weft_lark::text::Lang;
use weft_shared::bus::{AttachItem, attach};
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::RunId;
use weft_store::LarkTarget;

use super::LarkEgress;
use super::driver::Driver;
use super::view::ReplyView;

/// How often a silent run's log is re-read (as the gateway's SSE does).
const IDLE: Duration = Duration::from_secs(15);
/// A settling follower that cannot read its attempt's last events by then
/// shows what it has.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// How a follower ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The reply ended: the final card is shown.
    Final,
    /// Watching stopped (shutdown, or the log went away): the view shown stays.
    Stopped,
    /// Another follower shows the card now: stop after the call in flight.
    Left,
}

enum Phase {
    Following,
    Settling { upto: u64, deadline: Instant },
    Watching,
}

/// What one event means for the card.
enum Verdict {
    Show,
    Skip,
    End(Ending),
}

/// The reading side's state.
struct Reader {
    /// The log's last seq before this attempt (unknown: bus trouble).
    before: Option<u64>,
    /// This attempt's `run_started`.
    own_start: Option<u64>,
    seen: u64,
    phase: Phase,
    view: ReplyView,
}

impl Reader {
    fn judge(&mut self, event: &RunEvent) -> Verdict {
        if let EventKind::RunStarted { .. } = event.kind {
            let later = match self.phase {
                Phase::Watching => true,
                _ => match self.before {
                    Some(before) if event.seq > before => {
                        self.own_start.replace(event.seq).is_some()
                    }
                    _ => false,
                },
            };
            if later {
                return Verdict::End(Ending::Left);
            }
        }
        if matches!(self.phase, Phase::Watching) && !event.kind.is_terminal() {
            return Verdict::Skip;
        }
        self.view.apply(event);
        Verdict::Show
    }

    /// Settling and every event of the attempt read: start watching.
    fn settled(&self) -> bool {
        match self.phase {
            Phase::Settling { upto, deadline } => self.seen >= upto || Instant::now() >= deadline,
            _ => false,
        }
    }
}

/// The signals a follower obeys.
pub(super) struct Signals {
    /// Someone else shows the card now.
    pub leave: CancellationToken,
    /// The attempt left the run waiting.
    pub settle: CancellationToken,
    /// The worker shuts down: stop watching.
    pub shutdown: CancellationToken,
}

impl LarkEgress {
    /// Streams `run`'s reply into its cards (see the module docs for when it
    /// stops). `before`: the log's last seq before this attempt. `record`:
    /// the events to show instead of the log's (a log that is gone).
    pub(super) async fn follow(
        self,
        run: RunId,
        target: LarkTarget,
        before: Option<u64>,
        signals: Signals,
        record: Option<Vec<RunEvent>>,
    ) {
        let mut events: std::pin::Pin<Box<dyn futures::Stream<Item = AttachItem> + Send>> =
            match record {
                Some(events) => Box::pin(futures::stream::iter(
                    events
                        .into_iter()
                        .map(|e| AttachItem::Frame(Frame::encode(&e))),
                )),
                None => match attach(self.bus.clone(), run.clone(), 0, IDLE).await {
                    Ok(events) => Box::pin(events),
                    Err(e) => {
                        tracing::warn!(run.id = %run, error = %e, "lark card cannot follow the run");
                        return;
                    }
                },
            };
        let (views, latest) = watch::channel(ReplyView::default());
        let lang = Lang::of(&target.text, self.tenant);
        let driver = Driver::new(
            self.clone(),
            run.clone(),
            target,
            lang,
            before,
            signals.settle.clone(),
            signals.leave.clone(),
        );
        // In the card's span: its Lark calls are the card's children.
        let driving = tokio::spawn(tracing::Instrument::in_current_span(driver.drive(latest)));
        let mut reader = Reader {
            before,
            own_start: None,
            seen: 0,
            phase: Phase::Following,
            view: ReplyView::default(),
        };
        let Signals {
            leave,
            settle,
            shutdown,
        } = signals;
        let ending = loop {
            if reader.settled() {
                reader.phase = Phase::Watching;
                // Once more with settling known: approvals, questions and
                // plans announced before this attempt get their cards too,
                // if still open.
                views.send_replace(reader.view.clone());
            }
            let deadline = match reader.phase {
                Phase::Settling { deadline, .. } => Some(deadline),
                _ => None,
            };
            let watching = matches!(reader.phase, Phase::Watching);
            let item = tokio::select! {
                biased;
                _ = leave.cancelled() => break Ending::Left,
                _ = shutdown.cancelled(), if watching => break Ending::Stopped,
                _ = settle.cancelled(), if matches!(reader.phase, Phase::Following) => {
                    let upto = self.bus.last_seq(&run).await.unwrap_or(reader.seen);
                    reader.phase = Phase::Settling { upto, deadline: Instant::now() + SETTLE_WITHIN };
                    continue;
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    tracing::warn!(run.id = %run, "lark card settled before reading its attempt's last events");
                    continue;
                }
                item = events.next() => item,
            };
            let Some(item) = item else {
                break Ending::Stopped;
            };
            let AttachItem::Frame(frame) = item else {
                continue;
            };
            reader.seen = reader.seen.max(frame.seq);
            let Some(event) = frame.decode() else {
                continue;
            };
            match reader.judge(&event) {
                Verdict::Skip => {}
                Verdict::End(ending) => break ending,
                Verdict::Show => {
                    views.send_replace(reader.view.clone());
                    if reader.view.is_final() {
                        break Ending::Final;
                    }
                }
            }
        };
        // The driver shows the last view it was handed, unless leaving, then
        // sees the channel closed.
        if ending == Ending::Left {
            leave.cancel();
        }
        drop(views);
        if driving.await.is_err() {
            tracing::warn!(run.id = %run, "lark card driver failed");
        }
        if ending == Ending::Final {
            self.end_reactions(&run).await;
        }
    }
}

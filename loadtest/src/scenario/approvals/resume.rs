//! Phase three: approve every waiting run, then check each one end to end. The
//! approvals go out first, all of them, as fast as the clients allow (the resume
//! is the load); then every run's event stream is re-attached from the start
//! (no `Last-Event-ID`: the whole log is replayed, then followed live until the
//! terminal event) and checked ([`super::check`]), and so are its stored
//! messages and final status.
//!
//! Approve → done is the `done` event's `ts` (the worker's clock) minus the
//! moment the approval was sent (this process's clock): both run on this machine,
//! since the load tester only talks to loopback addresses.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use weft_shared::api::ApprovalDecision;
use weft_shared::event::RunEvent;
use weft_shared::states::RunStatus;

use super::Findings;
use super::check::{self, StreamCheck};
use super::suspend::Suspended;
use crate::client::error_kind;
use crate::sse::SseReader;

/// Re-attaches allowed per run when a stream breaks before its terminal event.
const REATTACHES: u32 = 5;

/// A run's approval as sent.
pub struct Approved {
    pub run: Suspended,
    /// Unix ms just before the request went out.
    pub sent_unix_ms: i64,
    /// The request's round trip.
    pub took: Duration,
    /// `None` when the gateway took the decision; else why not.
    pub refused: Option<String>,
}

/// Approves every run, `concurrency` at a time.
pub async fn approve_all(runs: Vec<Suspended>, concurrency: usize) -> Vec<Approved> {
    futures::stream::iter(runs)
        .map(approve_one)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

async fn approve_one(run: Suspended) -> Approved {
    let sent_unix_ms = unix_ms();
    let t0 = Instant::now();
    let refused = match run
        .client
        .decide(&run.approval, ApprovalDecision::Approve)
        .await
    {
        Ok(r) if r.status().is_success() => None,
        Ok(r) => Some(format!("approve_{}", r.status().as_u16())),
        Err(e) => Some(format!("approve_{}", error_kind(&e))),
    };
    Approved {
        took: t0.elapsed(),
        run,
        sent_unix_ms,
        refused,
    }
}

/// One run after its approval, checked.
pub struct Resumed {
    pub findings: Findings,
    /// Approval sent → `done` published, ms.
    pub approve_to_done_ms: Option<i64>,
    pub done_unix_ms: Option<i64>,
    pub reattaches: u32,
}

/// Re-attaches to every approved run and checks it, `concurrency` at a time.
pub async fn verify_all(
    approved: &[Approved],
    concurrency: usize,
    timeout: Duration,
) -> Vec<Resumed> {
    futures::stream::iter(approved)
        .map(|a| verify_one(a, timeout))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

async fn verify_one(a: &Approved, timeout: Duration) -> Resumed {
    let (events, reattaches) = read_log(a, timeout).await;
    let mut findings = Findings::default();
    if let Some(why) = &a.refused {
        findings.lost(why.clone());
    }
    let stream: StreamCheck = check::events(&events, &a.run.approval, &mut findings);
    let client = &a.run.client;
    match client.all_messages(&a.run.session).await {
        Ok(messages) => check::messages(&messages, &a.run.call_id, &stream, &mut findings),
        Err(_) => findings.lost("messages_unreadable"),
    }
    match client.run(&a.run.run).await {
        Ok(r) if r.status == RunStatus::Succeeded => {}
        Ok(_) => findings.lost("run_not_succeeded"),
        Err(_) => findings.lost("run_unreadable"),
    }
    Resumed {
        approve_to_done_ms: stream.done_ts.map(|ts| ts - a.sent_unix_ms),
        done_unix_ms: stream.done_ts,
        findings,
        reattaches,
    }
}

/// The run's events from seq 1 to its terminal event (or as far as `timeout`
/// allows), re-attaching after the last seq seen when a stream breaks.
async fn read_log(a: &Approved, timeout: Duration) -> (Vec<RunEvent>, u32) {
    let mut client = a.run.client.clone();
    let mut events: Vec<RunEvent> = Vec::new();
    let mut reattaches = 0;
    let deadline = tokio::time::Instant::now() + timeout;
    let _ = tokio::time::timeout_at(deadline, async {
        loop {
            let last = events.last().map_or(0, |e| e.seq);
            match client.attach(&a.run.run, last).await {
                Ok(r) if r.status().is_success() => {
                    let mut reader = SseReader::new(Box::pin(r.bytes_stream()));
                    // Until the terminal event, or the stream ends (closed or
                    // broken: either way, re-attach after the last seq).
                    while let Ok(ev) = reader.next().await {
                        if let Ok(ev) = serde_json::from_str::<RunEvent>(&ev.data) {
                            let terminal = ev.kind.is_terminal();
                            events.push(ev);
                            if terminal {
                                return;
                            }
                        }
                    }
                }
                // 410 (log expired), 404: nothing more to read.
                Ok(r) if r.status().is_client_error() => return,
                _ => client.fail_over(),
            }
            reattaches += 1;
            if reattaches > REATTACHES {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    (events, reattaches)
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

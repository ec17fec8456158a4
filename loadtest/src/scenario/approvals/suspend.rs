//! Phase one: start every run and wait until it is suspended. Each run gets a
//! session of its own and one message, `@mock.tool current_time {}`, sent with
//! `stream: true`; its stream is read until `approval_required` (which names the
//! approval to decide) and dropped, and then `GET /v1/runs/{id}` is polled until
//! the run says `waiting_approval`. Only then does the run count as suspended.

use std::time::{Duration, Instant};

use futures::StreamExt;
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::states::RunStatus;

use super::Findings;
use crate::client::{WeftClient, error_kind};
use crate::sse::SseReader;

/// What every run sends: the mock model calls `current_time`, whose policy must be
/// `confirm` on the server.
pub const MESSAGE: &str = "@mock.tool current_time {}";
/// How often a run's status is polled while it is on its way to waiting.
const POLL: Duration = Duration::from_millis(25);

/// A run that waits for its approval.
#[derive(Clone)]
pub struct Suspended {
    pub client: WeftClient,
    pub session: String,
    pub run: String,
    pub approval: String,
    pub call_id: String,
    /// From the send to the `approval_required` event.
    pub to_event: Duration,
    /// When its status was first seen `waiting_approval`.
    pub waiting_at: Instant,
}

/// How one run's start went.
pub enum Start {
    Suspended(Suspended),
    /// The gateway did not accept the message: not a run, so not lost either.
    Refused(String),
    /// Accepted, but never seen waiting for an approval.
    NotSuspended(Findings),
}

/// Starts `n` runs, `concurrency` at a time, the i-th as `clients[i % len]`.
pub async fn start_all(
    clients: &[WeftClient],
    n: usize,
    concurrency: usize,
    timeout: Duration,
) -> Vec<Start> {
    futures::stream::iter(0..n)
        .map(|i| start_one(clients[i % clients.len()].clone(), timeout))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

async fn start_one(client: WeftClient, timeout: Duration) -> Start {
    let session = match client.create_session().await {
        Ok(s) => s.id,
        Err(e) => return Start::Refused(format!("create_session: {e}")),
    };
    let key = uuid::Uuid::new_v4().to_string();
    let sent = Instant::now();
    let response = match client.send_streaming(&session, MESSAGE, &key).await {
        Ok(r) => r,
        Err(e) => return Start::Refused(format!("send_{}", error_kind(&e))),
    };
    if !response.status().is_success() {
        return Start::Refused(format!("send_{}", response.status().as_u16()));
    }
    let mut f = Findings::default();
    let mut reader = SseReader::new(Box::pin(response.bytes_stream()));
    let required = tokio::time::timeout(timeout, async {
        loop {
            let Ok(ev) = reader.next().await else {
                return Err("stream_ended_before_approval_required");
            };
            let Ok(ev) = serde_json::from_str::<RunEvent>(&ev.data) else {
                continue;
            };
            match ev.kind {
                EventKind::ApprovalRequired {
                    approval_id,
                    call_id,
                    ..
                } => return Ok((ev.run_id.0, approval_id, call_id)),
                EventKind::Done { .. } => return Err("done_without_approval"),
                k if k.is_terminal() => return Err("ended_before_approval_required"),
                _ => {}
            }
        }
    })
    .await;
    let (run, approval, call_id) = match required {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => {
            f.lost(why);
            return Start::NotSuspended(f);
        }
        Err(_) => {
            f.lost("no_approval_required_in_time");
            return Start::NotSuspended(f);
        }
    };
    let to_event = sent.elapsed();
    drop(reader);
    let give_up = sent + timeout;
    loop {
        match client.run(&run).await {
            Ok(r) if r.status == RunStatus::WaitingApproval => break,
            Ok(r) if r.status.is_terminal() => {
                f.lost("ended_while_it_should_wait");
                return Start::NotSuspended(f);
            }
            _ => {}
        }
        if Instant::now() >= give_up {
            f.lost("never_waiting_approval");
            return Start::NotSuspended(f);
        }
        tokio::time::sleep(POLL).await;
    }
    Start::Suspended(Suspended {
        client,
        session,
        run,
        approval,
        call_id,
        to_event,
        waiting_at: Instant::now(),
    })
}

/// How many of `runs` still say `waiting_approval` (after the hold).
pub async fn count_waiting(runs: &[Suspended], concurrency: usize) -> u64 {
    futures::stream::iter(runs)
        .map(|s| async move {
            matches!(s.client.run(&s.run).await, Ok(r) if r.status == RunStatus::WaitingApproval)
        })
        .buffer_unordered(concurrency.max(1))
        .filter(|w| std::future::ready(*w))
        .count()
        .await as u64
}

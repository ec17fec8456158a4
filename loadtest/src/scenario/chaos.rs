//! `chaos`: runs flow (closed loop, like `reconnect` without deliberate drops)
//! while the load tester breaks the stack it started, at fixed points of the run:
//!
//! * 20 %: SIGKILL a worker process (embedded: the whole `weft up`), start it again;
//! * 45 %: delete every Redis key under the stack's own prefix (distributed);
//! * 65 %: SIGKILL the other worker (or the same one, if there is one);
//! * 80 %: restart a gateway (SIGTERM, then start on the same address).
//!
//! Afterwards every session is read back through the API ([`super::verify`]):
//! every accepted message must have exactly one complete reply, and every stream
//! the clients read must have been coherent (no gap, no duplicate, exact text).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::{Gauge, Params, Seat, SessionLog, closed_loop};
use crate::client::WeftClient;
use crate::stack::Stack;
use crate::stats::Recorder;

/// Run the loop and the chaos timeline; returns the session logs and the timeline.
pub async fn run(
    clients: Vec<WeftClient>,
    p: &Params,
    rec: Arc<Recorder>,
    gauge: Arc<Gauge>,
    stack: Arc<Mutex<Stack>>,
) -> (Vec<SessionLog>, Vec<String>) {
    let start = Instant::now();
    let total = p.ramp + p.duration;
    let chaos = {
        let stack = stack.clone();
        tokio::spawn(async move {
            let mut timeline = Vec::new();
            let mut note = |start: Instant, what: String| {
                timeline.push(format!("t={:>5.1}s {what}", start.elapsed().as_secs_f64()));
            };
            let at = |f: f64| start + total.mul_f64(f);
            tokio::time::sleep_until(at(0.20).into()).await;
            let r = stack
                .lock()
                .await
                .kill_worker(0, Duration::from_millis(500))
                .await;
            note(start, outcome(r));
            tokio::time::sleep_until(at(0.45).into()).await;
            match stack.lock().await.flush_redis().await {
                Ok(Some(n)) => note(
                    start,
                    format!("deleted {n} Redis keys under the stack's prefix"),
                ),
                Ok(None) => note(start, "no Redis in this mode: flush skipped".into()),
                Err(e) => note(start, format!("Redis flush failed: {e:#}")),
            }
            tokio::time::sleep_until(at(0.65).into()).await;
            let r = stack
                .lock()
                .await
                .kill_worker(1, Duration::from_millis(500))
                .await;
            note(start, outcome(r));
            tokio::time::sleep_until(at(0.80).into()).await;
            let r = stack
                .lock()
                .await
                .restart_gateway(0, Duration::from_millis(500))
                .await;
            note(start, outcome(r));
            timeline
        })
    };
    let seats = clients.into_iter().map(Seat::from).collect();
    let logs = closed_loop(seats, p, rec, gauge).await;
    let timeline = chaos.await.unwrap_or_default();
    (logs, timeline)
}

fn outcome(r: anyhow::Result<String>) -> String {
    r.unwrap_or_else(|e| format!("FAILED: {e:#}"))
}

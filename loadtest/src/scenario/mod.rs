//! The scenarios of `weft-loadtest run`. Every one is bounded: a fixed number of
//! virtual users, a wall-clock duration, and a per-turn deadline; nothing loops
//! forever, and every task is awaited or aborted before the report is written.
//!
//! * `latency` — closed loop: each user sends, reads the whole reply, sends again.
//! * `throughput` — the same loop with tiny instant replies and many users.
//! * `soak` — long streaming replies, as many concurrent runs as users.
//! * `attach` — many idle SSE clients on one gateway ([`attach`]).
//! * `reconnect` — users drop their stream at random points and re-attach; then
//!   every message is checked through the API ([`verify`]).
//! * `chaos` — the reconnect loop while the load tester kills and restarts the
//!   processes it started ([`chaos`]).
//! * `lark` — messages pushed by a fake Lark to the Lark bot, measured at the
//!   fake ([`lark`]).
//! * `approvals` — many runs waiting for approval at once hold no worker slot,
//!   and approving them all loses and duplicates nothing ([`approvals`]).

pub mod approvals;
pub mod attach;
pub mod chaos;
pub mod lark;
pub mod verify;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::client::WeftClient;
use crate::report::Report;
use crate::stats::Recorder;
use crate::turn::{Drops, TurnEnd, TurnPlan, run_turn};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    Latency,
    Throughput,
    Soak,
    Attach,
    Reconnect,
    Chaos,
    Lark,
    Approvals,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Latency => "latency",
            Scenario::Throughput => "throughput",
            Scenario::Soak => "soak",
            Scenario::Attach => "attach",
            Scenario::Reconnect => "reconnect",
            Scenario::Chaos => "chaos",
            Scenario::Lark => "lark",
            Scenario::Approvals => "approvals",
        }
    }

    /// (users, duration s, reply tokens, mock TTFT ms, mock ITL ms) unless overridden.
    /// `lark`: users are conversations of one message each, and there is no duration.
    /// `approvals`: users are the requests in flight at once (its runs are `--runs`).
    pub fn defaults(self) -> (usize, u64, u32, u64, u64) {
        match self {
            Scenario::Latency => (50, 20, 50, 100, 25),
            Scenario::Throughput => (50, 15, 10, 0, 0),
            Scenario::Soak => (2000, 60, 400, 100, 25),
            Scenario::Attach => (1, 20, 1, 0, 0),
            Scenario::Reconnect => (20, 15, 50, 50, 10),
            Scenario::Chaos => (30, 60, 40, 50, 25),
            Scenario::Lark => (200, 0, 40, 100, 100),
            Scenario::Approvals => (64, 0, 0, 0, 0),
        }
    }

    fn drops(self) -> Drops {
        match self {
            Scenario::Reconnect => Drops {
                max: 3,
                before_first_event: 0.2,
            },
            _ => Drops::default(),
        }
    }

    /// Scenarios whose every message is checked through the API afterwards.
    pub fn verifies(self) -> bool {
        matches!(self, Scenario::Reconnect | Scenario::Chaos | Scenario::Soak)
    }
}

/// Resolved parameters of one run.
#[derive(Debug, Clone)]
pub struct Params {
    pub scenario: Scenario,
    pub users: usize,
    pub duration: Duration,
    pub plan: TurnPlan,
    /// Users start spread over this long.
    pub ramp: Duration,
    pub turn_timeout: Duration,
    /// `attach`: idle clients to open, and how long to hold them.
    pub attach_clients: usize,
    /// Turns each user's session is given before the measured phase (not
    /// measured, its CPU not counted): how a run's cost grows with the
    /// session's length.
    pub prefill_turns: usize,
    /// The measured phase ends after this many turns per user instead of at
    /// `duration` (the session then stays near `prefill_turns` long).
    pub turns_per_user: Option<usize>,
    /// Memories each account keeps before the measured phase (the first
    /// pinned, all sharing words with the turn's text, so every run recalls
    /// them): what memory adds to a run (issue 26).
    pub memories: usize,
}

/// One virtual user's session and what it sent.
pub struct SessionLog {
    pub client: WeftClient,
    pub session: String,
    pub accepted: u64,
    pub sent: u64,
}

/// Concurrent runs in flight, and the most seen.
#[derive(Default)]
pub struct Gauge {
    now: AtomicU64,
    peak: AtomicU64,
}

impl Gauge {
    pub fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }
    pub fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// A virtual user before the measured phase: its client, and its session if
/// [`prefill`] made one.
pub struct Seat {
    pub client: WeftClient,
    pub session: Option<String>,
}

impl From<WeftClient> for Seat {
    fn from(client: WeftClient) -> Seat {
        Seat {
            client,
            session: None,
        }
    }
}

/// Every user's session with `p.prefill_turns` turns in it, all users at once
/// (a user whose turn fails keeps the turns it has). Nothing is recorded.
pub async fn prefill(clients: Vec<WeftClient>, p: &Params) -> Vec<Seat> {
    let deadline = Instant::now() + p.turn_timeout * (p.prefill_turns.max(1) as u32);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let (plan, timeout, turns) = (p.plan.clone(), p.turn_timeout, p.prefill_turns);
            tokio::spawn(async move {
                let quiet = Recorder::default();
                let session = create_session(&mut client, &quiet, deadline).await;
                if let Some(s) = &session {
                    for _ in 0..turns {
                        let r = run_turn(&mut client, s, &plan, Drops::default(), timeout, &quiet)
                            .await;
                        if matches!(r.end, TurnEnd::Abandoned | TurnEnd::NotSent) {
                            break;
                        }
                    }
                }
                Seat { client, session }
            })
        })
        .collect();
    let mut seats = Vec::with_capacity(tasks.len());
    for t in tasks {
        if let Ok(seat) = t.await {
            seats.push(seat);
        }
    }
    seats
}

/// Closed loop: each user (with a session of its own, made here unless
/// [`prefill`] made it) sends turns until `stop_at`, or `p.turns_per_user`.
/// A user whose turn is abandoned stops, so its session stays checkable.
pub async fn closed_loop(
    seats: Vec<Seat>,
    p: &Params,
    rec: Arc<Recorder>,
    gauge: Arc<Gauge>,
) -> Vec<SessionLog> {
    let start = Instant::now();
    let stop_at = start + p.ramp + p.duration;
    let n = seats.len().max(1);
    let mut tasks = Vec::with_capacity(n);
    for (i, seat) in seats.into_iter().enumerate() {
        let (rec, gauge, plan) = (rec.clone(), gauge.clone(), p.plan.clone());
        let delay = p.ramp.mul_f64(i as f64 / n as f64);
        let (drops, timeout, turns) = (p.scenario.drops(), p.turn_timeout, p.turns_per_user);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let Seat {
                mut client,
                session,
            } = seat;
            let session = match session {
                Some(s) => s,
                None => create_session(&mut client, &rec, stop_at).await?,
            };
            let mut log = SessionLog {
                client,
                session,
                accepted: 0,
                sent: 0,
            };
            let more = |sent: u64| match turns {
                Some(t) => sent < t as u64,
                None => Instant::now() < stop_at,
            };
            while more(log.sent) {
                gauge.enter();
                let r = run_turn(&mut log.client, &log.session, &plan, drops, timeout, &rec).await;
                gauge.leave();
                log.sent += 1;
                log.accepted += u64::from(r.accepted);
                if matches!(r.end, TurnEnd::Abandoned | TurnEnd::NotSent) {
                    break;
                }
            }
            Some(log)
        }));
    }
    let mut logs = Vec::new();
    for t in tasks {
        if let Ok(Some(log)) = t.await {
            logs.push(log);
        }
    }
    logs
}

async fn create_session(client: &mut WeftClient, rec: &Recorder, until: Instant) -> Option<String> {
    for _ in 0..20 {
        match client.create_session().await {
            Ok(s) => return Some(s.id),
            Err(e) => {
                rec.error("create_session");
                tracing::debug!(error = %e, "creating a session failed");
                client.fail_over();
            }
        }
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    None
}

/// Fill the parts of a report every scenario shares.
pub fn report_head(p: &Params, target: &str, label: &str) -> Report {
    Report {
        scenario: p.scenario.name().into(),
        target: target.into(),
        label: label.into(),
        users: p.users,
        reply_tokens: p.plan.tokens,
        mock_ttft_ms: p.plan.ttft.as_millis() as u64,
        mock_itl_ms: p.plan.itl.as_millis() as u64,
        prefill_turns: p.prefill_turns,
        ..Report::default()
    }
}

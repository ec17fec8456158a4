//! `approvals`: many runs waiting for a person at once hold no worker, and
//! resuming them all loses and duplicates nothing (docs/protocol.md,
//! "Approvals").
//!
//! Against a Weft whose `current_time` tool has the `confirm` policy
//! (`WEFT_TOOLS__POLICIES__CURRENT_TIME=confirm`) and whose per-user run limits
//! are lifted or wide enough, in three phases:
//!
//! 1. **suspend** ([`suspend`]) — N runs, each in a session of its own, each
//!    calling `current_time`; each counts once its `approval_required` arrived
//!    and `GET /v1/runs/{id}` says `waiting_approval`;
//! 2. **hold** — with every run waiting, the workers' `weft_runs_executing` is
//!    sampled ([`metrics`]): the slots held must be 0 (with a worker concurrency
//!    far below N this alone shows the waiting runs are not in slots). Then the
//!    runs are checked to be still waiting, and a few ordinary runs are sent,
//!    which must finish;
//! 3. **resume** ([`resume`]) — every approval is approved, as fast as the
//!    clients allow; every run's stream is replayed from seq 1 and followed to
//!    its end, and checked with its stored messages ([`check`]).
//!
//! Everything is bounded by per-run timeouts; nothing is left running (a run
//! that never suspended is not approved and is left to the server).

pub mod check;
pub mod metrics;
pub mod resume;
pub mod suspend;

use std::time::{Duration, Instant};

use futures::StreamExt;
use weft_shared::event::{EventKind, RunEvent};

pub use crate::report::approvals::ApprovalsResult;
pub use check::Findings;

use crate::client::{Gateways, WeftClient, WeftTarget, http_client, sign_in_users};
use crate::report::Report;
use crate::sse::SseReader;
use crate::stats::Summary;
use metrics::{Sampler, Scraper};
use suspend::{Start, Suspended};

/// After the last run is seen waiting, before the hold's samples count: the
/// worker lets go of the slot just after it writes `waiting_approval`.
const SETTLE: Duration = Duration::from_millis(200);

/// What to run.
#[derive(Debug, Clone)]
pub struct ApprovalParams {
    /// Runs to suspend.
    pub runs: usize,
    /// Requests in flight at once (sends, approvals, re-attaches).
    pub clients: usize,
    /// Accounts the runs are spread over (with an admin token).
    pub accounts: usize,
    /// Worker `/metrics` URLs; empty: the first gateway's (embedded mode).
    pub metrics_urls: Vec<String>,
    /// The workers' concurrency as configured, for the report.
    pub worker_concurrency: Option<u64>,
    /// How long every run is held waiting while the gauge is sampled.
    pub hold: Duration,
    /// Ordinary runs sent while every run waits.
    pub probe_runs: usize,
    /// The longest any one run may take in each phase.
    pub timeout: Duration,
}

/// Runs the three phases against `target` and reports.
pub async fn run(target: &WeftTarget, p: &ApprovalParams, label: &str) -> anyhow::Result<Report> {
    let http = http_client();
    let clients = users(&http, target, p.accounts.clamp(1, p.runs.max(1))).await?;
    let urls = if p.metrics_urls.is_empty() {
        vec![format!("{}/metrics", target.gateways.url(0))]
    } else {
        p.metrics_urls.clone()
    };
    Gateways::new(urls.clone())?; // loopback only
    let scraper = Scraper::new(http.clone(), urls.clone());
    let before = scraper.scrape().await;
    let sampler = Sampler::start(scraper.clone());
    let mut r = ApprovalsResult {
        runs_requested: p.runs as u64,
        metrics_urls: urls,
        worker_concurrency: p.worker_concurrency,
        probe_runs: p.probe_runs as u64,
        ..ApprovalsResult::default()
    };
    let started = Instant::now();
    let waiting = suspend_phase(&clients, p, &sampler, &mut r).await;
    hold_phase(&clients, &waiting, p, &sampler, &mut r).await;
    resume_phase(waiting, p, &sampler, &mut r).await;
    sampler.stop();
    let after = scraper.scrape().await;
    let delta = |a: Option<i64>, b: Option<i64>| Some(a? - b?);
    r.tool_calls_at_workers = delta(after.tool_calls, before.tool_calls);
    r.approvals_requested_at_workers = delta(after.approvals_requested, before.approvals_requested);

    Ok(Report {
        scenario: "approvals".into(),
        target: "weft".into(),
        label: label.into(),
        users: p.clients,
        duration_s: started.elapsed().as_secs_f64(),
        approvals: Some(r),
        ..Report::default()
    })
}

/// Starts every run and waits until each is suspended (or never will be).
async fn suspend_phase(
    clients: &[WeftClient],
    p: &ApprovalParams,
    sampler: &Sampler,
    r: &mut ApprovalsResult,
) -> Vec<Suspended> {
    let started = Instant::now();
    let mut waiting = Vec::new();
    let mut to_event = Vec::new();
    let mut last_waiting = started;
    for s in suspend::start_all(clients, p.runs, p.clients, p.timeout).await {
        match s {
            Start::Suspended(s) => {
                to_event.push(s.to_event.as_micros() as i64);
                last_waiting = last_waiting.max(s.waiting_at);
                waiting.push(s);
            }
            Start::Refused(why) => *r.refused.entry(why).or_default() += 1,
            Start::NotSuspended(f) => {
                r.runs_started += 1;
                tally(r, &f);
            }
        }
    }
    r.runs_started += waiting.len() as u64;
    r.suspended = waiting.len() as u64;
    r.suspend_all_s = (last_waiting - started).as_secs_f64();
    r.send_to_approval_required_ms = Summary::of_micros(&mut to_event);
    r.peak_executing_while_suspending = sampler.window(started, last_waiting).max_executing;
    waiting
}

/// Holds every run waiting while the gauge is sampled; then checks they still
/// wait and that ordinary runs get through.
async fn hold_phase(
    clients: &[WeftClient],
    waiting: &[Suspended],
    p: &ApprovalParams,
    sampler: &Sampler,
    r: &mut ApprovalsResult,
) {
    let hold_from = Instant::now() + SETTLE;
    tokio::time::sleep(SETTLE + p.hold).await;
    let hold = sampler.window(hold_from, Instant::now());
    r.hold_s = p.hold.as_secs_f64();
    (r.hold_samples, r.hold_samples_known) = (hold.samples, hold.known);
    // Every sample must have read the gauge: one blind sample could hide a slot.
    r.slots_held_while_waiting = hold.max_executing.filter(|_| hold.known == hold.samples);
    r.queue_depth_after_hold = hold.last_queue_depth;
    r.still_waiting_after_hold = suspend::count_waiting(waiting, p.clients).await;
    let mut probe_ms = probes(clients, p.probe_runs, p.timeout).await;
    r.probe_runs_done = probe_ms.len() as u64;
    r.probe_ms = Summary::of_micros(&mut probe_ms);
}

/// Approves every run, then replays and checks each.
async fn resume_phase(
    waiting: Vec<Suspended>,
    p: &ApprovalParams,
    sampler: &Sampler,
    r: &mut ApprovalsResult,
) {
    let resume_from = Instant::now();
    let approved = resume::approve_all(waiting, p.clients).await;
    let resumed = resume::verify_all(&approved, p.clients, p.timeout).await;
    r.peak_executing_while_resuming = sampler.window(resume_from, Instant::now()).max_executing;
    let mut request_ms: Vec<i64> = approved
        .iter()
        .filter(|a| a.refused.is_none())
        .map(|a| a.took.as_micros() as i64)
        .collect();
    r.approved = request_ms.len() as u64;
    r.approve_request_ms = Summary::of_micros(&mut request_ms);
    let mut to_done: Vec<i64> = resumed
        .iter()
        .filter_map(|x| x.approve_to_done_ms.map(|ms| ms * 1000))
        .collect();
    r.approve_to_done_ms = Summary::of_micros(&mut to_done);
    let first_approval = approved.iter().map(|a| a.sent_unix_ms).min();
    let last_done = resumed.iter().filter_map(|x| x.done_unix_ms).max();
    if let (Some(a), Some(d)) = (first_approval, last_done) {
        r.resume_all_s = (d - a) as f64 / 1000.0;
    }
    for x in &resumed {
        r.reattaches += u64::from(x.reattaches);
        tally(r, &x.findings);
    }
}

/// One run's findings into the totals.
fn tally(r: &mut ApprovalsResult, f: &Findings) {
    r.lost += u64::from(f.lost);
    r.duplicated += u64::from(f.duplicated);
    r.wrong += u64::from(f.wrong);
    r.complete += u64::from(f.clean());
    for n in &f.notes {
        *r.findings.entry(n.clone()).or_default() += 1;
    }
}

/// The accounts the runs are spread over: created and signed in with an admin
/// token, or the one account of a shared user token.
async fn users(
    http: &reqwest::Client,
    t: &WeftTarget,
    accounts: usize,
) -> anyhow::Result<Vec<WeftClient>> {
    if t.shared_token {
        return Ok(vec![WeftClient {
            http: http.clone(),
            gateways: t.gateways.clone(),
            current: t.gateways.pick(),
            token: t.token.clone(),
        }]);
    }
    let prefix = format!("ap{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    sign_in_users(http, &t.gateways, &t.token, &prefix, accounts).await
}

/// Ordinary runs (a scripted reply, no tool), all at once; returns the send →
/// `done` time of each that finished.
async fn probes(clients: &[WeftClient], n: usize, timeout: Duration) -> Vec<i64> {
    futures::stream::iter(0..n)
        .map(|i| probe(clients[i % clients.len()].clone(), i, timeout))
        .buffer_unordered(n.max(1))
        .filter_map(|d| std::future::ready(d.map(|d| d.as_micros() as i64)))
        .collect()
        .await
}

async fn probe(client: WeftClient, i: usize, timeout: Duration) -> Option<Duration> {
    let session = client.create_session().await.ok()?;
    let t0 = Instant::now();
    let key = uuid::Uuid::new_v4().to_string();
    let text = format!("@mock.reply probe {i}");
    let r = client.send_streaming(&session.id, &text, &key).await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    let mut reader = SseReader::new(Box::pin(r.bytes_stream()));
    tokio::time::timeout(timeout, async {
        while let Ok(ev) = reader.next().await {
            let Ok(ev) = serde_json::from_str::<RunEvent>(&ev.data) else {
                continue;
            };
            match ev.kind {
                EventKind::Done { .. } => return Some(t0.elapsed()),
                k if k.is_terminal() => return None,
                _ => {}
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

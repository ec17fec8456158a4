//! The `approvals` report: its JSON (a section of [`crate::report::Report`]) and
//! its table. The verdict the issue asks for is three numbers: worker slots held
//! while every run waited (0), and runs lost and duplicated after resuming (0).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ApprovalsResult {
    pub runs_requested: u64,
    /// Messages the gateway accepted (each is a run).
    pub runs_started: u64,
    /// Sends (or session creations) the gateway refused, by kind: not runs.
    pub refused: BTreeMap<String, u64>,
    /// Runs seen `waiting_approval` after their `approval_required`.
    pub suspended: u64,
    /// First send → the last run seen `waiting_approval`.
    pub suspend_all_s: f64,
    /// Per run: send → `approval_required` arrived.
    pub send_to_approval_required_ms: Summary,
    /// The `/metrics` URLs scraped (one per worker; embedded: the gateway's).
    pub metrics_urls: Vec<String>,
    /// Worker concurrency as configured (per worker, stated by the operator).
    pub worker_concurrency: Option<u64>,
    /// Most runs executing at once (sum of `weft_runs_executing`) while the runs
    /// were being started and suspended.
    pub peak_executing_while_suspending: Option<i64>,
    /// Seconds all runs were held waiting while the gauge was sampled.
    pub hold_s: f64,
    pub hold_samples: u64,
    /// Samples in the hold that could read the gauge from every URL.
    pub hold_samples_known: u64,
    /// Most worker slots held at once while every run waited (must be 0);
    /// `None` when the gauge could not be read.
    pub slots_held_while_waiting: Option<i64>,
    /// `weft_queue_depth` at the end of the hold: the reapers' last count of
    /// queued runs (they count every `worker.reaper_interval_ms`, 5 s by default,
    /// so a hold shorter than that may show a count from before it).
    pub queue_depth_after_hold: Option<i64>,
    /// Runs still `waiting_approval` when the hold ended.
    pub still_waiting_after_hold: u64,
    /// Ordinary runs sent while every run waited; how many finished, how fast.
    pub probe_runs: u64,
    pub probe_runs_done: u64,
    pub probe_ms: Summary,
    /// Approvals the gateway accepted, and the request's round trip.
    pub approved: u64,
    pub approve_request_ms: Summary,
    /// Per run: approval sent → `done` published.
    pub approve_to_done_ms: Summary,
    /// First approval sent → the last `done`.
    pub resume_all_s: f64,
    pub peak_executing_while_resuming: Option<i64>,
    /// Started runs that passed every check.
    pub complete: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub wrong: u64,
    /// Streams re-attached after breaking before their terminal event.
    pub reattaches: u64,
    /// Deltas of the workers' counters over the scenario (other traffic on the
    /// same workers counts too): each must equal the runs suspended.
    pub tool_calls_at_workers: Option<i64>,
    pub approvals_requested_at_workers: Option<i64>,
    /// Every finding, by name (see `scenario::approvals::check`).
    pub findings: BTreeMap<String, u64>,
}

impl ApprovalsResult {
    /// Every run waited without a slot and came back exactly once.
    pub fn holds(&self) -> bool {
        self.runs_started == self.runs_requested
            && self.suspended == self.runs_requested
            && self.slots_held_while_waiting == Some(0)
            && (self.lost, self.duplicated, self.wrong) == (0, 0, 0)
    }

    pub fn write_table(&self, t: &mut String) {
        let known = |v: Option<i64>| v.map_or("unknown".to_owned(), |v| v.to_string());
        let _ = writeln!(
            t,
            "suspend: {} of {} runs waiting_approval ({} started, {} refused) {:.1} s after the first send",
            self.suspended,
            self.runs_requested,
            self.runs_started,
            self.refused.values().sum::<u64>(),
            self.suspend_all_s
        );
        let slots = match self.worker_concurrency {
            Some(c) => {
                let n = self.metrics_urls.len() as u64;
                format!("{c} per worker × {n} = {} slots", c * n)
            }
            None => "not stated (--worker-concurrency)".into(),
        };
        let _ = writeln!(
            t,
            "slots held while waiting: {} (max of weft_runs_executing, {}/{} samples over {:.1} s, {} metrics URL(s)); worker concurrency {slots} for {} waiting runs",
            known(self.slots_held_while_waiting),
            self.hold_samples_known,
            self.hold_samples,
            self.hold_s,
            self.metrics_urls.len(),
            self.suspended
        );
        let _ = writeln!(
            t,
            "peak executing while suspending {}, while resuming {}; queued runs after the hold {}; still waiting after the hold {}; ordinary runs meanwhile {}/{} done",
            known(self.peak_executing_while_suspending),
            known(self.peak_executing_while_resuming),
            known(self.queue_depth_after_hold),
            self.still_waiting_after_hold,
            self.probe_runs_done,
            self.probe_runs
        );
        let _ = writeln!(
            t,
            "resume: {} approved, all done {:.1} s after the first approval",
            self.approved, self.resume_all_s
        );
        let _ = writeln!(
            t,
            "{:<26}{:>9}{:>9}{:>9}{:>9}{:>8}",
            "ms", "p50", "p95", "p99", "max", "n"
        );
        for (name, s) in [
            (
                "send → approval_required",
                &self.send_to_approval_required_ms,
            ),
            ("ordinary run (probe)", &self.probe_ms),
            ("approve request", &self.approve_request_ms),
            ("approve → done", &self.approve_to_done_ms),
        ] {
            let _ = writeln!(
                t,
                "{:<26}{:>9.1}{:>9.1}{:>9.1}{:>9.1}{:>8}",
                name, s.p50, s.p95, s.p99, s.max, s.count
            );
        }
        let _ = writeln!(
            t,
            "verify: {} of {} runs complete, lost {}, duplicated {}, wrong {}; re-attaches {}; at the workers: tool calls {}, approvals requested {}",
            self.complete,
            self.runs_started,
            self.lost,
            self.duplicated,
            self.wrong,
            self.reattaches,
            known(self.tool_calls_at_workers),
            known(self.approvals_requested_at_workers)
        );
        for (title, map) in [("refused", &self.refused), ("findings", &self.findings)] {
            if !map.is_empty() {
                let list: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(t, "{title}: {}", list.join("  "));
            }
        }
        if self.findings.contains_key("done_without_approval") {
            let _ = writeln!(
                t,
                "hint: runs finished without asking; is the server started with WEFT_TOOLS__POLICIES__CURRENT_TIME=confirm?"
            );
        }
        if self.refused.keys().any(|k| k.ends_with("_429")) {
            let _ = writeln!(
                t,
                "hint: sends were rate limited; lift WEFT_LIMITS__ACTIVE_RUNS_PER_USER and WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER (0) or spread the runs over more --accounts"
            );
        }
        let _ = writeln!(
            t,
            "verdict: {}",
            if self.holds() {
                "every run waited without a worker slot and resumed exactly once"
            } else {
                "NOT MET (see above)"
            }
        );
    }
}

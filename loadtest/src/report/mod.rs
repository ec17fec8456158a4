//! A scenario's results: one JSON document (for machines and BENCHMARKS.md) and a
//! plain-text table (for people). The scenarios fill it in; the sections only some
//! scenarios have are in [`approvals`] and [`lark`].

pub mod approvals;
pub mod lark;

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use approvals::ApprovalsResult;
use lark::LarkResult;

use crate::mock_llm::StatsSnapshot;
use crate::procs::ProcUsage;
use crate::stats::{Samples, Summary};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub scenario: String,
    /// `weft` or `langgraph`.
    pub target: String,
    /// Free text: `embedded`, `distributed`, or how the target was set up.
    pub label: String,
    pub users: usize,
    pub duration_s: f64,
    /// Reply tokens, TTFT and inter-token latency the mock was scripted with.
    pub reply_tokens: u32,
    pub mock_ttft_ms: u64,
    pub mock_itl_ms: u64,
    /// Turns in each user's session before the measured phase began.
    #[serde(default)]
    pub prefill_turns: usize,
    pub runs_ok: u64,
    pub runs_failed: u64,
    pub runs_per_s: f64,
    pub ttft_ms: Summary,
    /// Client TTFT minus the mock's configured TTFT.
    pub ttft_overhead_ms: Summary,
    /// How late each text event arrived against the mock's schedule for its last token.
    pub stream_lag_ms: Summary,
    /// Worker publish (`ts`) to client arrival, every event: the bus and gateway's share.
    #[serde(default)]
    pub delivery_ms: Summary,
    pub turn_ms: Summary,
    pub errors: BTreeMap<String, u64>,
    pub reconnects: u64,
    pub duplicated_events: u64,
    pub gaps: u64,
    /// Seq jumps to a new attempt's `run_started` after a lost event log (allowed).
    #[serde(default)]
    pub attempt_jumps: u64,
    pub incoherent_streams: u64,
    pub retries_seen: u64,
    pub peak_concurrent_runs: u64,
    /// The after-the-fact check through the API (reconnect, chaos, soak).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub verify: Option<Verification>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub attach: Option<AttachResult>,
    #[serde(default)]
    pub processes: Vec<ProcUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub mock: Option<StatsSnapshot>,
    /// What happened when (chaos).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<String>,
    /// The Lark bot's numbers (`lark`), which replace the HTTP client's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub lark: Option<LarkResult>,
    /// The `approvals` scenario's numbers, which replace the closed loop's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub approvals: Option<ApprovalsResult>,
}

/// Every message checked through `GET /v1/sessions/{id}/messages`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Verification {
    pub sessions: u64,
    pub user_messages: u64,
    /// User messages the client knows the gateway accepted.
    pub accepted_by_client: u64,
    pub complete_replies: u64,
    /// User messages without an assistant reply.
    pub lost: u64,
    /// Extra assistant messages (two replies to one message, or one run twice).
    pub duplicated: u64,
    /// Replies whose text is not what the mock was scripted to say.
    pub wrong: u64,
    /// Sessions still running a run when verification gave up.
    pub unfinished_sessions: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AttachResult {
    pub clients_requested: u64,
    pub clients_connected: u64,
    pub connect_failures: u64,
    pub gateway_rss_before_mib: f64,
    pub gateway_rss_after_mib: f64,
    pub rss_per_client_kib: f64,
    pub held_s: f64,
    pub still_open_at_end: u64,
}

impl Report {
    pub fn absorb(&mut self, mut s: Samples) {
        self.ttft_ms = Summary::of_micros(&mut s.ttft);
        self.ttft_overhead_ms = Summary::of_micros(&mut s.ttft_overhead);
        self.stream_lag_ms = Summary::of_micros(&mut s.lag);
        self.delivery_ms = Summary::of_micros(&mut s.delivery);
        self.turn_ms = Summary::of_micros(&mut s.turn);
        self.errors = s.errors;
        self.runs_ok = s.runs_ok;
        self.runs_failed = s.runs_failed;
        self.reconnects = s.reconnects;
        self.duplicated_events = s.duplicates;
        self.gaps = s.gaps;
        self.attempt_jumps = s.attempt_jumps;
        self.incoherent_streams = s.incoherent_streams;
        self.retries_seen = s.retries_seen;
        if self.duration_s > 0.0 {
            self.runs_per_s = self.runs_ok as f64 / self.duration_s;
        }
    }

    /// The people-facing table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        if let Some(a) = &self.approvals {
            let _ = writeln!(
                t,
                "== {} on {} ({}) — {} runs, {} requests in flight, {:.1} s",
                self.scenario,
                self.target,
                self.label,
                a.runs_requested,
                self.users,
                self.duration_s
            );
            a.write_table(&mut t);
            self.write_processes(&mut t);
            return t;
        }
        let _ = writeln!(
            t,
            "== {} on {} ({}) — {} users, {:.1} s, replies of {} tokens (mock TTFT {} ms, ITL {} ms)",
            self.scenario,
            self.target,
            self.label,
            self.users,
            self.duration_s,
            self.reply_tokens,
            self.mock_ttft_ms,
            self.mock_itl_ms
        );
        if let Some(lark) = &self.lark {
            lark.write_table(&mut t);
            self.write_processes(&mut t);
            return t;
        }

        let _ = writeln!(
            t,
            "runs ok {}  failed {}  runs/s {:.1}  peak concurrent runs {}",
            self.runs_ok, self.runs_failed, self.runs_per_s, self.peak_concurrent_runs
        );
        let _ = writeln!(
            t,
            "{:<22}{:>9}{:>9}{:>9}{:>9}{:>10}",
            "ms", "p50", "p90", "p99", "max", "n"
        );
        for (name, s) in [
            ("ttft", &self.ttft_ms),
            ("ttft overhead", &self.ttft_overhead_ms),
            ("stream lag", &self.stream_lag_ms),
            ("delivery (ts→client)", &self.delivery_ms),
            ("turn", &self.turn_ms),
        ] {
            let _ = writeln!(
                t,
                "{:<22}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>10}",
                name, s.p50, s.p90, s.p99, s.max, s.count
            );
        }
        let _ = writeln!(
            t,
            "reconnects {}  duplicated events {}  gaps {}  attempt jumps {}  incoherent streams {}  retries seen {}",
            self.reconnects,
            self.duplicated_events,
            self.gaps,
            self.attempt_jumps,
            self.incoherent_streams,
            self.retries_seen
        );
        if !self.errors.is_empty() {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(t, "errors: {}", list.join("  "));
        }
        if let Some(v) = &self.verify {
            let _ = writeln!(
                t,
                "verify: {} sessions, {} user messages ({} accepted by client), {} complete replies, lost {}, duplicated {}, wrong {}, unfinished sessions {}",
                v.sessions,
                v.user_messages,
                v.accepted_by_client,
                v.complete_replies,
                v.lost,
                v.duplicated,
                v.wrong,
                v.unfinished_sessions
            );
        }
        if let Some(a) = &self.attach {
            let _ = writeln!(
                t,
                "attach: {}/{} clients connected ({} failed), gateway RSS {:.1} → {:.1} MiB = {:.2} KiB per client, {} still open after {:.0} s",
                a.clients_connected,
                a.clients_requested,
                a.connect_failures,
                a.gateway_rss_before_mib,
                a.gateway_rss_after_mib,
                a.rss_per_client_kib,
                a.still_open_at_end,
                a.held_s
            );
        }
        self.write_processes(&mut t);
        if let Some(m) = &self.mock {
            let _ = writeln!(
                t,
                "mock: {} requests, peak {} in flight, injected 429={} 500={} 529={} cut={}",
                m.requests,
                m.peak_in_flight,
                m.injected_429,
                m.injected_500,
                m.injected_529,
                m.injected_cut
            );
        }
        for line in &self.timeline {
            let _ = writeln!(t, "  {line}");
        }
        t
    }

    fn write_processes(&self, t: &mut String) {
        for p in &self.processes {
            let _ = writeln!(
                t,
                "process {:<10} pid {:<7} RSS start {:>7.1} peak {:>7.1} end {:>7.1} MiB  CPU {:>6.1} s ({:>5.1}% of a core)",
                p.name, p.pid, p.rss_start_mib, p.rss_peak_mib, p.rss_end_mib, p.cpu_s, p.cpu_pct
            );
        }
    }
}

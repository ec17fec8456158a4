//! The bench's runs besides the suite's scenarios (issue 23): `throughput` at
//! other user counts for every system, and the cost of a run by session length
//! in both modes; and how they are rendered into `BENCHMARKS.md`.

use std::fmt::Write;
use std::time::Duration;

use anyhow::Context;

use super::{BenchOpts, load_json, params, run_langgraph_one, run_one};
use crate::report::Report;
use crate::scenario::{Params, Scenario};
use crate::stack::Mode;
use crate::turn::TurnPlan;

/// A run besides the suite's scenarios: `throughput` at other user counts
/// (key `throughput-u20`) and the session-length runs (key `sessions-100`).
pub struct Extra {
    pub mode: String,
    pub key: String,
    pub result: Result<Report, String>,
}

/// Users, measured turns per user and reply tokens of the session-length runs.
pub const SESSION_RUN: (usize, usize, u32) = (20, 25, 10);

/// A comma-separated list of numbers; `none` or nothing is an empty list.
fn numbers(list: &str) -> anyhow::Result<Vec<usize>> {
    list.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty() && *x != "none")
        .map(|x| x.parse().with_context(|| format!("not a number: {x:?}")))
        .collect()
}

/// The session-length run at `turns` turns.
fn session_params(o: &BenchOpts, turns: usize) -> Params {
    let (users, measured, tokens) = SESSION_RUN;
    Params {
        users,
        prefill_turns: turns,
        turns_per_user: Some(measured),
        memories: 0,
        plan: TurnPlan::mock(tokens, 0, 0),
        duration: Duration::from_secs(600),
        ..params(o, Scenario::Throughput)
    }
}

/// The extra runs ([`Extra`]): run now for `modes` (and LangGraph when its
/// virtualenv is there), else taken from earlier JSON reports with
/// --reuse-json or --render-only.
pub(super) async fn run_extras(
    o: &BenchOpts,
    modes: &[Mode],
    venv: Option<&std::path::Path>,
    work: &std::path::Path,
    json_dir: &std::path::Path,
) -> anyhow::Result<Vec<Extra>> {
    let mut runs: Vec<(String, String, Params)> = Vec::new();
    let systems: Vec<&str> = [Mode::Embedded, Mode::Distributed]
        .iter()
        .map(|m| m.name())
        .chain(["langgraph"])
        .collect();
    if o.scenarios.contains(&Scenario::Throughput) {
        for users in numbers(&o.side_users)? {
            for sys in &systems {
                let p = Params {
                    users,
                    ..params(o, Scenario::Throughput)
                };
                runs.push((sys.to_string(), format!("throughput-u{users}"), p));
            }
        }
    }
    for turns in numbers(&o.session_lengths)? {
        for sys in &systems[..2] {
            runs.push((
                sys.to_string(),
                format!("sessions-{turns}"),
                session_params(o, turns),
            ));
        }
    }
    let mut extras = Vec::new();
    for (sys, key, p) in runs {
        let path = json_dir.join(format!("{sys}-{key}.json"));
        let mode = modes.iter().find(|m| m.name() == sys);
        let fresh = if o.render_only {
            None
        } else if let Some(&mode) = mode {
            eprintln!("== {sys} / {key}");
            Some(run_one(o, mode, &p, &[], work, &key).await)
        } else if sys == "langgraph" && p.prefill_turns == 0 {
            match venv {
                Some(venv) => {
                    eprintln!("== {sys} / {key}");
                    Some(run_langgraph_one(o, venv, &p, work, &key).await)
                }
                None => None,
            }
        } else {
            None
        };
        let result = match fresh {
            Some(r) => {
                let r = r.map_err(|e| format!("{e:#}"));
                match &r {
                    Ok(rep) => {
                        eprint!("{}", rep.table());
                        std::fs::write(&path, serde_json::to_string_pretty(rep)?)?;
                    }
                    Err(e) => eprintln!("failed: {e}"),
                }
                r
            }
            None if o.reuse_json || o.render_only => match load_json(&path) {
                Some(r) => Ok(r),
                None => continue,
            },
            None => continue,
        };
        extras.push(Extra {
            mode: sys,
            key,
            result,
        });
    }
    Ok(extras)
}

/// The Weft processes of a report (not the mock LLM).
fn server_cpu_s(r: &Report) -> f64 {
    r.processes
        .iter()
        .filter(|p| !p.name.starts_with("mock"))
        .map(|p| p.cpu_s)
        .sum()
}

/// Server CPU per finished run, in ms (`None` without runs or CPU readings).
fn cpu_ms_per_run(r: &Report) -> Option<f64> {
    let cpu = server_cpu_s(r);
    (r.runs_ok > 0 && cpu > 0.0).then(|| 1000.0 * cpu / r.runs_ok as f64)
}

/// The side by side rows: `latency` and `throughput` from the suite, and the
/// extra `throughput` runs at other user counts; then the ratios the targets
/// are stated in.
pub(super) fn side_by_side(t: &mut String, outcomes: &[super::Outcome], extras: &[Extra]) {
    let _ = writeln!(
        t,
        "| scenario | users | system | runs/s | TTFT p50 / p99 ms | TTFT overhead p50 / p90 / p99 / max ms | stream lag p50 / p99 ms | errors | server RSS peak MiB | server CPU s | CPU ms / run | runs per CPU-s |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rows: Vec<(String, &str, &Result<Report, String>)> = Vec::new();
    for s in [Scenario::Latency, Scenario::Throughput] {
        if s == Scenario::Throughput {
            for e in extras.iter().filter(|e| e.key.starts_with("throughput-u")) {
                rows.push((s.name().to_owned(), e.mode.as_str(), &e.result));
            }
        }
        for mode in ["embedded", "distributed", "langgraph"] {
            if let Some(r) = super::doc::find(outcomes, mode, s) {
                rows.push((s.name().to_owned(), mode, r));
            }
        }
    }
    let order = |m: &str| {
        ["embedded", "distributed", "langgraph"]
            .iter()
            .position(|x| *x == m)
    };
    rows.sort_by_key(|(s, m, r)| {
        let users = r.as_ref().map_or(0, |r| r.users);
        (s.clone(), users, order(m))
    });
    for (s, mode, result) in &rows {
        match result {
            Ok(r) => {
                let server: Vec<_> = r
                    .processes
                    .iter()
                    .filter(|p| !p.name.starts_with("mock"))
                    .collect();
                let rss: f64 = server.iter().map(|p| p.rss_peak_mib).sum();
                let cpu = server_cpu_s(r);
                let per_run = cpu_ms_per_run(r).map_or("–".into(), |x| format!("{x:.2}"));
                let per_cpu = if cpu > 0.0 {
                    format!("{:.0}", r.runs_ok as f64 / cpu)
                } else {
                    "–".into()
                };
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {:.1} | {:.1} / {:.1} | {:.1} / {:.1} / {:.1} / {:.1} | {:.1} / {:.1} | {} | {:.0} | {:.1} | {} | {} |",
                    s,
                    r.users,
                    super::doc::system_name(mode),
                    r.runs_per_s,
                    r.ttft_ms.p50,
                    r.ttft_ms.p99,
                    r.ttft_overhead_ms.p50,
                    r.ttft_overhead_ms.p90,
                    r.ttft_overhead_ms.p99,
                    r.ttft_overhead_ms.max,
                    r.stream_lag_ms.p50,
                    r.stream_lag_ms.p99,
                    r.errors.values().sum::<u64>() + r.runs_failed,
                    rss,
                    cpu,
                    per_run,
                    per_cpu
                );
            }
            Err(e) => {
                let _ = writeln!(
                    t,
                    "| {} | | {} | failed: {} | | | | | | | | |",
                    s,
                    super::doc::system_name(mode),
                    e.lines().next().unwrap_or("")
                );
            }
        }
    }
    // The targets of issue 23, as ratios of one run on one machine.
    let pick = |mode: &str, users: usize| {
        rows.iter().find_map(|(s, m, r)| match r {
            Ok(r) if s == "throughput" && *m == mode && r.users == users => Some(r),
            _ => None,
        })
    };
    let mut lines = Vec::new();
    for mode in ["embedded", "distributed"] {
        if let (Some(w), Some(l)) = (pick(mode, 50), pick("langgraph", 50)) {
            let (wc, lc) = (server_cpu_s(w), server_cpu_s(l));
            if wc > 0.0 && lc > 0.0 {
                let ratio = (w.runs_ok as f64 / wc) / (l.runs_ok as f64 / lc);
                lines.push(format!(
                    "- {mode}, 50 users: {ratio:.1}× LangGraph's runs per server CPU-second (target ≥ 20×), {:.1}× its runs/s",
                    w.runs_per_s / l.runs_per_s.max(f64::MIN_POSITIVE)
                ));
            }
        }
        if let (Some(w), Some(l)) = (pick(mode, 20), pick("langgraph", 20))
            && w.ttft_ms.p99 > 0.0
        {
            lines.push(format!(
                "- {mode}, 20 users: first token p99 {:.1} ms against LangGraph's {:.1} ms, {:.0}× lower (target ≥ 50×)",
                w.ttft_ms.p99,
                l.ttft_ms.p99,
                l.ttft_ms.p99 / w.ttft_ms.p99
            ));
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(t, "\n{}", lines.join("\n"));
    }
}

/// What a run costs as its session grows: the same closed loop after every
/// user's session was given N turns (their cost not counted).
pub(super) fn sessions_table(t: &mut String, extras: &[Extra]) {
    let mut lengths: Vec<usize> = extras
        .iter()
        .filter_map(|e| e.key.strip_prefix("sessions-")?.parse().ok())
        .collect();
    if lengths.is_empty() {
        return;
    }
    lengths.sort_unstable();
    lengths.dedup();
    let (users, turns, tokens) = SESSION_RUN;
    let _ = writeln!(
        t,
        "\n### Cost of a run by session length\n\n{users} users, each with a session of N turns made before the measured phase (not counted), then {turns} more turns each, {tokens}-token replies, no mock delay. CPU is every Weft process's (embedded: `weft up`; distributed: gateway + worker).\n"
    );
    let _ = writeln!(
        t,
        "| session turns | embedded runs/s | embedded CPU ms / run | embedded TTFT p50 / p99 ms | distributed runs/s | distributed CPU ms / run | distributed TTFT p50 / p99 ms |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---|---|");
    for n in lengths {
        let key = format!("sessions-{n}");
        let cell = |mode: &str| match extras.iter().find(|e| e.mode == mode && e.key == key) {
            Some(Extra { result: Ok(r), .. }) => format!(
                "{:.1} | {} | {:.1} / {:.1}",
                r.runs_per_s,
                cpu_ms_per_run(r).map_or("–".into(), |x| format!("{x:.2}")),
                r.ttft_ms.p50,
                r.ttft_ms.p99
            ),
            Some(Extra { result: Err(e), .. }) => {
                format!("failed: {} | | ", e.lines().next().unwrap_or(""))
            }
            None => "not run | | ".into(),
        };
        let _ = writeln!(
            t,
            "| {n} | {} | {} |",
            cell("embedded"),
            cell("distributed")
        );
    }
}

//! Rendering `BENCHMARKS.md`: the machine, the versions, the commands, the targets
//! of issue 5 against what was measured, and one section per scenario.

use std::fmt::Write;
use std::path::Path;

use super::extras::{sessions_table, side_by_side};
use super::{BenchOpts, Extra, Outcome};
use crate::report::Report;
use crate::scenario::Scenario;

/// The machine, sampled before and after the suite (the load average says how
/// shared it was).
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub mem_gib: f64,
    pub kernel: String,
    pub loadavg: String,
    pub when: String,
}

impl Machine {
    pub fn now() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .unwrap_or("unknown")
            .trim()
            .to_owned();
        let mem_kib: f64 = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            mem_gib: mem_kib / 1024.0 / 1024.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
            loadavg: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            when: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        }
    }
}

pub struct Versions {
    pub weft: String,
    pub rustc: String,
    pub postgres: String,
    pub redis: String,
    pub langgraph: String,
}

impl Versions {
    pub async fn collect(o: &BenchOpts, venv: Option<&Path>) -> Versions {
        let weft = command_line(&o.weft_bin.display().to_string(), &["--version"]);
        let postgres = async {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(&o.postgres_admin_url)
                .await
                .ok()?;
            let v: (String,) = sqlx::query_as("show server_version")
                .fetch_one(&mut c)
                .await
                .ok()?;
            Some(v.0)
        }
        .await
        .unwrap_or_else(|| "unknown".into());
        let redis = async {
            let c = redis::Client::open(o.redis_url.as_str()).ok()?;
            let mut con = c.get_multiplexed_async_connection().await.ok()?;
            let info: String = redis::cmd("INFO")
                .arg("server")
                .query_async(&mut con)
                .await
                .ok()?;
            info.lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .map(str::to_owned)
        }
        .await
        .unwrap_or_else(|| "unknown".into());
        let langgraph = venv.map_or_else(
            || "not installed".to_owned(),
            |v| {
                let pip = v.join("bin/pip").display().to_string();
                let out = command_line(&pip, &["list", "--format=freeze"]);
                out.lines()
                    .filter(|l| {
                        [
                            "langgraph-api==",
                            "langgraph==",
                            "langgraph-runtime-inmem==",
                            "langchain-openai==",
                        ]
                        .iter()
                        .any(|p| l.starts_with(p))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
                    + &format!(
                        ", {}",
                        command_line(&v.join("bin/python").display().to_string(), &["--version"])
                    )
            },
        );
        Versions {
            weft,
            rustc: command_line("rustc", &["-V"]),
            postgres,
            redis,
            langgraph,
        }
    }
}

fn command_line(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

pub(super) fn find<'a>(
    outcomes: &'a [Outcome],
    mode: &str,
    s: Scenario,
) -> Option<&'a Result<Report, String>> {
    outcomes
        .iter()
        .find(|o| o.mode == mode && o.scenario == s)
        .map(|o| &o.result)
}

fn proc_peak(r: &Report, prefix: &str) -> Option<f64> {
    r.processes
        .iter()
        .filter(|p| p.name.starts_with(prefix))
        .map(|p| p.rss_peak_mib)
        .reduce(f64::max)
}

/// One cell of the targets table for `mode`.
fn target_cell(outcomes: &[Outcome], mode: &str, s: Scenario) -> String {
    let Some(result) = find(outcomes, mode, s) else {
        return "not run".into();
    };
    let r = match result {
        Ok(r) => r,
        Err(e) => return format!("failed: {}", e.lines().next().unwrap_or("")),
    };
    let worker = if mode == "embedded" {
        "weft-up"
    } else {
        "worker"
    };
    let gateway = if mode == "embedded" {
        "weft-up"
    } else {
        "gateway"
    };
    match s {
        Scenario::Latency => format!(
            "p50 {:.1} ms, p99 {:.1} ms (TTFT p50 {:.1} over {} ms configured)",
            r.ttft_overhead_ms.p50, r.ttft_overhead_ms.p99, r.ttft_ms.p50, r.mock_ttft_ms
        ),
        Scenario::Throughput => format!(
            "{:.0} runs/s ({} errors)",
            r.runs_per_s,
            r.errors.values().sum::<u64>()
        ),
        Scenario::Soak => format!(
            "{} runs, peak {} concurrent, {} failed, {} errors; {} RSS peak {:.0} MiB",
            r.runs_ok,
            r.peak_concurrent_runs,
            r.runs_failed,
            r.errors.values().sum::<u64>(),
            worker,
            proc_peak(r, worker).unwrap_or(0.0)
        ),
        Scenario::Attach => match &r.attach {
            Some(a) => format!(
                "{} / {} clients, {:.1} KiB RSS each ({} RSS {:.0} → {:.0} MiB)",
                a.clients_connected,
                a.clients_requested,
                a.rss_per_client_kib,
                gateway,
                a.gateway_rss_before_mib,
                a.gateway_rss_after_mib
            ),
            None => "no result".into(),
        },
        Scenario::Reconnect | Scenario::Chaos => match &r.verify {
            Some(v) => format!(
                "{} lost, {} duplicated, {} wrong of {} messages; {} incoherent streams, {} duplicated events",
                v.lost,
                v.duplicated,
                v.wrong,
                v.user_messages,
                r.incoherent_streams,
                r.duplicated_events
            ),
            None => "not verified".into(),
        },
        Scenario::Lark => match &r.lark {
            Some(l) => format!(
                "ack p50 {:.1} ms, first text overhead p50 {:.1} ms; {} lost, {} duplicated of {} conversations; {} rate-limited calls",
                l.probes.ack_ms.p50,
                l.probes.first_text_overhead_ms.p50,
                l.burst.lost,
                l.burst.duplicated,
                l.burst.messages,
                l.rate_limited_calls
            ),
            None => "no result".into(),
        },
        Scenario::Approvals => match &r.approvals {
            Some(a) => format!(
                "{} runs waiting held {} worker slots; {} lost, {} duplicated",
                a.suspended,
                a.slots_held_while_waiting
                    .map_or("unknown".to_owned(), |s| s.to_string()),
                a.lost,
                a.duplicated
            ),
            None => "no result".into(),
        },
    }
}

pub fn render(
    o: &BenchOpts,
    before: &Machine,
    after: &Machine,
    v: &Versions,
    (outcomes, extras): (&[Outcome], &[Extra]),
    langgraph_note: Option<&str>,
    json_dir: &Path,
) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "# Weft benchmarks\n");
    let _ = writeln!(
        t,
        "Written by `weft-loadtest bench` on {}. Every process ran on this one machine and all \
         traffic went over 127.0.0.1. Re-run with:\n\n```sh\nexport CARGO_TARGET_DIR=$HOME/.cache/weft-target\n\
         cargo build --release -p weft -p weft-loadtest\n$CARGO_TARGET_DIR/release/weft-loadtest bench \
         --weft-bin $CARGO_TARGET_DIR/release/weft\n```\n",
        before.when
    );
    let _ = writeln!(t, "## Machine\n");
    let _ = writeln!(
        t,
        "- CPU: {} × {} cores; memory {:.1} GiB; Linux {}\n- load average (1/5/15 min) before the suite: {}; after: {}\n",
        before.cpu, before.cores, before.mem_gib, before.kernel, before.loadavg, after.loadavg
    );
    let _ = writeln!(t, "## Versions\n");
    let _ = writeln!(
        t,
        "- {}\n- {}\n- PostgreSQL {}; Redis {}\n- LangGraph side: {}\n",
        v.weft, v.rustc, v.postgres, v.redis, v.langgraph
    );
    let _ = writeln!(t, "## Targets (issue 5) and what was measured\n");
    let _ = writeln!(
        t,
        "| scenario | target (embedded / distributed) | embedded | distributed |"
    );
    let _ = writeln!(t, "|---|---|---|---|");
    let targets = [
        (
            Scenario::Latency,
            "TTFT overhead p50 ≤ 2 / 5 ms, p99 ≤ 10 / 20 ms (50 users, 50 tokens at 40 tok/s)",
        ),
        (
            Scenario::Throughput,
            "≥ 800 / 400 runs/s (10-token replies, no delay)",
        ),
        (
            Scenario::Soak,
            "2,000 concurrent 400-token runs at 40 tok/s, 0 errors, worker RSS ≤ 1 GiB",
        ),
        (
            Scenario::Attach,
            "10,000 idle SSE clients, ≤ 16 KiB RSS each",
        ),
        (Scenario::Reconnect, "0 lost, 0 duplicated"),
        (Scenario::Chaos, "0 lost, 0 duplicated"),
    ];
    for (s, target) in targets {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} |",
            s.name(),
            target,
            target_cell(outcomes, "embedded", s),
            target_cell(outcomes, "distributed", s)
        );
    }
    let _ = writeln!(t, "\n{}", super::doc_notes::LIMITS);
    let _ = writeln!(t, "\n## Side by side with LangGraph\n");
    if let Some(note) = langgraph_note {
        let _ = writeln!(t, "Not run: {note}.\n");
    }
    side_by_side(&mut t, outcomes, extras);
    sessions_table(&mut t, extras);
    let _ = writeln!(t, "\n{}\n", super::doc_notes::CONFIGURATION);
    let _ = writeln!(t, "## Every scenario\n");
    for out in outcomes {
        let _ = writeln!(t, "### {} / {}\n", out.mode, out.scenario.name());
        if !out.env.is_empty() {
            let env: Vec<String> = out.env.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
            let _ = writeln!(t, "Extra settings: {}\n", env.join(", "));
        }
        match &out.result {
            Ok(r) => {
                let _ = writeln!(t, "```text\n{}```\n", r.table());
            }
            Err(e) => {
                let _ = writeln!(t, "Failed: `{e}`\n");
            }
        }
    }
    let _ = writeln!(
        t,
        "Raw JSON reports: `{}/`. Suite options: soak users {}, attach clients {}, duration scale {}.",
        json_dir.display(),
        o.soak_users,
        o.attach_clients,
        o.duration_scale
    );
    t
}

pub(super) fn system_name(mode: &str) -> &'static str {
    match mode {
        "embedded" => "Weft embedded (`weft up`)",
        "distributed" => "Weft distributed (1 gateway + 1 worker, Postgres, Redis)",
        _ => "LangGraph (`langgraph dev`, in-memory runtime)",
    }
}

//! `weft-loadtest bench`: the standard suite, in both modes, on this machine, with
//! every process started here (a fresh mock LLM and a fresh stack per scenario,
//! so one scenario's memory does not leak into the next one's numbers), then the
//! same `latency` and `throughput` loops against LangGraph's server calling the
//! same mock. Writes the JSON reports and `BENCHMARKS.md` ([`crate::bench::doc`]).

pub mod doc;
mod doc_notes;
mod extras;

use extras::run_extras;
pub use extras::{Extra, SESSION_RUN};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::client::Gateways;
use crate::langgraph::run_langgraph;
use crate::procs::{Proc, ProcSpec};
use crate::report::Report;
use crate::runner::{RunContext, WeftTarget, run_weft};
use crate::scenario::{Params, Scenario};
use crate::stack::{Mode, Stack, StackOpts};
use crate::turn::TurnPlan;

#[derive(Debug, Clone, Args)]
pub struct BenchOpts {
    /// The `weft` binary to benchmark (build it with --release).
    #[arg(long)]
    pub weft_bin: PathBuf,
    #[arg(long, default_value = "BENCHMARKS.md")]
    pub out: PathBuf,
    /// Take the results of scenarios not run this time from earlier JSON reports in
    /// --json-dir, so a partial re-run still writes the whole document.
    #[arg(long)]
    pub reuse_json: bool,
    /// Run nothing: rewrite the document from the JSON reports in --json-dir.
    #[arg(long)]
    pub render_only: bool,
    /// Where the JSON reports go (default: next to --out, in bench-results/).
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "embedded,distributed"
    )]
    pub modes: Vec<Mode>,
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "latency,throughput,soak,attach,reconnect,chaos"
    )]
    pub scenarios: Vec<Scenario>,
    /// Virtual users of `soak` (each holds one 400-token run at a time).
    #[arg(long, default_value_t = 2000)]
    pub soak_users: usize,
    #[arg(long, default_value_t = 10_000)]
    pub attach_clients: usize,
    /// Users of the side by side's extra `throughput` rows (every system,
    /// besides the scenario's own 50); `none` for no extra rows.
    #[arg(long, default_value = "20")]
    pub side_users: String,
    /// Session lengths (turns before a measured phase of 25 turns per user, 20
    /// users) at which a run's server CPU is measured in both modes; `none` to skip.
    #[arg(long, default_value = "10,100,500")]
    pub session_lengths: String,
    /// Multiply every scenario's duration (0.2 for a smoke run).
    #[arg(long, default_value_t = 1.0)]
    pub duration_scale: f64,
    /// A virtualenv with `langgraph-cli[inmem]` and `langchain-openai`; skipped when absent.
    #[arg(long, env = "WEFT_LANGGRAPH_VENV")]
    pub langgraph_venv: Option<PathBuf>,
    /// The directory holding `langgraph.json` and `graph.py`.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/langgraph"))]
    pub langgraph_dir: PathBuf,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    pub postgres_admin_url: String,
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
}

/// Reaper timings that make a killed worker's runs come back in seconds rather
/// than the production default of ~30 s (chaos and `run --weft-bin`).
pub fn fast_recovery_env() -> Vec<(String, String)> {
    [
        ("WEFT_WORKER__HEARTBEAT_MS", "1000"),
        ("WEFT_WORKER__STALE_AFTER_MS", "4000"),
        ("WEFT_WORKER__REQUEUE_AFTER_MS", "4000"),
        ("WEFT_WORKER__REAPER_INTERVAL_MS", "1000"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// One row of the suite: what ran and what came out (or why it did not).
pub struct Outcome {
    pub mode: String,
    pub scenario: Scenario,
    pub env: Vec<(String, String)>,
    pub result: Result<Report, String>,
}

pub fn params(o: &BenchOpts, s: Scenario) -> Params {
    let (users, secs, tokens, ttft, itl) = s.defaults();
    let users = match s {
        Scenario::Soak => o.soak_users,
        _ => users,
    };
    Params {
        scenario: s,
        users,
        duration: Duration::from_secs_f64((secs as f64 * o.duration_scale).max(2.0)),
        plan: TurnPlan::mock(tokens, ttft, itl),
        ramp: Duration::from_secs(if s == Scenario::Soak { 10 } else { 1 }),
        turn_timeout: Duration::from_secs(if matches!(s, Scenario::Chaos | Scenario::Soak) {
            120
        } else {
            60
        }),
        attach_clients: o.attach_clients,
        prefill_turns: 0,
        turns_per_user: None,
        memories: 0,
    }
}

fn scenario_env(s: Scenario) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if s == Scenario::Soak {
        env.push(("WEFT_WORKER__CONCURRENCY".to_owned(), "4096".to_owned()));
    }
    if s == Scenario::Chaos {
        env.extend(fast_recovery_env());
    }
    if s == Scenario::Attach {
        // glibc's default of 8 arenas per core costs about 3 KiB more per idle
        // client (19.3 vs 16.5 KiB measured); the README recommends it for gateways.
        env.push(("MALLOC_ARENA_MAX".to_owned(), "2".to_owned()));
    }
    env
}

pub async fn run(o: BenchOpts) -> anyhow::Result<()> {
    let json_dir = o.json_dir.clone().unwrap_or_else(|| {
        o.out
            .parent()
            .map(|p| p.join("bench-results"))
            .unwrap_or_else(|| "bench-results".into())
    });
    std::fs::create_dir_all(&json_dir)?;
    let work = std::env::temp_dir().join(format!("weft-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let before = doc::Machine::now();
    let mut outcomes = Vec::new();
    let modes = if o.render_only {
        Vec::new()
    } else {
        o.modes.clone()
    };
    for &mode in &modes {
        for &s in &o.scenarios {
            let env = scenario_env(s);
            eprintln!("== {} / {}", mode.name(), s.name());
            let result = run_one(&o, mode, &params(&o, s), &env, &work, s.name())
                .await
                .map_err(|e| format!("{e:#}"));
            match &result {
                Ok(r) => {
                    eprint!("{}", r.table());
                    let path = json_dir.join(format!("{}-{}.json", mode.name(), s.name()));
                    std::fs::write(&path, serde_json::to_string_pretty(r)?)?;
                }
                Err(e) => eprintln!("failed: {e}"),
            }
            outcomes.push(Outcome {
                mode: mode.name().into(),
                scenario: s,
                env,
                result,
            });
        }
    }
    let venv = o.langgraph_venv.clone().or_else(|| {
        let d = PathBuf::from(std::env::var_os("HOME")?).join(".cache/langgraph-venv");
        d.exists().then_some(d)
    });
    let venv = venv.filter(|v| v.join("bin/langgraph").exists());
    let mut langgraph_note = None;
    match &venv {
        Some(_) if o.render_only => {}
        Some(venv) => {
            for s in [Scenario::Latency, Scenario::Throughput] {
                eprintln!("== langgraph / {}", s.name());
                let result = run_langgraph_one(&o, venv, &params(&o, s), &work, s.name())
                    .await
                    .map_err(|e| format!("{e:#}"));
                match &result {
                    Ok(r) => {
                        eprint!("{}", r.table());
                        let path = json_dir.join(format!("langgraph-{}.json", s.name()));
                        std::fs::write(&path, serde_json::to_string_pretty(r)?)?;
                    }
                    Err(e) => eprintln!("failed: {e}"),
                }
                outcomes.push(Outcome {
                    mode: "langgraph".into(),
                    scenario: s,
                    env: Vec::new(),
                    result,
                });
            }
        }
        None => {
            langgraph_note =
                Some("no LangGraph virtualenv was found (pass --langgraph-venv)".to_owned())
        }
    }
    let extras = run_extras(&o, &modes, venv.as_deref(), &work, &json_dir).await?;
    if o.reuse_json || o.render_only {
        let weft = [Mode::Embedded, Mode::Distributed].map(|m| (m.name(), &ALL[..]));
        let lg = [("langgraph", &[Scenario::Latency, Scenario::Throughput][..])];
        for (mode, list) in weft.into_iter().chain(lg) {
            for &s in list {
                if outcomes
                    .iter()
                    .any(|x| x.mode == mode && x.scenario == s && x.result.is_ok())
                {
                    continue;
                }
                if let Some(r) = load_json(&json_dir.join(format!("{mode}-{}.json", s.name()))) {
                    outcomes.retain(|x| !(x.mode == mode && x.scenario == s));
                    let env = if mode == "langgraph" {
                        Vec::new()
                    } else {
                        scenario_env(s)
                    };
                    outcomes.push(Outcome {
                        mode: mode.into(),
                        scenario: s,
                        env,
                        result: Ok(r),
                    });
                }
            }
        }
        let rank = |m: &str| {
            ["embedded", "distributed", "langgraph"]
                .iter()
                .position(|x| *x == m)
        };
        outcomes.sort_by_key(|x| (rank(&x.mode), ALL.iter().position(|s| *s == x.scenario)));
    }
    let after = doc::Machine::now();
    let versions = doc::Versions::collect(&o, venv.as_deref()).await;
    let text = doc::render(
        &o,
        &before,
        &after,
        &versions,
        (&outcomes, &extras),
        langgraph_note.as_deref(),
        &json_dir,
    );
    // A hand-written `## Analysis` section (what limits the numbers, with
    // evidence) survives regeneration.
    let analysis = std::fs::read_to_string(&o.out)
        .ok()
        .and_then(|old| old.find("\n## Analysis").map(|i| old[i..].to_owned()))
        .unwrap_or_default();
    let text = format!(
        "{}{analysis}",
        text.trim_end_matches('\n').to_owned() + "\n"
    );
    std::fs::write(&o.out, text).with_context(|| format!("writing {}", o.out.display()))?;
    eprintln!("wrote {}", o.out.display());
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

const ALL: [Scenario; 6] = [
    Scenario::Latency,
    Scenario::Throughput,
    Scenario::Soak,
    Scenario::Attach,
    Scenario::Reconnect,
    Scenario::Chaos,
];

pub(crate) fn load_json(path: &std::path::Path) -> Option<Report> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// This program's path, even after a rebuild replaced the file under it (Linux
/// then reports `… (deleted)`; the new binary at the same path is what we want).
fn own_exe() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let s = exe.display().to_string();
    Ok(s.strip_suffix(" (deleted)")
        .map(PathBuf::from)
        .unwrap_or(exe))
}

/// A fresh mock LLM process for one scenario.
pub async fn start_mock(work: &std::path::Path, name: &str) -> anyhow::Result<Proc> {
    let spec = ProcSpec {
        name: format!("mock-llm-{name}"),
        program: own_exe()?,
        args: vec!["mock-llm".into(), "--listen".into(), "127.0.0.1:0".into()],
        env: vec![("RUST_LOG".into(), "warn".into())],
        cwd: None,
        ready_marker: Some("listening on http://".into()),
    };
    Proc::start(spec, work).await
}

pub(crate) async fn run_one(
    o: &BenchOpts,
    mode: Mode,
    p: &Params,
    env: &[(String, String)],
    work: &std::path::Path,
    name: &str,
) -> anyhow::Result<Report> {
    let mut mock = start_mock(work, &format!("{}-{name}", mode.name())).await?;
    let mock_url = format!("http://{}", mock.addr.clone().unwrap_or_default());
    let opts = StackOpts {
        weft_bin: o.weft_bin.clone(),
        mode,
        llm_base_url: Some(format!("{mock_url}/v1")),
        gateways: 1,
        workers: if p.scenario == Scenario::Chaos { 2 } else { 1 },
        env: env.to_vec(),
        dir: work.join(format!("{}-{name}", mode.name())),
        postgres_admin_url: o.postgres_admin_url.clone(),
        redis_url: o.redis_url.clone(),
    };
    let stack = Stack::start(&opts).await?;
    let target = WeftTarget {
        gateways: Gateways::new(stack.gateway_urls())?,
        token: stack.admin_token.clone(),
        shared_token: false,
        accounts: 50,
    };
    let stack = Arc::new(tokio::sync::Mutex::new(stack));
    let ctx = RunContext {
        stack: Some(stack.clone()),
        extra_pids: mock
            .pid()
            .map(|p| ("mock-llm".to_owned(), p))
            .into_iter()
            .collect(),
        mock_url: Some(mock_url),
        label: mode.name().into(),
    };
    let report = run_weft(p, &target, &ctx).await;
    drop(ctx);
    if let Ok(stack) = Arc::try_unwrap(stack) {
        stack.into_inner().shutdown().await;
    }
    mock.stop(Duration::from_secs(2)).await;
    report
}

pub(crate) async fn run_langgraph_one(
    o: &BenchOpts,
    venv: &std::path::Path,
    p: &Params,
    work: &std::path::Path,
    name: &str,
) -> anyhow::Result<Report> {
    let mut mock = start_mock(work, &format!("langgraph-{name}")).await?;
    let mock_url = format!("http://{}", mock.addr.clone().unwrap_or_default());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let spec = ProcSpec {
        name: format!("langgraph-{name}"),
        program: venv.join("bin/langgraph"),
        args: [
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--no-browser",
            "--no-reload",
            "--n-jobs-per-worker",
            "256",
            "--server-log-level",
            "WARNING",
            "--config",
            &o.langgraph_dir.join("langgraph.json").display().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        env: vec![
            ("MOCK_LLM_BASE_URL".into(), format!("{mock_url}/v1")),
            ("LANGGRAPH_CLI_NO_ANALYTICS".into(), "1".into()),
            ("LANGSMITH_TRACING".into(), "false".into()),
            ("LANGCHAIN_TRACING_V2".into(), "false".into()),
            (
                "PATH".into(),
                format!(
                    "{}:{}",
                    venv.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
        ],
        cwd: Some(o.langgraph_dir.clone()),
        ready_marker: None,
    };
    let mut server = Proc::start(spec, work).await?;
    let url = format!("http://127.0.0.1:{port}");
    let ready = wait_ok(&format!("{url}/ok"), Duration::from_secs(90)).await;
    let result = match ready {
        Ok(()) => {
            let mut pids: Vec<(String, u32)> = Vec::new();
            if let Some(pid) = server.pid() {
                pids.push(("langgraph".into(), pid));
            }
            if let Some(pid) = mock.pid() {
                pids.push(("mock-llm".into(), pid));
            }
            let ctx = RunContext {
                stack: None,
                extra_pids: pids,
                mock_url: Some(mock_url),
                label: "langgraph dev (in-memory runtime), n-jobs-per-worker 256".into(),
            };
            run_langgraph(p, &url, "agent", &ctx).await
        }
        Err(e) => Err(e.context(format!(
            "LangGraph did not come up; see {}",
            server.log.display()
        ))),
    };
    server.stop(Duration::from_secs(5)).await;
    mock.stop(Duration::from_secs(2)).await;
    result
}

async fn wait_ok(url: &str, within: Duration) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        if let Ok(r) = http.get(url).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    anyhow::bail!("{url} did not answer 200 within {within:?}")
}

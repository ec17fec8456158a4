//! `weft-loadtest`: command-line entry. Subcommands stay thin wrappers over the library.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use weft_loadtest::bench::{self, BenchOpts};
use weft_loadtest::client::Gateways;
use weft_loadtest::langgraph::run_langgraph;
use weft_loadtest::mock_llm::{self, FaultRates, MockLlmConfig};
use weft_loadtest::runner::{RunContext, WeftTarget, run_weft};
use weft_loadtest::saturate::{self, SaturateOpts};
use weft_loadtest::scenario::approvals::ApprovalParams;
use weft_loadtest::scenario::lark::LarkParams;
use weft_loadtest::scenario::lark::groups::GroupParams;
use weft_loadtest::scenario::lark::launch::{self, LarkWeft};
use weft_loadtest::scenario::{self, Params, Scenario};
use weft_loadtest::stack::{Mode, Stack, StackOpts};
use weft_loadtest::turn::TurnPlan;

#[derive(Parser)]
#[command(
    name = "weft-loadtest",
    version,
    about = "Load tester and mock LLM server for Weft"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the mock LLM server (OpenAI and Anthropic wires, `@mock.*` directives).
    MockLlm(MockArgs),
    /// Run one scenario against a gateway (or a stack it starts with --weft-bin).
    /// `lark` pushes messages from a fake Lark to the Lark bot instead: run it
    /// with --weft-bin, or with --lark-listen against a weft started by hand.
    /// `approvals` suspends --runs runs on a tool approval, reads the worker slots
    /// they hold from --metrics-url, approves them all and checks every run: run
    /// it with --gateway and an admin --token against a weft started with
    /// WEFT_TOOLS__POLICIES__CURRENT_TIME=confirm and the per-user run limits off
    /// (WEFT_LIMITS__ACTIVE_RUNS_PER_USER=0, WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER=0).
    Run(Box<RunArgs>),
    /// Run the standard suite in both modes and write BENCHMARKS.md.
    Bench(BenchOpts),
    /// Find where one Postgres or one Redis saturates: tasks drive it through
    /// Weft's own store or bus code (no HTTP, no model) at rising concurrency.
    /// 127.0.0.1 only; a scratch database or key prefix, removed at the end.
    Saturate(SaturateOpts),
    /// Measure knowledge bases (issue 25): ingestion of --docs small documents,
    /// search latency at --sizes chunks (hybrid and lexical), and what
    /// `knowledge_mode = "auto"` adds to the first token; starts its own stack
    /// per mode and writes a Markdown table to --out.
    Knowledge(weft_loadtest::knowledge::KnowledgeOpts),
}

#[derive(Args)]
struct MockArgs {
    #[arg(long, env = "WEFT_MOCK_LLM_LISTEN", default_value = "127.0.0.1:8089")]
    listen: String,
    /// Default time to first token, when a message has no `@mock.delay`.
    #[arg(long, default_value_t = 0)]
    ttft_ms: u64,
    /// Default inter-token latency.
    #[arg(long, default_value_t = 0)]
    itl_ms: u64,
    /// Uniform jitter (±) applied to each default delay.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Each request in flight stretches the latencies of new requests by this many percent.
    #[arg(long, default_value_t = 0.0)]
    load_factor: f64,
    /// Fraction of requests answered 429 (with `retry-after-ms`).
    #[arg(long, default_value_t = 0.0)]
    rate_429: f64,
    #[arg(long, default_value_t = 1000)]
    retry_after_ms: u64,
    /// Fraction of requests answered 500.
    #[arg(long, default_value_t = 0.0)]
    rate_500: f64,
    /// Fraction of requests answered 529 (overloaded).
    #[arg(long, default_value_t = 0.0)]
    rate_529: f64,
    /// Fraction of streams cut halfway without an end marker.
    #[arg(long, default_value_t = 0.0)]
    rate_cut: f64,
}

#[derive(Args)]
struct RunArgs {
    scenario: Scenario,
    /// Gateway base URL (repeatable; clients fail over between them).
    #[arg(long = "gateway")]
    gateways: Vec<String>,
    /// Admin token (users are created and sign in), or with --shared-token a user token.
    #[arg(long, env = "WEFT_TOKEN")]
    token: Option<String>,
    #[arg(long)]
    shared_token: bool,
    /// Virtual users (lark: conversations of the burst, one message each;
    /// approvals: requests in flight at once, default 64).
    #[arg(long)]
    users: Option<usize>,
    /// `approvals`: runs to suspend on an approval, then approve.
    #[arg(long, default_value_t = 1000)]
    runs: usize,
    /// `approvals`: a worker's Prometheus `/metrics` URL (repeatable, one per
    /// `weft worker --metrics-listen`); by default the first gateway's, which is
    /// the worker's own in `weft up`.
    #[arg(long = "metrics-url")]
    metrics_urls: Vec<String>,
    /// `approvals`: each worker's concurrency as configured
    /// (`WEFT_WORKER__CONCURRENCY`), to set the slots held against.
    #[arg(long)]
    worker_concurrency: Option<u64>,
    /// `approvals`: how long every run is held waiting while the worker slots
    /// are sampled (every 100 ms); longer than the workers' reaper interval (5 s
    /// by default), so the queue depth they report is counted within it.
    #[arg(long, default_value_t = 6000)]
    hold_ms: u64,
    /// `approvals`: ordinary runs sent while every run waits (each must finish).
    #[arg(long, default_value_t = 8)]
    probe_runs: usize,
    /// The report's label (default: the mode with --weft-bin, else `external`).
    #[arg(long)]
    label: Option<String>,
    /// Seconds of load (attach: how long clients are held).
    #[arg(long)]
    duration: Option<u64>,
    /// Words in each reply the mock model is scripted to give.
    #[arg(long)]
    tokens: Option<u32>,
    /// The mock model's time to first token.
    #[arg(long)]
    ttft_ms: Option<u64>,
    /// The mock model's time between tokens.
    #[arg(long)]
    itl_ms: Option<u64>,
    /// Seconds over which users start (lark: over which the burst is pushed).
    #[arg(long, default_value_t = 1)]
    ramp: u64,
    /// Seconds a turn may take (default 60; lark: the longest wait for a probe's
    /// final card, and for all of the burst's, default 120; approvals: the
    /// longest wait for one run in each phase, default 300).
    #[arg(long)]
    turn_timeout: Option<u64>,
    /// `lark`: messages sent one at a time before the burst of --users
    /// conversations (the latency of an idle bot).
    #[arg(long, default_value_t = 60)]
    probes: usize,
    /// `lark`: the least time from one probe to the next, so the probes stay well
    /// within each process's share of Lark's 50 calls/s.
    #[arg(long, default_value_t = 1000)]
    probe_interval_ms: u64,
    /// `lark`: group chats of the groups phase (issue 21; 0: no groups phase).
    #[arg(long, default_value_t = 20)]
    lark_groups: usize,
    /// `lark`: people speaking in each group.
    #[arg(long, default_value_t = 5)]
    lark_speakers: usize,
    /// `lark`: messages each speaker sends.
    #[arg(long, default_value_t = 10)]
    lark_messages: usize,
    /// `lark`: seconds over which every group message is pushed.
    #[arg(long, default_value_t = 10)]
    lark_group_spread: u64,
    /// `lark` without --weft-bin: the fake Lark listens here (loopback); start weft
    /// with WEFT_LARK__BASE_URL=http://ADDR and the app id and secret it prints.
    /// The run waits for --gateways-to-start long connections.
    #[arg(long, default_value = "127.0.0.1:18090")]
    lark_listen: String,
    /// Turns each user's session gets before the measured phase (unmeasured,
    /// its CPU not counted): what a run costs in a long conversation.
    #[arg(long, default_value_t = 0)]
    prefill_turns: usize,
    /// End the measured phase after this many turns per user instead of after
    /// --duration (so the sessions stay near --prefill-turns long).
    #[arg(long)]
    turns_per_user: Option<usize>,
    /// Memories each account keeps before the measured phase (the first
    /// pinned, all related to the turn's text, so every run recalls them):
    /// compare with `--env WEFT_MEMORY__ENABLED=false` for what memory adds.
    #[arg(long, default_value_t = 0)]
    memories: usize,
    /// `attach`: idle SSE clients.
    #[arg(long, default_value_t = 10_000)]
    clients: usize,
    /// Distinct accounts the users are spread over.
    #[arg(long, default_value_t = 50)]
    accounts: usize,
    /// Drive a LangGraph server at this URL instead of Weft.
    #[arg(long)]
    langgraph: Option<String>,
    #[arg(long, default_value = "agent")]
    assistant: String,
    /// Write the JSON report here (it is always printed to stdout after the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Start the stack with this `weft` binary instead of using --gateway
    /// (lark: `weft up` in embedded mode uses the in-process `mock` model).
    #[arg(long)]
    weft_bin: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "embedded")]
    mode: Mode,
    #[arg(long, default_value_t = 2)]
    workers: usize,
    #[arg(long, default_value_t = 1)]
    gateways_to_start: usize,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    postgres_admin_url: String,
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Extra environment for the weft processes started with --weft-bin (`KEY=VALUE`).
    #[arg(long = "env", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// With --weft-bin: start a mock LLM process and use it over HTTP (OpenAI wire)
    /// instead of weft's in-process `mock` model.
    #[arg(long)]
    mock_http: bool,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match Cli::parse().command {
        Command::MockLlm(a) => mock(a).await,
        Command::Run(a) => run(*a).await,
        Command::Bench(o) => bench::run(o).await,
        Command::Saturate(o) => saturate_cmd(o).await,
        Command::Knowledge(o) => weft_loadtest::knowledge::run_knowledge(o).await,
    }
}

async fn mock(a: MockArgs) -> anyhow::Result<()> {
    let config = MockLlmConfig {
        ttft: Duration::from_millis(a.ttft_ms),
        itl: Duration::from_millis(a.itl_ms),
        jitter: Duration::from_millis(a.jitter_ms),
        load_factor: a.load_factor,
        faults: FaultRates {
            rate_429: a.rate_429,
            retry_after: Duration::from_millis(a.retry_after_ms),
            rate_500: a.rate_500,
            rate_529: a.rate_529,
            rate_cut: a.rate_cut,
        },
    };
    let listener = tokio::net::TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("binding {}", a.listen))?;
    let addr = listener.local_addr()?;
    eprintln!("weft-loadtest mock-llm listening on http://{addr}");
    mock_llm::serve_with(listener, config, shutdown_signal())
        .await
        .context("serving")
}

async fn run(a: RunArgs) -> anyhow::Result<()> {
    match a.scenario {
        Scenario::Lark => return lark(a).await,
        Scenario::Approvals => return approvals(a).await,
        _ => {}
    }
    let (users, secs, tokens, ttft, itl) = a.scenario.defaults();
    let p = Params {
        scenario: a.scenario,
        users: a.users.unwrap_or(users),
        duration: Duration::from_secs(a.duration.unwrap_or(secs)),
        plan: TurnPlan::mock(
            a.tokens.unwrap_or(tokens),
            a.ttft_ms.unwrap_or(ttft),
            a.itl_ms.unwrap_or(itl),
        ),
        ramp: Duration::from_secs(a.ramp),
        turn_timeout: Duration::from_secs(a.turn_timeout.unwrap_or(60)),
        attach_clients: a.clients,
        prefill_turns: a.prefill_turns,
        turns_per_user: a.turns_per_user,
        memories: a.memories,
    };
    let report = if let Some(url) = &a.langgraph {
        Gateways::new(vec![url.clone()])?;
        let ctx = RunContext {
            label: "langgraph".into(),
            ..RunContext::default()
        };
        run_langgraph(&p, url, &a.assistant, &ctx).await?
    } else if a.weft_bin.is_some() {
        let mut opts = stack_opts(&a)?;
        let mut mock = None;
        if a.mock_http {
            mock = Some(bench::start_mock(&opts.dir, "run").await?);
        }
        let mock_url = mock
            .as_ref()
            .and_then(|m| m.addr.clone())
            .map(|a| format!("http://{a}"));
        opts.llm_base_url = mock_url.as_ref().map(|u| format!("{u}/v1"));
        let stack = Stack::start(&opts).await?;
        let target = WeftTarget {
            gateways: Gateways::new(stack.gateway_urls())?,
            token: stack.admin_token.clone(),
            shared_token: false,
            accounts: a.accounts,
        };
        let stack = Arc::new(tokio::sync::Mutex::new(stack));
        let ctx = RunContext {
            stack: Some(stack.clone()),
            extra_pids: mock
                .as_ref()
                .and_then(|m| m.pid())
                .map(|p| ("mock-llm".to_owned(), p))
                .into_iter()
                .collect(),
            mock_url,
            label: a.label.clone().unwrap_or_else(|| a.mode.name().into()),
        };
        let r = run_weft(&p, &target, &ctx).await;
        drop(ctx);
        if let Ok(s) = Arc::try_unwrap(stack) {
            s.into_inner().shutdown().await;
        }
        if let Some(mut m) = mock {
            m.stop(Duration::from_secs(2)).await;
        }
        r?
    } else {
        let token = a
            .token
            .clone()
            .context("--token is needed with --gateway")?;
        let target = WeftTarget {
            gateways: Gateways::new(a.gateways.clone())?,
            token,
            shared_token: a.shared_token,
            accounts: a.accounts,
        };
        run_weft(
            &p,
            &target,
            &RunContext {
                label: a.label.clone().unwrap_or_else(|| "external".into()),
                ..RunContext::default()
            },
        )
        .await?
    };
    emit(&report, a.json.as_deref())
}

/// `run lark`: a fake Lark pushes messages to the Lark bot of the stack started
/// here (embedded: the in-process `mock` model), or of a weft started by hand.
async fn lark(a: RunArgs) -> anyhow::Result<()> {
    let (users, _, tokens, ttft, itl) = a.scenario.defaults();
    let plan = TurnPlan::mock(
        a.tokens.unwrap_or(tokens),
        a.ttft_ms.unwrap_or(ttft),
        a.itl_ms.unwrap_or(itl),
    );
    let group_plan = LarkParams::probe_plan(&plan);
    let p = LarkParams {
        probes: a.probes,
        probe_interval: Duration::from_millis(a.probe_interval_ms),
        probe_plan: LarkParams::probe_plan(&plan),
        conversations: a.users.unwrap_or(users),
        plan,
        ramp: Duration::from_secs(a.ramp),
        timeout: Duration::from_secs(a.turn_timeout.unwrap_or(120)),
        connections: a.gateways_to_start,
        groups: (a.lark_groups > 0).then(|| GroupParams {
            groups: a.lark_groups,
            speakers: a.lark_speakers.max(1),
            messages: a.lark_messages.max(1),
            spread: Duration::from_secs(a.lark_group_spread),
            plan: group_plan,
        }),
        database_url: None,
    };
    let (weft, label) = match a.weft_bin {
        Some(_) => (LarkWeft::Stack(stack_opts(&a)?), a.mode.name()),
        None => (
            LarkWeft::External {
                listen: a.lark_listen.clone(),
                replicas: a.gateways_to_start,
            },
            "external",
        ),
    };
    let report = launch::run(&p, weft, label).await?;
    emit(&report, a.json.as_deref())
}

/// `run approvals`: against a weft started by hand (it must have the `confirm`
/// policy for `current_time`, and its workers' `/metrics` must be reachable).
async fn approvals(a: RunArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.weft_bin.is_none() && a.langgraph.is_none(),
        "approvals runs against a weft started by hand: --gateway URL --token ADMIN_TOKEN \
         [--metrics-url http://WORKER/metrics …] (see the Approvals section of BENCHMARKS.md)"
    );
    let (users, ..) = a.scenario.defaults();
    let target = WeftTarget {
        gateways: Gateways::new(a.gateways.clone())?,
        token: a
            .token
            .clone()
            .context("--token is needed with --gateway")?,
        shared_token: a.shared_token,
        accounts: a.accounts,
    };
    let p = ApprovalParams {
        runs: a.runs,
        clients: a.users.unwrap_or(users),
        accounts: a.accounts,
        metrics_urls: a.metrics_urls.clone(),
        worker_concurrency: a.worker_concurrency,
        hold: Duration::from_millis(a.hold_ms),
        probe_runs: a.probe_runs,
        timeout: Duration::from_secs(a.turn_timeout.unwrap_or(300)),
    };
    let label = a.label.clone().unwrap_or_else(|| "external".into());
    let report = scenario::approvals::run(&target, &p, &label).await?;
    emit(&report, a.json.as_deref())
}

/// `saturate`: the table, then the JSON (also written to --json when given).
async fn saturate_cmd(o: SaturateOpts) -> anyhow::Result<()> {
    let report = saturate::run(&o).await?;
    print!("{}", report.table());
    let text = serde_json::to_string_pretty(&report)?;
    let json = match &o.target {
        saturate::Target::Postgres(p) => &p.levels.json,
        saturate::Target::Redis(r) => &r.levels.json,
    };
    if let Some(path) = json {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

/// What a stack started with --weft-bin runs with (a fresh directory under the
/// system's temp folder, weft's in-process `mock` model).
fn stack_opts(a: &RunArgs) -> anyhow::Result<StackOpts> {
    let bin = a
        .weft_bin
        .clone()
        .context("--weft-bin is needed to start a stack")?;
    let dir = std::env::temp_dir().join(format!("weft-loadtest-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut env = bench::fast_recovery_env();
    env.extend(a.env.iter().cloned());
    Ok(StackOpts {
        weft_bin: bin,
        mode: a.mode,
        llm_base_url: None,
        gateways: a.gateways_to_start,
        workers: a.workers,
        env,
        dir,
        postgres_admin_url: a.postgres_admin_url.clone(),
        redis_url: a.redis_url.clone(),
    })
}

/// The table, then the JSON (also written to `json` when given).
fn emit(
    report: &weft_loadtest::report::Report,
    json: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    print!("{}", report.table());
    let text = serde_json::to_string_pretty(report)?;
    if let Some(path) = json {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

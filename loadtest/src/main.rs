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
use weft_loadtest::scenario::{Params, Scenario};
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
    Run(RunArgs),
    /// Run the standard suite in both modes and write BENCHMARKS.md.
    Bench(BenchOpts),
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
    #[arg(long)]
    users: Option<usize>,
    /// Seconds of load (attach: how long clients are held).
    #[arg(long)]
    duration: Option<u64>,
    #[arg(long)]
    tokens: Option<u32>,
    #[arg(long)]
    ttft_ms: Option<u64>,
    #[arg(long)]
    itl_ms: Option<u64>,
    /// Seconds over which users start.
    #[arg(long, default_value_t = 1)]
    ramp: u64,
    #[arg(long, default_value_t = 60)]
    turn_timeout: u64,
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
    /// Start the stack with this `weft` binary instead of using --gateway.
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
        Command::Run(a) => run(a).await,
        Command::Bench(o) => bench::run(o).await,
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
        turn_timeout: Duration::from_secs(a.turn_timeout),
        attach_clients: a.clients,
    };
    let report = if let Some(url) = &a.langgraph {
        Gateways::new(vec![url.clone()])?;
        let ctx = RunContext {
            label: "langgraph".into(),
            ..RunContext::default()
        };
        run_langgraph(&p, url, &a.assistant, &ctx).await?
    } else if let Some(bin) = &a.weft_bin {
        let dir = std::env::temp_dir().join(format!("weft-loadtest-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut env = bench::fast_recovery_env();
        env.extend(a.env.iter().cloned());
        let mut mock = None;
        if a.mock_http {
            mock = Some(bench::start_mock(&dir, "run").await?);
        }
        let mock_url = mock
            .as_ref()
            .and_then(|m| m.addr.clone())
            .map(|a| format!("http://{a}"));
        let opts = StackOpts {
            weft_bin: bin.clone(),
            mode: a.mode,
            llm_base_url: mock_url.as_ref().map(|u| format!("{u}/v1")),
            gateways: a.gateways_to_start,
            workers: a.workers,
            env,
            dir,
            postgres_admin_url: a.postgres_admin_url.clone(),
            redis_url: a.redis_url.clone(),
        };
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
            label: a.mode.name().into(),
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
                label: "external".into(),
                ..RunContext::default()
            },
        )
        .await?
    };
    print!("{}", report.table());
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &a.json {
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{json}");
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

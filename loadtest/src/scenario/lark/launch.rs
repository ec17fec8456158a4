//! Setting up a `lark` run: the fake must be listening before Weft starts (Weft
//! learns its address from `WEFT_LARK__BASE_URL` and checks its credentials at
//! start-up), so this starts the fake first, then either the stack with the Lark
//! settings added, or nothing (an already running Weft pointed at the fake's
//! fixed address), and wraps the result in the usual [`Report`].

use std::time::Instant;

use anyhow::Context;
use weft_lark::fake::FakeLark;

use super::{LarkParams, fake_config, weft_env};
use crate::procs::ProcWatch;
use crate::report::Report;
use crate::stack::{Stack, StackOpts};

/// Lark's per-app budget of API calls per second.
const APP_CALLS_PER_S: u32 = 50;
/// Postgres connections the stack's processes may hold together: Postgres allows
/// 100 by default, and four processes at weft's default pool of 32 went past it
/// (then every connection attempt fails and pool waits time out).
const PG_CONNECTIONS: u32 = 80;

/// Where Weft is.
pub enum LarkWeft {
    /// Start it here; the Lark settings are added to the options' environment.
    Stack(StackOpts),
    /// It is started by hand with `WEFT_LARK__BASE_URL=http://LISTEN` (and the
    /// fake's app id and secret); `replicas` long connections are waited for.
    External { listen: String, replicas: usize },
}

/// Starts the fake (and the stack), runs the scenario, stops what it started.
pub async fn run(p: &LarkParams, weft: LarkWeft, label: &str) -> anyhow::Result<Report> {
    let fake = start_fake(match &weft {
        LarkWeft::External { listen, .. } => listen,
        LarkWeft::Stack(_) => "127.0.0.1:0",
    })
    .await?;
    let mut p = p.clone();
    let (stack, share) = match weft {
        LarkWeft::Stack(mut opts) => {
            let processes = processes(&opts);
            let share = (APP_CALLS_PER_S / processes).max(1);
            // First, so the operator's `--env` can still override them.
            let mut env = weft_env(&fake, share);
            env.push((
                "WEFT_DATABASE_MAX_CONNECTIONS".into(),
                (PG_CONNECTIONS / processes).max(2).to_string(),
            ));
            env.append(&mut opts.env);
            opts.env = env;
            let stack = Stack::start(&opts).await?;
            p.connections = stack.gateways.len();
            p.database_url = stack.database_url().map(str::to_owned);
            (Some(stack), calls_per_second(&opts.env).unwrap_or(share))
        }
        LarkWeft::External { replicas, .. } => {
            eprintln!(
                "fake Lark at {}: start weft with WEFT_LARK__BASE_URL={0} WEFT_LARK__APP_ID={} WEFT_LARK__APP_SECRET={}",
                fake.base_url(),
                fake.config().app_id,
                fake.config().app_secret
            );
            p.connections = replicas;
            (None, 0)
        }
    };
    let watch = ProcWatch::start(&stack.as_ref().map(Stack::pids).unwrap_or_default());
    let started = Instant::now();
    let result = super::run(&fake, &p).await;
    let processes = watch.finish();
    let duration_s = started.elapsed().as_secs_f64();
    if let Some(stack) = stack {
        stack.shutdown().await;
    }
    fake.shutdown();
    let mut lark = result?;
    lark.calls_per_second_per_process = share;
    Ok(Report {
        scenario: "lark".into(),
        target: "weft".into(),
        label: label.into(),
        users: p.conversations,
        duration_s,
        reply_tokens: p.plan.tokens,
        mock_ttft_ms: p.plan.ttft.as_millis() as u64,
        mock_itl_ms: p.plan.itl.as_millis() as u64,
        processes,
        lark: Some(lark),
        ..Report::default()
    })
}

async fn start_fake(listen: &str) -> anyhow::Result<FakeLark> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding the fake Lark to {listen}"))?;
    anyhow::ensure!(
        listener.local_addr()?.ip().is_loopback(),
        "{listen}: the fake Lark only listens on loopback addresses"
    );
    Ok(FakeLark::spawn_on(listener, fake_config())?)
}

/// Weft processes the stack runs. Each gets an equal share of the app's call
/// budget (every gateway adds THINKING reactions and every worker streams cards,
/// each through its own limiter, and Lark counts them together) and of the
/// Postgres connections.
fn processes(opts: &StackOpts) -> u32 {
    match opts.mode {
        crate::stack::Mode::Embedded => 1,
        crate::stack::Mode::Distributed => (opts.gateways.max(1) + opts.workers.max(1)) as u32,
    }
}

/// The last `WEFT_LARK__CALLS_PER_SECOND` in `env` (what the processes will use).
fn calls_per_second(env: &[(String, String)]) -> Option<u32> {
    env.iter()
        .rev()
        .find(|(k, _)| k == "WEFT_LARK__CALLS_PER_SECOND")
        .and_then(|(_, v)| v.parse().ok())
}

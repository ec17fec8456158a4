//! Runs one scenario against Weft and assembles its [`Report`]: signs users in,
//! watches the processes the load tester started, dispatches to the scenario,
//! verifies through the API where the scenario asks for it, and collects the
//! mock LLM's counters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

pub use crate::client::WeftTarget;
use crate::client::{WeftClient, http_client, sign_in_users};
use crate::procs::ProcWatch;
use crate::report::Report;
use crate::scenario::{self, Gauge, Params, Scenario};
use crate::stack::Stack;
use crate::stats::Recorder;

/// Extra context a run may have.
#[derive(Default)]
pub struct RunContext {
    pub stack: Option<Arc<Mutex<Stack>>>,
    /// Processes started outside the stack (the mock LLM), for RSS/CPU.
    pub extra_pids: Vec<(String, u32)>,
    /// `http://127.0.0.1:P` of the mock LLM, for its `/stats`.
    pub mock_url: Option<String>,
    pub label: String,
}

pub async fn run_weft(p: &Params, t: &WeftTarget, ctx: &RunContext) -> anyhow::Result<Report> {
    anyhow::ensure!(
        p.scenario != Scenario::Lark,
        "lark drives Weft through a fake Lark, not its HTTP API: see scenario::lark::launch"
    );
    anyhow::ensure!(
        p.scenario != Scenario::Approvals,
        "approvals has phases of its own, not a closed loop: see scenario::approvals::run"
    );
    let http = http_client();
    let mut rep = scenario::report_head(p, "weft", &ctx.label);
    let accounts = if p.scenario == Scenario::Attach {
        1
    } else {
        t.accounts.clamp(1, p.users.max(1))
    };
    let base = if t.shared_token {
        Vec::new()
    } else {
        let prefix = format!("lt{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        match sign_in_users(&http, &t.gateways, &t.token, &prefix, accounts).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "could not create users; every virtual user sends --token");
                Vec::new()
            }
        }
    };
    if p.memories > 0 {
        eprintln!(
            "giving {} accounts {} memories each",
            base.len(),
            p.memories
        );
        for client in &base {
            for i in 0..p.memories {
                let text =
                    format!("load test note {i}: mock tokens and delay settings of this account");
                client.add_memory(&text, i == 0).await?;
            }
        }
    }
    let clients: Vec<WeftClient> = (0..p.users.max(1))
        .map(|i| match base.get(i % base.len().max(1)) {
            Some(c) => WeftClient {
                current: t.gateways.pick(),
                ..c.clone()
            },
            None => WeftClient {
                http: http.clone(),
                gateways: t.gateways.clone(),
                current: t.gateways.pick(),
                token: t.token.clone(),
            },
        })
        .collect();
    let mut pids = match &ctx.stack {
        Some(s) => s.lock().await.pids(),
        None => Vec::new(),
    };
    pids.extend(ctx.extra_pids.iter().cloned());
    // Sessions made long before the watch starts: their cost is not counted.
    let seats: Vec<scenario::Seat> = if p.prefill_turns > 0 && p.scenario != Scenario::Attach {
        eprintln!(
            "prefilling {} sessions with {} turns each",
            clients.len(),
            p.prefill_turns
        );
        scenario::prefill(clients, p).await
    } else {
        clients.into_iter().map(scenario::Seat::from).collect()
    };
    let watch = ProcWatch::start(&pids);
    let rec = Arc::new(Recorder::default());
    let gauge = Arc::new(Gauge::default());
    let started = Instant::now();
    let logs = match p.scenario {
        Scenario::Attach => {
            let gateway_pid = pids.first().map(|(_, pid)| *pid);
            let a =
                scenario::attach::run(&seats[0].client, p.attach_clients, p.duration, gateway_pid)
                    .await?;
            rep.attach = Some(a);
            Vec::new()
        }
        Scenario::Chaos => {
            let Some(stack) = ctx.stack.clone() else {
                anyhow::bail!(
                    "chaos needs processes the load tester started itself: pass --weft-bin"
                );
            };
            let (logs, timeline) = scenario::chaos::run(
                seats.into_iter().map(|s| s.client).collect(),
                p,
                rec.clone(),
                gauge.clone(),
                stack,
            )
            .await;
            rep.timeline = timeline;
            logs
        }
        _ => scenario::closed_loop(seats, p, rec.clone(), gauge.clone()).await,
    };
    rep.duration_s = started.elapsed().as_secs_f64();
    if p.scenario.verifies() && !logs.is_empty() {
        rep.verify =
            Some(scenario::verify::verify(&logs, &p.plan.expect, Duration::from_secs(120)).await);
    }
    rep.processes = watch.finish();
    rep.peak_concurrent_runs = gauge.peak();
    rep.absorb(rec.take());
    if let Some(url) = &ctx.mock_url {
        rep.mock = mock_stats(&http, url).await;
    }
    Ok(rep)
}

pub async fn mock_stats(
    http: &reqwest::Client,
    url: &str,
) -> Option<crate::mock_llm::StatsSnapshot> {
    let r = http.get(format!("{url}/stats")).send().await.ok()?;
    r.json().await.ok()
}

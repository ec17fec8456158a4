//! `saturate postgres`: runs made through `weft_store::Store` alone.
//!
//! Each task is one user in one conversation after another. A run is the store
//! calls a real one makes, in the order the gateway and worker make them: the
//! request's token check and the send transaction (gateway); the claim, the
//! reads that build the system prompt and context (agent, the user's
//! instructions, skills, a pending approval step, compaction request, summary,
//! the conversation), heartbeats, each tool step's grants read and checkpoint,
//! and the finishing transaction (worker). Per-user run limits are off, as in
//! the benchmarks.
//!
//! Counting: every level opens its own pool, so its backends are born with it;
//! their CPU (from `/proc`, since birth) plus the background processes' (WAL
//! writer, checkpointer, …, as deltas) is what Postgres spent. The level's
//! transactions are `pg_stat_database.xact_commit` of the scratch database,
//! read once the pool is closed (a backend flushes its counters when it exits).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Args;
use sqlx::{Connection, PgConnection};
use weft_shared::api::{Multitask, ToolCallDto, UsageDto};
use weft_shared::auth::{new_token, token_hash};
use weft_shared::ids::{SessionId, UserId};
use weft_shared::time::now_ms;
use weft_store::{
    ClaimOutcome, FinishOutcome, NewMessage, Role, RunEnd, RunLimits, SendOutcome, SendRequest,
    StepCheckpoint, Store, TokenKind, ToolResult,
};

use super::meter::{LevelClock, ProcsCpu, cores, load_1m};
use super::pg_stats::{
    background_pids, commits, database_pids, database_size, wait_for_no_backends,
};
use super::{Level, Levels, SaturationReport, Tally, micros_since, note_error, saturation};
use crate::stack::{create_database, drop_database};

#[derive(Debug, Clone, Args)]
pub struct PgOpts {
    /// A database on this machine (127.0.0.1 only) to connect to for `create
    /// database`: the scratch one is made next to it and dropped at the end.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    pub database_url: String,
    #[command(flatten)]
    pub levels: Levels,
    /// Connections in the pool every task shares (Weft's
    /// `database_max_connections` is 32 per process); 1–64.
    #[arg(long, default_value_t = 32)]
    pub pg_connections: u32,
    /// Tool steps per run, each checkpointed (0: a plain reply).
    #[arg(long, default_value_t = 1)]
    pub tool_steps: u32,
    /// Heartbeats per run (a worker beats every 10 s: one for a 10-second reply).
    #[arg(long, default_value_t = 1)]
    pub heartbeats: u32,
    /// Words in the reply each run is finished with.
    #[arg(long, default_value_t = 400)]
    pub reply_words: usize,
    /// Runs in one session before the task starts another conversation.
    #[arg(long, default_value_t = 10)]
    pub turns_per_session: u32,
}

/// The worker id the runs are claimed under.
const WORKER: &str = "weft-loadtest-saturate";
/// The model and agent of every session (the built-in default agent).
const MODEL: &str = "mock";
const MODE: &str = "agent";
/// The worker's default `context.max_messages`.
const CONTEXT_MESSAGES: usize = 1000;

pub async fn run(o: &PgOpts) -> anyhow::Result<SaturationReport> {
    o.levels.check()?;
    super::loopback(&o.database_url)?;
    ensure!(
        (1..=64).contains(&o.pg_connections),
        "--pg-connections must be 1 to 64"
    );
    ensure!(
        o.turns_per_session >= 1 && o.tool_steps <= 16 && o.heartbeats <= 16,
        "--turns-per-session ≥ 1, --tool-steps and --heartbeats ≤ 16"
    );
    let name = super::scratch_name();
    let load_before = load_1m();
    let url = create_database(&o.database_url, &name)
        .await
        .context("creating the scratch database")?;
    let measured = measure(o, &name, &url).await;
    let dropped = drop_database(&o.database_url, &name).await;
    let levels = measured?;
    dropped.with_context(|| format!("dropping {name}"))?;
    Ok(SaturationReport {
        target: "postgres".into(),
        unit: format!(
            "run = the gateway's token check and send; the worker's claim, context reads, \
             {} heartbeat(s), {} checkpointed tool step(s) and finish",
            o.heartbeats, o.tool_steps
        ),
        units: "runs".into(),
        server_ops: "transactions".into(),
        workload: format!(
            "{}-word replies, {} runs per session, pool of {} connections",
            o.reply_words, o.turns_per_session, o.pg_connections
        ),
        scratch: name,
        cores: cores(),
        load_1m_before: load_before,
        load_1m_after: load_1m(),
        saturation: saturation(&levels),
        levels,
    })
}

/// A user and the hash of a token of theirs.
#[derive(Clone)]
struct Account {
    user: UserId,
    token_hash: String,
}

/// What every run of a level writes and how.
struct RunShape {
    reply: String,
    checkpoint: StepCheckpoint,
    tool_steps: u32,
    heartbeats: u32,
    turns_per_session: u32,
}

async fn measure(o: &PgOpts, name: &str, url: &str) -> anyhow::Result<Vec<Level>> {
    let mut admin = PgConnection::connect(&o.database_url)
        .await
        .context("connecting to read pg_stat_database")?;
    let accounts = set_up(url, o.levels.max()).await?;
    wait_for_no_backends(&mut admin, name).await?;
    let shape = Arc::new(RunShape {
        reply: "word ".repeat(o.reply_words).trim_end().to_owned(),
        checkpoint: StepCheckpoint {
            reasoning: Vec::new(),
            step: 1,
            content: "Let me look that up.".into(),
            tool_calls: vec![ToolCallDto {
                id: "call_1".into(),
                name: "web_search".into(),
                args: serde_json::json!({"query": "weather in Hangzhou tomorrow"}),
            }],
            results: vec![ToolResult {
                call_id: "call_1".into(),
                name: "web_search".into(),
                content: "result ".repeat(100),
            }],
        },
        tool_steps: o.tool_steps,
        heartbeats: o.heartbeats,
        turns_per_session: o.turns_per_session,
    });
    let mut levels = Vec::new();
    for &concurrency in &o.levels.concurrency {
        let duration = Duration::from_secs(o.levels.duration);
        let level = level(
            o,
            url,
            name,
            &mut admin,
            &accounts,
            &shape,
            concurrency,
            duration,
        )
        .await
        .with_context(|| format!("at concurrency {concurrency}"))?;
        eprintln!(
            "saturate postgres: {concurrency} tasks: {:.0} runs/s, {:.0} transactions/s",
            level.units_per_s, level.server_ops_per_s
        );
        levels.push(level);
    }
    Ok(levels)
}

/// Migrate, seed the built-in agents (as a server's start-up does) and make
/// `n` users with a token each.
async fn set_up(url: &str, n: usize) -> anyhow::Result<Vec<Account>> {
    let store = Store::connect_with(url, 4).await?;
    store.migrate().await?;
    store.seed_agents(&[]).await?;
    let mut accounts = Vec::with_capacity(n);
    for i in 0..n {
        let user = store
            .create_user(&format!("sat{i}"), "not-a-password-hash", Role::User)
            .await?;
        let hash = token_hash(&new_token());
        store
            .create_token(&user.id, "saturate", TokenKind::Api, &hash)
            .await?;
        accounts.push(Account {
            user: user.id,
            token_hash: hash,
        });
    }
    store.close().await;
    Ok(accounts)
}

#[allow(clippy::too_many_arguments)]
async fn level(
    o: &PgOpts,
    url: &str,
    name: &str,
    admin: &mut PgConnection,
    accounts: &[Account],
    shape: &Arc<RunShape>,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<Level> {
    let commits_before = commits(admin, name).await?;
    let size_before = database_size(admin, name).await?;
    let background = background_pids(admin).await?;
    let background_cpu = ProcsCpu::start(&background);
    let store = Store::connect_with(url, o.pg_connections).await?;
    let clock = LevelClock::start();
    let deadline = Instant::now() + duration;
    let tally = Arc::new(Tally::default());
    let tasks: Vec<_> = accounts[..concurrency]
        .iter()
        .cloned()
        .map(|account| {
            let (store, shape, tally) = (store.clone(), shape.clone(), tally.clone());
            tokio::spawn(conversation(store, account, shape, deadline, tally))
        })
        .collect();
    for t in tasks {
        t.await.context("a task panicked")?;
    }
    let secs = clock.secs();
    let (machine_busy_cores, client_cores) = clock.cores();
    // This level's backends were born with its pool: their CPU since birth.
    let ours = database_pids(admin, name).await?;
    let server_cpu = (!ours.is_empty())
        .then(|| ProcsCpu::default().cpu_s(&ours) + background_cpu.cpu_s(&background))
        .filter(|s| *s > 0.0);
    store.close().await;
    wait_for_no_backends(admin, name).await?;
    let server_ops = commits(admin, name).await? - commits_before;
    let grown = database_size(admin, name).await? - size_before;
    let (units, latency_ms, errors) = tally.finish();
    Ok(Level {
        concurrency,
        secs,
        units,
        units_per_s: units as f64 / secs,
        latency_ms,
        errors,
        server_ops,
        server_ops_per_s: server_ops as f64 / secs,
        server_ops_per_unit: server_ops as f64 / units.max(1) as f64,
        server_cores: server_cpu.map(|s| s / secs),
        client_cores,
        machine_busy_cores,
        stored_bytes_per_unit: Some(grown as f64 / units.max(1) as f64),
        watched_expected: None,
        watched_received: None,
    })
}

/// One user's runs, one after another, until the deadline.
async fn conversation(
    store: Store,
    account: Account,
    shape: Arc<RunShape>,
    deadline: Instant,
    tally: Arc<Tally>,
) {
    let (mut micros, mut errors) = (Vec::new(), 0u64);
    let mut session: Option<(SessionId, u32)> = None;
    while Instant::now() < deadline {
        let started = Instant::now();
        match one_run(&store, &account, &shape, &mut session).await {
            Ok(()) => micros.push(micros_since(started)),
            Err(e) => {
                note_error(&mut errors, "run", &e);
                session = None;
            }
        }
    }
    tally.add(micros, errors);
}

/// The store calls of one run, in the order the gateway and worker make them.
async fn one_run(
    store: &Store,
    account: &Account,
    shape: &RunShape,
    session: &mut Option<(SessionId, u32)>,
) -> anyhow::Result<()> {
    let (session_id, turns) = match session.take() {
        Some((id, turns)) if turns < shape.turns_per_session => (id, turns),
        _ => {
            let s = store
                .create_session(&account.user, "", MODEL, MODE, "web")
                .await?;
            (s.id, 0)
        }
    };
    *session = Some((session_id.clone(), turns + 1));
    // Gateway: the request's token, then the send transaction.
    store
        .authenticate(&account.token_hash)
        .await?
        .context("the token did not authenticate")?;
    let sent = store
        .send_message(&SendRequest {
            message: NewMessage {
                user: account.user.clone(),
                session_owner: account.user.clone(),
                author_name: None,
                session: session_id.clone(),
                text:
                    "What will the weather be like in Hangzhou tomorrow, and should I take an umbrella?"
                        .into(),
                attachments: Vec::new(),
                model: None,
                agent: None,
                multitask: Multitask::Enqueue,
                idempotency_key: Some(uuid::Uuid::new_v4().to_string()),
                lark_message_id: None,
                plan: false,
            },
            limits: RunLimits::unlimited(),
            queued_messages_per_session: 10,
            storage_bytes_per_user: 0,
            traceparent: None,
        })
        .await?;
    let SendOutcome::Started { run, .. } = sent else {
        bail!("the send did not start a run: {sent:?}");
    };
    // Worker: the claim, then what the system prompt and the context are built from.
    let claimed = match store
        .claim_run(&run.run_id, WORKER, now_ms() - 30_000, 3)
        .await?
    {
        ClaimOutcome::Claimed(c) => c,
        other => bail!("the claim failed: {other:?}"),
    };
    // The agent, the instructions and the skills are kept by the worker between
    // runs (the claim returns the revision they are valid for), and the claim
    // returns the pending step.
    store.take_compact_request(&session_id).await?;
    store.session_summary(&session_id).await?;
    store
        .context_after(&session_id, None, CONTEXT_MESSAGES)
        .await?;
    let mut seq = 1u64;
    for _ in 0..shape.heartbeats {
        seq += 10;
        ensure!(
            store.heartbeat(&claimed.id, WORKER, seq).await?,
            "a heartbeat found the run taken"
        );
    }
    for step in 1..=shape.tool_steps {
        store.session_tool_grants(&session_id).await?;
        seq += 4;
        let cp = StepCheckpoint {
            step,
            ..shape.checkpoint.clone()
        };
        ensure!(
            store
                .checkpoint_step(&claimed.id, WORKER, &session_id, &cp, seq)
                .await?,
            "a checkpoint found the run taken"
        );
    }
    let usage = UsageDto {
        input: 900,
        output: shape.reply.len() as u64 / 5,
        ..UsageDto::default()
    };
    let end = RunEnd::Succeeded {
        reasoning: Vec::new(),
        content: shape.reply.clone(),
        step: shape.tool_steps + 1,
        citations: Vec::new(),
    };
    match store
        .finish_run(
            &claimed,
            WORKER,
            &end,
            usage,
            Some(100),
            &RunLimits::unlimited(),
        )
        .await?
    {
        FinishOutcome::Finished { .. } => Ok(()),
        other => bail!("the finish failed: {other:?}"),
    }
}

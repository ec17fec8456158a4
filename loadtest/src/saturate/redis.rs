//! `saturate redis`: run events published through `weft_shared::bus::RedisBus`.
//!
//! Each task streams one run after another, as a worker's run does: every event
//! is one `publish` (`XADD` to the run's log, then `PUBLISH`; the first also sets
//! the log's safety TTL), awaited before the next, and the run's end retires the
//! log (`EXPIRE`). The tasks share `--workers` buses (a worker process holds one
//! connection for all its runs); with `--gateways` > 0 every run is watched by
//! one subscriber on one of that many gateway buses, subscribed before the first
//! event, exactly as an attached client's gateway does, and the frames it gets
//! are counted.
//!
//! Counting: `INFO stats` `total_commands_processed` and `INFO cpu`
//! (`used_cpu_user` + `used_cpu_sys`) before and after each level. They are
//! server-wide, so another client's commands would count too (the report states
//! the load average). Keys live under a prefix of their own
//! (`weft_sat_<hex>:`), deleted after each level and at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use redis::aio::MultiplexedConnection;
use weft_config::EventsConfig;
use weft_shared::bus::{Bus, RedisBus, Subscription};
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::{MessageId, RunId, SessionId};
use weft_shared::time::now_ms;

use super::meter::{LevelClock, cores, load_1m};
use super::{Level, Levels, SaturationReport, Tally, micros_since, note_error, saturation};
use crate::stack::delete_prefix;

#[derive(Debug, Clone, Args)]
pub struct RedisOpts {
    /// Redis on this machine (127.0.0.1 only); keys go under a scratch prefix.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    #[command(flatten)]
    pub levels: Levels,
    /// Events per run (a 400-token reply streamed at 40 tokens/s with the default
    /// 25 ms coalescing is about 400: nearly one event per token).
    #[arg(long, default_value_t = 400)]
    pub events_per_run: u64,
    /// Worker processes: the tasks publish through this many bus connections.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Gateway processes: each run is watched by one subscriber on one of this
    /// many bus connections (0: no run is watched).
    #[arg(long, default_value_t = 1)]
    pub gateways: usize,
}

/// How long a watcher may still wait for frames once its run's last event is out.
const WATCH_GRACE: Duration = Duration::from_secs(10);

pub async fn run(o: &RedisOpts) -> anyhow::Result<SaturationReport> {
    o.levels.check()?;
    super::loopback(&o.redis_url)?;
    anyhow::ensure!(
        (1..=64).contains(&o.workers) && o.gateways <= 64,
        "--workers must be 1 to 64 and --gateways at most 64"
    );
    anyhow::ensure!(
        (2..=100_000).contains(&o.events_per_run),
        "--events-per-run must be 2 to 100000"
    );
    let prefix = format!("{}:", super::scratch_name());
    let load_before = load_1m();
    let measured = measure(o, &prefix).await;
    let deleted = delete_prefix(&o.redis_url, &prefix).await;
    let levels = measured?;
    deleted.with_context(|| format!("deleting the keys under {prefix}"))?;
    Ok(SaturationReport {
        target: "redis".into(),
        unit: "event = one RedisBus publish (XADD to the run's log + PUBLISH)".into(),
        units: "events".into(),
        server_ops: "commands".into(),
        workload: format!(
            "{} events per run, {} worker and {} gateway bus connections, {}",
            o.events_per_run,
            o.workers,
            o.gateways,
            if o.gateways > 0 {
                "every run watched by one subscriber"
            } else {
                "no subscribers"
            }
        ),
        scratch: prefix,
        cores: cores(),
        load_1m_before: load_before,
        load_1m_after: load_1m(),
        saturation: saturation(&levels),
        levels,
    })
}

async fn measure(o: &RedisOpts, prefix: &str) -> anyhow::Result<Vec<Level>> {
    let client = redis::Client::open(o.redis_url.as_str())?;
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .context("connecting to Redis")?;
    let max_len = EventsConfig::default().max_len;
    let mut workers = Vec::new();
    for _ in 0..o.workers {
        workers.push(Arc::new(
            RedisBus::connect(&o.redis_url, prefix, max_len).await?,
        ));
    }
    let mut gateways = Vec::new();
    for _ in 0..o.gateways {
        gateways.push(Arc::new(
            RedisBus::connect(&o.redis_url, prefix, max_len).await?,
        ));
    }
    let mut levels = Vec::new();
    for &concurrency in &o.levels.concurrency {
        let deadline = Instant::now() + Duration::from_secs(o.levels.duration);
        let before = info(&mut admin).await?;
        let clock = LevelClock::start();
        let tally = Arc::new(Tally::default());
        let watched = Arc::new(Watched::default());
        let tasks: Vec<_> = (0..concurrency)
            .map(|i| {
                let worker = workers[i % workers.len()].clone();
                let gateway = (!gateways.is_empty()).then(|| gateways[i % gateways.len()].clone());
                let (tally, watched) = (tally.clone(), watched.clone());
                let events = o.events_per_run;
                tokio::spawn(async move {
                    let (mut micros, mut errors) = (Vec::new(), 0u64);
                    while Instant::now() < deadline {
                        let run = RunStream {
                            worker: &worker,
                            gateway: gateway.as_deref(),
                            events,
                            deadline,
                        };
                        if let Err(e) = run.stream(&mut micros, &watched).await {
                            note_error(&mut errors, "run's events", &e);
                        }
                    }
                    tally.add(micros, errors);
                })
            })
            .collect();
        for t in tasks {
            t.await.context("a task panicked")?;
        }
        let secs = clock.secs();
        let (machine_busy_cores, client_cores) = clock.cores();
        let after = info(&mut admin).await?;
        let (units, latency_ms, errors) = tally.finish();
        // Every log of the level is still there (retired, not yet expired).
        let logged = logged_bytes(&mut admin, prefix).await?;
        let server_ops = after.commands.saturating_sub(before.commands);
        eprintln!(
            "saturate redis: {concurrency} tasks: {:.0} events/s, {:.0} commands/s",
            units as f64 / secs,
            server_ops as f64 / secs
        );
        levels.push(Level {
            concurrency,
            secs,
            units,
            units_per_s: units as f64 / secs,
            latency_ms,
            errors,
            server_ops,
            server_ops_per_s: server_ops as f64 / secs,
            server_ops_per_unit: server_ops as f64 / units.max(1) as f64,
            server_cores: Some((after.cpu_s - before.cpu_s).max(0.0) / secs),
            client_cores,
            machine_busy_cores,
            stored_bytes_per_unit: Some(logged as f64 / units.max(1) as f64),
            watched_expected: (o.gateways > 0).then(|| watched.expected.load(Ordering::Relaxed)),
            watched_received: (o.gateways > 0).then(|| watched.received.load(Ordering::Relaxed)),
        });
        // The logs of this level's runs go before the next level starts.
        delete_prefix(&o.redis_url, prefix).await?;
    }
    Ok(levels)
}

/// Frames the watchers of one level should have had, and got.
#[derive(Default)]
struct Watched {
    expected: AtomicU64,
    received: AtomicU64,
}

/// One run's events, from one worker bus, maybe watched on one gateway bus.
struct RunStream<'a> {
    worker: &'a RedisBus,
    gateway: Option<&'a RedisBus>,
    events: u64,
    deadline: Instant,
}

impl RunStream<'_> {
    /// Publish the run's events (cut short, with its terminal event, at the
    /// deadline), retire its log, and wait for its watcher to see the end.
    async fn stream(&self, micros: &mut Vec<i64>, watched: &Arc<Watched>) -> anyhow::Result<()> {
        let run = RunId::new();
        let watcher = match self.gateway {
            Some(g) => Some(watch(g.subscribe(&run).await?, watched.clone())),
            None => None,
        };
        let mut published = 0u64;
        let result = self.publish_all(&run, micros, &mut published).await;
        if let Some(w) = watcher {
            watched.expected.fetch_add(published, Ordering::Relaxed);
            match &result {
                Ok(()) => {
                    let _ = tokio::time::timeout(WATCH_GRACE, w).await;
                }
                Err(_) => w.abort(),
            }
        }
        result
    }

    async fn publish_all(
        &self,
        run: &RunId,
        micros: &mut Vec<i64>,
        published: &mut u64,
    ) -> anyhow::Result<()> {
        for seq in 1..=self.events {
            let last = seq == self.events || Instant::now() >= self.deadline;
            let frame = Frame::encode(&event(run, seq, last));
            let started = Instant::now();
            self.worker.publish(run, &frame).await?;
            micros.push(micros_since(started));
            *published += 1;
            if last {
                break;
            }
        }
        let retention = Duration::from_secs(EventsConfig::default().retention_secs);
        self.worker.retire(run, retention).await?;
        Ok(())
    }
}

/// Count the frames a subscriber gets until the run's terminal one.
fn watch(mut sub: Subscription, watched: Arc<Watched>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match sub.rx.recv().await {
                Ok(frame) => {
                    watched.received.fetch_add(1, Ordering::Relaxed);
                    if frame.is_terminal() {
                        break;
                    }
                }
                // Counted as missing: the frames it skipped never arrive.
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
    })
}

/// Event `seq` of a run: `run_started`, one word of text each, then `done`.
fn event(run: &RunId, seq: u64, last: bool) -> RunEvent {
    let kind = if seq == 1 && !last {
        EventKind::RunStarted {
            session_id: SessionId::new(),
            model: "mock".into(),
            attempt: 1,
            resume_step: 1,
        }
    } else if last {
        EventKind::Done {
            message_id: MessageId::new(),
            model: "mock".into(),
            usage: Default::default(),
            ttft_ms: Some(100),
            duration_ms: 10_000,
        }
    } else {
        EventKind::Text {
            step: 1,
            delta: " word".into(),
        }
    };
    RunEvent {
        run_id: run.clone(),
        seq,
        ts: now_ms(),
        kind,
    }
}

/// The server's command count and CPU seconds so far.
struct RedisInfo {
    commands: u64,
    cpu_s: f64,
}

async fn info(con: &mut MultiplexedConnection) -> anyhow::Result<RedisInfo> {
    let text: String = redis::cmd("INFO")
        .arg("stats")
        .arg("cpu")
        .query_async(con)
        .await
        .context("INFO stats cpu")?;
    let field = |name: &str| -> anyhow::Result<f64> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .with_context(|| format!("INFO has no {name}"))?
            .trim()
            .parse::<f64>()
            .with_context(|| format!("INFO {name}"))
    };
    Ok(RedisInfo {
        commands: field("total_commands_processed")? as u64,
        cpu_s: field("used_cpu_user")? + field("used_cpu_sys")?,
    })
}

/// Bytes Redis holds for the keys under `prefix` (`MEMORY USAGE`, every entry
/// counted): the run logs, whatever other clients keep meanwhile.
async fn logged_bytes(con: &mut MultiplexedConnection, prefix: &str) -> anyhow::Result<u64> {
    let (mut cursor, mut bytes) = (0u64, 0u64);
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(con)
            .await?;
        // A SCAN step may match nothing and still go on (the keys of other
        // clients fill the step); an empty pipeline is a client error.
        if !keys.is_empty() {
            let mut pipe = redis::pipe();
            for k in &keys {
                pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
            }
            let sizes: Vec<Option<u64>> = pipe.query_async(con).await?;
            bytes += sizes.into_iter().flatten().sum::<u64>();
        }
        if next == 0 {
            return Ok(bytes);
        }
        cursor = next;
    }
}

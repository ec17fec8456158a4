//! `weft-loadtest saturate`: what one Postgres and one Redis carry before they
//! saturate. Tasks drive the store directly through Weft's own code — the
//! `Store` calls a run makes ([`postgres`]) or the `RedisBus` publishes a worker
//! makes per event ([`redis`]) — with no HTTP and no model in the way, so the
//! database or Redis is what runs out. Each concurrency level runs for a fixed
//! time; the report gives the work done per second, what the server counted
//! (Postgres transactions, Redis commands) and the CPU its processes used, so a
//! level's numbers can be turned into "per server core".
//!
//! Bounded on purpose: 127.0.0.1 only, at most 60 s per level, 8 levels, 1,024
//! tasks; a scratch database (`weft_sat_<hex>`) or key prefix of its own, dropped
//! or deleted at the end whatever happened.

pub mod meter;
mod pg_stats;
pub mod postgres;
pub mod redis;
mod report;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::stats::Summary;

pub use postgres::PgOpts;
pub use redis::RedisOpts;
pub use report::{Level, Saturation, SaturationReport, saturation};

#[derive(Debug, Clone, Args)]
pub struct SaturateOpts {
    #[command(subcommand)]
    pub target: Target,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Target {
    /// Tasks each make one run after another through `weft_store::Store`
    /// in a scratch database: the gateway's token check and send transaction, the
    /// worker's claim and context reads, heartbeats, checkpointed tool steps and
    /// the finishing transaction. Reports runs/s, transactions/s
    /// (`pg_stat_database`) and the Postgres processes' CPU.
    Postgres(PgOpts),
    /// Tasks each stream one run's events after another through
    /// `weft_shared::bus::RedisBus` (`XADD` to the run's log + `PUBLISH`, as a
    /// worker does per event), each run watched by a subscriber. Reports events/s,
    /// commands/s (`INFO stats`) and redis-server's CPU (`INFO cpu`).
    Redis(RedisOpts),
}

/// The concurrency levels and how long each runs.
#[derive(Debug, Clone, Args)]
pub struct Levels {
    /// Concurrency levels, comma-separated: tasks that each work back to back.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64")]
    pub concurrency: Vec<usize>,
    /// Seconds at each level (1–60).
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Also write the JSON report here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl Levels {
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=8).contains(&self.concurrency.len()),
            "give 1 to 8 concurrency levels"
        );
        anyhow::ensure!(
            self.concurrency.iter().all(|c| (1..=1024).contains(c)),
            "each concurrency level must be 1 to 1024 tasks"
        );
        anyhow::ensure!(
            (1..=60).contains(&self.duration),
            "--duration must be 1 to 60 seconds"
        );
        Ok(())
    }

    fn max(&self) -> usize {
        self.concurrency.iter().copied().max().unwrap_or(1)
    }
}

/// Latency samples and errors, gathered from every task of a level.
#[derive(Default)]
pub(crate) struct Tally {
    micros: Mutex<Vec<i64>>,
    errors: AtomicU64,
}

impl Tally {
    /// A task's samples, handed over once when it stops.
    pub(crate) fn add(&self, mut micros: Vec<i64>, errors: u64) {
        self.micros
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut micros);
        self.errors.fetch_add(errors, Ordering::Relaxed);
    }

    /// (units, latency, errors).
    pub(crate) fn finish(&self) -> (u64, Summary, u64) {
        let mut m = self.micros.lock().unwrap_or_else(|p| p.into_inner());
        (
            m.len() as u64,
            Summary::of_micros(&mut m),
            self.errors.load(Ordering::Relaxed),
        )
    }
}

/// Microseconds since `t`.
pub(crate) fn micros_since(t: Instant) -> i64 {
    t.elapsed().as_micros() as i64
}

/// Logs the first few errors of a task; the rest are only counted.
pub(crate) fn note_error(errors: &mut u64, what: &str, e: &anyhow::Error) {
    *errors += 1;
    if *errors <= 3 {
        tracing::warn!(error = %format!("{e:#}"), what, "saturate: a unit of work failed");
    }
}

/// Refuse anything but a server on this machine.
pub(crate) fn loopback(url: &str) -> anyhow::Result<()> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("parsing {url:?}"))?;
    let host = parsed.host_str().unwrap_or_default();
    anyhow::ensure!(
        matches!(host, "127.0.0.1" | "localhost" | "[::1]"),
        "saturate only loads a server on this machine (127.0.0.1), not {host:?}"
    );
    Ok(())
}

/// A fresh name for the scratch database or key prefix.
pub(crate) fn scratch_name() -> String {
    format!(
        "weft_sat_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..16]
    )
}

pub async fn run(o: &SaturateOpts) -> anyhow::Result<SaturationReport> {
    match &o.target {
        Target::Postgres(p) => postgres::run(p).await,
        Target::Redis(r) => redis::run(r).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_loaded() {
        assert!(loopback("postgres://postgres@127.0.0.1:5432/test").is_ok());
        assert!(loopback("redis://localhost:6379").is_ok());
        assert!(loopback("redis://db.example.com:6379").is_err());
        assert!(loopback("postgres://10.0.0.5/test").is_err());
    }

    #[test]
    fn levels_are_bounded() {
        let ok = Levels {
            concurrency: vec![8, 16],
            duration: 10,
            json: None,
        };
        assert!(ok.check().is_ok());
        let long = Levels {
            duration: 600,
            ..ok.clone()
        };
        assert!(long.check().is_err());
        let wide = Levels {
            concurrency: vec![100_000],
            ..ok
        };
        assert!(wide.check().is_err());
    }
}

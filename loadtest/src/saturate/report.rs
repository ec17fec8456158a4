//! The report of `weft-loadtest saturate`: one row per concurrency level, and
//! the point where throughput stopped rising, turned into "per server core".

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// What `saturate` found, one target at a time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaturationReport {
    /// `postgres` or `redis`.
    pub target: String,
    /// One unit of work, e.g. a run and the store calls it makes.
    pub unit: String,
    /// Plural of the unit for tables (`runs`, `events`).
    pub units: String,
    /// What the server counts (`transactions`, `commands`).
    pub server_ops: String,
    /// The settings that shaped the work.
    pub workload: String,
    /// The scratch database or key prefix (gone when the report is written).
    pub scratch: String,
    pub cores: usize,
    pub load_1m_before: f64,
    pub load_1m_after: f64,
    pub levels: Vec<Level>,
    pub saturation: Option<Saturation>,
}

/// One concurrency level.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Level {
    pub concurrency: usize,
    pub secs: f64,
    pub units: u64,
    pub units_per_s: f64,
    /// Time per unit of work (a whole run; one event's publish).
    pub latency_ms: Summary,
    pub errors: u64,
    pub server_ops: u64,
    pub server_ops_per_s: f64,
    pub server_ops_per_unit: f64,
    /// Cores the server's processes used over the level (none when unreadable).
    pub server_cores: Option<f64>,
    /// Cores this load generator used.
    pub client_cores: f64,
    /// Busy cores of the whole machine (of `cores`).
    pub machine_busy_cores: f64,
    /// What the server holds per unit afterwards: the database's growth per run
    /// (`pg_database_size`), Redis's memory per event logged (`MEMORY USAGE`).
    pub stored_bytes_per_unit: Option<f64>,
    /// Redis with watchers: frames the watching subscribers should have had, and got.
    pub watched_expected: Option<u64>,
    pub watched_received: Option<u64>,
}

/// Where throughput stopped rising.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saturation {
    /// The lowest level within 5 % of the best throughput: more tasks past it
    /// only queue (a single noisy level does not hide the plateau).
    pub concurrency: usize,
    pub units_per_s: f64,
    pub server_ops_per_s: f64,
    pub server_cores: Option<f64>,
    /// Throughput per core the server used at that level.
    pub units_per_server_core: Option<f64>,
    pub server_ops_per_server_core: Option<f64>,
    /// The best level of all.
    pub peak_units_per_s: f64,
    /// The best level was the last, 5 % or more above the one before: the
    /// server may carry more than was offered.
    pub still_rising: bool,
}

/// The lowest level within 5 % of the best throughput.
pub fn saturation(levels: &[Level]) -> Option<Saturation> {
    let mut sorted: Vec<&Level> = levels.iter().collect();
    sorted.sort_by_key(|l| l.concurrency);
    let peak = sorted.iter().map(|l| l.units_per_s).fold(0.0, f64::max);
    let l = *sorted.iter().find(|l| l.units_per_s >= peak * 0.95)?;
    let still_rising = match sorted.as_slice() {
        [.., before, last] => {
            last.units_per_s == peak && last.units_per_s >= before.units_per_s * 1.05
        }
        _ => true,
    };
    let per_core = |v: f64| l.server_cores.filter(|c| *c > 0.0).map(|c| v / c);
    Some(Saturation {
        concurrency: l.concurrency,
        units_per_s: l.units_per_s,
        server_ops_per_s: l.server_ops_per_s,
        server_cores: l.server_cores,
        units_per_server_core: per_core(l.units_per_s),
        server_ops_per_server_core: per_core(l.server_ops_per_s),
        peak_units_per_s: peak,
        still_rising,
    })
}

impl SaturationReport {
    /// The people-facing table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "== saturate {} — {} ({}); scratch {} (removed); {} cores, load {:.2} → {:.2}",
            self.target,
            self.unit,
            self.workload,
            self.scratch,
            self.cores,
            self.load_1m_before,
            self.load_1m_after
        );
        let _ = writeln!(
            t,
            "{:>6} {:>10} {:>8} {:>8} {:>12} {:>8} {:>8} {:>8} {:>8} {:>7}",
            "tasks",
            format!("{}/s", self.units),
            "p50 ms",
            "p99 ms",
            format!("{}/s", short(&self.server_ops)),
            "per unit",
            "server",
            "client",
            "machine",
            "errors"
        );
        for l in &self.levels {
            let _ = writeln!(
                t,
                "{:>6} {:>10.0} {:>8.2} {:>8.2} {:>12.0} {:>8.1} {:>8} {:>8.2} {:>8.2} {:>7}",
                l.concurrency,
                l.units_per_s,
                l.latency_ms.p50,
                l.latency_ms.p99,
                l.server_ops_per_s,
                l.server_ops_per_unit,
                l.server_cores.map_or("?".into(), |c| format!("{c:.2}")),
                l.client_cores,
                l.machine_busy_cores,
                l.errors
            );
            if let (Some(e), Some(r)) = (l.watched_expected, l.watched_received) {
                let _ = writeln!(t, "{:>6} watchers got {r} of {e} frames", "");
            }
            if let Some(b) = l.stored_bytes_per_unit {
                let _ = writeln!(
                    t,
                    "{:>6} {b:.0} bytes stored per {}",
                    "",
                    singular(&self.units)
                );
            }
        }
        let _ = writeln!(t, "(server, client, machine: cores busy)");
        if let Some(s) = &self.saturation {
            let _ = writeln!(
                t,
                "{} at {} tasks: {:.0} {}/s, {:.0} {}/s on {} server cores{}",
                if s.still_rising {
                    "still rising at the last level; best"
                } else {
                    "stops rising (within 5 % of the best)"
                },
                s.concurrency,
                s.units_per_s,
                self.units,
                s.server_ops_per_s,
                self.server_ops,
                s.server_cores.map_or("?".into(), |c| format!("{c:.2}")),
                s.units_per_server_core.map_or(String::new(), |u| format!(
                    " = {u:.0} {}/s per server core",
                    self.units
                )),
            );
        }
        t
    }
}

fn singular(units: &str) -> &str {
    units.strip_suffix('s').unwrap_or(units)
}

fn short(ops: &str) -> &str {
    match ops {
        "transactions" => "xact",
        "commands" => "cmds",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(concurrency: usize, units_per_s: f64) -> Level {
        Level {
            concurrency,
            units_per_s,
            server_ops_per_s: units_per_s * 10.0,
            server_cores: Some(2.0),
            ..Level::default()
        }
    }

    #[test]
    fn saturation_is_where_throughput_stops_rising() {
        let s = saturation(&[
            level(8, 100.0),
            level(16, 180.0),
            level(32, 176.0),
            level(64, 186.0),
            level(128, 170.0),
        ])
        .unwrap();
        assert_eq!(s.concurrency, 16, "the dip at 32 does not end the climb");
        assert!(!s.still_rising);
        assert_eq!(s.units_per_server_core, Some(90.0));
        assert_eq!(s.peak_units_per_s, 186.0);

        let rising = saturation(&[level(16, 150.0), level(8, 100.0)]).unwrap();
        assert_eq!(rising.concurrency, 16);
        assert!(rising.still_rising);
        assert!(saturation(&[]).is_none());
    }
}

//! CPU meters for `saturate`, read from `/proc`: the whole machine, this process,
//! and a set of other processes (the Postgres server's). Every process is on this
//! machine (`saturate` only talks to 127.0.0.1), so `/proc` sees them all.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::procs::{TICKS_PER_S, cpu_ticks};

/// The machine's CPU counters (`/proc/stat`, first line), in ticks.
#[derive(Debug, Clone, Copy)]
pub struct MachineCpu {
    busy: u64,
    total: u64,
}

impl MachineCpu {
    pub fn now() -> Option<MachineCpu> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
        let total: u64 = f.iter().take(8).sum();
        let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
        Some(MachineCpu {
            busy: total.saturating_sub(idle),
            total,
        })
    }

    /// Cores kept busy since `earlier` (out of [`cores`]).
    pub fn busy_cores_since(&self, earlier: &MachineCpu) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        if total == 0 {
            return 0.0;
        }
        self.busy.saturating_sub(earlier.busy) as f64 / total as f64 * cores() as f64
    }
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The 1-minute load average, from `/proc/loadavg`.
pub fn load_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// CPU seconds this process has used so far.
pub fn own_cpu_s() -> f64 {
    cpu_ticks(std::process::id()).unwrap_or(0) as f64 / TICKS_PER_S
}

/// CPU used by a set of processes between [`ProcsCpu::start`] and
/// [`ProcsCpu::cpu_s`]. A process first seen at the end counts from its birth.
#[derive(Debug, Default)]
pub struct ProcsCpu {
    start: BTreeMap<u32, u64>,
}

impl ProcsCpu {
    pub fn start(pids: &[u32]) -> ProcsCpu {
        ProcsCpu {
            start: pids
                .iter()
                .filter_map(|&p| Some((p, cpu_ticks(p)?)))
                .collect(),
        }
    }

    /// CPU seconds of `pids` since the start (processes that exited meanwhile are lost).
    pub fn cpu_s(&self, pids: &[u32]) -> f64 {
        let ticks: u64 = pids
            .iter()
            .filter_map(|&p| {
                let now = cpu_ticks(p)?;
                Some(now.saturating_sub(self.start.get(&p).copied().unwrap_or(0)))
            })
            .sum();
        ticks as f64 / TICKS_PER_S
    }
}

/// Wall time, machine CPU and this process's CPU over one concurrency level.
pub struct LevelClock {
    started: Instant,
    machine: Option<MachineCpu>,
    own_cpu_s: f64,
}

impl LevelClock {
    pub fn start() -> LevelClock {
        LevelClock {
            started: Instant::now(),
            machine: MachineCpu::now(),
            own_cpu_s: own_cpu_s(),
        }
    }

    pub fn secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64().max(1e-3)
    }

    /// (machine busy cores, this process's cores) since the start.
    pub fn cores(&self) -> (f64, f64) {
        let machine = match (self.machine, MachineCpu::now()) {
            (Some(a), Some(b)) => b.busy_cores_since(&a),
            _ => 0.0,
        };
        (machine, (own_cpu_s() - self.own_cpu_s) / self.secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_and_this_process_are_measured() {
        let clock = LevelClock::start();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert_ne!(x, 1);
        let (machine, own) = clock.cores();
        assert!(own > 0.1, "a busy loop shows as CPU: {own}");
        assert!(
            machine > 0.1 && machine <= cores() as f64 + 0.01,
            "{machine}"
        );
        assert!(load_1m() >= 0.0);
    }
}

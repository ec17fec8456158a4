//! Latency samples and their summary (p50/p90/p99/max). Samples are kept whole and
//! sorted once at the end: a run of a few minutes produces at most a few million,
//! which is cheaper than being clever.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Percentiles of one measure, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    /// Absent from reports written before it was added.
    #[serde(default)]
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// Summarise samples given in microseconds.
    pub fn of_micros(samples: &mut [i64]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        samples.sort_unstable();
        let n = samples.len();
        let at = |q: f64| {
            let i = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            samples[i] as f64 / 1000.0
        };
        let sum: i128 = samples.iter().map(|&s| i128::from(s)).sum();
        Summary {
            count: n as u64,
            mean: (sum as f64 / n as f64) / 1000.0,
            p50: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
            max: samples[n - 1] as f64 / 1000.0,
        }
    }
}

/// What every virtual user reports into, shared behind one lock (a few pushes per
/// event is far below what the lock can take).
#[derive(Default)]
pub struct Recorder {
    inner: Mutex<Samples>,
}

#[derive(Default)]
pub struct Samples {
    pub ttft: Vec<i64>,
    pub ttft_overhead: Vec<i64>,
    pub lag: Vec<i64>,
    /// Event arrival minus the event's own `ts` (publish time at the worker).
    pub delivery: Vec<i64>,
    pub turn: Vec<i64>,
    pub errors: BTreeMap<String, u64>,
    pub runs_ok: u64,
    pub runs_failed: u64,
    pub reconnects: u64,
    pub duplicates: u64,
    pub gaps: u64,
    /// Forward seq jumps at a new attempt's `run_started` (after a lost log).
    pub attempt_jumps: u64,
    pub incoherent_streams: u64,
    pub retries_seen: u64,
}

fn micros(d: Duration) -> i64 {
    d.as_micros() as i64
}

impl Recorder {
    pub fn with<R>(&self, f: impl FnOnce(&mut Samples) -> R) -> R {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    pub fn error(&self, kind: impl Into<String>) {
        self.with(|s| *s.errors.entry(kind.into()).or_insert(0) += 1);
    }

    /// A signed difference in microseconds (a token may beat its nominal slot
    /// by a hair when the mock's timer fires early).
    pub fn signed(actual: Duration, nominal: Duration) -> i64 {
        micros(actual) - micros(nominal)
    }

    pub fn take(&self) -> Samples {
        self.with(std::mem::take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let mut v: Vec<i64> = (1..=100).map(|i| i * 1000).collect();
        let s = Summary::of_micros(&mut v);
        assert_eq!(
            (s.p50, s.p90, s.p95, s.p99, s.max),
            (50.0, 90.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(Summary::of_micros(&mut []).count, 0);
    }
}

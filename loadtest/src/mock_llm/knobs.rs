//! Server-wide knobs of the mock LLM: a load factor and injected faults, applied on
//! top of what each message's `@mock.*` directives ask for.
//!
//! * **Load factor** — a real provider slows down as it gets busy. Every request in
//!   flight (from headers sent to body finished) stretches the TTFT and inter-token
//!   latency of requests that start after it by `load_factor` percent.
//! * **Faults** — independent per-request rates of a 429 (with `retry-after-ms`), a
//!   500, a 529 (Anthropic's `overloaded_error`; OpenAI-compatible servers send it
//!   too) and a stream cut halfway without its end marker. They let a benchmark ask
//!   "does Weft's retry path hold up under a flaky provider" without editing prompts.
//!
//! Counters are plain atomics, readable at `GET /stats` (JSON), so a load test can
//! say how many faults the system under test absorbed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use rand::Rng;
use serde::{Deserialize, Serialize};
use weft_llm::mockscript::{Fail, Item, Outcome, Timing};

/// Per-request probabilities (0.0 – 1.0) of each injected fault.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FaultRates {
    pub rate_429: f64,
    /// The `retry-after-ms` (and rounded-up `retry-after`) hint sent with a 429.
    pub retry_after: Duration,
    pub rate_500: f64,
    pub rate_529: f64,
    /// Cut the stream after half its tokens, without a finish or `[DONE]`.
    pub rate_cut: f64,
}

impl FaultRates {
    fn any(&self) -> bool {
        self.rate_429 + self.rate_500 + self.rate_529 + self.rate_cut > 0.0
    }
}

/// What the mock has served, for `GET /stats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatsSnapshot {
    pub requests: u64,
    pub in_flight: u64,
    pub peak_in_flight: u64,
    pub injected_429: u64,
    pub injected_500: u64,
    pub injected_529: u64,
    pub injected_cut: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    requests: AtomicU64,
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
    injected_429: AtomicU64,
    injected_500: AtomicU64,
    injected_529: AtomicU64,
    injected_cut: AtomicU64,
}

impl Counters {
    pub(super) fn snapshot(&self) -> StatsSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            requests: get(&self.requests),
            in_flight: get(&self.in_flight),
            peak_in_flight: get(&self.peak_in_flight),
            injected_429: get(&self.injected_429),
            injected_500: get(&self.injected_500),
            injected_529: get(&self.injected_529),
            injected_cut: get(&self.injected_cut),
        }
    }
}

/// Knobs plus the counters they feed.
pub(super) struct Knobs {
    pub load_factor: f64,
    pub faults: FaultRates,
    pub counters: Counters,
}

impl Knobs {
    /// Stretch `timing` by the load factor for the requests now in flight.
    pub(super) fn loaded(&self, timing: Timing) -> Timing {
        if self.load_factor <= 0.0 {
            return timing;
        }
        // This request is counted in flight already; only the others load it.
        let others = self
            .counters
            .in_flight
            .load(Ordering::Relaxed)
            .saturating_sub(1);
        let scale = 1.0 + self.load_factor / 100.0 * others as f64;
        Timing {
            ttft: timing.ttft.mul_f64(scale),
            itl: timing.itl.mul_f64(scale),
            jitter: timing.jitter,
        }
    }

    /// Replace a successful outcome by an injected fault, at the configured rates.
    pub(super) fn inject(&self, outcome: Outcome) -> Outcome {
        let Outcome::Stream(mut items) = outcome else {
            return outcome;
        };
        if !self.faults.any() {
            return Outcome::Stream(items);
        }
        let f = self.faults;
        let roll: f64 = rand::rng().random();
        let reject = |status: u16, counter: &AtomicU64, retry_after: Option<Duration>| {
            counter.fetch_add(1, Ordering::Relaxed);
            Outcome::Reject(Fail {
                status,
                times: 1,
                after: None,
                retry_after,
            })
        };
        let c = &self.counters;
        let mut edge = f.rate_429;
        if roll < edge {
            return reject(429, &c.injected_429, Some(f.retry_after));
        }
        edge += f.rate_500;
        if roll < edge {
            return reject(500, &c.injected_500, None);
        }
        edge += f.rate_529;
        if roll < edge {
            return reject(529, &c.injected_529, None);
        }
        edge += f.rate_cut;
        if roll < edge {
            c.injected_cut.fetch_add(1, Ordering::Relaxed);
            let tokens = items.iter().filter(|i| i.is_token()).count();
            items.truncate(tokens / 2);
            items.push(Item::Cut);
        }
        Outcome::Stream(items)
    }
}

/// Count a request in flight until its response body is finished or dropped.
pub(super) async fn track_in_flight(
    State(knobs): State<Arc<Knobs>>,
    request: Request,
    next: Next,
) -> Response {
    let c = &knobs.counters;
    c.requests.fetch_add(1, Ordering::Relaxed);
    let now = c.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    c.peak_in_flight.fetch_max(now, Ordering::Relaxed);
    let guard = InFlight(knobs.clone());
    let response = next.run(request).await;
    response.map(|body| {
        let stream = body.into_data_stream().map(move |chunk| {
            let _keep = &guard;
            chunk
        });
        Body::from_stream(stream)
    })
}

struct InFlight(Arc<Knobs>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

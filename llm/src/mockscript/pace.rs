//! Timing of a mock stream: the first token after the time to first token, each
//! later one an inter-token latency after the previous one.
//!
//! Deadlines are absolute (start + ttft + k·itl, plus jitter), so a slow consumer
//! or a late timer does not stretch the whole stream. With zero delays no timer is
//! armed at all, which keeps thousands of concurrent instant streams cheap.

use std::time::Duration;

use futures::Stream;
use rand::Rng;
use tokio::time::Instant;

use super::Item;

/// Delays of a mock stream. `jitter` spreads each gap uniformly by ±jitter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    pub ttft: Duration,
    pub itl: Duration,
    pub jitter: Duration,
}

impl Timing {
    pub fn new(ttft: Duration, itl: Duration) -> Self {
        Timing {
            ttft,
            itl,
            jitter: Duration::ZERO,
        }
    }

    fn jittered(&self, gap: Duration) -> Duration {
        if self.jitter.is_zero() {
            return gap;
        }
        let j = self.jitter.as_secs_f64();
        let delta = rand::rng().random_range(-j..=j);
        Duration::from_secs_f64((gap.as_secs_f64() + delta).max(0.0))
    }
}

struct Pacer {
    items: std::vec::IntoIter<Item>,
    timing: Timing,
    next_at: Instant,
    started: bool,
}

/// Yield `items` on schedule. Tokens wait for their slot; the closing item (finish,
/// failure, cut) follows the last token at once.
pub fn pace(items: Vec<Item>, timing: Timing) -> impl Stream<Item = Item> + Send + 'static {
    let pacer = Pacer {
        items: items.into_iter(),
        next_at: Instant::now() + timing.jittered(timing.ttft),
        timing,
        started: false,
    };
    futures::stream::unfold(pacer, |mut p| async move {
        let item = p.items.next()?;
        if item.is_token() || !p.started {
            if p.started {
                p.next_at += p.timing.jittered(p.timing.itl);
            }
            p.started = true;
            if p.next_at > Instant::now() {
                tokio::time::sleep_until(p.next_at).await;
            }
        }
        Some((item, p))
    })
}

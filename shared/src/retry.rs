//! One retry policy for work nobody else will retry.
//!
//! Three places used to carry their own loop and schedule: the store's
//! `retrying` (database errors), the Lark bot's send after the ack, and its Lark
//! REST calls. They differed only in the schedule and in which errors are worth
//! another try, so that is all a caller states now: a [`Backoff`] (named here,
//! with what it costs in the worst case) and a predicate. The loop, the sleeps and
//! the warning each retry logs are [`retry`], on `backon`.
//!
//! Which schedule, and why:
//!
//! | | delays | gives up after | for |
//! |---|---|---|---|
//! | [`Backoff::DATABASE`] | 0.25, 0.5, 1 s | 1.75 s | a request someone waits for (a Lark event just acked, a card update) |
//! | [`Backoff::LARK`] | 0.5, 1.5, 4.5 s | 6.5 s | Lark REST: a 429 or an outage (Lark asks for seconds, not milliseconds) |
//! | [`Backoff::PATIENT`] | 0.25 s doubling to 5 s | ≈ 60 s | a claimed run's Lark chat: without it the run would answer with no card |
//!
//! `PATIENT` exists because a short budget loses replies: with Postgres
//! terminating every connection for 4 s (the Lark durability test), 1.75 s of
//! retries ran out, the run went ahead without its card, and its answer never
//! reached the chat.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

/// A retry schedule: the first delay, how much each next one grows, a cap, and
/// how many retries at most (after the first try).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub first: Duration,
    pub factor: f32,
    pub max_delay: Duration,
    pub retries: usize,
}

impl Backoff {
    /// 0.25 s, 0.5 s, 1 s: a database hiccup (a pool timeout, a terminated
    /// connection) while someone waits.
    pub const DATABASE: Backoff = Backoff {
        first: Duration::from_millis(250),
        factor: 2.0,
        max_delay: Duration::from_secs(1),
        retries: 3,
    };

    /// 0.5 s, 1.5 s, 4.5 s: Lark's rate limits and outages.
    pub const LARK: Backoff = Backoff {
        first: Duration::from_millis(500),
        factor: 3.0,
        max_delay: Duration::from_millis(4500),
        retries: 3,
    };

    /// 0.25 s doubling to 5 s, 15 retries (59 s in all): work that cannot go on
    /// without the answer and is worth a minute's wait.
    pub const PATIENT: Backoff = Backoff {
        first: Duration::from_millis(250),
        factor: 2.0,
        max_delay: Duration::from_secs(5),
        retries: 15,
    };

    /// The delays this schedule sleeps, in order (what the table above says).
    pub fn delays(&self) -> impl Iterator<Item = Duration> {
        let (first, factor, cap) = (self.first, self.factor, self.max_delay);
        (0..self.retries).map(move |i| first.mul_f32(factor.powi(i as i32)).min(cap))
    }

    fn builder(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.first)
            .with_factor(self.factor)
            .with_max_delay(self.max_delay)
            .with_max_times(self.retries)
    }
}

/// Runs `op`; while it fails with an error `retryable` accepts, logs a warning
/// naming `what` and tries again on `policy`'s schedule. Any other error, or the
/// last one, is returned.
pub async fn retry<T, E, F, Fut>(
    policy: Backoff,
    what: &str,
    retryable: impl Fn(&E) -> bool,
    op: F,
) -> Result<T, E>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    op.retry(policy.builder())
        .sleep(tokio::time::sleep)
        .when(retryable)
        .notify(|e: &E, delay: Duration| {
            tracing::warn!(error = %e, what, delay_ms = delay.as_millis() as u64, "call failed; retrying");
        })
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn the_schedules_are_what_the_table_says() {
        let ms = |b: Backoff| b.delays().map(|d| d.as_millis() as u64).collect::<Vec<_>>();
        assert_eq!(ms(Backoff::DATABASE), [250, 500, 1000]);
        assert_eq!(ms(Backoff::LARK), [500, 1500, 4500]);
        let patient = ms(Backoff::PATIENT);
        assert_eq!(&patient[..6], [250, 500, 1000, 2000, 4000, 5000]);
        let total: u64 = patient.iter().sum();
        assert!((55_000..=65_000).contains(&total), "{total} ms");
    }

    #[tokio::test(start_paused = true)]
    async fn retries_what_it_is_told_on_the_schedule_and_no_more() {
        let tries = AtomicUsize::new(0);
        let started = tokio::time::Instant::now();
        let out: Result<(), String> = retry(
            Backoff::DATABASE,
            "test",
            |_| true,
            || async {
                tries.fetch_add(1, Ordering::SeqCst);
                Err("down".to_string())
            },
        )
        .await;
        assert_eq!(out.unwrap_err(), "down");
        assert_eq!(
            tries.load(Ordering::SeqCst),
            4,
            "the first try and three retries"
        );
        assert_eq!(started.elapsed(), Duration::from_millis(1750));

        let tries = AtomicUsize::new(0);
        let out: Result<u32, String> = retry(
            Backoff::LARK,
            "test",
            |e| e != "no",
            || async {
                match tries.fetch_add(1, Ordering::SeqCst) {
                    0 => Err("busy".to_string()),
                    1 => Err("no".to_string()),
                    _ => Ok(1),
                }
            },
        )
        .await;
        assert_eq!(
            out.unwrap_err(),
            "no",
            "an error it is not told to retry returns at once"
        );
        assert_eq!(tries.load(Ordering::SeqCst), 2);

        let tries = AtomicUsize::new(0);
        let out: Result<u32, String> = retry(
            Backoff::PATIENT,
            "test",
            |_| true,
            || async {
                if tries.fetch_add(1, Ordering::SeqCst) < 7 {
                    Err("down".to_string())
                } else {
                    Ok(7)
                }
            },
        )
        .await;
        assert_eq!(out.unwrap(), 7);
    }
}

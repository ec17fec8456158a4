//! The backoff policy for transient LLM failures, used by the worker's retry loop
//! around one step (docs/runs.md, "Crash semantics"). It lives here, beside the
//! classifier, so every provider is retried the same way.
//!
//! It follows the official SDKs' contract (`llm-wire.md` §1.3): exponential backoff
//! `min(0.5·2ⁿ, 8) s × (1 − 0.25·rand)`, a server hint (`retry-after`) honoured when it
//! is at most [`MAX_RETRY_AFTER`], and no retry at all when the server asks for longer
//! (waiting minutes inside a step helps nobody; the run fails and the user can resend).

use std::time::Duration;

use crate::LlmError;

/// How many times one step is retried after its first attempt.
pub const MAX_STEP_RETRIES: u32 = 4;

/// The longest server-requested delay that is honoured; longer means "give up".
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

const INITIAL: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The delay before retry number `retry` (0 for the first retry), or `None` when no
/// retry should happen (retries exhausted, or the server asked for more than
/// [`MAX_RETRY_AFTER`]).
pub fn delay(retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
    delay_with_jitter(retry, retry_after, rand::random::<f64>())
}

/// [`delay`] for an error: `None` for fatal errors too.
pub fn delay_for(error: &LlmError, retry: u32) -> Option<Duration> {
    match error {
        LlmError::Transient { retry_after, .. } => delay(retry, *retry_after),
        LlmError::Fatal { .. } => None,
    }
}

/// [`delay`] with the random factor given (`jitter` in `[0, 1)`), for tests.
pub fn delay_with_jitter(
    retry: u32,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Option<Duration> {
    if retry >= MAX_STEP_RETRIES {
        return None;
    }
    match retry_after {
        Some(hint) if hint > MAX_RETRY_AFTER => None,
        Some(hint) if !hint.is_zero() => Some(hint),
        _ => Some(backoff(retry, jitter)),
    }
}

/// `min(0.5·2ⁿ, 8) s × (1 − 0.25·jitter)`.
pub fn backoff(retry: u32, jitter: f64) -> Duration {
    let base = INITIAL
        .saturating_mul(1u32 << retry.min(16))
        .min(MAX_BACKOFF);
    base.mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_eight_seconds() {
        let secs: Vec<f64> = (0..7).map(|n| backoff(n, 0.0).as_secs_f64()).collect();
        assert_eq!(secs, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(backoff(2, 1.0), Duration::from_millis(1500));
        assert_eq!(backoff(40, 0.0), MAX_BACKOFF);
    }

    #[test]
    fn random_jitter_stays_within_a_quarter() {
        for _ in 0..200 {
            let d = delay(1, None).unwrap();
            assert!(
                d <= Duration::from_secs(1) && d >= Duration::from_millis(750),
                "{d:?}"
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let hint = Some(Duration::from_secs(30));
        assert_eq!(delay_with_jitter(0, hint, 0.5), hint);
        assert_eq!(
            delay_with_jitter(0, Some(MAX_RETRY_AFTER), 0.0),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            delay_with_jitter(0, Some(Duration::from_secs(121)), 0.0),
            None
        );
        assert_eq!(
            delay_with_jitter(0, Some(Duration::ZERO), 0.0),
            Some(INITIAL)
        );
    }

    #[test]
    fn retries_run_out() {
        assert!(delay(MAX_STEP_RETRIES - 1, None).is_some());
        assert_eq!(delay(MAX_STEP_RETRIES, None), None);
    }

    #[test]
    fn fatal_errors_are_never_retried() {
        let fatal = LlmError::Fatal {
            reason: "bad".into(),
            status: Some(400),
        };
        assert_eq!(delay_for(&fatal, 0), None);
        let transient = LlmError::Transient {
            reason: "busy".into(),
            retry_after: None,
        };
        assert!(delay_for(&transient, 0).is_some());
    }
}

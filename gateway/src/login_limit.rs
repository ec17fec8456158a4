//! Sign-in attempts limited per key (`user:<name>`, `addr:<ip>`): at most
//! [`MAX_ATTEMPTS`] unsuccessful ones per key within [`WINDOW`].
//!
//! An attempt is charged *before* its password is checked. Counting only after a
//! failed check let concurrent attempts all pass the limiter before the first of
//! them failed: 100 concurrent wrong passwords for one account were 55 checks
//! against a limit of 10. Now the 11th concurrent attempt is refused at once. A
//! correct password clears the keys' counts; an attempt that was never checked
//! (the server too busy to hash, the database unreachable) is refunded.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Attempts per key per window.
pub const MAX_ATTEMPTS: usize = 10;
pub const WINDOW: Duration = Duration::from_secs(300);
/// Beyond this many keys the map is dropped wholesale (bounded memory under a
/// spray of usernames).
const MAX_KEYS: usize = 100_000;

/// The attempt was refused; retry after this many seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub retry_after_secs: u64,
}

#[derive(Default)]
pub struct LoginLimiter {
    attempts: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl LoginLimiter {
    /// Charge one attempt to every key, or refuse (charging nothing) when any key
    /// is at the limit.
    pub fn admit(&self, keys: &[String]) -> Result<(), Limited> {
        let mut map = self.attempts.lock().expect("limiter lock");
        let now = Instant::now();
        let wait = keys
            .iter()
            .filter_map(|k| {
                let q = map.get_mut(k)?;
                while q.front().is_some_and(|t| now.duration_since(*t) > WINDOW) {
                    q.pop_front();
                }
                let oldest = *q.front()?;
                (q.len() >= MAX_ATTEMPTS)
                    .then(|| WINDOW.saturating_sub(now.duration_since(oldest)).as_secs() + 1)
            })
            .max();
        if let Some(retry_after_secs) = wait {
            return Err(Limited { retry_after_secs });
        }
        if map.len() > MAX_KEYS {
            map.clear();
        }
        for k in keys {
            map.entry(k.clone()).or_default().push_back(now);
        }
        Ok(())
    }

    /// Give back an admitted attempt whose password was never checked.
    pub fn refund(&self, keys: &[String]) {
        let mut map = self.attempts.lock().expect("limiter lock");
        for k in keys {
            if let Some(q) = map.get_mut(k) {
                q.pop_back();
            }
        }
    }

    /// A correct password: forget the keys' attempts.
    pub fn clear(&self, keys: &[String]) {
        let mut map = self.attempts.lock().expect("limiter lock");
        for k in keys {
            map.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> [String; 2] {
        ["user:a".to_string(), "addr:1".to_string()]
    }

    #[test]
    fn the_attempt_after_the_limit_is_refused_before_any_is_checked() {
        let limiter = LoginLimiter::default();
        for _ in 0..MAX_ATTEMPTS {
            assert_eq!(limiter.admit(&keys()), Ok(()));
        }
        let refused = limiter.admit(&keys()).unwrap_err();
        assert!((1..=WINDOW.as_secs() + 1).contains(&refused.retry_after_secs));
        // Another user from another address is not affected.
        assert_eq!(limiter.admit(&["user:b".into(), "addr:2".into()]), Ok(()));
    }

    #[test]
    fn unchecked_attempts_are_refunded_and_success_clears() {
        let limiter = LoginLimiter::default();
        for _ in 0..MAX_ATTEMPTS {
            limiter.admit(&keys()).unwrap();
        }
        limiter.refund(&keys());
        assert_eq!(limiter.admit(&keys()), Ok(()));
        assert!(limiter.admit(&keys()).is_err());
        limiter.clear(&keys());
        assert_eq!(limiter.admit(&keys()), Ok(()));
    }
}

//! Sliding-window rate limiter keyed by target (`app`, `msg:<id>`, `card:<id>`).
//!
//! A request proceeds only when every key it touches has room in its window; it is
//! then counted against all of them. A request is counted as *in flight* until its
//! [`Permit`] is dropped, and from then on at its **completion** time. Lark counts
//! a request when it arrives, which lies between our send and our completion, so
//! measuring from completion with a window of at least one second can never let
//! Lark see more than `limit` requests in any second, however large the latency
//! jitter.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Limiter {
    window: Duration,
    inner: Mutex<Windows>,
}

#[derive(Default)]
struct Windows {
    keys: HashMap<String, Vec<Hit>>,
    next_id: u64,
}

struct Hit {
    id: u64,
    /// `None` while in flight.
    done: Option<Instant>,
}

/// Holds a request's place in its windows; dropping it stamps the completion time.
pub(crate) struct Permit {
    limiter: Arc<Limiter>,
    id: u64,
    keys: Vec<String>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let now = Instant::now();
        let mut inner = self.limiter.inner.lock().expect("limiter lock");
        for key in &self.keys {
            if let Some(hit) = inner
                .keys
                .get_mut(key)
                .and_then(|hits| hits.iter_mut().find(|h| h.id == self.id))
            {
                hit.done = Some(now);
            }
        }
    }
}

impl Limiter {
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            inner: Mutex::new(Windows::default()),
        }
    }

    /// Waits until each `(key, limit)` has room, then takes a place in each.
    pub(crate) async fn acquire(self: &Arc<Self>, keys: &[(String, u32)]) -> Permit {
        loop {
            match self.try_acquire(keys, Instant::now()) {
                Ok(id) => {
                    let keys = keys.iter().map(|(k, _)| k.clone()).collect();
                    return Permit {
                        limiter: self.clone(),
                        id,
                        keys,
                    };
                }
                Err(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// Waits until each `(key, limit)` has room, without taking a place: the
    /// caller decides what to send once it may (the newest content, not what
    /// was newest when it started waiting).
    pub(crate) async fn wait_room(&self, keys: &[(String, u32)]) {
        loop {
            let wait = {
                let mut inner = self.inner.lock().expect("limiter lock");
                room(&mut inner, self.window, keys, Instant::now())
            };
            match wait {
                Ok(()) => return,
                Err(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// `Ok(id)` when admitted, else how long to wait before trying again.
    fn try_acquire(&self, keys: &[(String, u32)], now: Instant) -> Result<u64, Duration> {
        let mut inner = self.inner.lock().expect("limiter lock");
        room(&mut inner, self.window, keys, now)?;
        inner.next_id += 1;
        let id = inner.next_id;
        for (key, _) in keys {
            inner
                .keys
                .get_mut(key)
                .expect("inserted above")
                .push(Hit { id, done: None });
        }
        // Forget idle keys so per-message entries do not pile up forever.
        inner.keys.retain(|_, hits| !hits.is_empty());
        Ok(id)
    }
}

/// `Ok` when every key has room now, else how long to wait before asking again.
fn room(
    inner: &mut Windows,
    window: Duration,
    keys: &[(String, u32)],
    now: Instant,
) -> Result<(), Duration> {
    let mut wait = Duration::ZERO;
    for (key, limit) in keys {
        let hits = inner.keys.entry(key.clone()).or_default();
        hits.retain(|h| h.done.is_none_or(|t| now.duration_since(t) < window));
        if hits.len() >= (*limit).max(1) as usize {
            // Earliest moment a completed hit leaves the window; in-flight ones
            // are re-checked shortly.
            let soonest = hits
                .iter()
                .filter_map(|h| h.done)
                .map(|t| window - now.duration_since(t))
                .min()
                .unwrap_or(Duration::from_millis(20));
            wait = wait.max(soonest.max(Duration::from_millis(1)));
        }
    }
    if wait.is_zero() {
        Ok(())
    } else {
        inner.keys.retain(|_, hits| !hits.is_empty());
        Err(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_in_flight_and_then_from_completion() {
        let limiter = Arc::new(Limiter::new(Duration::from_secs(1)));
        let keys = [("msg:1".to_owned(), 2)];
        let a = limiter.acquire(&keys).await;
        let _b = limiter.acquire(&keys).await;
        let t0 = Instant::now();
        assert!(
            limiter.try_acquire(&keys, t0).is_err(),
            "two in flight fill the window"
        );
        drop(a);
        let done = Instant::now();
        assert!(
            limiter.try_acquire(&keys, done).is_err(),
            "a completed request still counts"
        );
        assert!(
            limiter
                .try_acquire(&keys, done + Duration::from_secs(1))
                .is_ok()
        );
    }
}

//! Open event streams per user and per run (`limits.streams_per_user`,
//! `limits.streams_per_run`; 0 disables either). Each SSE stream holds a
//! connection, a bus subscription and a database re-check every 15 s, so one
//! user opening thousands of them cost every other user; now the stream beyond a
//! cap is 429 `rate_limited` + `Retry-After` before anything is subscribed.
//!
//! Counts are per gateway process (a stream lives in exactly one process, and the
//! count drops when its [`StreamPermit`] does, however the stream ends). A
//! streaming send is admitted for its user *before* the message is accepted, so a
//! refused stream never leaves a run behind; its new run cannot have other streams
//! yet, so it is counted without a check.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use weft_shared::ids::{RunId, UserId};

use crate::error::ApiError;

/// How long a refused client should wait: streams end when their runs do.
const RETRY_AFTER_SECS: u64 = 5;

#[derive(Default)]
struct Counts {
    users: HashMap<UserId, u64>,
    runs: HashMap<RunId, u64>,
}

pub struct StreamLimits {
    counts: Mutex<Counts>,
    per_user: u64,
    per_run: u64,
}

/// Which cap refused a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRefused {
    PerUser,
    PerRun,
}

impl From<StreamRefused> for ApiError {
    fn from(r: StreamRefused) -> ApiError {
        let message = match r {
            StreamRefused::PerUser => "too many open event streams for this user",
            StreamRefused::PerRun => "too many open event streams for this run",
        };
        ApiError::RateLimited {
            message: format!("{message}; close one or try again later"),
            retry_after_secs: RETRY_AFTER_SECS,
        }
    }
}

/// One open stream, counted until dropped.
pub struct StreamPermit {
    limits: Arc<StreamLimits>,
    user: UserId,
    run: Option<RunId>,
}

fn at_cap<K: Hash + Eq>(map: &HashMap<K, u64>, key: &K, cap: u64) -> bool {
    cap > 0 && map.get(key).copied().unwrap_or(0) >= cap
}

fn release<K: Hash + Eq>(map: &mut HashMap<K, u64>, key: &K) {
    if let Some(n) = map.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}

impl StreamLimits {
    pub fn new(per_user: u64, per_run: u64) -> StreamLimits {
        StreamLimits {
            counts: Mutex::default(),
            per_user,
            per_run,
        }
    }

    /// Count a stream of `user` (and of `run`, when known), or refuse it.
    pub fn admit(
        self: &Arc<Self>,
        user: &UserId,
        run: Option<&RunId>,
    ) -> Result<StreamPermit, StreamRefused> {
        let mut counts = self.counts.lock().expect("stream limits lock");
        if at_cap(&counts.users, user, self.per_user) {
            return Err(StreamRefused::PerUser);
        }
        if let Some(run) = run
            && at_cap(&counts.runs, run, self.per_run)
        {
            return Err(StreamRefused::PerRun);
        }
        *counts.users.entry(user.clone()).or_default() += 1;
        if let Some(run) = run {
            *counts.runs.entry(run.clone()).or_default() += 1;
        }
        Ok(StreamPermit {
            limits: self.clone(),
            user: user.clone(),
            run: run.cloned(),
        })
    }
}

impl StreamPermit {
    /// Count the stream against `run` too, without a check (a run just created).
    pub fn attach_run(&mut self, run: &RunId) {
        if self.run.is_some() {
            return;
        }
        let mut counts = self.limits.counts.lock().expect("stream limits lock");
        *counts.runs.entry(run.clone()).or_default() += 1;
        self.run = Some(run.clone());
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut counts = self.limits.counts.lock().expect("stream limits lock");
        release(&mut counts.users, &self.user);
        if let Some(run) = &self.run {
            release(&mut counts.runs, run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_hold_and_dropping_a_permit_frees_its_place() {
        let limits = Arc::new(StreamLimits::new(3, 2));
        let (u, r1, r2) = (
            UserId("u".into()),
            RunId::parse("00000000-0000-0000-0000-000000000001").unwrap(),
            RunId::parse("00000000-0000-0000-0000-000000000002").unwrap(),
        );
        let a = limits.admit(&u, Some(&r1)).unwrap();
        let _b = limits.admit(&u, Some(&r1)).unwrap();
        assert_eq!(
            limits.admit(&u, Some(&r1)).err(),
            Some(StreamRefused::PerRun)
        );
        let mut c = limits.admit(&u, None).unwrap();
        c.attach_run(&r2);
        assert_eq!(
            limits.admit(&u, Some(&r2)).err(),
            Some(StreamRefused::PerUser)
        );
        drop(a);
        let d = limits.admit(&u, Some(&r1)).unwrap();
        drop((d, _b, c));
        let counts = limits.counts.lock().unwrap();
        assert!(counts.users.is_empty() && counts.runs.is_empty());
    }
}

//! Password hashing and checking, bounded. argon2id is expensive on purpose (19 MiB
//! of memory and tens of milliseconds of CPU per hash in a release build); run
//! without a bound, 100 concurrent sign-ins took the server from 57 MB to 1.1 GB.
//!
//! At most `workers` hashes run at once, on blocking threads, and at most `queue`
//! more wait for a turn. Past that a caller is answered 503 `unavailable` with
//! `Retry-After` immediately, rather than queueing without bound. The permits move
//! into the blocking task, so a client that hangs up mid-hash cannot free its slot
//! while the hash still runs.

use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;
use weft_shared::auth::{hash_password, verify_password};

use crate::error::{ApiError, ApiResult};

/// Hashes waiting for a turn, beyond those running.
const QUEUE: usize = 32;

pub struct PasswordGate {
    /// Running plus waiting.
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
}

impl PasswordGate {
    pub fn new(workers: usize, queue: usize) -> PasswordGate {
        PasswordGate {
            admitted: Arc::new(Semaphore::new(workers + queue)),
            running: Arc::new(Semaphore::new(workers)),
        }
    }

    /// One hash per CPU (at least two) at a time.
    pub fn for_this_machine() -> PasswordGate {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        PasswordGate::new(cpus.max(2), QUEUE)
    }

    /// Check `password` against `hash`; with no hash (an unknown username), against
    /// a dummy one, so the answer takes as long and does not reveal which
    /// usernames exist.
    pub async fn verify(&self, password: String, hash: Option<String>) -> ApiResult<bool> {
        self.run(move || match hash {
            Some(hash) => verify_password(&password, &hash),
            None => {
                verify_password(&password, dummy_hash());
                false
            }
        })
        .await
    }

    /// An argon2id hash of `password`.
    pub async fn hash(&self, password: String) -> ApiResult<String> {
        self.run(move || hash_password(&password))
            .await?
            .map_err(ApiError::internal)
    }

    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> ApiResult<T> {
        let admitted =
            self.admitted
                .clone()
                .try_acquire_owned()
                .map_err(|_| ApiError::Overloaded {
                    message: "the server is busy checking passwords; try again in a moment".into(),
                    retry_after_secs: 1,
                })?;
        let running = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(ApiError::internal)?;
        tokio::task::spawn_blocking(move || {
            let _permits = (admitted, running);
            job()
        })
        .await
        .map_err(ApiError::internal)
    }
}

/// A real argon2id hash to verify against when the username is unknown.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_password("not a real password").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_queue_callers_are_told_to_come_back() {
        let gate = PasswordGate::new(1, 0);
        let hash = gate.hash("correct horse".into()).await.unwrap();
        assert!(
            gate.verify("correct horse".into(), Some(hash.clone()))
                .await
                .unwrap()
        );
        assert!(!gate.verify("correct horse".into(), None).await.unwrap());
        // Hold the only slot, as a running hash would.
        let _busy = gate.admitted.clone().try_acquire_owned().unwrap();
        match gate.verify("correct horse".into(), Some(hash)).await {
            Err(e @ ApiError::Overloaded { .. }) => assert_eq!(e.status(), 503),
            other => panic!("expected 503, got {other:?}"),
        }
    }
}

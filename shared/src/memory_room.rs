//! A byte budget that work waits on: the worker's images held for models and the
//! gateway's attachment uploads in flight each take room for their bytes before
//! holding them, and give it back when dropped, so a process's memory for them
//! stays bounded however many arrive at once. Counted in KiB (a semaphore's
//! permits), so budgets up to 512 GiB fit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Clone)]
pub struct MemoryRoom {
    sem: Arc<Semaphore>,
    kib: u32,
}

impl std::fmt::Debug for MemoryRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MemoryRoom({} of {} KiB free)",
            self.free_kib(),
            self.kib
        )
    }
}

impl MemoryRoom {
    pub fn new(bytes: u64) -> MemoryRoom {
        let kib = (bytes >> 10).clamp(1, u64::from(u32::MAX >> 3)) as u32;
        MemoryRoom {
            sem: Arc::new(Semaphore::new(kib as usize)),
            kib,
        }
    }

    fn want(&self, bytes: u64) -> u32 {
        bytes.div_ceil(1024).clamp(1, u64::from(self.kib)) as u32
    }

    /// Room for `bytes`, waiting until it is free; more than the whole room
    /// takes all of it (it waits for everyone else to finish).
    pub async fn take(&self, bytes: u64) -> OwnedSemaphorePermit {
        self.sem
            .clone()
            .acquire_many_owned(self.want(bytes))
            .await
            .expect("a memory room is never closed")
    }

    /// [`MemoryRoom::take`], giving up after `patience`.
    pub async fn take_within(
        &self,
        bytes: u64,
        patience: Duration,
    ) -> Option<OwnedSemaphorePermit> {
        tokio::time::timeout(patience, self.take(bytes)).await.ok()
    }

    /// KiB free now.
    pub fn free_kib(&self) -> usize {
        self.sem.available_permits()
    }
}

/// A byte count for people: `512 KiB`, `4.0 MiB` (limits, attachment notes).
pub fn human_size(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
    } else {
        format!("{} KiB", n.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_space_and_caps_huge_requests() {
        let room = MemoryRoom::new(100 << 10);
        let a = room.take(60 << 10).await;
        assert_eq!(room.free_kib(), 40);
        // More than is free: waits until `a` is gone.
        assert!(
            room.take_within(50 << 10, Duration::from_millis(50))
                .await
                .is_none()
        );
        drop(a);
        // More than the whole room: takes all of it.
        let all = room.take(1 << 30).await;
        assert_eq!(room.free_kib(), 0);
        drop(all);
        assert_eq!(room.free_kib(), 100);
    }
}

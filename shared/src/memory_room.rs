//! A byte budget that work waits on: the worker's images held for models and the
//! gateway's attachment uploads in flight each take room for their bytes before
//! holding them, and give it back when dropped, so a process's memory for them
//! stays bounded however many arrive at once. Counted in KiB (a semaphore's
//! permits), so budgets up to 512 GiB fit.
//!
//! The gateway's budget is a [`SharedRoom`]: each user may hold only a share
//! of it. Before, one user's slow uploads could reserve the whole budget and
//! every other user's sends waited, then got 503. A user's share is taken
//! first and the budget second, so a user past their share waits on their own
//! share and is no one else's head of the line.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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

/// A [`MemoryRoom`] of which each key (a user) may hold at most a share.
#[derive(Clone)]
pub struct SharedRoom {
    total: MemoryRoom,
    share_bytes: u64,
    /// The shares in use; a share nobody holds or waits for is forgotten.
    shares: Arc<Mutex<HashMap<String, MemoryRoom>>>,
}

/// Room held in a [`SharedRoom`]: the key's share and the budget, given back
/// when dropped.
pub struct SharedPermit {
    share: Option<OwnedSemaphorePermit>,
    total: Option<OwnedSemaphorePermit>,
    room: SharedRoom,
    key: String,
}

impl std::fmt::Debug for SharedRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SharedRoom({:?}, {} B each)",
            self.total, self.share_bytes
        )
    }
}

impl SharedRoom {
    /// `total_bytes` in all, at most `share_bytes` of it per key.
    pub fn new(total_bytes: u64, share_bytes: u64) -> SharedRoom {
        SharedRoom {
            total: MemoryRoom::new(total_bytes),
            share_bytes: share_bytes.min(total_bytes),
            shares: Arc::default(),
        }
    }

    /// Room for `bytes` for `key`, waiting at most `patience` for it: first
    /// from the key's share (more than the share takes all of it), then from
    /// the budget (more than the budget takes all of it).
    pub async fn take_within(
        &self,
        key: &str,
        bytes: u64,
        patience: Duration,
    ) -> Option<SharedPermit> {
        let share = self
            .shares
            .lock()
            .expect("memory shares")
            .entry(key.to_owned())
            .or_insert_with(|| MemoryRoom::new(self.share_bytes))
            .clone();
        let mut held = SharedPermit {
            share: None,
            total: None,
            room: self.clone(),
            key: key.to_owned(),
        };
        let take = async {
            held.share = Some(share.take(bytes).await);
            drop(share);
            held.total = Some(self.total.take(bytes).await);
        };
        let taken = tokio::time::timeout(patience, take).await;
        // Too late: `held` is dropped half-filled (after the wait that held a
        // clone of the share), and forgets the share if nobody else uses it.
        taken.ok()?;
        Some(held)
    }

    /// KiB of the whole budget free now.
    pub fn free_kib(&self) -> usize {
        self.total.free_kib()
    }
}

impl Drop for SharedPermit {
    fn drop(&mut self) {
        self.total.take();
        self.share.take();
        let mut shares = self.room.shares.lock().expect("memory shares");
        // Only the map still points at an unused share: nobody holds or awaits it.
        if shares
            .get(&self.key)
            .is_some_and(|s| Arc::strong_count(&s.sem) == 1)
        {
            shares.remove(&self.key);
        }
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

    #[tokio::test]
    async fn a_key_holds_at_most_its_share_and_others_still_find_room() {
        let room = SharedRoom::new(100 << 10, 30 << 10);
        let patience = Duration::from_millis(50);
        let a = room.take_within("alice", 20 << 10, patience).await.unwrap();
        // Past alice's share, though the budget has room.
        assert!(
            room.take_within("alice", 20 << 10, patience)
                .await
                .is_none()
        );
        let b = room.take_within("bob", 30 << 10, patience).await.unwrap();
        assert_eq!(room.free_kib(), 50);
        // More than a share takes the whole share and its size from the budget.
        let c = room.take_within("carol", 40 << 10, patience).await.unwrap();
        assert_eq!(room.free_kib(), 10);
        drop((a, b, c));
        assert_eq!(room.free_kib(), 100);
        assert!(
            room.shares.lock().unwrap().is_empty(),
            "idle shares are forgotten"
        );
    }
}

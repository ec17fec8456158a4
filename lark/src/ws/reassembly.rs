//! Reassembly of data frames that Lark split into `sum` fragments.
//!
//! Fragments share a `message_id` and carry a 0-based `seq`; they may arrive out of
//! order and interleaved with other pushes. A partial set is dropped after a TTL
//! (re-armed on every fragment, as the Go SDK does) so a lost fragment cannot leak
//! memory; Lark then redelivers the whole event because nothing was acked.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Upper bound on `sum`, so a corrupt header cannot make us allocate a huge table.
const MAX_FRAGMENTS: usize = 4096;

pub(crate) struct FragmentCache {
    ttl: Duration,
    entries: HashMap<String, Partial>,
}

struct Partial {
    slots: Vec<Option<Vec<u8>>>,
    expires: Instant,
}

/// Outcome of offering one fragment.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fragment {
    /// All fragments are present: the concatenated payload.
    Complete(Vec<u8>),
    /// Still waiting for others.
    Pending,
    /// `seq`/`sum` make no sense; the frame is ignored.
    Invalid,
}

impl FragmentCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: HashMap::new(),
        }
    }

    pub(crate) fn offer(
        &mut self,
        message_id: &str,
        sum: usize,
        seq: usize,
        bytes: Vec<u8>,
    ) -> Fragment {
        let now = Instant::now();
        self.entries.retain(|_, p| p.expires > now);
        if sum == 0 || sum > MAX_FRAGMENTS || seq >= sum {
            return Fragment::Invalid;
        }
        if sum == 1 {
            return Fragment::Complete(bytes);
        }
        let entry = self
            .entries
            .entry(message_id.to_owned())
            .or_insert_with(|| Partial {
                slots: vec![None; sum],
                expires: now + self.ttl,
            });
        if entry.slots.len() != sum {
            entry.slots = vec![None; sum];
        }
        entry.slots[seq] = Some(bytes);
        entry.expires = now + self.ttl;
        if entry.slots.iter().any(Option::is_none) {
            return Fragment::Pending;
        }
        let partial = self.entries.remove(message_id).expect("entry present");
        Fragment::Complete(partial.slots.into_iter().flatten().flatten().collect())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_fragments_join_in_seq_order() {
        let mut cache = FragmentCache::new(Duration::from_secs(5));
        assert_eq!(cache.offer("m", 3, 2, b"c".to_vec()), Fragment::Pending);
        assert_eq!(cache.offer("m", 3, 0, b"a".to_vec()), Fragment::Pending);
        assert_eq!(
            cache.offer("m", 3, 1, b"b".to_vec()),
            Fragment::Complete(b"abc".to_vec())
        );
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn expired_partials_are_dropped() {
        let mut cache = FragmentCache::new(Duration::ZERO);
        assert_eq!(cache.offer("m", 2, 0, b"a".to_vec()), Fragment::Pending);
        assert_eq!(cache.offer("m", 2, 1, b"b".to_vec()), Fragment::Pending);
    }

    #[test]
    fn bad_seq_is_invalid() {
        let mut cache = FragmentCache::new(Duration::from_secs(5));
        assert_eq!(cache.offer("m", 2, 2, b"a".to_vec()), Fragment::Invalid);
    }
}

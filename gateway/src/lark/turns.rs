//! One conversation's messages are handled one at a time, in the order they
//! came off the long connection.
//!
//! A message takes its place in line when it is read off the connection, in
//! the dispatch loop, before its handler is spawned ([`ChatLines::join`] does
//! not wait); the handler then waits for the one before it. The place cannot be
//! taken inside the spawned handler: tasks spawned one after the other do not
//! start in that order (tokio polls the newest spawn first, from its LIFO slot,
//! and idle threads steal the older one), so two messages sent quickly swapped
//! places, the conversation stored them swapped, and the follow-up run of a
//! `/flush` answered the older one and replied to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Every conversation's line in this process. Idle conversations hold nothing.
#[derive(Default)]
pub(super) struct ChatLines {
    /// Per conversation key: the last message in line.
    last: Mutex<HashMap<String, Place>>,
    next: AtomicU64,
}

struct Place {
    id: u64,
    /// Cancelled when that message's handling is over.
    done: CancellationToken,
}

/// One message's place in its conversation's line; handling is over when it
/// is dropped (however: a finished handler, a panic, an aborted task).
pub(super) struct ChatTurn {
    lines: Arc<ChatLines>,
    key: String,
    id: u64,
    /// The message before this one, while it is being handled.
    before: Option<CancellationToken>,
    done: CancellationToken,
}

impl ChatLines {
    /// Takes the next place in the line of conversation `key`, at once.
    pub(super) fn join(self: &Arc<Self>, key: &str) -> ChatTurn {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let done = CancellationToken::new();
        let before = self
            .last
            .lock()
            .expect("chat lines")
            .insert(
                key.to_owned(),
                Place {
                    id,
                    done: done.clone(),
                },
            )
            .map(|place| place.done);
        ChatTurn {
            lines: self.clone(),
            key: key.to_owned(),
            id,
            before,
            done,
        }
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.last.lock().expect("chat lines").len()
    }
}

impl ChatTurn {
    /// Waits until every message that joined the line before this one has
    /// been handled.
    pub(super) async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            before.cancelled().await;
        }
    }
}

impl Drop for ChatTurn {
    fn drop(&mut self) {
        self.done.cancel();
        let mut last = self.lines.last.lock().expect("chat lines");
        if last.get(&self.key).is_some_and(|place| place.id == self.id) {
            last.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Handlers spawned one after the other run in the order they joined,
    /// whichever the runtime starts first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handlers_run_in_the_order_they_joined() {
        let lines = Arc::new(ChatLines::default());
        let handled = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..64 {
            let mut turn = lines.join("oc_chat");
            let handled = handled.clone();
            tasks.push(tokio::spawn(async move {
                turn.wait().await;
                handled.lock().unwrap().push(i);
                // A handler awaits (the database, Lark) while it holds its turn.
                tokio::task::yield_now().await;
                handled.lock().unwrap().push(i);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let expected: Vec<i32> = (0..64).flat_map(|i| [i, i]).collect();
        assert_eq!(*handled.lock().unwrap(), expected);
        assert_eq!(lines.waiting(), 0, "idle conversations are forgotten");
    }

    #[tokio::test]
    async fn conversations_do_not_wait_for_each_other() {
        let lines = Arc::new(ChatLines::default());
        let _busy = lines.join("oc_a");
        let mut other = lines.join("oc_b");
        tokio::time::timeout(Duration::from_secs(5), other.wait())
            .await
            .expect("another conversation is not held up");
        let mut next = lines.join("oc_a");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), next.wait())
                .await
                .is_err(),
            "the same conversation waits"
        );
    }

    #[tokio::test]
    async fn a_handler_that_panics_lets_the_next_one_go() {
        let lines = Arc::new(ChatLines::default());
        let mut first = lines.join("oc_chat");
        let mut second = lines.join("oc_chat");
        let failed = tokio::spawn(async move {
            first.wait().await;
            panic!("handler failed");
        });
        assert!(failed.await.is_err());
        tokio::time::timeout(Duration::from_secs(5), second.wait())
            .await
            .expect("the next message is handled");
    }
}

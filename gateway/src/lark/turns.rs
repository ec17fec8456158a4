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
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Messages waiting in all lines of one gateway together; past it any message is
/// refused like one whose line is full. Each is a small task holding an event.
const MAX_IN_LINE: usize = 10_000;

/// Every conversation's line in this process. Idle conversations hold nothing.
pub(super) struct ChatLines {
    lines: Mutex<Lines>,
    /// Messages one line may hold; 0: unbounded.
    per_chat: usize,
}

#[derive(Default)]
struct Lines {
    by_chat: HashMap<String, Line>,
    total: usize,
}

struct Line {
    /// Cancelled when the last message in line has been handled.
    last_done: CancellationToken,
    /// Messages in line (waiting or being handled).
    len: usize,
    /// A message was refused since the line last had room (it was told so).
    refused: bool,
}

/// One message's place in its conversation's line; handling is over when it
/// is dropped (however: a finished handler, a panic, an aborted task).
pub(super) struct ChatTurn {
    owner: Arc<ChatLines>,
    key: String,
    /// The message before this one, while it is being handled.
    before: Option<CancellationToken>,
    done: CancellationToken,
}

/// The line of a message's conversation is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Busy {
    /// The first refusal since the line had room: say so in the chat (later
    /// ones are only logged, so a flood does not become a flood of replies).
    pub first: bool,
}

impl ChatLines {
    /// Lines of at most `per_chat` messages (0: unbounded).
    pub(super) fn new(per_chat: usize) -> ChatLines {
        ChatLines {
            lines: Mutex::default(),
            per_chat,
        }
    }

    /// Takes the next place in the line of conversation `key`, at once, or
    /// says the line is full.
    pub(super) fn join(self: &Arc<Self>, key: &str) -> Result<ChatTurn, Busy> {
        self.take_place(key, true)
    }

    /// Takes the next place in the line of `key` whatever its length: for a
    /// stored message taken over from another gateway, which was accepted long
    /// ago (a sweep takes a bounded number at a time).
    pub(super) fn rejoin(self: &Arc<Self>, key: &str) -> ChatTurn {
        self.take_place(key, false)
            .expect("a place taken without limits is never refused")
    }

    /// The next place in the line of `key`; with `bounded`, refused past
    /// `per_chat` in the line or [`MAX_IN_LINE`] in all lines.
    fn take_place(self: &Arc<Self>, key: &str, bounded: bool) -> Result<ChatTurn, Busy> {
        let done = CancellationToken::new();
        let mut lines = self.lines.lock().expect("chat lines");
        let full = bounded && lines.total >= MAX_IN_LINE;
        let before = match lines.by_chat.get_mut(key) {
            Some(line) => {
                if full || (bounded && self.per_chat > 0 && line.len >= self.per_chat) {
                    let first = !line.refused;
                    line.refused = true;
                    return Err(Busy { first });
                }
                line.len += 1;
                Some(std::mem::replace(&mut line.last_done, done.clone()))
            }
            None if full => return Err(Busy { first: false }),
            None => {
                lines.by_chat.insert(
                    key.to_owned(),
                    Line {
                        last_done: done.clone(),
                        len: 1,
                        refused: false,
                    },
                );
                None
            }
        };
        lines.total += 1;
        Ok(ChatTurn {
            owner: self.clone(),
            key: key.to_owned(),
            before,
            done,
        })
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lines.lock().expect("chat lines").by_chat.len()
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
        let mut lines = self.owner.lines.lock().expect("chat lines");
        lines.total -= 1;
        if let Some(line) = lines.by_chat.get_mut(&self.key) {
            line.len -= 1;
            line.refused = false;
            if line.len == 0 {
                lines.by_chat.remove(&self.key);
            }
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
        let lines = Arc::new(ChatLines::new(0));
        let handled = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..64 {
            let mut turn = lines.join("oc_chat").unwrap();
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
        let lines = Arc::new(ChatLines::new(0));
        let _busy = lines.join("oc_a").unwrap();
        let mut other = lines.join("oc_b").unwrap();
        tokio::time::timeout(Duration::from_secs(5), other.wait())
            .await
            .expect("another conversation is not held up");
        let mut next = lines.join("oc_a").unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(50), next.wait())
                .await
                .is_err(),
            "the same conversation waits"
        );
    }

    #[tokio::test]
    async fn a_handler_that_panics_lets_the_next_one_go() {
        let lines = Arc::new(ChatLines::new(0));
        let mut first = lines.join("oc_chat").unwrap();
        let mut second = lines.join("oc_chat").unwrap();
        let failed = tokio::spawn(async move {
            first.wait().await;
            panic!("handler failed");
        });
        assert!(failed.await.is_err());
        tokio::time::timeout(Duration::from_secs(5), second.wait())
            .await
            .expect("the next message is handled");
    }

    #[test]
    fn a_full_line_refuses_and_says_so_once_until_it_has_room() {
        let lines = Arc::new(ChatLines::new(2));
        let first = lines.join("oc_a").unwrap();
        let _second = lines.join("oc_a").unwrap();
        assert_eq!(lines.join("oc_a").err(), Some(Busy { first: true }));
        assert_eq!(lines.join("oc_a").err(), Some(Busy { first: false }));
        assert!(
            lines.join("oc_b").is_ok(),
            "other chats have their own line"
        );
        drop(first);
        let _third = lines.join("oc_a").expect("room again");
        assert_eq!(lines.join("oc_a").err(), Some(Busy { first: true }));
    }

    #[tokio::test]
    async fn a_taken_over_message_gets_in_line_even_when_it_is_full() {
        let lines = Arc::new(ChatLines::new(1));
        let first = lines.join("oc_a").unwrap();
        assert!(lines.join("oc_a").is_err(), "full");
        let mut rejoined = lines.rejoin("oc_a");
        let (went, mut gone) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(async move {
            rejoined.wait().await;
            let _ = went.send(());
            rejoined
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(gone.try_recv().is_err(), "it waits its turn");
        drop(first);
        let rejoined = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("then it goes")
            .unwrap();
        drop(rejoined);
        assert_eq!(lines.waiting(), 0);
    }
}

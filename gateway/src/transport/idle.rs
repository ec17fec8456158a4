//! When a connection has been doing nothing for too long. hyper's own header
//! timeout only runs once hyper-util's auto builder has read enough bytes to tell
//! HTTP/1 from HTTP/2, and HTTP/2 has none at all: a socket that sends nothing,
//! or only the HTTP/2 preface, held its connection slot for ever (4,096 such
//! sockets locked everyone out).
//!
//! So every connection counts the requests it is serving — from the service
//! call until its response body is dropped (written to the end, or abandoned),
//! SSE streams included — and one with none for `http.header_read_timeout_ms`
//! (from its accept, or from its last response) is closed, whatever protocol
//! it speaks or claims. A request being served is never cut: its body has its
//! own deadline, and a long response is the point of SSE.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
enum State {
    Idle { since: Instant },
    Serving { requests: usize },
}

/// One connection's requests in flight.
#[derive(Clone)]
pub struct Activity(std::sync::Arc<watch::Sender<State>>);

impl Activity {
    /// A connection just accepted: idle from now.
    pub fn new() -> Activity {
        Activity(std::sync::Arc::new(watch::Sender::new(State::Idle {
            since: Instant::now(),
        })))
    }

    /// A request has begun; it is served until the guard is dropped.
    pub fn serving(&self) -> Serving {
        self.0.send_modify(|s| {
            *s = match *s {
                State::Idle { .. } => State::Serving { requests: 1 },
                State::Serving { requests } => State::Serving {
                    requests: requests + 1,
                },
            }
        });
        Serving(self.clone())
    }

    /// Resolves once the connection has served nothing for `limit`.
    pub async fn idle_for(&self, limit: Duration) {
        let mut seen = self.0.subscribe();
        loop {
            let state = *seen.borrow_and_update();
            match state {
                State::Serving { .. } => {
                    if seen.changed().await.is_err() {
                        return std::future::pending().await;
                    }
                }
                State::Idle { since } => {
                    tokio::select! {
                        () = tokio::time::sleep_until(since + limit) => return,
                        changed = seen.changed() => if changed.is_err() {
                            return std::future::pending().await;
                        },
                    }
                }
            }
        }
    }
}

/// A request being served (see [`Activity::serving`]).
pub struct Serving(Activity);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.0.send_modify(|s| {
            *s = match *s {
                State::Serving { requests } if requests > 1 => State::Serving {
                    requests: requests - 1,
                },
                _ => State::Idle {
                    since: Instant::now(),
                },
            }
        });
    }
}

/// A response body that keeps its request counted as served until it is dropped.
pub struct Counted<B> {
    pub body: B,
    pub _serving: Serving,
}

impl<B: Body + Unpin> Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_counts_from_the_last_request() {
        let activity = Activity::new();
        let limit = Duration::from_millis(50);
        let first = activity.serving();
        let second = activity.serving();
        let not_while = |what: &'static str| {
            let a = activity.clone();
            async move {
                let waited = tokio::time::timeout(Duration::from_millis(300), a.idle_for(limit));
                assert!(waited.await.is_err(), "{what}");
            }
        };
        not_while("idle while serving two requests").await;
        drop(first);
        not_while("idle while serving one request").await;
        drop(second);
        tokio::time::timeout(Duration::from_secs(10), activity.idle_for(limit))
            .await
            .expect("idle once nothing is served");
    }
}

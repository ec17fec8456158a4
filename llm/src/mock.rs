//! The in-process `mock` model: deterministic and scriptable through the `@mock.*`
//! directives (see [`crate::mockscript`]), so tests and benchmarks can drive every
//! path of the agent loop (tool calls, reasoning, retries, truncation) with no network.
//!
//! It is built to be cheap: a stream is a small vector of tokens walked by one
//! `unfold`, with a timer only when a delay is asked for, so thousands of concurrent
//! streams cost little more than their tokens.

use std::time::Duration;

use futures::StreamExt;

use crate::mockscript::{self, Fail, Item, Outcome, Timing};
use crate::{ChatRequest, EventStream, LlmError, Provider, StreamEvent, classify_status};

/// The `mock` provider. `timing` applies when a message has no `@mock.delay`.
#[derive(Debug, Clone, Default)]
pub struct MockProvider {
    timing: Timing,
    /// A configured `context_window`: a prompt over it (by the estimate the
    /// context builder uses) is refused with a 400, as real providers refuse
    /// one over theirs. `None`: no limit.
    window: Option<u32>,
}

impl MockProvider {
    /// A mock that answers instantly unless a message asks for `@mock.delay`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mock with default latencies (used when a message has no `@mock.delay`).
    pub fn with_timing(timing: Timing) -> Self {
        MockProvider {
            timing,
            window: None,
        }
    }

    /// Refuses prompts longer than `window` tokens (when given).
    pub fn with_window(mut self, window: Option<u32>) -> Self {
        self.window = window;
        self
    }
}

/// The error an HTTP provider would have classified for this injected failure.
pub fn fail_error(fail: &Fail) -> LlmError {
    classify_status(
        fail.status,
        "injected by @mock.fail",
        fail.retry_after,
        None,
    )
}

#[async_trait::async_trait]
impl Provider for MockProvider {
    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        if let Some(window) = self.window {
            let prompt = crate::tokens::estimate_all(&req.messages);
            if prompt > u64::from(window) {
                return Err(LlmError::Fatal {
                    reason: format!(
                        "HTTP 400: context_length_exceeded: the prompt has {prompt} tokens, the window {window}"
                    ),
                    status: Some(400),
                });
            }
        }
        let mut plan =
            mockscript::plan(&req.messages, req.max_tokens).map_err(|e| LlmError::Fatal {
                reason: format!("HTTP 400: {e}"),
                status: Some(400),
            })?;
        if plan.context {
            plan.describe(&req.messages, &req.tools);
        }
        if plan.panic {
            panic!("@mock.panic: the mock model panics on purpose");
        }
        let timing = match plan.delay {
            Some((ttft, itl)) => Timing {
                ttft,
                itl,
                jitter: Duration::ZERO,
            },
            None => self.timing,
        };
        let items = match plan.outcome(req.attempt.max(1)) {
            Outcome::Reject(fail) => return Err(fail_error(&fail)),
            Outcome::Stream(items) => items,
        };
        Ok(mockscript::pace(items, timing).map(to_event).boxed())
    }
}

fn to_event(item: Item) -> Result<StreamEvent, LlmError> {
    match item {
        Item::Thinking(t) => Ok(StreamEvent::Thinking(t)),
        Item::Text(t) => Ok(StreamEvent::Text(t)),
        Item::ToolCall(call) => Ok(StreamEvent::ToolCall(call)),
        Item::Finished { stop, usage } => Ok(StreamEvent::Finished { stop, usage }),
        Item::Fail(fail) => Err(fail_error(&fail)),
        Item::Cut => Err(LlmError::Transient {
            reason: "stream ended before completion (@mock.cut)".into(),
            retry_after: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, StopReason};
    use futures::TryStreamExt;

    fn req(text: &str, attempt: u32) -> ChatRequest {
        ChatRequest {
            model: "mock".into(),
            messages: vec![ChatMessage::User {
                content: text.into(),
                images: Vec::new(),
            }]
            .into(),
            tools: vec![].into(),
            max_tokens: None,
            thinking_budget: None,
            attempt,
        }
    }

    async fn collect(text: &str, attempt: u32) -> Result<Vec<StreamEvent>, LlmError> {
        MockProvider::new()
            .stream(req(text, attempt))
            .await?
            .try_collect()
            .await
    }

    #[tokio::test]
    async fn echoes_then_finishes_with_usage() {
        let events = collect("hello there", 1).await.unwrap();
        let text: String = events
            .iter()
            .filter_map(|e| {
                if let StreamEvent::Text(t) = e {
                    Some(t.as_str())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(text, "You said: hello there");
        let Some(StreamEvent::Finished { stop, usage }) = events.last() else {
            panic!()
        };
        assert_eq!(*stop, StopReason::EndTurn);
        assert_eq!((usage.input, usage.output), (2, 4));
    }

    #[tokio::test]
    async fn a_prompt_over_a_configured_window_is_refused() {
        let long = "word ".repeat(400);
        let small = MockProvider::new().with_window(Some(100));
        let Err(LlmError::Fatal { reason, status }) = small.stream(req(&long, 1)).await else {
            panic!("a 2,000-character prompt fits no 100-token window");
        };
        assert_eq!(status, Some(400));
        assert!(reason.contains("context_length_exceeded"), "{reason}");
        assert!(small.stream(req("short", 1)).await.is_ok());
        assert!(MockProvider::new().stream(req(&long, 1)).await.is_ok());
    }

    #[tokio::test]
    async fn injected_failures_classify_like_http() {
        let err = collect("@mock.fail 429 times=2 retry_after=3", 2)
            .await
            .unwrap_err();
        assert!(err.is_transient());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        assert!(collect("@mock.fail 429 times=2", 3).await.is_ok());
        let err = collect("@mock.fail 401", 1).await.unwrap_err();
        assert!(matches!(
            err,
            LlmError::Fatal {
                status: Some(401),
                ..
            }
        ));
    }

    #[tokio::test]
    async fn mid_stream_failures_come_after_tokens() {
        let mut s = MockProvider::new()
            .stream(req("@mock.tokens 4 @mock.cut 2", 1))
            .await
            .unwrap();
        assert!(matches!(s.next().await, Some(Ok(StreamEvent::Text(_)))));
        assert!(matches!(s.next().await, Some(Ok(StreamEvent::Text(_)))));
        assert!(matches!(
            s.next().await,
            Some(Err(LlmError::Transient { .. }))
        ));
        assert!(s.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn thousands_of_paced_streams_run_concurrently() {
        let provider = MockProvider::new();
        let streams = (0..2000).map(|i| {
            let provider = provider.clone();
            tokio::spawn(async move {
                let text = format!("@mock.delay 200 40 @mock.tokens {}", 20 + i % 7);
                let events: Vec<_> = provider
                    .stream(req(&text, 1))
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap();
                events.len()
            })
        });
        let lengths = futures::future::try_join_all(streams).await.unwrap();
        for (i, n) in lengths.into_iter().enumerate() {
            assert_eq!(n, 20 + i % 7 + 1, "every token then Finished");
        }
    }

    #[tokio::test]
    async fn bad_script_is_a_fatal_400() {
        let err = collect("@mock.bogus", 1).await.unwrap_err();
        assert!(matches!(
            err,
            LlmError::Fatal {
                status: Some(400),
                ..
            }
        ));
    }
}

//! The HTTP plumbing shared by the SSE providers (OpenAI-compatible, Anthropic):
//! sending with a bound on the wait for headers, turning error responses into
//! [`LlmError`], and driving a wire-specific [`Decoder`] over the event stream with
//! an idle timeout between events.
//!
//! Every transport failure after the request was sent is transient: the step is
//! retried from scratch, which is safe because nothing was checkpointed yet.

use std::collections::VecDeque;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{StreamExt, stream::BoxStream};

use crate::classify::classify_response;
use crate::{EventStream, LlmError, StreamEvent};

/// The HTTP client the providers use: connect timeout, keep-alive, no overall
/// timeout (streams may legitimately last minutes; idleness is bounded instead).
/// Build one and share it between providers to share the connection pool.
///
/// Redirects are never followed: a redirect would carry the API key (`x-api-key`
/// is not among the headers reqwest drops across hosts, and a same-host redirect
/// keeps `Authorization`) and, on 307/308, the conversation to wherever `Location`
/// points. A provider answering 3xx fails the step instead (`send`).
pub fn http_client(connect_timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_keepalive(Duration::from_secs(30))
        .build()
        // Only fails when the TLS backend cannot initialise, as `Client::new` assumes.
        .expect("TLS backend initialises")
}

pub(crate) type Out = VecDeque<Result<StreamEvent, LlmError>>;

/// A wire format's parser: SSE events in, [`StreamEvent`]s (or one error) out.
pub(crate) trait Decoder: Send + 'static {
    /// Handle one event. Returns true when the stream is complete (its end marker).
    fn on_event(&mut self, event: &Event, out: &mut Out) -> bool;
    /// The connection ended cleanly without the end marker.
    fn on_eof(&mut self, out: &mut Out);
}

/// Send a request; a non-success status becomes a classified error carrying the
/// provider's own message.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<reqwest::Response, LlmError> {
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => return Err(transient(format!("no response within {idle:?}"))),
        Ok(Err(e)) if e.is_builder() => {
            return Err(LlmError::Fatal {
                reason: format!("bad request: {e}"),
                status: None,
            });
        }
        Ok(Err(e)) => return Err(transient(format!("request failed: {}", error_chain(&e)))),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    if status.is_redirection() {
        let reason =
            "the provider answered with a redirect, which is not followed (check its base_url)";
        return Err(classify_response(status.as_u16(), &headers, reason));
    }
    let body = tokio::time::timeout(idle, response.text())
        .await
        .ok()
        .and_then(Result::ok);
    let message = body.as_deref().map(error_message).unwrap_or_default();
    let reason = if message.is_empty() {
        status.canonical_reason().unwrap_or("error")
    } else {
        &message
    };
    Err(classify_response(status.as_u16(), &headers, reason))
}

/// The human message of an error body: `error.message` (OpenAI, Anthropic, Ollama,
/// vLLM), a flat `message`, or the start of the raw body.
pub(crate) fn error_message(body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let found = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(|m| m.as_str())
    });
    match found {
        Some(m) => m.to_owned(),
        None => body.chars().take(200).collect(),
    }
}

pub(crate) fn transient(reason: impl Into<String>) -> LlmError {
    LlmError::Transient {
        reason: reason.into(),
        retry_after: None,
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

struct Drive<D> {
    events: BoxStream<'static, Result<Event, EventStreamError<reqwest::Error>>>,
    decoder: D,
    out: Out,
    done: bool,
    idle: Duration,
}

/// Decode a streaming response. The stream ends after the decoder's end marker, or
/// with exactly one error.
pub(crate) fn drive<D: Decoder>(
    response: reqwest::Response,
    idle: Duration,
    decoder: D,
) -> EventStream {
    let events = response.bytes_stream().eventsource().boxed();
    let state = Drive {
        events,
        decoder,
        out: Out::new(),
        done: false,
        idle,
    };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.out.pop_front() {
                if item.is_err() {
                    s.out.clear();
                    s.done = true;
                }
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            match tokio::time::timeout(s.idle, s.events.next()).await {
                Ok(Some(Ok(event))) => s.done = s.decoder.on_event(&event, &mut s.out),
                Ok(Some(Err(EventStreamError::Transport(e)))) => {
                    s.out.push_back(Err(transient(format!(
                        "stream broken: {}",
                        error_chain(&e)
                    ))));
                }
                Ok(Some(Err(e))) => s.out.push_back(Err(LlmError::Fatal {
                    reason: format!("malformed event stream: {e}"),
                    status: None,
                })),
                Ok(None) => {
                    s.decoder.on_eof(&mut s.out);
                    s.done = true;
                }
                Err(_) => s
                    .out
                    .push_back(Err(transient(format!("no data for {:?}", s.idle)))),
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::error_message;

    #[test]
    fn error_messages_from_every_dialect() {
        let openai =
            r#"{"error":{"message":"Rate limit","type":"requests","param":null,"code":null}}"#;
        assert_eq!(error_message(openai), "Rate limit");
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(error_message(anthropic), "Overloaded");
        assert_eq!(
            error_message(r#"{"object":"error","message":"flat"}"#),
            "flat"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }
}

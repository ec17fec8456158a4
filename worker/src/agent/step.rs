//! One LLM step: stream the model's answer into events, retrying transient
//! upstream errors with backoff inside the step (`retrying` events).

use std::time::Instant;

use futures::StreamExt;
use tracing::field::Empty;
use tracing::{Instrument, Span};
use weft_llm::{ChatRequest, LlmError, Reasoning, StreamEvent, ToolCall, Usage};
use weft_shared::api::ErrorBody;
use weft_shared::event::EventKind;
use weft_shared::time::now_ms;

use crate::RunStop;
use crate::emitter::Emitter;
use crate::providers::ModelEntry;

/// What the model said in a step besides its calls: its text, and the reasoning
/// before it, block by block (sent back with the calls' results).
pub(super) struct Said {
    pub text: String,
    pub reasoning: Vec<Reasoning>,
}

/// The result of one step.
pub(super) enum StepOutcome {
    Done {
        said: Said,
        calls: Vec<ToolCall>,
        usage: Usage,
    },
    Stopped {
        partial: String,
    },
    Failed {
        error: ErrorBody,
        partial: String,
    },
}

/// Timing the attempt reports in `done` and metrics.
pub(super) struct Timing {
    pub ttft_ms: Option<u64>,
    pub created_at: i64,
}

impl Timing {
    fn mark_first_token(&mut self) {
        if self.ttft_ms.is_none() {
            self.ttft_ms = Some((now_ms() - self.created_at).max(0) as u64);
        }
    }
}

/// What a user is told about a failed provider call: never the provider's text,
/// which can carry internal URLs (a proxy, a private endpoint) and account details.
fn public_reason(error: &LlmError) -> String {
    match error {
        LlmError::Transient { .. } => "the model provider is busy or unreachable".to_string(),
        LlmError::Fatal {
            status: Some(status),
            ..
        } => format!("the model provider refused the request (HTTP {status})"),
        LlmError::Fatal { status: None, .. } => {
            "the model provider's answer could not be used".to_string()
        }
    }
}

/// One step, retrying transient upstream errors with backoff.
pub(super) async fn run_step(
    model: &ModelEntry,
    mut req: ChatRequest,
    step: u32,
    em: &mut Emitter,
    stop: &RunStop,
    timing: &mut Timing,
) -> StepOutcome {
    let mut retry = 0;
    loop {
        req.attempt = retry + 1;
        let span = llm_span(model, &req);
        let call = stream_once(model, req.clone(), step, em, stop, timing);
        let error = match call.instrument(span.clone()).await {
            Ok(outcome) => return outcome,
            Err(error) => {
                span.record("otel.status_code", "ERROR");
                error
            }
        };
        // The provider's own text goes to the log; the user sees a generic message.
        tracing::warn!(step, attempt = retry + 1, error = %error, "model provider call failed");
        let reason = public_reason(&error);
        let Some(delay) = weft_llm::retry::delay_for(&error, retry) else {
            let code = match error {
                LlmError::Transient { .. } => "upstream_unavailable",
                LlmError::Fatal { .. } => "upstream_error",
            };
            return StepOutcome::Failed {
                error: ErrorBody {
                    code: code.into(),
                    message: reason,
                },
                partial: String::new(),
            };
        };
        retry += 1;
        em.emit(EventKind::Retrying {
            step,
            attempt: retry,
            reason,
            delay_ms: delay.as_millis() as u64,
        })
        .await;
        tokio::select! {
            _ = stop.token.cancelled() => return StepOutcome::Stopped { partial: String::new() },
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// The span of one LLM call (each retry is a call of its own). Tokens and the
/// time to its first token are recorded as the stream reports them.
fn llm_span(model: &ModelEntry, req: &ChatRequest) -> Span {
    tracing::info_span!(
        "llm",
        otel.name = %format_args!("chat {}", req.model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.config.provider.as_str(),
        gen_ai.request.model = %req.model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        ttft_ms = Empty,
        attempt = req.attempt,
    )
}

/// One streamed LLM call, inside its [`llm_span`]. `Err` only for an upstream
/// error worth classifying.
async fn stream_once(
    model: &ModelEntry,
    req: ChatRequest,
    step: u32,
    em: &mut Emitter,
    stop: &RunStop,
    timing: &mut Timing,
) -> Result<StepOutcome, LlmError> {
    // The call's own time to first output (text, reasoning or a tool call);
    // the run's `ttft_ms` counts from its creation, and text only.
    let span = Span::current();
    let started = Instant::now();
    let mut first_output = true;
    let mut mark_output = || {
        if std::mem::take(&mut first_output) {
            span.record("ttft_ms", started.elapsed().as_millis() as u64);
        }
    };
    let mut stream = tokio::select! {
        _ = stop.token.cancelled() => return Ok(StepOutcome::Stopped { partial: String::new() }),
        // A provider may hold its answer's headers back while the model works.
        s = em.beating(model.provider.stream(req)) => s?,
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    // Signed blocks as the provider closes them; else the streamed pieces as one
    // unsigned block (shown after a reload, never sent back).
    let mut blocks = Vec::new();
    let mut thought = String::new();
    loop {
        let flush_at = em.flush_deadline();
        tokio::select! {
            biased;
            _ = stop.token.cancelled() => {
                em.flush().await;
                return Ok(StepOutcome::Stopped { partial: text });
            }
            _ = tokio::time::sleep_until(flush_at.unwrap_or_else(tokio::time::Instant::now)), if flush_at.is_some() => em.flush().await,
            _ = tokio::time::sleep_until(em.heartbeat_deadline()) => em.heartbeat().await,
            ev = stream.next() => match ev {
                None => return Err(LlmError::Transient { reason: "the model's stream ended early".into(), retry_after: None }),
                Some(Err(e)) => return Err(e),
                Some(Ok(StreamEvent::Text(t))) => {
                    mark_output();
                    timing.mark_first_token();
                    text.push_str(&t);
                    em.text(step, &t).await;
                }
                Some(Ok(StreamEvent::Thinking(t))) => {
                    mark_output();
                    timing.mark_first_token();
                    thought.push_str(&t);
                    em.thinking(step, &t).await;
                }
                Some(Ok(StreamEvent::Reasoned(block))) => blocks.push(block),
                Some(Ok(StreamEvent::ToolCall(call))) => {
                    mark_output();
                    calls.push(call);
                }
                Some(Ok(StreamEvent::Finished { usage, .. })) => {
                    Span::current()
                        .record("gen_ai.usage.input_tokens", usage.input)
                        .record("gen_ai.usage.output_tokens", usage.output);
                    em.flush().await;
                    if !em.log_full() {
                        if blocks.is_empty() && !thought.is_empty() {
                            blocks.push(Reasoning::Thinking { thinking: thought, signature: String::new() });
                        }
                        let said = Said { text, reasoning: blocks };
                        return Ok(StepOutcome::Done { said, calls, usage });
                    }
                }
            },
        }
        if em.log_full() {
            // The reply passed the per-run byte cap: stop it, keep what was said.
            return Ok(StepOutcome::Failed {
                error: ErrorBody {
                    code: "event_log_full".into(),
                    message: format!(
                        "the reply passed the limit of {} bytes of events per run and was stopped",
                        em.byte_cap()
                    ),
                },
                partial: text,
            });
        }
    }
}

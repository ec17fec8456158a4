//! Executes one claimed run: the agent loop (ARCHITECTURE §4 steps 3–5).
//!
//! build context → stream an LLM step (retrying transient errors inside the step)
//! → run the requested tools in parallel → checkpoint the step → repeat until the
//! model answers without tools or `max_steps`. Steps before `resume_step` were
//! checkpointed by an earlier attempt and are never executed again. No database
//! transaction is held across an LLM or tool call; nothing is written per token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use weft_llm::{ChatMessage, ChatRequest, LlmError, StreamEvent, ToolCall, Usage};
use weft_shared::api::{ErrorBody, ToolCallDto, UsageDto};
use weft_shared::event::EventKind;
use weft_shared::job::RunJob;
use weft_shared::store::{ClaimedRun, FinishOutcome, RunEnd, StepCheckpoint, ToolResult};
use weft_shared::time::now_ms;

use crate::context::to_chat_messages;
use crate::emitter::Emitter;
use crate::providers::ModelEntry;
use crate::{Inner, RunStop, StopReason};

/// The run's usage as the wire reports it.
fn usage_dto(u: Usage) -> UsageDto {
    UsageDto {
        input: u.input,
        output: u.output,
        cache_read: u.cache_read,
        reasoning: u.reasoning,
    }
}

/// How an attempt left its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Execution {
    /// The run ended here: its terminal event is published.
    Ended,
    /// The run goes on elsewhere (taken over, released at shutdown, or left to
    /// the reaper after a database error): no terminal event from this attempt.
    Abandoned,
}

/// The result of one step.
enum StepOutcome {
    Done {
        text: String,
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

struct RunState {
    usage: Usage,
    ttft_ms: Option<u64>,
    started: Instant,
    created_at: i64,
}

pub(crate) async fn execute(
    inner: Arc<Inner>,
    run: ClaimedRun,
    stop: Arc<RunStop>,
    seq_out: tokio::sync::oneshot::Sender<Arc<std::sync::atomic::AtomicU64>>,
) -> Execution {
    let cfg = &inner.deps.config.worker;
    let mut em = Emitter::new(
        inner.deps.bus.clone(),
        run.id.clone(),
        Duration::from_millis(cfg.coalesce_ms),
        run.last_seq,
        run.attempt > 1,
    )
    .await
    .with_byte_cap(inner.deps.config.events.max_bytes_per_run);
    let _ = seq_out.send(em.seq_handle());
    // A first attempt has no checkpoints to resume from.
    let checkpoint = if run.attempt > 1 {
        inner.deps.store.last_checkpoint(&run.id).await
    } else {
        Ok(0)
    };
    let resume_step = match checkpoint {
        Ok(step) => step + 1,
        Err(e) => {
            tracing::error!(run.id = %run.id, error = %e, "loading checkpoints failed; leaving the run to the reaper");
            return Execution::Abandoned;
        }
    };
    em.emit(EventKind::RunStarted {
        session_id: run.session_id.clone(),
        model: run.model.clone(),
        attempt: run.attempt,
        resume_step,
    })
    .await;
    let mut state = RunState {
        usage: Usage::default(),
        ttft_ms: None,
        started: Instant::now(),
        created_at: run.created_at,
    };

    if run.cancel_requested {
        return finish(
            &inner,
            &run,
            &mut em,
            RunEnd::Cancelled {
                partial: String::new(),
                step: resume_step,
            },
            &state,
        )
        .await;
    }
    let Some(model) = inner.providers.get(&run.model).cloned() else {
        let error = ErrorBody {
            code: "unknown_model".into(),
            message: format!("model {:?} is not configured", run.model),
        };
        return finish(
            &inner,
            &run,
            &mut em,
            RunEnd::Failed {
                error,
                partial: String::new(),
                step: resume_step,
            },
            &state,
        )
        .await;
    };
    let history = match inner
        .deps
        .store
        .context_messages(&run.session_id, cfg.hot_size)
        .await
    {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(run.id = %run.id, error = %e, "loading context failed; leaving the run to the reaper");
            return Execution::Abandoned;
        }
    };
    let mut messages = to_chat_messages(&run.mode, &history);
    let tools = if run.mode == "chat" {
        Vec::new()
    } else {
        inner.tools.specs()
    };

    let mut step = resume_step;
    let end = loop {
        if step > cfg.max_steps {
            let error = ErrorBody {
                code: "max_steps".into(),
                message: format!("the agent did not finish within {} steps", cfg.max_steps),
            };
            break RunEnd::Failed {
                error,
                partial: String::new(),
                step,
            };
        }
        let req = ChatRequest {
            model: model
                .config
                .model
                .clone()
                .unwrap_or_else(|| model.config.id.clone()),
            messages: messages.clone(),
            tools: tools.clone(),
            max_tokens: model.config.max_tokens,
            attempt: 1,
        };
        match run_step(&model, req, step, &mut em, &stop, &mut state).await {
            StepOutcome::Stopped { partial } => match stop.reason() {
                StopReason::Cancel => break RunEnd::Cancelled { partial, step },
                StopReason::Lost => return Execution::Abandoned,
                StopReason::Shutdown => {
                    release(&inner, &run).await;
                    return Execution::Abandoned;
                }
            },
            StepOutcome::Failed { error, partial } => {
                break RunEnd::Failed {
                    error,
                    partial,
                    step,
                };
            }
            StepOutcome::Done { text, calls, usage } => {
                state.usage.add(usage);
                em.emit(EventKind::Usage(usage_dto(state.usage))).await;
                if calls.is_empty() {
                    break RunEnd::Succeeded {
                        content: text,
                        step,
                    };
                }
                let Some(results) = run_tools(&inner, &calls, step, &mut em, &stop).await else {
                    match stop.reason() {
                        StopReason::Cancel => {
                            break RunEnd::Cancelled {
                                partial: text,
                                step,
                            };
                        }
                        StopReason::Lost => return Execution::Abandoned,
                        StopReason::Shutdown => {
                            release(&inner, &run).await;
                            return Execution::Abandoned;
                        }
                    }
                };
                let cp = StepCheckpoint {
                    step,
                    content: text.clone(),
                    tool_calls: calls
                        .iter()
                        .map(|c| ToolCallDto {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            args: c.args.clone(),
                        })
                        .collect(),
                    results: results.clone(),
                };
                match inner
                    .deps
                    .store
                    .checkpoint_step(&run.id, &inner.id, &run.session_id, &cp, em.seq())
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => return Execution::Abandoned, // ownership lost: the new owner carries on
                    Err(e) => {
                        tracing::error!(run.id = %run.id, error = %e, "checkpoint failed; leaving the run to the reaper");
                        return Execution::Abandoned;
                    }
                }
                messages.push(ChatMessage::Assistant {
                    content: text,
                    tool_calls: calls,
                });
                messages.extend(results.into_iter().map(|r| ChatMessage::Tool {
                    call_id: r.call_id,
                    name: r.name,
                    content: r.content,
                }));
                step += 1;
            }
        }
    };
    finish(&inner, &run, &mut em, end, &state).await
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

/// One step, retrying transient upstream errors with backoff (`retrying` events).
async fn run_step(
    model: &ModelEntry,
    mut req: ChatRequest,
    step: u32,
    em: &mut Emitter,
    stop: &RunStop,
    state: &mut RunState,
) -> StepOutcome {
    let mut retry = 0;
    loop {
        req.attempt = retry + 1;
        let error = match stream_once(model, req.clone(), step, em, stop, state).await {
            Ok(outcome) => return outcome,
            Err(error) => error,
        };
        // The provider's own text (URLs of internal endpoints and proxies, account
        // details) goes to the log; the user sees a generic message and a code.
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

/// One streamed LLM call. `Err` only for an upstream error worth classifying.
async fn stream_once(
    model: &ModelEntry,
    req: ChatRequest,
    step: u32,
    em: &mut Emitter,
    stop: &RunStop,
    state: &mut RunState,
) -> Result<StepOutcome, LlmError> {
    let mut stream = tokio::select! {
        _ = stop.token.cancelled() => return Ok(StepOutcome::Stopped { partial: String::new() }),
        s = model.provider.stream(req) => s?,
    };
    let mut text = String::new();
    let mut calls = Vec::new();
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
                    mark_first_token(state);
                    text.push_str(&t);
                    em.text(step, &t).await;
                }
                Some(Ok(StreamEvent::Thinking(t))) => {
                    mark_first_token(state);
                    em.thinking(step, &t).await;
                }
                Some(Ok(StreamEvent::ToolCall(call))) => calls.push(call),
                Some(Ok(StreamEvent::Finished { usage, .. })) => {
                    em.flush().await;
                    if !em.log_full() {
                        return Ok(StepOutcome::Done { text, calls, usage });
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

fn mark_first_token(state: &mut RunState) {
    if state.ttft_ms.is_none() {
        state.ttft_ms = Some((now_ms() - state.created_at).max(0) as u64);
    }
}

/// Run a step's tool calls in parallel. `None` when the run was stopped meanwhile.
async fn run_tools(
    inner: &Inner,
    calls: &[ToolCall],
    step: u32,
    em: &mut Emitter,
    stop: &RunStop,
) -> Option<Vec<ToolResult>> {
    for c in calls {
        em.emit(EventKind::ToolStart {
            step,
            call_id: c.id.clone(),
            name: c.name.clone(),
            args: c.args.clone(),
        })
        .await;
    }
    let ctx = weft_tools::ToolContext::default();
    let ctx = &ctx;
    let all = futures::future::join_all(calls.iter().map(|c| async move {
        let t0 = Instant::now();
        let out = inner.tools.call(&c.name, c.args.clone(), ctx).await;
        (c, out, t0.elapsed())
    }));
    let done = tokio::select! {
        _ = stop.token.cancelled() => return None,
        done = all => done,
    };
    let mut results = Vec::with_capacity(done.len());
    for (c, out, took) in done {
        let (ok, content) = match out {
            Ok(s) => (true, s),
            Err(e) => (false, format!("error: {e}")),
        };
        em.emit(EventKind::ToolEnd {
            step,
            call_id: c.id.clone(),
            name: c.name.clone(),
            ok,
            output: weft_tools::preview(&content),
            duration_ms: took.as_millis() as u64,
        })
        .await;
        results.push(ToolResult {
            call_id: c.id.clone(),
            name: c.name.clone(),
            content,
        });
    }
    Some(results)
}

/// Persist the end of the run, then announce it; start the follow-up run if any.
async fn finish(
    inner: &Inner,
    run: &ClaimedRun,
    em: &mut Emitter,
    end: RunEnd,
    state: &RunState,
) -> Execution {
    em.flush().await;
    let usage = usage_dto(state.usage);
    let outcome = match inner
        .deps
        .store
        .finish_run(
            run,
            &inner.id,
            &end,
            usage,
            state.ttft_ms,
            &inner.deps.config.limits.run_limits(),
        )
        .await
    {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(run.id = %run.id, error = %e, "finishing run failed; leaving it to the reaper");
            return Execution::Abandoned;
        }
    };
    let (message_id, followup) = match outcome {
        FinishOutcome::Finished {
            message_id,
            followup,
        } => (message_id, followup),
        FinishOutcome::Lost => return Execution::Abandoned,
        FinishOutcome::Deleted => {
            // Deleted with its session or user: nothing to save, but attached
            // clients must see the end, and the log must expire.
            em.emit(EventKind::Cancelled {
                by: "deleted".into(),
            })
            .await;
            em.retire(Duration::from_secs(inner.deps.config.events.retention_secs))
                .await;
            metrics::counter!("weft_runs_finished_total", "status" => "cancelled").increment(1);
            return Execution::Ended;
        }
    };
    let duration_ms = state.started.elapsed().as_millis() as u64;
    let (kind, status) = match end {
        RunEnd::Succeeded { .. } => (
            EventKind::Done {
                message_id: message_id.unwrap_or_default(),
                model: run.model.clone(),
                usage,
                ttft_ms: state.ttft_ms,
                duration_ms,
            },
            "succeeded",
        ),
        RunEnd::Failed { error, .. } => (EventKind::Error(error), "failed"),
        RunEnd::Cancelled { .. } => {
            let by = inner
                .deps
                .store
                .get_run_unscoped(&run.id)
                .await
                .ok()
                .and_then(|r| r.cancelled_by)
                .unwrap_or_else(|| "user".into());
            (EventKind::Cancelled { by }, "cancelled")
        }
    };
    em.emit(kind).await;
    em.retire(Duration::from_secs(inner.deps.config.events.retention_secs))
        .await;
    metrics::counter!("weft_runs_finished_total", "status" => status).increment(1);
    metrics::histogram!("weft_run_duration_seconds").record(state.started.elapsed().as_secs_f64());
    if let Some(ttft) = state.ttft_ms {
        metrics::histogram!("weft_run_ttft_seconds").record(ttft as f64 / 1000.0);
    }
    if let Some(next) = followup {
        inner.enqueue(RunJob::new(next)).await;
    }
    Execution::Ended
}

/// Shutdown deadline passed: give the run back so another worker resumes it.
async fn release(inner: &Inner, run: &ClaimedRun) {
    match inner.deps.store.release_run(&run.id, &inner.id).await {
        Ok(true) => inner.enqueue(RunJob::new(run.id.clone())).await,
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(run.id = %run.id, error = %e, "releasing run failed; the reaper will pick it up")
        }
    }
}

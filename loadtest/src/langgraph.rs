//! Driver for LangGraph's server API (`langgraph-api`), so the same closed loop and
//! the same measurements run against it: a user creates a thread, then per turn
//! `POST /threads/{id}/runs/stream` with `stream_mode: ["messages-tuple"]` and reads
//! the SSE to its end. Token chunks arrive as `event: messages` with
//! `data: [chunk, metadata]`; the text of the `AIMessageChunk`s is the reply.
//!
//! The graph it talks to (`loadtest/langgraph/graph.py`) is one node calling the
//! same mock LLM over the OpenAI wire, the equivalent of a one-step Weft run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::http_client;
use crate::procs::ProcWatch;
use crate::report::Report;
use crate::runner::{RunContext, mock_stats};
use crate::scenario::{Gauge, Params, report_head};
use crate::sse::{SseEnd, SseReader};
use crate::stats::Recorder;
use crate::turn::TurnPlan;

pub async fn run_langgraph(
    p: &Params,
    url: &str,
    assistant: &str,
    ctx: &RunContext,
) -> anyhow::Result<Report> {
    let http = http_client();
    let mut rep = report_head(p, "langgraph", &ctx.label);
    let watch = ProcWatch::start(&ctx.extra_pids);
    let rec = Arc::new(Recorder::default());
    let gauge = Arc::new(Gauge::default());
    let started = Instant::now();
    let stop_at = started + p.ramp + p.duration;
    let n = p.users.max(1);
    let mut tasks = Vec::new();
    for i in 0..n {
        let (http, rec, gauge, plan) = (http.clone(), rec.clone(), gauge.clone(), p.plan.clone());
        let (url, assistant) = (url.trim_end_matches('/').to_owned(), assistant.to_owned());
        let delay = p.ramp.mul_f64(i as f64 / n as f64);
        let timeout = p.turn_timeout;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let thread = match create_thread(&http, &url).await {
                Ok(t) => t,
                Err(e) => {
                    rec.error("create_thread");
                    tracing::warn!(error = %e, "creating a LangGraph thread failed");
                    return;
                }
            };
            while Instant::now() < stop_at {
                gauge.enter();
                let ok = turn(&http, &url, &assistant, &thread, &plan, timeout, &rec).await;
                gauge.leave();
                if !ok {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    rep.duration_s = started.elapsed().as_secs_f64();
    rep.processes = watch.finish();
    rep.peak_concurrent_runs = gauge.peak();
    rep.absorb(rec.take());
    if let Some(m) = &ctx.mock_url {
        rep.mock = mock_stats(&http, m).await;
    }
    Ok(rep)
}

async fn create_thread(http: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let r = http
        .post(format!("{url}/threads"))
        .json(&json!({}))
        .send()
        .await?;
    anyhow::ensure!(r.status().is_success(), "POST /threads: {}", r.status());
    let v: Value = r.json().await?;
    v["thread_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("no thread_id in {v}"))
}

/// One streamed run; true when it ended with the expected reply.
async fn turn(
    http: &reqwest::Client,
    url: &str,
    assistant: &str,
    thread: &str,
    plan: &TurnPlan,
    timeout: Duration,
    rec: &Recorder,
) -> bool {
    let body = json!({
        "assistant_id": assistant,
        "input": {"messages": [{"role": "user", "content": plan.text}]},
        "stream_mode": ["messages-tuple"],
    });
    let t0 = Instant::now();
    let r = match http
        .post(format!("{url}/threads/{thread}/runs/stream"))
        .json(&body)
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => {
            rec.error(crate::client::error_kind(&e));
            rec.with(|s| s.runs_failed += 1);
            return false;
        }
    };
    if !r.status().is_success() {
        rec.error(format!("http_{}", r.status().as_u16()));
        rec.with(|s| s.runs_failed += 1);
        return false;
    }
    let mut reader = SseReader::new(Box::pin(r.bytes_stream()));
    let mut text = String::new();
    let mut tokens = 0u64;
    let give_up = t0 + timeout;
    let outcome = loop {
        let left = give_up.saturating_duration_since(Instant::now());
        let ev = match tokio::time::timeout(left, reader.next()).await {
            Err(_) => break Err("turn_timeout".to_owned()),
            Ok(Err(SseEnd::Closed)) => break Ok(()),
            Ok(Err(SseEnd::Broken(_))) => break Err("stream_broken".to_owned()),
            Ok(Ok(ev)) => ev,
        };
        match ev.event.as_str() {
            "error" => break Err("run_error".to_owned()),
            "end" => break Ok(()),
            e if e.starts_with("messages") => {
                let Ok(v) = serde_json::from_str::<Value>(&ev.data) else {
                    continue;
                };
                let chunk = &v[0];
                let is_chunk = chunk["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("AIMessage"));
                let Some(delta) = chunk["content"]
                    .as_str()
                    .filter(|d| is_chunk && !d.is_empty())
                else {
                    continue;
                };
                let at = ev.at.unwrap_or_else(Instant::now);
                if text.is_empty() {
                    let ttft = at - t0;
                    rec.with(|s| {
                        s.ttft.push(ttft.as_micros() as i64);
                        s.ttft_overhead.push(Recorder::signed(ttft, plan.ttft));
                    });
                }
                tokens += delta.split_whitespace().count() as u64;
                let lag = Recorder::signed(at - t0, plan.nominal(tokens));
                rec.with(|s| s.lag.push(lag));
                text.push_str(delta);
            }
            _ => {}
        }
    };
    match outcome {
        Ok(()) if text == plan.expect => {
            rec.with(|s| {
                s.runs_ok += 1;
                s.turn.push(t0.elapsed().as_micros() as i64);
            });
            true
        }
        Ok(()) => {
            rec.error("reply_mismatch");
            rec.with(|s| {
                s.runs_failed += 1;
                s.incoherent_streams += 1;
            });
            false
        }
        Err(kind) => {
            rec.error(kind);
            rec.with(|s| s.runs_failed += 1);
            false
        }
    }
}

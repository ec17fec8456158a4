//! SSE attach: replay-then-live event streams of one run (docs/protocol.md,
//! "Re-attach").
//!
//! The merge itself is `weft_shared::bus::attach`; this module turns it into
//! `text/event-stream` (`id` = seq, `event` = type), sends `: ping` comments when
//! idle, ends after the terminal event, and covers one hole the bus cannot: a run
//! whose terminal state is in the database but whose terminal event never reached
//! the log (its worker died between commit and publish). After the stream has
//! been idle and the run has been over for a while, the client gets a terminal
//! event built from the database row — or `cancelled` when the row is gone (the
//! run was deleted with its session or user and nobody published its end).
//!
//! A stream also re-checks, every `http.stream_recheck_ms` (15 s) while frames
//! flow and at each idle tick, that the token which opened it still authenticates
//! its user: a revoked token (logout, `DELETE /v1/tokens/{id}`) or a deleted user
//! ends the stream, which otherwise kept sending for as long as the run lasted.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use weft_shared::bus::{AttachItem, attach};
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::{RunId, UserId};
use weft_shared::time::now_ms;
use weft_store::StoreError;

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::stream_limit::StreamPermit;

/// Keep-alive and database re-check interval.
pub const IDLE: Duration = Duration::from_secs(15);
/// How long a finished run may lack its terminal event before we synthesize it.
const TERMINAL_GRACE_MS: i64 = 5_000;

/// Counts an open SSE stream in `weft_sse_streams_active` until dropped.
pub(crate) struct Gauge;

impl Gauge {
    pub(crate) fn new() -> Gauge {
        metrics::gauge!("weft_sse_streams_active").increment(1.0);
        Gauge
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        metrics::gauge!("weft_sse_streams_active").decrement(1.0);
    }
}

fn to_event(frame: &Frame) -> Event {
    Event::default()
        .id(frame.seq.to_string())
        .event(&*frame.ty)
        .data(&*frame.json)
}

/// Who opened a stream: counted against the caps by `permit`, re-checked by
/// `token_hash` (the hash of the credential the request presented).
pub struct Opener {
    /// Held for its `Drop`: the stream counts against the caps until it ends.
    #[expect(dead_code, reason = "held for its Drop")]
    pub permit: StreamPermit,
    pub user: UserId,
    pub token_hash: String,
}

/// Open the event stream of `run` after `after`, or answer 410 when its log is gone.
pub async fn run_events(
    state: &AppState,
    opener: Opener,
    run: &RunId,
    terminal: bool,
    after: u64,
) -> ApiResult<Response> {
    let stream = event_stream(state, opener, run, terminal, after).await?;
    Ok(Sse::new(stream.map(Ok::<_, Infallible>)).into_response())
}

/// The events themselves, for SSE responses and `wait: true`.
///
/// `terminal`: the run had ended when the caller looked; only then can its log
/// have expired (a live run's log is kept while it runs). `opener` counts the
/// stream against its caps for as long as it is open and is re-checked.
pub async fn event_stream(
    state: &AppState,
    opener: Opener,
    run: &RunId,
    terminal: bool,
    after: u64,
) -> ApiResult<impl Stream<Item = Event> + Send + 'static> {
    if terminal && !state.bus.has_log(run).await.map_err(ApiError::internal)? {
        return Err(ApiError::EventsExpired);
    }
    let frames = attach(state.bus.clone(), run.clone(), after, IDLE)
        .await
        .map_err(ApiError::internal)?;
    struct St<S> {
        frames: std::pin::Pin<Box<S>>,
        state: AppState,
        run: RunId,
        last: u64,
        done: bool,
        _gauge: Gauge,
        opener: Opener,
        checked_at: Instant,
    }
    let st = St {
        frames: Box::pin(frames),
        state: state.clone(),
        run: run.clone(),
        last: after,
        done: false,
        _gauge: Gauge::new(),
        opener,
        checked_at: Instant::now(),
    };
    let recheck = Duration::from_millis(state.config().http.stream_recheck_ms);
    let shutdown = state.shutdown.clone();
    let stream = futures::stream::unfold(st, move |mut st| async move {
        if st.done {
            return None;
        }
        if st.checked_at.elapsed() >= recheck {
            st.checked_at = Instant::now();
            if !still_authorised(&st.state, &st.opener).await {
                tracing::info!(run.id = %st.run, "stream ended: its token was revoked");
                return None;
            }
        }
        match st.frames.next().await? {
            AttachItem::Frame(frame) => {
                st.last = frame.seq;
                st.done = frame.is_terminal();
                Some((to_event(&frame), st))
            }
            AttachItem::Idle => {
                match st.state.store.get_run_unscoped(&st.run).await {
                    Ok(rec) => {
                        let over_for = rec.finished_at.map(|t| now_ms() - t).unwrap_or(0);
                        if rec.status.is_terminal()
                            && over_for > TERMINAL_GRACE_MS
                            && let Some(ev) = weft_runs::terminal_event(&rec, st.last + 1)
                        {
                            st.done = true;
                            return Some((to_event(&Frame::encode(&ev)), st));
                        }
                    }
                    // Deleted with its session or user, and its end never reached
                    // the log (its worker died): end the stream, never ping for ever.
                    Err(StoreError::NotFound) => {
                        let ev = RunEvent {
                            run_id: st.run.clone(),
                            seq: st.last + 1,
                            ts: now_ms(),
                            kind: EventKind::Cancelled {
                                by: "deleted".into(),
                            },
                        };
                        st.done = true;
                        return Some((to_event(&Frame::encode(&ev)), st));
                    }
                    Err(_) => {}
                }
                Some((Event::default().comment("ping"), st))
            }
        }
    });
    Ok(stream.take_until(shutdown.cancelled_owned()))
}

/// Whether the stream's token still authenticates its user. A database error
/// keeps the stream (the next re-check decides).
pub(crate) async fn still_authorised(state: &AppState, opener: &Opener) -> bool {
    match state.store.authenticate(&opener.token_hash).await {
        Ok(Some(user)) => user.id == opener.user,
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(error = %e, "re-checking a stream's token failed");
            true
        }
    }
}

/// `?after=` of the SSE endpoints.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct AfterQuery {
    /// Replay events with `seq` greater than this (like `Last-Event-ID`); at most
    /// 2^53 - 1.
    pub after: Option<u64>,
}

/// Attach the caller to one of their runs, resuming after `after` ([`resume_point`]).
pub async fn attach_to_run(
    state: &AppState,
    user: &UserId,
    token_hash: String,
    run: &RunId,
    after: u64,
) -> ApiResult<Response> {
    let run = state.store.get_run(user, run).await?;
    let opener = Opener {
        permit: state.streams.admit(user, Some(&run.id))?,
        user: user.clone(),
        token_hash,
    };
    run_events(state, opener, &run.id, run.status.is_terminal(), after).await
}

/// The largest resume point accepted. Seqs count a run's events (plus one jump of
/// 1,000,000 per lost log), so they stay far below it; it is also the largest
/// integer a JavaScript client holds exactly. Anything bigger is refused, never
/// added to: `after + 1` overflowed near `u64::MAX`.
pub const MAX_RESUME_SEQ: u64 = (1 << 53) - 1;

/// `Last-Event-ID` header, else `?after=`, else 0; 400 when not an integer from 0
/// to [`MAX_RESUME_SEQ`].
pub fn resume_point(headers: &axum::http::HeaderMap, after: Option<u64>) -> ApiResult<u64> {
    let point = match headers.get("last-event-id") {
        Some(v) => v.to_str().ok().and_then(|s| s.trim().parse().ok()),
        None => Some(after.unwrap_or(0)),
    };
    point.filter(|n| *n <= MAX_RESUME_SEQ).ok_or_else(|| {
        ApiError::InvalidRequest(format!(
            "Last-Event-ID and ?after= must be integers from 0 to {MAX_RESUME_SEQ}"
        ))
    })
}

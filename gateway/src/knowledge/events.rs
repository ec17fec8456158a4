//! `GET /v1/knowledge/{id}/events`: a base's documents as they change, for its
//! page and `weft knowledge add` — no more reading the whole list every second
//! and a half while anything is being indexed.
//!
//! The worker and the upload / delete handlers send a notice per change
//! (`weft_shared::notice::knowledge`: a document added, each stage and every few
//! embedding batches of its ingestion, its end, a deletion); this stream passes
//! those of one base to one client. Notices have no log, so the client follows
//! the attach rule: the stream subscribes before it answers, and the client
//! reads the documents once it is open — a change is then either in that read
//! or on the stream. Anything that may have been missed (the bus reconnected,
//! the client fell behind) is a `resync`: read them again.
//!
//! Like a run's stream it counts against `limits.streams_per_user`, pings when
//! idle, and re-checks its token — and that the base is still the caller's to
//! see — at each idle tick; it ends when the base is deleted.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::broadcast::error::RecvError;
use weft_shared::api::KnowledgeEvent;
use weft_shared::bus::Notice;
use weft_shared::notice::knowledge_topic;

use crate::AppState;
use crate::auth::{Caller, PresentedToken};
use crate::error::ApiResult;
use crate::sse::{Gauge, IDLE, Opener, still_authorised};

fn to_event(notice: &Notice) -> Event {
    Event::default().event(&*notice.kind).data(&*notice.json)
}

fn resync() -> Event {
    let json = serde_json::to_string(&KnowledgeEvent::Resync).unwrap_or_default();
    Event::default()
        .event(KnowledgeEvent::Resync.name())
        .data(json)
}

/// The base's documents as they change (SSE): `document` (added, or its
/// ingestion moved on), `document_deleted`, `deleted` (the base; the stream
/// ends) and `resync` (read the documents again). Read the documents once the
/// stream is open: changes from then on are on it.
#[utoipa::path(get, path = "/v1/knowledge/{id}/events", operation_id = "knowledge_events",
    responses((status = 200, content_type = "text/event-stream", body = KnowledgeEvent),
        (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 429, body = weft_shared::api::ErrorEnvelope)))]
pub async fn events(
    State(state): State<AppState>,
    Caller(user): Caller,
    PresentedToken(token_hash): PresentedToken,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state.store.knowledge_base(&user, &id).await?;
    let opener = Opener {
        permit: state.streams.admit(&user.id, None)?,
        user: user.id.clone(),
        token_hash,
    };
    // Subscribed before the answer, so before the client reads the documents.
    let rx = state.bus.notices();
    struct St {
        rx: tokio::sync::broadcast::Receiver<Notice>,
        state: AppState,
        user: weft_store::AuthUser,
        base: String,
        topic: String,
        opener: Opener,
        checked_at: Instant,
        done: bool,
        _gauge: Gauge,
    }
    let st = St {
        rx,
        state: state.clone(),
        user,
        topic: knowledge_topic(&id),
        base: id,
        opener,
        checked_at: Instant::now(),
        done: false,
        _gauge: Gauge::new(),
    };
    let recheck = Duration::from_millis(state.config().http.stream_recheck_ms);
    let stream = futures::stream::unfold(st, move |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            let got = tokio::time::timeout(IDLE, st.rx.recv()).await;
            let idle = got.is_err();
            if idle || st.checked_at.elapsed() >= recheck {
                st.checked_at = Instant::now();
                if !still_authorised(&st.state, &st.opener).await
                    || matches!(
                        st.state.store.knowledge_base(&st.user, &st.base).await,
                        Err(weft_store::StoreError::NotFound)
                    )
                {
                    return None;
                }
            }
            match got {
                Err(_) => return Some((Event::default().comment("ping"), st)),
                Ok(Ok(n)) if n.is_resync() => return Some((resync(), st)),
                Ok(Ok(n)) if *n.topic == *st.topic => {
                    st.done = matches!(
                        serde_json::from_str(&n.json),
                        Ok(KnowledgeEvent::Deleted { .. })
                    );
                    return Some((to_event(&n), st));
                }
                Ok(Ok(_)) => continue,
                Ok(Err(RecvError::Lagged(_))) => return Some((resync(), st)),
                Ok(Err(RecvError::Closed)) => return None,
            }
        }
    });
    let stream = stream.take_until(state.shutdown.clone().cancelled_owned());
    Ok(Sse::new(stream.map(Ok::<_, Infallible>)).into_response())
}

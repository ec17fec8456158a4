//! One run's event stream, exactly once, across dropped connections.
//!
//! The stream starts with the send itself (`stream: true`) or with an attach to a
//! known run. Every event's `seq` is remembered; when the connection ends without
//! a terminal event (reset, proxy timeout, gateway restart) or goes silent past
//! the keep-alive interval, the stream re-attaches with `Last-Event-ID` and drops
//! any event it has already yielded. If the drop happened before the first event
//! (so the run id is unknown), the send is repeated with the same
//! `Idempotency-Key`, which the gateway answers with the same run. A message queued
//! behind another run (`status: queued`) follows that run to its end, then
//! attaches to the session's follow-up run.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use weft_wire::api::{SendAccepted, SendMessageRequest};
use weft_wire::event::RunEvent;

use crate::api::Gateway;
use crate::attach::Upload;
use crate::error::{ClientError, Result};

/// The gateway pings every 15 s; silence for this long means the connection is dead.
const SILENCE: Duration = Duration::from_secs(45);
/// Re-attach attempts before giving up (with back-off, about a minute in all).
const MAX_RECONNECTS: u32 = 30;

type Events = Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, String>> + Send>>;

enum Origin {
    Send {
        session: String,
        req: SendMessageRequest,
        /// Read once, re-sent as they were if the send is repeated.
        files: Vec<Upload>,
        key: String,
    },
    Run,
}

pub struct RunStream {
    gw: Gateway,
    origin: Origin,
    run_id: Option<String>,
    /// A run we follow only to learn when our queued message starts.
    waiting_behind: Option<String>,
    /// The gateway answered the send with success (the message is in).
    sent: bool,
    last_seq: u64,
    events: Option<Events>,
    failures: u32,
    finished: bool,
    /// How many times the stream was re-opened (for tests and the status line).
    pub reattached: u32,
}

impl RunStream {
    /// Send a message (with `files`, if any) and stream the run it starts.
    pub fn send(
        gw: &Gateway,
        session: &str,
        req: SendMessageRequest,
        files: Vec<Upload>,
    ) -> RunStream {
        let req = SendMessageRequest {
            stream: true,
            wait: false,
            ..req
        };
        let origin = Origin::Send {
            session: session.to_string(),
            req,
            files,
            key: uuid::Uuid::new_v4().to_string(),
        };
        RunStream {
            gw: gw.clone(),
            origin,
            run_id: None,
            waiting_behind: None,
            sent: false,
            last_seq: 0,
            events: None,
            failures: 0,
            finished: false,
            reattached: 0,
        }
    }

    /// Attach to a run's events after `after`.
    pub fn attach(gw: &Gateway, run_id: &str, after: u64) -> RunStream {
        RunStream {
            gw: gw.clone(),
            origin: Origin::Run,
            run_id: Some(run_id.into()),
            waiting_behind: None,
            sent: false,
            last_seq: after,
            events: None,
            failures: 0,
            finished: false,
            reattached: 0,
        }
    }

    pub fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// The gateway took the message: it started a run or queued the message.
    /// Before that a failure means nothing was sent (a refusal, say).
    pub fn accepted(&self) -> bool {
        self.sent || self.run_id.is_some()
    }

    /// The next new event, `None` after the terminal one.
    pub async fn next(&mut self) -> Result<Option<RunEvent>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if self.events.is_none() {
                self.connect().await?;
                continue;
            }
            let events = self.events.as_mut().expect("connected");
            let item = match tokio::time::timeout(SILENCE, events.next()).await {
                Ok(Some(Ok(ev))) => ev,
                Ok(Some(Err(_))) | Ok(None) | Err(_) => {
                    self.events = None; // dropped or silent: re-attach
                    self.reattached += 1;
                    continue;
                }
            };
            self.failures = 0;
            let Ok(ev) = crate::clean::decode::<RunEvent>(&item.data) else {
                continue;
            };
            if self.waiting_behind.is_some() {
                if ev.kind.is_terminal() {
                    self.follow_queued().await?;
                } else {
                    self.last_seq = ev.seq;
                }
                continue;
            }
            if ev.seq <= self.last_seq {
                continue;
            }
            self.last_seq = ev.seq;
            self.run_id.get_or_insert_with(|| ev.run_id.0.clone());
            self.finished = ev.kind.is_terminal();
            return Ok(Some(ev));
        }
    }

    /// The run we waited behind ended: our message is in the session's next run.
    async fn follow_queued(&mut self) -> Result<()> {
        let Origin::Send { session, .. } = &self.origin else {
            unreachable!("only sends queue")
        };
        let s = self.gw.session(session).await?;
        self.waiting_behind = None;
        self.events = None;
        self.last_seq = 0;
        match s.active_run_id {
            Some(run) => self.run_id = Some(run),
            None => {
                return Err(ClientError::Local(
                    "the queued message did not start a run".into(),
                ));
            }
        }
        Ok(())
    }

    async fn connect(&mut self) -> Result<()> {
        loop {
            match self.open().await {
                Ok(events) => {
                    self.events = Some(events);
                    return Ok(());
                }
                Err(e) if e.is_transient() && self.failures < MAX_RECONNECTS => {
                    self.failures += 1;
                    let backoff = Duration::from_millis(100 * u64::from(self.failures.min(20)));
                    tokio::time::sleep(backoff).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn open(&mut self) -> Result<Events> {
        let resp = match (&self.origin, &self.run_id, &self.waiting_behind) {
            (_, _, Some(active)) => self.gw.run_events(active, self.last_seq).await?,
            (_, Some(run), None) => self.gw.run_events(run, self.last_seq).await?,
            (
                Origin::Send {
                    session,
                    req,
                    files,
                    key,
                },
                None,
                None,
            ) => {
                let resp = self.gw.send_streaming(session, req, files, key).await?;
                self.sent = true;
                resp
            }
            (Origin::Run, None, None) => unreachable!("attach always has a run id"),
        };
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let accepted: SendAccepted = resp
                .json()
                .await
                .map_err(|e| ClientError::Local(format!("unexpected answer to a send: {e}")))?;
            match (accepted.run_id, accepted.active_run_id) {
                (Some(run), _) => self.run_id = Some(run),
                (None, Some(active)) => {
                    self.waiting_behind = Some(active.clone());
                    self.last_seq = 0;
                    return Box::pin(self.gw.run_events(&active, 0))
                        .await
                        .map(to_events);
                }
                (None, None) => {
                    return Err(ClientError::Local(
                        "the gateway accepted the message but named no run".into(),
                    ));
                }
            }
            let run = self.run_id.clone().expect("set above");
            return self.gw.run_events(&run, self.last_seq).await.map(to_events);
        }
        Ok(to_events(resp))
    }
}

fn to_events(resp: reqwest::Response) -> Events {
    Box::pin(
        resp.bytes_stream()
            .eventsource()
            .map(|r| r.map_err(|e| e.to_string())),
    )
}

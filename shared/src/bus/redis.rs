//! Redis bus for distributed mode.
//!
//! Key layout (prefix `P`, default `weft:`; `{…}` is a cluster hash tag):
//! * `P run:{<run>}:events` — Stream, one entry per event, entry id `0-<seq>` so a
//!   duplicate publish of a seq is refused by Redis itself; capped (`MAXLEN ~`),
//!   7-day safety TTL while running, `events.retention_secs` after the run ends.
//! * `P run:{<run>}` — pub/sub channel carrying the same JSON live.
//! * `P cancel` — pub/sub channel of run ids to cancel; every process listens.
//! * `P notice` — pub/sub channel of [`Notice`]s; every process listens and hands
//!   them to its local watchers. They are few (a document's ingestion sends a
//!   handful), so one channel for all topics costs a process nothing that a
//!   subscription per topic would save, and keeps the one connection's set fixed.
//!
//! Each process holds ONE pub/sub connection (never one per SSE client): a reader
//! task fans messages out in-process through broadcast channels and resubscribes
//! after a reconnect, then tells every local subscriber to re-read the log
//! (a `seq` 0 "resync" frame), so nothing published during the outage is missed;
//! notice watchers get [`Notice::resync`] and read their state again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubSink};
use tokio::sync::broadcast;

use super::{Bus, BusError, Notice, Result, Subscription};
use crate::event::Frame;
use crate::ids::RunId;

const RUNNING_TTL_SECS: i64 = 7 * 24 * 3600;

struct Shared {
    prefix: String,
    channels: Mutex<HashMap<String, broadcast::Sender<Frame>>>,
    sink: tokio::sync::Mutex<Option<PubSubSink>>,
    cancel: broadcast::Sender<RunId>,
    notices: broadcast::Sender<Notice>,
}

pub struct RedisBus {
    conn: ConnectionManager,
    shared: Arc<Shared>,
    max_len: u64,
}

/// A connection manager whose responses may take up to 5 s (the redis-rs default of
/// 500 ms turns a busy Redis into spurious failures).
pub async fn connection_manager(client: &redis::Client) -> redis::RedisResult<ConnectionManager> {
    let cfg = ConnectionManagerConfig::new()
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_connection_timeout(Some(Duration::from_secs(5)));
    client.get_connection_manager_with_config(cfg).await
}

impl RedisBus {
    pub async fn connect(url: &str, prefix: &str, max_len: u64) -> Result<RedisBus> {
        let client = redis::Client::open(url)?;
        let conn = connection_manager(&client).await?;
        let shared = Arc::new(Shared {
            prefix: prefix.to_string(),
            channels: Mutex::default(),
            sink: tokio::sync::Mutex::new(None),
            cancel: broadcast::channel(1024).0,
            notices: broadcast::channel(super::NOTICE_BUFFER).0,
        });
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(pubsub_loop(client, shared.clone(), Some(ready_tx)));
        // Wait for the first subscription so cancel requests are not missed at start.
        let _ = tokio::time::timeout(Duration::from_secs(5), ready_rx).await;
        Ok(RedisBus {
            conn,
            shared,
            max_len,
        })
    }

    fn stream_key(&self, run: &RunId) -> String {
        format!("{}run:{{{}}}:events", self.shared.prefix, run.0)
    }
}

fn channel_name(prefix: &str, run: &RunId) -> String {
    format!("{prefix}run:{{{}}}", run.0)
}

fn cancel_channel(prefix: &str) -> String {
    format!("{prefix}cancel")
}

fn notice_channel(prefix: &str) -> String {
    format!("{prefix}notice")
}

/// Owns the process's single pub/sub connection; reconnects forever.
async fn pubsub_loop(
    client: redis::Client,
    shared: Arc<Shared>,
    mut ready: Option<tokio::sync::oneshot::Sender<()>>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match client.get_async_pubsub().await {
            Ok(pubsub) => {
                let (mut sink, mut stream) = pubsub.split();
                let mut ok = sink.subscribe(cancel_channel(&shared.prefix)).await.is_ok();
                ok &= sink.subscribe(notice_channel(&shared.prefix)).await.is_ok();
                let names: Vec<String> = shared
                    .channels
                    .lock()
                    .expect("bus lock")
                    .keys()
                    .cloned()
                    .collect();
                for name in &names {
                    ok &= sink.subscribe(name).await.is_ok();
                }
                if ok {
                    backoff = Duration::from_millis(100);
                    *shared.sink.lock().await = Some(sink);
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                    resync_all(&shared);
                    while let Some(msg) = stream.next().await {
                        dispatch(&shared, msg);
                    }
                    *shared.sink.lock().await = None;
                    tracing::warn!("redis pub/sub connection lost; reconnecting");
                }
            }
            Err(e) => tracing::warn!(error = %e, "redis pub/sub connect failed"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// Tell every local subscriber to re-read its log (frames may have been missed).
fn resync_all(shared: &Shared) {
    let resync = Frame {
        seq: 0,
        ty: Arc::from("resync"),
        json: Arc::from(""),
    };
    for tx in shared.channels.lock().expect("bus lock").values() {
        let _ = tx.send(resync.clone());
    }
    let _ = shared.notices.send(Notice::resync());
}

fn dispatch(shared: &Shared, msg: redis::Msg) {
    let channel = msg.get_channel_name();
    let Ok(payload) = msg.get_payload::<String>() else {
        return;
    };
    if channel == cancel_channel(&shared.prefix) {
        if let Some(run) = RunId::parse(&payload) {
            let _ = shared.cancel.send(run);
        }
        return;
    }
    if channel == notice_channel(&shared.prefix) {
        if let Some(notice) = Notice::decode(&payload) {
            let _ = shared.notices.send(notice);
        }
        return;
    }
    let channels = shared.channels.lock().expect("bus lock");
    if let (Some(tx), Some(frame)) = (channels.get(channel), Frame::from_json(&payload)) {
        let _ = tx.send(frame);
    }
}

struct Unsubscribe {
    shared: Arc<Shared>,
    channel: String,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        let shared = self.shared.clone();
        let channel = std::mem::take(&mut self.channel);
        {
            let mut map = shared.channels.lock().expect("bus lock");
            // `Subscription.rx` is declared before the guard, so it is already dropped.
            match map.get(&channel) {
                Some(tx) if tx.receiver_count() == 0 => {
                    map.remove(&channel);
                }
                _ => return,
            }
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if shared
                    .channels
                    .lock()
                    .expect("bus lock")
                    .contains_key(&channel)
                {
                    return; // someone subscribed again meanwhile
                }
                if let Some(sink) = shared.sink.lock().await.as_mut() {
                    let _ = sink.unsubscribe(&channel).await;
                }
            });
        }
    }
}

#[async_trait::async_trait]
impl Bus for RedisBus {
    async fn publish(&self, run: &RunId, frame: &Frame) -> Result<()> {
        let key = self.stream_key(run);
        let mut conn = self.conn.clone();
        let added: redis::RedisResult<String> = redis::cmd("XADD")
            .arg(&key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.max_len)
            .arg(format!("0-{}", frame.seq))
            .arg("d")
            .arg(&*frame.json)
            .query_async(&mut conn)
            .await;
        match added {
            Ok(_) => {}
            // Already logged (a duplicate publish): the stream's own id check said so.
            Err(e) if e.to_string().contains("equal or smaller") => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        let mut pipe = redis::pipe();
        pipe.publish(channel_name(&self.shared.prefix, run), &*frame.json)
            .ignore();
        if frame.seq == 1 {
            pipe.expire(&key, RUNNING_TTL_SECS).ignore();
        }
        pipe.query_async::<()>(&mut conn).await?;
        Ok(())
    }

    async fn read(&self, run: &RunId, after: u64, limit: usize) -> Result<Vec<Frame>> {
        let mut conn = self.conn.clone();
        let reply: redis::streams::StreamRangeReply = conn
            .xrange_count(
                self.stream_key(run),
                format!("0-{}", after.saturating_add(1)),
                "+",
                limit,
            )
            .await?;
        Ok(reply
            .ids
            .iter()
            .filter_map(|entry| entry.get::<String>("d"))
            .filter_map(|json| Frame::from_json(&json))
            .collect())
    }

    async fn last_seq(&self, run: &RunId) -> Result<u64> {
        let mut conn = self.conn.clone();
        let reply: redis::streams::StreamRangeReply = conn
            .xrevrange_count(self.stream_key(run), "+", "-", 1)
            .await?;
        Ok(reply
            .ids
            .first()
            .and_then(|e| e.id.split_once('-'))
            .and_then(|(_, seq)| seq.parse().ok())
            .unwrap_or(0))
    }

    async fn has_log(&self, run: &RunId) -> Result<bool> {
        let mut conn = self.conn.clone();
        Ok(conn.exists(self.stream_key(run)).await?)
    }

    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: () = conn
            .expire(self.stream_key(run), retention.as_secs().max(1) as i64)
            .await?;
        Ok(())
    }

    async fn subscribe(&self, run: &RunId) -> Result<Subscription> {
        let channel = channel_name(&self.shared.prefix, run);
        let (rx, fresh) = {
            let mut map = self.shared.channels.lock().expect("bus lock");
            match map.get(&channel) {
                Some(tx) => (tx.subscribe(), false),
                None => {
                    let (tx, rx) = broadcast::channel(super::LIVE_BUFFER);
                    map.insert(channel.clone(), tx);
                    (rx, true)
                }
            }
        };
        if fresh {
            // Subscribed before the caller reads the log: nothing can slip between.
            // If the connection is down, the reader resubscribes and resyncs on reconnect.
            if let Some(sink) = self.shared.sink.lock().await.as_mut() {
                sink.subscribe(&channel).await?;
            }
        }
        Ok(Subscription {
            _guard: Box::new(Unsubscribe {
                shared: self.shared.clone(),
                channel,
            }),
            rx,
        })
    }

    async fn request_cancel(&self, run: &RunId) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = conn
            .publish(cancel_channel(&self.shared.prefix), &run.0)
            .await?;
        Ok(())
    }

    fn cancel_requests(&self) -> broadcast::Receiver<RunId> {
        self.shared.cancel.subscribe()
    }

    async fn notify(&self, notice: &Notice) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = conn
            .publish(notice_channel(&self.shared.prefix), notice.encode())
            .await?;
        Ok(())
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.shared.notices.subscribe()
    }

    async fn ping(&self) -> Result<()> {
        let mut conn = self.conn.clone();
        let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
        if pong != "PONG" {
            return Err(BusError::Other(format!("unexpected PING reply {pong}")));
        }
        Ok(())
    }
}

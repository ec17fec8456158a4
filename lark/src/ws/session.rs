//! One live connection: the read loop, the ping loop, the writer, and acks.
//!
//! All writes go through one writer task fed by a channel, so pings, acks of
//! events and (delayed) acks of card callbacks never contend for the socket.
//! The read loop doubles as the liveness watchdog: any inbound message resets it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use base64::Engine;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::config::{ClientConfigWire, ServerConfig};
use super::discovery::{Endpoint, Socket};
use super::reassembly::{Fragment, FragmentCache};
use super::{CardActionDelivery, Delivery, EventAck, InboundEvent, WsConfig};
use crate::event::EventEnvelope;
use crate::frame::{Frame, METHOD_CONTROL, METHOD_DATA, header, kind};

/// Why a session ended.
#[derive(Debug)]
pub(crate) enum SessionEnd {
    Cancelled,
    Closed(String),
    LivenessTimeout,
}

pub(crate) struct Session<'a> {
    pub config: &'a WsConfig,
    pub server: Arc<Mutex<ServerConfig>>,
    pub deliveries: &'a mpsc::UnboundedSender<Delivery>,
}

impl Session<'_> {
    pub(crate) async fn run(
        &self,
        socket: Socket,
        endpoint: &Endpoint,
        cancel: &CancellationToken,
    ) -> SessionEnd {
        let (mut sink, mut stream) = socket.split();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Frame>();
        let stop = cancel.child_token();
        let _stop_guard = stop.clone().drop_guard();

        let writer_stop = stop.clone();
        tokio::spawn(async move {
            loop {
                let frame = tokio::select! {
                    _ = writer_stop.cancelled() => break,
                    frame = out_rx.recv() => match frame { Some(f) => f, None => break },
                };
                if let Err(e) = sink.send(Message::Binary(frame.encode_vec().into())).await {
                    tracing::warn!(error = %e, "lark ws write failed");
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let config_changed = Arc::new(Notify::new());
        let pinger = ping_loop(
            out_tx.clone(),
            endpoint.service_id,
            self.server.clone(),
            config_changed.clone(),
            stop.clone(),
        );
        tokio::spawn(pinger);

        let mut fragments = FragmentCache::new(self.config.fragment_ttl);
        loop {
            let watchdog =
                self.server.lock().expect("config lock").ping_interval + self.config.pong_timeout;
            let next = tokio::select! {
                _ = cancel.cancelled() => return SessionEnd::Cancelled,
                next = tokio::time::timeout(watchdog, stream.next()) => next,
            };
            let message = match next {
                Err(_) => return SessionEnd::LivenessTimeout,
                Ok(None) => return SessionEnd::Closed("stream ended".into()),
                Ok(Some(Err(e))) => return SessionEnd::Closed(format!("read failed: {e}")),
                Ok(Some(Ok(message))) => message,
            };
            match message {
                Message::Binary(bytes) => match Frame::decode_lenient(&bytes) {
                    Ok(frame) => self.handle_frame(frame, &mut fragments, &out_tx, &config_changed),
                    Err(e) => tracing::warn!(error = %e, "lark ws frame undecodable"),
                },
                Message::Text(_) => tracing::warn!("lark ws text message ignored"),
                Message::Close(frame) => {
                    return SessionEnd::Closed(format!("close frame: {frame:?}"));
                }
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        }
    }

    fn handle_frame(
        &self,
        frame: Frame,
        fragments: &mut FragmentCache,
        out: &mpsc::UnboundedSender<Frame>,
        config_changed: &Notify,
    ) {
        match frame.method {
            METHOD_CONTROL => self.handle_control(&frame, config_changed),
            METHOD_DATA => self.handle_data(frame, fragments, out),
            other => tracing::warn!(method = other, "lark ws frame with unknown method"),
        }
    }

    fn handle_control(&self, frame: &Frame, config_changed: &Notify) {
        if frame.kind() != kind::PONG || frame.payload_bytes().is_empty() {
            return;
        }
        match serde_json::from_slice::<ClientConfigWire>(frame.payload_bytes()) {
            Ok(wire) => {
                let mut server = self.server.lock().expect("config lock");
                server.apply(&wire);
                tracing::debug!(config = ?*server, "lark ws client config updated by pong");
                config_changed.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "lark ws pong config unreadable"),
        }
    }

    fn handle_data(
        &self,
        frame: Frame,
        fragments: &mut FragmentCache,
        out: &mpsc::UnboundedSender<Frame>,
    ) {
        let received = Instant::now();
        let message_id = frame.header(header::MESSAGE_ID).unwrap_or("").to_owned();
        let sum = frame
            .header(header::SUM)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        let seq = frame
            .header(header::SEQ)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let payload = match fragments.offer(
            &message_id,
            sum,
            seq,
            frame.payload.clone().unwrap_or_default(),
        ) {
            Fragment::Complete(payload) => payload,
            Fragment::Pending => return,
            Fragment::Invalid => {
                tracing::warn!(%message_id, sum, seq, "lark ws fragment header out of range");
                return;
            }
        };
        if frame.kind() != kind::EVENT {
            // The SDKs drop old-style `type=card` frames without acking; so do we.
            tracing::debug!(
                kind = frame.kind(),
                "lark ws data frame of unhandled type dropped"
            );
            return;
        }
        let trace_id = frame.header(header::TRACE_ID).unwrap_or("").to_owned();
        let envelope = match EventEnvelope::parse(&payload) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::warn!(%message_id, error = %e, "lark ws event payload unreadable");
                let _ = out.send(ack(frame, received, 500, None));
                return;
            }
        };
        tracing::debug!(
            event.id = %envelope.header.event_id,
            event.kind = %envelope.header.event_type,
            %trace_id,
            "lark ws event received"
        );
        match envelope.card_action() {
            Some(Ok(action)) => {
                let (responder, response) = oneshot::channel();
                let delivery = CardActionDelivery {
                    envelope,
                    action,
                    responder,
                };
                let deadline = self.config.card_response_deadline;
                let out = out.clone();
                tokio::spawn(async move {
                    let data = match tokio::time::timeout(deadline, response).await {
                        Ok(Ok(response)) => serde_json::to_vec(&response).ok(),
                        Ok(Err(_)) => None,
                        Err(_) => {
                            tracing::warn!(
                                "lark card callback answered too late; acked without response"
                            );
                            None
                        }
                    };
                    let _ = out.send(ack(frame, received, 200, data));
                });
                let _ = self.deliveries.send(Delivery::CardAction(delivery));
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "lark card action unreadable");
                let _ = out.send(ack(frame, received, 500, None));
            }
            None => {
                // The consumer acks once the event is safe; until then Lark
                // would deliver it again.
                let ack = EventAck::new(frame, received, out.clone());
                let _ = self.deliveries.send(Delivery::Event(InboundEvent {
                    envelope,
                    trace_id,
                    ack,
                }));
            }
        }
    }
}

/// The ack: the same frame with every header echoed, `biz_rt` added, and a JSON
/// response payload. `data` is the handler's JSON result, base64-encoded.
pub(super) fn ack(mut frame: Frame, received: Instant, code: u16, data: Option<Vec<u8>>) -> Frame {
    let biz_rt = received.elapsed().as_millis();
    frame.set_header(header::BIZ_RT, biz_rt.to_string());
    let body = match data {
        Some(data) => {
            json!({"code": code, "data": base64::engine::general_purpose::STANDARD.encode(data)})
        }
        None => json!({"code": code}),
    };
    frame.payload = Some(body.to_string().into_bytes());
    frame
}

/// Pings on connect and then every `PingInterval`, re-timing when a pong changes it.
async fn ping_loop(
    out: mpsc::UnboundedSender<Frame>,
    service: i32,
    server: Arc<Mutex<ServerConfig>>,
    config_changed: Arc<Notify>,
    stop: CancellationToken,
) {
    let mut last_ping = tokio::time::Instant::now();
    if out.send(Frame::ping(service)).is_err() {
        return;
    }
    loop {
        let interval = server.lock().expect("config lock").ping_interval;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = config_changed.notified() => continue,
            _ = tokio::time::sleep_until(last_ping + interval) => {
                last_ping = tokio::time::Instant::now();
                if out.send(Frame::ping(service)).is_err() {
                    return;
                }
            }
        }
    }
}

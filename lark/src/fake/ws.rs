//! The fake's long-connection side: discovery, handshake, and one task per socket.
//!
//! Inbound frames are decoded strictly (missing proto2 required fields are recorded
//! in `Records::bad_frames` and the frame is dropped, as gogo's `Unmarshal` would
//! fail). Pings get pongs unless the connection was silenced; data frames are
//! matched against pending pushes as acks.

use std::time::Instant;

use axum::Json;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::{CloseKind, ConnCommand, ConnEntry, DiscoveryBehaviour, FakeLark, HandshakeBehaviour};
use crate::frame::{Frame, Header, METHOD_CONTROL, METHOD_DATA, header, kind};

/// Service id put in endpoint URLs (clients echo it in pings).
const SERVICE_ID: i32 = 33554678;
/// Auth code for a missing or expired ticket (inferred: retryable 514).
const AUTH_TICKET_INVALID: i64 = 1000040351;
const AUTH_EXCEED_CONN_LIMIT: i64 = 1000040350;

pub(super) fn router() -> axum::Router<FakeLark> {
    axum::Router::new()
        .route("/callback/ws/endpoint", post(discovery))
        .route("/ws/v2", any(handshake))
}

#[derive(Deserialize)]
struct DiscoveryBody {
    #[serde(rename = "AppID", default)]
    app_id: String,
    #[serde(rename = "AppSecret", default)]
    app_secret: String,
}

async fn discovery(
    State(fake): State<FakeLark>,
    headers: HeaderMap,
    Json(body): Json<DiscoveryBody>,
) -> Response {
    let mut state = fake.state();
    state.records.discoveries += 1;
    let behaviour = state.discovery.clone();
    fake.notify();
    match behaviour {
        DiscoveryBehaviour::HttpStatus(status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, "system busy").into_response();
        }
        DiscoveryBehaviour::Code { code, msg } => {
            return Json(json!({"code": code, "msg": msg})).into_response();
        }
        DiscoveryBehaviour::Normal => {}
    }
    let config = fake.config();
    if body.app_id != config.app_id || body.app_secret != config.app_secret {
        // Inferred: the real code for bad credentials is not documented; any code
        // other than 0, 1 and 1000040343 is fatal to the SDKs.
        return Json(json!({"code": 10014, "msg": "app secret invalid"})).into_response();
    }
    let ticket = uuid::Uuid::new_v4().simple().to_string();
    state
        .tickets
        .insert(ticket.clone(), Instant::now() + config.ticket_ttl);
    let device_id = state.next_id;
    state.next_id += 1;
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| fake.base_url().trim_start_matches("http://").to_owned());
    let url = format!(
        "ws://{host}/ws/v2?fpid=493&aid=552564&device_id={device_id}&access_key=fake&service_id={SERVICE_ID}&ticket={ticket}"
    );
    Json(json!({"code": 0, "msg": "", "data": {"URL": url, "ClientConfig": config.client_config}}))
        .into_response()
}

#[derive(Deserialize)]
struct HandshakeQuery {
    #[serde(default)]
    ticket: String,
    #[serde(default)]
    service_id: Option<i32>,
}

fn reject(status: u16, msg: &str, auth_code: i64) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert("Handshake-Status", HeaderValue::from(status));
    headers.insert(
        "Handshake-Msg",
        HeaderValue::from_str(msg).unwrap_or(HeaderValue::from_static("rejected")),
    );
    headers.insert("Handshake-Autherrcode", HeaderValue::from(auth_code));
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
    (code, headers, msg.to_owned()).into_response()
}

async fn handshake(
    State(fake): State<FakeLark>,
    Query(query): Query<HandshakeQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let (conn_id, rx) = {
        let mut state = fake.state();
        let rejection = match &state.handshake {
            HandshakeBehaviour::Reject {
                status,
                msg,
                auth_code,
            } => Some((*status, msg.clone(), *auth_code)),
            HandshakeBehaviour::Accept => None,
        };
        let ticket_ok = state
            .tickets
            .remove(&query.ticket)
            .is_some_and(|exp| exp > Instant::now());
        let rejection = rejection
            .or_else(|| {
                (!ticket_ok).then(|| (514, "ticket invalid".to_owned(), AUTH_TICKET_INVALID))
            })
            .or_else(|| {
                (state.conns.len() >= fake.config().max_connections).then(|| {
                    (
                        514,
                        "exceed connection limit".to_owned(),
                        AUTH_EXCEED_CONN_LIMIT,
                    )
                })
            });
        if let Some((status, msg, auth_code)) = rejection {
            state.records.handshakes_rejected += 1;
            drop(state);
            fake.notify();
            return reject(status, &msg, auth_code);
        }
        let conn_id = state.next_id;
        state.next_id += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        let service_id = query.service_id.unwrap_or(SERVICE_ID);
        state.conns.insert(
            conn_id,
            ConnEntry {
                tx,
                service_id,
                silenced: false,
            },
        );
        state.records.connections_opened += 1;
        (conn_id, rx)
    };
    fake.notify();
    let on_fail = fake.clone();
    upgrade
        .on_failed_upgrade(move |_| {
            on_fail.state().conns.remove(&conn_id);
            on_fail.notify();
        })
        .on_upgrade(move |socket| run_connection(fake, socket, conn_id, rx))
}

async fn run_connection(
    fake: FakeLark,
    socket: WebSocket,
    conn_id: u64,
    mut rx: mpsc::UnboundedReceiver<ConnCommand>,
) {
    let (mut sink, mut stream) = socket.split();
    let shutdown = fake.shutdown_token().clone();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            command = rx.recv() => match command {
                Some(ConnCommand::Send(frame)) => {
                    if sink.send(Message::Binary(frame.encode_vec().into())).await.is_err() {
                        break;
                    }
                }
                Some(ConnCommand::Close(CloseKind::CloseFrame)) => {
                    let close = CloseFrame { code: 1000, reason: "bye".into() };
                    let _ = sink.send(Message::Close(Some(close))).await;
                    break;
                }
                Some(ConnCommand::Close(CloseKind::Abrupt)) | None => break,
            },
            message = stream.next() => match message {
                Some(Ok(Message::Binary(bytes))) => {
                    if let Some(reply) = handle_inbound(&fake, conn_id, &bytes)
                        && sink.send(Message::Binary(reply.encode_vec().into())).await.is_err() {
                            break;
                        }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
        }
    }
    // Returning drops the socket: TCP closes, with no close frame unless sent above.
    fake.state().conns.remove(&conn_id);
    fake.notify();
}

/// Handles one inbound binary message; returns a frame to send back (a pong).
fn handle_inbound(fake: &FakeLark, conn_id: u64, bytes: &[u8]) -> Option<Frame> {
    let frame = match Frame::decode_strict(bytes) {
        Ok(frame) => frame,
        Err(e) => {
            fake.state()
                .records
                .bad_frames
                .push(format!("conn {conn_id}: {e}"));
            fake.notify();
            return None;
        }
    };
    let reply = match (frame.method, frame.kind()) {
        (METHOD_CONTROL, kind::PING) => {
            let mut state = fake.state();
            state.records.pings.push(super::PingRecord {
                conn_id,
                service: frame.service,
            });
            let silenced = state.conns.get(&conn_id).is_none_or(|c| c.silenced);
            let service = state
                .conns
                .get(&conn_id)
                .map_or(frame.service, |c| c.service_id);
            let config = state.pong_config;
            drop(state);
            (!silenced).then(|| Frame {
                service,
                method: METHOD_CONTROL,
                headers: vec![Header::new(header::TYPE, kind::PONG)],
                payload: config.map(|c| serde_json::to_vec(&c).expect("config serialises")),
                ..Frame::default()
            })
        }
        (METHOD_DATA, _) => {
            super::push::handle_ack(fake, frame);
            None
        }
        (method, kind) => {
            let note = format!("conn {conn_id}: unexpected frame method={method} type={kind}");
            fake.state().records.bad_frames.push(note);
            None
        }
    };
    fake.notify();
    reply
}

//! The connect / reconnect loop around [`Session`].
//!
//! Mirrors the official SDKs: after a connection is lost, wait a random
//! `[0, ReconnectNonce)` once, then try discovery + dial, sleeping
//! `ReconnectInterval` between failures and giving up after `ReconnectCount`
//! attempts (never, when negative). Every attempt runs discovery again because
//! tickets are single-use. Fatal failures end the loop with an error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::ServerConfig;
use super::discovery::{self, ConnectFailure, Endpoint, Socket};
use super::session::{Session, SessionEnd};
use super::{Delivery, WsConfig, WsError};

pub(crate) async fn run(
    config: WsConfig,
    deliveries: mpsc::UnboundedSender<Delivery>,
    cancel: CancellationToken,
) -> Result<(), WsError> {
    let http = reqwest::Client::builder()
        .user_agent(concat!("weft-lark/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("reqwest client builds");
    let server = Arc::new(Mutex::new(config.initial_server_config));
    let session = Session {
        config: &config,
        server: server.clone(),
        deliveries: &deliveries,
    };

    let mut connection = match connect(&http, &config, &server).await {
        Ok(c) => Some(c),
        Err(ConnectFailure::Fatal(e)) => return Err(e),
        Err(ConnectFailure::Retryable(reason)) => {
            tracing::warn!(%reason, "lark ws first connect failed; reconnecting");
            None
        }
    };
    loop {
        let (socket, endpoint) = match connection.take() {
            Some(c) => c,
            None => match reconnect(&http, &config, &server, &cancel).await? {
                Some(c) => c,
                None => return Ok(()),
            },
        };
        tracing::info!(conn.id = %endpoint.device_id, "lark ws connected");
        match session.run(socket, &endpoint, &cancel).await {
            SessionEnd::Cancelled => return Ok(()),
            SessionEnd::LivenessTimeout => {
                tracing::warn!(conn.id = %endpoint.device_id, "lark ws silent too long; reconnecting")
            }
            SessionEnd::Closed(reason) => {
                tracing::warn!(conn.id = %endpoint.device_id, %reason, "lark ws connection lost; reconnecting")
            }
        }
        if deliveries.is_closed() {
            tracing::info!("lark ws delivery receiver dropped; stopping");
            return Ok(());
        }
    }
}

async fn connect(
    http: &reqwest::Client,
    config: &WsConfig,
    server: &Mutex<ServerConfig>,
) -> Result<(Socket, Endpoint), ConnectFailure> {
    let endpoint = discovery::discover(http, config).await?;
    if let Some(wire) = &endpoint.client_config {
        server.lock().expect("config lock").apply(wire);
    }
    let socket = discovery::dial(&endpoint, config).await?;
    Ok((socket, endpoint))
}

/// Returns `Ok(None)` when cancelled.
async fn reconnect(
    http: &reqwest::Client,
    config: &WsConfig,
    server: &Mutex<ServerConfig>,
    cancel: &CancellationToken,
) -> Result<Option<(Socket, Endpoint)>, WsError> {
    let nonce = server.lock().expect("config lock").reconnect_nonce;
    if !sleep_or_cancel(jitter(nonce), cancel).await {
        return Ok(None);
    }
    let mut attempts = 0u64;
    loop {
        let limit = server.lock().expect("config lock").reconnect_count;
        if limit.is_some_and(|limit| attempts >= limit) {
            return Err(WsError::GaveUp { attempts });
        }
        attempts += 1;
        let attempt = tokio::select! {
            _ = cancel.cancelled() => return Ok(None),
            attempt = connect(http, config, server) => attempt,
        };
        match attempt {
            Ok(c) => return Ok(Some(c)),
            Err(ConnectFailure::Fatal(e)) => return Err(e),
            Err(ConnectFailure::Retryable(reason)) => {
                tracing::warn!(attempt = attempts, %reason, "lark ws reconnect failed")
            }
        }
        let interval = server.lock().expect("config lock").reconnect_interval;
        if !sleep_or_cancel(interval, cancel).await {
            return Ok(None);
        }
    }
}

fn jitter(max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    rand::rng().random_range(Duration::ZERO..max)
}

/// Sleeps; `false` if cancelled first.
async fn sleep_or_cancel(duration: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(duration) => true,
    }
}

//! The HTTP server loop: axum's router on hyper connections we configure
//! ourselves, because `axum::serve` exposes none of the limits a hosted service
//! needs. Before this, a request whose headers trickled in over 35 s was still
//! served, a body could take for ever and connections were unbounded.
//!
//! * **Header-read timeout** (`http.header_read_timeout_ms`, default 10 s): a
//!   connection serving no request for that long — from its accept, or from
//!   its last response — is closed, whatever it speaks: a socket that sends
//!   nothing, a trickled HTTP/1 request head, an HTTP/2 preface with no
//!   handshake after it, an HTTP/2 connection left open with no stream ([`idle`]).
//!   hyper's own HTTP/1 header timeout applies too, and HTTP/2 pings a
//!   connection every [`H2_KEEP_ALIVE`] and closes it when the ping goes
//!   unanswered for the header timeout.
//! * **Body deadline** (`http.body_timeout_ms`, default 30 s): a request body not
//!   complete in time fails its read; the JSON extractor answers 408
//!   `request_timeout`. Only request bodies are timed: an SSE *response* may stay
//!   open for as long as its run lasts.
//! * **Connection cap** (`http.max_connections`, default 4096): one permit per
//!   open connection, SSE streams included. A connection beyond the cap is
//!   answered at once with 503 `unavailable` + `Retry-After: 1` and closed, so a
//!   client learns to come back instead of waiting in the kernel's backlog (at most
//!   [`REFUSING`] refusals are written at once; past that, excess connections are
//!   closed without a word).
//! * **Per-address cap** (`http.max_connections_per_address`, default 256):
//!   connections from one client address (the TCP peer; see [`per_address`]),
//!   refused alike beyond it, so one client cannot take the whole cap.
//!
//! Every accepted socket gets `TCP_NODELAY` (axum leaves Nagle on, and a small
//! SSE frame written while the previous one is unacknowledged then waits for the
//! client's delayed ACK: we measured 40 ms on about 1 event in 20).

mod idle;
mod per_address;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::Service;
use tower_http::timeout::DeadlineBody;
use weft_config::HttpConfig;

use crate::client::TrustedProxies;

/// Refusals (503 then close) in flight at once; beyond, excess sockets are dropped.
const REFUSING: usize = 64;
/// How often an HTTP/2 connection is pinged when nothing arrives on it.
const H2_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// Serve `app` on `listener` until `shutdown` fires, then let open connections
/// finish (SSE streams end on the same token). Peers in `proxies` are not
/// counted per address.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    cfg: &HttpConfig,
    proxies: Arc<TrustedProxies>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let header_timeout = Duration::from_millis(cfg.header_read_timeout_ms);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE)
        .keep_alive_timeout(header_timeout);
    let body_deadline = Duration::from_millis(cfg.body_timeout_ms);
    let connections = Arc::new(Semaphore::new(cfg.max_connections));
    let per_address = per_address::PerAddress::new(cfg.max_connections_per_address, proxies);
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let graceful = GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        () = shutdown.cancelled() => break,
                    }
                }
            },
            () = shutdown.cancelled() => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        let admitted = per_address
            .admit(peer.ip())
            .ok_or("per_address")
            .and_then(|slot| {
                let permit = connections.clone().try_acquire_owned();
                permit.map(|p| (p, slot)).map_err(|_| "total")
            });
        let permit = match admitted {
            Ok(permit) => permit,
            Err(cap) => {
                metrics::counter!("weft_http_connections_refused_total", "cap" => cap).increment(1);
                if let Ok(slot) = refusing.clone().try_acquire_owned() {
                    tokio::spawn(async move {
                        refuse(tcp).await;
                        drop(slot);
                    });
                }
                continue;
            }
        };
        let app = app.clone();
        let activity = idle::Activity::new();
        let serving = activity.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(|body| Body::new(DeadlineBody::new(body_deadline, body)));
            req.extensions_mut().insert(ConnectInfo(peer));
            let counted = serving.serving();
            let response = app.clone().call(req);
            async move {
                let response = response.await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| idle::Counted {
                    body,
                    _serving: counted,
                }))
            }
        });
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(tcp), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            tokio::select! {
                ended = conn => if let Err(e) = ended {
                    tracing::debug!(error = %e, peer = %peer, "connection ended with an error");
                },
                // Dropping the connection closes the socket; no request is cut.
                () = activity.idle_for(header_timeout) => {
                    metrics::counter!("weft_http_connections_idle_closed_total").increment(1);
                    tracing::debug!(peer = %peer, "closed a connection that served nothing in time");
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Answer a connection over the cap with 503 and close it. The request is drained
/// briefly first: closing with unread bytes would reset the connection before the
/// client has read the answer.
async fn refuse(mut tcp: TcpStream) {
    const BODY: &str = r#"{"error":{"code":"unavailable","message":"the server has too many open connections; try again shortly"}}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let write = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 1024];
        while tcp.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Whether a body error is the body deadline passing (the JSON extractor turns it
/// into 408 `request_timeout`).
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

//! Slow and greedy clients at the transport (issue 11, items 4 and 9; issue 20):
//! headers that trickle in and bodies that never finish are cut off by
//! configured timeouts, and so are sockets that send nothing or only the HTTP/2
//! preface; connections beyond the cap are refused with 503, and one address
//! cannot take them all; event streams beyond the per-user and per-run caps get
//! 429, while an SSE stream that lasts longer than every timeout is served to
//! its end, over HTTP/1 and HTTP/2.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    trickled_headers_are_cut_off_but_streams_are_not,
    slow_bodies_time_out,
    connections_beyond_the_cap_are_refused,
    event_streams_are_capped_per_user_and_per_run,
    silent_and_preface_only_connections_are_closed,
    one_address_cannot_take_every_connection
);

/// The HTTP/2 client preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const H2_EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

async fn connect(app: &App) -> TcpStream {
    let addr = app.base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
}

/// A connection to `app` from local address `from` (any of 127.0.0.0/8 is this host).
async fn connect_from(app: &App, from: [u8; 4]) -> TcpStream {
    let addr: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind((std::net::Ipv4Addr::from(from), 0).into())
        .unwrap();
    socket.connect(addr).await.expect("connect")
}

/// Waits for the server to close `tcp` (whatever it wrote first); panics when it
/// is still open after 30 s.
async fn closed_by_server(mut tcp: TcpStream, what: &str) {
    let mut sink = Vec::new();
    match tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut sink)).await {
        Ok(_) => {}
        Err(_) => panic!("{what}: the connection is still open after 30 s"),
    }
}

/// Read one HTTP/1.1 response (status, headers lowercased, body) off `tcp`;
/// `None` when the server closed the connection first.
async fn read_response(tcp: &mut TcpStream) -> Option<(u16, String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    while buf.len() < head_end + len {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some((status, head, body))
}

async fn get_health(tcp: &mut TcpStream) -> Option<(u16, String, String)> {
    tcp.write_all(b"GET /health HTTP/1.1\r\nhost: weft\r\n\r\n")
        .await
        .ok()?;
    read_response(tcp).await
}

async fn trickled_headers_are_cut_off_but_streams_are_not(b: Backend) {
    let app = App::start_with(b, &[("WEFT_HTTP__HEADER_READ_TIMEOUT_MS", "1000")]).await;
    let mut tcp = connect(&app).await;
    tcp.write_all(b"GET /health HTTP/1.1\r\nhost: weft\r\nx-slow: ")
        .await
        .unwrap();
    // One header byte every 100 ms for up to 20 s: the server must hang up long
    // before the headers end (they never do).
    let (mut rd, mut wr) = tcp.into_split();
    let trickle = async move {
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if wr.write_all(b"a").await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await
    };
    let hung_up = async move {
        let mut buf = Vec::new();
        let _ = rd.read_to_end(&mut buf).await;
        buf
    };
    let answer = tokio::select! {
        buf = hung_up => buf,
        () = trickle => unreachable!(),
        () = tokio::time::sleep(Duration::from_secs(30)) => {
            panic!("a request whose headers trickled in for 30 s is still open")
        }
    };
    assert!(
        !String::from_utf8_lossy(&answer).contains(" 200 "),
        "the trickled request was served"
    );

    // An event stream outlives the header timeout several times over.
    let token = app.user("trickle").await;
    let s = app.session(&token).await;
    let events = app
        .send_stream(&token, &s, "@mock.tokens 80 @mock.delay 0 40")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
}

async fn slow_bodies_time_out(b: Backend) {
    let app = App::start_with(b, &[("WEFT_HTTP__BODY_TIMEOUT_MS", "500")]).await;
    let mut tcp = connect(&app).await;
    tcp.write_all(
        b"POST /v1/auth/login HTTP/1.1\r\nhost: weft\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"username\":",
    )
    .await
    .unwrap();
    // The rest of the body never comes.
    let answer = tokio::time::timeout(Duration::from_secs(30), read_response(&mut tcp))
        .await
        .expect("a request body that never finishes is still awaited after 30 s");
    let (status, _, body) = answer.expect("an answer before the connection closes");
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("\"request_timeout\""), "{body}");
}

async fn connections_beyond_the_cap_are_refused(b: Backend) {
    let app = App::start_with(b, &[("WEFT_HTTP__MAX_CONNECTIONS", "4")]).await;
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..10 {
        let mut tcp = connect(&app).await;
        match get_health(&mut tcp).await {
            Some((200, _, _)) => held.push(tcp),
            other => {
                refused = Some(other);
                break;
            }
        }
    }
    let (status, head, body) = refused
        .expect("10 open connections were all served with a cap of 4")
        .expect("an answer before the close");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("\"unavailable\""), "{body}");
    assert!(head.contains("retry-after:"), "{head}");
    assert!(!held.is_empty() && held.len() <= 4, "{}", held.len());
    // The connections inside the cap keep working.
    let (status, _, _) = get_health(&mut held[0]).await.expect("held connection");
    assert_eq!(status, 200);
}

async fn attach_status(
    app: &App,
    token: &str,
    run: &str,
) -> (u16, Option<String>, reqwest::Response) {
    let resp = app
        .http
        .get(app.url(&format!("/v1/runs/{run}/events")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), retry, resp)
}

async fn event_streams_are_capped_per_user_and_per_run(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__STREAMS_PER_USER", "3"),
            ("WEFT_LIMITS__STREAMS_PER_RUN", "2"),
        ],
    )
    .await;
    let token = app.user("greedy").await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        let s = app.session(&token).await;
        runs.push(
            app.send(&token, &s, "@mock.tokens 3000 @mock.delay 0 20")
                .await,
        );
    }
    let mut open = Vec::new();
    for run in [&runs[0], &runs[0]] {
        let (st, _, resp) = attach_status(&app, &token, run).await;
        assert_eq!(st, 200);
        open.push(resp);
    }
    let (st, retry, resp) = attach_status(&app, &token, &runs[0]).await;
    let body = resp.text().await.unwrap();
    assert_eq!(st, 429, "a third stream of one run: {body}");
    assert!(body.contains("\"rate_limited\""), "{body}");
    assert!(retry.is_some(), "429 without Retry-After");

    let (st, _, resp) = attach_status(&app, &token, &runs[1]).await;
    assert_eq!(st, 200, "another run is within the per-run cap");
    open.push(resp);
    let (st, _, resp) = attach_status(&app, &token, &runs[2]).await;
    let body = resp.text().await.unwrap();
    assert_eq!(st, 429, "a fourth stream of the user: {body}");

    // Another user is not affected.
    let other = app.user("patient").await;
    let s = app.session(&other).await;
    let events = app
        .send_stream(&other, &s, "@mock.reply fine")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done");
    drop(open);
}

/// Sockets that send nothing, part of the HTTP/2 preface, the whole preface, or
/// the preface and its SETTINGS and then nothing, each hold a connection slot:
/// all are closed after the header timeout. Real HTTP/2 clients are still
/// served, and an event stream over HTTP/2 outlives the timeout.
async fn silent_and_preface_only_connections_are_closed(b: Backend) {
    let mut app = App::start_with(b, &[("WEFT_HTTP__HEADER_READ_TIMEOUT_MS", "1000")]).await;
    let silent = connect(&app).await;
    let mut partial = connect(&app).await;
    partial.write_all(&H2_PREFACE[..10]).await.unwrap();
    let mut preface = connect(&app).await;
    preface.write_all(H2_PREFACE).await.unwrap();
    let mut handshake = connect(&app).await;
    handshake.write_all(H2_PREFACE).await.unwrap();
    handshake.write_all(H2_EMPTY_SETTINGS).await.unwrap();
    tokio::join!(
        closed_by_server(silent, "a socket that sends nothing"),
        closed_by_server(partial, "a socket that sent part of the HTTP/2 preface"),
        closed_by_server(preface, "a socket that sent only the HTTP/2 preface"),
        closed_by_server(handshake, "an HTTP/2 connection that opens no stream"),
    );

    app.http = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let health = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(health.version(), reqwest::Version::HTTP_2);
    assert_eq!(health.status(), 200);
    let token = app.user("h2").await;
    let s = app.session(&token).await;
    let events = app
        .send_stream(&token, &s, "@mock.tokens 60 @mock.delay 0 50")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
}

/// 40 silent sockets from one address while the cap per address is 20 (and 30
/// in all): another address is still served; the 20 beyond are refused.
async fn one_address_cannot_take_every_connection(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_HTTP__MAX_CONNECTIONS", "30"),
            ("WEFT_HTTP__MAX_CONNECTIONS_PER_ADDRESS", "20"),
            // Long enough that only the caps decide here.
            ("WEFT_HTTP__HEADER_READ_TIMEOUT_MS", "120000"),
        ],
    )
    .await;
    let mut flood = Vec::new();
    for _ in 0..40 {
        flood.push(connect_from(&app, [127, 0, 0, 1]).await);
    }
    // Accepted after all 40 (the accept queue is in order).
    let mut other = connect_from(&app, [127, 0, 0, 2]).await;
    let answer = tokio::time::timeout(Duration::from_secs(30), get_health(&mut other))
        .await
        .expect("another address is answered");
    let (status, _, body) = answer.expect("an answer for another address");
    assert_eq!(status, 200, "another address was refused: {body}");

    let mut served = 0;
    for tcp in &mut flood {
        if let Some((200, _, _)) = get_health(tcp).await {
            served += 1;
        }
    }
    assert_eq!(served, 20, "connections from one address held open");
    let mut beyond = connect_from(&app, [127, 0, 0, 1]).await;
    let (status, head, _) = get_health(&mut beyond).await.expect("a refusal");
    assert_eq!(status, 503);
    assert!(head.contains("retry-after:"), "{head}");
}

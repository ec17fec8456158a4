//! Slow and greedy clients at the transport (issue 11, items 4 and 9): headers
//! that trickle in and bodies that never finish are cut off by configured
//! timeouts, connections beyond the cap are refused with 503, event streams
//! beyond the per-user and per-run caps with 429, while an SSE stream that lasts
//! longer than every timeout is served to its end.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    trickled_headers_are_cut_off_but_streams_are_not,
    slow_bodies_time_out,
    connections_beyond_the_cap_are_refused,
    event_streams_are_capped_per_user_and_per_run
);

async fn connect(app: &App) -> TcpStream {
    let addr = app.base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
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

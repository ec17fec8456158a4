//! `web_fetch` against a fake site on 127.0.0.1 (opened through the allowlist,
//! as an admin would open an internal wiki): redirects, the time and size
//! caps, and what HTML, text and PDF turn into.

mod web_support;

use std::convert::Infallible;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use web_support::{fetcher, serve, test_resolver, tiny_pdf};
use weft_tools::{Tool, ToolContext};

const ARTICLE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Rust 1.95 released | The Example Blog</title>
  <link rel="stylesheet" href="/site.css">
  <style>body { color: #333; font-family: sans-serif; }</style>
  <script>window.analytics = function() { track('pageview'); };</script>
</head>
<body>
  <nav class="top"><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/rss">RSS</a></nav>
  <main>
    <article>
      <h1>Rust 1.95 released</h1>
      <p class="byline">Posted on <time>2026-11-20</time> by the release team</p>
      <p>The Rust team is happy to announce a new version. If you have a previous
         version installed via <a href="https://rustup.rs/">rustup</a>, getting it is easy:</p>
      <pre><code>rustup update stable</code></pre>
      <h2>What's in 1.95</h2>
      <ul>
        <li>Faster <strong>incremental</strong> builds</li>
        <li>New lints for <em>async</em> closures</li>
      </ul>
      <table>
        <tr><th>Platform</th><th>Tier</th></tr>
        <tr><td>x86_64-unknown-linux-gnu</td><td>1</td></tr>
      </table>
    </article>
  </main>
  <footer>© 2026 The Example Blog · Privacy · Cookies</footer>
  <script src="/bundle.js"></script>
</body>
</html>"#;

async fn article() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        ARTICLE,
    )
}

/// `/hops/n` redirects n more times, then answers.
async fn hops(Path(n): Path<u32>) -> Response {
    match n {
        0 => ([(header::CONTENT_TYPE, "text/plain")], "arrived").into_response(),
        n => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("/hops/{}", n - 1))],
        )
            .into_response(),
    }
}

/// Headers never come.
async fn stall() -> &'static str {
    std::future::pending::<()>().await;
    "never"
}

/// Headers and a first chunk come; the rest never does.
async fn trickle() -> Response {
    let first =
        futures::stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"first bytes ")) });
    let body = Body::from_stream(first.chain(futures::stream::pending()));
    ([(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

/// An endless body: only a reader that stops at its cap returns.
async fn endless() -> Response {
    let chunk = Bytes::from(vec![b'a'; 16 * 1024]);
    let body = Body::from_stream(futures::stream::repeat_with(move || {
        Ok::<_, Infallible>(chunk.clone())
    }));
    ([(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

async fn pdf() -> Response {
    (
        [(header::CONTENT_TYPE, "application/pdf")],
        tiny_pdf("Hello from a PDF"),
    )
        .into_response()
}

fn site() -> Router {
    Router::new()
        .route("/article", get(article))
        .route("/hops/{n}", get(hops))
        .route("/stall", get(stall))
        .route("/trickle", get(trickle))
        .route("/endless", get(endless))
        .route("/paper.pdf", get(pdf))
        .route(
            "/paper-unlabelled",
            get(|| async { tiny_pdf("Sniffed PDF text") }),
        )
        .route(
            "/big.pdf",
            get(|| async {
                let mut body = tiny_pdf("too big");
                body.resize(256 * 1024, b'\n');
                ([(header::CONTENT_TYPE, "application/pdf")], body)
            }),
        )
        .route(
            "/notes.txt",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "plain *text* stays\n  exactly as <it> is\n",
                )
            }),
        )
        .route(
            "/latin1",
            get(|| async {
                let body: &'static [u8] = b"<html><body><p>caf\xe9 cr\xe8me</p></body></html>";
                (
                    [(header::CONTENT_TYPE, "text/html; charset=ISO-8859-1")],
                    body,
                )
            }),
        )
        .route(
            "/logo.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G'],
                )
            }),
        )
        .route(
            "/blob",
            get(|| async { Body::from(vec![0u8, 1, 2, 3, 0, 255]) }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
}

async fn fetch(path: &str, timeout_ms: u64, max_bytes: u64) -> Result<String, String> {
    let addr = serve(site()).await;
    let tool = fetcher(&["fake.test"], timeout_ms, max_bytes, test_resolver());
    let url = format!("http://fake.test:{}{path}", addr.port());
    tool.call(serde_json::json!({ "url": url }), &ToolContext::default())
        .await
}

#[tokio::test]
async fn a_page_becomes_readable_markdown_without_scripts_styles_or_chrome() {
    let out = fetch("/article", 5_000, 1 << 20).await.unwrap();
    assert!(out.starts_with("URL: http://fake.test:"), "{out}");
    for wanted in [
        "Title: Rust 1.95 released | The Example Blog",
        "# Rust 1.95 released",
        "## What's in 1.95",
        "[rustup](https://rustup.rs/)",
        "rustup update stable",
        "**incremental**",
        "*async*",
        "| Platform",
        r"x86\_64-unknown-linux-gnu",
    ] {
        assert!(out.contains(wanted), "missing {wanted:?} in:\n{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with(['-', '*']) && l.contains("Faster")),
        "{out}"
    );
    for unwanted in [
        "analytics",
        "font-family",
        "About us",
        "© 2026",
        "<p",
        "<article",
        "bundle.js",
    ] {
        assert!(!out.contains(unwanted), "{unwanted:?} leaked into:\n{out}");
    }
}

#[tokio::test]
async fn five_redirects_are_followed_and_a_sixth_is_refused() {
    let out = fetch("/hops/5", 5_000, 1 << 20).await.unwrap();
    assert!(out.contains("arrived") && out.contains("/hops/0"), "{out}");
    let err = fetch("/hops/6", 5_000, 1 << 20).await.unwrap_err();
    assert!(err.contains("refused: more than 5 redirects"), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_time_cap() {
    let err = fetch("/stall", 300, 1 << 20).await.unwrap_err();
    assert!(
        err.starts_with("timed out after 300 ms fetching http://fake.test:"),
        "{err}"
    );
}

#[tokio::test]
async fn a_body_that_stops_coming_hits_the_time_cap() {
    let err = fetch("/trickle", 300, 1 << 20).await.unwrap_err();
    assert!(err.starts_with("timed out after 300 ms"), "{err}");
}

#[tokio::test]
async fn an_endless_body_is_cut_at_the_size_cap() {
    // Generous time: only stopping at the cap lets the fetch return at all.
    let out = fetch("/endless", 30_000, 64 * 1024).await.unwrap();
    assert!(
        out.ends_with("[truncated: only the first 65536 bytes of the page were read]"),
        "{:.200}",
        &out[out.len() - 200..]
    );
    let body_as = out.matches('a').count();
    assert!(
        (64 * 1024..64 * 1024 + 100).contains(&body_as),
        "{body_as} bytes of body"
    );
}

#[tokio::test]
async fn a_pdf_over_the_size_cap_is_refused_not_cut() {
    let err = fetch("/big.pdf", 5_000, 64 * 1024).await.unwrap_err();
    assert!(
        err.contains("refused: the PDF at http://fake.test:")
            && err.contains("is larger than 65536 bytes"),
        "{err}"
    );
}

#[tokio::test]
async fn plain_text_passes_through_unchanged() {
    let out = fetch("/notes.txt", 5_000, 1 << 20).await.unwrap();
    assert!(
        out.ends_with("plain *text* stays\n  exactly as <it> is"),
        "{out}"
    );
}

#[tokio::test]
async fn a_declared_charset_is_decoded() {
    let out = fetch("/latin1", 5_000, 1 << 20).await.unwrap();
    assert!(out.contains("café crème"), "{out}");
}

#[tokio::test]
async fn a_pdf_comes_back_as_its_text() {
    let out = fetch("/paper.pdf", 10_000, 1 << 20).await.unwrap();
    assert!(out.contains("Hello from a PDF"), "{out}");
    let out = fetch("/paper-unlabelled", 10_000, 1 << 20).await.unwrap();
    assert!(out.contains("Sniffed PDF text"), "{out}");
}

#[tokio::test]
async fn images_binary_data_and_errors_are_reported_not_returned() {
    let err = fetch("/logo.png", 5_000, 1 << 20).await.unwrap_err();
    assert!(
        err.contains("is image/png, not a web page, text or PDF"),
        "{err}"
    );
    let err = fetch("/blob", 5_000, 1 << 20).await.unwrap_err();
    assert!(err.contains("is binary data"), "{err}");
    let err = fetch("/missing", 5_000, 1 << 20).await.unwrap_err();
    assert!(err.contains("answered HTTP 404 Not Found"), "{err}");
}

#[tokio::test]
async fn a_closed_port_on_an_allowed_host_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let tool = fetcher(&["fake.test"], 5_000, 1 << 20, test_resolver());
    let url = format!("http://fake.test:{port}/");
    let err = tool
        .call(serde_json::json!({ "url": url }), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(err.starts_with(&format!("fetching {url} failed")), "{err}");
    assert!(!err.contains("refused:"), "{err}");
}

#[tokio::test]
async fn the_tool_describes_itself_and_rejects_bad_arguments() {
    let tool = fetcher(&[], 5_000, 1 << 20, test_resolver());
    let spec = tool.spec();
    assert_eq!(spec.name, "web_fetch");
    assert_eq!(spec.parameters["required"], serde_json::json!(["url"]));
    assert_eq!(spec.parameters["properties"]["url"]["type"], "string");
    assert!(!tool.side_effects());
    let err = tool
        .call(serde_json::json!({ "link": "x" }), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(err.contains("web_fetch needs"), "{err}");
}

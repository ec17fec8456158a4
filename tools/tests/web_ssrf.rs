//! `web_fetch` against SSRF: every spelling of an internal address is refused
//! with its reason, names are judged by every address they resolve to, every
//! redirect is checked again, and the admin's allowlist is the only way in.

mod web_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use web_support::{fetcher, serve, test_resolver};
use weft_tools::{Tool, ToolContext};

/// (URL, the refusal the model must read).
const VECTORS: &[(&str, &str)] = &[
    // Loopback, in every spelling the URL parser accepts.
    (
        "http://127.0.0.1",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://127.0.0.1:8900/api/v1/me",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://2130706433",
        "refused: 127.0.0.1 is a loopback address",
    ),
    ("http://0x7f.1", "refused: 127.0.0.1 is a loopback address"),
    (
        "http://0x7f000001/",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://017700000001",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://0177.0.0.1",
        "refused: 127.0.0.1 is a loopback address",
    ),
    ("http://127.1", "refused: 127.0.0.1 is a loopback address"),
    (
        "http://127.0.0.1.",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://%31%32%37.0.0.1/",
        "refused: 127.0.0.1 is a loopback address",
    ),
    (
        "http://127.255.0.9",
        "refused: 127.255.0.9 is a loopback address",
    ),
    ("http://[::1]", "refused: ::1 is a loopback address"),
    (
        "http://[::ffff:127.0.0.1]",
        "refused: ::ffff:127.0.0.1 is a loopback address",
    ),
    (
        "http://[::ffff:7f00:1]/",
        "refused: ::ffff:127.0.0.1 is a loopback address",
    ),
    (
        "http://[64:ff9b::7f00:1]",
        "refused: 64:ff9b::7f00:1 is a loopback address",
    ),
    (
        "http://[2002:7f00:1::]",
        "refused: 2002:7f00:1:: is a loopback address",
    ),
    // "This host".
    (
        "http://0.0.0.0",
        "refused: 0.0.0.0 is an unspecified (this-host) address",
    ),
    (
        "http://0:8080",
        "refused: 0.0.0.0 is an unspecified (this-host) address",
    ),
    (
        "http://[::]",
        "refused: :: is an unspecified (this-host) address",
    ),
    // Loopback names, before any lookup.
    ("http://localhost.", "refused: localhost is a loopback name"),
    (
        "http://LOCALHOST:3000",
        "refused: localhost is a loopback name",
    ),
    (
        "http://admin.localhost/",
        "refused: admin.localhost is a loopback name",
    ),
    // Cloud metadata.
    (
        "http://169.254.169.254/latest/meta-data",
        "refused: 169.254.169.254 is a cloud metadata address",
    ),
    (
        "http://[::ffff:169.254.169.254]/",
        "refused: ::ffff:169.254.169.254 is a cloud metadata address",
    ),
    (
        "http://[fd00:ec2::254]/latest/meta-data",
        "refused: fd00:ec2::254 is a cloud metadata address",
    ),
    (
        "http://100.100.100.200/latest/meta-data",
        "refused: 100.100.100.200 is a cloud metadata address",
    ),
    (
        "http://168.63.129.16/metadata",
        "refused: 168.63.129.16 is a cloud metadata address",
    ),
    (
        "http://metadata.google.internal/computeMetadata/v1/",
        "refused: metadata.google.internal is a cloud metadata name",
    ),
    (
        "http://Metadata.Google.Internal./",
        "refused: metadata.google.internal is a cloud metadata name",
    ),
    // Private, link-local, CGNAT, unique-local and other non-public ranges.
    ("http://10.0.0.5", "refused: 10.0.0.5 is a private address"),
    (
        "https://172.16.0.1/",
        "refused: 172.16.0.1 is a private address",
    ),
    (
        "http://192.168.1.1",
        "refused: 192.168.1.1 is a private address",
    ),
    (
        "http://169.254.1.1",
        "refused: 169.254.1.1 is a link-local address",
    ),
    (
        "http://100.64.0.1",
        "refused: 100.64.0.1 is a shared (CGNAT) address",
    ),
    (
        "http://[fd00::1]",
        "refused: fd00::1 is an IPv6 unique-local (private) address",
    ),
    (
        "http://[fc00::5]",
        "refused: fc00::5 is an IPv6 unique-local (private) address",
    ),
    (
        "http://[fe80::1]",
        "refused: fe80::1 is a link-local address",
    ),
    (
        "http://[::ffff:10.0.0.1]",
        "refused: ::ffff:10.0.0.1 is a private address",
    ),
    (
        "http://224.0.0.1",
        "refused: 224.0.0.1 is a multicast address",
    ),
    (
        "http://255.255.255.255",
        "refused: 255.255.255.255 is a broadcast address",
    ),
    (
        "http://198.18.0.1",
        "refused: 198.18.0.1 is a reserved address",
    ),
    // Userinfo tricks: what a person reads is not where it goes.
    (
        "http://user@127.0.0.1",
        "refused: the URL carries a user name or password",
    ),
    (
        "http://example.com@127.0.0.1",
        "refused: the URL carries a user name or password",
    ),
    (
        "http://user:pass@example.com/",
        "refused: the URL carries a user name or password",
    ),
    // Other schemes.
    ("file:///etc/passwd", "refused: file: URLs are not fetched"),
    (
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "refused: gopher: URLs are not fetched",
    ),
    ("ftp://example.com/", "refused: ftp: URLs are not fetched"),
    (
        "dict://127.0.0.1:11211/stats",
        "refused: dict: URLs are not fetched",
    ),
    (
        "data:text/plain,hello",
        "refused: data: URLs are not fetched",
    ),
    ("127.0.0.1/admin", "is not a valid URL"),
    // Names, judged by what (the injected resolver says) they resolve to.
    (
        "http://internal.example/",
        "refused: internal.example resolves to 10.0.0.5, a private address",
    ),
    (
        "http://Internal.Example./x",
        "refused: internal.example resolves to 10.0.0.5, a private address",
    ),
    (
        "http://loop.example/",
        "refused: loop.example resolves to 127.0.0.1, a loopback address",
    ),
    (
        "http://meta.example/",
        "refused: meta.example resolves to 169.254.169.254, a cloud metadata address",
    ),
    (
        "http://cgnat.example/",
        "refused: cgnat.example resolves to 100.64.0.1, a shared (CGNAT) address",
    ),
    (
        "http://v6loop.example/",
        "refused: v6loop.example resolves to ::1, a loopback address",
    ),
    (
        "http://mapped.example/",
        "refused: mapped.example resolves to ::ffff:10.0.0.1, a private address",
    ),
    (
        "http://zero.example/",
        "refused: zero.example resolves to 0.0.0.0, an unspecified (this-host) address",
    ),
    // A mixed answer is refused whole, whichever address comes first.
    (
        "http://mixed.example/",
        "refused: mixed.example resolves to 10.0.0.5, a private address",
    ),
    (
        "http://mixed6.example/",
        "refused: mixed6.example resolves to fd00::1, an IPv6 unique-local (private) address",
    ),
    // Names that do not resolve.
    (
        "http://nowhere.example/",
        "could not resolve nowhere.example",
    ),
    (
        "http://empty.example/",
        "could not resolve empty.example: no addresses",
    ),
];

#[tokio::test]
async fn every_ssrf_vector_is_refused_with_its_reason() {
    assert!(VECTORS.len() >= 30);
    let tool = fetcher(&[], 2_000, 1 << 20, test_resolver());
    let ctx = ToolContext::default();
    let mut wrong = Vec::new();
    for (url, reason) in VECTORS {
        match tool.call(serde_json::json!({ "url": url }), &ctx).await {
            Ok(out) => wrong.push(format!("{url}: fetched! {out:.80}")),
            Err(e) if !e.contains(reason) => wrong.push(format!("{url}: {e:?}, wanted {reason:?}")),
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The fake internal service: `/page` is what the allowlist opens, `/secret`
/// must never be reached, `/to?url=…` redirects anywhere, `/chain/n` hops.
#[derive(Clone, Default)]
struct Internal {
    secret_hits: Arc<AtomicUsize>,
}

fn internal_router(state: Internal) -> Router {
    Router::new()
        .route(
            "/page",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "internal wiki page") }),
        )
        .route(
            "/secret",
            get(|State(s): State<Internal>| async move {
                s.secret_hits.fetch_add(1, Ordering::SeqCst);
                "the secret"
            }),
        )
        .route(
            "/to",
            get(
                |axum::extract::RawQuery(q): axum::extract::RawQuery| async move {
                    let target = q.unwrap_or_default().trim_start_matches("url=").to_string();
                    (StatusCode::FOUND, [(header::LOCATION, target)])
                },
            ),
        )
        .route(
            "/chain/{n}",
            get(|Path(n): Path<u32>| async move {
                let next = match n {
                    0 => "http://169.254.169.254/latest/meta-data".to_string(),
                    n => format!("/chain/{}", n - 1),
                };
                (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, next)]).into_response()
            }),
        )
        .with_state(state)
}

#[tokio::test]
async fn a_local_service_is_refused_until_the_admin_allows_its_name() {
    let state = Internal::default();
    let addr = serve(internal_router(state.clone())).await;
    let ctx = ToolContext::default();
    let url = format!("http://fake.test:{}/page", addr.port());

    let closed = fetcher(&[], 5_000, 1 << 20, test_resolver());
    let err = closed
        .call(serde_json::json!({ "url": url }), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.contains("fake.test resolves to 127.0.0.1, a loopback address"),
        "{err}"
    );

    let resolver = test_resolver();
    let open = fetcher(&["fake.test"], 5_000, 1 << 20, resolver.clone());
    let out = open
        .call(serde_json::json!({ "url": url }), &ctx)
        .await
        .unwrap();
    assert!(out.contains("internal wiki page"), "{out}");
    assert_eq!(
        resolver.lookups(),
        1,
        "one lookup, and its answer is what was connected to"
    );

    // The allowlisted name does not open its address to other names.
    let other = format!("http://other.test:{}/secret", addr.port());
    let err = open
        .call(serde_json::json!({ "url": other }), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.contains("other.test resolves to 127.0.0.1, a loopback address"),
        "{err}"
    );
    assert_eq!(state.secret_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn wildcards_and_networks_in_the_allowlist_open_what_they_name() {
    let addr = serve(internal_router(Internal::default())).await;
    let ctx = ToolContext::default();
    let port = addr.port();

    let wild = fetcher(&["*.fake.test"], 5_000, 1 << 20, test_resolver());
    let sub = format!("http://a.fake.test:{port}/page");
    assert!(
        wild.call(serde_json::json!({ "url": sub }), &ctx)
            .await
            .unwrap()
            .contains("internal wiki page")
    );
    let bare = format!("http://fake.test:{port}/page");
    let err = wild
        .call(serde_json::json!({ "url": bare }), &ctx)
        .await
        .unwrap_err();
    assert!(err.contains("fake.test resolves to 127.0.0.1"), "{err}");

    let net = fetcher(&["127.0.0.1/32"], 5_000, 1 << 20, test_resolver());
    let literal = format!("http://127.0.0.1:{port}/page");
    assert!(
        net.call(serde_json::json!({ "url": literal }), &ctx)
            .await
            .unwrap()
            .contains("internal wiki page")
    );
    let neighbour = format!("http://127.0.0.2:{port}/page");
    let err = net
        .call(serde_json::json!({ "url": neighbour }), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.contains("refused: 127.0.0.2 is a loopback address"),
        "{err}"
    );
}

#[tokio::test]
async fn a_redirect_from_an_allowed_host_into_private_space_is_refused() {
    let state = Internal::default();
    let addr = serve(internal_router(state.clone())).await;
    let port = addr.port();
    let tool = fetcher(&["fake.test"], 5_000, 1 << 20, test_resolver());
    let ctx = ToolContext::default();

    let targets = [
        (
            format!("http://127.0.0.1:{port}/secret"),
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            format!("http://other.test:{port}/secret"),
            "refused: other.test resolves to 127.0.0.1, a loopback address",
        ),
        (
            format!("http://localhost:{port}/secret"),
            "refused: localhost is a loopback name",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/secret"),
            "refused: ::ffff:127.0.0.1 is a loopback address",
        ),
        (
            format!("http://2130706433:{port}/secret"),
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            format!("http://user@fake.test:{port}/secret"),
            "refused: the URL carries a user name or password",
        ),
        (
            "http://10.0.0.5/".to_string(),
            "refused: 10.0.0.5 is a private address",
        ),
        (
            "http://internal.example/".to_string(),
            "refused: internal.example resolves to 10.0.0.5",
        ),
        (
            "file:///etc/passwd".to_string(),
            "refused: file: URLs are not fetched",
        ),
    ];
    for (target, reason) in targets {
        let url = format!("http://fake.test:{port}/to?url={target}");
        let err = tool
            .call(serde_json::json!({ "url": url }), &ctx)
            .await
            .unwrap_err();
        assert!(err.contains(reason), "{target}: {err}");
        assert!(err.contains("redirected to"), "{target}: {err}");
    }
    assert_eq!(
        state.secret_hits.load(Ordering::SeqCst),
        0,
        "no redirect reached /secret"
    );

    // A redirect that stays on the allowed host is followed.
    let url = format!("http://fake.test:{port}/to?url=/page");
    let out = tool
        .call(serde_json::json!({ "url": url }), &ctx)
        .await
        .unwrap();
    assert!(out.contains("internal wiki page"), "{out}");
}

#[tokio::test]
async fn a_redirect_chain_ending_at_the_metadata_service_is_refused() {
    let addr = serve(internal_router(Internal::default())).await;
    let tool = fetcher(&["fake.test"], 5_000, 1 << 20, test_resolver());
    let url = format!("http://fake.test:{}/chain/3", addr.port());
    let err = tool
        .call(serde_json::json!({ "url": url }), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(
        err.contains("refused: 169.254.169.254 is a cloud metadata address (redirected to http://169.254.169.254/latest/meta-data)"),
        "{err}"
    );
}

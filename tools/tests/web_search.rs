//! `web_search` against fakes of its backends that speak their documented wire
//! formats (SearXNG's JSON API, the Brave Search API) on 127.0.0.1, and
//! `web_tools`, which decides which web tools a configuration offers.

mod web_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use web_support::{serve, tools_config};
use weft_tools::web::{WebSearch, web_tools};
use weft_tools::{Tool, ToolContext};

/// What the fake saw, and what it answers.
#[derive(Clone)]
struct Fake {
    seen: Arc<Mutex<Vec<HashMap<String, String>>>>,
    answer: Arc<dyn Fn() -> Response + Send + Sync>,
}

impl Fake {
    fn new(answer: impl Fn() -> Response + Send + Sync + 'static) -> Fake {
        Fake {
            seen: Arc::default(),
            answer: Arc::new(answer),
        }
    }

    fn seen(&self) -> Vec<HashMap<String, String>> {
        self.seen.lock().unwrap().clone()
    }
}

fn json_response(body: serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// SearXNG at `{prefix}/search`: answers only `format=json`, as SearXNG does
/// (403 when the format is not enabled or not asked for).
fn searxng(prefix: &str, fake: Fake) -> Router {
    let route = get(
        |State(f): State<Fake>, Query(q): Query<HashMap<String, String>>| async move {
            f.seen.lock().unwrap().push(q.clone());
            if q.get("format").map(String::as_str) != Some("json") {
                return StatusCode::FORBIDDEN.into_response();
            }
            (f.answer)()
        },
    );
    Router::new()
        .route(&format!("{prefix}/search"), route)
        .with_state(fake)
}

/// Brave at `/res/v1/web/search`: 401 without the right `X-Subscription-Token`.
fn brave(fake: Fake) -> Router {
    let route = get(
        |State(f): State<Fake>,
         headers: HeaderMap,
         Query(mut q): Query<HashMap<String, String>>| async move {
            let token = headers
                .get("x-subscription-token")
                .and_then(|v| v.to_str().ok());
            q.insert("token".into(), token.unwrap_or_default().into());
            f.seen.lock().unwrap().push(q);
            if token != Some("test-key") {
                return (StatusCode::UNAUTHORIZED, r#"{"type":"ErrorResponse"}"#).into_response();
            }
            (f.answer)()
        },
    );
    Router::new()
        .route("/res/v1/web/search", route)
        .with_state(fake)
}

fn searxng_results() -> Response {
    json_response(json!({
        "query": "rust async",
        "number_of_results": 0,
        "results": [
            {"title": "Asynchronous Programming in Rust", "url": "https://rust-lang.github.io/async-book/",
             "content": "A book about async/await in Rust.", "engine": "duckduckgo", "score": 3.0},
            {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/",
             "content": null, "engine": "bing"},
            {"title": "bad link", "url": "javascript:alert(1)", "content": "dropped"},
            {"title": "async fn - Rust", "url": "https://doc.rust-lang.org/std/keyword.async.html",
             "content": "Returns a   Future\ninstead of blocking."}
        ],
        "answers": [], "suggestions": ["rust async book"], "unresponsive_engines": []
    }))
}

fn brave_results() -> Response {
    json_response(json!({
        "type": "search",
        "query": {"original": "weft agents"},
        "web": {
            "type": "search",
            "results": [
                {"title": "Weft — self-hosted agents", "url": "https://weft.example/",
                 "description": "Run <strong>agents</strong> on your own servers.", "language": "en"},
                {"title": "Second", "url": "https://two.example/a?b=c", "description": "two"},
                {"title": "Third", "url": "https://three.example/", "description": "three"}
            ]
        }
    }))
}

fn search_tool(cfg: serde_json::Value) -> WebSearch {
    WebSearch::new(&tools_config(json!({ "web_search": cfg })).web_search)
        .expect("web_search builds")
}

async fn call(tool: &WebSearch, query: &str) -> Result<String, String> {
    tool.call(json!({ "query": query }), &ToolContext::default())
        .await
}

#[tokio::test]
async fn searxng_results_become_a_markdown_list() {
    let fake = Fake::new(searxng_results);
    let addr = serve(searxng("/searx", fake.clone())).await;
    let tool = search_tool(json!({
        "enabled": true, "backend": "searxng", "base_url": format!("http://127.0.0.1:{}/searx/", addr.port()),
    }));
    let out = call(&tool, "rust async").await.unwrap();
    assert_eq!(
        out,
        "Results for \"rust async\":\n\n\
         1. [Asynchronous Programming in Rust](https://rust-lang.github.io/async-book/)\n   \
            A book about async/await in Rust.\n\
         2. [Tokio - An asynchronous Rust runtime](https://tokio.rs/)\n\
         3. [async fn - Rust](https://doc.rust-lang.org/std/keyword.async.html)\n   \
            Returns a Future instead of blocking.\n"
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["q"], "rust async");
    assert_eq!(seen[0]["format"], "json");
}

#[tokio::test]
async fn brave_results_use_the_key_and_the_configured_count() {
    let fake = Fake::new(brave_results);
    let addr = serve(brave(fake.clone())).await;
    let tool = search_tool(json!({
        "enabled": true, "backend": "brave", "api_key": "test-key", "result_count": 2,
        "base_url": format!("http://127.0.0.1:{}", addr.port()),
    }));
    let out = call(&tool, "weft agents").await.unwrap();
    assert_eq!(
        out,
        "Results for \"weft agents\":\n\n\
         1. [Weft — self-hosted agents](https://weft.example/)\n   \
            Run **agents** on your own servers.\n\
         2. [Second](https://two.example/a?b=c)\n   two\n"
    );
    let seen = fake.seen();
    assert_eq!(seen[0]["q"], "weft agents");
    assert_eq!(seen[0]["count"], "2");
    assert_eq!(seen[0]["token"], "test-key");
}

#[tokio::test]
async fn no_results_is_said_plainly() {
    let fake =
        Fake::new(|| json_response(json!({"type": "search", "query": {"original": "zzqx"}})));
    let addr = serve(brave(fake)).await;
    let tool = search_tool(json!({
        "enabled": true, "backend": "brave", "api_key": "test-key",
        "base_url": format!("http://127.0.0.1:{}", addr.port()),
    }));
    assert_eq!(
        call(&tool, "zzqx").await.unwrap(),
        "No results for \"zzqx\"."
    );
}

#[tokio::test]
async fn backend_failures_become_error_text() {
    let broken = Fake::new(|| (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response());
    let addr = serve(searxng("", broken)).await;
    let base = format!("http://127.0.0.1:{}", addr.port());
    let tool = search_tool(json!({"enabled": true, "backend": "searxng", "base_url": base}));
    let err = call(&tool, "q").await.unwrap_err();
    assert_eq!(
        err,
        "web_search: the searxng backend answered HTTP 500 Internal Server Error"
    );

    let garbled = Fake::new(|| json_response(json!({"results": "not a list"})));
    let addr = serve(searxng("", garbled)).await;
    let base = format!("http://127.0.0.1:{}", addr.port());
    let tool = search_tool(json!({"enabled": true, "backend": "searxng", "base_url": base}));
    let err = call(&tool, "q").await.unwrap_err();
    assert!(
        err.starts_with("web_search: the searxng backend's answer is not its JSON results"),
        "{err}"
    );

    let html =
        Fake::new(|| ([(header::CONTENT_TYPE, "text/html")], "<html>login</html>").into_response());
    let addr = serve(brave(html)).await;
    let base = format!("http://127.0.0.1:{}", addr.port());
    let tool = search_tool(
        json!({"enabled": true, "backend": "brave", "api_key": "test-key", "base_url": base}),
    );
    let err = call(&tool, "q").await.unwrap_err();
    assert!(
        err.starts_with("web_search: the brave backend's answer is not its JSON results"),
        "{err}"
    );

    let tool = search_tool(
        json!({"enabled": true, "backend": "brave", "api_key": "wrong", "base_url": base}),
    );
    let err = call(&tool, "q").await.unwrap_err();
    assert_eq!(
        err,
        "web_search: the brave backend answered HTTP 401 Unauthorized (check the API key)"
    );
}

#[tokio::test]
async fn an_unreachable_backend_is_error_text() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    drop(listener);
    let tool = search_tool(json!({"enabled": true, "backend": "searxng", "base_url": base}));
    let err = call(&tool, "q").await.unwrap_err();
    assert_eq!(err, "web_search: the searxng backend could not be reached");
}

#[tokio::test]
async fn the_tool_describes_itself_and_rejects_bad_arguments() {
    let tool = search_tool(
        json!({"enabled": true, "backend": "searxng", "base_url": "http://127.0.0.1:9"}),
    );
    let spec = tool.spec();
    assert_eq!(spec.name, "web_search");
    assert_eq!(spec.parameters["required"], json!(["query"]));
    assert_eq!(spec.parameters["properties"]["query"]["type"], "string");
    assert!(!tool.side_effects());
    assert!(
        tool.call(json!({}), &ToolContext::default())
            .await
            .unwrap_err()
            .contains("web_search needs")
    );
    assert!(
        call(&tool, "   ")
            .await
            .unwrap_err()
            .contains("non-empty query")
    );
}

fn offered(tools: serde_json::Value) -> Vec<String> {
    let mut names: Vec<_> = web_tools(&tools_config(tools), &web_support::extractor())
        .iter()
        .map(|t| t.spec().name)
        .collect();
    names.sort();
    names
}

#[test]
fn web_tools_offers_only_what_is_enabled_and_complete() {
    assert!(offered(json!({})).is_empty(), "both are off by default");
    assert_eq!(
        offered(json!({"web_fetch": {"enabled": true}})),
        ["web_fetch"]
    );
    assert!(
        offered(json!({"web_search": {"enabled": true}})).is_empty(),
        "no backend"
    );
    assert!(
        offered(json!({"web_search": {"enabled": true, "backend": "brave"}})).is_empty(),
        "no key"
    );
    assert!(
        offered(json!({"web_search": {"enabled": true, "backend": "searxng"}})).is_empty(),
        "no URL"
    );
    assert!(
        offered(json!({"web_search": {"backend": "searxng", "base_url": "http://s"}})).is_empty(),
        "off"
    );
    assert_eq!(
        offered(json!({
            "web_fetch": {"enabled": true},
            "web_search": {"enabled": true, "backend": "brave", "api_key": "k"},
        })),
        ["web_fetch", "web_search"]
    );
    assert!(web_tools(&tools_config(json!({"web_fetch": {"enabled": true}, "web_search": {"enabled": true, "backend": "searxng", "base_url": "http://s"}})), &web_support::extractor())
        .iter()
        .all(|t| !t.side_effects()));
}

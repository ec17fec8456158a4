//! The error envelope as clients meet it at the gateway's front: what the
//! extractors (`ApiJson`, `ApiQuery`, `Caller`) and the fallback answer for a
//! broken body, a wrong content type, an unparsable query, a path that is not
//! there, and a missing or unknown token. Each request goes through the real
//! router (`weft_gateway::router`, with its layers) by `oneshot`: no listener,
//! no worker, and a real SQLite store in a temp dir for the tokens.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use weft_config::{Config, LiveConfig};
use weft_shared::auth::{new_token, token_hash};
use weft_store::{Role, Store, TokenKind};

/// The request body limit these tests run with (`limits.body_bytes`).
const BODY_LIMIT: u64 = 1024;

/// One gateway's router over a fresh store.
struct Gateway {
    router: Router,
    store: Store,
    _dir: tempfile::TempDir,
}

/// What came back.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Gateway {
    async fn new() -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("weft.db").display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        let mut config = Config {
            data_dir: Some(dir.path().to_owned()),
            ..Config::default()
        };
        config.limits.body_bytes = BODY_LIMIT;
        let blobs = weft_shared::blobs::Blobs::open(&config).unwrap();
        let state = weft_gateway::AppState::new(
            store.clone(),
            Arc::new(weft_shared::bus::MemoryBus::new(100)),
            Arc::new(weft_shared::queue::MemoryQueue::default()),
            LiveConfig::fixed(config),
            blobs,
            weft_files::Extractor::in_thread(weft_files::Limits::default()),
            tokio_util::sync::CancellationToken::new(),
        );
        Gateway {
            router: weft_gateway::router(state),
            store,
            _dir: dir,
        }
    }

    /// A user `name` and an API token of theirs.
    async fn token(&self, name: &str) -> String {
        let user = self
            .store
            .create_user(name, "not-a-password-hash", Role::User)
            .await
            .unwrap();
        let token = new_token();
        self.store
            .create_token(&user.id, "test", TokenKind::Api, &token_hash(&token))
            .await
            .unwrap();
        token
    }

    async fn call(&self, req: Request<Body>) -> Answer {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap()
            .to_vec();
        Answer {
            status,
            headers,
            body,
        }
    }
}

impl Answer {
    /// Asserts the one envelope: `status`, a JSON body that is exactly
    /// `{"error":{"code","message"}}`, and the headers every response carries.
    fn is_error(&self, status: u16, code: &str, message: &str) {
        let body: Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{}: not JSON ({e}): {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        });
        assert_eq!(
            (self.status.as_u16(), &body),
            (
                status,
                &json!({"error": {"code": code, "message": message}})
            )
        );
        assert_eq!(self.header(header::CONTENT_TYPE), Some("application/json"));
        assert_eq!(self.header(header::X_CONTENT_TYPE_OPTIONS), Some("nosniff"));
    }

    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

fn post(path: &str, content_type: Option<&str>, body: &str) -> Request<Body> {
    let mut req = Request::post(path);
    if let Some(ct) = content_type {
        req = req.header(header::CONTENT_TYPE, ct);
    }
    req.body(Body::from(body.to_owned())).unwrap()
}

fn get(path: &str, authorization: Option<&str>) -> Request<Body> {
    let mut req = Request::get(path);
    if let Some(auth) = authorization {
        req = req.header(header::AUTHORIZATION, auth);
    }
    req.body(Body::empty()).unwrap()
}

const JSON: Option<&str> = Some("application/json");

#[tokio::test]
async fn malformed_json_is_400_invalid_request_saying_where_it_broke() {
    let gw = Gateway::new().await;
    gw.call(post("/v1/auth/login", JSON, r#"{"username": "ann","#))
        .await
        .is_error(
            400,
            "invalid_request",
            "Failed to parse the request body as JSON: EOF while parsing a value at line 1 column 19",
        );
}

#[tokio::test]
async fn json_of_the_wrong_shape_is_422_validation_failed() {
    let gw = Gateway::new().await;
    gw.call(post(
        "/v1/auth/login",
        JSON,
        r#"{"username": 5, "password": "x"}"#,
    ))
    .await
    .is_error(
        422,
        "validation_failed",
        "Failed to deserialize the JSON body into the target type: username: invalid type: integer `5`, expected a string at line 1 column 14",
    );
    gw.call(post("/v1/auth/login", JSON, r#"{"username": "ann"}"#))
        .await
        .is_error(
            422,
            "validation_failed",
            "Failed to deserialize the JSON body into the target type: missing field `password` at line 1 column 19",
        );
}

#[tokio::test]
async fn a_body_without_the_json_content_type_is_400() {
    let gw = Gateway::new().await;
    let body = r#"{"username": "ann", "password": "x"}"#;
    for content_type in [Some("text/plain"), None] {
        gw.call(post("/v1/auth/login", content_type, body))
            .await
            .is_error(
                400,
                "invalid_request",
                "expected a JSON body with Content-Type: application/json",
            );
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let gw = Gateway::new().await;
    let body = json!({"username": "ann", "password": "x".repeat(BODY_LIMIT as usize)});
    gw.call(post("/v1/auth/login", JSON, &body.to_string()))
        .await
        .is_error(413, "payload_too_large", "the request body is too large");
}

#[tokio::test]
async fn unknown_api_paths_are_404_and_other_paths_the_web_ui() {
    let gw = Gateway::new().await;
    for path in ["/v1/no-such-thing", "/v1", "/v1/sessions/x/no-such-thing"] {
        gw.call(get(path, None))
            .await
            .is_error(404, "not_found", "not found");
    }
    // Anything else is a client-side route of the web UI.
    let page = gw.call(get("/chat/abc", None)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.header(header::CONTENT_TYPE)
            .is_some_and(|ct| ct.starts_with("text/html")),
        "{:?}",
        page.headers
    );
}

#[tokio::test]
async fn a_known_path_with_another_method_is_405_saying_which_are_allowed() {
    let gw = Gateway::new().await;
    let answer = gw.call(get("/v1/auth/login", None)).await;
    answer.is_error(405, "method_not_allowed", "GET is not allowed here");
    assert_eq!(answer.header(header::ALLOW), Some("POST"));
    let answer = gw
        .call(
            Request::delete("/v1/questions/q_1")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    answer.is_error(405, "method_not_allowed", "DELETE is not allowed here");
    assert_eq!(answer.header(header::ALLOW), Some("GET,HEAD,POST"));
}

#[tokio::test]
async fn no_token_or_one_that_is_not_known_is_401() {
    let gw = Gateway::new().await;
    let token = gw.token("ann").await;
    for authorization in [
        None,
        Some("Bearer weft_not_a_token_anyone_was_given"),
        Some("Basic YW5uOnBhc3N3b3Jk"),
        Some(token.as_str()),
    ] {
        gw.call(get("/v1/me", authorization)).await.is_error(
            401,
            "unauthorized",
            "authentication required",
        );
    }
    let me = gw
        .call(get("/v1/me", Some(&format!("Bearer {token}"))))
        .await;
    assert_eq!(me.status, StatusCode::OK);
}

/// Who is asking is settled before the body is read: a stranger's broken body is
/// a 401, the same body from a user a 400.
#[tokio::test]
async fn the_token_is_checked_before_the_body() {
    let gw = Gateway::new().await;
    let token = gw.token("ann").await;
    let send = |authorization: String| {
        Request::post("/v1/tokens")
            .header(header::AUTHORIZATION, authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{"))
            .unwrap()
    };
    gw.call(send("Bearer weft_not_a_token_anyone_was_given".into()))
        .await
        .is_error(401, "unauthorized", "authentication required");
    gw.call(send(format!("Bearer {token}"))).await.is_error(
        400,
        "invalid_request",
        "Failed to parse the request body as JSON: EOF while parsing an object at line 1 column 1",
    );
}

#[tokio::test]
async fn a_query_that_does_not_parse_is_400_and_a_page_size_out_of_range_422() {
    let gw = Gateway::new().await;
    let bearer = format!("Bearer {}", gw.token("ann").await);
    gw.call(get("/v1/sessions?limit=abc", Some(&bearer)))
        .await
        .is_error(
            400,
            "invalid_request",
            "Failed to deserialize query string: limit: invalid digit found in string",
        );
    gw.call(get("/v1/sessions?limit=0", Some(&bearer)))
        .await
        .is_error(422, "validation_failed", "limit must be between 1 and 100");
    let page = gw.call(get("/v1/sessions?limit=100", Some(&bearer))).await;
    assert_eq!(page.status, StatusCode::OK);
}

/// A cookie-authenticated write needs a JSON content type or `X-Weft-Csrf`
/// (which a cross-site form cannot send); past that check, the body's own
/// content type is the JSON extractor's business.
#[tokio::test]
async fn cookie_writes_need_the_json_type_or_the_csrf_header() {
    let gw = Gateway::new().await;
    let token = gw.token("ann").await;
    let cookie = format!("weft_session={token}");
    let write = |content_type: &str, csrf: bool| {
        let mut req = Request::post("/v1/tokens")
            .header(header::COOKIE, &cookie)
            .header(header::CONTENT_TYPE, content_type);
        if csrf {
            req = req.header("x-weft-csrf", "1");
        }
        req.body(Body::from(r#"{"name": "laptop"}"#)).unwrap()
    };
    gw.call(write("text/plain", false)).await.is_error(
        400,
        "invalid_request",
        "cookie-authenticated writes need Content-Type: application/json or an X-Weft-Csrf header",
    );
    gw.call(write("text/plain", true)).await.is_error(
        400,
        "invalid_request",
        "expected a JSON body with Content-Type: application/json",
    );
    let created = gw.call(write("application/json", false)).await;
    assert_eq!(
        created.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
}

//! Bad input never corrupts anything; other users' resources are invisible;
//! authentication, CSRF and per-user limits.

use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    bad_input_is_refused_and_nothing_written,
    cross_user_isolation,
    auth_cookie_and_csrf,
    per_user_limits
);

async fn raw(
    app: &App,
    method: reqwest::Method,
    path: &str,
    token: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let resp = app
        .http
        .request(method, app.url(path))
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn bad_input_is_refused_and_nothing_written(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__MESSAGE_CHARS", "100"),
            ("WEFT_LIMITS__BODY_BYTES", "4096"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let path = format!("/v1/sessions/{s}/messages");
    let post = reqwest::Method::POST;
    let cases: Vec<(&str, u16, &str, (u16, Value))> = vec![
        (
            "malformed json",
            400,
            "invalid_request",
            raw(
                &app,
                post.clone(),
                &path,
                &alice,
                "application/json",
                b"{\"text\": ".to_vec(),
            )
            .await,
        ),
        (
            "wrong type",
            422,
            "validation_failed",
            raw(
                &app,
                post.clone(),
                &path,
                &alice,
                "application/json",
                br#"{"text": 42}"#.to_vec(),
            )
            .await,
        ),
        (
            "missing field",
            422,
            "validation_failed",
            raw(
                &app,
                post.clone(),
                &path,
                &alice,
                "application/json",
                b"{}".to_vec(),
            )
            .await,
        ),
        (
            "not json",
            400,
            "invalid_request",
            raw(
                &app,
                post.clone(),
                &path,
                &alice,
                "text/plain",
                b"hello".to_vec(),
            )
            .await,
        ),
        (
            "oversized body",
            413,
            "payload_too_large",
            raw(
                &app,
                post.clone(),
                &path,
                &alice,
                "application/json",
                format!("{{\"text\":\"{}\"}}", "a".repeat(10_000)).into_bytes(),
            )
            .await,
        ),
        (
            "over-long text",
            413,
            "payload_too_large",
            app.post(&path, &alice, json!({"text": "字".repeat(101)}))
                .await,
        ),
        (
            "empty text",
            422,
            "validation_failed",
            app.post(&path, &alice, json!({"text": "   "})).await,
        ),
        (
            "unknown model",
            422,
            "validation_failed",
            app.post(&path, &alice, json!({"text": "hi", "model": "gpt-nope"}))
                .await,
        ),
        (
            "unknown mode",
            422,
            "validation_failed",
            app.post(&path, &alice, json!({"text": "hi", "mode": "root"}))
                .await,
        ),
        (
            "bad multitask",
            422,
            "validation_failed",
            app.post(&path, &alice, json!({"text": "hi", "multitask": "maybe"}))
                .await,
        ),
        (
            "invalid session id",
            404,
            "not_found",
            app.post(
                "/v1/sessions/not-an-id/messages",
                &alice,
                json!({"text": "hi"}),
            )
            .await,
        ),
        (
            "unknown session",
            404,
            "not_found",
            app.post(
                &format!("/v1/sessions/{}/messages", uuid::Uuid::now_v7()),
                &alice,
                json!({"text": "hi"}),
            )
            .await,
        ),
        (
            "invalid run id",
            404,
            "not_found",
            app.get("/v1/runs/not-a-run", &alice).await,
        ),
        (
            "bad limit",
            422,
            "validation_failed",
            app.get("/v1/sessions?limit=0", &alice).await,
        ),
        (
            "bad cursor",
            400,
            "invalid_request",
            app.get("/v1/sessions?cursor=zzz", &alice).await,
        ),
        (
            "no token",
            401,
            "unauthorized",
            app.post(&path, "", json!({"text": "hi"})).await,
        ),
        (
            "bad token",
            401,
            "unauthorized",
            app.post(&path, "weft_wrong", json!({"text": "hi"})).await,
        ),
        (
            "unknown model on create",
            422,
            "validation_failed",
            app.post("/v1/sessions", &alice, json!({"model": "nope"}))
                .await,
        ),
    ];
    for (what, status, code, (got_status, body)) in cases {
        assert_eq!(got_status, status, "{what}: {body}");
        if got_status != 404 || body.is_object() {
            assert_eq!(body["error"]["code"], code, "{what}: {body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{what}: a message"
            );
        }
    }
    assert!(
        app.messages(&alice, &s).await.is_empty(),
        "nothing was written"
    );
    let (_, sessions) = app.get("/v1/sessions", &alice).await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "no stray sessions"
    );
}

async fn cross_user_isolation(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let run = app
        .send(&alice, &s, "@mock.tokens 200 @mock.delay 0 20")
        .await;
    for (method, path) in [
        (reqwest::Method::GET, format!("/v1/sessions/{s}")),
        (reqwest::Method::GET, format!("/v1/sessions/{s}/messages")),
        (reqwest::Method::GET, format!("/v1/sessions/{s}/stream")),
        (reqwest::Method::PATCH, format!("/v1/sessions/{s}")),
        (reqwest::Method::DELETE, format!("/v1/sessions/{s}")),
        (reqwest::Method::POST, format!("/v1/sessions/{s}/messages")),
        (reqwest::Method::GET, format!("/v1/runs/{run}")),
        (reqwest::Method::GET, format!("/v1/runs/{run}/events")),
        (reqwest::Method::POST, format!("/v1/runs/{run}/cancel")),
    ] {
        let (st, body) = app
            .call(
                method.clone(),
                &path,
                &bob,
                Some(json!({"text": "mine now", "title": "x"})),
            )
            .await;
        assert_eq!(st, 404, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], "not_found");
    }
    let (_, list) = app.get("/v1/sessions", &bob).await;
    assert!(list["sessions"].as_array().unwrap().is_empty());
    let (st, _) = app.get("/v1/admin/users", &bob).await;
    assert_eq!(st, 403, "not an admin");
    let (_, r) = app.get(&format!("/v1/runs/{run}"), &alice).await;
    assert_ne!(r["status"], "cancelled", "bob could not cancel it");
    app.post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
}

async fn auth_cookie_and_csrf(b: Backend) {
    let app = App::start(b).await;
    app.user("carol").await;
    let resp = app
        .http
        .post(app.url("/v1/auth/login"))
        .json(&json!({"username": "carol", "password": "password-123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    // Cookie reads work; a cookie write without JSON or the CSRF header is refused.
    let me = app
        .http
        .get(app.url("/v1/me"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
    let form = app
        .http
        .post(app.url("/v1/sessions"))
        .header("cookie", &pair)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("title=x")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 400, "cross-site form post refused");
    let ok = app
        .http
        .post(app.url("/v1/sessions"))
        .header("cookie", &pair)
        .json(&json!({"title": "web"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 201);
    // Logout ends the session.
    let out = app
        .http
        .post(app.url("/v1/auth/logout"))
        .header("cookie", &pair)
        .header("x-weft-csrf", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    let me = app
        .http
        .get(app.url("/v1/me"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 401);
    // Wrong passwords are rate-limited: the account's backoff starts after
    // five free failures, and the address's limit stops everything after ten
    // — whatever the timing (on a loaded machine a backoff of a second may
    // pass between two attempts, so the first refusal is not at a fixed try).
    let mut failures = 0;
    let mut limited = false;
    for _ in 0..30 {
        let r = app
            .http
            .post(app.url("/v1/auth/login"))
            .json(&json!({"username": "carol", "password": "wrong-password"}))
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            401 => failures += 1,
            429 => {
                limited = true;
                break;
            }
            // The server too busy to hash: refunded, not counted.
            503 => {}
            other => panic!("unexpected sign-in answer {other}"),
        }
    }
    assert!(limited, "never limited after {failures} failures");
    assert!(
        (6..=10).contains(&failures),
        "limited after {failures} failures"
    );
    // Personal tokens: created once, listed without the secret, revocable.
    let admin_pair = ADMIN_TOKEN;
    let (st, created) = app
        .post("/v1/tokens", admin_pair, json!({"name": "laptop"}))
        .await;
    assert_eq!(st, 201);
    let secret = created["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with("weft_"));
    let (_, list) = app.get("/v1/tokens", &secret).await;
    assert!(!list.to_string().contains(&secret));
    let id = created["id"].as_str().unwrap();
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/tokens/{id}"),
            &secret,
            None,
        )
        .await;
    assert_eq!(st, 204);
    let (st, _) = app.get("/v1/me", &secret).await;
    assert_eq!(st, 401, "revoked");
}

async fn per_user_limits(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "1"),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "3"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s1 = app.session(&alice).await;
    let s2 = app.session(&alice).await;
    let run = app
        .send(&alice, &s1, "@mock.tokens 200 @mock.delay 0 20")
        .await;
    let resp = app
        .http
        .post(app.url(&format!("/v1/sessions/{s2}/messages")))
        .bearer_auth(&alice)
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    app.post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
    app.wait_run(&alice, &run, std::time::Duration::from_secs(20))
        .await;
    for _ in 0..2 {
        let r = app.send(&alice, &s2, "quick").await;
        app.wait_run(&alice, &r, std::time::Duration::from_secs(20))
            .await;
    }
    let (st, body) = app
        .post(
            &format!("/v1/sessions/{s2}/messages"),
            &alice,
            json!({"text": "one too many"}),
        )
        .await;
    assert_eq!(st, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(
        app.messages(&alice, &s2)
            .await
            .iter()
            .filter(|m| m["role"] == "user")
            .count(),
        2,
        "the refused message was not stored"
    );
}

//! The smaller defences of issue 20: workers run without the admin token and
//! leave it alone; uploaded files never come back executable; `/metrics` can
//! live on a port of its own; `/v1/chat` checks `Idempotency-Key` as the send
//! route does; new usernames cannot look like someone else's.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    uploaded_files_are_never_served_executable,
    metrics_on_their_own_port_are_off_the_api,
    chat_checks_idempotency_keys_like_the_send_route,
    look_alike_usernames_are_refused
);

/// Only `weft serve` applies the bootstrap token: a worker started without
/// `WEFT_ADMIN_TOKEN` (it has no use for it) used to revoke it on start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_the_admin_token_leaves_it_alone() {
    let env = Env::new(Backend::Distributed, &[]).await;
    let mut app = App::start_in(env, false);
    assert_eq!(app.get("/v1/me", ADMIN_TOKEN).await.0, 200);
    let mut worker = app.env.command(&["worker"]);
    worker.env_remove("WEFT_ADMIN_TOKEN");
    app.workers.push(Proc::spawn(worker, "worker started"));
    let (st, me) = app.get("/v1/me", ADMIN_TOKEN).await;
    assert_eq!(
        st,
        200,
        "the worker revoked the admin token: {me}\n{}",
        app.workers[0].logs()
    );
    assert_eq!(me["username"], "admin");
    // …and that worker runs replies.
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "hi", "wait": true}),
        )
        .await;
    assert_eq!((st, v["status"].as_str()), (200, Some("succeeded")), "{v}");
}

async fn uploaded_files_are_never_served_executable(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let files = [
        (
            "app.js",
            "fetch('/v1/tokens').then(r => r.text()).then(alert)\n",
        ),
        ("theme.css", "body { background: url(/v1/me) }\n"),
        (
            "page.html",
            "<!doctype html><html><body><script>alert(document.cookie)</script></body></html>\n",
        ),
    ];
    let png = weft_files::samples::png();
    let mut attachments: Vec<Value> = files
        .iter()
        .map(|(name, text)| json!({"name": name, "data": STANDARD.encode(text)}))
        .collect();
    attachments.push(json!({"name": "shot.png", "data": STANDARD.encode(&png)}));
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "look", "attachments": attachments, "wait": true}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let msgs = app.messages(&alice, &s).await;
    let stored = msgs[0]["attachments"].as_array().expect("attachments");
    assert_eq!(stored.len(), 4, "{stored:?}");
    for file in stored {
        let name = file["name"].as_str().unwrap();
        let res = app
            .http
            .get(app.url(&format!("/v1/files/{}", file["id"].as_str().unwrap())))
            .bearer_auth(&alice)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{name}");
        let h = res.headers();
        let header = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).unwrap_or("");
        assert!(
            header("content-security-policy").contains("sandbox"),
            "{name}: {h:?}"
        );
        assert_eq!(header("x-content-type-options"), "nosniff", "{name}");
        if name == "shot.png" {
            assert_eq!(header("content-type"), "image/png");
            assert!(header("content-disposition").starts_with("inline;"));
        } else {
            assert_eq!(
                header("content-type"),
                "text/plain; charset=utf-8",
                "{name} must not come back as a type a browser runs"
            );
            assert!(
                header("content-disposition").starts_with("attachment;"),
                "{name}: {h:?}"
            );
        }
    }
}

async fn metrics_on_their_own_port_are_off_the_api(b: Backend) {
    let env = Env::new(b, &[]).await;
    let role: &[&str] = match b {
        Backend::Embedded => &["up"],
        Backend::Distributed => &["serve"],
    };
    let args = [
        role,
        &["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"],
    ]
    .concat();
    let gateway = Proc::spawn(env.command(&args), "listening on http://");
    let metrics = gateway.metrics_url();
    let base = format!("http://{}", gateway.addr.clone().unwrap());
    let app = App {
        env,
        gateway,
        workers: Vec::new(),
        base,
        http: reqwest::Client::new(),
    };
    // A run is created (and counted) whether or not a worker takes it.
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    app.send(&alice, &s, "hi").await;

    let res = app.http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 404, "the API port must not serve /metrics");
    let body = res.text().await.unwrap();
    assert!(!body.contains("weft_runs_created_total"), "{body}");

    let res = app.http.get(&metrics).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let body = res.text().await.unwrap();
    assert!(body.contains("weft_runs_created_total"), "{body}");
    let res = app
        .http
        .get(metrics.replace("/metrics", "/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

async fn sessions(app: &App, token: &str) -> usize {
    let (_, v) = app.get("/v1/sessions", token).await;
    v["sessions"].as_array().unwrap().len()
}

async fn chat_checks_idempotency_keys_like_the_send_route(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let before = sessions(&app, &alice).await;
    let send = format!("/v1/sessions/{s}/messages");
    let bad: [(&str, HeaderValue); 3] = [
        ("overlong", HeaderValue::from_str(&"k".repeat(201)).unwrap()),
        ("a tab inside", HeaderValue::from_static("retry\t1")),
        (
            "bytes outside ASCII",
            HeaderValue::from_bytes("caf\u{e9}-1".as_bytes()).unwrap(),
        ),
    ];
    for (what, key) in bad {
        for (path, body) in [
            (send.as_str(), json!({"text": "hi", "wait": true})),
            ("/v1/chat", json!({"message": "hi"})),
            ("/v1/chat", json!({"message": "hi", "session_id": s})),
        ] {
            let res = app
                .http
                .post(app.url(path))
                .bearer_auth(&alice)
                .header("idempotency-key", key.clone())
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let v: Value = res.json().await.unwrap_or(Value::Null);
            assert_eq!(status, 400, "{what} key on {path}: {v}");
            assert_eq!(v["error"]["code"], "invalid_request", "{what} on {path}");
            assert!(
                v["error"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Idempotency-Key"),
                "{v}"
            );
        }
    }
    assert_eq!(
        sessions(&app, &alice).await,
        before,
        "a refused /v1/chat leaves no session behind"
    );
    assert!(
        app.messages(&alice, &s).await.is_empty(),
        "nothing was sent"
    );
    // A sane key still works on both routes.
    let res = app
        .http
        .post(app.url("/v1/chat"))
        .bearer_auth(&alice)
        .header("idempotency-key", "chat retry 1")
        .json(&json!({"message": "hi", "session_id": s}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

async fn create_user(app: &App, name: &str) -> (u16, Value) {
    app.post(
        "/v1/admin/users",
        ADMIN_TOKEN,
        json!({"username": name, "password": "password-123", "role": "user"}),
    )
    .await
}

async fn look_alike_usernames_are_refused(b: Backend) {
    let app = App::start(b).await;
    for name in [
        "\u{0430}dmin",                             // Cyrillic а
        "\u{ff41}\u{ff44}\u{ff4d}\u{ff49}\u{ff4e}", // fullwidth ａｄｍｉｎ
        "ad\u{200d}min",                            // zero-width joiner
        "admin\u{200b}",                            // zero-width space
        "\u{202e}nimda",                            // right-to-left override
        "p\u{0430}ypal",                            // mixed scripts
        "Admin",
        "lark:ou_1",
    ] {
        let (st, v) = create_user(&app, name).await;
        assert_eq!(st, 422, "{name:?} was accepted: {v}");
        assert_eq!(v["error"]["code"], "validation_failed");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("lowercase ASCII"), "{name:?}: {message}");
    }
    let (_, list) = app.get("/v1/admin/users", ADMIN_TOKEN).await;
    assert_eq!(
        list["users"].as_array().unwrap().len(),
        1,
        "only admin exists: {list}"
    );
    for name in ["alice", "bob.smith", "carol_d-2", "dave@example.com"] {
        let (st, v) = create_user(&app, name).await;
        assert_eq!(st, 201, "{name}: {v}");
        assert_eq!(v["username"], name);
    }
}

//! The rest of the HTTP surface: health, readiness, metrics, OpenAPI, catalogues,
//! session listing and search, `/v1/chat`, and the admin commands.

use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    operational_endpoints,
    sessions_list_search_and_pages,
    chat_shortcut,
    admin_commands
);

/// `log_format` in `weft.toml` is honoured (logging used to start before the
/// configuration was read, so only `WEFT_LOG_FORMAT` worked).
#[tokio::test]
async fn log_format_comes_from_the_config_file() {
    let env = Env::new(Backend::Embedded, &[]).await;
    let file = env.dir.path().join("weft.toml");
    std::fs::write(&file, "log_format = \"json\"\n").unwrap();
    let proc = Proc::spawn(
        env.command(&[
            "up",
            "--listen",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
        ]),
        "listening on http://",
    );
    eventually(
        std::time::Duration::from_secs(10),
        "a JSON log line",
        async || {
            let logs = proc.logs();
            let json_lines = logs
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| v["level"].is_string())
                .count();
            if json_lines > 0 { Ok(()) } else { Err(logs) }
        },
    )
    .await;
}

async fn operational_endpoints(b: Backend) {
    let app = App::start(b).await;
    let (st, h) = app.get("/health", "").await;
    assert_eq!((st, h["status"].as_str()), (200, Some("ok")));
    let (st, r) = app.get("/ready", "").await;
    assert_eq!(st, 200, "{r}");
    let (st, spec) = app.get("/openapi.json", "").await;
    assert_eq!(st, 200);
    assert!(spec["openapi"].as_str().unwrap().starts_with("3.1"));
    for path in [
        "/v1/sessions/{id}/messages",
        "/v1/runs/{id}/events",
        "/v1/chat",
        "/v1/auth/login",
    ] {
        assert!(spec["paths"].get(path).is_some(), "spec has {path}");
    }
    let (_, models) = app.get("/v1/models", ADMIN_TOKEN).await;
    assert_eq!(
        models["models"][0],
        json!({"id": "mock", "provider": "mock", "default": true})
    );
    let (_, modes) = app.get("/v1/modes", ADMIN_TOKEN).await;
    assert_eq!(modes["modes"][0]["id"], "agent");
    let s = app.session(ADMIN_TOKEN).await;
    app.send_stream(ADMIN_TOKEN, &s, "hi")
        .await
        .until_terminal()
        .await;
    let metrics = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("weft_runs_created_total"), "{metrics}");
    let (st, page) = app.get("/", "").await;
    assert_eq!(st, 200, "the web UI (or its placeholder) is served: {page}");
    let (st, body) = app.get("/v1/nope", "").await;
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
}

async fn sessions_list_search_and_pages(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    for title in ["Rust lifetimes", "Paris trip", "rust async", "100%_done"] {
        let (st, _) = app
            .post("/v1/sessions", &alice, json!({"title": title}))
            .await;
        assert_eq!(st, 201);
    }
    let (_, found) = app.get("/v1/sessions?q=RUST", &alice).await;
    let titles: Vec<_> = found["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["rust async", "Rust lifetimes"],
        "newest first, case-insensitive"
    );
    let (_, found) = app.get("/v1/sessions?q=%25_", &alice).await;
    assert_eq!(
        found["sessions"].as_array().unwrap().len(),
        1,
        "wildcards are literal"
    );
    let (_, p1) = app.get("/v1/sessions?limit=3", &alice).await;
    assert_eq!(p1["sessions"].as_array().unwrap().len(), 3);
    let cursor = p1["next_cursor"].as_str().unwrap();
    let (_, p2) = app
        .get(&format!("/v1/sessions?limit=3&cursor={cursor}"), &alice)
        .await;
    assert_eq!(p2["sessions"].as_array().unwrap().len(), 1);
    assert!(p2["next_cursor"].is_null());
    let id = p2["sessions"][0]["id"].as_str().unwrap();
    let (st, renamed) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/sessions/{id}"),
            &alice,
            Some(json!({"title": "Renamed"})),
        )
        .await;
    assert_eq!((st, renamed["title"].as_str()), (200, Some("Renamed")));
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{id}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    let (st, _) = app.get(&format!("/v1/sessions/{id}"), &alice).await;
    assert_eq!(st, 404);
}

async fn chat_shortcut(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let (st, v) = app
        .post(
            "/v1/chat",
            &alice,
            json!({"message": "ping @mock.reply pong"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["content"], "pong");
    assert_eq!(v["status"], "succeeded");
    let session = v["session_id"].as_str().unwrap();
    let (st, v) = app
        .post(
            "/v1/chat",
            &alice,
            json!({"messages": [{"role": "user", "content": "again"}], "session_id": session}),
        )
        .await;
    assert_eq!((st, v["content"].as_str()), (200, Some("You said: again")));
    assert_eq!(app.messages(&alice, session).await.len(), 4);
}

async fn admin_commands(b: Backend) {
    let app = App::start(b).await;
    let mut add = app
        .env
        .command(&["admin", "user", "add", "dave", "--password-stdin"]);
    add.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = add.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"dave-password-1\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = app
        .env
        .command(&["admin", "user", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\tdave\tuser"));
    let out = app
        .env
        .command(&["admin", "token", "create", "dave"])
        .output()
        .unwrap();
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (st, me) = app.get("/v1/me", &token).await;
    assert_eq!((st, me["username"].as_str()), (200, Some("dave")));
    let out = app
        .env
        .command(&["admin", "user", "add", "dave", "--password-stdin"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "duplicate or empty password refused");
}

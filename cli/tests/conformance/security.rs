//! What a hostile or unlucky client can do to the HTTP surface (issue 11): logout
//! really revokes, every response carries the security headers, a burst of wrong
//! passwords checks no more than the limit, and absurd resume points are refused.

use futures::future::join_all;
use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    logout_revokes_the_presented_token,
    security_headers_on_every_response,
    login_burst_checks_at_most_the_limit,
    overlong_usernames_are_refused_before_the_limiter,
    resume_points_near_u64_max_are_refused,
    streams_end_when_their_token_is_revoked,
    a_reply_past_the_event_byte_cap_fails_clearly,
    provider_errors_reach_users_without_internal_urls
);

/// The sign-in attempts per address per window (`login.attempts_per_address`);
/// an account allows fewer failures before its backoff.
const LOGIN_LIMIT: usize = 10;

async fn logout(app: &App, auth: (&str, &str)) -> u16 {
    app.http
        .post(app.url("/v1/auth/logout"))
        .header(auth.0, auth.1)
        .header("x-weft-csrf", "1")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn logout_revokes_the_presented_token(b: Backend) {
    let app = App::start(b).await;
    let login_token = app.user("erin").await;
    let (st, created) = app
        .post("/v1/tokens", &login_token, json!({"name": "laptop"}))
        .await;
    assert_eq!(st, 201, "{created}");
    let api_token = created["token"].as_str().unwrap().to_string();

    // `weft logout` presents a personal API token as a bearer.
    let bearer = format!("Bearer {api_token}");
    assert_eq!(logout(&app, ("authorization", &bearer)).await, 204);
    let (st, _) = app.get("/v1/me", &api_token).await;
    assert_eq!(st, 401, "the API token no longer works after logout");
    let (st, _) = app.get("/v1/me", &login_token).await;
    assert_eq!(st, 200, "only the presented token was revoked");

    // A login token presented as a bearer, and a web session presented as a cookie.
    let bearer = format!("Bearer {login_token}");
    assert_eq!(logout(&app, ("authorization", &bearer)).await, 204);
    let (st, _) = app.get("/v1/me", &login_token).await;
    assert_eq!(st, 401, "the login token no longer works after logout");
    let web = app.login("erin").await;
    let cookie = format!("weft_session={web}");
    assert_eq!(logout(&app, ("cookie", &cookie)).await, 204);
    let (st, _) = app.get("/v1/me", &web).await;
    assert_eq!(st, 401, "the web session no longer works after logout");

    // Logging out twice is harmless.
    assert_eq!(logout(&app, ("cookie", &cookie)).await, 204);
}

async fn security_headers_on_every_response(b: Backend) {
    let app = App::start(b).await;
    let token = app.user("frank").await;
    let s = app.session(&token).await;
    let run = app.send(&token, &s, "hi").await;
    app.wait_run(&token, &run, std::time::Duration::from_secs(20))
        .await;
    let get = |path: String| {
        let req = app.http.get(app.url(&path)).bearer_auth(&token);
        async move { req.send().await.unwrap() }
    };
    for (path, status) in [
        ("/health".to_string(), 200),
        ("/v1/me".to_string(), 200),
        ("/v1/nope".to_string(), 404),
        (format!("/v1/runs/{run}/events"), 200),
        ("/".to_string(), 200),
        ("/chat/anything".to_string(), 200),
    ] {
        let resp = get(path.clone()).await;
        assert_eq!(resp.status(), status, "{path}");
        let h = resp.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        let referrer = h["referrer-policy"].to_str().unwrap();
        assert!(
            matches!(referrer, "no-referrer" | "strict-origin-when-cross-origin"),
            "{path}: {referrer}"
        );
        let html = h[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html");
        if !html {
            continue;
        }
        let csp = h
            .get("content-security-policy")
            .unwrap_or_else(|| panic!("{path}: an HTML page without a CSP"))
            .to_str()
            .unwrap();
        for directive in [
            "default-src 'self'",
            "img-src 'self' data: blob:",
            "frame-ancestors 'none'",
            "object-src 'none'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {directive} in {csp}");
        }
        let scripts = csp
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("script-src"))
            .unwrap_or("default-src 'self'");
        assert!(!scripts.contains("unsafe"), "{path}: {scripts}");
    }
}

async fn login(app: &App, username: &str, password: &str) -> reqwest::Response {
    app.http
        .post(app.url("/v1/auth/login"))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
}

async fn login_burst_checks_at_most_the_limit(b: Backend) {
    let app = App::start(b).await;
    app.user("grace").await;
    let burst = (0..100).map(|_| login(&app, "grace", "wrong-password"));
    let answers = join_all(burst).await;
    let mut checked = 0;
    let mut limited = 0;
    for resp in answers {
        match resp.status().as_u16() {
            401 => checked += 1,
            429 => {
                assert!(resp.headers().contains_key("retry-after"));
                let body: serde_json::Value = resp.json().await.unwrap();
                assert_eq!(body["error"]["code"], "rate_limited", "{body}");
                limited += 1;
            }
            503 => {
                assert!(resp.headers().contains_key("retry-after"));
                let body: serde_json::Value = resp.json().await.unwrap();
                assert_eq!(body["error"]["code"], "unavailable", "{body}");
            }
            other => panic!("unexpected status {other}: {}", resp.text().await.unwrap()),
        }
    }
    assert!(
        (1..=LOGIN_LIMIT).contains(&checked),
        "{checked} wrong passwords were checked (limit {LOGIN_LIMIT})"
    );
    assert!(limited >= 100 - LOGIN_LIMIT, "{limited} answered 429");
    // The account backs off, it is not locked: the owner's right password is
    // either let in or told to wait at most the backoff (never the 5 minutes of
    // the old lock, which let anyone keep an account locked).
    let resp = login(&app, "grace", "password-123").await;
    match resp.status().as_u16() {
        200 => {}
        429 => {
            let wait: u64 = resp.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(wait <= 60, "a {wait} s wait is a lock");
        }
        other => panic!("unexpected status {other}"),
    }
}

async fn overlong_usernames_are_refused_before_the_limiter(b: Backend) {
    let app = App::start(b).await;
    app.user("heidi").await;
    let long = "x".repeat(65);
    for _ in 0..2 * LOGIN_LIMIT {
        let resp = login(&app, &long, "whatever-password").await;
        assert_eq!(resp.status(), 422);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "validation_failed", "{body}");
    }
    let resp = login(&app, "heidi", "password-123").await;
    assert_eq!(
        resp.status(),
        200,
        "refused usernames did not count against this address"
    );
}

async fn resume_points_near_u64_max_are_refused(b: Backend) {
    let app = App::start(b).await;
    let token = app.user("ivan").await;
    let s = app.session(&token).await;
    let run = app.send(&token, &s, "hi").await;
    app.wait_run(&token, &run, std::time::Duration::from_secs(20))
        .await;
    let max = u64::MAX.to_string();
    let near = (u64::MAX - 1).to_string();
    let events = format!("/v1/runs/{run}/events");
    let stream = format!("/v1/sessions/{s}/stream");
    let mut requests = Vec::new();
    for path in [&events, &stream] {
        for id in [&max, &near] {
            requests.push(
                app.http
                    .get(app.url(path))
                    .bearer_auth(&token)
                    .header("last-event-id", id.as_str()),
            );
        }
    }
    for id in [&max, &near, &"18446744073709551616".to_string()] {
        requests.push(
            app.http
                .get(app.url(&format!("{events}?after={id}")))
                .bearer_auth(&token),
        );
    }
    for req in requests {
        let resp = req
            .send()
            .await
            .expect("an answer, not a dropped connection");
        assert_eq!(resp.status(), 400, "{:?}", resp.url());
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_request", "{body}");
    }
    // The server is still fine, and an ordinary re-attach still replays.
    let mut sse = app.attach(&token, &run, Some(0)).await;
    let evs = sse.until_terminal().await;
    assert_eq!(evs.last().unwrap().ty, "done");
}

async fn streams_end_when_their_token_is_revoked(b: Backend) {
    let app = App::start_with(b, &[("WEFT_HTTP__STREAM_RECHECK_MS", "300")]).await;
    let login = app.user("mallory").await;
    let (st, created) = app
        .post("/v1/tokens", &login, json!({"name": "script"}))
        .await;
    assert_eq!(st, 201, "{created}");
    let api = created["token"].as_str().unwrap().to_string();
    let id = created["id"].as_str().unwrap().to_string();
    let s = app.session(&login).await;
    // About a minute of reply: far longer than the test waits.
    let run = app
        .send(&login, &s, "@mock.tokens 3000 @mock.delay 0 20")
        .await;
    let mut stream = app.attach(&api, &run, None).await;
    assert!(stream.next().await.is_some(), "the stream is open");
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/tokens/{id}"),
            &login,
            None,
        )
        .await;
    assert_eq!(st, 204);
    // Before: the stream went on to the run's end with the revoked token.
    let mut after = 0;
    while let Some(ev) = stream.next().await {
        assert!(
            !matches!(ev.ty.as_str(), "done" | "error" | "cancelled"),
            "the revoked token's stream reached the run's end ({after} events after revoking)"
        );
        after += 1;
    }
    let (st, _) = app.get(&format!("/v1/runs/{run}"), &login).await;
    assert_eq!(st, 200, "the run itself goes on");
}

async fn a_reply_past_the_event_byte_cap_fails_clearly(b: Backend) {
    let app = App::start_with(b, &[("WEFT_EVENTS__MAX_BYTES_PER_RUN", "16384")]).await;
    let token = app.user("verbose").await;
    let s = app.session(&token).await;
    let events = app
        .send_stream(&token, &s, "@mock.tokens 10000")
        .await
        .until_terminal()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.ty, "error", "{:?}", last.data);
    assert_eq!(last.data["code"], "event_log_full");
    let bytes: usize = events.iter().map(|e| e.data.to_string().len()).sum();
    assert!(bytes < 16384 + 1024, "{bytes} bytes of events");
    // The text so far is kept as the reply.
    let messages = app.messages(&token, &s).await;
    let reply = messages.last().unwrap()["content"]
        .as_str()
        .unwrap_or_default();
    assert!(reply.starts_with("w1 w2"), "{reply:.40}");
}

async fn provider_errors_reach_users_without_internal_urls(b: Backend) {
    // A provider behind an internal address that refuses connections.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = Env::new(b, &[]).await;
    let config = env.dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[models]]\nid = \"internal\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/internal-llm/v1\"\napi_key_env = \"TEST_OPENAI_KEY\"\n"
        ),
    )
    .unwrap();
    let mut env = env;
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    env.extra.push(("TEST_OPENAI_KEY".into(), "sk-test".into()));
    let app = App::start_in(env, true);
    let token = app.user("peggy").await;
    let s = app.session(&token).await;
    let events = app
        .send_stream(&token, &s, "hello")
        .await
        .until_terminal()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.ty, "error", "{:?}", last.data);
    assert_eq!(last.data["code"], "upstream_unavailable");
    for ev in &events {
        let text = ev.data.to_string();
        assert!(
            !text.contains("internal-llm") && !text.contains(&port.to_string()),
            "a provider detail reached the user: {text}"
        );
    }
    let (_, run) = app
        .get(
            &format!("/v1/runs/{}", last.data["run_id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert!(!run.to_string().contains("internal-llm"), "{run}");
}

//! Deleting a session or a user while its run runs (the run ends `cancelled`,
//! attached clients see it and their stream closes, the log retires), and the
//! token lifecycle: the bootstrap token, password resets and changes, and the
//! admin's view of a user's tokens.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    deleting_a_session_ends_its_run,
    deleting_a_user_ends_their_runs,
    unset_admin_token_revokes_the_bootstrap_token,
    short_admin_token_is_refused_at_start,
    password_reset_revokes_every_token,
    admins_list_and_revoke_a_users_tokens,
    users_change_their_own_password
);

const SLOW: &str = "@mock.tokens 400 @mock.delay 0 20";

/// The run's stream after `head`, which must end with `cancelled` by `deleted`
/// and then close.
async fn assert_ends_deleted(stream: &mut Sse) {
    let rest = stream.until_terminal().await;
    let end = rest.last().expect("a terminal event");
    assert_eq!(end.ty, "cancelled", "{rest:?}");
    assert_eq!(end.data["by"], "deleted");
    assert!(stream.next().await.is_none(), "the stream closes");
}

/// Distributed: the run's Redis keys expire (retention is 1 s in these tests).
async fn assert_log_retired(app: &App, run: &str) {
    if app.env.backend != Backend::Distributed {
        return;
    }
    let client = redis::Client::open(REDIS).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    eventually(Duration::from_secs(10), "the log retired", async || {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*{run}*", app.env.prefix))
            .query_async(&mut conn)
            .await
            .unwrap();
        if keys.is_empty() { Ok(()) } else { Err(keys) }
    })
    .await
}

async fn deleting_a_session_ends_its_run(b: Backend) {
    let app = App::start_with(b, &[("WEFT_EVENTS__RETENTION_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut stream = app.send_stream(&alice, &s, SLOW).await;
    let head = stream.until(|e| e.ty == "text" && e.seq >= 3).await;
    let run = head[0].data["run_id"].as_str().unwrap().to_string();
    let (st, _) = app
        .call(Method::DELETE, &format!("/v1/sessions/{s}"), &alice, None)
        .await;
    assert_eq!(st, 204);
    assert_ends_deleted(&mut stream).await;
    assert_eq!(app.get(&format!("/v1/runs/{run}"), &alice).await.0, 404);
    assert_log_retired(&app, &run).await;
}

async fn deleting_a_user_ends_their_runs(b: Backend) {
    let app = App::start_with(b, &[("WEFT_EVENTS__RETENTION_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let (_, me) = app.get("/v1/me", &alice).await;
    let s = app.session(&alice).await;
    let mut stream = app.send_stream(&alice, &s, SLOW).await;
    let head = stream.until(|e| e.ty == "text" && e.seq >= 3).await;
    let run = head[0].data["run_id"].as_str().unwrap().to_string();
    let (st, _) = app
        .call(
            Method::DELETE,
            &format!("/v1/admin/users/{}", me["id"].as_str().unwrap()),
            ADMIN_TOKEN,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_ends_deleted(&mut stream).await;
    assert_eq!(app.get("/v1/me", &alice).await.0, 401);
    assert_log_retired(&app, &run).await;
}

async fn unset_admin_token_revokes_the_bootstrap_token(b: Backend) {
    let mut app = App::start(b).await;
    assert_eq!(app.get("/v1/me", ADMIN_TOKEN).await.0, 200);
    app.restart_gateway_with(|cmd| {
        cmd.env_remove("WEFT_ADMIN_TOKEN");
    });
    let (st, v) = app.get("/v1/me", ADMIN_TOKEN).await;
    assert_eq!(
        st, 401,
        "the old bootstrap token must not outlive its setting: {v}"
    );
}

async fn short_admin_token_is_refused_at_start(b: Backend) {
    let env = Env::new(b, &[("WEFT_ADMIN_TOKEN", "too-short-to-be-safe")]).await;
    let args: &[&str] = match b {
        Backend::Embedded => &["up", "--listen", "127.0.0.1:0"],
        Backend::Distributed => &["serve", "--listen", "127.0.0.1:0"],
    };
    // A child that outlives a failed test is killed as the test unwinds.
    let mut child = tokio::process::Command::from(env.command(args))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run weft");
    // It must stop at once; one that starts serving fails the test.
    let status = eventually(
        Duration::from_secs(30),
        "weft refusing to start with a short WEFT_ADMIN_TOKEN",
        async || child.try_wait().unwrap().ok_or("still running"),
    )
    .await;
    assert!(!status.success());
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(
        stderr.contains("WEFT_ADMIN_TOKEN") && stderr.contains("at least 32 characters"),
        "{stderr}"
    );
}

async fn api_token(app: &App, token: &str, name: &str) -> (String, String) {
    let (st, v) = app.post("/v1/tokens", token, json!({"name": name})).await;
    assert_eq!(st, 201, "{v}");
    (
        v["id"].as_str().unwrap().to_string(),
        v["token"].as_str().unwrap().to_string(),
    )
}

async fn user_id(app: &App, token: &str) -> String {
    let (_, me) = app.get("/v1/me", token).await;
    me["id"].as_str().unwrap().to_string()
}

async fn password_reset_revokes_every_token(b: Backend) {
    let app = App::start(b).await;
    let login = app.user("alice").await;
    let (_, api) = api_token(&app, &login, "cli").await;
    let id = user_id(&app, &login).await;
    let (st, v) = app
        .call(
            Method::PATCH,
            &format!("/v1/admin/users/{id}"),
            ADMIN_TOKEN,
            Some(json!({"password": "a-new-password-456"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        app.get("/v1/me", &login).await.0,
        401,
        "login token revoked"
    );
    assert_eq!(app.get("/v1/me", &api).await.0, 401, "API token revoked");
    let (st, _) = app
        .post(
            "/v1/auth/login",
            "",
            json!({"username": "alice", "password": "a-new-password-456"}),
        )
        .await;
    assert_eq!(st, 200);
}

fn kinds(list: &Value) -> Vec<String> {
    let mut k: Vec<String> = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap().to_string())
        .collect();
    k.sort();
    k
}

async fn admins_list_and_revoke_a_users_tokens(b: Backend) {
    let app = App::start(b).await;
    let login = app.user("alice").await;
    let (api_id, api) = api_token(&app, &login, "cli").await;
    let id = user_id(&app, &login).await;
    let path = format!("/v1/admin/users/{id}/tokens");
    let (st, list) = app.get(&path, ADMIN_TOKEN).await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(kinds(&list), ["api", "login"]);
    assert_eq!(app.get(&path, &login).await.0, 403, "admins only");
    let (st, _) = app
        .call(
            Method::DELETE,
            &format!("{path}/{api_id}"),
            ADMIN_TOKEN,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_eq!(app.get("/v1/me", &api).await.0, 401, "revoked");
    assert_eq!(app.get("/v1/me", &login).await.0, 200, "the others stay");
    let (_, list) = app.get(&path, ADMIN_TOKEN).await;
    assert_eq!(kinds(&list), ["login"]);
    // Another user's token id under this user is not found.
    let bob = app.user("bob").await;
    let (bob_token, _) = api_token(&app, &bob, "bob").await;
    let (st, _) = app
        .call(
            Method::DELETE,
            &format!("{path}/{bob_token}"),
            ADMIN_TOKEN,
            None,
        )
        .await;
    assert_eq!(st, 404);
}

async fn users_change_their_own_password(b: Backend) {
    let app = App::start(b).await;
    let here = app.user("alice").await;
    let elsewhere = app.login("alice").await;
    let (_, api) = api_token(&app, &here, "cli").await;
    // Web sessions are listed with their kind; the caller's own is marked.
    let (_, list) = app.get("/v1/tokens", &here).await;
    assert_eq!(kinds(&list), ["api", "login", "login"]);
    let current: Vec<_> = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["current"] == true)
        .collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["kind"], "login");

    let (st, v) = app
        .post(
            "/v1/me/password",
            &here,
            json!({"current": "not-my-password", "new": "a-new-password-456"}),
        )
        .await;
    assert_eq!(st, 422, "{v}");
    assert_eq!(
        app.get("/v1/me", &elsewhere).await.0,
        200,
        "nothing changed"
    );
    let (st, v) = app
        .post(
            "/v1/me/password",
            &here,
            json!({"current": "password-123", "new": "a-new-password-456"}),
        )
        .await;
    assert_eq!(st, 204, "{v}");
    assert_eq!(app.get("/v1/me", &here).await.0, 200, "this session stays");
    assert_eq!(app.get("/v1/me", &api).await.0, 200, "API tokens stay");
    assert_eq!(
        app.get("/v1/me", &elsewhere).await.0,
        401,
        "other sessions are signed out"
    );
    let login = |password: &'static str| {
        app.post(
            "/v1/auth/login",
            "",
            json!({"username": "alice", "password": password}),
        )
    };
    assert_eq!(login("password-123").await.0, 401);
    assert_eq!(login("a-new-password-456").await.0, 200);
}

//! Run limits on every path that creates a run (interrupts, follow-ups, parallel
//! sends of one user), the cap on messages waiting in a session, and the purge of
//! expired login tokens and old idempotency keys.

use std::time::Duration;

use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    interrupts_count_against_the_run_rate,
    followups_over_the_rate_wait,
    parallel_sends_respect_active_runs,
    queued_messages_are_capped,
    expired_tokens_and_old_idempotency_keys_are_purged
);

const SLOW: &str = "@mock.tokens 400 @mock.delay 0 20";

async fn post_send(app: &App, token: &str, session: &str, body: Value) -> (u16, Value) {
    app.post(&format!("/v1/sessions/{session}/messages"), token, body)
        .await
}

async fn user_messages(app: &App, token: &str, session: &str) -> usize {
    app.messages(token, session)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .count()
}

async fn interrupts_count_against_the_run_rate(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "5"),
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "2"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut statuses = Vec::new();
    for i in 0..8 {
        let (st, v) = post_send(
            &app,
            &alice,
            &s,
            json!({"text": format!("{i} {SLOW}"), "multitask": "interrupt"}),
        )
        .await;
        if st == 429 {
            assert_eq!(v["error"]["code"], "rate_limited", "{v}");
        }
        statuses.push(st);
    }
    assert_eq!(
        statuses,
        [202, 202, 202, 202, 202, 429, 429, 429],
        "interrupts create runs: at most 5 a minute"
    );
    assert_eq!(
        user_messages(&app, &alice, &s).await,
        5,
        "refused interrupts stored nothing"
    );
    let (_, session) = app.get(&format!("/v1/sessions/{s}"), &alice).await;
    let active = session["active_run_id"]
        .as_str()
        .expect("the last run is active");
    app.post(&format!("/v1/runs/{active}/cancel"), &alice, json!({}))
        .await;
}

/// Waits until the session's active run is a run other than `not`; returns it.
async fn next_active_run(app: &App, token: &str, session: &str, not: &str) -> String {
    eventually(Duration::from_secs(20), "a follow-up run", async || {
        let (_, v) = app.get(&format!("/v1/sessions/{session}"), token).await;
        match v["active_run_id"].as_str().filter(|id| *id != not) {
            Some(id) => Ok(id.to_string()),
            None => Err(v),
        }
    })
    .await
}

async fn followups_over_the_rate_wait(b: Backend) {
    let app = App::start_with(b, &[("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "2")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    // Run 1, and a message waiting behind it.
    let run1 = app.send(&alice, &s, SLOW).await;
    let (st, v) = post_send(&app, &alice, &s, json!({"text": format!("second {SLOW}")})).await;
    assert_eq!((st, v["status"].as_str()), (202, Some("queued")), "{v}");
    // Cancelling run 1 makes the waiting message run 2 (the user's second run).
    app.post(&format!("/v1/runs/{run1}/cancel"), &alice, json!({}))
        .await;
    let run2 = next_active_run(&app, &alice, &s, &run1).await;
    let mut stream = app.attach(&alice, &run2, None).await;
    stream.until(|e| e.ty == "text").await;
    // Slow too: were it to become a run, that run would still be active below.
    let (st, v) = post_send(&app, &alice, &s, json!({"text": format!("third {SLOW}")})).await;
    assert_eq!((st, v["status"].as_str()), (202, Some("queued")), "{v}");
    // Cancelling run 2 would make a third run within the minute: it waits instead.
    app.post(&format!("/v1/runs/{run2}/cancel"), &alice, json!({}))
        .await;
    let end = stream.until_terminal().await;
    assert_eq!(end.last().unwrap().ty, "cancelled");
    // The worker decided on the follow-up in the transaction that ended run 2,
    // before it published `cancelled`.
    let (_, session) = app.get(&format!("/v1/sessions/{s}"), &alice).await;
    assert_eq!(
        session["active_run_id"],
        Value::Null,
        "no follow-up run past the rate limit"
    );
    let msgs = app.messages(&alice, &s).await;
    assert!(
        msgs.iter()
            .any(|m| m["content"].as_str().unwrap().starts_with("third")),
        "the waiting message is kept for later: {msgs:?}"
    );
    // And a send is refused as well, with nothing stored.
    let other = app.session(&alice).await;
    let (st, v) = post_send(&app, &alice, &other, json!({"text": "hi"})).await;
    assert_eq!(st, 429, "{v}");
    assert_eq!(user_messages(&app, &alice, &other).await, 0);
}

async fn parallel_sends_respect_active_runs(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "2"),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "0"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let mut sessions = Vec::new();
    for _ in 0..10 {
        sessions.push(app.session(&alice).await);
    }
    let sends = sessions
        .iter()
        .map(|s| post_send(&app, &alice, s, json!({"text": SLOW})));
    let results = futures::future::join_all(sends).await;
    let accepted: Vec<_> = results.iter().filter(|(st, _)| *st == 202).collect();
    let refused = results.iter().filter(|(st, _)| *st == 429).count();
    assert_eq!(
        (accepted.len(), refused),
        (2, 8),
        "exactly the limit, however the sends race: {results:?}"
    );
    for (_, v) in accepted {
        let run = v["run_id"].as_str().unwrap();
        app.post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
            .await;
    }
}

async fn queued_messages_are_capped(b: Backend) {
    let app = App::start_with(b, &[("WEFT_LIMITS__QUEUED_MESSAGES_PER_SESSION", "3")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let run = app.send(&alice, &s, SLOW).await;
    for i in 0..3 {
        let (st, v) = post_send(&app, &alice, &s, json!({"text": format!("waiting {i}")})).await;
        assert_eq!((st, v["status"].as_str()), (202, Some("queued")), "{v}");
    }
    let (st, v) = post_send(&app, &alice, &s, json!({"text": "one too many"})).await;
    assert_eq!(st, 429, "{v}");
    assert_eq!(v["error"]["code"], "rate_limited");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3 messages already wait"),
        "{v}"
    );
    assert_eq!(
        user_messages(&app, &alice, &s).await,
        4,
        "the refused message was not stored"
    );
    app.post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
}

async fn expired_tokens_and_old_idempotency_keys_are_purged(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__IDEMPOTENCY_KEY_RETENTION_SECS", "1"),
            ("WEFT_WORKER__PURGE_INTERVAL_MS", "200"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let (_, me) = app.get("/v1/me", &alice).await;
    let uid = me["id"].as_str().unwrap();
    // A login session that expired a minute ago (logins last 30 days: this one
    // is written as the database would hold it then).
    app.execute_sql(&format!(
        "insert into tokens (id, user_id, name, kind, hash, created_at, expires_at)
             values ('old-login', '{uid}', 'login', 'login', 'old-login-hash', 1, {})",
        now_ms() - 60_000
    ))
    .await;
    let s = app.session(&alice).await;
    let send = || async {
        let resp = app
            .http
            .post(app.url(&format!("/v1/sessions/{s}/messages")))
            .bearer_auth(&alice)
            .header("Idempotency-Key", "purge-me")
            .json(&json!({"text": "once @mock.tokens 2"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        resp.json::<Value>().await.unwrap()
    };
    let first = send().await;
    app.wait_run(
        &alice,
        first["run_id"].as_str().unwrap(),
        Duration::from_secs(20),
    )
    .await;
    eventually(
        Duration::from_secs(15),
        "idempotency keys and expired tokens purged",
        async || {
            let keys = app
                .count_rows("select count(*) from idempotency_keys")
                .await;
            let tokens = app
                .count_rows("select count(*) from tokens where id = 'old-login'")
                .await;
            if keys == 0 && tokens == 0 {
                Ok(())
            } else {
                Err(format!("{keys} idempotency keys, {tokens} expired tokens"))
            }
        },
    )
    .await;
    // Live tokens stay; a retry past the key's retention is a new message.
    assert_eq!(app.get("/v1/me", &alice).await.0, 200);
    let again = send().await;
    assert_ne!(again["message_id"], first["message_id"]);
    app.wait_run(
        &alice,
        again["run_id"].as_str().unwrap(),
        Duration::from_secs(20),
    )
    .await;
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

//! Per-user storage quotas (`limits.storage_bytes_per_user`, issue 20): a user's
//! distinct files count once however often they are sent, a message that would
//! pass the quota is 413 with nothing stored, deleting a session frees its
//! files, `GET /v1/me` reports the usage, and parallel sends cannot pass the
//! quota together.

use serde_json::{Value, json};
use weft_files::samples;

use super::{b64, send_wait, stored_files};
use crate::both_backends;
use crate::harness::*;

both_backends!(
    storage_is_counted_once_per_user_capped_and_freed_by_deletes,
    parallel_sends_cannot_pass_the_storage_quota_together
);

/// Distinct PNGs of about 30 KB.
fn pictures(n: u32) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| samples::image_sized(samples::ImageFormat::Png, 100 + i))
        .collect()
}

fn with_file(name: &str, bytes: &[u8]) -> Value {
    json!({"text": "keep this", "attachments": [{"name": name, "data": b64(bytes)}]})
}

async fn storage(app: &App, token: &str) -> (u64, Option<u64>) {
    let (st, me) = app.get("/v1/me", token).await;
    assert_eq!(st, 200, "{me}");
    (
        me["storage"]["used_bytes"].as_u64().expect("used_bytes"),
        me["storage"]["limit_bytes"].as_u64(),
    )
}

async fn storage_is_counted_once_per_user_capped_and_freed_by_deletes(b: Backend) {
    let files = pictures(3);
    let (a, bb, c) = (&files[0], &files[1], &files[2]);
    let size = |f: &Vec<u8>| f.len() as u64;
    // Room for A and B, not for C too.
    let quota = size(a) + size(bb) + size(c) / 2;
    let app = App::start_with(
        b,
        &[("WEFT_LIMITS__STORAGE_BYTES_PER_USER", &quota.to_string())],
    )
    .await;
    let alice = app.user("alice").await;
    assert_eq!(storage(&app, &alice).await, (0, Some(quota)));
    let (s1, s2) = (app.session(&alice).await, app.session(&alice).await);
    send_wait(&app, &alice, &s1, with_file("a.png", a)).await;
    // The same file again, in another session: stored once, counted once.
    send_wait(&app, &alice, &s2, with_file("a-again.png", a)).await;
    assert_eq!(storage(&app, &alice).await.0, size(a));
    send_wait(&app, &alice, &s2, with_file("b.png", bb)).await;
    assert_eq!(storage(&app, &alice).await.0, size(a) + size(bb));

    let stored = stored_files(&app);
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s1}/messages"),
            &alice,
            with_file("c.png", c),
        )
        .await;
    assert_eq!(st, 413, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("storage_bytes_per_user"), "{message}");
    assert_eq!(
        stored_files(&app),
        stored,
        "nothing stored for the refused message"
    );
    assert_eq!(storage(&app, &alice).await.0, size(a) + size(bb));

    // Another user has a quota of their own; a file Alice has counts for Bob too.
    let bob = app.user("bob").await;
    let sb = app.session(&bob).await;
    send_wait(&app, &bob, &sb, with_file("c.png", c)).await;
    send_wait(&app, &bob, &sb, with_file("a.png", a)).await;
    assert_eq!(storage(&app, &bob).await.0, size(c) + size(a));

    // Deleting the session with B frees it (A is still in s1).
    let (st, v) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{s2}"),
            &alice,
            None,
        )
        .await;
    assert!(st == 200 || st == 204, "{st} {v}");
    assert_eq!(storage(&app, &alice).await.0, size(a));
    send_wait(&app, &alice, &s1, with_file("c.png", c)).await;
    assert_eq!(storage(&app, &alice).await.0, size(a) + size(c));
}

async fn parallel_sends_cannot_pass_the_storage_quota_together(b: Backend) {
    let files = pictures(6);
    let largest = files.iter().map(Vec::len).max().unwrap() as u64;
    let smallest = files.iter().map(Vec::len).min().unwrap() as u64;
    // Room for exactly two of them, whichever they are.
    let quota = (2 * largest).max(3 * smallest - 1);
    assert!(quota < 3 * smallest && quota >= 2 * largest);
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__STORAGE_BYTES_PER_USER", &quota.to_string()),
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "0"),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "0"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let mut sessions = Vec::new();
    for _ in &files {
        sessions.push(app.session(&alice).await);
    }
    // Every send alone would fit: only the send transaction can tell them apart.
    let sends = files.iter().zip(&sessions).enumerate().map(|(i, (f, s))| {
        let (app, alice) = (&app, &alice);
        async move {
            app.post(
                &format!("/v1/sessions/{s}/messages"),
                alice,
                with_file(&format!("{i}.png"), f),
            )
            .await
        }
    });
    let answers = futures::future::join_all(sends).await;
    let accepted = answers.iter().filter(|(st, _)| *st == 202).count();
    let refused = answers.iter().filter(|(st, _)| *st == 413).count();
    assert_eq!((accepted, refused), (2, 4), "{answers:?}");
    let (used, _) = storage(&app, &alice).await;
    assert!(used <= quota, "{used} > {quota}");
}

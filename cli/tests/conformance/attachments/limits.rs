//! Attachment limits: every limit refuses with nothing stored, and a gateway's
//! upload memory makes large sends wait (then 503) instead of growing — each
//! user within a share of it, so one user cannot make everyone else wait.

use serde_json::{Value, json};
use weft_files::samples;

use super::{b64, stored_files};
use crate::both_backends;
use crate::harness::*;

both_backends!(
    every_limit_refuses_and_nothing_is_stored,
    uploads_wait_for_gateway_memory,
    one_users_slow_uploads_leave_room_for_others
);

async fn every_limit_refuses_and_nothing_is_stored(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_ATTACHMENTS__IMAGE_BYTES", "4000"),
            ("WEFT_ATTACHMENTS__DOCUMENT_BYTES", "6000"),
            ("WEFT_LIMITS__ATTACHMENTS_BYTES", "12000"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let png = samples::png();
    let big_png = samples::image_sized(samples::ImageFormat::Png, 40);
    assert!(big_png.len() > 4000, "{}", big_png.len());
    let text = |n: usize| b64("x".repeat(n).as_bytes());
    let file = |name: &str, data: String| json!({"name": name, "data": data});
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!(
                (0..5)
                    .map(|i| file(&format!("{i}.png"), b64(&png)))
                    .collect::<Vec<_>>()
            ),
            413,
            "images_per_message",
        ),
        (
            json!(
                (0..4)
                    .map(|i| file(&format!("{i}.txt"), text(10)))
                    .collect::<Vec<_>>()
            ),
            413,
            "documents_per_message",
        ),
        (json!([file("big.png", b64(&big_png))]), 413, "image_bytes"),
        (json!([file("big.txt", text(7000))]), 413, "document_bytes"),
        (
            json!([
                file("a.txt", text(5000)),
                file("b.txt", text(5000)),
                file("c.txt", text(5000))
            ]),
            413,
            "attachments_bytes",
        ),
        // A PNG that claims to be a PDF.
        (
            json!([{"name": "x.pdf", "data": b64(&png), "mime": "application/pdf"}]),
            422,
            "",
        ),
        // Bytes of no type we take.
        (
            json!([file(
                "tool.exe",
                b64(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff")
            )]),
            422,
            "",
        ),
        (json!([file("a.png", "not base64!".into())]), 422, "base64"),
        (json!([file("empty.txt", String::new())]), 422, "empty"),
    ];
    for (files, status, names) in cases {
        let (st, v) = app
            .post(
                &format!("/v1/sessions/{s}/messages"),
                &alice,
                json!({"text": "look", "attachments": files}),
            )
            .await;
        assert_eq!(st, status, "{names}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(names),
            "{names}: {v}"
        );
    }
    // A refusal after the files were checked (the session has a running reply
    // and the send says reject): nothing stays either.
    let run = app
        .send(&alice, &s, "@mock.tokens 200 @mock.delay 0 20")
        .await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "and this?", "multitask": "reject",
                   "attachments": [file("a.png", b64(&png))]}),
        )
        .await;
    assert_eq!(st, 409, "{v}");
    app.wait_run(&alice, &run, std::time::Duration::from_secs(60))
        .await;
    assert_eq!(stored_files(&app), 0);
    let users = app
        .messages(&alice, &s)
        .await
        .into_iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 1, "only the message without files was stored");
}

/// A gateway holds at most `attachments.gateway_upload_memory_bytes` of uploads:
/// while a slow client holds it all, another large send waits, then gets 503 +
/// `Retry-After`; once the slow one is gone, sends go through again.
async fn uploads_wait_for_gateway_memory(b: Backend) {
    use tokio::io::AsyncWriteExt;
    let app = App::start_with(
        b,
        &[("WEFT_ATTACHMENTS__GATEWAY_UPLOAD_MEMORY_BYTES", "4194304")],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let image = samples::image_sized(samples::ImageFormat::Png, 700);
    assert!(
        image.len() > 1 << 20,
        "larger than body_bytes: {}",
        image.len()
    );
    let body = json!({"text": "hi", "wait": true, "attachments": [{"name": "big.png", "data": b64(&image)}]})
        .to_string();

    // A client that sends its headers and half its body, then stalls.
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/sessions/{s}/messages HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {alice}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let res = app
        .http
        .post(app.url(&format!("/v1/sessions/{s}/messages")))
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unavailable", "{v}");

    drop(slow);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            serde_json::from_str(&body).unwrap(),
        )
        .await;
    assert_eq!(st, 200, "{v}");
}

/// Alice's slow uploads (headers and half the body, then nothing) would hold
/// the whole upload memory; with a share per user (the default, a quarter)
/// her further sends wait on her share and get 503 + `Retry-After`, while
/// Bob's send of the same size goes through.
async fn one_users_slow_uploads_leave_room_for_others(b: Backend) {
    use tokio::io::AsyncWriteExt;
    let app = App::start_with(
        b,
        &[
            ("WEFT_ATTACHMENTS__GATEWAY_UPLOAD_MEMORY_BYTES", "1048576"),
            // So a ~90 KB send takes upload memory (twice its length).
            ("WEFT_LIMITS__BODY_BYTES", "65536"),
            ("WEFT_HTTP__BODY_TIMEOUT_MS", "120000"),
        ],
    )
    .await;
    let (alice, bob) = (app.user("alice").await, app.user("bob").await);
    let (sa, sb) = (app.session(&alice).await, app.session(&bob).await);
    let image = samples::image_sized(samples::ImageFormat::Png, 150);
    let body = json!({"text": "hi", "attachments": [{"name": "big.png", "data": b64(&image)}]})
        .to_string();
    // Five such sends fill the 1 MiB; one fits in a 256 KiB share.
    assert!((80_000..120_000).contains(&body.len()), "{}", body.len());
    // A client per send: a connection whose request was refused unread is not reused.
    let send = |token: &str, session: &str| {
        reqwest::Client::new()
            .post(app.url(&format!("/v1/sessions/{session}/messages")))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
    };

    let addr = app.base.trim_start_matches("http://").to_string();
    let mut slow = Vec::new();
    for _ in 0..5 {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST /v1/sessions/{sa}/messages HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {alice}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(&body.as_bytes()[..body.len() / 2])
            .await
            .unwrap();
        slow.push(tcp);
    }
    // Until Alice's slow uploads hold what they can, her own sends still fit.
    let refused = eventually(
        std::time::Duration::from_secs(60),
        "Alice's sends having to wait",
        async || {
            let res = send(&alice, &sa).await.unwrap();
            let status = res.status();
            if status == 503 {
                return Ok(res);
            }
            assert_eq!(status, 202, "{}", res.text().await.unwrap());
            Err(status)
        },
    )
    .await;
    assert!(refused.headers().contains_key("retry-after"));
    let v: Value = refused.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unavailable", "{v}");

    let res = send(&bob, &sb).await.unwrap();
    assert_eq!(
        res.status(),
        202,
        "Bob waited for Alice's uploads: {}",
        res.text().await.unwrap()
    );
    drop(slow);
}

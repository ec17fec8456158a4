//! Channels and deliveries (issue 27, docs/schedules.md "Channels"): a
//! channel is checked when it is made (a URL the SSRF guard refuses, an email
//! channel on a server without SMTP, another person's channel are refused
//! naming the field); a scheduled run's notification reaches each of its
//! schedule's channels through the outbox — a webhook receiver that fails
//! twice gets it on the third try, once, signed; a dead receiver does not
//! hold back the others, and its failures show in the schedule's history; an
//! email goes through a real SMTP server (aiosmtpd, from PyPI).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::harness::*;

crate::both_backends!(
    channels_are_checked_and_owned,
    a_webhook_that_fails_twice_gets_one_signed_delivery,
    email_goes_through_a_real_smtp_server,
);

/// What a webhook receiver saw: each request's headers and body.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    /// Requests answered 503 before the first 200.
    fail_first: usize,
}

impl Receiver {
    /// Serves on 127.0.0.1; the URL to post to.
    async fn start(fail_first: usize) -> (Receiver, String) {
        let r = Receiver {
            seen: Arc::default(),
            fail_first,
        };
        let state = r.clone();
        let handler = move |headers: HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let mut seen = state.seen.lock().unwrap();
                seen.push((headers, body));
                if seen.len() <= state.fail_first {
                    (StatusCode::SERVICE_UNAVAILABLE, "down for a deploy")
                } else {
                    (StatusCode::OK, "ok")
                }
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (r, format!("http://{addr}/hook"))
    }

    fn seen(&self) -> Vec<(HeaderMap, String)> {
        self.seen.lock().unwrap().clone()
    }
}

/// Whether `header` is `t=<secs>,v1=<hex>` with v1 = HMAC-SHA256(secret, "t.body").
fn signed(header: &str, secret: &str, body: &str) -> bool {
    let Some((t, v1)) = header
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(",v1="))
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let Ok(sent) = hex::decode(v1) else {
        return false;
    };
    mac.verify_slice(&sent).is_ok()
}

fn allow_loopback() -> [(&'static str, &'static str); 1] {
    [("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]")]
}

async fn channels_are_checked_and_owned(b: Backend) {
    let app = App::start_with(b, &allow_loopback()).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let (_receiver, url) = Receiver::start(0).await;

    for (body, field) in [
        (
            json!({"name": " ", "target": {"kind": "webhook", "url": url}}),
            "name",
        ),
        (
            json!({"name": "meta", "target": {"kind": "webhook", "url": "http://169.254.169.254/latest/meta-data"}}),
            "target.url",
        ),
        (
            json!({"name": "inner", "target": {"kind": "webhook", "url": "http://10.0.0.1/hook"}}),
            "target.url",
        ),
        (
            json!({"name": "ftp", "target": {"kind": "webhook", "url": "ftp://example.com/x"}}),
            "target.url",
        ),
        (
            json!({"name": "short", "target": {"kind": "webhook", "url": url, "secret": "abc"}}),
            "target.secret",
        ),
        // Neither SMTP nor Lark is set up on this server.
        (
            json!({"name": "mail", "target": {"kind": "email", "to": "alice@example.com"}}),
            "target",
        ),
        (
            json!({"name": "lark", "target": {"kind": "lark"}}),
            "target",
        ),
    ] {
        let (st, err) = app.post("/v1/channels", &alice, body.clone()).await;
        assert_eq!(st, 422, "{body} → {err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{field}:")),
            "{body}: {message:?} should name {field}"
        );
    }
    let (st, list) = app.get("/v1/channels", &alice).await;
    assert_eq!((st, list["channels"].as_array().unwrap().len()), (200, 0));

    // Made: the generated secret shown once, then only its hint.
    let (st, made) = app
        .post(
            "/v1/channels",
            &alice,
            json!({"name": "ops", "target": {"kind": "webhook", "url": url}}),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let secret = made["target"]["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{made}");
    let id = made["id"].as_str().unwrap();
    let (st, read) = app.get(&format!("/v1/channels/{id}"), &alice).await;
    assert_eq!(st, 200);
    assert_eq!(read["target"].get("secret"), None, "{read}");
    assert_eq!(
        read["secret_hint"].as_str().unwrap(),
        format!("whsec_…{}", &secret[secret.len() - 4..])
    );
    let (st, again) = app
        .post(
            "/v1/channels",
            &alice,
            json!({"name": "ops", "target": {"kind": "webhook", "url": url}}),
        )
        .await;
    assert_eq!(st, 409, "{again}");

    // A new URL keeps the secret; a rename; someone else's is a 404.
    let (st, moved) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/channels/{id}"),
            &alice,
            Some(json!({"name": "ops hook", "target": {"kind": "webhook", "url": format!("{url}?v=2")}})),
        )
        .await;
    assert_eq!(st, 200, "{moved}");
    assert_eq!(moved["name"], "ops hook");
    assert_eq!(moved["secret_hint"], read["secret_hint"]);
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let (st, _) = app
            .call(method, &format!("/v1/channels/{id}"), &bob, None)
            .await;
        assert_eq!(st, 404);
    }
    let (st, _) = app
        .post(&format!("/v1/channels/{id}/test"), &bob, json!({}))
        .await;
    assert_eq!(st, 404);

    // A schedule may deliver only to its owner's channels.
    let schedule = json!({"prompt": "x", "trigger": {"every_secs": 3600}, "deliver": [id]});
    let (st, err) = app.post("/v1/schedules", &bob, schedule.clone()).await;
    assert_eq!(st, 422, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("deliver:")
    );
    let (st, mine) = app.post("/v1/schedules", &alice, schedule).await;
    assert_eq!(st, 201, "{mine}");
    assert_eq!(mine["deliver"], json!([id]));
    let (_, read) = app.get(&format!("/v1/channels/{id}"), &alice).await;
    assert_eq!(read["schedules"], 1);

    // Deleted: the schedule no longer delivers to it.
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/channels/{id}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    let (_, after) = app
        .get(
            &format!("/v1/schedules/{}", mine["id"].as_str().unwrap()),
            &alice,
        )
        .await;
    assert_eq!(after["deliver"], json!([]));
}

async fn a_webhook_that_fails_twice_gets_one_signed_delivery(b: Backend) {
    let app = App::start_with(b, &allow_loopback()).await;
    let alice = app.user("alice").await;
    let (flaky, flaky_url) = Receiver::start(2).await;
    // A receiver that is gone: nothing listens on its port.
    let dead_url = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", l.local_addr().unwrap())
    };
    let mut channels = Vec::new();
    let mut secret = String::new();
    for (name, url) in [("flaky", &flaky_url), ("dead", &dead_url)] {
        let (st, made) = app
            .post(
                "/v1/channels",
                &alice,
                json!({"name": name, "target": {"kind": "webhook", "url": url}}),
            )
            .await;
        assert_eq!(st, 201, "{made}");
        if name == "flaky" {
            secret = made["target"]["secret"].as_str().unwrap().to_owned();
        }
        channels.push(made["id"].as_str().unwrap().to_owned());
    }
    let at = weft_shared::time::rfc3339(weft_shared::time::now_ms() + 1500);
    let (st, schedule) = app
        .post(
            "/v1/schedules",
            &alice,
            json!({"name": "digest", "prompt": "summarise the day", "trigger": {"at": at},
                   "deliver": channels}),
        )
        .await;
    assert_eq!(st, 201, "{schedule}");
    let fires = format!("/v1/schedules/{}/fires", schedule["id"].as_str().unwrap());

    // Two 503s, then the 200 (backoff 2 s, then 4 s).
    let seen = eventually(
        Duration::from_secs(60),
        "three tries at the flaky receiver",
        async || {
            let seen = flaky.seen();
            if seen.len() >= 3 {
                Ok(seen)
            } else {
                Err(seen.len())
            }
        },
    )
    .await;
    let history = eventually(
        Duration::from_secs(20),
        "the delivery recorded",
        async || {
            let (_, list) = app.get(&fires, &alice).await;
            let d = list["fires"][0]["deliveries"].clone();
            let flaky = d
                .as_array()
                .and_then(|d| d.iter().find(|x| x["channel_name"] == "flaky").cloned());
            match flaky {
                Some(f) if f["status"] == "delivered" => Ok(list),
                _ => Err(list),
            }
        },
    )
    .await;
    let fire = &history["fires"][0];
    assert_eq!(fire["outcome"], "started", "{history}");
    let of = |name: &str| -> Value {
        fire["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["channel_name"] == name)
            .cloned()
            .unwrap()
    };
    let delivered = of("flaky");
    assert_eq!(delivered["attempts"], 3, "{delivered}");
    assert_eq!(delivered["notification_kind"], "schedule_finished");
    assert_eq!(delivered["run_id"], fire["run_id"]);
    // The dead receiver did not hold it back: still trying, its error shown.
    let dead = of("dead");
    assert_eq!(dead["status"], "pending", "{dead}");
    assert!(dead["attempts"].as_u64().unwrap() >= 1, "{dead}");
    assert!(
        !dead["error"].as_str().unwrap_or_default().is_empty(),
        "{dead}"
    );

    // One delivery: every try the same id, signed over its own body; nothing after the 200.
    let id = delivered["id"].as_str().unwrap();
    for (headers, body) in &seen {
        assert_eq!(headers["weft-delivery"], id);
        assert_eq!(headers["weft-event"], "schedule.finished");
        let sig = headers["weft-signature"].to_str().unwrap();
        assert!(signed(sig, &secret, body), "{sig} over {body}");
        assert!(!signed(sig, "whsec_wrong", body));
        let payload: Value = serde_json::from_str(body).unwrap();
        assert_eq!(payload["id"], id);
        assert_eq!(payload["title"], "digest");
        assert_eq!(payload["run_id"], fire["run_id"]);
        assert!(
            payload["text"].as_str().unwrap().starts_with("succeeded: "),
            "{payload}"
        );
    }
    // The job is done: a retry of anything would have come within 2 s.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(flaky.seen().len(), 3);
    let (_, channel) = app
        .get(&format!("/v1/channels/{}", channels[0]), &alice)
        .await;
    assert_eq!(channel["last_delivery"]["status"], "delivered", "{channel}");
}

async fn email_goes_through_a_real_smtp_server(b: Backend) {
    let maildir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut smtp = tokio::process::Command::new(python())
        .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
        .args(["-c", "aiosmtpd.handlers.Mailbox"])
        .arg(maildir.path().join("box"))
        .kill_on_drop(true)
        .spawn()
        .expect("aiosmtpd (pip install aiosmtpd into WEFT_PYTHON's venv)");
    eventually(Duration::from_secs(20), "aiosmtpd listening", async || {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await
    })
    .await;
    let url = format!("smtp://127.0.0.1:{port}");
    let app = App::start_with(
        b,
        &[
            ("WEFT_EMAIL__SMTP_URL", url.as_str()),
            ("WEFT_EMAIL__FROM", "Weft <weft@weft.test>"),
            allow_loopback()[0],
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let (st, err) = app
        .post(
            "/v1/channels",
            &alice,
            json!({"name": "mail", "target": {"kind": "email", "to": "alice at example.com"}}),
        )
        .await;
    assert_eq!(st, 422, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("target.to:")
    );
    let (st, made) = app
        .post(
            "/v1/channels",
            &alice,
            json!({"name": "mail", "target": {"kind": "email", "to": "alice@example.com"}}),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let id = made["id"].as_str().unwrap();
    let (st, test) = app
        .post(&format!("/v1/channels/{id}/test"), &alice, json!({}))
        .await;
    assert_eq!(st, 202, "{test}");
    assert_eq!(test["status"], "pending");
    let delivery = test["id"].as_str().unwrap();
    eventually(
        Duration::from_secs(30),
        "the test email delivered",
        async || {
            let (_, list) = app
                .get(&format!("/v1/channels/{id}/deliveries"), &alice)
                .await;
            match list["deliveries"][0]["status"].as_str() {
                Some("delivered") => Ok(()),
                _ => Err(list),
            }
        },
    )
    .await;
    let new = maildir.path().join("box").join("new");
    let mails: Vec<String> = std::fs::read_dir(&new)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let mail = &mails[0];
    assert!(mail.contains("Subject: [Weft] Test: mail"), "{mail}");
    assert!(mail.contains("To: alice@example.com"), "{mail}");
    assert!(
        mail.contains(&format!("Message-ID: <{delivery}@weft.test>")),
        "{mail}"
    );
    assert!(mail.contains("This is a test message from Weft"), "{mail}");
    // Turned into a webhook: it gets a secret, shown in this answer.
    let (_receiver, url) = Receiver::start(0).await;
    let (st, moved) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/channels/{id}"),
            &alice,
            Some(json!({"target": {"kind": "webhook", "url": url}})),
        )
        .await;
    assert_eq!(st, 200, "{moved}");
    assert!(
        moved["target"]["secret"]
            .as_str()
            .is_some_and(|s| s.starts_with("whsec_")),
        "{moved}"
    );
    // The inbox has it, already read.
    let (_, inbox) = app.get("/v1/me/notifications", &alice).await;
    assert_eq!(inbox["unread"], 0);
    assert_eq!(inbox["notifications"][0]["kind"], "channel_test");
    smtp.kill().await.ok();
}

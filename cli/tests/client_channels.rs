//! `weft channels …` against a live `weft up` (gateway and worker in one
//! process): a webhook channel made with its secret printed once, a test that
//! waits and lands once at a receiver on 127.0.0.1, signed with that secret;
//! a receiver that refuses it failing the wait with its answer; URLs the SSRF
//! guard refuses and names taken refused with the gateway's words; list,
//! deliveries, rename and rm.

mod client_support;

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use client_support::{Server, api, assert_code, run, stderr, stdout};

/// The receiver is on 127.0.0.1, which the SSRF guard refuses unless the
/// admin allows it.
const ALLOW_LOOPBACK: (&str, &str) = ("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]");

/// A webhook receiver on 127.0.0.1: `/hook` answers 200, `/gone` 410; every
/// POST's headers and body are kept.
struct Receiver {
    seen: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    base: String,
    _rt: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<(HeaderMap, String)>>> = Arc::default();
        let keep = |answer: (StatusCode, &'static str)| {
            let seen = seen.clone();
            move |headers: HeaderMap, body: String| {
                seen.lock().unwrap().push((headers, body));
                async move { answer }
            }
        };
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(keep((StatusCode::OK, "ok"))))
            .route(
                "/gone",
                axum::routing::post(keep((StatusCode::GONE, "this hook was removed"))),
            );
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(async move { axum::serve(listener, app).await });
        Receiver {
            seen,
            base,
            _rt: rt,
        }
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
    if t.parse::<u64>().is_err() {
        return false;
    }
    let Ok(sent) = hex::decode(v1) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    mac.verify_slice(&sent).is_ok()
}

fn channels(s: &Server, args: &[&str]) -> std::process::Output {
    let mut cmd = s.weft();
    cmd.arg("channels").args(args);
    run(cmd, None)
}

/// The line of `text` that contains `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

/// The last `n` cells of a table row (cells without spaces).
fn last_cells(row: &str, n: usize) -> Vec<&str> {
    let cells: Vec<&str> = row.split_whitespace().collect();
    cells[cells.len().saturating_sub(n)..].to_vec()
}

#[test]
fn a_webhook_channel_is_made_tested_and_removed_from_the_terminal() {
    let s = Server::start_env(true, &[ALLOW_LOOPBACK]);
    let hook = Receiver::start();

    let out = channels(&s, &[]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).starts_with("no channels yet"),
        "{}",
        stdout(&out)
    );

    // Made without a secret: the gateway's, printed this once.
    let url = format!("{}/hook", hook.base);
    let out = channels(&s, &["add", "ops-hook", "--webhook", &url]);
    assert_code(&out, 0);
    let said = stdout(&out);
    assert!(
        line_with(&said, "created channel ops-hook (").ends_with(&format!("): webhook {url}")),
        "{said}"
    );
    let secret = line_with(&said, "secret: ")
        .trim_start_matches("secret: ")
        .to_string();
    assert!(secret.starts_with("whsec_"), "{said}");
    assert!(said.contains("will not be shown again"), "{said}");
    let (_, listed) = api(&s, reqwest::Method::GET, "/v1/channels", None);
    let made = &listed["channels"][0];
    assert!(made["target"].get("secret").is_none(), "{listed}");
    let id = made["id"].as_str().unwrap().to_string();
    let short = &id[id.len() - 8..];

    // Listed: kind, where it posts, no schedules, nothing delivered yet.
    let out = channels(&s, &["list"]);
    assert_code(&out, 0);
    let listed = stdout(&out);
    assert!(listed.starts_with("ID "), "{listed}");
    let row = line_with(&listed, short);
    assert!(
        row.contains("ops-hook") && row.contains("webhook") && row.contains(&url),
        "{listed}"
    );
    assert_eq!(last_cells(row, 3), ["0", "-", "-"], "{listed}");

    // A test, waited for: delivered once, signed with the printed secret.
    let out = channels(&s, &["test", "ops-hook", "--wait"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("delivered to ops-hook (1 attempt)"),
        "{}",
        stdout(&out)
    );
    let seen = hook.seen();
    assert_eq!(seen.len(), 1, "one POST, not {}", seen.len());
    let (headers, body) = &seen[0];
    let signature = headers["weft-signature"].to_str().unwrap();
    assert!(signed(signature, &secret, body), "{signature} over {body}");
    assert!(!signed(signature, "whsec_another", body));
    assert_eq!(headers["weft-event"], "channel.test");
    let payload: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(payload["event"], "channel.test");
    assert_eq!(payload["id"], headers["weft-delivery"].to_str().unwrap());

    let row = line_with(&stdout(&channels(&s, &[])), short).to_string();
    assert_eq!(last_cells(&row, 3), ["0", "-", "delivered"], "{row}");
    let out = channels(&s, &["deliveries", short]);
    assert_code(&out, 0);
    let history = stdout(&out);
    assert!(history.starts_with("CREATED "), "{history}");
    let row = line_with(&history, " test ");
    assert!(
        row.contains("delivered") && row.contains(" 1 "),
        "{history}"
    );

    // A name taken, a URL the SSRF guard refuses, a short secret: the
    // gateway's words, exit 1, nothing made.
    let out = channels(&s, &["add", "ops-hook", "--webhook", &url]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("name: you have a channel of that name"),
        "{}",
        stderr(&out)
    );
    let out = channels(&s, &["add", "lan", "--webhook", "http://10.0.0.1/"]);
    assert_code(&out, 1);
    assert!(stderr(&out).contains("target.url"), "{}", stderr(&out));
    let out = channels(&s, &["add", "short", "--webhook", &url, "--secret", "tiny"]);
    assert_code(&out, 1);
    assert!(stderr(&out).contains("target.secret"), "{}", stderr(&out));
    let (_, listed) = api(&s, reqwest::Method::GET, "/v1/channels", None);
    assert_eq!(listed["channels"].as_array().unwrap().len(), 1, "{listed}");

    // Rename by short id; rm by the new name; a second rm finds nothing.
    let out = channels(&s, &["rename", short, "alerts"]);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), format!("renamed {short} to alerts\n"));
    // Waits on: the channel also takes the questions of alice's own runs.
    let out = channels(&s, &["waits", "alerts", "on"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("now also gets every question"),
        "{}",
        stdout(&out)
    );
    let (_, listed) = api(&s, reqwest::Method::GET, "/v1/channels", None);
    assert_eq!(listed["channels"][0]["waits"], true, "{listed}");
    let table = stdout(&channels(&s, &[]));
    assert!(
        table.contains("WAITS") && table.contains(" yes "),
        "{table}"
    );
    let out = channels(&s, &["rm", "alerts"]);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), format!("deleted channel alerts ({short})\n"));
    assert!(stdout(&channels(&s, &[])).starts_with("no channels yet"));
    let out = channels(&s, &["rm", "alerts"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("no channel \"alerts\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_test_the_receiver_refuses_fails_the_wait_with_its_answer() {
    let s = Server::start_env(true, &[ALLOW_LOOPBACK]);
    let hook = Receiver::start();
    let url = format!("{}/gone", hook.base);
    let out = channels(
        &s,
        &[
            "add",
            "old-hook",
            "--webhook",
            &url,
            "--secret",
            "a-secret-of-our-own",
        ],
    );
    assert_code(&out, 0);
    let said = stdout(&out);
    assert!(!said.contains("a-secret-of-our-own"), "{said}");
    assert!(
        said.contains("signed with the secret you gave (…-own)"),
        "{said}"
    );

    // A 410 is no answer a retry fixes: failed at once, its words shown.
    let out = channels(&s, &["test", "old-hook", "--wait"]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("the test to old-hook failed (1 attempt)")
            && err.contains("410")
            && err.contains("this hook was removed"),
        "{err}"
    );
    assert_eq!(hook.seen().len(), 1);
    let row = line_with(&stdout(&channels(&s, &[])), "old-hook").to_string();
    assert!(row.contains("failed: ") && row.contains("410"), "{row}");
}

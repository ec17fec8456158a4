//! A connection dropped mid-run: the client re-attaches with `Last-Event-ID` (or
//! re-sends with the same `Idempotency-Key` when no event had arrived) and the
//! output is still exactly the reply, once.

mod client_support;

use client_support::proxy::{Cut, Proxy};
use client_support::{Server, assert_code, run, stdout};

fn words(n: usize) -> String {
    (1..=n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_stream_cut_mid_reply_is_resumed_without_gaps_or_repeats() {
    let s = Server::start();
    let proxy = Proxy::start(&s.url, Cut::AfterTextEvents(5));
    let mut cmd = s.weft();
    cmd.args([
        "--gateway",
        &proxy.url,
        "-p",
        "@mock.tokens 60 @mock.delay 0 15",
    ]);
    let out = run(cmd, None);
    assert!(proxy.did_cut(), "the proxy never cut the stream");
    assert_code(&out, 0);
    assert_eq!(stdout(&out), format!("{}\n", words(60)));
}

#[test]
fn a_send_whose_response_is_lost_is_not_sent_twice() {
    let s = Server::start();
    let proxy = Proxy::start(&s.url, Cut::BeforeFirstSseResponse);
    let mut cmd = s.weft();
    cmd.args([
        "--gateway",
        &proxy.url,
        "--output",
        "json",
        "-p",
        "@mock.reply once",
    ]);
    let out = run(cmd, None);
    assert!(proxy.did_cut(), "the proxy never cut the response");
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["response"], "once");

    let mut cmd = s.weft();
    cmd.args(["sessions", "show", v["session_id"].as_str().unwrap()]);
    let shown = stdout(&run(cmd, None));
    assert_eq!(shown.matches("[user]").count(), 1, "{shown}");
    assert_eq!(shown.matches("[assistant]").count(), 1, "{shown}");
}

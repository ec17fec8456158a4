//! Trouble: a killed worker, a card Lark refuses, rate limits, and a wrong app secret at start-up.

use weft_lark::fake::{FakeConfig, FakeLark};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    killed_worker_keeps_one_card,
    refused_card_falls_back,
    rate_limited_calls_are_retried,
    bad_secret_stops_start_up_clearly,
);

async fn killed_worker_keeps_one_card(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.tokens 120 @mock.delay 0 30");
    w.until("text on the card", |_| {
        w.replies(&msg)
            .into_iter()
            .find(|m| body(m).starts_with("w1 w2 w3"))
    })
    .await;
    match b {
        Backend::Distributed => {
            w.workers[0].kill();
            w.workers.push(App::spawn_worker(&w.env));
        }
        Backend::Embedded => w.restart_gateway(0).await,
    }
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    assert_eq!(body(&card), words(120), "complete at the end");
    assert_eq!(w.replies(&msg).len(), 1, "still one card after the crash");
}

async fn refused_card_falls_back(b: Backend) {
    let config = FakeConfig {
        card_table_limit: 1,
        ..fake_config()
    };
    let mut w = LarkWorld::start_with(b, 1, config, &[]).await;
    let tables = "tables:\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| c | d |\n|---|---|\n| 3 | 4 |";
    let msg = w.dm("ou_alice", tables);
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green");
    let text = body(&card);
    assert!(
        text.contains("| 3 | 4 |") && text.contains("```text"),
        "tables shown as text: {text}"
    );
    let refused = w
        .fake
        .records()
        .calls
        .iter()
        .filter(|c| c.code == 230099)
        .count();
    assert!(refused > 0, "the fake refused the card with tables first");
}

async fn rate_limited_calls_are_retried(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    w.fake
        .fail_next_calls(4, 429, 99991400, "request trigger frequency limit");
    let msg = w.dm("ou_alice", "@mock.tokens 30 @mock.delay 0 10");
    let card = w.final_card(&msg).await;
    assert_eq!(body(&card), words(30), "nothing lost");
    assert_eq!(w.replies(&msg).len(), 1);
    let limited = w
        .fake
        .records()
        .calls
        .iter()
        .filter(|c| c.status == 429)
        .count();
    assert_eq!(limited, 4);
}

async fn bad_secret_stops_start_up_clearly(b: Backend) {
    let fake = FakeLark::spawn(fake_config()).await.unwrap();
    let mut env = Env::new(b, &[]).await;
    env.extra.extend(lark_env(&fake));
    env.extra
        .push(("WEFT_LARK__APP_SECRET".into(), "wrong".into()));
    let cmd = if b == Backend::Embedded {
        "up"
    } else {
        "serve"
    };
    let mut command = env.command(&[cmd, "--listen", "127.0.0.1:0"]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("app secret invalid"),
        "Lark's own words: {stderr}"
    );
    assert!(stderr.contains("lark.app_secret"), "what to fix: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

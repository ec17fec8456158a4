//! Graceful drain (what a rolling upgrade does to each process): SIGTERM to a
//! gateway ends its event streams so clients re-attach through another gateway
//! and lose nothing; SIGTERM to a worker stops it claiming, lets runs that finish
//! within `worker.shutdown_grace_ms` finish, and releases the rest, which another
//! worker resumes — nothing lost, nothing duplicated. Distributed mode only: it
//! is the mode with more than one process of a kind.

use std::time::Duration;

use crate::harness::*;

mod sigterm_to_a_gateway_moves_its_streams_to_another {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn distributed() {
        super::sigterm_to_a_gateway_moves_its_streams_to_another().await
    }
}

mod sigterm_to_a_worker_finishes_short_runs_and_releases_long_ones {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn distributed() {
        super::sigterm_to_a_worker_finishes_short_runs_and_releases_long_ones().await
    }
}

async fn sigterm_to_a_gateway_moves_its_streams_to_another() {
    let mut app = App::start(Backend::Distributed).await;
    let second = Proc::spawn(
        app.env.command(&["serve", "--listen", "127.0.0.1:0"]),
        "listening on http://",
    );
    let other = format!("http://{}", second.addr.clone().unwrap());
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, "@mock.tokens 60 @mock.delay 0 50")
        .await;
    let before = sse.until(|e| e.ty == "text").await;
    let run = before[0].data["run_id"].as_str().unwrap().to_string();

    app.gateway.terminate();
    // The stream ends (no terminal event) instead of holding the drain up.
    let mut cut = Vec::new();
    while let Some(ev) = sse.next().await {
        cut.push(ev);
    }
    assert!(
        !cut.iter().any(|e| e.ty == "done"),
        "the reply is still running"
    );
    assert_eq!(
        app.gateway.exit_code(Duration::from_secs(15)).await,
        Some(0)
    );

    // Re-attach through the other gateway from the last seq received.
    let seen: Vec<Ev> = before.into_iter().chain(cut).collect();
    let last = seen.last().unwrap().seq;
    app.base = other;
    let rest = app
        .attach(&alice, &run, Some(last))
        .await
        .until_terminal()
        .await;
    let all: Vec<Ev> = seen.into_iter().chain(rest).collect();
    assert_contiguous(&all);
    assert_eq!(rendered_text(&all), words(60));
    assert_eq!(all.last().unwrap().ty, "done");
    drop(second);
}

async fn sigterm_to_a_worker_finishes_short_runs_and_releases_long_ones() {
    // A 3 s grace: the short reply (~0.5 s) finishes in it, the long one (~12 s) does not.
    let env = Env::new(
        Backend::Distributed,
        &[("WEFT_WORKER__SHUTDOWN_GRACE_MS", "3000")],
    )
    .await;
    let mut app = App::start_in(env, true);
    let alice = app.user("alice").await;
    let (s1, s2) = (app.session(&alice).await, app.session(&alice).await);
    let mut long = app
        .send_stream(&alice, &s1, "@mock.tokens 120 @mock.delay 0 100")
        .await;
    let mut short = app
        .send_stream(&alice, &s2, "@mock.tokens 10 @mock.delay 0 50")
        .await;
    let long_before = long.until(|e| e.ty == "text").await;
    let short_before = short.until(|e| e.ty == "text").await;
    let long_run = long_before[0].data["run_id"].as_str().unwrap().to_string();
    let short_run = short_before[0].data["run_id"].as_str().unwrap().to_string();

    app.workers[0].terminate();
    // Draining, it claims nothing new: a message sent now waits for the next worker.
    let s3 = app.session(&alice).await;
    let later = app.send(&alice, &s3, "@mock.reply after the drain").await;

    let short_all: Vec<Ev> = short_before
        .into_iter()
        .chain(short.until_terminal().await)
        .collect();
    assert_contiguous(&short_all);
    assert_eq!(rendered_text(&short_all), words(10));
    assert_eq!(
        app.workers[0].exit_code(Duration::from_secs(20)).await,
        Some(0),
        "the worker exits cleanly after its grace"
    );
    let (st, r) = app.get(&format!("/v1/runs/{short_run}"), &alice).await;
    assert_eq!(
        (st, r["status"].as_str(), r["attempt"].as_u64()),
        (200, Some("succeeded"), Some(1))
    );
    let (_, r) = app.get(&format!("/v1/runs/{later}"), &alice).await;
    assert_eq!(
        r["status"], "queued",
        "a draining worker claims nothing: {r}"
    );

    // The long run was released; a new worker resumes it and the later message.
    app.workers.push(App::spawn_worker(&app.env));
    let long_all: Vec<Ev> = long_before
        .into_iter()
        .chain(long.until_terminal().await)
        .collect();
    assert_contiguous(&long_all);
    assert_eq!(
        rendered_text(&long_all),
        words(120),
        "nothing lost or doubled"
    );
    let (_, r) = app.get(&format!("/v1/runs/{long_run}"), &alice).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("succeeded"), Some(2)),
        "{r}"
    );
    let done = app.wait_run(&alice, &later, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded");
    let finals = app
        .messages(&alice, &s1)
        .await
        .into_iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(finals, 1, "one reply for the long run");
}

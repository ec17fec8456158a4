//! Crash semantics: a worker killed mid-run (SIGKILL) and the run completing on
//! another worker without re-running checkpointed steps; Redis flushed (or, in
//! embedded mode, the process restarted) with runs queued, all still completing.

use std::time::Duration;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    killed_worker_run_completes_once,
    lost_queue_runs_still_complete,
    attempts_run_out,
    a_worker_never_takes_over_a_run_it_is_executing
);

/// Step 1 calls a tool (checkpointed); step 2 waits 3 s before replying: the
/// worker dies during step 2.
const TWO_STEPS: &str = "@mock.tool current_time {} @mock.delay 3000 10";

async fn killed_worker_run_completes_once(b: Backend) {
    let mut app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut stream = app.send_stream(&alice, &s, TWO_STEPS).await;
    let before = stream.until(|e| e.ty == "tool_end").await;
    let run = before[0].data["run_id"].as_str().unwrap().to_string();
    let tool_output = before.last().unwrap().data["output"]
        .as_str()
        .unwrap()
        .to_string();
    // Let the checkpoint land (the tool_end event precedes it by a moment).
    eventually(Duration::from_secs(10), "step 1 checkpointed", async || {
        let n = app.messages(&alice, &s).await.len();
        if n >= 3 { Ok(()) } else { Err(n) }
    })
    .await;

    let after = match b {
        Backend::Distributed => {
            app.workers[0].kill();
            app.workers.push(App::spawn_worker(&app.env));
            // The same client stream carries on: the gateway did not die.
            stream.until_terminal().await
        }
        Backend::Embedded => {
            drop(stream);
            app.restart_gateway();
            app.attach(&alice, &run, None).await.until_terminal().await
        }
    };
    let restart = after
        .iter()
        .find(|e| e.ty == "run_started")
        .expect("a new attempt started");
    assert_eq!(restart.data["attempt"], 2);
    assert_eq!(restart.data["resume_step"], 2, "step 1 was checkpointed");
    assert!(
        !after.iter().any(|e| e.ty == "tool_start"),
        "the tool did not run twice"
    );
    assert_eq!(after.last().unwrap().ty, "done");
    if b == Backend::Distributed {
        let all: Vec<_> = before.iter().chain(after.iter()).cloned().collect();
        assert_contiguous(&all);
        assert_eq!(
            rendered_text(&all),
            format!("tool current_time said: {tool_output}")
        );
    }
    let r = app.wait_run(&alice, &run, Duration::from_secs(30)).await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["attempt"], 2);
    let msgs = app.messages(&alice, &s).await;
    let finals: Vec<_> = msgs
        .iter()
        .filter(|m| m["role"] == "assistant" && m["tool_calls"].is_null())
        .collect();
    assert_eq!(finals.len(), 1, "exactly one final message: {msgs:?}");
    assert_eq!(
        finals[0]["content"],
        format!("tool current_time said: {tool_output}")
    );
    assert_eq!(msgs.iter().filter(|m| m["role"] == "tool").count(), 1);
}

async fn lost_queue_runs_still_complete(b: Backend) {
    let (mut app, runs, sessions, alice) = match b {
        Backend::Distributed => {
            // Gateway only: runs are accepted and queued, then Redis loses the jobs.
            let env = Env::new(b, &[]).await;
            let app = App::start_in(env, false);
            let alice = app.user("alice").await;
            let mut runs = Vec::new();
            let mut sessions = Vec::new();
            for i in 0..3 {
                let s = app.session(&alice).await;
                runs.push(
                    app.send(&alice, &s, &format!("queued {i} @mock.tokens 4"))
                        .await,
                );
                sessions.push(s);
            }
            app.env.flush_redis().await;
            (app, runs, sessions, alice)
        }
        Backend::Embedded => {
            // One slot: the first run holds it, the others wait in the in-process
            // queue — which dies with the process.
            let app = App::start_with(b, &[("WEFT_WORKER__CONCURRENCY", "1")]).await;
            let alice = app.user("alice").await;
            let mut runs = Vec::new();
            let mut sessions = Vec::new();
            for i in 0..3 {
                let s = app.session(&alice).await;
                let text = if i == 0 {
                    "@mock.tokens 100 @mock.delay 0 50".to_string()
                } else {
                    format!("queued {i} @mock.tokens 4")
                };
                runs.push(app.send(&alice, &s, &text).await);
                sessions.push(s);
            }
            (app, runs, sessions, alice)
        }
    };
    match b {
        Backend::Distributed => app.workers.push(App::spawn_worker(&app.env)),
        Backend::Embedded => app.restart_gateway(),
    }
    for (run, s) in runs.iter().zip(&sessions) {
        let r = app.wait_run(&alice, run, Duration::from_secs(30)).await;
        assert_eq!(r["status"], "succeeded", "{r}");
        let msgs = app.messages(&alice, s).await;
        assert_eq!(
            msgs.iter().filter(|m| m["role"] == "assistant").count(),
            1,
            "one reply: {msgs:?}"
        );
    }
}

/// With one attempt allowed, a run whose worker dies fails with a clear error
/// instead of looping; a message waiting behind it still gets its run.
async fn attempts_run_out(b: Backend) {
    let mut app = App::start_with(b, &[("WEFT_WORKER__MAX_ATTEMPTS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut stream = app
        .send_stream(&alice, &s, "@mock.tokens 200 @mock.delay 0 20")
        .await;
    let head = stream.until(|e| e.ty == "text").await;
    let run = head[0].data["run_id"].as_str().unwrap().to_string();
    let (st, _) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            serde_json::json!({"text": "after @mock.reply next"}),
        )
        .await;
    assert_eq!(st, 202);
    drop(stream);
    match b {
        Backend::Distributed => {
            app.workers[0].kill();
            app.workers.push(App::spawn_worker(&app.env));
        }
        Backend::Embedded => app.restart_gateway(),
    }
    let r = app.wait_run(&alice, &run, Duration::from_secs(30)).await;
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["code"], "attempts_exhausted");
    let events = app.attach(&alice, &run, None).await.until_terminal().await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.ty.as_str(), last.data["code"].as_str()),
        ("error", Some("attempts_exhausted"))
    );
    eventually(
        Duration::from_secs(20),
        "the waiting message answered",
        async || {
            let msgs = app.messages(&alice, &s).await;
            let answered = msgs
                .last()
                .is_some_and(|m| m["role"] == "assistant" && m["content"] == "next");
            if answered { Ok(()) } else { Err(msgs) }
        },
    )
    .await;
}

/// Heartbeats that never land (what a terminated database connection does to
/// them) make the lease of a live attempt look stale, and the reaper queues the
/// run again. The worker executing it must not take it over from itself: the
/// run ends once, on its first attempt, instead of being claimed again beside
/// the live attempt until its attempts run out.
async fn a_worker_never_takes_over_a_run_it_is_executing(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    // Every refresh of a running attempt's lease is undone; a claim (a new
    // attempt) and the run's end still change the row.
    let freeze = match b {
        Backend::Distributed => {
            "create function freeze_heartbeat() returns trigger language plpgsql as $$
             begin
               if new.attempt = old.attempt and new.status = 'running' and old.status = 'running' then
                 new.heartbeat_at := old.heartbeat_at;
               end if;
               return new;
             end $$;
             create trigger freeze_heartbeat before update on runs
               for each row execute function freeze_heartbeat();"
        }
        Backend::Embedded => {
            "create trigger freeze_heartbeat after update of heartbeat_at on runs
             when new.attempt = old.attempt and new.status = 'running' and old.status = 'running'
               and new.heartbeat_at <> old.heartbeat_at
             begin update runs set heartbeat_at = old.heartbeat_at where id = new.id; end;"
        }
    };
    app.execute_sql(freeze).await;
    // The lease goes stale after 1.5 s and the reaper looks every 250 ms: the
    // run is queued again about ten times while its reply streams.
    let mut stream = app
        .send_stream(&alice, &s, "@mock.tokens 40 @mock.delay 100 100")
        .await;
    let events = stream.until_terminal().await;
    let run = events[0].data["run_id"].as_str().unwrap().to_string();
    let starts: Vec<_> = events.iter().filter(|e| e.ty == "run_started").collect();
    assert_eq!(starts.len(), 1, "one attempt: {starts:?}");
    assert_eq!(events.last().unwrap().ty, "done", "{:?}", events.last());
    assert_contiguous(&events);
    let words: Vec<String> = (1..=40).map(|i| format!("w{i}")).collect();
    assert_eq!(rendered_text(&events), words.join(" "));
    let r = app.wait_run(&alice, &run, Duration::from_secs(20)).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_i64()),
        (Some("succeeded"), Some(1)),
        "{r}"
    );
    assert!(
        app.logs().contains("reaper re-enqueued runs"),
        "the lease never looked stale: the test proved nothing"
    );
}

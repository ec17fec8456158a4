//! Streaming a run end to end, re-attaching with Last-Event-ID, two clients on one
//! run, retries inside a step, and the session stream.

use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    stream_end_to_end,
    reattach_exactly_once,
    two_clients_see_the_same_run,
    transient_errors_are_retried,
    session_stream,
    events_expire_after_retention,
    tool_call_round_trip
);

async fn stream_end_to_end(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "hello @mock.tokens 40 @mock.think 3")
        .await
        .until_terminal()
        .await;
    assert_contiguous(&events);
    assert_eq!(events[0].ty, "run_started");
    assert_eq!(events[0].data["attempt"], 1);
    assert_eq!(events[0].data["resume_step"], 1);
    assert!(
        events.iter().any(|e| e.ty == "thinking"),
        "thinking streamed"
    );
    let last = events.last().unwrap();
    assert_eq!(last.ty, "done", "{last:?}");
    assert_eq!(rendered_text(&events), words(40));
    assert!(last.data["usage"]["output"].as_u64().unwrap() >= 40);

    let run_id = events[0].data["run_id"].as_str().unwrap();
    let (_, run) = app.get(&format!("/v1/runs/{run_id}"), &alice).await;
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["final_message_id"], last.data["message_id"]);
    let msgs = app.messages(&alice, &s).await;
    let roles: Vec<_> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(msgs[1]["content"], words(40));
    let (_, session) = app.get(&format!("/v1/sessions/{s}"), &alice).await;
    assert_eq!(session["active_run_id"], serde_json::Value::Null);
    assert_eq!(
        session["title"], "hello @mock.tokens 40 @mock.think 3",
        "titled from the first message"
    );
}

async fn reattach_exactly_once(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut first = app
        .send_stream(&alice, &s, "@mock.tokens 80 @mock.delay 0 15")
        .await;
    let seen = first.until(|e| e.ty == "text" && e.seq >= 6).await;
    drop(first); // the client drops mid-stream
    let run = seen[0].data["run_id"].as_str().unwrap().to_string();
    let last = seen.last().unwrap().seq;
    let rest = app
        .attach(&alice, &run, Some(last))
        .await
        .until_terminal()
        .await;
    assert!(rest[0].seq == last + 1, "resumes right after Last-Event-ID");
    let all: Vec<Ev> = seen.into_iter().chain(rest).collect();
    assert_contiguous(&all);
    assert_eq!(all.last().unwrap().ty, "done");
    assert_eq!(rendered_text(&all), words(80), "every token exactly once");

    // `?after=` works like the header, and a finished run replays then closes.
    let resp = app
        .http
        .get(app.url(&format!("/v1/runs/{run}/events?after=3")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    let text = resp.text().await.unwrap();
    assert!(
        text.starts_with("id: 4\n"),
        "{}",
        &text[..text.len().min(80)]
    );
    assert!(text.contains("event: done"));
}

async fn two_clients_see_the_same_run(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let run = app
        .send(&alice, &s, "@mock.tokens 50 @mock.delay 50 10")
        .await;
    let (a, b2) = tokio::join!(
        async { app.attach(&alice, &run, None).await.until_terminal().await },
        async { app.attach(&alice, &run, None).await.until_terminal().await },
    );
    assert_contiguous(&a);
    assert_eq!(
        a.iter().map(|e| (e.seq, e.ty.clone())).collect::<Vec<_>>(),
        b2.iter().map(|e| (e.seq, e.ty.clone())).collect::<Vec<_>>()
    );
    assert_eq!(rendered_text(&a), words(50));
    assert_eq!(rendered_text(&b2), words(50));
}

async fn transient_errors_are_retried(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "@mock.fail 503 times=2 @mock.tokens 5")
        .await
        .until_terminal()
        .await;
    assert_contiguous(&events);
    let retries: Vec<_> = events.iter().filter(|e| e.ty == "retrying").collect();
    assert_eq!(retries.len(), 2, "{events:?}");
    assert_eq!(
        events.last().unwrap().ty,
        "done",
        "recovered, no terminal error"
    );
    assert_eq!(rendered_text(&events), words(5));

    // A non-transient upstream error fails the run with a clear error event.
    let events = app
        .send_stream(&alice, &s, "@mock.fail 400")
        .await
        .until_terminal()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.ty, "error");
    assert_eq!(last.data["code"], "upstream_error");
}

async fn session_stream(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let resp = app
        .http
        .get(app.url(&format!("/v1/sessions/{s}/stream")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204, "idle session");
    let run = app
        .send(&alice, &s, "@mock.tokens 30 @mock.delay 100 10")
        .await;
    let resp = app
        .http
        .get(app.url(&format!("/v1/sessions/{s}/stream")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.contains(&run), "attached to the active run");
    assert!(text.contains("event: done"));
}

async fn events_expire_after_retention(b: Backend) {
    let app = App::start_with(b, &[("WEFT_EVENTS__RETENTION_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "@mock.tokens 3")
        .await
        .until_terminal()
        .await;
    let run = events[0].data["run_id"].as_str().unwrap().to_string();
    let body = eventually(
        std::time::Duration::from_secs(10),
        "the log expired (410)",
        async || {
            let (status, body) = app.get(&format!("/v1/runs/{run}/events"), &alice).await;
            if status == 410 { Ok(body) } else { Err(status) }
        },
    )
    .await;
    assert_eq!(body["error"]["code"], "events_expired");
    // The reply itself is safe in the database.
    assert_eq!(app.messages(&alice, &s).await[1]["content"], words(3));
}

async fn tool_call_round_trip(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "what time is it? @mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    assert_contiguous(&events);
    let start = events
        .iter()
        .find(|e| e.ty == "tool_start")
        .expect("tool_start");
    let end = events
        .iter()
        .find(|e| e.ty == "tool_end")
        .expect("tool_end");
    assert_eq!(start.data["name"], "current_time");
    assert_eq!(end.data["ok"], true);
    assert_eq!(end.data["call_id"], start.data["call_id"]);
    let output = end.data["output"].as_str().unwrap();
    assert_eq!(
        rendered_text(&events),
        format!("tool current_time said: {output}")
    );
    let msgs = app.messages(&alice, &s).await;
    let roles: Vec<_> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "checkpointed step + final reply"
    );
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "current_time");

    // In `chat` mode the model gets no tools.
    let (st, _) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/sessions/{s}"),
            &alice,
            Some(json!({"mode": "chat"})),
        )
        .await;
    assert_eq!(st, 200);
}

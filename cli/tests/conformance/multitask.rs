//! Double texting (enqueue / interrupt / reject), cancel and idempotent retries.

use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    enqueue_runs_waiting_messages_after,
    interrupt_cancels_and_keeps_partial,
    reject_answers_409,
    cancel_keeps_partial_text,
    idempotent_retries
);

const SLOW: &str = "@mock.tokens 200 @mock.delay 0 20";

async fn enqueue_runs_waiting_messages_after(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut first = app
        .send_stream(&alice, &s, "@mock.tokens 30 @mock.delay 0 20")
        .await;
    let head = first.until(|e| e.ty == "text").await;
    let run1 = head[0].data["run_id"].as_str().unwrap().to_string();
    let mut queued = Vec::new();
    for text in ["second @mock.reply got both", "third"] {
        let (st, v) = app
            .post(
                &format!("/v1/sessions/{s}/messages"),
                &alice,
                json!({"text": text, "multitask": "enqueue"}),
            )
            .await;
        assert_eq!(st, 202, "{v}");
        assert_eq!(v["status"], "queued");
        assert_eq!(v["active_run_id"], run1.as_str());
        queued.push(v["message_id"].as_str().unwrap().to_string());
    }
    let rest = first.until_terminal().await;
    assert_eq!(rest.last().unwrap().ty, "done");
    // Both waiting messages became ONE follow-up run.
    let msgs = eventually(
        std::time::Duration::from_secs(20),
        "the follow-up answered",
        async || {
            let msgs = app.messages(&alice, &s).await;
            if msgs.len() >= 5 && msgs.last().unwrap()["role"] == "assistant" {
                Ok(msgs)
            } else {
                Err(msgs)
            }
        },
    )
    .await;
    let roles: Vec<_> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "user", "assistant"]);
    assert_eq!(
        msgs[2]["run_id"], msgs[3]["run_id"],
        "one follow-up run for both"
    );
    assert_eq!(msgs[4]["run_id"], msgs[3]["run_id"]);
    assert_eq!(
        msgs[4]["content"], "You said: third",
        "the follow-up answers the latest message"
    );
}

async fn interrupt_cancels_and_keeps_partial(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut first = app.send_stream(&alice, &s, SLOW).await;
    let head = first.until(|e| e.ty == "text" && e.seq >= 4).await;
    let run1 = head[0].data["run_id"].as_str().unwrap().to_string();
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "stop, new question", "multitask": "interrupt"}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let run2 = v["run_id"].as_str().unwrap().to_string();
    assert_ne!(run2, run1);
    let rest = first.until_terminal().await;
    let end = rest.last().unwrap();
    assert_eq!(end.ty, "cancelled");
    assert_eq!(end.data["by"], "interrupt");
    let partial = rendered_text(&head.iter().chain(rest.iter()).cloned().collect::<Vec<_>>());
    assert!(!partial.is_empty() && words(200).starts_with(&partial));
    let r2 = app
        .wait_run(&alice, &run2, std::time::Duration::from_secs(20))
        .await;
    assert_eq!(r2["status"], "succeeded");
    let (_, r1) = app.get(&format!("/v1/runs/{run1}"), &alice).await;
    assert_eq!(r1["status"], "cancelled");
    let msgs = app.messages(&alice, &s).await;
    let kept: Vec<_> = msgs
        .iter()
        .filter(|m| m["run_id"] == run1.as_str() && m["role"] == "assistant")
        .collect();
    assert_eq!(kept.len(), 1, "partial output kept once");
    assert_eq!(kept[0]["content"].as_str().unwrap(), partial);
}

async fn reject_answers_409(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let run = app.send(&alice, &s, SLOW).await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "again", "multitask": "reject"}),
        )
        .await;
    assert_eq!(st, 409);
    assert_eq!(v["error"]["code"], "run_active");
    let msgs = app.messages(&alice, &s).await;
    assert_eq!(msgs.len(), 1, "the rejected message was not stored");
    app.post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
}

async fn cancel_keeps_partial_text(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut stream = app.send_stream(&alice, &s, SLOW).await;
    let head = stream.until(|e| e.ty == "text" && e.seq >= 5).await;
    let run = head[0].data["run_id"].as_str().unwrap().to_string();
    let (st, v) = app
        .post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
    assert_eq!(st, 202, "{v}");
    let rest = stream.until_terminal().await;
    let all: Vec<_> = head.into_iter().chain(rest).collect();
    assert_contiguous(&all);
    assert_eq!(all.last().unwrap().ty, "cancelled");
    let partial = rendered_text(&all);
    assert!(!partial.is_empty() && partial.len() < words(200).len());
    let (_, r) = app.get(&format!("/v1/runs/{run}"), &alice).await;
    assert_eq!(r["status"], "cancelled");
    let msgs = app.messages(&alice, &s).await;
    assert_eq!(
        msgs.last().unwrap()["content"].as_str().unwrap(),
        partial,
        "partial text kept as the message"
    );
    // Cancel is idempotent.
    let (st, v) = app
        .post(&format!("/v1/runs/{run}/cancel"), &alice, json!({}))
        .await;
    assert_eq!((st, v["status"].as_str()), (202, Some("cancelled")));
}

async fn idempotent_retries(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let send = || async {
        let resp = app
            .http
            .post(app.url(&format!("/v1/sessions/{s}/messages")))
            .bearer_auth(&alice)
            .header("Idempotency-Key", "retry-me-1")
            .json(&json!({"text": "once @mock.tokens 3"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        resp.json::<serde_json::Value>().await.unwrap()
    };
    let a = send().await;
    let b2 = send().await;
    assert_eq!(a["run_id"], b2["run_id"]);
    assert_eq!(a["message_id"], b2["message_id"]);
    app.wait_run(
        &alice,
        a["run_id"].as_str().unwrap(),
        std::time::Duration::from_secs(20),
    )
    .await;
    let c = send().await;
    assert_eq!(
        c["run_id"], a["run_id"],
        "still the same after the run ended"
    );
    let msgs = app.messages(&alice, &s).await;
    assert_eq!(msgs.iter().filter(|m| m["role"] == "user").count(), 1);
    assert_eq!(msgs.iter().filter(|m| m["role"] == "assistant").count(), 1);
}

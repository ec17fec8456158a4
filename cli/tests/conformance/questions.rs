//! Questions the agent asks (docs/protocol.md, "Questions"; issue 28's "Asking
//! the user" on issue 24's waits): `ask_user` suspends the run as
//! `waiting_input` without holding a worker, the owner's first answer resumes
//! the same run on any worker and reaches the model as the call's result; a
//! question nobody answers expires, and the model is told.

use std::time::Duration;

use serde_json::json;

use crate::approvals::tool_message;
use crate::harness::*;

crate::both_backends!(
    a_question_waits_without_a_worker_and_the_first_answer_resumes_the_same_run,
    an_unanswered_question_expires_and_the_model_is_told,
);

const ASK: &str = r#"@mock.reply Let me ask. @mock.tool ask_user {"question": "Which colour?", "options": ["red", "blue"], "allow_text": false}"#;

async fn answer(
    app: &App,
    token: &str,
    question: &str,
    answer: serde_json::Value,
) -> (u16, serde_json::Value) {
    app.post(
        &format!("/v1/questions/{question}"),
        token,
        json!({ "answer": answer }),
    )
    .await
}

async fn a_question_waits_without_a_worker_and_the_first_answer_resumes_the_same_run(b: Backend) {
    // One slot: while the run waits, another user's run must still get through.
    let app = App::start_with(b, &[("WEFT_WORKER__CONCURRENCY", "1")]).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let mut sse = app.send_stream(&alice, &s, ASK).await;
    let before = sse.until(|e| e.ty == "question").await;
    let asked = before.last().unwrap().data.clone();
    assert_eq!(asked["question"], "Which colour?");
    assert_eq!(asked["options"], json!(["red", "blue"]));
    assert_eq!(
        (asked["multiple"].as_bool(), asked["allow_text"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(asked["expires_at"].as_i64().unwrap() > asked["ts"].as_i64().unwrap());
    let question = asked["question_id"].as_str().unwrap().to_string();
    let run = asked["run_id"].as_str().unwrap().to_string();
    assert!(
        tool_message(&before, "tool_start").is_empty(),
        "nothing ran"
    );

    eventually(
        Duration::from_secs(10),
        "the run waits for input",
        async || {
            let (_, v) = app.get(&format!("/v1/runs/{run}"), &alice).await;
            if v["status"] == "waiting_input" {
                Ok(())
            } else {
                Err(v["status"].clone())
            }
        },
    )
    .await;
    let (st, list) = app
        .get(&format!("/v1/sessions/{s}/questions"), &alice)
        .await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["questions"][0]["id"], question.as_str());
    assert_eq!(list["questions"][0]["status"], "pending");
    let (st, one) = app.get(&format!("/v1/questions/{question}"), &alice).await;
    assert_eq!((st, one["question"].as_str()), (200, Some("Which colour?")));

    // The only worker slot is free: bob's run completes meanwhile.
    let bs = app.session(&bob).await;
    let brun = app.send(&bob, &bs, "@mock.reply hi bob").await;
    let done = app.wait_run(&bob, &brun, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded");

    // Not bob's to answer or see; unknown ids do not exist; bad answers are 422
    // and change nothing.
    assert_eq!(answer(&app, &bob, &question, json!("red")).await.0, 404);
    assert_eq!(
        app.get(&format!("/v1/questions/{question}"), &bob).await.0,
        404
    );
    assert_eq!(
        app.get(&format!("/v1/sessions/{s}/questions"), &bob)
            .await
            .0,
        404
    );
    assert_eq!(answer(&app, &alice, "q_nope", json!("red")).await.0, 404);
    let (st, v) = answer(&app, &alice, &question, json!("green")).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (422, Some("validation_failed")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not one of the options"),
        "{v}"
    );
    assert_eq!(
        answer(&app, &alice, &question, json!(["red", "blue"]))
            .await
            .0,
        422
    );
    assert_eq!(answer(&app, &alice, &question, json!(7)).await.0, 422);
    // Busy: a new message waits behind the run instead of starting another.
    let (st, _) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "hello?", "multitask": "reject"}),
        )
        .await;
    assert_eq!(st, 409, "the waiting run is the session's active run");

    let (st, v) = answer(&app, &alice, &question, json!("blue")).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["answered_by"].as_str()),
        (Some("answered"), Some("alice"))
    );
    assert_eq!(v["answer"], json!(["blue"]));
    let (st, v) = answer(&app, &alice, &question, json!("red")).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("already_answered")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("by alice: blue"),
        "{v}"
    );

    let after = sse.until_terminal().await;
    let events: Vec<Ev> = before.into_iter().chain(after).collect();
    assert_contiguous(&events);
    let answered = tool_message(&events, "question_answered");
    assert_eq!(answered.len(), 1);
    assert_eq!(
        (answered[0]["status"].as_str(), answered[0]["by"].as_str()),
        (Some("answered"), Some("alice"))
    );
    assert_eq!(answered[0]["answer"], json!(["blue"]));
    assert!(
        events.iter().all(|e| e.data["run_id"] == run.as_str()),
        "one run throughout"
    );
    let end = tool_message(&events, "tool_end");
    assert_eq!((end.len(), end[0]["ok"].as_bool()), (1, Some(true)));
    assert_eq!(events.last().unwrap().ty, "done");
    assert_eq!(
        rendered_text(&events),
        "Let me ask.tool ask_user said: The user (alice) answered: blue"
    );
    let (_, list) = app
        .get(&format!("/v1/sessions/{s}/questions"), &alice)
        .await;
    assert_eq!(list["questions"].as_array().unwrap().len(), 0);
    // The run keeps it, answered, for its reply after a reload; to no one else.
    let (st, asked) = app.get(&format!("/v1/runs/{run}/questions"), &alice).await;
    assert_eq!(st, 200, "{asked}");
    let asked = asked["questions"].as_array().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0]["id"].as_str(), asked[0]["status"].as_str()),
        (Some(question.as_str()), Some("answered"))
    );
    assert_eq!(asked[0]["answer"], json!(["blue"]));
    assert_eq!(
        app.get(&format!("/v1/runs/{run}/questions"), &bob).await.0,
        404
    );
    let roles: Vec<_> = app
        .messages(&alice, &s)
        .await
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
}

async fn an_unanswered_question_expires_and_the_model_is_told(b: Backend) {
    let app = App::start_with(b, &[("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(
            &alice,
            &s,
            r#"@mock.tool ask_user {"question": "Anyone there?"}"#,
        )
        .await;
    let events = sse.until_terminal().await;
    let asked = tool_message(&events, "question");
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]["allow_text"], true,
        "a question without options takes text"
    );
    let answered = tool_message(&events, "question_answered");
    assert_eq!(
        (answered.len(), answered[0]["status"].as_str()),
        (1, Some("expired"))
    );
    assert_eq!(events.last().unwrap().ty, "done");
    assert!(
        rendered_text(&events).contains("No answer: nobody answered"),
        "{}",
        rendered_text(&events)
    );
    let question = asked[0]["question_id"].as_str().unwrap();
    let (st, v) = answer(&app, &alice, question, json!("me")).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("expired")),
        "{v}"
    );
}

//! Steering the bot from the chat: stop words, `/flush`, the other commands, limits, and a Lark identity linked to an account.

use serde_json::{Value, json};
use weft_lark::fake::PushOptions;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    stop_word_cancels_and_the_card_says_stopped,
    flush_answers_the_queue_at_once,
    commands_and_unreadable_messages,
    limits_answer_with_a_friendly_card,
    linked_user_sees_the_lark_session_live,
    undo_agent_and_compact_from_the_chat,
    a_question_from_the_web_is_quoted_over_its_lark_answer,
);

async fn stop_word_cancels_and_the_card_says_stopped(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let long = w.dm("ou_alice", "@mock.tokens 400 @mock.delay 0 25");
    // Two words shown: a stop can land within a word's 25 ms.
    w.until("text on the card", |_| {
        w.replies(&long)
            .into_iter()
            .find(|m| body(m).starts_with("w1 w2"))
    })
    .await;
    let stop = w.dm("ou_alice", "停");
    let card = w.final_card(&long).await;
    assert_eq!(template(&card), "grey");
    let text = body(&card);
    assert!(
        text.starts_with("w1 w2") && text.ends_with("_🛑 stopped_"),
        "{text}"
    );
    assert!(!text.contains("w400"), "stopped before the end");
    let answer = w
        .until("the stop answer", |_| w.replies(&stop).into_iter().next())
        .await;
    assert_eq!(notice(&answer), "🛑 已停止");
    // With nothing running a stop word is just text for the agent.
    let idle = w.dm("ou_alice", "stop");
    assert_eq!(body(&w.final_card(&idle).await), "You said: stop");
}

async fn flush_answers_the_queue_at_once(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let long = w.dm("ou_alice", "@mock.tokens 400 @mock.delay 0 25");
    w.until("the card", |_| w.replies(&long).into_iter().next())
        .await;
    // Sent in a burst: the bot must keep them in the order they were sent.
    let queued: Vec<String> = ["second", "third", "fourth", "fifth"]
        .into_iter()
        .map(|text| w.dm("ou_alice", text))
        .collect();
    // All wait behind the long reply (their THINKING reactions show that).
    w.until("all queued", |f| {
        let r = f.records();
        queued
            .iter()
            .all(|m| {
                !r.calls_to("POST", &format!("/open-apis/im/v1/messages/{m}/reactions"))
                    .is_empty()
            })
            .then_some(())
    })
    .await;
    let flush = w.dm("ou_alice", "/flush");
    assert_eq!(template(&w.final_card(&long).await), "grey");
    // One reply to the newest message, and the model read it as the newest.
    let (newest, earlier) = queued.split_last().unwrap();
    let merged = w.final_card(newest).await;
    assert_eq!(template(&merged), "green");
    assert_eq!(body(&merged), "You said: fifth");
    for m in earlier {
        assert!(
            w.replies(m).is_empty(),
            "the queue is answered once, in one card"
        );
    }
    assert!(notice(&w.replies(&flush)[0]).contains("stopped"));
    let records = w.fake.records();
    assert!(
        records
            .calls_to(
                "POST",
                &format!("/open-apis/im/v1/messages/{flush}/reactions")
            )
            .is_empty(),
        "commands get no reaction"
    );
    w.until("reactions removed", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn commands_and_unreadable_messages(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let first = w.dm("ou_alice", "first conversation");
    w.final_card(&first).await;
    let help = w.dm("ou_alice", "/help");
    let help_card = w
        .until("help", |_| w.replies(&help).into_iter().next())
        .await;
    assert!(notice(&help_card).contains("/flush"));
    let new = w.dm("ou_alice", "/new");
    w.until("/new", |_| w.replies(&new).into_iter().next())
        .await;
    let second = w.dm("ou_alice", "second conversation");
    w.final_card(&second).await;
    let list = w.dm("ou_alice", "/sessions");
    let listing = notice(
        &w.until("/sessions", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("1. second conversation ←") && listing.contains("2. first conversation"),
        "{listing}"
    );
    let resume = w.dm("ou_alice", "/resume 2");
    w.until("/resume", |_| w.replies(&resume).into_iter().next())
        .await;
    let models = w.dm("ou_alice", "/model");
    assert!(
        notice(
            &w.until("/model", |_| w.replies(&models).into_iter().next())
                .await
        )
        .contains("`mock` ←")
    );
    let bad = w.dm("ou_alice", "/model nope");
    assert!(
        notice(
            &w.until("/model nope", |_| w.replies(&bad).into_iter().next())
                .await
        )
        .contains("unknown model")
    );
    let unknown = w.dm("ou_alice", "/frobnicate");
    let unknown_card = notice(
        &w.until("unknown", |_| w.replies(&unknown).into_iter().next())
            .await,
    );
    assert!(unknown_card.contains("/frobnicate") && unknown_card.contains("/help"));
    let (event, image) = w.ids();
    let mut envelope = message_event(
        &event,
        &image,
        "oc_dm_ou_alice",
        "p2p",
        "",
        "ou_alice",
        "",
        json!([]),
    );
    // Text, images and files are read; a sticker is not.
    envelope["event"]["message"]["message_type"] = json!("sticker");
    envelope["event"]["message"]["content"] = json!(r#"{"file_key":"file_1"}"#);
    w.fake.push_event(envelope, PushOptions::default());
    let unreadable = w
        .until("the sticker answer", |_| {
            w.replies(&image).into_iter().next()
        })
        .await;
    assert!(
        notice(&unreadable).contains("not sticker messages"),
        "{}",
        notice(&unreadable)
    );
    // Back in the first conversation: the agent sees its history.
    let back = w.dm("ou_alice", "back again");
    assert_eq!(body(&w.final_card(&back).await), "You said: back again");
    // Junk is acked and ignored; the bot keeps working.
    let junk = w.fake.push_event(
        json!({"schema": "2.0", "header": {"event_id": "junk1", "event_type": "im.message.receive_v1", "app_id": "cli_fake_app"}, "event": {"message": 7}}),
        PushOptions::default(),
    );
    let other_app = w.fake.push_event(
        json!({"schema": "2.0", "header": {"event_id": "other1", "event_type": "im.message.receive_v1", "app_id": "cli_other"},
               "event": message_event("x", "om_other", "oc_x", "p2p", "", "ou_x", "hi", json!([]))["event"].clone()}),
        PushOptions::default(),
    );
    let alive = w.dm("ou_alice", "still there?");
    w.final_card(&alive).await;
    w.until("the acks", |f| {
        (f.records().acked(&junk) && f.records().acked(&other_app)).then_some(())
    })
    .await;
    // The admin command links a Lark identity from the shell.
    let (s, _) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "bob", "password": "password-123"})),
        )
        .await;
    assert_eq!(s, 201);
    let link = |user: &str| {
        let mut cmd = w
            .env
            .command(&["admin", "user", "link-lark", user, "ou_alice"]);
        cmd.output().unwrap()
    };
    let missing = link("nobody");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no user"));
    let linked = link("bob");
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );
    let said = String::from_utf8_lossy(&linked.stdout);
    assert!(
        said.contains("linked ou_alice to bob (2 Lark sessions moved over)"),
        "{said}"
    );
    let records = w.fake.records();
    assert!(w.replies("om_other").is_empty());
    for command in [&help, &new, &list, &resume, &models, &bad, &unknown] {
        assert!(
            records
                .calls_to(
                    "POST",
                    &format!("/open-apis/im/v1/messages/{command}/reactions")
                )
                .is_empty()
        );
    }
}

async fn limits_answer_with_a_friendly_card(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "1")],
    )
    .await;
    let first = w.dm("ou_alice", "one");
    w.final_card(&first).await;
    let second = w.dm("ou_alice", "two");
    let card = w
        .until("the limit card", |_| w.replies(&second).into_iter().next())
        .await;
    assert!(notice(&card).contains("⏳"), "{}", notice(&card));
    w.until("no reaction left", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn linked_user_sees_the_lark_session_live(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (s, alice) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "alice", "password": "password-123"})),
        )
        .await;
    assert_eq!(s, 201, "{alice}");
    let msg = w.dm("ou_alice", "@mock.tokens 150 @mock.delay 0 30");
    w.until("the card", |_| {
        w.replies(&msg)
            .into_iter()
            .find(|m| !body(m).is_empty() && body(m) != "…")
    })
    .await;
    let path = format!("/v1/admin/users/{}/lark", alice["id"].as_str().unwrap());
    let (s, linked) = w
        .admin(
            reqwest::Method::PUT,
            &path,
            Some(json!({"open_id": "ou_alice"})),
        )
        .await;
    assert_eq!(s, 200, "{linked}");
    assert_eq!(linked["moved_sessions"], 1);
    let (s, again) = w
        .admin(
            reqwest::Method::PUT,
            &path,
            Some(json!({"open_id": "bad id!"})),
        )
        .await;
    assert_eq!(s, 422, "{again}");

    let login = w
        .http
        .post(format!("{}/v1/auth/login", w.base()))
        .json(&json!({"username": "alice", "password": "password-123"}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap();
    let sessions = w.get_json("/v1/sessions", token).await;
    let session = &sessions["sessions"][0];
    assert_eq!(session["source"], "lark", "{sessions}");
    assert!(
        session["active_run_id"].is_string(),
        "the reply is still streaming: {session}"
    );
    let resp = w
        .http
        .get(format!(
            "{}/v1/sessions/{}/stream",
            w.base(),
            session["id"].as_str().unwrap()
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let events = Sse::new(resp).until_terminal().await;
    assert_eq!(events.last().unwrap().ty, "done");
    assert_eq!(rendered_text(&events), words(150));
    // Later messages from that Lark identity are alice's.
    let next = w.dm("ou_alice", "after linking");
    w.final_card(&next).await;
    let sessions = w.get_json("/v1/sessions", token).await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "same conversation: {sessions}"
    );
}

async fn undo_agent_and_compact_from_the_chat(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let keep = w.dm("ou_alice", "keep this");
    w.final_card(&keep).await;
    let drop = w.dm("ou_alice", "drop this");
    w.final_card(&drop).await;
    let undo = w.dm("ou_alice", "/undo");
    let answer = notice(
        &w.until("/undo", |_| w.replies(&undo).into_iter().next())
            .await,
    );
    assert!(answer.contains("out of the conversation"), "{answer}");
    let agent = w.dm("ou_alice", "/agent chat");
    let answer = notice(
        &w.until("/agent", |_| w.replies(&agent).into_iter().next())
            .await,
    );
    assert!(answer.contains("`chat`"), "{answer}");
    let compact = w.dm("ou_alice", "/compact");
    let answer = notice(
        &w.until("/compact", |_| w.replies(&compact).into_iter().next())
            .await,
    );
    assert!(
        answer.contains("summarised before the next reply"),
        "{answer}"
    );
    // The model sees the kept turn, not the undone one, and the chat agent's prompt.
    let look = w.dm("ou_alice", "@mock.context");
    let picture: Value = serde_json::from_str(&body(&w.final_card(&look).await)).unwrap();
    assert_eq!(
        picture["users"],
        json!(["@mock.context"]),
        "compacted: {picture}"
    );
    let system = picture["system"][0].as_str().unwrap();
    assert!(system.contains("Tools are disabled"), "{system}");
    assert!(
        system.contains("keep this") && !system.contains("drop this"),
        "{system}"
    );
}

/// A worker without the Lark settings in a deployment with Lark conversations
/// refuses to start, naming what is missing — never a run whose chat keeps
/// the 🤔 and no answer. Distributed only: embedded Weft is one process with
/// one configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_lark_settings_refuses_to_start_once_lark_is_used() {
    let mut w = LarkWorld::start(Backend::Distributed).await;
    let hello = w.dm("ou_alice", "@mock.reply hi");
    w.final_card(&hello).await;
    let mut cmd = w.env.command(&["worker"]);
    for key in [
        "WEFT_LARK__APP_ID",
        "WEFT_LARK__APP_SECRET",
        "WEFT_LARK__BASE_URL",
    ] {
        cmd.env_remove(key);
    }
    let out = cmd.output().expect("run weft worker");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("has Lark conversations but this worker has no [lark] settings"),
        "{said}"
    );
}

/// A question typed into a Lark conversation from the web UI: the chat never
/// saw it, so its answer card shows it first.
async fn a_question_from_the_web_is_quoted_over_its_lark_answer(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let hello = w.dm("ou_alice", "@mock.reply hi from lark");
    let first = w.final_card(&hello).await;
    assert!(
        element(&first, "asked_elsewhere").is_empty(),
        "asked in the chat"
    );
    let sessions = w.get_json("/v1/sessions", &alice).await;
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let (s, sent) = w
        .call(
            reqwest::Method::POST,
            &format!("/v1/sessions/{session}/messages"),
            &alice,
            Some(json!({"text": "@mock.reply answered from the web"})),
        )
        .await;
    assert!(s == 200 || s == 202, "{s} {sent}");
    let card = w
        .until("the card of the web question", |f| {
            f.sent_messages()
                .into_iter()
                .find(|m| body(m) == "answered from the web" && matches!(template(m), "green"))
        })
        .await;
    assert_eq!(
        card.reply_to, "",
        "a new message, not a reply to a Lark one"
    );
    assert_eq!(
        element(&card, "asked_elsewhere"),
        "💬 Asked in the web UI or terminal: “@mock.reply answered from the web”"
    );
}

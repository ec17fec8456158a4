//! Undo, redo, regenerate, edit and alternatives (docs/agent.md, "Undo, redo,
//! regenerate, edit"), and long conversations: a summary of older turns keeps a
//! 200-turn conversation inside a small window and still carries what was said
//! first; it is computed when needed, not per run; `/compact` forces it; a failing
//! summariser drops the oldest turns instead of failing the run.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    undo_redo_regenerate_and_edit,
    a_long_conversation_keeps_its_beginning,
    a_failing_summariser_drops_the_oldest_turns,
    a_small_summariser_is_sent_what_fits_its_own_window
);

async fn say(app: &App, token: &str, s: &str, text: &str) -> Value {
    let run = app.send(token, s, text).await;
    let done = app.wait_run(token, &run, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    done
}

async fn shown(app: &App, token: &str, s: &str) -> Vec<String> {
    app.messages(token, s)
        .await
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

async fn act(app: &App, token: &str, s: &str, what: &str, body: Option<Value>) -> (u16, Value) {
    app.call(
        reqwest::Method::POST,
        &format!("/v1/sessions/{s}/{what}"),
        token,
        Some(body.unwrap_or(json!({}))),
    )
    .await
}

async fn undo_redo_regenerate_and_edit(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    assert_eq!(
        act(&app, &alice, &s, "undo", None).await.1["error"]["code"],
        "nothing_to_undo"
    );
    say(&app, &alice, &s, "one").await;
    say(&app, &alice, &s, "two").await;
    let all = ["one", "You said: one", "two", "You said: two"];
    assert_eq!(shown(&app, &alice, &s).await, all);

    // Undo hides the last turn, redo brings it back.
    assert_eq!(act(&app, &alice, &s, "undo", None).await.0, 200);
    assert_eq!(shown(&app, &alice, &s).await, all[..2]);
    assert_eq!(act(&app, &alice, &s, "redo", None).await.0, 200);
    assert_eq!(shown(&app, &alice, &s).await, all);
    assert_eq!(
        act(&app, &alice, &s, "redo", None).await.1["error"]["code"],
        "nothing_to_redo"
    );
    // The model no longer sees an undone turn.
    assert_eq!(act(&app, &alice, &s, "undo", None).await.0, 200);
    let seen = say(&app, &alice, &s, "@mock.context").await;
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    let picture: Value = serde_json::from_str(reply.as_str().unwrap()).unwrap();
    assert_eq!(picture["users"], json!(["one", "@mock.context"]), "{seen}");
    // Something was said after the undo: nothing to redo.
    assert_eq!(
        act(&app, &alice, &s, "redo", None).await.1["error"]["code"],
        "nothing_to_redo"
    );

    // Refused while a run is active.
    let slow = app
        .send(&alice, &s, "@mock.tokens 40 @mock.delay 0 100")
        .await;
    for what in ["undo", "redo", "regenerate"] {
        let (st, v) = act(&app, &alice, &s, what, None).await;
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (409, Some("run_active")),
            "{what}: {v}"
        );
    }
    app.wait_run(&alice, &slow, Duration::from_secs(30)).await;

    // Regenerate, watched by a second client attached to the session.
    let before = shown(&app, &alice, &s).await;
    let (st, v) = act(&app, &alice, &s, "regenerate", None).await;
    assert_eq!(st, 202, "{v}");
    let run = v["run_id"].as_str().unwrap().to_string();
    let watched = app.attach(&alice, &run, None).await.until_terminal().await;
    assert_eq!(watched.last().unwrap().ty, "done");
    assert_eq!(
        shown(&app, &alice, &s).await,
        before,
        "the same question, answered again"
    );
    let (_, alts) = app
        .get(&format!("/v1/sessions/{s}/alternatives"), &alice)
        .await;
    let alts = alts["alternatives"].as_array().unwrap().clone();
    assert_eq!(alts.len(), 2, "{alts:?}");
    assert_eq!(alts.iter().filter(|a| a["shown"] == true).count(), 1);
    assert_eq!(alts[1]["run_id"], run.as_str());

    // Edit: a new question and a new answer; the old pair stays one choice away.
    let (st, v) = act(
        &app,
        &alice,
        &s,
        "edit",
        Some(json!({"text": "@mock.reply edited answer"})),
    )
    .await;
    assert_eq!(st, 202, "{v}");
    let edit_run = v["run_id"].as_str().unwrap().to_string();
    app.wait_run(&alice, &edit_run, Duration::from_secs(30))
        .await;
    let now = shown(&app, &alice, &s).await;
    assert_eq!(
        now[now.len() - 2..],
        ["@mock.reply edited answer", "edited answer"]
    );
    let (_, alts) = app
        .get(&format!("/v1/sessions/{s}/alternatives"), &alice)
        .await;
    let first = alts["alternatives"][0].clone();
    assert_eq!(alts["alternatives"].as_array().unwrap().len(), 3, "{alts}");
    assert_eq!(
        first["user_text"], "@mock.tokens 40 @mock.delay 0 100",
        "{first}"
    );
    let (st, _) = act(
        &app,
        &alice,
        &s,
        &format!("alternatives/{}", first["run_id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(
        shown(&app, &alice, &s).await,
        before,
        "question and reply restored"
    );
    // Bob can do none of it.
    let bob = app.user("bob").await;
    assert_eq!(act(&app, &bob, &s, "undo", None).await.0, 404);
    assert_eq!(act(&app, &bob, &s, "regenerate", None).await.0, 404);
}

const SMALL_WINDOW: &str =
    "[[models]]\nid = \"mock\"\nprovider = \"mock\"\ncontext_window = 1500\n";

fn config(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.toml");
    std::fs::write(&path, format!("{SMALL_WINDOW}{extra}")).unwrap();
    let p = path.display().to_string();
    (dir, p)
}

async fn a_long_conversation_keeps_its_beginning(b: Backend) {
    let (_dir, cfg) = config("");
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", cfg.as_str()),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "0"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    say(&app, &alice, &s, "My name is Zed and I live in Lisbon.").await;
    let mut summaries = std::collections::BTreeSet::new();
    for i in 2..200 {
        let done = say(
            &app,
            &alice,
            &s,
            &format!("Filler turn {i}: nothing in particular happens here, only words to fill the window."),
        )
        .await;
        let (st, sum) = app.get(&format!("/v1/sessions/{s}/summary"), &alice).await;
        if st == 200 {
            summaries.insert(sum["created_at"].as_str().unwrap().to_string());
        }
        assert!(
            done["usage"]["context_tokens"].as_u64().unwrap() <= 1500,
            "{done}"
        );
    }
    // Summaries were made, stored and reused — far fewer than the runs.
    assert!(
        (1..=40).contains(&summaries.len()),
        "{} summaries in 198 runs",
        summaries.len()
    );
    let done = say(&app, &alice, &s, "@mock.context").await;
    assert_eq!(done["usage"]["context_window"], 1500);
    assert!(
        done["usage"]["context_tokens"].as_u64().unwrap() <= 1125,
        "under 75 %: {done}"
    );
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    let picture: Value = serde_json::from_str(reply.as_str().unwrap()).unwrap();
    let system = picture["system"][0].as_str().unwrap();
    assert!(
        system.contains("# Earlier in this conversation"),
        "{system}"
    );
    assert!(
        system.contains("My name is Zed and I live in Lisbon."),
        "turn 1 carried forward: {system}"
    );
    assert!(
        picture["users"].as_array().unwrap().len() < 100,
        "only recent turns verbatim"
    );
    // The stored messages are all still there.
    let (_, page) = app
        .get(&format!("/v1/sessions/{s}/messages?limit=100"), &alice)
        .await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 100);

    // /compact: the next run summarises everything but its own turn.
    let (_, before) = app.get(&format!("/v1/sessions/{s}/summary"), &alice).await;
    assert_eq!(act(&app, &alice, &s, "compact", None).await.0, 202);
    say(&app, &alice, &s, "@mock.context").await;
    let (_, after) = app.get(&format!("/v1/sessions/{s}/summary"), &alice).await;
    assert!(
        after["messages"].as_u64() > before["messages"].as_u64(),
        "{before} → {after}"
    );
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    let picture: Value = serde_json::from_str(reply.as_str().unwrap()).unwrap();
    assert_eq!(picture["users"], json!(["@mock.context"]), "{picture}");
}

/// A server with config file `cfg` and no run rate limit, and a session of
/// forty turns that fill its 1,500-token window a few times over.
async fn forty_turns(b: Backend, cfg: &str) -> (App, String, String) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", cfg),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "0"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    for i in 0..40 {
        say(
            &app,
            &alice,
            &s,
            &format!("Turn {i}: some words so that the window fills up after a few dozen turns."),
        )
        .await;
    }
    (app, alice, s)
}

async fn a_failing_summariser_drops_the_oldest_turns(b: Backend) {
    // The summariser is a model whose endpoint refuses connections.
    let (_dir, cfg) = config(
        "\n[[models]]\nid = \"broken\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[context]\nsummariser_model = \"broken\"\n",
    );
    let (app, alice, s) = forty_turns(b, &cfg).await;
    let done = say(&app, &alice, &s, "@mock.context").await;
    assert!(
        done["usage"]["context_tokens"].as_u64().unwrap() <= 1125,
        "{done}"
    );
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    let picture: Value = serde_json::from_str(reply.as_str().unwrap()).unwrap();
    let users = picture["users"].as_array().unwrap();
    assert!(users.len() < 40, "the oldest turns were left out");
    assert_eq!(users.last().unwrap(), "@mock.context");
    assert!(
        !picture["system"][0]
            .as_str()
            .unwrap()
            .contains("Earlier in this conversation")
    );
    assert_eq!(
        app.get(&format!("/v1/sessions/{s}/summary"), &alice)
            .await
            .0,
        404
    );
}

/// The summariser is sized by its own window, not the session model's: a small
/// model (the mock refuses a prompt over a configured window, as providers do)
/// summarising for a larger one is sent only what it can read.
async fn a_small_summariser_is_sent_what_fits_its_own_window(b: Backend) {
    let (_dir, cfg) = config(
        "\n[[models]]\nid = \"small\"\nprovider = \"mock\"\ncontext_window = 300\n\n[context]\nsummariser_model = \"small\"\n",
    );
    let (app, alice, s) = forty_turns(b, &cfg).await;
    let (st, summary) = app.get(&format!("/v1/sessions/{s}/summary"), &alice).await;
    assert_eq!(st, 200, "a summary was made: {summary}");
    assert_eq!(summary["model"], "small", "{summary}");
    // It carries the newest of what it was sent, not the oldest.
    let text = summary["summary"].as_str().unwrap();
    assert!(text.contains("Turn "), "{text}");
}

//! Memory from Lark (issue 26, docs/memory.md): a memory is its person's, also
//! when people share a group. Alice and Bob each get a fact remembered in
//! their DM (the `remember` tool, through the scripted mock model); then both
//! ask the same question in one group: each run is its speaker's, and the
//! system prompt the model receives carries the speaker's memory and never the
//! other's. `/memory` lists the speaker's own memories in a DM, and in a group
//! only points to the DM; `forget N`, `off` and `on` take effect on the next
//! turn, in the group too.

use serde_json::{Value, json};
use sqlx::Row;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    in_a_group_each_speakers_run_recalls_their_own_memories,
    a_run_of_several_speakers_messages_uses_no_ones_memory,
    memory_commands_answer_in_a_dm_for_the_speaker_alone
);

/// Only what the test does is remembered: no extraction after turns.
const NO_EXTRACTION: (&str, &str) = ("WEFT_MEMORY__EXTRACT", "false");
const TEAM: &str = "oc_payments_team";
const QUESTION: &str = "who is on the payments team? @mock.context";
const ALICES: &str = "Alice works on the payments team";
const BOBS: &str = "Bob reviews the payments refunds";

/// Has `sender`'s DM get `text` remembered with the `remember` tool.
async fn remembered_in_dm(w: &mut LarkWorld, sender: &str, text: &str) {
    let said = w.dm(
        sender,
        &format!(r#"please remember @mock.tool remember {{"text": "{text}"}}"#),
    );
    let card = w.final_card(&said).await;
    assert!(
        body(&card).contains("Remembered (fact, id mem_"),
        "{}",
        body(&card)
    );
}

/// The texts of `token`'s memories, through the API.
async fn memories(w: &LarkWorld, token: &str) -> Vec<String> {
    w.get_json("/v1/me/memories", token).await["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The answer card's text to a command sent as Lark message `to`.
async fn answer(w: &LarkWorld, to: &str) -> String {
    notice(
        &w.until(&format!("the answer to {to}"), |_| {
            w.replies(to).into_iter().next()
        })
        .await,
    )
}

/// Asks [`QUESTION`] in the group as `sender`: see [`seen_for`].
async fn ask_in_group(
    w: &mut LarkWorld,
    sender: &str,
    owner_token: &str,
) -> (Value, (String, Vec<String>)) {
    let said = w.group(TEAM, sender, QUESTION);
    seen_for(w, &said, owner_token).await
}

/// What the model was sent to answer Lark message `said` (its
/// `@mock.context` picture, read with the token of the session's owner), and
/// the message's run as the database holds it: (user id, memories used).
async fn seen_for(w: &LarkWorld, said: &str, owner_token: &str) -> (Value, (String, Vec<String>)) {
    w.final_card(said).await;
    let db = super::durability::database(&w.env).await;
    let row = sqlx::query(
        "select m.session_id, m.run_id, r.user_id, r.memories_used
         from messages m join runs r on r.id = m.run_id where m.lark_message_id = $1",
    )
    .bind(said)
    .fetch_one(&db)
    .await
    .unwrap();
    let (session, run): (String, String) = (row.get("session_id"), row.get("run_id"));
    let user: String = row.get("user_id");
    let used: Option<String> = row.get("memories_used");
    db.close().await;
    let used = used.map_or_else(Vec::new, |u| serde_json::from_str(&u).unwrap());
    let messages = w
        .get_json(&format!("/v1/sessions/{session}/messages"), owner_token)
        .await;
    let of_run: Vec<Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["run_id"] == run.as_str())
        .cloned()
        .collect();
    (picture(&of_run), (user, used))
}

/// Messages that wait behind a run in a group become one run, attributed to
/// the first who waited: when others wrote some of them, nobody's memory is
/// recalled in it (Bob's question must not be answered with Alice's notes),
/// and the memory tools are neither offered nor run.
async fn a_run_of_several_speakers_messages_uses_no_ones_memory(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[NO_EXTRACTION]).await;
    let _alice = w.linked_account("alice", "ou_alice").await;
    let bob = w.linked_account("bob", "ou_bob").await;
    remembered_in_dm(&mut w, "ou_alice", ALICES).await;
    // Bob's slow run holds the group's session; Alice then Bob wait behind it.
    let slow = w.group(TEAM, "ou_bob", "count @mock.tokens 200 @mock.delay 0 20");
    w.until("the slow card", |_| w.replies(&slow).into_iter().next())
        .await;
    w.group(TEAM, "ou_alice", "hi all");
    let second = w.group(
        TEAM,
        "ou_bob",
        "what does the payments team do? @mock.context",
    );
    w.final_card(&slow).await;
    let (seen, (_, used)) = seen_for(&w, &second, &bob).await;
    assert!(
        !system(&seen).contains("payments team"),
        "{}",
        system(&seen)
    );
    assert!(used.is_empty(), "{used:?}");
    assert!(
        !seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "remember" || t == "memory_search"),
        "{seen}"
    );
}

fn system(picture: &Value) -> String {
    picture["system"][0].as_str().unwrap().to_owned()
}

async fn in_a_group_each_speakers_run_recalls_their_own_memories(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[NO_EXTRACTION]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let bob = w.linked_account("bob", "ou_bob").await;
    let alice_id = w.get_json("/v1/me", &alice).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob_id = w.get_json("/v1/me", &bob).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    remembered_in_dm(&mut w, "ou_alice", ALICES).await;
    remembered_in_dm(&mut w, "ou_bob", BOBS).await;
    assert_eq!(memories(&w, &alice).await, [ALICES]);
    assert_eq!(memories(&w, &bob).await, [BOBS]);
    let ids = |list: Value| -> Vec<String> {
        list["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let alices_ids = ids(w.get_json("/v1/me/memories", &alice).await);
    let bobs_ids = ids(w.get_json("/v1/me/memories", &bob).await);

    // Alice speaks first (the group's session is hers), then Bob, the same
    // words: each run is its speaker's and recalls the speaker's memory alone.
    let (seen, (user, used)) = ask_in_group(&mut w, "ou_alice", &alice).await;
    let prompt = system(&seen);
    assert!(prompt.contains(&format!("- (fact) {ALICES}")), "{prompt}");
    assert!(!prompt.contains(BOBS), "{prompt}");
    assert_eq!((user, used), (alice_id.clone(), alices_ids.clone()));

    let (seen, (user, used)) = ask_in_group(&mut w, "ou_bob", &alice).await;
    let prompt = system(&seen);
    assert_eq!(
        seen["users"].as_array().unwrap().last().unwrap(),
        &json!(format!("[Bob] {QUESTION}")),
        "the picture is of Bob's turn"
    );
    assert!(prompt.contains(&format!("- (fact) {BOBS}")), "{prompt}");
    assert!(
        !prompt.contains(ALICES),
        "Alice's memory reached Bob's run: {prompt}"
    );
    assert_eq!((user, used), (bob_id.clone(), bobs_ids));

    // `/memory` in the group shows nobody's memories, to either of them.
    for who in ["ou_alice", "ou_bob"] {
        let asked = w.group(TEAM, who, "/memory");
        let said = answer(&w, &asked).await;
        assert!(said.contains("ask me in a DM"), "{said}");
        assert!(!said.contains("payments"), "{said}");
        // A number there forgets nothing either.
        let asked = w.group(TEAM, who, "/memory forget 1");
        let said = answer(&w, &asked).await;
        assert!(
            said.contains("ask me in a DM") && !said.contains("payments"),
            "{said}"
        );
    }
    assert_eq!(memories(&w, &alice).await, [ALICES]);
    assert_eq!(memories(&w, &bob).await, [BOBS]);

    // Alice forgets hers in her DM: her next run in the group recalls nothing.
    let forget = w.dm("ou_alice", "/memory forget 1");
    assert_eq!(answer(&w, &forget).await, format!("🗑 Forgot 1: {ALICES}"));
    assert!(memories(&w, &alice).await.is_empty());
    let (seen, (user, used)) = ask_in_group(&mut w, "ou_alice", &alice).await;
    let prompt = system(&seen);
    assert!(
        !prompt.contains(ALICES) && !prompt.contains(BOBS),
        "{prompt}"
    );
    assert_eq!((user, used), (alice_id, Vec::<String>::new()));
}

async fn memory_commands_answer_in_a_dm_for_the_speaker_alone(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[NO_EXTRACTION]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let bob = w.linked_account("bob", "ou_bob").await;

    let list = w.dm("ou_alice", "/memory");
    let said = answer(&w, &list).await;
    assert!(
        said.starts_with("I remember nothing about you yet."),
        "{said}"
    );

    // Two of Alice's (one pinned, added on the web page) and one of Bob's.
    remembered_in_dm(&mut w, "ou_alice", ALICES).await;
    let (s, v) = w
        .call(
            reqwest::Method::POST,
            "/v1/me/memories",
            &alice,
            Some(json!({"text": "prefers answers in Chinese", "pinned": true})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    remembered_in_dm(&mut w, "ou_bob", BOBS).await;

    // Numbered oldest first; the pinned one marked; nobody else's.
    let list = w.dm("ou_alice", "/memory");
    let said = answer(&w, &list).await;
    assert!(
        said.contains(&format!(
            "1. (fact) {ALICES}\n2. 📌 (fact) prefers answers in Chinese"
        )),
        "{said}"
    );
    assert!(!said.contains(BOBS), "{said}");
    let list = w.dm("ou_bob", "/memory");
    let said = answer(&w, &list).await;
    assert!(said.contains(&format!("1. (fact) {BOBS}")), "{said}");
    assert!(
        !said.contains(ALICES) && !said.contains("Chinese"),
        "{said}"
    );

    // Forgetting: a number past the list, a missing one, then Alice's second.
    for (text, expected) in [
        (
            "/memory forget 3",
            "There is no memory 3; `/memory` lists them.",
        ),
        (
            "/memory forget",
            "Which one? `/memory` lists them, then `/memory forget N`.",
        ),
        ("/memory forget 2", "🗑 Forgot 2: prefers answers in Chinese"),
    ] {
        let asked = w.dm("ou_alice", text);
        assert_eq!(answer(&w, &asked).await, expected, "{text}");
    }
    assert_eq!(memories(&w, &alice).await, [ALICES]);
    assert_eq!(memories(&w, &bob).await, [BOBS]);

    // Off: the switch is Bob's alone; his runs recall nothing and get no
    // memory tools; his list says so. On again: recalled again.
    let off = w.dm("ou_bob", "/memory off");
    assert!(
        answer(&w, &off).await.starts_with("🧠 Memory off"),
        "{}",
        w.logs()
    );
    assert_eq!(w.get_json("/v1/me/memories", &bob).await["enabled"], false);
    assert_eq!(w.get_json("/v1/me/memories", &alice).await["enabled"], true);
    let list = w.dm("ou_bob", "/memory");
    let said = answer(&w, &list).await;
    assert!(
        said.contains(BOBS) && said.contains("Your memory is off"),
        "{said}"
    );
    let asked = w.dm("ou_bob", QUESTION);
    let (seen, (_, used)) = seen_for(&w, &asked, &bob).await;
    assert!(!system(&seen).contains(BOBS), "{}", system(&seen));
    assert!(used.is_empty(), "{used:?}");
    assert!(
        !seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "remember"),
        "{seen}"
    );
    let on = w.dm("ou_bob", "/memory on");
    assert!(answer(&w, &on).await.starts_with("🧠 Memory on"));
    assert_eq!(w.get_json("/v1/me/memories", &bob).await["enabled"], true);
    let asked = w.dm("ou_bob", QUESTION);
    let (seen, (_, used)) = seen_for(&w, &asked, &bob).await;
    assert!(
        system(&seen).contains(&format!("- (fact) {BOBS}")),
        "{}",
        system(&seen)
    );
    assert_eq!(used.len(), 1);

    // In Chinese, in a group: the same pointer to the DM, in Chinese.
    let asked = w.group(TEAM, "ou_alice", "/memory 我记住了什么");
    let said = answer(&w, &asked).await;
    assert!(said.contains("请私聊我"), "{said}");
    assert!(!said.contains("payments"), "{said}");
}

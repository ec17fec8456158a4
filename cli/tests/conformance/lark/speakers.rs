//! Who is speaking (issue 21): in a group every member is themselves. Each
//! message runs as its sender's Weft user — their instructions, their run
//! limits, their approvals — in the one session the group shares; the model
//! reads every turn with its speaker's name, and the session's messages say
//! who wrote them. `/undo` in a group takes back only your own turn.

use reqwest::Method;
use serde_json::{Value, json};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(two_speakers_in_one_group_are_each_themselves);

const TEAM: &str = "oc_team";

async fn two_speakers_in_one_group_are_each_themselves(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "4"),
            ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm"),
        ],
    )
    .await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let bob = w.linked_account("bob", "ou_bob").await;
    for (token, mine) in [(&alice, "Call me Ana."), (&bob, "Call me Robert.")] {
        let (s, v) = w
            .call(
                Method::PUT,
                "/v1/me/instructions",
                token,
                Some(json!({ "instructions": mine })),
            )
            .await;
        assert_eq!(s, 200, "{v}");
    }
    let alice_id = w.get_json("/v1/me", &alice).await["id"].clone();
    let bob_id = w.get_json("/v1/me", &bob).await["id"].clone();

    let first = w.group(TEAM, "ou_alice", "@mock.reply hello team");
    assert_eq!(body(&w.final_card(&first).await), "hello team");
    let asked = w.group(TEAM, "ou_bob", "what do you see @mock.context");
    w.final_card(&asked).await;

    // One shared session (Alice spoke first), and each message says who wrote it.
    let sessions = w.get_json("/v1/sessions", &alice).await;
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
    let messages = w
        .get_json(&format!("/v1/sessions/{session}/messages"), &alice)
        .await;
    let messages = messages["messages"].as_array().unwrap();
    let said: Vec<(Value, Value)> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| (m["author_id"].clone(), m["author_name"].clone()))
        .collect();
    assert_eq!(
        said,
        [
            (alice_id.clone(), json!("Alice")),
            (bob_id.clone(), json!("Bob"))
        ]
    );
    // The model saw both names, and Bob's instructions, not Alice's.
    let picture = picture(messages);
    assert_eq!(
        picture["users"],
        json!([
            "[Alice] @mock.reply hello team",
            "[Bob] what do you see @mock.context"
        ])
    );
    let system = picture["system"][0].as_str().unwrap();
    assert!(
        system.contains("Call me Robert.") && !system.contains("Call me Ana."),
        "{system}"
    );
    // Bob's run is Bob's; Alice, whose session it is, sees it too.
    let bobs_run = messages
        .iter()
        .find(|m| m["author_id"] == bob_id)
        .and_then(|m| m["run_id"].as_str())
        .unwrap()
        .to_owned();
    for token in [&bob, &alice] {
        let (s, run) = w
            .call(Method::GET, &format!("/v1/runs/{bobs_run}"), token, None)
            .await;
        assert_eq!(s, 200, "{run}");
        assert_eq!(run["status"], "succeeded");
    }

    // Limits count against the speaker: Bob's run did not use Alice's four.
    for text in ["two", "three", "four"] {
        let m = w.group(TEAM, "ou_alice", &format!("@mock.reply {text}"));
        assert_eq!(body(&w.final_card(&m).await), text, "{}", w.logs());
    }
    let over = w.group(TEAM, "ou_alice", "@mock.reply five");
    let refused = w
        .until("the limit card", |_| w.replies(&over).into_iter().next())
        .await;
    assert!(notice(&refused).contains("⏳"), "{}", notice(&refused));

    // Bob's approval is Bob's to decide.
    let timed = w.group(TEAM, "ou_bob", "@mock.tool current_time {}");
    let ask = w
        .until("the approval card", |_| {
            w.replies(&timed)
                .into_iter()
                .find(|m| !element(m, "approval_call").is_empty())
        })
        .await;
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "Approve")
        .unwrap();
    assert_eq!(
        w.answer(&click).await["toast"]["content"],
        "Only Bob, whose message asked for this, or a Weft admin can decide."
    );
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_bob", "Approve")
        .unwrap();
    assert_eq!(w.answer(&click).await["toast"]["content"], "✅ Approved");
    let done = w.final_card(&timed).await;
    assert!(
        body(&done).starts_with("tool current_time said: "),
        "{}",
        body(&done)
    );

    let last = w.group(TEAM, "ou_bob", "@mock.reply last words");
    assert_eq!(body(&w.final_card(&last).await), "last words");

    // The last turn is Bob's: Alice may not undo it, Bob may.
    let undo = w.group(TEAM, "ou_alice", "/undo");
    let no = w
        .until("alice's /undo answer", |_| {
            w.replies(&undo).into_iter().next()
        })
        .await;
    assert_eq!(
        notice(&no),
        "Only Bob, who asked the last question, or a Weft admin can change that turn."
    );
    let undo = w.group(TEAM, "ou_bob", "/undo");
    let yes = w
        .until("bob's /undo answer", |_| {
            w.replies(&undo).into_iter().next()
        })
        .await;
    assert!(notice(&yes).starts_with("↩️"), "{}", notice(&yes));

    // The REPL's other turn commands: /redo and /retry for anyone, /edit for
    // the asker only.
    let said = |w: &mut LarkWorld, who: &str, text: &str| w.group(TEAM, who, text);
    let redo = said(&mut w, "ou_alice", "/redo");
    let back = w
        .until("the /redo answer", |_| w.replies(&redo).into_iter().next())
        .await;
    assert!(notice(&back).starts_with("↪️"), "{}", notice(&back));
    let edit = said(&mut w, "ou_alice", "/edit @mock.reply mine now");
    let no = w
        .until("alice's /edit answer", |_| {
            w.replies(&edit).into_iter().next()
        })
        .await;
    assert!(notice(&no).starts_with("Only Bob"), "{}", notice(&no));
    let retry = said(&mut w, "ou_alice", "/retry");
    let again = w
        .until("the /retry answer", |_| {
            w.replies(&retry).into_iter().next()
        })
        .await;
    assert!(notice(&again).starts_with("🔁"), "{}", notice(&again));
    // The retried turn is Bob's question answered again, in a new card to it.
    w.until("a second reply card to bob's last question", |_| {
        (w.replies(&last)
            .iter()
            .filter(|m| template(m) == "green" && body(m) == "last words")
            .count()
            >= 2)
            .then_some(())
    })
    .await;
}

//! Lark channels (issue 27, docs/schedules.md "Channels"): a schedule's
//! notifications delivered to its owner's Lark DM or a group they are in, and
//! the waits of any of their runs brought there with their buttons, so an
//! approval, question or plan is decided from the phone.

use std::time::Duration;

use serde_json::json;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_fire_is_delivered_to_lark_channels_once,
    a_scheduled_question_is_answered_from_the_dm,
    a_web_runs_question_is_answered_from_a_channel_that_takes_waits,
);

/// Lark channels (docs/schedules.md "Channels"): a DM to the owner, and a
/// group the owner talks to the bot in; a chat they are not in, or a DM for
/// an account not linked to Lark, is refused naming `target.chat_id`. A fire
/// into a new session (not a Lark conversation) reaches both, one card each,
/// sent under the delivery's id as Lark's `uuid`.
async fn a_fire_is_delivered_to_lark_channels_once(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let in_team = w.group("oc_team", "ou_alice", "hello team");
    w.final_card(&in_team).await;
    let (st, _) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "carol", "password": "password-123"})),
        )
        .await;
    assert_eq!(st, 201);
    let (st, login) = w
        .call(
            reqwest::Method::POST,
            "/v1/auth/login",
            "",
            Some(json!({"username": "carol", "password": "password-123"})),
        )
        .await;
    assert_eq!(st, 200, "{login}");
    let carol = login["token"].as_str().unwrap().to_owned();
    for (who, target) in [
        (&alice, json!({"kind": "lark", "chat_id": "oc_elsewhere"})),
        (&alice, json!({"kind": "lark", "chat_id": "oc_team%"})),
        (&carol, json!({"kind": "lark"})),
    ] {
        let (st, err) = w
            .call(
                reqwest::Method::POST,
                "/v1/channels",
                who,
                Some(json!({"name": "x", "target": target})),
            )
            .await;
        assert_eq!(st, 422, "{target} → {err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("target.chat_id:"),
            "{err}"
        );
    }
    let mut channels = Vec::new();
    for (name, target) in [
        ("me", json!({"kind": "lark"})),
        ("team", json!({"kind": "lark", "chat_id": "oc_team"})),
    ] {
        let (st, made) = w
            .call(
                reqwest::Method::POST,
                "/v1/channels",
                &alice,
                Some(json!({"name": name, "target": target})),
            )
            .await;
        assert_eq!(st, 201, "{made}");
        channels.push(made["id"].as_str().unwrap().to_owned());
    }
    let at = weft_shared::time::rfc3339(weft_shared::time::now_ms() + 1500);
    let (st, made) = w
        .call(
            reqwest::Method::POST,
            "/v1/schedules",
            &alice,
            Some(
                json!({"name": "standup digest", "prompt": "summarise the standup",
                        "trigger": {"at": at}, "deliver": channels}),
            ),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let delivered = |fake: &weft_lark::fake::FakeLark, chat: &str| {
        fake.sent_messages()
            .into_iter()
            .filter(|m| {
                m.chat_id == chat
                    && m.reply_to.is_empty()
                    && m.content["header"]["title"]["content"] == "standup digest"
            })
            .collect::<Vec<_>>()
    };
    let dm = w
        .until("the DM's card", |fake| {
            Some(delivered(fake, "oc_dm_ou_alice")).filter(|d| !d.is_empty())
        })
        .await;
    let team = w
        .until("the group's card", |fake| {
            Some(delivered(fake, "oc_team")).filter(|d| !d.is_empty())
        })
        .await;
    for card in dm.iter().chain(&team) {
        assert_eq!(template(card), "green");
        assert!(notice(card).starts_with("succeeded: "), "{}", notice(card));
    }
    let fires = format!("/v1/schedules/{}/fires", made["id"].as_str().unwrap());
    // The card reaches Lark a moment before the worker records it sent.
    let deliveries = eventually(WAIT, "both deliveries recorded", async || {
        let history = w.get_json(&fires, &alice).await;
        let deliveries = history["fires"][0]["deliveries"].clone();
        match deliveries.as_array() {
            Some(d) if d.len() == 2 && d.iter().all(|d| d["status"] == "delivered") => {
                Ok(d.clone())
            }
            _ => Err(history),
        }
    })
    .await;
    for d in &deliveries {
        assert_eq!(d["attempts"], 1, "{d}");
    }
    // One card each, and no more later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(delivered(&w.fake, "oc_dm_ou_alice").len(), 1);
    assert_eq!(delivered(&w.fake, "oc_team").len(), 1);
}

/// A scheduled run that asks (here `ask_user`; approvals and plans alike)
/// waits for its owner, and its waiting notification brings the question
/// card itself to the owner's Lark DM channel: a click there answers it, the
/// same run finishes, and the finished notice follows.
async fn a_scheduled_question_is_answered_from_the_dm(b: Backend) {
    let w = LarkWorld::start_with(b, 1, fake_config(), &[]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let (st, channel) = w
        .call(
            reqwest::Method::POST,
            "/v1/channels",
            &alice,
            Some(json!({"name": "phone", "target": {"kind": "lark"}})),
        )
        .await;
    assert_eq!(st, 201, "{channel}");
    let at = weft_shared::time::rfc3339(weft_shared::time::now_ms() + 1500);
    let (st, made) = w
        .call(
            reqwest::Method::POST,
            "/v1/schedules",
            &alice,
            Some(json!({"name": "colour check",
                        "prompt": r#"colour? @mock.tool ask_user {"question":"Which colour?","options":["red","blue"]}"#,
                        "trigger": {"at": at}, "deliver": [channel["id"]]})),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let in_dm = |fake: &weft_lark::fake::FakeLark| {
        fake.sent_messages()
            .into_iter()
            .filter(|m| m.chat_id == "oc_dm_ou_alice" && m.reply_to.is_empty())
            .collect::<Vec<_>>()
    };
    let ask = w
        .until("the question card in the DM", |fake| {
            in_dm(fake)
                .into_iter()
                .find(|m| !element(m, "question_text").is_empty())
        })
        .await;
    assert_eq!(super::approvals::buttons(&ask.content), ["red", "blue"]);
    let waiting = in_dm(&w.fake);
    assert!(
        waiting
            .iter()
            .any(|m| template(m) == "orange" && notice(m).contains("Which colour?")),
        "the waiting notice: {waiting:?}"
    );
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "blue")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "✅ Answered", "{answer}");
    let done = w
        .until("the finished notice", |fake| {
            in_dm(fake)
                .into_iter()
                .find(|m| template(m) == "green" && !notice(m).is_empty())
        })
        .await;
    assert!(
        notice(&done).contains("The user (Alice) answered: blue"),
        "{}",
        notice(&done)
    );
    let fires = format!("/v1/schedules/{}/fires", made["id"].as_str().unwrap());
    let history = w.get_json(&fires, &alice).await;
    assert_eq!(history["fires"][0]["run_status"], "succeeded", "{history}");
    let kinds: Vec<&str> = history["fires"][0]["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["notification_kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["schedule_waiting", "schedule_finished"]);
}

/// The issue's "a web user … answers one multiple-choice question from Lark
/// on their phone": a run of the person's own web session asks; their Lark
/// DM channel takes waits (`waits: true`), so the question card comes there
/// with its buttons; a click answers, and the same run finishes in the web
/// session. A channel that does not take waits gets nothing.
async fn a_web_runs_question_is_answered_from_a_channel_that_takes_waits(b: Backend) {
    let w = LarkWorld::start_with(b, 1, fake_config(), &[]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let (st, quiet) = w
        .call(
            reqwest::Method::POST,
            "/v1/channels",
            &alice,
            Some(json!({"name": "quiet", "target": {"kind": "lark"}})),
        )
        .await;
    assert_eq!((st, &quiet["waits"]), (201, &json!(false)), "{quiet}");
    let (_, session) = w
        .call(
            reqwest::Method::POST,
            "/v1/sessions",
            &alice,
            Some(json!({})),
        )
        .await;
    let session = session["id"].as_str().unwrap().to_owned();
    let send = |text: &str| {
        let body = json!({"text": text});
        let path = format!("/v1/sessions/{session}/messages");
        let alice = alice.clone();
        let w = &w;
        async move {
            let (st, sent) = w
                .call(reqwest::Method::POST, &path, &alice, Some(body))
                .await;
            assert!(st == 200 || st == 201 || st == 202, "{st} {sent}");
            sent["run_id"].as_str().unwrap().to_owned()
        }
    };
    let run_status = |run: String| {
        let alice = alice.clone();
        let w = &w;
        async move {
            let (_, r) = w
                .call(
                    reqwest::Method::GET,
                    &format!("/v1/runs/{run}"),
                    &alice,
                    None,
                )
                .await;
            r["status"].as_str().unwrap_or_default().to_owned()
        }
    };
    const ASK: &str =
        r#"colour? @mock.tool ask_user {"question":"Which colour?","options":["red","blue"]}"#;
    let first = send(ASK).await;
    eventually(
        Duration::from_secs(30),
        "the first run waiting",
        async || match run_status(first.clone()).await.as_str() {
            "waiting_input" => Ok(()),
            other => Err(other.to_owned()),
        },
    )
    .await;
    let nothing = w.get_json("/v1/me/notifications", &alice).await;
    assert_eq!(
        nothing["notifications"],
        json!([]),
        "no channel takes waits yet"
    );
    let (st, _) = w
        .call(
            reqwest::Method::POST,
            &format!("/v1/runs/{first}/cancel"),
            &alice,
            None,
        )
        .await;
    assert!(st < 300, "{st}");
    eventually(
        Duration::from_secs(30),
        "the first run cancelled",
        async || match run_status(first.clone()).await.as_str() {
            "cancelled" => Ok(()),
            other => Err(other.to_owned()),
        },
    )
    .await;

    let (st, on) = w
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/channels/{}", quiet["id"].as_str().unwrap()),
            &alice,
            Some(json!({"waits": true})),
        )
        .await;
    assert_eq!((st, &on["waits"]), (200, &json!(true)), "{on}");
    let second = send(ASK).await;
    let ask = w
        .until("the question card in the DM", |fake| {
            fake.sent_messages()
                .into_iter()
                .find(|m| m.chat_id == "oc_dm_ou_alice" && !element(m, "question_text").is_empty())
        })
        .await;
    assert_eq!(super::approvals::buttons(&ask.content), ["red", "blue"]);
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "blue")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "✅ Answered", "{answer}");
    eventually(
        Duration::from_secs(30),
        "the web run finished",
        async || match run_status(second.clone()).await.as_str() {
            "succeeded" => Ok(()),
            other => Err(other.to_owned()),
        },
    )
    .await;
    // Answered from the phone: the inbox's "waits for you" is read too.
    let inbox = w.get_json("/v1/me/notifications", &alice).await;
    assert_eq!(inbox["notifications"][0]["kind"], "run_waiting", "{inbox}");
    assert_eq!(inbox["unread"], 0, "{inbox}");
}

//! Schedules from Lark (issue 27, docs/schedules.md): a schedule whose target
//! is a DM's conversation posts each fire's reply into that chat as a card of
//! its own (no message to reply to); `/schedules` lists, pauses, resumes and
//! deletes the speaker's own, in a DM only.

use std::time::Duration;

use serde_json::json;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_fire_posts_into_the_chat_and_schedules_are_managed_in_a_dm,
    a_rolling_restart_at_the_fire_time_posts_once,
);

async fn answer(w: &LarkWorld, to: &str) -> String {
    notice(
        &w.until(&format!("the answer to {to}"), |_| {
            w.replies(to).into_iter().next()
        })
        .await,
    )
}

async fn a_fire_posts_into_the_chat_and_schedules_are_managed_in_a_dm(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let hello = w.dm("ou_alice", "hello");
    w.final_card(&hello).await;
    let sessions = w.get_json("/v1/sessions", &alice).await;
    let dm_session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();

    let none = w.dm("ou_alice", "/schedules");
    assert!(
        answer(&w, &none)
            .await
            .starts_with("You have no schedules.")
    );

    // Due in two seconds, into the DM's conversation.
    let at = weft_shared::time::rfc3339(weft_shared::time::now_ms() + 2000);
    let (st, made) = w
        .call(
            reqwest::Method::POST,
            "/v1/schedules",
            &alice,
            Some(json!({"name": "standup digest", "prompt": "summarise the standup", "trigger": {"at": at},
                        "target": {"session": dm_session}})),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let posted = w
        .until("the fire's reply card in the DM", |fake| {
            fake.sent_messages().into_iter().find(|m| {
                m.chat_id == "oc_dm_ou_alice"
                    && m.reply_to.is_empty()
                    && matches!(template(m), "green")
            })
        })
        .await;
    assert!(!body(&posted).is_empty());

    // Listed in the DM, numbered; paused, resumed and deleted by number.
    let list = w.dm("ou_alice", "/schedules");
    let said = answer(&w, &list).await;
    assert!(said.contains("1. **standup digest**"), "{said}");
    assert!(said.contains("last: succeeded"), "{said}");
    let (st, every) = w
        .call(
            reqwest::Method::POST,
            "/v1/schedules",
            &alice,
            Some(json!({"name": "weekly", "prompt": "plan the week", "trigger": {"cron": "0 9 * * 1"},
                        "timezone": "Asia/Shanghai"})),
        )
        .await;
    assert_eq!(st, 201, "{every}");
    let pause = w.dm("ou_alice", "/schedules pause 2");
    assert_eq!(answer(&w, &pause).await, "⏸ Paused 2: weekly");
    let path = format!("/v1/schedules/{}", every["id"].as_str().unwrap());
    assert_eq!(w.get_json(&path, &alice).await["enabled"], false);
    let resume = w.dm("ou_alice", "/schedules resume 2");
    let said = answer(&w, &resume).await;
    assert!(said.starts_with("▶ Resumed 2: weekly · next "), "{said}");
    assert!(said.contains(" 09:00 (+08:00)"), "{said}");
    let missing = w.dm("ou_alice", "/schedules rm 7");
    assert_eq!(
        answer(&w, &missing).await,
        "There is no schedule 7; `/schedules` lists them."
    );
    let rm = w.dm("ou_alice", "/schedules rm 1");
    assert_eq!(answer(&w, &rm).await, "🗑 Deleted 1: standup digest");
    assert_eq!(
        w.get_json("/v1/schedules", &alice).await["schedules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // In a group: only a pointer to the DM.
    let group = w.group("oc_team", "ou_alice", "/schedules");
    assert!(answer(&w, &group).await.starts_with("🔒"));
}

/// The "rolling restart of every process at 08:59:59": every process
/// is stopped (SIGTERM, as a deploy does) and started again, one after the
/// other, across the second a schedule is due. One fire, one run, one card
/// in the chat, and the history shows it.
async fn a_rolling_restart_at_the_fire_time_posts_once(b: Backend) {
    let mut w = LarkWorld::start_with(b, 2, fake_config(), &[]).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    let hello = w.dm("ou_alice", "hello");
    w.final_card(&hello).await;
    let sessions = w.get_json("/v1/sessions", &alice).await;
    let dm_session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let due = weft_shared::time::now_ms() + 3000;
    let (st, made) = w
        .call(
            reqwest::Method::POST,
            "/v1/schedules",
            &alice,
            Some(json!({"name": "digest", "prompt": "summarise the day",
                        "trigger": {"at": weft_shared::time::rfc3339(due)},
                        "target": {"session": dm_session}})),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let fires_path = format!("/v1/schedules/{}/fires", made["id"].as_str().unwrap());
    let posted = |fake: &weft_lark::fake::FakeLark| {
        fake.sent_messages()
            .into_iter()
            .filter(|m| m.chat_id == "oc_dm_ou_alice" && m.reply_to.is_empty())
            .count()
    };

    // From just before the fire: each worker, then each gateway, stopped
    // and started again in turn.
    tokio::time::sleep(Duration::from_millis(
        (due - 600 - weft_shared::time::now_ms()).max(0) as u64,
    ))
    .await;
    for i in 0..w.workers.len() {
        w.workers[i].terminate();
        let _ = w.workers[i].exit_code(Duration::from_secs(10)).await;
        w.workers[i] = App::spawn_worker(&w.env);
    }
    for i in 0..w.gateways.len() {
        w.gateways[i].terminate();
        let _ = w.gateways[i].exit_code(Duration::from_secs(10)).await;
        w.gateways[i] = w.spawn_gateway();
    }
    let n = w.gateways.len();
    w.wait_connections(n).await;

    let fire = eventually(
        Duration::from_secs(30),
        "the fire's run to succeed",
        async || {
            let fires = w.get_json(&fires_path, &alice).await;
            match fires["fires"].as_array().map(Vec::as_slice) {
                Some([f]) if f["run_status"] == "succeeded" => Ok(f.clone()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(fire["outcome"], "started");
    w.until("the fire's card in the DM", |fake| {
        (posted(fake) >= 1).then_some(())
    })
    .await;
    // A moment more: nothing else arrives.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(posted(&w.fake), 1, "one post for one fire");
    let fires = w.get_json(&fires_path, &alice).await;
    assert_eq!(fires["fires"].as_array().unwrap().len(), 1, "{fires}");
}

//! The Lark inbox (issue 21): a message event is stored once, before its ack,
//! whichever replica and however many deliveries; a retried insert whose answer
//! was lost still knows the row for its own; leases are renewed by their holder
//! and taken over once they run out, a conversation at a time and in arrival
//! order; done rows are never taken again. Times are passed in, so no test
//! sleeps.

use weft_store::{InboundClaim, InboxEntry, InboxState, Store};

use crate::both_backends;
use crate::harness::Db;

both_backends!(
    each_message_is_kept_once,
    a_retried_insert_knows_its_own_row,
    leases_are_renewed_and_taken_over_when_they_run_out,
    a_sweep_leaves_a_conversation_another_gateway_holds_alone,
    concurrent_sweeps_do_not_split_a_conversation,
    done_rows_are_never_taken_again,
    a_message_waits_for_earlier_ones_on_other_gateways,
);

/// A lease that runs out at this time (any fixed unix ms: the store compares
/// only the times it is given).
const T: i64 = 1_000_000;

fn entry(message_id: &str, chat: &str, arrived_us: i64) -> InboxEntry {
    InboxEntry {
        message_id: message_id.into(),
        chat_key: chat.into(),
        payload: format!(r#"{{"message":"{message_id}"}}"#),
        arrived_us,
        delivery: uuid::Uuid::new_v4().to_string(),
    }
}

async fn keep_one(s: &Store, e: &InboxEntry, owner: &str, until: i64) -> InboundClaim {
    let claims = s
        .keep_lark_inbound(std::slice::from_ref(e), owner, until)
        .await;
    claims.unwrap()[0]
}

fn ids(rows: &[weft_store::LeasedInbound]) -> Vec<&str> {
    rows.iter().map(|r| r.message_id.as_str()).collect()
}

async fn each_message_is_kept_once(db: Db) {
    let s = &db.store;
    let (a, b) = (entry("om_a", "oc_1", 1), entry("om_b", "oc_1", 2));
    let claims = s
        .keep_lark_inbound(&[a.clone(), b.clone()], "gw1", T)
        .await
        .unwrap();
    assert_eq!(claims, vec![InboundClaim::New, InboundClaim::New]);
    // A redelivery (a new delivery id), here or on another replica.
    let again = entry("om_a", "oc_1", 3);
    assert_eq!(keep_one(s, &again, "gw2", T).await, InboundClaim::Duplicate);
    // Twice in one batch: the second delivery is the duplicate.
    let (c1, c2) = (entry("om_c", "oc_2", 4), entry("om_c", "oc_2", 5));
    let claims = s.keep_lark_inbound(&[c1, c2], "gw1", T).await.unwrap();
    assert_eq!(claims, vec![InboundClaim::New, InboundClaim::Duplicate]);
    assert_eq!(s.lark_inbox_pending().await.unwrap(), 3);
    assert_eq!(
        s.lark_inbox_state("om_a").await.unwrap(),
        Some(InboxState::Pending)
    );
    assert_eq!(s.lark_inbox_state("om_none").await.unwrap(), None);

    // Every replica receives the same message at once: one keeps it.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                let e = entry("om_race", "oc_3", 10 + i);
                keep_one(&s, &e, &format!("gw{i}"), T).await
            })
        })
        .collect();
    let mut new = 0;
    for t in tasks {
        if t.await.unwrap() == InboundClaim::New {
            new += 1;
        }
    }
    assert_eq!(new, 1);
}

async fn a_retried_insert_knows_its_own_row(db: Db) {
    let s = &db.store;
    // The insert committed but its answer was lost (a connection killed at
    // the wrong moment): the retry, with the same delivery id, is still New,
    // so the message is handled rather than taken for someone else's.
    let e = entry("om_lost_answer", "oc_1", 1);
    assert_eq!(keep_one(s, &e, "gw1", T).await, InboundClaim::New);
    assert_eq!(keep_one(s, &e, "gw1", T).await, InboundClaim::New);
    let mixed = [e.clone(), entry("om_fresh", "oc_1", 2)];
    let claims = s.keep_lark_inbound(&mixed, "gw1", T).await.unwrap();
    assert_eq!(claims, vec![InboundClaim::New, InboundClaim::New]);
    let other = InboxEntry {
        delivery: "another delivery".into(),
        ..e
    };
    assert_eq!(keep_one(s, &other, "gw1", T).await, InboundClaim::Duplicate);
}

async fn leases_are_renewed_and_taken_over_when_they_run_out(db: Db) {
    let s = &db.store;
    for (i, id) in ["om_1", "om_2", "om_3"].into_iter().enumerate() {
        keep_one(s, &entry(id, "oc_1", 10 - i as i64), "gw1", T).await;
    }
    assert!(
        s.lease_lark_inbound("gw2", T - 1, T + 500, 100)
            .await
            .unwrap()
            .is_empty(),
        "a live lease is not taken"
    );
    assert_eq!(s.renew_lark_leases("gw1", T + 1000).await.unwrap(), 3);
    assert!(
        s.lease_lark_inbound("gw2", T + 1, T + 500, 100)
            .await
            .unwrap()
            .is_empty(),
        "the renewed lease holds"
    );
    // gw1 died: nobody renewed. The rows come in arrival order, once.
    let taken = s
        .lease_lark_inbound("gw2", T + 1001, T + 5000, 100)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["om_3", "om_2", "om_1"]);
    assert!(
        taken
            .iter()
            .all(|r| r.attempts == 2 && r.chat_key == "oc_1")
    );
    assert_eq!(taken[0].payload, r#"{"message":"om_3"}"#);
    assert!(
        s.lease_lark_inbound("gw3", T + 1002, T + 5000, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.renew_lark_leases("gw1", T + 9000).await.unwrap(),
        0,
        "gw1 holds nothing now"
    );
    // Released (its handler gave up for now): taken again before its lease
    // would have run out — by gw2 itself, as gw2 still holds oc_1's others.
    s.release_lark_inbound("om_1", "gw2").await.unwrap();
    s.release_lark_inbound("om_2", "gw1").await.unwrap(); // not gw1's: no effect
    assert!(
        s.lease_lark_inbound("gw3", T + 1003, T + 5000, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let taken = s
        .lease_lark_inbound("gw2", T + 1003, T + 5000, 100)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["om_1"]);
    assert_eq!(taken[0].attempts, 3);
    // A limit takes the oldest first.
    keep_one(s, &entry("om_9", "oc_9", 1), "gw1", T).await;
    keep_one(s, &entry("om_8", "oc_8", 0), "gw1", T).await;
    let taken = s
        .lease_lark_inbound("gw3", T + 1, T + 5000, 1)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["om_8"]);
}

async fn a_sweep_leaves_a_conversation_another_gateway_holds_alone(db: Db) {
    let s = &db.store;
    keep_one(s, &entry("om_x1", "oc_x", 1), "gw_dead", T).await;
    keep_one(s, &entry("om_x2", "oc_x", 2), "gw_live", T + 10_000).await;
    keep_one(s, &entry("om_y1", "oc_y", 3), "gw_dead", T).await;
    let taken = s
        .lease_lark_inbound("gw_sweep", T + 1, T + 5000, 100)
        .await
        .unwrap();
    assert_eq!(
        ids(&taken),
        ["om_y1"],
        "oc_x waits while gw_live handles its newer message"
    );
    // The holder of a live lease in the conversation may take the rest itself.
    let taken = s
        .lease_lark_inbound("gw_live", T + 2, T + 5000, 100)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["om_x1"]);
}

async fn concurrent_sweeps_do_not_split_a_conversation(db: Db) {
    let s = &db.store;
    let entries: Vec<InboxEntry> = (0..40)
        .map(|i| entry(&format!("om_{i:02}"), "oc_busy", i))
        .collect();
    s.keep_lark_inbound(&entries, "gw_dead", T).await.unwrap();
    let sweeps: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.lease_lark_inbound(&format!("gw{i}"), T + 1, T + 5000, 100)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut takers = Vec::new();
    for sweep in sweeps {
        let taken = sweep.await.unwrap();
        if !taken.is_empty() {
            takers.push(taken);
        }
    }
    assert_eq!(takers.len(), 1, "one sweep took the conversation");
    let expected: Vec<String> = (0..40).map(|i| format!("om_{i:02}")).collect();
    assert_eq!(ids(&takers[0]), expected);
}

async fn done_rows_are_never_taken_again(db: Db) {
    let s = &db.store;
    keep_one(s, &entry("om_done", "oc_1", 1), "gw1", T).await;
    keep_one(s, &entry("om_failed", "oc_1", 2), "gw1", T).await;
    keep_one(s, &entry("om_open", "oc_2", 3), "gw1", T).await;
    s.finish_lark_inbound("om_done", InboxState::Handled)
        .await
        .unwrap();
    s.finish_lark_inbound("om_failed", InboxState::Failed)
        .await
        .unwrap();
    // Finishing twice (a retry after a lost answer) changes nothing.
    s.finish_lark_inbound("om_failed", InboxState::Handled)
        .await
        .unwrap();
    assert_eq!(
        s.lark_inbox_state("om_failed").await.unwrap(),
        Some(InboxState::Failed)
    );
    assert_eq!(s.lark_inbox_pending().await.unwrap(), 1);
    assert_eq!(
        db.count("select count(*) from lark_inbound where payload is not null".into())
            .await,
        1,
        "a done row keeps no payload"
    );
    let taken = s
        .lease_lark_inbound("gw2", T + 1, T + 5000, 100)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["om_open"]);
    // Still the dedupe record.
    let again = entry("om_done", "oc_1", 9);
    assert_eq!(keep_one(s, &again, "gw2", T).await, InboundClaim::Duplicate);
    // Purging keeps what is pending, however old.
    db.exec("update lark_inbound set received_at = 5".into())
        .await;
    assert_eq!(s.purge_lark_inbound(10).await.unwrap(), 2);
    assert_eq!(
        s.lark_inbox_state("om_open").await.unwrap(),
        Some(InboxState::Pending)
    );
}

/// Lark gives each event to one random gateway: a message waits while an
/// earlier one of its conversation is in another gateway's hands or owed by a
/// sweep, and never for its own gateway's (they are in its line).
async fn a_message_waits_for_earlier_ones_on_other_gateways(db: Db) {
    let s = &db.store;
    let now = T - 100;
    let waits = |id: &'static str, owner: &'static str, now: i64| {
        let s = s.clone();
        async move { s.lark_turn_waits(id, owner, now).await.unwrap() }
    };
    keep_one(s, &entry("om_a1", "oc_1", 10), "gw1", T).await;
    keep_one(s, &entry("om_a2", "oc_1", 20), "gw2", T).await;
    keep_one(s, &entry("om_b1", "oc_2", 30), "gw2", T).await;
    keep_one(s, &entry("om_a3", "oc_1", 40), "gw1", T).await;
    assert!(
        !waits("om_a1", "gw1", now).await,
        "first in its conversation"
    );
    assert!(waits("om_a2", "gw2", now).await, "om_a1 is on gw1");
    assert!(!waits("om_b1", "gw2", now).await, "another conversation");
    assert!(waits("om_a3", "gw1", now).await, "om_a2 is on gw2");
    s.finish_lark_inbound("om_a1", InboxState::Handled)
        .await
        .unwrap();
    assert!(!waits("om_a2", "gw2", now).await);
    assert!(waits("om_a3", "gw1", now).await, "om_a2 still is");
    s.finish_lark_inbound("om_a2", InboxState::Handled)
        .await
        .unwrap();
    assert!(!waits("om_a3", "gw1", now).await);

    // The same stamp on two gateways: the lower message id goes first.
    keep_one(s, &entry("om_c2", "oc_3", 50), "gw1", T).await;
    keep_one(s, &entry("om_c1", "oc_3", 50), "gw2", T).await;
    assert!(!waits("om_c1", "gw2", now).await);
    assert!(waits("om_c2", "gw1", now).await);

    // gw1 died holding om_a3: a later message waits while a sweep owes it,
    // until its own gateway's sweep (the conversation's live holder) takes it.
    keep_one(s, &entry("om_a4", "oc_1", 60), "gw2", T + 10_000).await;
    assert!(waits("om_a4", "gw2", T + 1).await, "om_a3's lease ran out");
    let swept = s
        .lease_lark_inbound("gw3", T + 1, T + 5000, 100)
        .await
        .unwrap();
    assert!(!ids(&swept).contains(&"om_a3"), "gw2 holds oc_1: {swept:?}");
    let swept = s
        .lease_lark_inbound("gw2", T + 2, T + 5000, 100)
        .await
        .unwrap();
    assert!(ids(&swept).contains(&"om_a3"));
    assert!(!waits("om_a4", "gw2", T + 3).await, "gw2's own");
    assert!(!waits("om_gone", "gw2", now).await);
}

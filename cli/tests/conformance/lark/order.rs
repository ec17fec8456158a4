//! One Lark conversation's order across gateways (issue 21's inbox): Lark
//! gives each event to one random connection, so a message may wait for an
//! earlier one of its conversation that another gateway holds.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Row;
use weft_lark::fake::PushOptions;

use super::durability::{assert_once, database, image_envelope, wait_answered};
use super::world::*;
use crate::harness::*;

mod a_conversation_keeps_its_order_across_gateways {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn distributed() {
        super::order_across_gateways().await
    }
}

/// Lark gives each event to one random connection, so a picture and the text
/// sent after it land on different gateways as often as not; the text still
/// waits for the picture's answer (before, CI once saw it answered first).
async fn order_across_gateways() {
    let mut w = LarkWorld::start_with(Backend::Distributed, 2, fake_config(), &[]).await;
    let db = database(&w.env).await;
    let conns = w.fake.connection_ids();
    assert_eq!(conns.len(), 2, "one connection per gateway");

    let hold = w.fake.hold_downloads();
    let (a1_event, a1, picture) = image_envelope(&mut w, "ou_ann", "a");
    w.fake
        .push_event_to(conns[0], picture, PushOptions::default());
    // A message can only wait for one already stored: the text follows the
    // picture's ack (sent 2 ms apart, both gateways stored them at once and
    // neither could know of the other's).
    w.until("the picture acked", |f| {
        f.records().acked(&a1_event).then_some(())
    })
    .await;
    let (a2_event, a2) = w.ids();
    let text = message_event(
        &a2_event,
        &a2,
        "oc_dm_ou_ann",
        "p2p",
        "",
        "ou_ann",
        "@mock.reply after the picture",
        json!([]),
    );
    w.fake.push_event_to(conns[1], text, PushOptions::default());
    w.until("both acked, the picture's handler on its download", |f| {
        let r = f.records();
        let reacting = !r
            .calls_to("POST", &format!("/open-apis/im/v1/messages/{a1}/reactions"))
            .is_empty();
        (r.acked(&a1_event) && r.acked(&a2_event) && reacting).then_some(())
    })
    .await;
    let pushed_to = |e: &str| w.fake.records().attempts_of(e)[0].conn_id;
    assert_ne!(pushed_to(&a1_event), pushed_to(&a2_event), "two gateways");
    // The text stays pending, unanswered, for as long as the picture's
    // download is held on the other gateway.
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let state: String = sqlx::query("select state from lark_inbound where message_id = $1")
            .bind(&a2)
            .fetch_one(&db)
            .await
            .unwrap()
            .get("state");
        assert_eq!(state, "pending", "{a2} waits");
        assert!(w.replies(&a2).is_empty(), "{a2} answered before {a1}");
        tokio::time::sleep(POLL).await;
    }

    drop(hold);
    let both = [a1.clone(), a2.clone()];
    let fates = wait_answered(&w, &db, &both).await;
    assert_once(&w, &fates);
    let cards: Vec<String> = w
        .fake
        .sent_messages()
        .into_iter()
        .filter(|m| both.contains(&m.reply_to))
        .map(|m| m.reply_to)
        .collect();
    assert_eq!(cards, both, "the picture answered first");
}

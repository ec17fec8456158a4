//! A reply's end is always shown (docs/lark.md, "Egress"): a run that ended
//! while Lark refused its card's updates, its worker SIGKILLed before Lark came
//! back — in distributed mode also before it published the end, which it
//! records first — gets its whole answer in the same card from another
//! worker's reaper, from the event log completed by the database (embedded: the
//! log died with the process; the stored answer stands for it).

use sqlx::Row;

use super::durability::{SETTLE, database};
use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(a_card_its_dead_worker_never_finished_is_finished_from_the_log);

async fn a_card_its_dead_worker_never_finished_is_finished_from_the_log(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let db = database(&w.env).await;
    let m = w.dm("ou_ann", "@mock.tokens 30 @mock.delay 0 40");
    w.until("the reply's card", |_| {
        (!w.replies(&m).is_empty()).then_some(())
    })
    .await;
    // Lark fails every call from now on: the card cannot show the end.
    w.fake.fail_next_calls(100_000, 500, 2200, "internal error");
    eventually(SETTLE, "the run's end", async || {
        let status: Option<String> = sqlx::query(
            "select r.status from runs r join messages m on m.run_id = r.id
             where m.lark_message_id = $1",
        )
        .bind(&m)
        .fetch_optional(&db)
        .await
        .expect("read the run")
        .map(|row| row.get(0));
        match status.as_deref() {
            Some("succeeded") => Ok(()),
            _ => Err(status),
        }
    })
    .await;
    // Its worker dies before Lark is back.
    match b {
        Backend::Distributed => {
            w.workers[0].kill();
            // And before it published the end: a worker records the end
            // first, so a kill in between leaves the log without `done`.
            assert_eq!(drop_last_event(&w.env).await, "done");
        }
        Backend::Embedded => w.gateways[0].kill(),
    }
    w.fake.clear_failures();
    let shown = w.replies(&m);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        !matches!(template(&shown[0]), "green" | "red" | "grey"),
        "the end was not shown: {:?}",
        shown[0]
    );
    match b {
        Backend::Distributed => w.workers[0] = App::spawn_worker(&w.env),
        Backend::Embedded => {
            w.gateways[0] = w.spawn_gateway();
            w.wait_connections(1).await;
        }
    }
    let card = w.final_card(&m).await;
    assert_eq!(template(&card), "green", "{card:?}");
    assert_eq!(w.replies(&m).len(), 1, "the same card, finished");
    let answer: String = sqlx::query(
        "select a.content from messages a join messages u on u.run_id = a.run_id
         where u.lark_message_id = $1 and a.role = 'assistant'",
    )
    .bind(&m)
    .fetch_one(&db)
    .await
    .expect("the stored answer")
    .get(0);
    assert!(!answer.is_empty());
    assert_eq!(body(&card).trim(), answer.trim(), "the whole answer");
    let logs = w.logs();
    assert!(
        logs.contains("ended without its final card"),
        "a sweep finished it: {logs}"
    );
}

/// Removes the newest event of the world's one run log in Redis; returns its
/// type.
async fn drop_last_event(env: &Env) -> String {
    let client = redis::Client::open(REDIS).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*:events", env.prefix))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "one run log: {keys:?}");
    let newest: Vec<(String, Vec<(String, String)>)> = redis::cmd("XREVRANGE")
        .arg(&keys[0])
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let (id, fields) = &newest[0];
    let _: i64 = redis::cmd("XDEL")
        .arg(&keys[0])
        .arg(id)
        .query_async(&mut conn)
        .await
        .unwrap();
    let (_, json) = fields.iter().find(|(k, _)| k == "d").expect("an event");
    let event: serde_json::Value = serde_json::from_str(json).unwrap();
    event["type"].as_str().unwrap_or_default().to_string()
}

//! Schedules: each fire once per (schedule, fire time) whatever the number of
//! schedulers claiming at once; late fires follow `misfire`; a fire while the
//! previous run is active follows `overlap`; a refused fire leaves nothing but
//! its history row. Times are moved with `raw` (a due schedule is one whose
//! `next_fire_at` is behind us), never by waiting.

use weft_shared::api::{FireOutcome, Misfire, Overlap, Trigger};
use weft_shared::ids::{SessionId, UserId};
use weft_shared::time::now_ms;
use weft_store::{
    FireSettings, NewSchedule, RunLimits, RunStatus, ScheduleUpdate, Store, StoreError,
};

use crate::both_backends;
use crate::harness::{Db, session, start, user};

mod claims;

both_backends!(
    a_late_fire_follows_misfire,
    a_fire_while_the_last_run_is_active_follows_overlap,
    schedules_are_their_owners_and_limited,
    run_now_leaves_the_trigger_alone,
);

/// A fire's settings with the run limits off.
pub fn settings() -> FireSettings {
    FireSettings {
        limits: RunLimits::unlimited(),
        queued_messages_per_session: 0,
        storage_bytes_per_user: 0,
    }
}

fn new(owner: &UserId, trigger: Trigger) -> NewSchedule {
    NewSchedule {
        user_id: owner.clone(),
        name: "daily digest".into(),
        agent: "agent".into(),
        model: "mock".into(),
        prompt: "summarise yesterday's open issues".into(),
        trigger,
        timezone: "Asia/Shanghai".into(),
        enabled: true,
        session_id: None,
        misfire: Misfire::RunOnce,
        overlap: Overlap::Skip,
        deliver: Vec::new(),
    }
}

/// Make `id` due `ago_ms` ago.
async fn due(db: &Db, id: &str, ago_ms: i64) -> i64 {
    let at = now_ms() - ago_ms;
    db.exec(format!(
        "update schedules set next_fire_at = {at} where id = '{id}'"
    ))
    .await;
    at
}

/// Claim every due schedule as workers' schedulers do, `n` claimers at once:
/// half in batches, half one transaction per schedule.
async fn fire_all(store: &Store, n: usize) -> usize {
    let passes = (0..n).map(|i| {
        let store = store.clone();
        async move {
            let mut claimed = 0;
            let batches = i % 2 == 0;
            if batches {
                loop {
                    let fired = store
                        .fire_due_batch(now_ms(), 7, &[], &settings())
                        .await
                        .unwrap();
                    if fired.is_empty() {
                        break;
                    }
                    claimed += fired.len();
                }
            }
            for id in store.due_schedules(now_ms(), 5000, batches).await.unwrap() {
                if store
                    .fire_due(&id, now_ms(), &settings())
                    .await
                    .unwrap()
                    .is_some()
                {
                    claimed += 1;
                }
            }
            claimed
        }
    });
    futures::future::join_all(passes).await.into_iter().sum()
}

async fn a_late_fire_follows_misfire(db: Db) {
    let alice = user(&db, "alice").await;
    let minutely = |misfire| NewSchedule {
        misfire,
        ..new(&alice.id, Trigger::Cron("* * * * *".into()))
    };
    let skip = db
        .store
        .create_schedule(&minutely(Misfire::Skip), 20)
        .await
        .unwrap();
    let once = db
        .store
        .create_schedule(&minutely(Misfire::RunOnce), 20)
        .await
        .unwrap();
    // The cluster was down for ten minutes: ten fire times went by.
    let down_since = now_ms() - 10 * 60_000 - 30_000;
    for id in [&skip.id, &once.id] {
        db.exec(format!(
            "update schedules set next_fire_at = {} where id = '{id}'",
            down_since / 60_000 * 60_000 + 60_000
        ))
        .await;
    }
    assert_eq!(fire_all(&db.store, 2).await, 2);
    let skipped = db
        .store
        .schedule_fires(&alice.id, &skip.id, 20)
        .await
        .unwrap();
    assert_eq!(skipped.len(), 1, "one row, not ten: {skipped:?}");
    assert_eq!(skipped[0].outcome, FireOutcome::Missed);
    assert_eq!(skipped[0].run_id, None);
    let ran = db
        .store
        .schedule_fires(&alice.id, &once.id, 20)
        .await
        .unwrap();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].outcome, FireOutcome::Started);
    // For the latest missed minute.
    let now = now_ms();
    assert!(now - ran[0].fire_at < 60_000 + 5_000, "{:?}", ran[0]);
    assert_eq!(ran[0].fire_at % 60_000, 0);
    assert_eq!(db.count("select count(*) from runs".into()).await, 1);
    for id in [&skip.id, &once.id] {
        let s = db.store.get_schedule(&alice.id, id).await.unwrap();
        assert!(s.next_fire_at.unwrap() > now - 1000, "{s:?}");
    }
}

async fn a_fire_while_the_last_run_is_active_follows_overlap(db: Db) {
    let alice = user(&db, "alice").await;
    let target = session(&db, &alice).await;
    let into = |overlap| NewSchedule {
        overlap,
        session_id: Some(target.id.clone()),
        ..new(&alice.id, Trigger::EverySecs(60))
    };
    let skip = db
        .store
        .create_schedule(&into(Overlap::Skip), 20)
        .await
        .unwrap();
    due(&db, &skip.id, 100).await;
    assert_eq!(fire_all(&db.store, 1).await, 1);
    // Its run is still queued when the next time comes.
    due(&db, &skip.id, 50).await;
    assert_eq!(fire_all(&db.store, 1).await, 1);
    let fires = db
        .store
        .schedule_fires(&alice.id, &skip.id, 10)
        .await
        .unwrap();
    assert_eq!(
        fires.iter().map(|f| f.outcome).collect::<Vec<_>>(),
        vec![FireOutcome::Skipped, FireOutcome::Started]
    );
    assert!(fires[0].detail.as_deref().unwrap().contains("still active"));
    // `queue`: the message waits behind the active run, in the same session.
    let queue = db
        .store
        .create_schedule(&into(Overlap::Queue), 20)
        .await
        .unwrap();
    due(&db, &queue.id, 100).await;
    assert_eq!(fire_all(&db.store, 1).await, 1);
    let fires = db
        .store
        .schedule_fires(&alice.id, &queue.id, 10)
        .await
        .unwrap();
    assert_eq!(fires[0].outcome, FireOutcome::Queued);
    assert_eq!(fires[0].session_id.as_ref(), Some(&target.id));
    assert_eq!(
        db.count(format!(
            "select count(*) from messages where session_id = '{}' and queued = 1",
            target.id
        ))
        .await,
        1
    );
    assert_eq!(db.count("select count(*) from runs".into()).await, 1);
}
async fn schedules_are_their_owners_and_limited(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let s = db
        .store
        .create_schedule(&new(&alice.id, Trigger::EverySecs(60)), 2)
        .await
        .unwrap();
    db.store
        .create_schedule(&new(&alice.id, Trigger::EverySecs(60)), 2)
        .await
        .unwrap();
    let over = db
        .store
        .create_schedule(&new(&alice.id, Trigger::EverySecs(60)), 2)
        .await;
    assert!(matches!(over, Err(StoreError::OverLimit(_))), "{over:?}");
    assert!(matches!(
        db.store.get_schedule(&bob.id, &s.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        db.store
            .update_schedule(&bob.id, &s.id, &ScheduleUpdate::default())
            .await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        db.store.delete_schedule(&bob.id, &s.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(db.store.list_schedules(&bob.id).await.unwrap().is_empty());
    // Pause clears the next time; resume sets it from now.
    let paused = db
        .store
        .update_schedule(
            &alice.id,
            &s.id,
            &ScheduleUpdate {
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(paused.next_fire_at, None);
    let resumed = db
        .store
        .update_schedule(
            &alice.id,
            &s.id,
            &ScheduleUpdate {
                enabled: Some(true),
                name: Some("renamed".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(resumed.name, "renamed");
    assert!(resumed.next_fire_at.unwrap() > now_ms());
    db.store.delete_schedule(&alice.id, &s.id).await.unwrap();
    assert_eq!(db.store.list_schedules(&alice.id).await.unwrap().len(), 1);
}

async fn run_now_leaves_the_trigger_alone(db: Db) {
    let alice = user(&db, "alice").await;
    let s = db
        .store
        .create_schedule(&new(&alice.id, Trigger::Cron("0 9 * * *".into())), 20)
        .await
        .unwrap();
    let fired = db
        .store
        .fire_now(&alice.id, &s.id, now_ms(), &settings())
        .await
        .unwrap();
    assert_eq!(fired.outcome, FireOutcome::Started);
    let after = db.store.get_schedule(&alice.id, &s.id).await.unwrap();
    assert_eq!(after.next_fire_at, s.next_fire_at);
    let last = after.last_fire.unwrap();
    assert!(last.manual);
    assert_eq!(last.run_id, fired.run_id);
    let _: Option<SessionId> = last.session_id;
    assert!(matches!(
        db.store
            .fire_now(&UserId("nobody".into()), &s.id, now_ms(), &settings())
            .await,
        Err(StoreError::NotFound)
    ));
}

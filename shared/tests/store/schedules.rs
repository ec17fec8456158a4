//! Schedules: each fire once per (schedule, fire time) whatever the number of
//! schedulers claiming at once; late fires follow `misfire`; a fire while the
//! previous run is active follows `overlap`; a refused fire leaves nothing but
//! its history row. Times are moved with `raw` (a due schedule is one whose
//! `next_fire_at` is behind us), never by waiting.

use weft_shared::api::{FireOutcome, Misfire, Overlap, Trigger};
use weft_shared::ids::{SessionId, UserId};
use weft_shared::store::{
    FireSettings, NewSchedule, RunLimits, RunStatus, ScheduleUpdate, Store, StoreError,
};
use weft_shared::time::now_ms;

use crate::both_backends;
use crate::harness::{Db, session, start, user};

both_backends!(
    a_due_schedule_fires_once_whatever_claims_it,
    a_thousand_due_at_once_make_a_thousand_runs,
    batches_of_many_owners_keep_each_ones_run_limits,
    a_late_fire_follows_misfire,
    a_fire_while_the_last_run_is_active_follows_overlap,
    a_fire_over_the_run_limits_waits_and_a_refused_one_is_recorded,
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

async fn a_due_schedule_fires_once_whatever_claims_it(db: Db) {
    let alice = user(&db, "alice").await;
    let s = db
        .store
        .create_schedule(&new(&alice.id, Trigger::Cron("0 9 * * 1-5".into())), 20)
        .await
        .unwrap();
    let next = s.next_fire_at.expect("an enabled cron has a next time");
    assert!(next > now_ms());
    let fire_at = due(&db, &s.id, 1000).await;
    assert_eq!(fire_all(&db.store, 8).await, 1);
    let fires = db.store.schedule_fires(&alice.id, &s.id, 10).await.unwrap();
    assert_eq!(fires.len(), 1);
    let fire = &fires[0];
    assert_eq!(
        (fire.fire_at, fire.outcome),
        (fire_at, FireOutcome::Started)
    );
    let run = fire.run_id.clone().expect("a started fire has its run");
    let rec = db.store.get_run(&alice.id, &run).await.unwrap();
    assert_eq!(
        (rec.status, rec.mode.as_str()),
        (RunStatus::Queued, "agent")
    );
    // A session of its own, titled by the schedule, holding the prompt.
    let sess = fire.session_id.clone().unwrap();
    let title = db
        .texts(format!("select title from sessions where id = '{sess}'"))
        .await;
    assert!(title[0].starts_with("daily digest · "), "{title:?}");
    assert_eq!(
        db.texts(format!(
            "select content from messages where session_id = '{sess}'"
        ))
        .await,
        vec!["summarise yesterday's open issues".to_string()]
    );
    // Moved on to the next weekday 09:00 in Shanghai, not fired again.
    let after = db.store.get_schedule(&alice.id, &s.id).await.unwrap();
    assert_eq!(after.next_fire_at, Some(next));
    assert_eq!(fire_all(&db.store, 4).await, 0);
    assert_eq!(after.last_fire.unwrap().run_status, Some(RunStatus::Queued));
}

async fn a_thousand_due_at_once_make_a_thousand_runs(db: Db) {
    let alice = user(&db, "alice").await;
    let mut first = None;
    for _ in 0..1000 {
        let s = db
            .store
            .create_schedule(&new(&alice.id, Trigger::EverySecs(3600)), 0)
            .await
            .unwrap();
        first.get_or_insert(s.id);
    }
    let at = now_ms() - 500;
    db.exec(format!("update schedules set next_fire_at = {at}"))
        .await;
    assert_eq!(fire_all(&db.store, 3).await, 1000);
    assert_eq!(db.count("select count(*) from runs".into()).await, 1000);
    assert_eq!(
        db.count("select count(*) from schedule_fires".into()).await,
        1000
    );
    assert_eq!(
        db.count(format!(
            "select count(*) from schedules where next_fire_at <= {}",
            now_ms()
        ))
        .await,
        0
    );
    assert_eq!(fire_all(&db.store, 3).await, 0);
    let _ = first;
}

/// Concurrent batches that each hold several owners' rows (their run limits)
/// neither deadlock nor pass a limit; a deferred fire leaves no trace, stays
/// due, and is passed over for the rest of the pass.
async fn batches_of_many_owners_keep_each_ones_run_limits(db: Db) {
    let mut owners = Vec::new();
    for name in ["ann", "bo", "cy"] {
        let u = user(&db, name).await;
        for _ in 0..20 {
            db.store
                .create_schedule(&new(&u.id, Trigger::EverySecs(3600)), 0)
                .await
                .unwrap();
        }
        owners.push(u);
    }
    let at = now_ms() - 500;
    db.exec(format!("update schedules set next_fire_at = {at}"))
        .await;
    let twelve_active = FireSettings {
        limits: RunLimits {
            active_per_user: 12,
            per_minute_per_user: 0,
        },
        ..settings()
    };
    let claimers = (0..4).map(|_| {
        let store = db.store.clone();
        let limits = twelve_active.clone();
        async move {
            let (mut made, mut passed) = (0, Vec::new());
            loop {
                let fired = store
                    .fire_due_batch(now_ms(), 5, &passed, &limits)
                    .await
                    .unwrap();
                if fired.is_empty() {
                    return (made, passed);
                }
                for f in fired {
                    if f.deferred {
                        assert!(f.run_id.is_none() && f.session_id.is_none(), "{f:?}");
                        passed.push(f.schedule_id);
                    } else {
                        made += 1;
                    }
                }
            }
        }
    });
    let results = futures::future::join_all(claimers).await;
    let made: usize = results.iter().map(|(m, _)| m).sum();
    assert_eq!(made, 36, "twelve each: {results:?}");
    for u in &owners {
        assert_eq!(
            db.count(format!(
                "select count(*) from runs where user_id = '{}'",
                u.id
            ))
            .await,
            12
        );
    }
    // The 24 deferred ones: no fire, no session, still due.
    assert_eq!(
        db.count("select count(*) from schedule_fires".into()).await,
        36
    );
    assert_eq!(db.count("select count(*) from sessions".into()).await, 36);
    assert_eq!(
        db.count(format!(
            "select count(*) from schedules where next_fire_at <= {}",
            now_ms()
        ))
        .await,
        24
    );
    // Passing all of them over, a batch finds nothing; with room, they fire.
    let all: Vec<String> = results.into_iter().flat_map(|(_, p)| p).collect();
    let mut deferred = all.clone();
    deferred.sort();
    deferred.dedup();
    assert_eq!(deferred.len(), 24);
    assert!(
        db.store
            .fire_due_batch(now_ms(), 50, &deferred, &settings())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(fire_all(&db.store, 2).await, 24);
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

async fn a_fire_over_the_run_limits_waits_and_a_refused_one_is_recorded(db: Db) {
    let alice = user(&db, "alice").await;
    let busy = session(&db, &alice).await;
    start(&db, &alice.id, &busy.id, "a long task").await;
    let s = db
        .store
        .create_schedule(&new(&alice.id, Trigger::EverySecs(60)), 20)
        .await
        .unwrap();
    due(&db, &s.id, 100).await;
    let one_active = FireSettings {
        limits: RunLimits {
            active_per_user: 1,
            per_minute_per_user: 0,
        },
        ..settings()
    };
    // Over the owner's run limits the fire waits: nothing written, still due.
    let fired = db
        .store
        .fire_due(&s.id, now_ms(), &one_active)
        .await
        .unwrap()
        .unwrap();
    assert!(fired.deferred && fired.run_id.is_none(), "{fired:?}");
    assert!(
        db.store
            .schedule_fires(&alice.id, &s.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        db.count(format!(
            "select count(*) from sessions where user_id = '{}'",
            alice.id
        ))
        .await,
        1,
        "no session made for the deferred fire"
    );
    assert!(
        db.store
            .get_schedule(&alice.id, &s.id)
            .await
            .unwrap()
            .next_fire_at
            .unwrap()
            < now_ms()
    );
    // With room again it fires.
    let fired = db
        .store
        .fire_due(&s.id, now_ms(), &settings())
        .await
        .unwrap()
        .unwrap();
    assert!(!fired.deferred && fired.run_id.is_some(), "{fired:?}");
    assert!(
        db.store
            .get_schedule(&alice.id, &s.id)
            .await
            .unwrap()
            .next_fire_at
            .unwrap()
            > now_ms()
    );
    // A target session deleted since: refused, saying so.
    let gone = session(&db, &alice).await;
    let to_gone = db
        .store
        .create_schedule(
            &NewSchedule {
                session_id: Some(gone.id.clone()),
                ..new(&alice.id, Trigger::EverySecs(60))
            },
            20,
        )
        .await
        .unwrap();
    db.exec(format!("delete from sessions where id = '{}'", gone.id))
        .await;
    due(&db, &to_gone.id, 100).await;
    let fired = db
        .store
        .fire_due(&to_gone.id, now_ms(), &settings())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fired.outcome, FireOutcome::Refused);
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

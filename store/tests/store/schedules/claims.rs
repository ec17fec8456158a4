//! Claiming fires: each once whatever claims it — one transaction per fire
//! or batches, several at once, many owners under their run limits — and a
//! fire over the run limits deferred without a trace.

use super::*;

both_backends!(
    a_due_schedule_fires_once_whatever_claims_it,
    a_thousand_due_at_once_make_a_thousand_runs,
    batches_of_many_owners_keep_each_ones_run_limits,
    a_fire_over_the_run_limits_waits_and_a_refused_one_is_recorded,
);

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
        (rec.status, rec.agent.as_str()),
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

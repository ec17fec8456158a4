//! Per-user run limits: active runs and runs per rolling minute, for every path
//! that creates a run (a send, an interrupt, the follow-up of a run's end, the
//! reaper) — and under parallel sends, which must not slip past the count.

use weft_shared::api::Multitask;
use weft_shared::ids::{RunId, SessionId};
use weft_shared::time::now_ms;
use weft_store::{ClaimedRun, FinishOutcome, RunLimits, RunStatus, SendOutcome, SessionRecord};

use crate::both_backends;
use crate::harness::{Db, claim, limits, req, session, start, started, succeed_claimed, user};

both_backends!(
    active_runs_are_capped,
    runs_per_minute_are_capped,
    interrupt_counts_after_its_cancel,
    followup_waits_until_within_limits,
    parallel_sends_admit_exactly_the_active_limit,
    parallel_sends_admit_exactly_the_rate_limit,
);

async fn sessions(db: &Db, owner: &weft_store::AuthUser, n: usize) -> Vec<SessionRecord> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(session(db, owner).await);
    }
    out
}

async fn succeed(db: &Db, run: &RunId, limits: RunLimits) -> FinishOutcome {
    let c = claim(db, run, "w1").await;
    end(db, &c, limits).await
}

async fn end(db: &Db, run: &ClaimedRun, limits: RunLimits) -> FinishOutcome {
    succeed_claimed(db, run, &limits).await
}

async fn messages_in(db: &Db, session: &SessionId) -> i64 {
    db.count(format!(
        "select count(*) from messages where session_id = '{session}'"
    ))
    .await
}

async fn active_runs_are_capped(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let ss = sessions(&db, &alice, 3).await;
    let two = limits(2, 0);
    let send = |i: usize, text: &str| {
        let mut r = req(&alice.id, &ss[i].id, text);
        r.limits = two;
        r
    };
    started(s.send_message(&send(0, "a")).await.unwrap());
    let second = started(s.send_message(&send(1, "b")).await.unwrap());
    let second = claim(&db, &second.run_id, "w1").await;
    assert_eq!(
        s.send_message(&send(2, "c")).await.unwrap(),
        SendOutcome::TooManyActive
    );
    assert_eq!(messages_in(&db, &ss[2].id).await, 0, "nothing written");
    // A message that waits behind an active run creates no run: not limited.
    assert!(matches!(
        s.send_message(&send(0, "a2")).await.unwrap(),
        SendOutcome::Queued { .. }
    ));
    // Other users have their own count.
    let hers = session(&db, &bob).await;
    let mut r = req(&bob.id, &hers.id, "x");
    r.limits = two;
    started(s.send_message(&r).await.unwrap());

    // A run ends (without a follow-up: that would take the free slot): room again.
    end(&db, &second, two).await;
    started(s.send_message(&send(2, "c")).await.unwrap());
    assert_eq!(
        s.send_message(&send(1, "d")).await.unwrap(),
        SendOutcome::TooManyActive
    );
}

async fn runs_per_minute_are_capped(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let ss = sessions(&db, &alice, 3).await;
    let two_a_minute = limits(0, 2);
    let send = |i: usize| {
        let mut r = req(&alice.id, &ss[i].id, "hi");
        r.limits = two_a_minute;
        r
    };
    let a = started(s.send_message(&send(0)).await.unwrap());
    let b = started(s.send_message(&send(1)).await.unwrap());
    // Ended runs count: it is a rate, cancelled ones included.
    succeed(&db, &a.run_id, RunLimits::unlimited()).await;
    s.cancel_run(&alice.id, &b.run_id, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    let out = s.send_message(&send(2)).await.unwrap();
    let SendOutcome::RateLimited { retry_after_secs } = out else {
        panic!("{out:?}");
    };
    assert!((1..=60).contains(&retry_after_secs), "{retry_after_secs}");
    assert_eq!(messages_in(&db, &ss[2].id).await, 0, "nothing written");

    // The oldest run leaves the window: one more fits, and only one.
    db.exec(format!(
        "update runs set created_at = {} where id = '{}'",
        now_ms() - 61_000,
        a.run_id
    ))
    .await;
    started(s.send_message(&send(2)).await.unwrap());
    assert!(matches!(
        s.send_message(&send(0)).await.unwrap(),
        SendOutcome::RateLimited { .. }
    ));
}

async fn interrupt_counts_after_its_cancel(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    // At the active limit, an interrupt frees its own slot.
    let mut r = req(&alice.id, &sess.id, "one");
    r.limits = limits(1, 0);
    let first = started(s.send_message(&r).await.unwrap());
    r.message.text = "two".into();
    r.message.multitask = Multitask::Interrupt;
    let out = s.send_message(&r).await.unwrap();
    let SendOutcome::Started {
        run: second,
        interrupted: Some(old),
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!(old.id, first.run_id);

    // Over the rate, the interrupt is refused and its cancel rolled back.
    r.message.text = "three".into();
    r.limits = limits(0, 2);
    assert!(matches!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::RateLimited { .. }
    ));
    let rec = s.get_run(&alice.id, &second.run_id).await.unwrap();
    assert_eq!((rec.status, rec.cancelled_by), (RunStatus::Queued, None));
    assert_eq!(messages_in(&db, &sess.id).await, 2);
}

async fn followup_waits_until_within_limits(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let busy = session(&db, &alice).await;
    let other = session(&db, &alice).await;
    let one_active = limits(1, 0);
    let first = start(&db, &alice.id, &busy.id, "one").await;
    // Running with a fresh lease: the reaper has nothing to do for it.
    let blocker = start(&db, &alice.id, &other.id, "elsewhere").await;
    let blocker = claim(&db, &blocker.run_id, "w1").await;
    let waiting = s
        .send_message(&req(&alice.id, &busy.id, "two"))
        .await
        .unwrap();
    let SendOutcome::Queued {
        message_id: waiting,
        ..
    } = waiting
    else {
        panic!("{waiting:?}");
    };

    // The run ends while another run of the user is active: no follow-up yet.
    let out = succeed(&db, &first.run_id, one_active).await;
    assert!(
        matches!(out, FinishOutcome::Finished { followup: None, .. }),
        "{out:?}"
    );
    assert_eq!(s.get_message(&waiting).await.unwrap().unwrap().run_id, None);
    let later = now_ms() + 60_000;
    // The reaper checks the same limits.
    assert!(s.reap(0, later, &one_active).await.unwrap().is_empty());
    assert_eq!(s.get_message(&waiting).await.unwrap().unwrap().run_id, None);

    // Back within the limits: the reaper makes the follow-up.
    end(&db, &blocker, one_active).await;
    let reaped = s.reap(0, later, &one_active).await.unwrap();
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    assert_eq!(
        s.get_message(&waiting).await.unwrap().unwrap().run_id,
        Some(reaped[0].clone())
    );
    assert_eq!(
        s.get_session(&alice.id, &busy.id)
            .await
            .unwrap()
            .active_run_id,
        Some(reaped[0].0.clone())
    );
}

/// Sends of one user race into different sessions; the count must hold.
async fn parallel_sends(db: &Db, n: usize, limits: RunLimits) -> Vec<SendOutcome> {
    let alice = user(db, "alice").await;
    let ss = sessions(db, &alice, n).await;
    let tasks: Vec<_> = ss
        .iter()
        .map(|sess| {
            let s = db.store.clone();
            let mut r = req(&alice.id, &sess.id, "go");
            r.limits = limits;
            tokio::spawn(async move { s.send_message(&r).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap().expect("no send fails"));
    }
    out
}

async fn parallel_sends_admit_exactly_the_active_limit(db: Db) {
    let out = parallel_sends(&db, 20, limits(5, 0)).await;
    let started = out
        .iter()
        .filter(|o| matches!(o, SendOutcome::Started { .. }))
        .count();
    let refused = out
        .iter()
        .filter(|o| matches!(o, SendOutcome::TooManyActive))
        .count();
    assert_eq!((started, refused), (5, 15), "{out:?}");
    assert_eq!(db.count("select count(*) from runs".into()).await, 5);
    assert_eq!(db.count("select count(*) from messages".into()).await, 5);
}

async fn parallel_sends_admit_exactly_the_rate_limit(db: Db) {
    let out = parallel_sends(&db, 20, limits(0, 5)).await;
    let started = out
        .iter()
        .filter(|o| matches!(o, SendOutcome::Started { .. }))
        .count();
    let refused = out
        .iter()
        .filter(|o| matches!(o, SendOutcome::RateLimited { .. }))
        .count();
    assert_eq!((started, refused), (5, 15), "{out:?}");
    assert_eq!(db.count("select count(*) from runs".into()).await, 5);
}

//! Channels and the delivery outbox: a scheduled run's notification fans out
//! into one delivery (and one `notify.deliver` job) per channel of its
//! schedule, once, however often its end is written; a run a person sent
//! delivers nothing; a delivered delivery stays delivered; channels belong to
//! their owner, by name, within the limit; a deleted channel leaves its
//! deliveries' history behind.

use weft_shared::api::{ChannelKind, ChannelTarget, DeliveryStatus, NotificationKind, Trigger};
use weft_shared::time::now_ms;
use weft_store::{Conflict, NewSchedule, OverLimit, RunLimits, ScheduleUpdate, StoreError};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, user};
use crate::runs::{finish, succeeded};
use crate::schedules::settings;

both_backends!(
    a_scheduled_end_fans_out_once_per_channel,
    a_delivered_delivery_stays_delivered,
    channels_are_owned_named_and_limited,
    a_persons_own_run_waiting_reaches_only_channels_that_take_waits,
);

fn webhook(url: &str) -> ChannelTarget {
    ChannelTarget::Webhook {
        url: url.into(),
        secret: Some("whsec_0123456789abcdef".into()),
    }
}

fn schedule(owner: &weft_shared::ids::UserId, deliver: Vec<String>) -> NewSchedule {
    NewSchedule {
        user_id: owner.clone(),
        name: "daily digest".into(),
        agent: "agent".into(),
        model: "mock".into(),
        prompt: "summarise yesterday".into(),
        trigger: Trigger::EverySecs(3600),
        timezone: "UTC".into(),
        enabled: true,
        session_id: None,
        misfire: weft_shared::api::Misfire::RunOnce,
        overlap: weft_shared::api::Overlap::Queue,
        deliver,
    }
}

async fn deliver_jobs(db: &Db) -> i64 {
    db.count("select count(*) from jobs where kind = 'notify.deliver'".into())
        .await
}

async fn status(db: &Db, id: &str) -> weft_store::DeliveryRecord {
    db.store.delivery(id).await.unwrap().unwrap().delivery
}

async fn a_scheduled_end_fans_out_once_per_channel(db: Db) {
    let alice = user(&db, "alice").await;
    let hook = db
        .store
        .create_channel(
            &alice.id,
            "ops",
            &webhook("https://example.com/h"),
            false,
            20,
        )
        .await
        .unwrap();
    let mail = db
        .store
        .create_channel(
            &alice.id,
            "mail",
            &ChannelTarget::Email {
                to: "alice@example.com".into(),
            },
            false,
            20,
        )
        .await
        .unwrap();
    let s = db
        .store
        .create_schedule(
            &schedule(
                &alice.id,
                vec![hook.id.clone(), mail.id.clone(), hook.id.clone()],
            ),
            20,
        )
        .await
        .unwrap();
    let mut deliver = s.deliver.clone();
    deliver.sort();
    let mut want = vec![hook.id.clone(), mail.id.clone()];
    want.sort();
    assert_eq!(deliver, want, "a channel named twice is one");

    let fired = db
        .store
        .fire_now(&alice.id, &s.id, now_ms(), &settings())
        .await
        .unwrap();
    let run = fired.run_id.expect("a run");
    let claimed = claim(&db, &run, "w1").await;
    finish(&db, &claimed, "w1", succeeded("3 issues were opened")).await;
    let deliveries = db
        .store
        .run_deliveries(std::slice::from_ref(&run.0))
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    for d in &deliveries {
        assert_eq!(
            (d.status, d.notification_kind, d.attempts),
            (
                DeliveryStatus::Pending,
                NotificationKind::ScheduleFinished,
                0
            )
        );
        assert_eq!(d.run_id.as_deref(), Some(run.0.as_str()));
    }
    assert_eq!(deliver_jobs(&db).await, 2);

    // The end written again (a retried transaction): nothing more.
    let again = db.store.claim_run(&run, "w2", i64::MAX, 3).await;
    assert!(again.is_ok());
    let _ = db
        .store
        .finish_run(
            &claimed,
            "w1",
            &succeeded("3 issues were opened"),
            Default::default(),
            None,
            &RunLimits::unlimited(),
        )
        .await;
    assert_eq!(
        db.store
            .run_deliveries(std::slice::from_ref(&run.0))
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(deliver_jobs(&db).await, 2);

    // What a delivery job reads: the channel, the title, the whole text.
    let hook_delivery = deliveries.iter().find(|d| d.channel_id == hook.id).unwrap();
    let work = db.store.delivery(&hook_delivery.id).await.unwrap().unwrap();
    assert_eq!(work.target, Some(webhook("https://example.com/h")));
    assert_eq!(work.title, "daily digest");
    assert_eq!(work.text, "succeeded: 3 issues were opened");
    assert_eq!(work.schedule_id.as_deref(), Some(s.id.as_str()));
    assert_eq!(work.delivery.channel_kind, Some(ChannelKind::Webhook));

    // A run a person sent delivers nothing.
    let sess = session(&db, &alice).await;
    let mine = start(&db, &alice.id, &sess.id, "hello").await;
    let claimed = claim(&db, &mine.run_id, "w1").await;
    finish(&db, &claimed, "w1", succeeded("hi")).await;
    assert!(
        db.store
            .run_deliveries(std::slice::from_ref(&mine.run_id.0))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(deliver_jobs(&db).await, 2);
}

async fn a_delivered_delivery_stays_delivered(db: Db) {
    let alice = user(&db, "alice").await;
    let hook = db
        .store
        .create_channel(
            &alice.id,
            "ops",
            &webhook("https://example.com/h"),
            false,
            20,
        )
        .await
        .unwrap();
    let test = db.store.test_channel(&alice.id, &hook.id).await.unwrap();
    assert_eq!(
        (test.status, test.notification_kind),
        (DeliveryStatus::Pending, NotificationKind::ChannelTest)
    );
    db.store
        .delivery_tried(
            &test.id,
            DeliveryStatus::Pending,
            Some("the receiver answered 503"),
        )
        .await
        .unwrap();
    let d = status(&db, &test.id).await;
    assert_eq!(
        (d.status, d.attempts, d.error.as_deref()),
        (
            DeliveryStatus::Pending,
            1,
            Some("the receiver answered 503")
        )
    );
    db.store
        .delivery_tried(&test.id, DeliveryStatus::Delivered, None)
        .await
        .unwrap();
    let d = status(&db, &test.id).await;
    assert_eq!(
        (d.status, d.attempts, d.error.clone()),
        (DeliveryStatus::Delivered, 2, None)
    );
    assert!(d.delivered_at.is_some());
    // A late try of another attempt, and the runner giving up, change nothing.
    db.store
        .delivery_tried(&test.id, DeliveryStatus::Failed, Some("late"))
        .await
        .unwrap();
    db.store.delivery_gave_up(&test.id, "lapsed").await.unwrap();
    assert_eq!(status(&db, &test.id).await, d);
    let listed = db
        .store
        .channel_deliveries(&alice.id, &hook.id, 10)
        .await
        .unwrap();
    assert_eq!(listed, vec![d.clone()]);
    let read = db.store.get_channel(&alice.id, &hook.id).await.unwrap();
    assert_eq!(read.last_delivery, Some(d));
    // The test notification is in the inbox, already read.
    let (inbox, unread) = db.store.notifications(&alice.id, false, 10).await.unwrap();
    assert_eq!((inbox.len(), unread), (1, 0));
}

async fn channels_are_owned_named_and_limited(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let ops = db
        .store
        .create_channel(
            &alice.id,
            "ops",
            &webhook("https://example.com/h"),
            false,
            2,
        )
        .await
        .unwrap();
    let same = db
        .store
        .create_channel(
            &alice.id,
            "ops",
            &webhook("https://example.com/2"),
            false,
            2,
        )
        .await;
    assert!(
        matches!(same, Err(StoreError::Conflict(Conflict::ChannelNameTaken))),
        "{same:?}"
    );
    // Bob may use the name; alice reaches her limit.
    db.store
        .create_channel(&bob.id, "ops", &webhook("https://example.com/b"), false, 2)
        .await
        .unwrap();
    db.store
        .create_channel(
            &alice.id,
            "two",
            &ChannelTarget::Lark { chat_id: None },
            false,
            2,
        )
        .await
        .unwrap();
    let third = db
        .store
        .create_channel(
            &alice.id,
            "three",
            &webhook("https://example.com/3"),
            false,
            2,
        )
        .await;
    assert!(
        matches!(
            third,
            Err(StoreError::OverLimit(OverLimit::Channels {
                held: 2,
                limit: 2
            }))
        ),
        "{third:?}"
    );
    assert!(matches!(
        db.store.get_channel(&bob.id, &ops.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        db.store.delete_channel(&bob.id, &ops.id).await,
        Err(StoreError::NotFound)
    ));

    // Bob's schedule may not deliver to alice's channel.
    let refused = db
        .store
        .create_schedule(&schedule(&bob.id, vec![ops.id.clone()]), 20)
        .await;
    match refused {
        Err(StoreError::Invalid(why)) => assert!(why.starts_with("deliver:"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        db.count("select count(*) from schedules".into()).await,
        0,
        "nothing stored"
    );

    // A patch without the webhook's secret keeps it.
    let moved = db
        .store
        .update_channel(
            &alice.id,
            &ops.id,
            Some("ops hook"),
            Some(&ChannelTarget::Webhook {
                url: "https://example.com/new".into(),
                secret: None,
            }),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (moved.name.as_str(), moved.target),
        (
            "ops hook",
            ChannelTarget::Webhook {
                url: "https://example.com/new".into(),
                secret: Some("whsec_0123456789abcdef".into())
            }
        )
    );

    // Deleted: the schedule stops delivering to it; the history stays, nameless.
    let s = db
        .store
        .create_schedule(&schedule(&alice.id, vec![ops.id.clone()]), 20)
        .await
        .unwrap();
    assert_eq!(
        db.store
            .get_channel(&alice.id, &ops.id)
            .await
            .unwrap()
            .schedules,
        1
    );
    let test = db.store.test_channel(&alice.id, &ops.id).await.unwrap();
    db.store.delete_channel(&alice.id, &ops.id).await.unwrap();
    assert!(
        db.store
            .get_schedule(&alice.id, &s.id)
            .await
            .unwrap()
            .deliver
            .is_empty()
    );
    let work = db.store.delivery(&test.id).await.unwrap().unwrap();
    assert_eq!(
        (
            work.target,
            work.delivery.channel_name,
            work.delivery.channel_kind
        ),
        (None, None, None)
    );
    // And a patch can clear or set a schedule's channels.
    let two = db.store.list_channels(&alice.id).await.unwrap()[0]
        .id
        .clone();
    let set = db
        .store
        .update_schedule(
            &alice.id,
            &s.id,
            &ScheduleUpdate {
                deliver: Some(vec![two.clone()]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(set.deliver, vec![two]);
}

/// Suspend `run` (claimed by `w1`) on one question at step 1.
async fn ask(db: &Db, run: &weft_shared::ids::RunId, id: &str) {
    let pending = weft_store::PendingStep {
        reasoning: Vec::new(),
        step: 1,
        content: "Let me ask.".into(),
        tool_calls: Vec::new(),
    };
    let question = weft_store::NewQuestion {
        id: id.into(),
        call_id: format!("call_{id}"),
        question: "Which colour?".into(),
        options: vec!["red".into(), "blue".into()],
        multiple: false,
        allow_text: false,
        expires_at: now_ms() + 60_000,
    };
    let waits = weft_store::NewWaits {
        approvals: Vec::new(),
        questions: vec![question],
        plans: Vec::new(),
        delegations: Vec::new(),
    };
    assert!(
        db.store
            .store_waits(run, "w1", &pending, &waits)
            .await
            .unwrap()
    );
}

async fn a_persons_own_run_waiting_reaches_only_channels_that_take_waits(db: Db) {
    let alice = user(&db, "alice").await;
    let quiet = db
        .store
        .create_channel(
            &alice.id,
            "quiet",
            &webhook("https://example.com/q"),
            false,
            20,
        )
        .await
        .unwrap();
    let sess = session(&db, &alice).await;
    // No channel takes waits: nothing is written.
    let first = start(&db, &alice.id, &sess.id, "paint it").await.run_id;
    claim(&db, &first, "w1").await;
    ask(&db, &first, "q_1").await;
    assert_eq!(
        db.count("select count(*) from notifications".into()).await,
        0
    );
    assert_eq!(deliver_jobs(&db).await, 0);

    // One that does: one notification, delivered there only.
    let phone = db
        .store
        .create_channel(
            &alice.id,
            "phone",
            &webhook("https://example.com/p"),
            true,
            20,
        )
        .await
        .unwrap();
    assert!(phone.waits && !quiet.waits);
    let other = session(&db, &alice).await;
    let second = start(&db, &alice.id, &other.id, "paint it").await.run_id;
    claim(&db, &second, "w1").await;
    ask(&db, &second, "q_2").await;
    let (inbox, unread) = db.store.notifications(&alice.id, false, 10).await.unwrap();
    assert_eq!((inbox.len(), unread), (1, 1));
    assert_eq!(inbox[0].kind, NotificationKind::RunWaiting);
    assert_eq!(inbox[0].body, "asks you: Which colour?");
    let deliveries = db
        .store
        .run_deliveries(std::slice::from_ref(&second.0))
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    assert_eq!(
        (
            deliveries[0].channel_id.as_str(),
            deliveries[0].notification_kind
        ),
        (phone.id.as_str(), NotificationKind::RunWaiting)
    );
    let work = db.store.delivery(&deliveries[0].id).await.unwrap().unwrap();
    assert_eq!(work.notification_key, format!("{}:1:wait", second.0));

    // A run of a Lark conversation: its chat shows the cards; nothing more.
    let chat = session(&db, &alice).await;
    db.exec(format!(
        "update sessions set lark_chat_key = 'oc_team' where id = '{}'",
        chat.id.0
    ))
    .await;
    let third = start(&db, &alice.id, &chat.id, "paint it").await.run_id;
    claim(&db, &third, "w1").await;
    ask(&db, &third, "q_3").await;
    assert_eq!(
        db.count("select count(*) from notifications".into()).await,
        1
    );
    assert_eq!(deliver_jobs(&db).await, 1);
}

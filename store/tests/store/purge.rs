//! Purging what nobody can use any more: expired login tokens, idempotency keys
//! past their retention, Lark inbound ids past the redelivery window.

use weft_shared::time::now_ms;
use weft_store::{InboundClaim, InboxEntry, InboxState, Purged, SendOutcome, TokenKind};

use crate::both_backends;
use crate::harness::{Db, req, session, started, user};

both_backends!(
    expired_login_tokens_are_purged,
    old_idempotency_keys_are_purged,
    old_lark_inbound_ids_are_purged,
);

const DAY_MS: i64 = 24 * 3600 * 1000;

async fn expired_login_tokens_are_purged(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let web = s
        .create_token(&alice.id, "web", TokenKind::Login, "h-web")
        .await
        .unwrap();
    s.create_token(&alice.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    s.ensure_bootstrap_admin("h-boot", "!unusable")
        .await
        .unwrap();
    let expires = web.expires_at.unwrap();

    assert_eq!(
        s.purge_expired(now_ms(), 0).await.unwrap(),
        Purged::default()
    );
    assert_eq!(
        s.purge_expired(expires - 1, 0).await.unwrap().login_tokens,
        0
    );
    // At its expiry instant it is gone; tokens without expiry never are.
    assert_eq!(
        s.purge_expired(expires, 0).await.unwrap(),
        Purged {
            login_tokens: 1,
            idempotency_keys: 0
        }
    );
    assert!(s.authenticate("h-web").await.unwrap().is_none());
    assert_eq!(
        s.purge_expired(now_ms() + 400 * DAY_MS, 0).await.unwrap(),
        Purged::default()
    );
    assert!(s.authenticate("h-api").await.unwrap().is_some());
    assert!(s.authenticate("h-boot").await.unwrap().is_some());
    assert_eq!(db.count("select count(*) from tokens".into()).await, 2);
}

async fn old_idempotency_keys_are_purged(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let a = session(&db, &alice).await;
    let b = session(&db, &alice).await;
    let mut r = req(&alice.id, &a.id, "hello");
    r.message.idempotency_key = Some("k1".into());
    let first = started(s.send_message(&r).await.unwrap());
    let created = db
        .count("select created_at from idempotency_keys where key = 'k1'".into())
        .await;

    // Kept while younger than the cut.
    assert_eq!(
        s.purge_expired(now_ms(), created).await.unwrap(),
        Purged::default()
    );
    assert!(matches!(
        s.send_message(&r).await.unwrap(),
        SendOutcome::Replayed { .. }
    ));
    assert_eq!(
        s.purge_expired(now_ms(), created + 1).await.unwrap(),
        Purged {
            login_tokens: 0,
            idempotency_keys: 1
        }
    );
    // A retry that late is a new message.
    r.message.session = b.id.clone();
    let second = started(s.send_message(&r).await.unwrap());
    assert_ne!(second.message_id, first.message_id);
    assert_eq!(
        s.purge_expired(now_ms(), 0).await.unwrap(),
        Purged::default(),
        "purging is idempotent"
    );
}

async fn old_lark_inbound_ids_are_purged(db: Db) {
    let s = &db.store;
    let keep = |id: &str| {
        let e = InboxEntry {
            message_id: id.into(),
            chat_key: "oc_1".into(),
            payload: "{}".into(),
            arrived_us: 1,
            delivery: uuid::Uuid::new_v4().to_string(),
        };
        async move { s.keep_lark_inbound(&[e], "gw1", now_ms()).await.unwrap()[0] }
    };
    assert_eq!(keep("om_old").await, InboundClaim::New);
    s.finish_lark_inbound("om_old", InboxState::Handled)
        .await
        .unwrap();
    let received = db
        .count("select received_at from lark_inbound where message_id = 'om_old'".into())
        .await;
    assert_eq!(s.purge_lark_inbound(received).await.unwrap(), 0);
    assert_eq!(keep("om_old").await, InboundClaim::Duplicate);
    db.exec("update lark_inbound set received_at = 5 where message_id = 'om_old'".into())
        .await;
    assert_eq!(keep("om_new").await, InboundClaim::New);
    s.finish_lark_inbound("om_new", InboxState::Handled)
        .await
        .unwrap();
    assert_eq!(s.purge_lark_inbound(10).await.unwrap(), 1);
    assert_eq!(s.purge_lark_inbound(10).await.unwrap(), 0);
    // Forgotten: a delivery that late would be taken again; the new one stays taken.
    assert_eq!(keep("om_old").await, InboundClaim::New);
    assert_eq!(keep("om_new").await, InboundClaim::Duplicate);
}

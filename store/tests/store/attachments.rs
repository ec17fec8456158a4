//! Attachment rows and the sweep of stored files: a file's bytes go only when no
//! message names its hash and nobody uploaded it again within the grace period;
//! a deleted user or session leaves orphans the sweep finds.

use std::sync::atomic::{AtomicUsize, Ordering};

use weft_shared::api::AttachmentKind;
use weft_store::{NewAttachment, SendOutcome};

use crate::both_backends;
use crate::harness::{Db, req, session, user};

both_backends!(
    attachments_are_listed_with_their_message_and_owner_only,
    named_or_recently_touched_files_are_kept,
    deleting_sessions_and_users_orphans_files,
);

fn file(sha: &str, name: &str) -> NewAttachment {
    NewAttachment {
        name: name.into(),
        kind: AttachmentKind::Image,
        mime: "image/png".into(),
        bytes: 10,
        sha256: sha.into(),
        text_chars: None,
        unreadable: None,
    }
}

fn sha(c: char) -> String {
    c.to_string().repeat(64)
}

/// Counts how often the sweep asked for bytes to be deleted.
async fn sweep(db: &Db, sha: &str, before: i64, deleted: &AtomicUsize) -> bool {
    db.store
        .sweep_blob(sha, before, || async {
            deleted.fetch_add(1, Ordering::SeqCst);
            Ok::<(), String>(())
        })
        .await
        .unwrap()
}

async fn attachments_are_listed_with_their_message_and_owner_only(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let s = session(&db, &alice).await;
    let mut r = req(&alice.id, &s.id, "look");
    r.message.attachments = vec![file(&sha('a'), "one.png"), file(&sha('b'), "two.png")];
    let SendOutcome::Started { run, .. } = db.store.send_message(&r).await.unwrap() else {
        panic!("expected a run")
    };
    let (msgs, _) = db
        .store
        .list_messages(&alice.id, &s.id, 50, None)
        .await
        .unwrap();
    assert_eq!(msgs.len(), 1);
    let names: Vec<&str> = msgs[0]
        .attachments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["one.png", "two.png"]);
    assert_eq!(msgs[0].id, run.message_id);
    let ctx = db.store.context_messages(&s.id, 10).await.unwrap();
    assert_eq!(
        ctx[0].attachments.len(),
        2,
        "the worker's view has them too"
    );
    let id = &msgs[0].attachments[0].id;
    assert_eq!(
        db.store.get_attachment(&alice.id, id).await.unwrap().sha256,
        sha('a')
    );
    assert!(db.store.get_attachment(&bob.id, id).await.is_err());
    assert!(db.store.session_attachment(s.id.as_str(), id).await.is_ok());
}

async fn named_or_recently_touched_files_are_kept(db: Db) {
    let deleted = AtomicUsize::new(0);
    let alice = user(&db, "alice").await;
    let s = session(&db, &alice).await;
    let named = db.store.register_blob(&sha('c'), 10).await.unwrap();
    let mut r = req(&alice.id, &s.id, "look");
    r.message.attachments = vec![file(&sha('c'), "c.png")];
    db.store.send_message(&r).await.unwrap();
    assert!(!sweep(&db, &sha('c'), named + 1, &deleted).await, "named");

    let orphan = db.store.register_blob(&sha('d'), 10).await.unwrap();
    assert!(
        !sweep(&db, &sha('d'), orphan - 1, &deleted).await,
        "touched after the cut-off"
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    assert_eq!(db.store.orphan_blobs(orphan, 10).await.unwrap(), [sha('d')]);
    assert!(sweep(&db, &sha('d'), orphan, &deleted).await);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert!(
        db.store
            .orphan_blobs(i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A failed delete keeps the row, so a later sweep tries again.
    db.store.register_blob(&sha('e'), 10).await.unwrap();
    let failed = db
        .store
        .sweep_blob(&sha('e'), i64::MAX, || async { Err::<(), _>("disk gone") })
        .await;
    assert!(failed.is_err());
    assert_eq!(
        db.store.orphan_blobs(i64::MAX, 10).await.unwrap(),
        [sha('e')]
    );
}

async fn deleting_sessions_and_users_orphans_files(db: Db) {
    let alice = user(&db, "alice").await;
    let one = session(&db, &alice).await;
    let two = session(&db, &alice).await;
    for (s, c) in [(&one, 'f'), (&two, 'f'), (&two, 'g')] {
        db.store.register_blob(&sha(c), 10).await.unwrap();
        let mut r = req(&alice.id, &s.id, "look");
        r.message.attachments = vec![file(&sha(c), "x.png")];
        r.message.multitask = weft_shared::api::Multitask::Enqueue;
        db.store.send_message(&r).await.unwrap();
    }
    assert_eq!(db.store.session_blobs(&one.id).await.unwrap(), [sha('f')]);
    db.store.delete_session(&alice.id, &one.id).await.unwrap();
    assert!(
        db.store
            .orphan_blobs(i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    db.store.delete_user(&alice.id).await.unwrap();
    let mut orphans = db.store.orphan_blobs(i64::MAX, 10).await.unwrap();
    orphans.sort();
    assert_eq!(orphans, [sha('f'), sha('g')]);
}

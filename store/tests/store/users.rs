//! Users and roles: creation, uniqueness, credentials, role changes, password
//! changes and the tokens they revoke, deletion with everything the user owns.

use weft_store::{Conflict, PasswordChange, Role, StoreError, TokenKind};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, user};

both_backends!(
    create_and_look_up,
    usernames_are_unique,
    look_alike_names_are_refused_and_old_rows_stay,
    list_is_ordered_by_username,
    role_change_and_admin_reset,
    own_password_change_keeps_this_session_and_api_tokens,
    delete_user_takes_everything_and_reports_active_runs,
);

async fn create_and_look_up(db: Db) {
    let s = &db.store;
    let alice = s.create_user("alice", "hash-a", Role::Admin).await.unwrap();
    assert!(alice.is_admin());
    assert_eq!(s.get_user(&alice.id).await.unwrap(), alice);
    assert_eq!(s.password_hash(&alice.id).await.unwrap(), "hash-a");
    let (found, hash) = s.user_credentials("alice").await.unwrap().unwrap();
    assert_eq!((found, hash.as_str()), (alice.clone(), "hash-a"));
    assert!(s.user_credentials("nobody").await.unwrap().is_none());

    let ghost = weft_shared::ids::UserId::new();
    assert!(matches!(
        s.get_user(&ghost).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.password_hash(&ghost).await,
        Err(StoreError::NotFound)
    ));
}

async fn usernames_are_unique(db: Db) {
    user(&db, "bob").await;
    let again = db.store.create_user("bob", "x", Role::Admin).await;
    assert!(
        matches!(again, Err(StoreError::Conflict(Conflict::UsernameTaken))),
        "{again:?}"
    );
    assert_eq!(db.store.list_users().await.unwrap().len(), 1);
}

/// New usernames are plain lowercase ASCII wherever they come from (the API,
/// `weft admin user add`, Lark); a row stored before the rule still signs in.
async fn look_alike_names_are_refused_and_old_rows_stay(db: Db) {
    let s = &db.store;
    user(&db, "admin").await;
    for name in [
        "\u{0430}dmin",
        "ａｄｍｉｎ",
        "ad\u{200d}min",
        "\u{202e}nimda",
        "Admin",
    ] {
        let got = s.create_user(name, "x", Role::User).await;
        assert!(
            matches!(&got, Err(StoreError::Invalid(why)) if why.contains("lowercase ASCII")),
            "{name:?}: {got:?}"
        );
    }
    for open_id in ["ou_\u{0430}dmin", "ou_x\u{200b}", "ou x", ""] {
        let got = s.lark_user(open_id).await;
        assert!(
            matches!(&got, Err(StoreError::Invalid(_))),
            "{open_id:?}: {got:?}"
        );
    }
    assert_eq!(s.list_users().await.unwrap().len(), 1);
    db.exec(
        "insert into users (id, username, password_hash, role, created_at) values ('u_old', 'Ålice', 'h', 'user', 1)"
            .into(),
    )
    .await;
    let (old, _) = s.user_credentials("Ålice").await.unwrap().expect("old row");
    assert_eq!(old.username, "Ålice");
}

async fn list_is_ordered_by_username(db: Db) {
    for name in ["carol", "alice", "bob"] {
        user(&db, name).await;
    }
    let names: Vec<String> = db
        .store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(names, ["alice", "bob", "carol"]);
}

async fn role_change_and_admin_reset(db: Db) {
    let s = &db.store;
    let dave = user(&db, "dave").await;
    s.create_token(&dave.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    s.create_token(&dave.id, "web", TokenKind::Login, "h-login")
        .await
        .unwrap();

    // A role change alone keeps the password and the tokens.
    let promoted = s
        .update_user(&dave.id, None, Some(Role::Admin))
        .await
        .unwrap();
    assert_eq!(promoted.role, Role::Admin);
    assert_eq!(s.get_user(&dave.id).await.unwrap().role, Role::Admin);
    assert_eq!(s.list_tokens(&dave.id).await.unwrap().len(), 2);

    // An admin reset revokes API and login tokens.
    let reset = s
        .update_user(&dave.id, Some("new-hash"), None)
        .await
        .unwrap();
    assert_eq!(reset.role, Role::Admin);
    assert_eq!(s.password_hash(&dave.id).await.unwrap(), "new-hash");
    assert!(s.list_tokens(&dave.id).await.unwrap().is_empty());
    assert!(s.authenticate("h-api").await.unwrap().is_none());
    assert!(s.authenticate("h-login").await.unwrap().is_none());

    let missing = s
        .update_user(&weft_shared::ids::UserId::new(), None, Some(Role::User))
        .await;
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
}

async fn own_password_change_keeps_this_session_and_api_tokens(db: Db) {
    let s = &db.store;
    let erin = user(&db, "erin").await;
    s.create_token(&erin.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    s.create_token(&erin.id, "laptop", TokenKind::Login, "h-here")
        .await
        .unwrap();
    s.create_token(&erin.id, "phone", TokenKind::Login, "h-other")
        .await
        .unwrap();

    s.set_password(&erin.id, "h2", PasswordChange::BySelf { keep: "h-here" })
        .await
        .unwrap();
    assert_eq!(s.password_hash(&erin.id).await.unwrap(), "h2");
    let mut left: Vec<String> = s
        .list_tokens(&erin.id)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.hash)
        .collect();
    left.sort();
    assert_eq!(left, ["h-api", "h-here"]);
    assert!(s.authenticate("h-other").await.unwrap().is_none());

    // An admin reset also leaves the bootstrap token alone.
    s.ensure_bootstrap_admin("h-boot", "!unusable")
        .await
        .unwrap();
    let (admin, _) = s.user_credentials("admin").await.unwrap().unwrap();
    s.create_token(&admin.id, "cli", TokenKind::Api, "h-admin-api")
        .await
        .unwrap();
    s.set_password(&admin.id, "h3", PasswordChange::Reset)
        .await
        .unwrap();
    let kinds: Vec<TokenKind> = s
        .list_tokens(&admin.id)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.kind)
        .collect();
    assert_eq!(kinds, [TokenKind::Bootstrap]);

    let missing = s
        .set_password(&weft_shared::ids::UserId::new(), "h", PasswordChange::Reset)
        .await;
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
}

async fn delete_user_takes_everything_and_reports_active_runs(db: Db) {
    let s = &db.store;
    let frank = user(&db, "frank").await;
    let other = user(&db, "grace").await;
    s.create_token(&frank.id, "cli", TokenKind::Api, "h-frank")
        .await
        .unwrap();
    let s1 = session(&db, &frank).await;
    let s2 = session(&db, &frank).await;
    let s3 = session(&db, &frank).await;
    let queued = start(&db, &frank.id, &s1.id, "one").await;
    let running = start(&db, &frank.id, &s2.id, "two").await;
    claim(&db, &running.run_id, "w1").await;
    // A finished run is not reported.
    let done = start(&db, &frank.id, &s3.id, "three").await;
    let c = claim(&db, &done.run_id, "w1").await;
    s.finish_run(
        &c,
        "w1",
        &weft_store::RunEnd::Succeeded {
            content: "ok".into(),
            step: 1,
            citations: Vec::new(),
            reasoning: Vec::new(),
        },
        Default::default(),
        None,
        &Default::default(),
    )
    .await
    .unwrap();
    let kept = session(&db, &other).await;
    start(&db, &other.id, &kept.id, "not frank's").await;

    let mut active = s.delete_user(&frank.id).await.unwrap();
    active.sort_by(|a, b| a.id.cmp(&b.id));
    let mut expected = vec![
        (queued.run_id.clone(), true),
        (running.run_id.clone(), false),
    ];
    expected.sort();
    assert_eq!(
        active
            .iter()
            .map(|r| (r.id.clone(), r.was_queued))
            .collect::<Vec<_>>(),
        expected
    );

    assert!(matches!(
        s.get_user(&frank.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(s.authenticate("h-frank").await.unwrap().is_none());
    for run in [&queued.run_id, &running.run_id, &done.run_id] {
        assert!(matches!(
            s.get_run_unscoped(run).await,
            Err(StoreError::NotFound)
        ));
    }
    let frank_id = &frank.id.0;
    for table in ["sessions", "runs", "tokens", "idempotency_keys"] {
        assert_eq!(
            db.count(format!(
                "select count(*) from {table} where user_id = '{frank_id}'"
            ))
            .await,
            0,
            "{table}"
        );
    }
    assert_eq!(
        db.count(format!(
            "select count(*) from messages where session_id in ('{}', '{}', '{}')",
            s1.id, s2.id, s3.id
        ))
        .await,
        0
    );
    // The other user is untouched, and a second delete finds nobody.
    let kept = s.get_session(&other.id, &kept.id).await.unwrap();
    assert!(kept.active_run_id.is_some());
    let again = s.delete_user(&frank.id).await;
    assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
}

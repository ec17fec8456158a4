//! Tokens: one table, one lookup path (the secret's SHA-256). API tokens never
//! expire, login sessions last 30 days, the bootstrap token follows
//! `WEFT_ADMIN_TOKEN`.

use weft_shared::ids::TokenId;
use weft_shared::time::now_ms;
use weft_store::{Conflict, Role, StoreError, TokenKind};

use crate::both_backends;
use crate::harness::{Db, user};

both_backends!(
    tokens_authenticate_their_user,
    expired_login_tokens_are_dead,
    list_is_oldest_first_and_per_user,
    delete_is_scoped_to_the_owner,
    logout_revokes_by_hash_whatever_the_kind,
    token_hashes_are_unique,
    bootstrap_admin_is_idempotent_and_rotates,
    bootstrap_admin_from_many_processes_at_once,
    bootstrap_tokens_revoked_when_unset,
);

const THIRTY_DAYS_MS: i64 = 30 * 24 * 3600 * 1000;

async fn tokens_authenticate_their_user(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let api = s
        .create_token(&alice.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    let login = s
        .create_token(&alice.id, "web", TokenKind::Login, "h-login")
        .await
        .unwrap();
    assert_eq!(api.expires_at, None);
    assert_eq!(
        login.expires_at,
        Some(login.created_at + THIRTY_DAYS_MS),
        "login sessions last 30 days"
    );

    for hash in ["h-api", "h-login"] {
        let who = s.authenticate(hash).await.unwrap();
        assert_eq!(who.as_ref(), Some(&alice), "{hash}");
    }
    assert!(s.authenticate("h-unknown").await.unwrap().is_none());

    // The first use is recorded (later ones at most once a minute).
    let listed = s.list_tokens(&alice.id).await.unwrap();
    assert_eq!(listed.len(), 2);
    for t in &listed {
        let used = t.last_used_at.expect("last use recorded");
        assert!(used >= t.created_at, "{t:?}");
    }
    // The record round-trips what was stored.
    let stored = listed.iter().find(|t| t.id == api.id).unwrap();
    assert_eq!(
        (stored.name.as_str(), stored.kind, stored.hash.as_str()),
        ("cli", TokenKind::Api, "h-api")
    );
    assert!(stored.to_dto(Some("h-api")).current);
    assert!(!stored.to_dto(Some("h-login")).current);
}

async fn expired_login_tokens_are_dead(db: Db) {
    let s = &db.store;
    let bob = user(&db, "bob").await;
    let old = s
        .create_token(&bob.id, "old", TokenKind::Login, "h-old")
        .await
        .unwrap();
    s.create_token(&bob.id, "new", TokenKind::Login, "h-new")
        .await
        .unwrap();
    db.exec(format!(
        "update tokens set expires_at = {} where id = '{}'",
        now_ms() - 1,
        old.id
    ))
    .await;
    assert!(s.authenticate("h-old").await.unwrap().is_none());
    assert_eq!(s.authenticate("h-new").await.unwrap().unwrap().id, bob.id);
    let names: Vec<String> = s
        .list_tokens(&bob.id)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["new"]);
}

async fn list_is_oldest_first_and_per_user(db: Db) {
    let s = &db.store;
    let carol = user(&db, "carol").await;
    let dave = user(&db, "dave").await;
    let kinds = [TokenKind::Login, TokenKind::Api, TokenKind::Login];
    let mut made = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        made.push(
            s.create_token(&carol.id, &format!("t{i}"), kind, &format!("h-c{i}"))
                .await
                .unwrap()
                .id,
        );
    }
    s.create_token(&dave.id, "d", TokenKind::Api, "h-d")
        .await
        .unwrap();
    let listed = s.list_tokens(&carol.id).await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        made
    );
    assert_eq!(listed.iter().map(|t| t.kind).collect::<Vec<_>>(), kinds);
    assert_eq!(s.list_tokens(&dave.id).await.unwrap().len(), 1);
}

async fn delete_is_scoped_to_the_owner(db: Db) {
    let s = &db.store;
    let erin = user(&db, "erin").await;
    let mallory = user(&db, "mallory").await;
    let t = s
        .create_token(&erin.id, "cli", TokenKind::Api, "h-erin")
        .await
        .unwrap();

    let stolen = s.delete_token(&mallory.id, &t.id).await;
    assert!(matches!(stolen, Err(StoreError::NotFound)), "{stolen:?}");
    assert!(s.authenticate("h-erin").await.unwrap().is_some());

    s.delete_token(&erin.id, &t.id).await.unwrap();
    assert!(s.authenticate("h-erin").await.unwrap().is_none());
    assert!(s.list_tokens(&erin.id).await.unwrap().is_empty());
    let again = s.delete_token(&erin.id, &t.id).await;
    assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
    let unknown = s.delete_token(&erin.id, &TokenId::new()).await;
    assert!(matches!(unknown, Err(StoreError::NotFound)), "{unknown:?}");
}

async fn logout_revokes_by_hash_whatever_the_kind(db: Db) {
    let s = &db.store;
    let frank = user(&db, "frank").await;
    s.create_token(&frank.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    s.create_token(&frank.id, "web", TokenKind::Login, "h-web")
        .await
        .unwrap();
    s.revoke_token("h-api").await.unwrap();
    assert!(s.authenticate("h-api").await.unwrap().is_none());
    assert!(s.authenticate("h-web").await.unwrap().is_some());
    // Revoking something unknown (already revoked) is not an error.
    s.revoke_token("h-api").await.unwrap();
    let left: Vec<String> = s
        .list_tokens(&frank.id)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.hash)
        .collect();
    assert_eq!(left, ["h-web"]);
}

async fn token_hashes_are_unique(db: Db) {
    let s = &db.store;
    let a = user(&db, "a").await;
    let b = user(&db, "b").await;
    s.create_token(&a.id, "one", TokenKind::Api, "same")
        .await
        .unwrap();
    let dup = s.create_token(&b.id, "two", TokenKind::Login, "same").await;
    assert!(
        matches!(dup, Err(StoreError::Conflict(Conflict::TokenExists))),
        "{dup:?}"
    );
    // The hash still means `a`.
    assert_eq!(s.authenticate("same").await.unwrap().unwrap().id, a.id);
}

async fn bootstrap_admin_is_idempotent_and_rotates(db: Db) {
    let s = &db.store;
    // A user called admin who lost the role gets it back.
    let existing = s
        .create_user("admin", "real-hash", Role::User)
        .await
        .unwrap();
    s.ensure_bootstrap_admin("h-boot-1", "!unusable")
        .await
        .unwrap();
    let admin = s.authenticate("h-boot-1").await.unwrap().unwrap();
    assert_eq!(admin.id, existing.id);
    assert_eq!(admin.role, Role::Admin);
    // The existing password stays.
    assert_eq!(s.password_hash(&admin.id).await.unwrap(), "real-hash");

    s.ensure_bootstrap_admin("h-boot-1", "!unusable")
        .await
        .unwrap();
    let bootstrap = |tokens: Vec<weft_store::TokenRecord>| {
        tokens
            .into_iter()
            .filter(|t| t.kind == TokenKind::Bootstrap)
            .map(|t| (t.hash, t.name))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bootstrap(s.list_tokens(&admin.id).await.unwrap()),
        [("h-boot-1".to_string(), "WEFT_ADMIN_TOKEN".to_string())]
    );

    // Rotating WEFT_ADMIN_TOKEN retires the previous one.
    s.ensure_bootstrap_admin("h-boot-2", "!unusable")
        .await
        .unwrap();
    assert!(s.authenticate("h-boot-1").await.unwrap().is_none());
    assert_eq!(
        s.authenticate("h-boot-2").await.unwrap().unwrap().id,
        admin.id
    );
    assert_eq!(
        bootstrap(s.list_tokens(&admin.id).await.unwrap()),
        [("h-boot-2".to_string(), "WEFT_ADMIN_TOKEN".to_string())]
    );
    assert_eq!(s.list_users().await.unwrap().len(), 1);
}

async fn bootstrap_admin_from_many_processes_at_once(db: Db) {
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let s = db.store.clone();
            tokio::spawn(async move { s.ensure_bootstrap_admin("h-boot", "!unusable").await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().expect("every start-up succeeds");
    }
    let users = db.store.list_users().await.unwrap();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(
        (users[0].username.as_str(), users[0].role),
        ("admin", Role::Admin)
    );
    assert_eq!(
        db.count("select count(*) from tokens where kind = 'bootstrap'".into())
            .await,
        1
    );
    assert!(db.store.authenticate("h-boot").await.unwrap().is_some());
}

async fn bootstrap_tokens_revoked_when_unset(db: Db) {
    let s = &db.store;
    s.ensure_bootstrap_admin("h-boot", "!unusable")
        .await
        .unwrap();
    let admin = s.authenticate("h-boot").await.unwrap().unwrap();
    s.create_token(&admin.id, "cli", TokenKind::Api, "h-api")
        .await
        .unwrap();
    assert_eq!(s.revoke_bootstrap_tokens().await.unwrap(), 1);
    assert!(s.authenticate("h-boot").await.unwrap().is_none());
    assert!(s.authenticate("h-api").await.unwrap().is_some());
    assert_eq!(s.revoke_bootstrap_tokens().await.unwrap(), 0);
    // The admin account itself stays.
    assert!(s.get_user(&admin.id).await.is_ok());
}

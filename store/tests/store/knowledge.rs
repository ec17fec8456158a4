//! Knowledge bases: who sees and changes a base, one document per content,
//! its ingestion job, chunks replaced whole, lexical search in any script, and
//! deletes that take documents out of the next search and cancel their job.

use weft_knowledge::segment;
use weft_shared::api::{DocumentStatus, KnowledgeVisibility};
use weft_shared::job::{IngestDocument, JobKind};
use weft_shared::time::now_ms;
use weft_store::{
    AuthUser, BaseChange, DocumentLimits, JobState, NewChunk, NewDocument, OverLimit, Role,
    StoreError,
};

use crate::both_backends;
use crate::harness::{Db, user};

both_backends!(
    private_bases_are_their_owners_and_shared_ones_everyones,
    the_same_bytes_are_one_document_with_one_ingestion_job,
    chunks_are_replaced_whole_and_found_by_any_word,
    chinese_text_is_found_by_its_words,
    deleting_takes_documents_out_of_search_and_cancels_ingestion,
    base_names_are_checked_and_unique_per_owner,
    document_bytes_are_kept_while_a_document_names_them,
    documents_are_held_to_their_limits_exactly,
);

async fn admin(db: &Db) -> AuthUser {
    db.store
        .create_user("root", "argon2-hash-placeholder", Role::Admin)
        .await
        .unwrap()
}

pub(crate) fn doc<'a>(name: &'a str, sha: &'a str) -> NewDocument<'a> {
    NewDocument {
        name,
        mime: "text/markdown",
        bytes: 10,
        sha256: sha,
        limits: DocumentLimits::default(),
    }
}

pub(crate) fn chunk(text: &str, heading: &str) -> NewChunk {
    NewChunk {
        text: text.into(),
        heading: heading.into(),
        page: None,
        tokens: 10,
        lexical: segment::lexical(&format!("{heading} {text}")),
    }
}

async fn search(db: &Db, bases: &[&str], query: &str) -> Vec<String> {
    let bases: Vec<String> = bases.iter().map(|b| b.to_string()).collect();
    db.store
        .search_knowledge_lexical(&bases, &segment::query_terms(query, 16), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

async fn private_bases_are_their_owners_and_shared_ones_everyones(db: Db) {
    let s = &db.store;
    let (alice, bob, root) = (
        user(&db, "alice").await,
        user(&db, "bob").await,
        admin(&db).await,
    );
    let private = s
        .create_knowledge_base(&alice.id, "notes", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let shared = s
        .create_knowledge_base(
            &alice.id,
            "handbook",
            "team docs",
            KnowledgeVisibility::Shared,
        )
        .await
        .unwrap();
    let names = |bases: Vec<weft_store::KnowledgeBase>| {
        bases.into_iter().map(|b| b.name).collect::<Vec<_>>()
    };
    assert_eq!(
        names(s.knowledge_bases(&alice).await.unwrap()),
        ["handbook", "notes"]
    );
    assert_eq!(names(s.knowledge_bases(&bob).await.unwrap()), ["handbook"]);
    assert_eq!(names(s.knowledge_bases(&root).await.unwrap()), ["handbook"]);

    // Bob: the private base does not exist for him; the shared one is only
    // his to search.
    assert!(matches!(
        s.knowledge_base(&bob, &private).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.knowledge_documents(&bob, &private).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.add_knowledge_document(&bob, &private, &doc("a.md", "aa"))
            .await,
        Err(StoreError::NotFound)
    ));
    let seen = s.knowledge_base(&bob, &shared).await.unwrap();
    assert!(!seen.editable_by(&bob));
    assert_eq!(seen.owner_name, "alice");
    assert!(matches!(
        s.add_knowledge_document(&bob, &shared, &doc("a.md", "aa"))
            .await,
        Err(StoreError::Forbidden)
    ));
    assert!(matches!(
        s.delete_knowledge_base(&bob, &shared).await,
        Err(StoreError::Forbidden)
    ));
    // An admin changes a shared base; the owner changes either.
    let renamed = s
        .update_knowledge_base(
            &root,
            &shared,
            &BaseChange {
                description: Some("the team's handbook"),
                ..BaseChange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(renamed.description, "the team's handbook");
    s.update_knowledge_base(
        &alice,
        &private,
        &BaseChange {
            visibility: Some(KnowledgeVisibility::Shared),
            ..BaseChange::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(s.knowledge_bases(&bob).await.unwrap().len(), 2);
    // A name means the caller's own base first.
    let bobs = s
        .create_knowledge_base(&bob.id, "handbook", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    assert_eq!(
        s.knowledge_base_named(&bob, "handbook").await.unwrap().id,
        bobs
    );
    assert_eq!(
        s.knowledge_base_named(&alice, "handbook").await.unwrap().id,
        shared
    );
    assert!(matches!(
        s.knowledge_base_named(&alice, "nothing").await,
        Err(StoreError::NotFound)
    ));
}

async fn the_same_bytes_are_one_document_with_one_ingestion_job(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let other = s
        .create_knowledge_base(&alice.id, "kb2", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let (first, created) = s
        .add_knowledge_document(&alice, &base, &doc("guide.md", "sha-1"))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(first.status, DocumentStatus::Queued);
    let (again, created) = s
        .add_knowledge_document(&alice, &base, &doc("copy of guide.md", "sha-1"))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, first.id);
    assert_eq!(again.name, "guide.md");
    // The same bytes in another base are that base's own document.
    let (elsewhere, created) = s
        .add_knowledge_document(&alice, &other, &doc("guide.md", "sha-1"))
        .await
        .unwrap();
    assert!(created);
    assert_ne!(elsewhere.id, first.id);
    let job = s
        .job(IngestDocument::KIND, &first.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(
        serde_json::from_str::<IngestDocument>(&job.payload).unwrap(),
        IngestDocument {
            document_id: first.id.clone()
        }
    );
    assert_eq!(
        db.count(format!(
            "select count(*) from jobs where kind = '{}'",
            IngestDocument::KIND
        ))
        .await,
        2
    );
    assert_eq!(s.knowledge_base(&alice, &base).await.unwrap().documents, 1);
}

async fn chunks_are_replaced_whole_and_found_by_any_word(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let (d, _) = s
        .add_knowledge_document(&alice, &base, &doc("vpn.md", "sha-vpn"))
        .await
        .unwrap();
    assert!(s.knowledge_document_processing(&d.id).await.unwrap());
    let chunks = vec![
        chunk("Install the VPN client from the portal.", "Setup"),
        chunk("Reset your password at the front desk.", "Accounts"),
        chunk("The VPN needs a password and a token.", "Setup > Login"),
    ];
    // An interrupted attempt wrote them once; the next writes them again.
    s.replace_knowledge_chunks(&d.id, &chunks, None)
        .await
        .unwrap();
    s.replace_knowledge_chunks(&d.id, &chunks, None)
        .await
        .unwrap();
    assert_eq!(
        db.count(format!(
            "select count(*) from knowledge_chunks where document_id = '{}'",
            d.id
        ))
        .await,
        3
    );
    let ready = s.knowledge_document(&alice, &base, &d.id).await.unwrap();
    assert_eq!((ready.status, ready.chunks), (DocumentStatus::Ready, 3));

    let found = search(&db, &[&base], "vpn password").await;
    assert_eq!(found.len(), 3, "any word matches: {found:?}");
    assert_eq!(
        found[0], "The VPN needs a password and a token.",
        "the chunk with both words ranks first"
    );
    assert_eq!(
        search(&db, &[&base], "front desk").await,
        ["Reset your password at the front desk."]
    );
    // The heading path is indexed with the text.
    assert_eq!(search(&db, &[&base], "login").await.len(), 1);
    assert!(search(&db, &[&base], "kubernetes").await.is_empty());
    assert!(search(&db, &[], "vpn").await.is_empty());
    let hits = s
        .search_knowledge_lexical(std::slice::from_ref(&base), &["vpn".into()], 10)
        .await
        .unwrap();
    let first = &hits[0];
    assert_eq!(first.document_name, "vpn.md");
    assert!(first.score > 0.0);
    let around = s
        .knowledge_chunks_between(&[(d.id.clone(), first.ord - 1, first.ord + 1)])
        .await
        .unwrap();
    assert!(around.iter().any(|c| c.chunk_id == first.chunk_id));
    assert!(around.windows(2).all(|w| w[0].ord + 1 == w[1].ord));

    // A failure leaves no chunks behind.
    s.knowledge_document_failed(&d.id, "no text layer (scanned PDF)")
        .await
        .unwrap();
    assert!(search(&db, &[&base], "vpn").await.is_empty());
    let failed = s.knowledge_document(&alice, &base, &d.id).await.unwrap();
    assert_eq!(failed.status, DocumentStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("no text layer (scanned PDF)"));
}

async fn chinese_text_is_found_by_its_words(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "手册", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let (d, _) = s
        .add_knowledge_document(&alice, &base, &doc("手册.md", "sha-zh"))
        .await
        .unwrap();
    s.replace_knowledge_chunks(
        &d.id,
        &[
            chunk("如何重置公司邮箱的密码：请联系IT部门。", "账户"),
            chunk("报销流程需要部门经理审批。", "财务"),
        ],
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        search(&db, &[&base], "重置密码").await,
        ["如何重置公司邮箱的密码：请联系IT部门。"]
    );
    assert_eq!(
        search(&db, &[&base], "报销").await,
        ["报销流程需要部门经理审批。"]
    );
}

async fn deleting_takes_documents_out_of_search_and_cancels_ingestion(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let (kept, _) = s
        .add_knowledge_document(&alice, &base, &doc("kept.md", "sha-kept"))
        .await
        .unwrap();
    let (gone, _) = s
        .add_knowledge_document(&alice, &base, &doc("gone.md", "sha-gone"))
        .await
        .unwrap();
    s.replace_knowledge_chunks(&kept.id, &[chunk("alpha kept", "")], None)
        .await
        .unwrap();
    s.replace_knowledge_chunks(&gone.id, &[chunk("alpha gone", "")], None)
        .await
        .unwrap();
    let now = now_ms();
    // A worker is still on `gone`'s job (a re-ingest, say) when it is deleted.
    let claimed = s
        .claim_job(&[IngestDocument::KIND], "w1", now, now + 60_000)
        .await
        .unwrap()
        .unwrap();
    s.delete_knowledge_document(&alice, &base, &claimed.key)
        .await
        .unwrap();
    let deleted = if claimed.key == gone.id {
        "alpha gone"
    } else {
        "alpha kept"
    };
    assert!(
        !search(&db, &[&base], "alpha")
            .await
            .contains(&deleted.to_string())
    );
    assert_eq!(
        s.job(IngestDocument::KIND, &claimed.key)
            .await
            .unwrap()
            .unwrap()
            .state,
        JobState::Cancelled
    );
    assert!(
        !s.renew_job(&claimed.id, "w1", 1, now + 120_000, None)
            .await
            .unwrap(),
        "the worker learns at its next renewal"
    );
    assert!(matches!(
        s.replace_knowledge_chunks(&claimed.key, &[chunk("late", "")], None)
            .await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.delete_knowledge_document(&alice, &base, &claimed.key)
            .await,
        Err(StoreError::NotFound)
    ));

    // Deleting the base takes the rest: rows, index entries, queued jobs.
    s.delete_knowledge_base(&alice, &base).await.unwrap();
    assert!(search(&db, &[&base], "alpha").await.is_empty());
    assert_eq!(
        db.count("select count(*) from knowledge_chunks".into())
            .await,
        0
    );
    assert_eq!(
        db.count("select count(*) from knowledge_documents".into())
            .await,
        0
    );
    assert_eq!(
        db.count("select count(*) from jobs where state in ('queued', 'running')".into())
            .await,
        0
    );
    assert!(matches!(
        s.knowledge_base(&alice, &base).await,
        Err(StoreError::NotFound)
    ));
}

async fn base_names_are_checked_and_unique_per_owner(db: Db) {
    let s = &db.store;
    let (alice, bob) = (user(&db, "alice").await, user(&db, "bob").await);
    for bad in ["", " padded", "a/b", "x".repeat(65).as_str(), "semi;colon"] {
        assert!(
            matches!(
                s.create_knowledge_base(&alice.id, bad, "", KnowledgeVisibility::Private)
                    .await,
                Err(StoreError::Invalid(_))
            ),
            "{bad:?}"
        );
    }
    s.create_knowledge_base(
        &alice.id,
        "Team docs v2.1",
        "",
        KnowledgeVisibility::Private,
    )
    .await
    .unwrap();
    assert!(matches!(
        s.create_knowledge_base(&alice.id, "Team docs v2.1", "", KnowledgeVisibility::Shared)
            .await,
        Err(StoreError::Conflict(_))
    ));
    s.create_knowledge_base(&bob.id, "Team docs v2.1", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
}

async fn document_bytes_are_kept_while_a_document_names_them(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    s.register_blob("sha-doc", 10).await.unwrap();
    s.register_blob("sha-loose", 10).await.unwrap();
    let (d, _) = s
        .add_knowledge_document(&alice, &base, &doc("doc.md", "sha-doc"))
        .await
        .unwrap();
    let later = now_ms() + 1;
    assert_eq!(s.orphan_blobs(later, 10).await.unwrap(), ["sha-loose"]);
    let kept = s
        .sweep_blob("sha-doc", later, || async { Ok::<(), String>(()) })
        .await
        .unwrap();
    assert!(!kept, "a document names it");
    s.delete_knowledge_document(&alice, &base, &d.id)
        .await
        .unwrap();
    let mut orphans = s.orphan_blobs(later, 10).await.unwrap();
    orphans.sort();
    assert_eq!(orphans, ["sha-doc", "sha-loose"]);
}

/// The limits are checked in the transaction that adds a document, so adds
/// at the same moment cannot pass them together; the same bytes again are
/// never refused.
async fn documents_are_held_to_their_limits_exactly(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let limited = |name: &'static str, documents: u64, storage: u64| NewDocument {
        limits: DocumentLimits {
            documents_per_base: documents,
            owner_storage_bytes: storage,
        },
        ..doc(name, name)
    };
    s.add_knowledge_document(&alice, &base, &limited("a", 2, 0))
        .await
        .unwrap();
    // Two adds at once with room for one: exactly one is refused.
    let (b, c) = (limited("b", 2, 0), limited("c", 2, 0));
    let (b, c) = tokio::join!(
        s.add_knowledge_document(&alice, &base, &b),
        s.add_knowledge_document(&alice, &base, &c),
    );
    let refused: Vec<_> = [b, c].into_iter().filter_map(Result::err).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        matches!(
            refused[0],
            StoreError::OverLimit(OverLimit::Documents { held: 2, limit: 2 })
        ),
        "{refused:?}"
    );
    // At the limit, the same bytes again are the same document.
    let (_, created) = s
        .add_knowledge_document(&alice, &base, &limited("a", 2, 0))
        .await
        .unwrap();
    assert!(!created);
    // Storage: two documents of 10 bytes stored, a third would pass 25.
    let err = s
        .add_knowledge_document(&alice, &base, &limited("d", 0, 25))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::OverLimit(OverLimit::Storage {
                used: 20,
                adding: 10,
                limit: 25
            })
        ),
        "{err:?}"
    );
    let docs = s.knowledge_documents(&alice, &base).await.unwrap();
    assert_eq!(docs.len(), 2, "nothing of the refused adds is left");
}

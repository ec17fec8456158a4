//! Memories: every read and write names its person, so one person's memories
//! are never another's (404, empty lists); each write moves that person's
//! revision, which the claim returns (-1 → `None` with memory off); the
//! per-person cap holds even for adds at the same moment; a run records the
//! memories its prompt carried.

use weft_shared::api::{MemoryKind, MemorySource};
use weft_store::{Learned, MemoryChange, NewMemory, OverLimit, StoreError};

use crate::both_backends;
use crate::harness::{Db, claim, limits, session, start, succeed_claimed, user};

both_backends!(
    memories_are_their_persons_alone,
    each_write_moves_the_revision_the_claim_returns,
    the_cap_holds_for_adds_at_once,
    learned_memories_and_their_turns_are_kept_together,
);

fn new(text: &str) -> NewMemory<'_> {
    NewMemory {
        kind: MemoryKind::Fact,
        text,
        pinned: false,
        source_session_id: None,
        source_message_id: None,
        max_per_user: 100,
    }
}

async fn memories_are_their_persons_alone(db: Db) {
    let s = &db.store;
    let (alice, bob) = (user(&db, "alice").await, user(&db, "bob").await);
    let tea = s.add_memory(&alice.id, &new("prefers tea")).await.unwrap();
    assert_eq!(tea.to_dto().source, MemorySource::Manual);
    // The same words again (a `remember` redone after a crash) are that memory.
    let again = s.add_memory(&alice.id, &new("prefers tea")).await.unwrap();
    assert_eq!(again.id, tea.id);
    assert_eq!(s.memories(&alice.id, None).await.unwrap().len(), 1);
    let team = s
        .add_memory(
            &alice.id,
            &NewMemory {
                kind: MemoryKind::Episode,
                source_session_id: Some("ses_1"),
                source_message_id: Some("msg_1"),
                ..new("moved to the payments team")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        team.to_dto().source,
        MemorySource::Conversation {
            session_id: "ses_1".into(),
            message_id: Some("msg_1".into())
        }
    );
    s.update_memory(
        &alice.id,
        &tea.id,
        &MemoryChange {
            pinned: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let listed: Vec<String> = s
        .memories(&alice.id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(listed, [tea.id.clone(), team.id.clone()], "pinned first");
    let episodes = s
        .memories(&alice.id, Some(MemoryKind::Episode))
        .await
        .unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].text, "moved to the payments team");

    // Bob sees, changes and deletes none of it.
    assert!(s.memories(&bob.id, None).await.unwrap().is_empty());
    assert!(matches!(
        s.memory(&bob.id, &tea.id).await,
        Err(StoreError::NotFound)
    ));
    let change = MemoryChange {
        text: Some("prefers coffee"),
        ..Default::default()
    };
    assert!(matches!(
        s.update_memory(&bob.id, &tea.id, &change).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.delete_memory(&bob.id, &tea.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(s.delete_memories(&bob.id).await.unwrap(), 0);
    assert_eq!(
        s.memory(&alice.id, &tea.id).await.unwrap().text,
        "prefers tea"
    );

    let edited = s.update_memory(&alice.id, &tea.id, &change).await.unwrap();
    assert_eq!(
        (edited.text.as_str(), edited.pinned),
        ("prefers coffee", true)
    );
    s.delete_memory(&alice.id, &team.id).await.unwrap();
    assert_eq!(s.delete_memories(&alice.id).await.unwrap(), 1);
    assert!(s.memories(&alice.id, None).await.unwrap().is_empty());
}

async fn each_write_moves_the_revision_the_claim_returns(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let ses = session(&db, &alice).await;
    let rev_of = async |text: &str| {
        let run = start(&db, &alice.id, &ses.id, text).await;
        let claimed = claim(&db, &run.run_id, "w1").await;
        succeed_claimed(&db, &claimed, &weft_store::RunLimits::unlimited()).await;
        claimed.memory_rev
    };
    let first = rev_of("one").await.expect("memory is on by default");
    let m = s.add_memory(&alice.id, &new("likes graphs")).await.unwrap();
    let added = rev_of("two").await.unwrap();
    assert!(added > first, "{added} after {first}");
    s.update_memory(
        &alice.id,
        &m.id,
        &MemoryChange {
            pinned: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let changed = rev_of("three").await.unwrap();
    assert!(changed > added);
    s.set_memory_enabled(&alice.id, false).await.unwrap();
    assert!(!s.memory_enabled(&alice.id).await.unwrap());
    assert_eq!(rev_of("four").await, None, "off: the claim says so");
    s.set_memory_enabled(&alice.id, true).await.unwrap();
    assert!(rev_of("five").await.unwrap() > changed);

    // A run records what its prompt carried when it ends, and the memory
    // when it was used.
    let run = start(&db, &alice.id, &ses.id, "six").await;
    let mut claimed = claim(&db, &run.run_id, "w1").await;
    claimed.memories_used = vec![m.id.clone()];
    succeed_claimed(&db, &claimed, &limits(10, 1000)).await;
    assert!(
        s.memory(&alice.id, &m.id)
            .await
            .unwrap()
            .last_used_at
            .is_some()
    );
    assert_eq!(
        s.run_memories_used(&claimed.id).await.unwrap(),
        vec![m.id.clone()]
    );
}

async fn the_cap_holds_for_adds_at_once(db: Db) {
    let alice = user(&db, "alice").await;
    let texts: Vec<String> = (0..8).map(|i| format!("fact {i}")).collect();
    let adds = texts.iter().map(|t| {
        let store = db.store.clone();
        let id = alice.id.clone();
        async move {
            store
                .add_memory(
                    &id,
                    &NewMemory {
                        max_per_user: 5,
                        ..new(t)
                    },
                )
                .await
        }
    });
    let results = futures::future::join_all(adds).await;
    let kept = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(kept, 5, "{results:?}");
    for r in results.into_iter().filter_map(Result::err) {
        assert!(
            matches!(
                r,
                StoreError::OverLimit(OverLimit::Memories { held: 5, limit: 5 })
            ),
            "{r:?}"
        );
    }
    assert_eq!(db.store.memories(&alice.id, None).await.unwrap().len(), 5);
}

/// A turn that ends with `remember_after` set is marked and arms one
/// `memory.extract` job per session and person (armed again only once it
/// ended); what an extraction learned is kept with the turns' marks cleared,
/// in one transaction, touching only the person's unpinned memories, within
/// their cap.
async fn learned_memories_and_their_turns_are_kept_together(db: Db) {
    let s = &db.store;
    let (alice, bob) = (user(&db, "alice").await, user(&db, "bob").await);
    let ses = session(&db, &alice).await;
    let lim = limits(10, 1000);
    for text in ["I'm on the payments team", "I prefer answers in Chinese"] {
        let run = start(&db, &alice.id, &ses.id, text).await;
        let mut claimed = claim(&db, &run.run_id, "w1").await;
        claimed.remember_after = Some(std::time::Duration::from_secs(60));
        succeed_claimed(&db, &claimed, &lim).await;
    }
    // One untouched turn: not marked.
    let run = start(&db, &alice.id, &ses.id, "unmarked").await;
    succeed_claimed(&db, &claim(&db, &run.run_id, "w1").await, &lim).await;
    let jobs = "select count(*) from jobs where kind = 'memory.extract'";
    assert_eq!(
        db.count(jobs.into()).await,
        1,
        "one job for the session and person"
    );
    assert_eq!(
        db.count("select count(*) from jobs where kind = 'memory.extract' and state = 'queued' and run_after > created_at + 50000".into()).await,
        1,
        "armed for a minute later, and not pushed back by the second turn"
    );

    let pending = s
        .pending_memory_turns(&ses.id, &alice.id, 50)
        .await
        .unwrap();
    let said: Vec<&str> = pending
        .iter()
        .flat_map(|t| t.said.iter().map(|(_, text)| text.as_str()))
        .collect();
    assert_eq!(
        said,
        ["I'm on the payments team", "I prefer answers in Chinese"]
    );
    assert_eq!(pending[1].reply, "ok");
    assert!(
        s.pending_memory_turns(&ses.id, &bob.id, 50)
            .await
            .unwrap()
            .is_empty()
    );

    // The person's memories: a pinned one the extraction may not touch, an
    // unpinned one it rewrites, one it forgets; Bob's it cannot reach.
    let pinned = s
        .add_memory(
            &alice.id,
            &NewMemory {
                pinned: true,
                ..new("likes tea")
            },
        )
        .await
        .unwrap();
    let team = s
        .add_memory(&alice.id, &new("works on billing"))
        .await
        .unwrap();
    let old = s
        .add_memory(&alice.id, &new("prefers English"))
        .await
        .unwrap();
    let bobs = s.add_memory(&bob.id, &new("bob's own")).await.unwrap();
    let learned = Learned {
        add: vec![
            (MemoryKind::Fact, "prefers answers in Chinese".into()),
            (MemoryKind::Episode, "one too many".into()),
        ],
        update: vec![
            (team.id.clone(), "works on the payments team".into()),
            (pinned.id.clone(), "likes coffee".into()),
            (bobs.id.clone(), "changed by someone else".into()),
        ],
        forget: vec![old.id.clone(), bobs.id.clone()],
        profile: Some("- payments team\n- answers in Chinese".into()),
    };
    // A cap of 4 with three kept: one add fits (the profile is not counted).
    let kept = s
        .keep_learned(&alice.id, &ses.id, &learned, &pending[1..], 4)
        .await
        .unwrap();
    assert_eq!(
        (kept.added, kept.updated, kept.forgotten, kept.profile),
        (1, 1, 1, true)
    );
    let texts: Vec<String> = s
        .memories(&alice.id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    for t in [
        "likes tea",
        "works on the payments team",
        "prefers answers in Chinese",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t} in {texts:?}");
    }
    let profile = s
        .memories(&alice.id, None)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.profile)
        .expect("the profile");
    assert!(profile.pinned && profile.text.contains("payments"));
    assert_eq!(
        s.memories(&bob.id, None).await.unwrap()[0].text,
        "bob's own"
    );
    // Both turns are done: the one read, and the older one past the cap.
    assert!(
        s.pending_memory_turns(&ses.id, &alice.id, 50)
            .await
            .unwrap()
            .is_empty()
    );

    // A second extraction updates the profile in place.
    let run = start(&db, &alice.id, &ses.id, "I moved to Berlin").await;
    let mut claimed = claim(&db, &run.run_id, "w1").await;
    claimed.remember_after = Some(std::time::Duration::ZERO);
    succeed_claimed(&db, &claimed, &lim).await;
    let pending = s
        .pending_memory_turns(&ses.id, &alice.id, 50)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    s.keep_learned(
        &alice.id,
        &ses.id,
        &Learned {
            profile: Some("- lives in Berlin".into()),
            ..Learned::default()
        },
        &pending,
        100,
    )
    .await
    .unwrap();
    let profiles: Vec<String> = s
        .memories(&alice.id, None)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.profile)
        .map(|m| m.text)
        .collect();
    assert_eq!(profiles, ["- lives in Berlin"]);
}

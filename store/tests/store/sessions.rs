//! Sessions: owner scoping, the newest-first list and its cursor, title search,
//! rename, delete (with the runs it cancels), the automatic title.

use weft_shared::ids::SessionId;
use weft_store::{RunEnd, RunLimits, SessionCursor, SessionRecord, StoreError};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, user};

both_backends!(
    create_get_and_owner_scoping,
    list_is_newest_first_and_pages_cover_everything,
    list_pages_through_equal_timestamps,
    search_is_case_insensitive_and_literal,
    rename_moves_to_the_top,
    delete_cascades_and_reports_active_runs,
    first_message_titles_the_session,
    active_run_is_shown_until_it_ends,
);

fn ids(list: &[SessionRecord]) -> Vec<SessionId> {
    list.iter().map(|s| s.id.clone()).collect()
}

/// Give `sessions` distinct `updated_at`s, oldest first.
async fn spread_in_time(db: &Db, sessions: &[SessionRecord]) {
    for (i, s) in sessions.iter().enumerate() {
        db.exec(format!(
            "update sessions set updated_at = {} where id = '{}'",
            1_000 + i as i64,
            s.id
        ))
        .await;
    }
}

/// Every page of `user`'s list, `limit` at a time.
async fn all_pages(
    db: &Db,
    user: &weft_shared::ids::UserId,
    q: Option<&str>,
    limit: i64,
) -> Vec<Vec<SessionId>> {
    let mut pages = Vec::new();
    let mut cursor: Option<SessionCursor> = None;
    loop {
        let (page, next) = db
            .store
            .list_sessions(user, q, limit, cursor.as_ref())
            .await
            .unwrap();
        pages.push(ids(&page));
        match next {
            // The cursor survives its text form, as it does over HTTP.
            Some(c) => cursor = Some(SessionCursor::parse(&c.encode()).unwrap()),
            None => return pages,
        }
        assert!(pages.len() < 100, "paging does not end");
    }
}

async fn create_get_and_owner_scoping(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let mallory = user(&db, "mallory").await;
    let made = s
        .create_session(&alice.id, "Plans", "gpt-x", "chat", "cli")
        .await
        .unwrap();
    let got = s.get_session(&alice.id, &made.id).await.unwrap();
    assert_eq!(got, made);
    assert_eq!(
        (
            got.title.as_str(),
            got.model.as_str(),
            got.agent.as_str(),
            got.source.as_str()
        ),
        ("Plans", "gpt-x", "chat", "cli")
    );
    assert_eq!(got.active_run_id, None);

    // Another user's session does not exist for them.
    let nf = |r: Result<_, StoreError>| matches!(r, Err(StoreError::NotFound));
    assert!(nf(s.get_session(&mallory.id, &made.id).await.map(|_| ())));
    assert!(nf(s
        .update_session(&mallory.id, &made.id, Some("mine"), None, None)
        .await
        .map(|_| ())));
    assert!(nf(s
        .delete_session(&mallory.id, &made.id)
        .await
        .map(|_| ())));
    assert!(
        s.list_sessions(&mallory.id, None, 10, None)
            .await
            .unwrap()
            .0
            .is_empty()
    );
    assert_eq!(
        s.get_session(&alice.id, &made.id).await.unwrap().title,
        "Plans"
    );
}

async fn list_is_newest_first_and_pages_cover_everything(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let mut mine = Vec::new();
    for _ in 0..7 {
        mine.push(session(&db, &alice).await);
    }
    session(&db, &bob).await;
    // Created in one order, touched in another: the list follows updated_at.
    mine.reverse();
    mine.swap(1, 5);
    spread_in_time(&db, &mine).await;

    let pages = all_pages(&db, &alice.id, None, 3).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    let newest_first: Vec<SessionId> = mine.iter().rev().map(|s| s.id.clone()).collect();
    assert_eq!(pages.concat(), newest_first);

    // A page exactly as large as what is left has no next cursor.
    let (page, next) = db
        .store
        .list_sessions(&alice.id, None, 7, None)
        .await
        .unwrap();
    assert_eq!((page.len(), next), (7, None));
}

async fn list_pages_through_equal_timestamps(db: Db) {
    let alice = user(&db, "alice").await;
    let mut mine = Vec::new();
    for _ in 0..5 {
        mine.push(session(&db, &alice).await);
    }
    db.exec(format!(
        "update sessions set updated_at = 5000 where user_id = '{}'",
        alice.id
    ))
    .await;
    let pages = all_pages(&db, &alice.id, None, 2).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    // Same time: the id breaks the tie, newest (largest uuidv7) first, none twice.
    let mut expected = ids(&mine);
    expected.sort();
    expected.reverse();
    assert_eq!(pages.concat(), expected);
}

async fn search_is_case_insensitive_and_literal(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let titles = [
        "Rust tips",
        "rusty NAILS",
        "100% done",
        "snake_case names",
        "snakeXcase names",
        "back\\slash",
        "Über Straße",
    ];
    let mut by_title = std::collections::HashMap::new();
    for t in titles {
        let rec = s
            .create_session(&alice.id, t, "mock", "agent", "web")
            .await
            .unwrap();
        by_title.insert(t, rec);
    }
    spread_in_time(&db, &titles.map(|t| by_title[t].clone())).await;
    let find = |q: &'static str| {
        let s = s.clone();
        let alice = alice.id.clone();
        async move {
            let (found, _) = s.list_sessions(&alice, Some(q), 50, None).await.unwrap();
            found.into_iter().map(|r| r.title).collect::<Vec<_>>()
        }
    };
    assert_eq!(find("RUST").await, ["rusty NAILS", "Rust tips"]);
    assert_eq!(find("nails").await, ["rusty NAILS"]);
    assert_eq!(find("%").await, ["100% done"]);
    assert_eq!(find("_").await, ["snake_case names"]);
    assert_eq!(find("e_c").await, ["snake_case names"]);
    assert_eq!(find("\\").await, ["back\\slash"]);
    assert_eq!(find("über").await, ["Über Straße"]);
    assert_eq!(find("  tips  ").await, ["Rust tips"]);
    assert_eq!(find("nothing like this").await, Vec::<String>::new());
    // A blank query lists everything.
    assert_eq!(find("   ").await.len(), titles.len());

    // Searching pages too.
    let pages = all_pages(&db, &alice.id, Some("names"), 1).await;
    assert_eq!(
        pages.concat(),
        [
            by_title["snakeXcase names"].id.clone(),
            by_title["snake_case names"].id.clone()
        ]
    );
}

async fn rename_moves_to_the_top(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let a = session(&db, &alice).await;
    let b = session(&db, &alice).await;
    let c = session(&db, &alice).await;
    spread_in_time(&db, &[a.clone(), b.clone(), c.clone()]).await;

    let renamed = s
        .update_session(&alice.id, &a.id, Some("Renamed Trip"), None, None)
        .await
        .unwrap();
    assert_eq!(renamed.title, "Renamed Trip");
    assert_eq!(
        (renamed.model.as_str(), renamed.agent.as_str()),
        ("mock", "agent")
    );
    assert!(renamed.updated_at > 1_002, "{renamed:?}");
    let (list, _) = s.list_sessions(&alice.id, None, 10, None).await.unwrap();
    assert_eq!(ids(&list), [a.id.clone(), c.id.clone(), b.id.clone()]);
    // The search follows the new title.
    let (found, _) = s
        .list_sessions(&alice.id, Some("trip"), 10, None)
        .await
        .unwrap();
    assert_eq!(ids(&found), std::slice::from_ref(&a.id));

    // Model and agent change alone; the title stays.
    let changed = s
        .update_session(&alice.id, &a.id, None, Some("big"), Some("chat"))
        .await
        .unwrap();
    assert_eq!(
        (
            changed.title.as_str(),
            changed.model.as_str(),
            changed.agent.as_str()
        ),
        ("Renamed Trip", "big", "chat")
    );
    // A new run picks the session's model and agent up.
    let run = start(&db, &alice.id, &a.id, "hi").await;
    let rec = s.get_run(&alice.id, &run.run_id).await.unwrap();
    assert_eq!((rec.model.as_str(), rec.agent.as_str()), ("big", "chat"));
}

async fn delete_cascades_and_reports_active_runs(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let doomed = session(&db, &alice).await;
    let busy = session(&db, &alice).await;
    let quiet = session(&db, &alice).await;
    let kept = session(&db, &alice).await;
    let queued = start(&db, &alice.id, &doomed.id, "one").await;
    // A second message waits behind the first.
    s.send_message(&crate::harness::req(&alice.id, &doomed.id, "two"))
        .await
        .unwrap();
    let running = start(&db, &alice.id, &busy.id, "three").await;
    claim(&db, &running.run_id, "w1").await;
    let other = start(&db, &alice.id, &kept.id, "four").await;

    let active = s.delete_session(&alice.id, &doomed.id).await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(
        (active[0].id.clone(), active[0].was_queued),
        (queued.run_id.clone(), true)
    );
    let active = s.delete_session(&alice.id, &busy.id).await.unwrap();
    assert_eq!(
        active
            .iter()
            .map(|r| (r.id.clone(), r.was_queued))
            .collect::<Vec<_>>(),
        [(running.run_id.clone(), false)]
    );
    assert!(
        s.delete_session(&alice.id, &quiet.id)
            .await
            .unwrap()
            .is_empty()
    );

    for gone in [&doomed, &busy, &quiet] {
        assert!(matches!(
            s.get_session(&alice.id, &gone.id).await,
            Err(StoreError::NotFound)
        ));
        for table in ["messages", "runs"] {
            assert_eq!(
                db.count(format!(
                    "select count(*) from {table} where session_id = '{}'",
                    gone.id
                ))
                .await,
                0,
                "{table}"
            );
        }
    }
    assert!(matches!(
        s.get_run(&alice.id, &queued.run_id).await,
        Err(StoreError::NotFound)
    ));
    // The worker of the deleted running run learns it was deleted.
    assert!(!s.heartbeat(&running.run_id, "w1", 3).await.unwrap());
    // Untouched: the other session and its run.
    let (list, _) = s.list_sessions(&alice.id, None, 10, None).await.unwrap();
    assert_eq!(ids(&list), std::slice::from_ref(&kept.id));
    assert!(s.get_run(&alice.id, &other.run_id).await.is_ok());
    let again = s.delete_session(&alice.id, &doomed.id).await;
    assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
}

async fn first_message_titles_the_session(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let untitled = session(&db, &alice).await;
    assert_eq!(untitled.title, "");
    start(
        &db,
        &alice.id,
        &untitled.id,
        "\n   Plan the Trip to Kyoto  \nsecond line",
    )
    .await;
    let titled = s.get_session(&alice.id, &untitled.id).await.unwrap();
    assert_eq!(titled.title, "Plan the Trip to Kyoto");
    // Searchable by it, case-insensitively.
    let (found, _) = s
        .list_sessions(&alice.id, Some("kyoto"), 10, None)
        .await
        .unwrap();
    assert_eq!(ids(&found), std::slice::from_ref(&untitled.id));

    // Long first lines are cut at 60 characters.
    let long = session(&db, &alice).await;
    start(&db, &alice.id, &long.id, &"é".repeat(80)).await;
    let t = s.get_session(&alice.id, &long.id).await.unwrap().title;
    assert_eq!(t, format!("{}…", "é".repeat(60)));

    // A title the user chose is kept.
    let named = s
        .create_session(&alice.id, "Mine", "mock", "agent", "web")
        .await
        .unwrap();
    start(&db, &alice.id, &named.id, "something else").await;
    assert_eq!(
        s.get_session(&alice.id, &named.id).await.unwrap().title,
        "Mine"
    );
}

async fn active_run_is_shown_until_it_ends(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let run = start(&db, &alice.id, &sess.id, "hello").await;
    let shown = |r: SessionRecord| r.active_run_id;
    assert_eq!(
        shown(s.get_session(&alice.id, &sess.id).await.unwrap()),
        Some(run.run_id.0.clone())
    );
    let claimed = claim(&db, &run.run_id, "w1").await;
    let (list, _) = s.list_sessions(&alice.id, None, 10, None).await.unwrap();
    assert_eq!(list[0].active_run_id, Some(run.run_id.0.clone()));
    s.finish_run(
        &claimed,
        "w1",
        &RunEnd::Succeeded {
            content: "hi".into(),
            step: 1,
            citations: Vec::new(),
            reasoning: Vec::new(),
        },
        Default::default(),
        None,
        &RunLimits::unlimited(),
    )
    .await
    .unwrap();
    assert_eq!(
        shown(s.get_session(&alice.id, &sess.id).await.unwrap()),
        None
    );
}

//! The store's connections: what the pool lends still works.

use crate::harness::{Db, user};

crate::backend_tests!([postgres => Postgres] connections_the_server_closed_while_idle_are_replaced_before_use);

/// The pool no longer pings every connection before lending it, only one idle
/// for over a second (a round trip per loan cost 14–19 % of the distributed CPU
/// per run): one the server closed in a quiet spell (a restart, an idle timeout
/// of a proxy in between) must still be found dead before a statement fails on it.
async fn connections_the_server_closed_while_idle_are_replaced_before_use(db: Db) {
    let alice = user(&db, "alice").await;
    // Several connections opened and back in the pool.
    let reads = (0..6).map(|_| db.store.get_user(&alice.id));
    for read in futures::future::join_all(reads).await {
        read.expect("a read before");
    }
    let closed = db
        .count(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity
             where datname = current_database() and pid <> pg_backend_pid()"
                .into(),
        )
        .await;
    assert!(closed >= 1, "the store's connections were open");
    // Idle long enough to be pinged before the next loan.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    for _ in 0..8 {
        let found = db.store.get_user(&alice.id).await;
        assert!(
            matches!(&found, Ok(u) if u.id == alice.id),
            "a read on a connection the server closed: {found:?}"
        );
    }
}

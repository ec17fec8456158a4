//! `weft-loadtest saturate` against the machine's real Postgres and Redis, for
//! about a second at two tasks: the report counts real work on the server's
//! side, and the scratch database and keys are gone afterwards.

use sqlx::Connection;
use weft_loadtest::saturate::{self, Levels, PgOpts, RedisOpts, SaturateOpts, Target};

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/test";
const REDIS: &str = "redis://127.0.0.1:6379";

fn one_level() -> Levels {
    Levels {
        concurrency: vec![2],
        duration: 1,
        json: None,
    }
}

#[tokio::test]
async fn postgres_runs_are_counted_and_the_scratch_database_is_dropped() {
    let opts = SaturateOpts {
        target: Target::Postgres(PgOpts {
            database_url: PG_ADMIN.into(),
            levels: one_level(),
            pg_connections: 4,
            tool_steps: 1,
            heartbeats: 1,
            reply_words: 50,
            turns_per_session: 3,
        }),
    };
    let report = saturate::run(&opts).await.expect("saturate postgres runs");
    let level = &report.levels[0];
    assert_eq!(level.concurrency, 2);
    assert_eq!(level.errors, 0, "{}", report.table());
    assert!(
        level.units > 0 && level.units_per_s > 0.0,
        "{}",
        report.table()
    );
    // A run is more than a dozen transactions: the send, the claim, the
    // reads, the heartbeat, the checkpoint and the finish each commit.
    assert!(
        (10.0..30.0).contains(&level.server_ops_per_unit),
        "transactions per run: {}",
        report.table()
    );
    assert!(
        level.server_cores.is_some_and(|c| c > 0.0),
        "Postgres's CPU is read from /proc: {}",
        report.table()
    );
    assert!(
        level.stored_bytes_per_unit.is_some_and(|b| b > 0.0),
        "the database grows with every run: {}",
        report.table()
    );
    assert!(report.saturation.is_some());

    let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
    let left: i64 = sqlx::query_scalar("select count(*) from pg_database where datname = $1")
        .bind(&report.scratch)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(left, 0, "{} was dropped", report.scratch);
}

#[tokio::test]
async fn redis_events_reach_their_watchers_and_the_keys_are_deleted() {
    let opts = SaturateOpts {
        target: Target::Redis(RedisOpts {
            redis_url: REDIS.into(),
            levels: one_level(),
            events_per_run: 20,
            workers: 1,
            gateways: 1,
        }),
    };
    let report = saturate::run(&opts).await.expect("saturate redis runs");
    let level = &report.levels[0];
    assert_eq!(level.errors, 0, "{}", report.table());
    assert!(
        level.units > 0 && level.units_per_s > 0.0,
        "{}",
        report.table()
    );
    // XADD and PUBLISH per event, at the least.
    assert!(
        level.server_ops_per_unit >= 2.0,
        "commands per event: {}",
        report.table()
    );
    assert!(level.server_cores.is_some_and(|c| c > 0.0));
    assert!(
        level.stored_bytes_per_unit.is_some_and(|b| b > 0.0),
        "the run logs take memory until they are deleted: {}",
        report.table()
    );
    let (expected, received) = (level.watched_expected.unwrap(), level.watched_received);
    assert!(expected >= level.units.min(20), "{}", report.table());
    assert_eq!(
        received,
        Some(expected),
        "every published frame reached the run's subscriber"
    );

    let client = redis::Client::open(REDIS).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{}*", report.scratch))
            .arg("COUNT")
            .arg(10_000)
            .query_async(&mut con)
            .await
            .unwrap();
        assert!(keys.is_empty(), "left behind: {keys:?}");
        if next == 0 {
            break;
        }
        cursor = next;
    }
}

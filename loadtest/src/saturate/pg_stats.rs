//! What `saturate postgres` reads from the server itself: the scratch
//! database's committed transactions and size (`pg_stat_database`,
//! `pg_database_size`), and which processes to charge its CPU to
//! (`pg_stat_activity`, then `/proc`).

use std::time::{Duration, Instant};

use anyhow::ensure;
use sqlx::{PgConnection, Row};

/// Committed transactions of database `name` so far.
pub(super) async fn commits(admin: &mut PgConnection, name: &str) -> anyhow::Result<u64> {
    let row = sqlx::query("select xact_commit from pg_stat_database where datname = $1")
        .bind(name)
        .fetch_one(&mut *admin)
        .await?;
    Ok(row.try_get::<i64, _>(0)? as u64)
}

/// Bytes on disk of database `name` (tables, indexes, TOAST; not WAL).
pub(super) async fn database_size(admin: &mut PgConnection, name: &str) -> anyhow::Result<i64> {
    let row = sqlx::query("select pg_database_size($1::text)")
        .bind(name)
        .fetch_one(&mut *admin)
        .await?;
    Ok(row.try_get::<i64, _>(0)?)
}

/// Backends connected to database `name` (and autovacuum workers on it).
pub(super) async fn database_pids(
    admin: &mut PgConnection,
    name: &str,
) -> anyhow::Result<Vec<u32>> {
    let rows = sqlx::query("select pid from pg_stat_activity where datname = $1")
        .bind(name)
        .fetch_all(&mut *admin)
        .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<i32, _>(0)? as u32))
        .collect()
}

/// The server's own processes (WAL writer, checkpointer, background writer,
/// launchers) and the postmaster: they work for every database at once.
pub(super) async fn background_pids(admin: &mut PgConnection) -> anyhow::Result<Vec<u32>> {
    let rows = sqlx::query(
        "select pid from pg_stat_activity where datname is null and backend_type <> 'client backend'
         union all select pg_backend_pid()",
    )
    .fetch_all(&mut *admin)
    .await?;
    let mut pids: Vec<u32> = rows
        .iter()
        .map(|r| Ok(r.try_get::<i32, _>(0)? as u32))
        .collect::<anyhow::Result<_>>()?;
    // The last is our own backend: its parent is the postmaster.
    let own = pids.pop().unwrap_or(0);
    pids.extend(parent_pid(own));
    Ok(pids)
}

/// The parent of process `pid`, from `/proc/PID/stat`.
fn parent_pid(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Wait (≤ 10 s) until no backend is connected to `name`: closed backends have
/// flushed their counters, so `pg_stat_database` is complete.
pub(super) async fn wait_for_no_backends(
    admin: &mut PgConnection,
    name: &str,
) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(10);
    while !database_pids(admin, name).await?.is_empty() {
        ensure!(
            Instant::now() < until,
            "backends of {name} did not go away within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// What a migration does, dialect aside: the tables, columns and indexes it
/// creates (`create table t`, `alter table t add column c`, `create index i`).
/// A full-text index is an index on Postgres (GIN) and a virtual table on
/// SQLite (FTS5); both carry the same name.
fn schema_changes(sql: &str) -> Vec<String> {
    let words: Vec<String> = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == '(' || c == ';'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = |k: usize| words.get(i + k).cloned().unwrap_or_default();
        match (w.as_str(), next(1).as_str()) {
            ("create", "table") => out.push(format!("table {}", next(2))),
            ("create", "index") => out.push(format!("index {}", next(2))),
            ("create", "unique") => out.push(format!("index {}", next(3))),
            ("create", "virtual") => out.push(format!("index {}", next(3))),
            ("add", "column") => out.push(format!("column {}", next(2))),
            _ => {}
        }
    }
    out
}

#[test]
fn migration_folders_stay_in_step() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let read = |dialect: &str| {
        let mut files: Vec<(String, Vec<String>)> = std::fs::read_dir(dir.join(dialect))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, schema_changes(&std::fs::read_to_string(&p).unwrap()))
            })
            .collect();
        files.sort();
        files
    };
    let (pg, lite) = (read("postgres"), read("sqlite"));
    assert!(!pg.is_empty());
    assert_eq!(
        pg, lite,
        "every migration exists for both databases and makes the same changes"
    );
}

#[test]
fn sqlite_paths() {
    assert_eq!(
        super::sqlite_path("sqlite:///a/b.db?mode=rwc").as_deref(),
        Some("/a/b.db")
    );
    assert_eq!(super::sqlite_path("sqlite::memory:"), None);
}

#[test]
fn sqlite_files_are_created_unless_a_mode_is_given() {
    use super::creating_sqlite_file as c;
    assert_eq!(c("sqlite:///a/b.db"), "sqlite:///a/b.db?mode=rwc");
    assert_eq!(
        c("sqlite:///a/b.db?cache=shared"),
        "sqlite:///a/b.db?cache=shared&mode=rwc"
    );
    assert_eq!(c("sqlite:///a/b.db?mode=ro"), "sqlite:///a/b.db?mode=ro");
    assert_eq!(c("sqlite::memory:"), "sqlite::memory:");
}

/// A scratch SQLite file of its own (removed when the value drops).
struct ScratchDb(std::path::PathBuf);

impl ScratchDb {
    fn new(name: &str) -> ScratchDb {
        let dir = std::env::temp_dir().join(format!(
            "weft-store-{name}-{}-{}",
            std::process::id(),
            weft_wire::time::now_ms()
        ));
        ScratchDb(dir)
    }

    fn url(&self) -> String {
        format!("sqlite://{}/t.db", self.0.display())
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A store on a scratch file, with a table `t (x bigint not null)`.
async fn store_with_table(name: &str) -> (ScratchDb, super::Store) {
    let db = ScratchDb::new(name);
    let store = super::Store::connect(&db.url()).await.unwrap();
    {
        let mut w = store.writer().await.unwrap();
        sqlx::query("create table t (x bigint not null)")
            .execute(&mut *w)
            .await
            .unwrap();
    }
    (db, store)
}

async fn count(store: &super::Store) -> (i64, i64) {
    let row = sqlx::query("select count(*) as n, coalesce(sum(x), 0) as s from t")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    (
        super::get_i64(&row, "n").unwrap(),
        super::get_i64(&row, "s").unwrap(),
    )
}

/// Inserts `x` into `t` in a write transaction, committed or dropped (as an
/// error returned with `?` half-way through drops it).
async fn insert_in_tx(store: &super::Store, x: i64, commit: bool) {
    let mut tx = store.begin().await.unwrap();
    sqlx::query("insert into t (x) values ($1)")
        .bind(x)
        .execute(&mut *tx)
        .await
        .unwrap();
    if commit {
        tx.commit().await.unwrap();
    }
}

/// Inserts `x` into `t` on a pooled connection, holding the write gate; a
/// database still locked by a transaction not rolled back makes it wait
/// (SQLite's busy timeout is 10 s).
async fn insert_gated(store: &super::Store, x: i64) {
    let _gate = store.write_gate().await;
    let done = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        sqlx::query("insert into t (x) values ($1)")
            .bind(x)
            .execute(&store.pool),
    )
    .await;
    assert!(
        matches!(done, Ok(Ok(_))),
        "the gated write waited on a rollback: {done:?}"
    );
}

#[tokio::test]
async fn a_write_transaction_dropped_without_commit_rolls_the_writer_back() {
    let (_db, store) = store_with_table("writer").await;
    insert_in_tx(&store, 1, false).await;
    // The next writer finds no transaction left open on the connection (a
    // second `begin immediate` on it would fail), and the dropped row is gone.
    insert_in_tx(&store, 2, true).await;
    assert_eq!(count(&store).await, (1, 2));
    // A write gated on a pooled connection does not find the database locked,
    // right after a commit or right after a dropped transaction.
    insert_gated(&store, 3).await;
    insert_in_tx(&store, 4, false).await;
    insert_gated(&store, 5).await;
    assert_eq!(count(&store).await, (3, 10));
    store.close().await;
    assert!(matches!(
        store.begin().await,
        Err(super::StoreError::Other(m)) if m.contains("closed")
    ));
}

/// A write transaction's `begin` goes with its first statement and a deferred
/// write with the commit (`writer`'s module doc): what each statement answers
/// must be its own, and what commits must be what the transaction wrote, in
/// order, all or nothing.
#[tokio::test]
async fn a_transactions_begin_and_deferred_write_travel_with_its_statements() {
    let (_db, store) = store_with_table("deferred").await;
    let insert = |x: Option<i64>| sqlx::query("insert into t (x) values ($1)").bind(x);
    insert_in_tx(&store, 1, true).await;

    // First statements: a write's count is its own, not the begin's (which
    // reports the connection's last change), and a read finds its row.
    let mut tx = store.begin().await.unwrap();
    let none = sqlx::query("update t set x = x where x < 0")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(none.rows_affected(), 0);
    drop(tx);
    let mut tx = store.begin().await.unwrap();
    let row = sqlx::query("select x from t")
        .fetch_optional(&mut *tx)
        .await
        .unwrap()
        .expect("the row");
    assert_eq!(super::get_i64(&row, "x").unwrap(), 1);
    // A deferred write runs before the next statement, which sees it.
    tx.defer(insert(Some(2))).unwrap();
    let row = sqlx::query("select count(*) as n from t")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(super::get_i64(&row, "n").unwrap(), 2);
    // And with the commit when it is the last.
    tx.defer(insert(Some(4))).unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&store).await, (3, 7));

    // Deferred as the first statement, then dropped: nothing was written.
    let mut tx = store.begin().await.unwrap();
    tx.defer(insert(Some(8))).unwrap();
    drop(tx);
    // A transaction that ran nothing commits as nothing, and leaves none open.
    store.begin().await.unwrap().commit().await.unwrap();
    assert_eq!(count(&store).await, (3, 7));

    // A deferred write that fails fails the commit and takes the rest back.
    let mut tx = store.begin().await.unwrap();
    insert(Some(16)).execute(&mut *tx).await.unwrap();
    tx.defer(insert(None)).unwrap();
    assert!(tx.commit().await.is_err());
    insert_in_tx(&store, 32, true).await;
    assert_eq!(count(&store).await, (4, 39));

    // Several deferred writes with parameters go with the next statement, each
    // numbered past the ones before it; that statement's answer is its own.
    let mut tx = store.begin().await.unwrap();
    tx.defer(insert(Some(64))).unwrap();
    tx.defer(
        sqlx::query("insert into t (x) values ($1 + $2)")
            .bind(100i64)
            .bind(28i64),
    )
    .unwrap();
    let moved = sqlx::query("update t set x = x + $1 where x >= $2")
        .bind(0i64)
        .bind(64i64)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(
        moved.rows_affected(),
        2,
        "64 and 128, not the inserts' counts"
    );
    tx.defer(insert(Some(256))).unwrap();
    let row = sqlx::query("select x from t where x = $1")
        .bind(256i64)
        .fetch_optional(&mut *tx)
        .await
        .unwrap()
        .expect("the deferred row");
    assert_eq!(super::get_i64(&row, "x").unwrap(), 256);
    tx.defer(insert(Some(512))).unwrap();
    tx.defer(insert(Some(1024))).unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&store).await, (9, 2023));

    // One of them failing fails the statement they went with; nothing of
    // the transaction stays, and the writer is free again.
    let mut tx = store.begin().await.unwrap();
    tx.defer(insert(Some(2048))).unwrap();
    tx.defer(insert(None)).unwrap();
    tx.defer(insert(Some(4096))).unwrap();
    assert!(
        sqlx::query("select count(*) as n from t")
            .fetch_one(&mut *tx)
            .await
            .is_err()
    );
    drop(tx);
    insert_in_tx(&store, 8192, true).await;
    assert_eq!(count(&store).await, (10, 10215));
}

#[test]
fn joined_statements_number_their_parameters_past_the_ones_before() {
    let sql = "select '$1', $1, $12 from t where a = 'it''s $2' and b = $2 and c = $";
    assert_eq!(
        super::writer::shift_params(sql, 3),
        "select '$1', $4, $15 from t where a = 'it''s $2' and b = $5 and c = $"
    );
    assert_eq!(super::writer::shift_params(sql, 0), sql);
}

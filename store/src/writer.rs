//! Where writes run. On SQLite, one connection the store keeps out of the
//! pool (`Store::writer`'s field doc says why); on Postgres, the pool's.
//!
//! On SQLite every statement is a hop to the connection's own thread and back
//! (two thread wake-ups, sqlx), and the hops were a large part of what a run
//! cost `weft up` (issue 23's profile: about a quarter of its CPU in waking
//! and parking threads). So a write transaction there sends no statement of
//! its own: `begin immediate` goes in the same hop as its first statement.
//! Writes whose results are not needed are handed over with
//! [`TxConn::defer`] and wait: they go in the same hop as the next statement,
//! or as the `commit`. A send went from 7 hops to 4 and a run's end from 6 to
//! 3 (docs/runs.md, "Hot path"). A deferred write's error is that of the
//! statement it went with (or of the commit): only writes whose failure
//! fails the whole transaction anyway are deferred.
//! sqlx's SQLite driver runs a string of several statements in one hop, one
//! after the other, stopping at the first error, and binds `$N` to the
//! string's N-th argument whichever statement it is in: so each statement
//! joined after another has its parameters renumbered past the ones before
//! it ([`shift_params`]). Postgres does not take several statements with
//! parameters in one, so there everything runs as before (the deferred
//! writes one by one, just before the next statement or the commit).

use futures::{StreamExt, TryStreamExt, future::BoxFuture, stream::BoxStream};
use sqlx::any::{AnyArguments, AnyQueryResult, AnyRow};
use sqlx::{Any, AnyConnection, Either, Execute};

use super::{Result, Store, StoreError};

/// The writer connection, held (SQLite).
pub(crate) type HeldWriter =
    tokio::sync::OwnedMappedMutexGuard<Option<AnyConnection>, AnyConnection>;

/// A write transaction: on Postgres one of the pool's; on SQLite `begin
/// immediate` on the writer connection (sent with the first statement), held
/// until the transaction ends.
pub(crate) struct WriteTx(Option<TxConn>);

/// A connection to write on: one of the pool's (`P`, Postgres) or SQLite's
/// writer, held.
pub(crate) enum Conn<P> {
    Pooled(P),
    Held(HeldWriter),
}

/// The connection a [`WriteTx`] runs its statements on (`&mut *tx`, an
/// [`sqlx::Executor`] that adds what the transaction still owes SQLite to
/// the statement it runs).
pub(crate) struct TxConn {
    conn: Conn<sqlx::Transaction<'static, Any>>,
    /// SQLite: `begin immediate` not sent yet (no statement ran).
    begin: bool,
    /// Writes whose results nobody needs, not run yet, in order: they go
    /// with the next statement, or with the commit.
    deferred: Vec<Deferred>,
}

/// A statement kept for later: its text and its parameters.
struct Deferred(String, AnyArguments);

/// Statements joined into one string for SQLite's driver: the text, all
/// their arguments in order, and how many statements came before the last.
struct Joined {
    sql: String,
    args: AnyArguments,
    before: usize,
}

impl Joined {
    fn new() -> Joined {
        Joined {
            sql: String::new(),
            args: AnyArguments::default(),
            before: 0,
        }
    }

    /// Add a statement (without parameters when `args` is empty).
    fn push(&mut self, sql: &str, args: AnyArguments) {
        if !self.sql.is_empty() {
            self.sql.push_str(";\n");
            self.before += 1;
        }
        self.sql
            .push_str(&shift_params(sql, self.args.values.0.len()));
        self.args.values.0.extend(args.values.0);
    }
}

/// `sql` with each parameter `$N` outside a quoted literal renumbered
/// `$(N + by)`.
pub(crate) fn shift_params(sql: &str, by: usize) -> std::borrow::Cow<'_, str> {
    if by == 0 || !sql.contains('$') {
        return sql.into();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut quoted = false;
    let mut rest = sql;
    while let Some(i) = rest.find(['$', '\'']) {
        out.push_str(&rest[..i]);
        let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if c == b'\'' {
            quoted = !quoted;
            out.push('\'');
        } else if quoted || digits == 0 {
            out.push('$');
        } else {
            let n: usize = after[..digits].parse().expect("digits");
            out.push_str(&format!("${}", n + by));
            rest = &after[digits..];
            continue;
        }
        rest = after;
    }
    out.push_str(rest);
    out.into()
}

/// Where one write outside a transaction runs (`&mut *w`): the writer,
/// held, on SQLite; a pooled connection on Postgres.
pub(crate) type Writer = Conn<sqlx::pool::PoolConnection<Any>>;

impl TxConn {
    /// Run `query` later: with the commit, in the same hop on SQLite, unless
    /// another statement comes first (then just before it). Only for a write
    /// whose result is not needed; its error, if any, is the commit's (or
    /// the next statement's).
    pub(crate) fn defer<'q>(&mut self, mut query: impl Execute<'q, Any>) -> Result<()> {
        let args = query
            .take_arguments()
            .map_err(|e| StoreError::Other(format!("binding a deferred write: {e}")))?
            .unwrap_or_default();
        let sql = query.sql().as_str().to_string();
        self.deferred.push(Deferred(sql, args));
        Ok(())
    }

    fn connection(&mut self) -> &mut AnyConnection {
        match &mut self.conn {
            Conn::Pooled(tx) => tx,
            Conn::Held(conn) => conn,
        }
    }

    /// Postgres: the deferred writes, run now, one by one.
    async fn flush(&mut self) -> std::result::Result<(), sqlx::Error> {
        if let Conn::Pooled(tx) = &mut self.conn {
            for Deferred(sql, args) in std::mem::take(&mut self.deferred) {
                sqlx::query_with(sqlx::AssertSqlSafe(sql), args)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        Ok(())
    }

    /// What the transaction still owes SQLite before its next statement — its
    /// `begin`, its deferred writes — joined (`None` when it owes nothing).
    fn owed(&mut self) -> Option<Joined> {
        if !self.begin && self.deferred.is_empty() {
            return None;
        }
        let mut joined = Joined::new();
        if std::mem::take(&mut self.begin) {
            joined.push(BEGIN, AnyArguments::default());
        }
        for Deferred(sql, args) in std::mem::take(&mut self.deferred) {
            joined.push(&sql, args);
        }
        Some(joined)
    }

    /// `query`, or (`Right`) `query` after what the transaction owes SQLite,
    /// with the number of statements before it (their results are not the
    /// caller's).
    #[allow(clippy::type_complexity)]
    fn with_owed<'q, E: Execute<'q, Any>>(
        &mut self,
        mut query: E,
    ) -> std::result::Result<
        Either<E, (sqlx::query::Query<'q, Any, AnyArguments>, usize)>,
        sqlx::Error,
    > {
        let Some(mut joined) = self.owed() else {
            return Ok(Either::Left(query));
        };
        let args = query
            .take_arguments()
            .map_err(sqlx::Error::Encode)?
            .unwrap_or_default();
        joined.push(query.sql().as_str(), args);
        Ok(Either::Right((
            sqlx::query_with(sqlx::AssertSqlSafe(joined.sql), joined.args),
            joined.before,
        )))
    }
}

/// Sent with a SQLite transaction's first statement.
const BEGIN: &str = "begin immediate";

impl std::fmt::Debug for TxConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxConn")
            .field("begin", &self.begin)
            .field(
                "deferred",
                &self.deferred.iter().map(|d| &d.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<'c> sqlx::Executor<'c> for &'c mut TxConn {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, std::result::Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        futures::stream::once(async move {
            self.flush().await?;
            Ok::<_, sqlx::Error>(match self.with_owed(query)? {
                Either::Left(query) => self.connection().fetch_many(query),
                Either::Right((query, before)) => {
                    // The results of the statements before the caller's come
                    // first, each ending in its count: not the caller's.
                    let mut before = before;
                    self.connection()
                        .fetch_many(query)
                        .try_filter(move |step| {
                            let theirs = before > 0;
                            before -= usize::from(theirs && step.is_left());
                            std::future::ready(!theirs)
                        })
                        .boxed()
                }
            })
        })
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, std::result::Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        Box::pin(async move {
            self.flush().await?;
            match self.with_owed(query)? {
                Either::Left(query) => self.connection().fetch_optional(query).await,
                // Not `fetch_optional`: through `Any` it looks only at the first
                // result, here that of a statement before the caller's.
                Either::Right((query, mut before)) => {
                    let mut steps = self.connection().fetch_many(query);
                    while let Some(step) = steps.try_next().await? {
                        match step {
                            Either::Left(_) if before > 0 => before -= 1,
                            Either::Right(row) if before == 0 => return Ok(Some(row)),
                            _ => {}
                        }
                    }
                    Ok(None)
                }
            }
        })
    }

    fn prepare_with<'e>(
        self,
        sql: sqlx::SqlStr,
        parameters: &'e [sqlx::any::AnyTypeInfo],
    ) -> BoxFuture<'e, std::result::Result<sqlx::any::AnyStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().prepare_with(sql, parameters)
    }

    fn describe<'e>(
        self,
        sql: sqlx::SqlStr,
    ) -> BoxFuture<'e, std::result::Result<sqlx::Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().describe(sql)
    }
}

impl WriteTx {
    pub(crate) async fn commit(mut self) -> Result<()> {
        let Some(mut tx) = self.0.take() else {
            return Ok(());
        };
        match tx.conn {
            Conn::Pooled(_) => {
                tx.flush().await?;
                if let Conn::Pooled(pooled) = tx.conn {
                    pooled.commit().await?;
                }
            }
            // No statement ran: there is nothing to begin or commit.
            Conn::Held(_) if tx.begin && tx.deferred.is_empty() => {}
            Conn::Held(_) => {
                // The deferred writes and the commit, in one hop.
                let mut joined = tx.owed().unwrap_or_else(Joined::new);
                joined.push("commit", AnyArguments::default());
                let done = sqlx::query_with(sqlx::AssertSqlSafe(joined.sql), joined.args)
                    .execute(tx.connection())
                    .await;
                // Until it is known to have committed, a drop (an error, a
                // cancelled future) still rolls back: a no-op after a commit.
                if done.is_err() {
                    self.0 = Some(tx);
                }
                done?;
            }
        }
        Ok(())
    }
}

impl Drop for WriteTx {
    /// Ended without a commit: roll the writer back before the next writer may
    /// take it (a pooled transaction rolls itself back). The task holds the
    /// writer until the rollback ran, so no write, gated on a pooled
    /// connection or on the writer, finds the database still locked by it. (A
    /// rollback with no transaction open, after a commit that answered late, is
    /// an error nobody needs.) A transaction that never sent its `begin` has
    /// nothing to roll back.
    fn drop(&mut self) {
        let Some(TxConn {
            conn: Conn::Held(mut conn),
            begin: false,
            ..
        }) = self.0.take()
        else {
            return;
        };
        let rollback = async move {
            if let Err(e) = sqlx::query("rollback").execute(&mut *conn).await {
                tracing::debug!(error = %e, "rolling the writer back");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(rollback)),
            // Outside a runtime nothing can use the store again anyway.
            Err(_) => tracing::warn!("a write transaction dropped outside a runtime"),
        }
    }
}

impl std::ops::Deref for WriteTx {
    type Target = TxConn;
    fn deref(&self) -> &TxConn {
        self.0.as_ref().expect("an open transaction")
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut TxConn {
        self.0.as_mut().expect("an open transaction")
    }
}

impl<P: std::ops::DerefMut<Target = AnyConnection>> std::ops::Deref for Conn<P> {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Held(conn) => conn,
        }
    }
}

impl<P: std::ops::DerefMut<Target = AnyConnection>> std::ops::DerefMut for Conn<P> {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Held(conn) => conn,
        }
    }
}

impl Store {
    /// A write transaction. On SQLite it waits for the writer and takes the
    /// write lock up front (`begin immediate`, sent with the first
    /// statement), so two writers never both read and then both try to
    /// upgrade.
    pub(crate) async fn begin(&self) -> Result<WriteTx> {
        let (conn, begin) = match self.held_writer().await? {
            None => (Conn::Pooled(self.pool.begin().await?), false),
            Some(conn) => (Conn::Held(conn), true),
        };
        Ok(WriteTx(Some(TxConn {
            conn,
            begin,
            deferred: Vec::new(),
        })))
    }

    /// The connection for one write outside a transaction: the writer on
    /// SQLite (waiting for it), a pooled one on Postgres.
    pub(crate) async fn writer(&self) -> Result<Writer> {
        Ok(match self.held_writer().await? {
            Some(conn) => Conn::Held(conn),
            None => Conn::Pooled(self.pool.acquire().await?),
        })
    }

    /// SQLite's writer, waited for; `None` on Postgres.
    async fn held_writer(&self) -> Result<Option<HeldWriter>> {
        let Some(writer) = &self.writer else {
            return Ok(None);
        };
        tokio::sync::OwnedMutexGuard::try_map(writer.clone().lock_owned().await, Option::as_mut)
            .map(Some)
            .map_err(|_| StoreError::Other("the database is closed".into()))
    }

    /// Hold across a write run on a connection of the caller's own (SQLite:
    /// the writer's lock, so it waits for and excludes every other write;
    /// nothing on Postgres). Every other write uses [`Store::writer`].
    pub(crate) async fn write_gate(
        &self,
    ) -> Option<tokio::sync::OwnedMutexGuard<Option<AnyConnection>>> {
        match &self.writer {
            Some(writer) => Some(writer.clone().lock_owned().await),
            None => None,
        }
    }
}
